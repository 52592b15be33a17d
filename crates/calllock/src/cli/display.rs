//! Terminal output: live call lines, summaries, call lists.

use crate::call::driver::{CallEvent, Observer};
use crate::call::outcome::Ending;
use crate::call::record::{FinishedCall, TimedLine};
use serde::Deserialize;
use serde_json::Value;

/// `println!` for what shows stored text (caller words, names,
/// addresses): made printable on the way out ([`agent::printable::printable_text`]),
/// so a record kept before caller lines were cleaned on the way in cannot
/// send escapes to the operator's terminal. Not for lines with our own
/// colours (`dim`, `bold`).
macro_rules! show {
    ($($arg:tt)*) => {
        println!("{}", agent::printable::printable_text(&format!($($arg)*)))
    };
}

pub fn dim(s: &str, color: bool) -> String {
    if color {
        format!("\x1b[2m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

pub fn bold(s: &str, color: bool) -> String {
    if color {
        format!("\x1b[1m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// Prints call events as they happen.
pub struct LivePrinter {
    pub color: bool,
    pub enabled: bool,
}

impl LivePrinter {
    pub fn new(color: bool) -> Self {
        LivePrinter {
            color,
            enabled: true,
        }
    }
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 160 {
        let cut: String = s.chars().take(157).collect();
        format!("{cut}...")
    } else {
        s
    }
}

impl Observer for LivePrinter {
    fn on_event(&mut self, t: f64, event: &CallEvent) {
        if !self.enabled {
            return;
        }
        let c = self.color;
        match event {
            CallEvent::Agent {
                text,
                state,
                canned,
            } => {
                let tag = match canned {
                    Some(id) => format!("[{state}] ({id})"),
                    None => format!("[{state}]"),
                };
                println!(
                    "{} {} {text}",
                    dim(&format!("{t:6.1}s"), c),
                    bold(&format!("Agent {tag}:"), c)
                );
            }
            CallEvent::Caller { text, .. } => {
                println!("{} Caller: {text}", dim(&format!("{t:6.1}s"), c));
            }
            CallEvent::ToolCall(call) => println!(
                "{}",
                dim(
                    &format!(
                        "{t:6.1}s   → {} {}",
                        call.tool(),
                        compact(&call.args_json())
                    ),
                    c
                )
            ),
            CallEvent::ToolResult { tool, result, .. } => println!(
                "{}",
                dim(&format!("{t:6.1}s   ← {tool} {}", compact(result)), c)
            ),
            CallEvent::StateChanged { from, to } => {
                println!("{}", dim(&format!("{t:6.1}s   state {from} → {to}"), c))
            }
            CallEvent::Ended(by) => {
                let who = match by {
                    Ending::Agent => "agent hung up",
                    Ending::Caller => "caller hung up",
                    Ending::Shutdown { .. } => "the server ended the call (shutting down)",
                    Ending::SpeechLost => "ended: the caller could no longer be heard",
                    Ending::TimeLimit => "call stopped at the time limit",
                    Ending::Interrupted => "interrupted (the process stopped mid-call)",
                    Ending::LineError => "the line broke the protocol; the server closed it",
                };
                println!("{}", dim(&format!("{t:6.1}s   {who}"), c));
            }
        }
    }
}

pub fn print_summary(fc: &FinishedCall, color: bool) {
    println!(
        "{} final state {}, end_call_reason {}, booking {}, priority {} ({}), revenue {}",
        bold("outcome:", color),
        fc.final_state,
        fc.end_call_reason,
        fc.booking_status,
        fc.priority.color,
        fc.priority.reason,
        fc.revenue.tier
    );
}

/// Readable replay output: the transcript line by line, then the outcome.
pub fn print_outcome_text(r: &FinishedCall) {
    println!("call {}", r.call_id);
    print_transcript(&r.transcript);
    print_outcome(r, Some(r.duration_s));
}

/// Each transcript line: when, in which state, who, what.
fn print_transcript(lines: &[TimedLine]) {
    for e in lines {
        let (t, state) = (e.t, &e.state);
        let content = e.content.as_deref().unwrap_or("");
        match e.role.as_str() {
            "agent" => show!("{t:6.2}s [{state}] Agent: {content}"),
            "user" => show!("{t:6.2}s [{state}] Caller: {content}"),
            "tool" => show!(
                "{t:6.2}s [{state}]   [tool {}] {}",
                e.name.as_deref().unwrap_or(""),
                compact(e.result.as_ref().unwrap_or(&Value::Null))
            ),
            _ => {}
        }
    }
}

/// `v`, or `-` when it is empty.
fn or_dash(v: &str) -> &str {
    if v.is_empty() {
        "-"
    } else {
        v
    }
}

/// How the call came out (`-` for what is not known yet).
fn print_outcome(r: &FinishedCall, duration_s: Option<f64>) {
    show!(
        "final_state: {}\nend_call_reason: {}\nbooking_status: {}\nended_by: {}\nduration_s: {}",
        r.final_state,
        r.end_call_reason,
        r.booking_status,
        or_dash(&r.ended_by),
        duration_s.map_or("-".into(), |d| d.to_string())
    );
}

/// `t` on the business's clock (its `timezone`), as `format` says; `%Z`
/// names the zone (`CST`). What a person reads is the business's time,
/// never UTC: a 9:04 PM call is on its own day.
pub fn business_time(
    business: &agent::BusinessProfile,
    t: chrono::DateTime<chrono::Utc>,
    format: &str,
) -> String {
    t.with_timezone(&business.tz()).format(format).to_string()
}

pub fn print_call_list(business: &agent::BusinessProfile, calls: &[store::CallSummary]) {
    if calls.is_empty() {
        show!("no calls yet — try `calllock demo` or `calllock chat`");
        return;
    }
    // The zone's name, not today's abbreviation: rows from summer are CDT.
    let zone = &business.timezone;
    show!(
        "{:<40} {:<20} {:<17} {:<12} {:<16} {:<17} {:<6} customer",
        "call id",
        format!("started ({zone})"),
        "phone",
        "status",
        "final state",
        "reason",
        "prio"
    );
    for c in calls {
        show!(
            "{:<40} {:<20} {:<17} {:<12} {:<16} {:<17} {:<6} {}",
            c.call_id,
            business_time(business, c.started_at, "%Y-%m-%d %H:%M:%S"),
            c.phone,
            c.status.as_str(),
            c.final_state,
            c.end_call_reason,
            c.priority_color,
            c.customer_name
        );
    }
}

pub fn print_call_record(business: &agent::BusinessProfile, rec: &store::CallRecord) {
    // A live call, or one whose process died before its record was
    // written, has no record yet: what the calls table has, and dashes.
    let saved = !rec.record.is_null();
    let r = if saved {
        FinishedCall::from_stored(&rec.record).unwrap_or_else(|e| {
            eprintln!("note: {e}; showing what the calls table has");
            FinishedCall::default()
        })
    } else {
        FinishedCall::default()
    };
    show!("call {}  from {}", rec.call_id, rec.phone);
    show!(
        "started {}  ended {}  ({} s)",
        business_time(business, rec.started_at, "%Y-%m-%d %H:%M:%S %Z"),
        rec.ended_at
            .map(|t| business_time(business, t, "%H:%M:%S"))
            .unwrap_or_else(|| "-".into()),
        if saved {
            r.duration_s.to_string()
        } else {
            "-".into()
        }
    );
    show!(
        "final state {}  end_call_reason {}  booking {}  urgency {}",
        rec.final_state,
        rec.end_call_reason,
        rec.booking_status,
        rec.urgency
    );
    show!("priority {} — {}", r.priority.color, r.priority.reason);
    show!("revenue {} {}", r.revenue.tier, r.revenue.tier_label);
    let tags: Vec<String> = r
        .tags
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(k, names)| format!("{k}: {}", names.join(", ")))
        .collect();
    if saved {
        show!("tags {}", tags.join("; "));
    }
    show!("customer {}  problem {}", rec.customer_name, rec.problem);
    let session = &r.session;
    show!(
        "address {}  ZIP {}",
        or_dash(&session.service_address),
        or_dash(&session.zip_code)
    );
    let job = r.job_appointment();
    if !session.booked_time.is_empty() {
        show!(
            "appointment {}",
            agent::booking_time::say_time(&session.booked_time)
        );
    } else if let Some(t) = job.appointment_time {
        // An existing appointment the caller cancelled, moved or asked about.
        let done = match job.appointment_action.as_deref() {
            Some("cancel") => "cancelled",
            Some("reschedule") => "moved here",
            _ => "checked",
        };
        show!("appointment {t} ({done})");
    }
    if !session.callback_phone.is_empty() {
        show!(
            "call back at {}",
            agent::validate::say_phone(&session.callback_phone)
        );
    }
    show!("transcript:");
    // The transcript column (a cut-off call has one; its record does not).
    show!("call {}", rec.call_id);
    print_transcript(&Vec::<TimedLine>::deserialize(&rec.transcript).unwrap_or_default());
    print_outcome(
        &FinishedCall {
            final_state: rec.final_state.clone(),
            end_call_reason: rec.end_call_reason.clone(),
            booking_status: rec.booking_status.clone(),
            ..r
        },
        saved.then_some(r.duration_s),
    );
}

/// One emergency of `calllock agenda`: when (business clock), the number
/// to call, who, where, what they reported.
pub fn agenda_emergency_line(
    business: &agent::BusinessProfile,
    e: &crate::call::record::Emergency,
) -> String {
    let place = if e.address.is_empty() {
        "no address given".to_string()
    } else {
        format!("at {}", e.address)
    };
    format!(
        "  {}  EMERGENCY  {}  {}  {}  {}",
        business_time(business, e.started_at, "%H:%M %Z"),
        agent::validate::say_phone(&e.phone),
        or_dash(&e.customer_name),
        place,
        or_dash(&e.problem),
    )
}

/// `calllock agenda`: today's emergencies (first: the most important
/// records of the day), open callbacks, upcoming appointments, sales
/// leads.
pub fn print_agenda(
    business: &agent::BusinessProfile,
    emergencies: &[crate::call::record::Emergency],
    callbacks: &[store::Callback],
    appointments: &[store::Appointment],
    leads: &[store::SalesLead],
) {
    show!("emergencies today ({}):", emergencies.len());
    for e in emergencies {
        show!("{}", agenda_emergency_line(business, e));
    }
    show!("open callbacks ({}):", callbacks.len());
    for c in callbacks {
        let who = if c.customer_name.is_empty() {
            "-"
        } else {
            &c.customer_name
        };
        show!(
            "  due {}  {}  {:<8} {:<9} {}  {}",
            business_time(business, c.due_by, "%Y-%m-%d %H:%M %Z"),
            agent::validate::say_phone(&c.phone),
            c.callback_type,
            c.urgency,
            who,
            c.reason
        );
    }
    show!("upcoming appointments ({}):", appointments.len());
    for a in appointments {
        show!(
            "  {}  {}  {}  {}  {}",
            agent::booking_time::say_time(&a.start_at),
            a.customer_name,
            agent::validate::say_phone(&a.phone),
            a.address,
            a.problem
        );
    }
    show!("sales leads ({}):", leads.len());
    for l in leads {
        show!(
            "  {}  {}  {}",
            business_time(business, l.created_at, "%Y-%m-%d %H:%M %Z"),
            agent::validate::say_phone(&l.phone),
            l.reason
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn an_agenda_emergency_says_when_who_where_and_what() {
        let b = agent::BusinessProfile::default();
        let mut e = crate::call::record::Emergency {
            call_id: "CA_gas".into(),
            started_at: chrono::Utc
                .with_ymd_and_hms(2026, 2, 23, 16, 15, 0)
                .unwrap(),
            phone: "+15125559876".into(),
            customer_name: String::new(),
            address: "4329 Franklin Street".into(),
            problem: "I smell gas in the kitchen".into(),
            urgency: "emergency".into(),
        };
        assert_eq!(
            agenda_emergency_line(&b, &e),
            "  10:15 CST  EMERGENCY  512-555-9876  -  at 4329 Franklin Street  \
             I smell gas in the kitchen"
        );
        e.address.clear();
        assert!(agenda_emergency_line(&b, &e).contains("no address given"));
    }
}
