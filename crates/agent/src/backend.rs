//! The booking backend contract: the five tools the agent calls
//! (SPEC §4.3 of the conformance README, §6 of SPEC.md).
//!
//! A [`ToolCall`] carries the *logical* arguments; an implementation answers
//! with the JSON object the V2 backend would return (SPEC §6.3 as corrected by
//! D-18/D-19). Implementations: the embedded SQLite backend in `store`, the
//! V2 HTTP client (`providers::v2`), and scripted results in tests and
//! replay.

use crate::state::Tool;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One backend request with its logical arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tool", content = "args", rename_all = "snake_case")]
pub enum ToolCall {
    LookupCaller {
        phone: String,
        call_id: String,
    },
    BookService {
        customer_name: String,
        problem: String,
        address: String,
        /// The resolved ISO-8601 booking-time hint (D-14).
        preferred_time: String,
        phone: String,
        call_id: String,
    },
    CreateCallback {
        phone: String,
        /// D-6: service / estimate / billing / warranty / follow_up.
        callback_type: String,
        reason: String,
        customer_name: String,
        /// `urgent` or `normal`.
        urgency: String,
        call_id: String,
    },
    SendSalesLeadAlert {
        phone: String,
        reason: String,
        call_id: String,
    },
    ManageAppointment {
        /// `cancel`, `reschedule` or `status`.
        action: String,
        phone: String,
        booking_uid: String,
        reason: String,
        /// ISO-8601 new time for a reschedule ("" otherwise).
        new_time: String,
        call_id: String,
    },
}

impl ToolCall {
    pub fn tool(&self) -> Tool {
        match self {
            ToolCall::LookupCaller { .. } => Tool::LookupCaller,
            ToolCall::BookService { .. } => Tool::BookService,
            ToolCall::CreateCallback { .. } => Tool::CreateCallback,
            ToolCall::SendSalesLeadAlert { .. } => Tool::SendSalesLeadAlert,
            ToolCall::ManageAppointment { .. } => Tool::ManageAppointment,
        }
    }

    /// The arguments as a JSON object (for logs, replay output, tests).
    pub fn args_json(&self) -> Value {
        serde_json::to_value(self)
            .ok()
            .and_then(|mut v| v.get_mut("args").map(Value::take))
            .unwrap_or(Value::Null)
    }
}

/// The `create_callback` request for this call (D-6 callback type; the
/// problem as the reason; urgent callers get an urgent callback).
pub fn callback_request(s: &crate::Session) -> ToolCall {
    ToolCall::CreateCallback {
        phone: if s.callback_phone.is_empty() {
            s.phone_number.clone()
        } else {
            s.callback_phone.clone()
        },
        callback_type: s.effective_callback_type().to_string(),
        reason: if !s.callback_reason.is_empty() {
            s.callback_reason.clone()
        } else if s.problem_description.is_empty() {
            "Callback requested".into()
        } else {
            s.problem_description.clone()
        },
        customer_name: s.customer_name.clone(),
        urgency: if s.urgency_tier == "urgent" {
            "urgent".into()
        } else {
            "normal".into()
        },
        call_id: s.call_sid.clone(),
    }
}

/// The failure object the agent uses when a backend cannot be reached
/// (SPEC §6.1): lookup → `{found:false, message}`, book → `{booked:false,
/// error}`, others → `{success:false, error}`.
pub fn failure_result(tool: Tool, error: &str) -> Value {
    match tool {
        Tool::LookupCaller => serde_json::json!({
            "found": false,
            "message": format!("Lookup failed ({error}); proceeding without history."),
        }),
        Tool::BookService => serde_json::json!({"booked": false, "error": error}),
        _ => serde_json::json!({"success": false, "error": error}),
    }
}

/// A booking backend. Every method answers with the V2 response object; a
/// failure is reported *in* that object (never as a panic or a lost call).
#[async_trait]
pub trait Backend: Send + Sync {
    async fn lookup_caller(&self, phone: &str, call_id: &str) -> Value;
    async fn book_service(&self, call: &ToolCall) -> Value;
    async fn create_callback(&self, call: &ToolCall) -> Value;
    async fn send_sales_lead_alert(&self, call: &ToolCall) -> Value;
    async fn manage_appointment(&self, call: &ToolCall) -> Value;

    /// Dispatch one tool call to the matching method.
    async fn call(&self, call: &ToolCall) -> Value {
        match call {
            ToolCall::LookupCaller { phone, call_id } => self.lookup_caller(phone, call_id).await,
            ToolCall::BookService { .. } => self.book_service(call).await,
            ToolCall::CreateCallback { .. } => self.create_callback(call).await,
            ToolCall::SendSalesLeadAlert { .. } => self.send_sales_lead_alert(call).await,
            ToolCall::ManageAppointment { .. } => self.manage_appointment(call).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_serializes_as_tool_and_args() {
        let c = ToolCall::LookupCaller {
            phone: "+1512".into(),
            call_id: "CA1".into(),
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["tool"], "lookup_caller");
        assert_eq!(v["args"]["call_id"], "CA1");
        assert_eq!(c.args_json()["phone"], "+1512");
        assert_eq!(c.tool(), Tool::LookupCaller);
    }

    #[test]
    fn failure_shapes() {
        assert_eq!(failure_result(Tool::LookupCaller, "x")["found"], false);
        assert_eq!(failure_result(Tool::BookService, "x")["booked"], false);
        assert_eq!(failure_result(Tool::CreateCallback, "x")["success"], false);
    }
}
