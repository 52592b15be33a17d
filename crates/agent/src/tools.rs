//! Typed readers for backend tool results (SPEC §4, §6.3, D-19).
//!
//! Backends answer with JSON objects; the transcript stores them verbatim.
//! Everything the agent *decides* from a result goes through these readers,
//! which apply the reference's truthiness rules and the corrections of D-19.

use serde_json::Value;

/// Python-style truthiness: null/false/0/""/[]/{} are false.
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// A field as text: strings as they are, numbers rendered, anything else "".
pub fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

fn field<'a>(result: &'a Value, key: &str) -> Option<&'a Value> {
    result.as_object().and_then(|o| o.get(key))
}

/// The upcoming appointment of a lookup answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpcomingAppointment {
    pub date: String,
    pub time: String,
    /// `uid`, falling back to `jobId`, then "".
    pub uid: String,
}

/// What the agent reads from a `lookup_caller` answer (SPEC §4.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LookupView {
    pub found: bool,
    pub customer_name: String,
    pub zip_code: String,
    pub address: String,
    pub has_appointment: bool,
    pub appointment: Option<UpcomingAppointment>,
    /// The callback owed to this caller, rendered as readable text (D-19).
    pub callback_promise: String,
}

/// Render `callbackPromise`, which may be a string or an object
/// `{date, issue?, promisedBy?}` (D-19), as text for the prompt.
pub fn render_callback_promise(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Object(o)) => {
            let date = text(o.get("date"));
            let issue = text(o.get("issue"));
            let by = text(o.get("promisedBy"));
            let mut out = String::new();
            if !date.is_empty() {
                out.push_str(&format!("promised {date}"));
            }
            if !issue.is_empty() {
                if !out.is_empty() {
                    out.push_str(", ");
                }
                out.push_str(&format!("about {issue}"));
            }
            if !by.is_empty() {
                if !out.is_empty() {
                    out.push_str(", ");
                }
                out.push_str(&format!("by {by}"));
            }
            out
        }
        Some(Value::Number(_)) | Some(Value::Bool(true)) => text(v),
        _ => String::new(),
    }
}

pub fn read_lookup(result: &Value) -> LookupView {
    let appt = field(result, "upcomingAppointment");
    let appointment = match appt {
        Some(Value::Object(o)) => {
            let uid = [o.get("uid"), o.get("jobId")]
                .into_iter()
                .map(text)
                .find(|s| !s.is_empty())
                .unwrap_or_default();
            Some(UpcomingAppointment {
                date: text(o.get("date")),
                time: text(o.get("time")),
                uid,
            })
        }
        _ => None,
    };
    LookupView {
        found: truthy(field(result, "found")),
        customer_name: text(field(result, "customerName")),
        zip_code: text(field(result, "zipCode")),
        address: text(field(result, "address")),
        has_appointment: truthy(appt),
        appointment,
        callback_promise: render_callback_promise(field(result, "callbackPromise")),
    }
}

/// What the agent reads from a `book_service` answer (SPEC §4.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BookingView {
    pub booked: bool,
    pub booked_time: String,
    pub appointment_id: String,
    pub confirmation_message: String,
}

pub fn read_booking(result: &Value) -> BookingView {
    let booked = truthy(field(result, "booked")) || truthy(field(result, "booking_confirmed"));
    let booked_time = if truthy(field(result, "appointment_time")) {
        text(field(result, "appointment_time"))
    } else {
        text(field(result, "booking_time"))
    };
    BookingView {
        booked,
        booked_time,
        appointment_id: text(field(result, "appointmentId")),
        confirmation_message: text(field(result, "confirmationMessage")),
    }
}

/// Whether a `create_callback` / `send_sales_lead_alert` answer is a
/// success: no truthy `error` and `success` not explicitly false (D-19).
pub fn call_succeeded(result: &Value) -> bool {
    if !result.is_object() {
        return false;
    }
    if truthy(field(result, "error")) {
        return false;
    }
    !matches!(field(result, "success"), Some(Value::Bool(false)))
}

/// What the agent reads from a `manage_appointment` answer (SPEC §4.4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManageView {
    pub success: bool,
    pub action_taken: String,
    pub new_date: String,
    pub new_time: String,
    /// The backend's human-readable summary of what happened.
    pub message: String,
}

pub fn read_manage(result: &Value) -> ManageView {
    ManageView {
        success: truthy(field(result, "success")),
        action_taken: text(field(result, "action_taken")),
        new_date: text(field(result, "new_date")),
        new_time: text(field(result, "new_time")),
        message: text(field(result, "message")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn truthiness() {
        assert!(!truthy(None));
        assert!(!truthy(Some(&json!(0))));
        assert!(truthy(Some(&json!("x"))));
        assert!(!truthy(Some(&json!({}))));
        assert!(truthy(Some(&json!({"a": 1}))));
    }

    #[test]
    fn callback_promise_object_is_readable() {
        let s = render_callback_promise(Some(&json!({
            "date": "Tuesday, February 17", "issue": "AC not cooling", "promisedBy": "Mike"
        })));
        assert!(s.contains("Tuesday, February 17"));
        assert!(s.contains("AC not cooling"));
        assert!(!s.contains("promisedBy"));
        assert!(!s.contains('{'));
    }

    #[test]
    fn callback_success_rules() {
        assert!(call_succeeded(&json!({"success": true})));
        assert!(!call_succeeded(&json!({"success": false, "message": "x"})));
        assert!(!call_succeeded(&json!({"error": "timeout"})));
        assert!(!call_succeeded(&json!("garbage")));
    }

    #[test]
    fn booking_prefers_appointment_time() {
        let b =
            read_booking(&json!({"booked": true, "appointment_time": "A", "booking_time": "B"}));
        assert!(b.booked);
        assert_eq!(b.booked_time, "A");
        let b = read_booking(&json!({"booking_confirmed": 1, "booking_time": "B"}));
        assert!(b.booked);
        assert_eq!(b.booked_time, "B");
    }

    #[test]
    fn lookup_uid_falls_back_to_job_id() {
        let l = read_lookup(
            &json!({"found": true, "upcomingAppointment": {"date": "d", "jobId": "j"}}),
        );
        assert!(l.has_appointment);
        assert_eq!(l.appointment.unwrap().uid, "j");
    }
}
