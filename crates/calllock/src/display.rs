//! Terminal output: live call lines, summaries, call lists.

use crate::record::FinishedCall;
use crate::sim::{CallEvent, EndedBy, Observer};
use serde_json::Value;

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
                    EndedBy::Agent => "agent hung up",
                    EndedBy::Caller => "caller hung up",
                    EndedBy::TimeLimit => "call stopped at the time limit",
                    EndedBy::Interrupted => "interrupted (the process stopped mid-call)",
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
        fc.priority_color,
        fc.priority_reason,
        fc.revenue_tier
    );
}

/// Readable replay output.
pub fn print_outcome_text(r: &Value) {
    println!("call {}", r["call_id"].as_str().unwrap_or(""));
    if let Some(entries) = r["transcript"].as_array() {
        for e in entries {
            let t = e["t"].as_f64().unwrap_or(0.0);
            let state = e["state"].as_str().unwrap_or("");
            match e["role"].as_str().unwrap_or("") {
                "agent" => println!(
                    "{t:6.2}s [{state}] Agent: {}",
                    e["content"].as_str().unwrap_or("")
                ),
                "user" => println!(
                    "{t:6.2}s [{state}] Caller: {}",
                    e["content"].as_str().unwrap_or("")
                ),
                "tool" => println!(
                    "{t:6.2}s [{state}]   [tool {}] {}",
                    e["name"].as_str().unwrap_or(""),
                    compact(&e["result"])
                ),
                _ => {}
            }
        }
    }
    println!(
        "final_state: {}\nend_call_reason: {}\nbooking_status: {}\nended_by: {}\nduration_s: {}",
        r["final_state"].as_str().unwrap_or(""),
        r["end_call_reason"].as_str().unwrap_or(""),
        r["booking_status"].as_str().unwrap_or(""),
        r["ended_by"].as_str().unwrap_or(""),
        r["duration_s"]
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
        println!("no calls yet — try `calllock demo` or `calllock chat`");
        return;
    }
    // The zone's name, not today's abbreviation: rows from summer are CDT.
    let zone = &business.timezone;
    println!(
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
        println!(
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
    let r = &rec.record;
    println!("call {}  from {}", rec.call_id, rec.phone);
    println!(
        "started {}  ended {}  ({} s)",
        business_time(business, rec.started_at, "%Y-%m-%d %H:%M:%S %Z"),
        rec.ended_at
            .map(|t| business_time(business, t, "%H:%M:%S"))
            .unwrap_or_else(|| "-".into()),
        r["duration_s"]
    );
    println!(
        "final state {}  end_call_reason {}  booking {}  urgency {}",
        rec.final_state, rec.end_call_reason, rec.booking_status, rec.urgency
    );
    println!(
        "priority {} — {}",
        r["priority"]["color"].as_str().unwrap_or(""),
        r["priority"]["reason"].as_str().unwrap_or("")
    );
    println!(
        "revenue {} {}",
        r["revenue"]["tier"].as_str().unwrap_or(""),
        r["revenue"]["tier_label"].as_str().unwrap_or("")
    );
    if let Some(tags) = r["tags"].as_object() {
        let mut parts = Vec::new();
        for (k, v) in tags {
            if let Some(a) = v.as_array().filter(|a| !a.is_empty()) {
                let names: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
                parts.push(format!("{k}: {}", names.join(", ")));
            }
        }
        println!("tags {}", parts.join("; "));
    }
    println!("customer {}  problem {}", rec.customer_name, rec.problem);
    let session = &r["session"];
    let field = |k: &str| session[k].as_str().filter(|v| !v.is_empty()).unwrap_or("-");
    println!(
        "address {}  ZIP {}",
        field("service_address"),
        field("zip_code")
    );
    if let Some(t) = session["booked_time"].as_str().filter(|t| !t.is_empty()) {
        println!("appointment {}", agent::booking_time::say_time(t));
    } else if let Some(t) = r["job_payload"]["appointment_time"].as_str() {
        // An existing appointment the caller cancelled, moved or asked about.
        let done = match r["job_payload"]["appointment_action"].as_str() {
            Some("cancel") => "cancelled",
            Some("reschedule") => "moved here",
            _ => "checked",
        };
        println!("appointment {t} ({done})");
    }
    if let Some(p) = session["callback_phone"].as_str().filter(|p| !p.is_empty()) {
        println!("call back at {}", agent::validate::say_phone(p));
    }
    println!("transcript:");
    print_outcome_text(&serde_json::json!({
        "call_id": rec.call_id,
        "transcript": rec.transcript,
        "final_state": rec.final_state,
        "end_call_reason": rec.end_call_reason,
        "booking_status": rec.booking_status,
        "ended_by": r["ended_by"],
        "duration_s": r["duration_s"],
    }));
}

/// One emergency of `calllock agenda`: when (business clock), the number
/// to call, who, where, what they reported.
pub fn agenda_emergency_line(
    business: &agent::BusinessProfile,
    e: &crate::record::Emergency,
) -> String {
    let or_dash = |v: &str| if v.is_empty() { "-" } else { v }.to_string();
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
    emergencies: &[crate::record::Emergency],
    callbacks: &[store::Callback],
    appointments: &[store::Appointment],
    leads: &[store::SalesLead],
) {
    println!("emergencies today ({}):", emergencies.len());
    for e in emergencies {
        println!("{}", agenda_emergency_line(business, e));
    }
    println!("open callbacks ({}):", callbacks.len());
    for c in callbacks {
        let who = if c.customer_name.is_empty() {
            "-"
        } else {
            &c.customer_name
        };
        println!(
            "  due {}  {}  {:<8} {:<9} {}  {}",
            business_time(business, c.due_by, "%Y-%m-%d %H:%M %Z"),
            agent::validate::say_phone(&c.phone),
            c.callback_type,
            c.urgency,
            who,
            c.reason
        );
    }
    println!("upcoming appointments ({}):", appointments.len());
    for a in appointments {
        println!(
            "  {}  {}  {}  {}  {}",
            agent::booking_time::say_time(&a.start_at),
            a.customer_name,
            agent::validate::say_phone(&a.phone),
            a.address,
            a.problem
        );
    }
    println!("sales leads ({}):", leads.len());
    for l in leads {
        println!(
            "  {}  {}  {}",
            business_time(business, l.created_at, "%Y-%m-%d %H:%M %Z"),
            agent::validate::say_phone(&l.phone),
            l.reason
        );
    }
}
