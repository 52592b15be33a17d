//! `/calls/{id}`: one call, read from its event log, so a live call shows
//! as it happens (its part of the page refreshes in place) and a finished
//! one as it was. It opens with what an owner asks first (`headline`):
//! who called, what happens next, the problem, the address, the booked
//! time (on the business's clock); then the details: the transcript (a cut-off agent line marked, with what
//! the caller heard of it), the state timeline, the tool calls with their
//! arguments and results, the session's fields, the post-call deliveries,
//! a picture of each turn's latency, and the recording to listen to.

use super::html::{self, esc};
use crate::call::journal::Entry;
use crate::call::latency::TurnLatency;
use crate::call::record::FinishedCall;
use crate::serve::app::App;
use agent::session::Session;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;
use store::{CallStatus, StoredEvent};

/// Seconds between refreshes while the call is live.
const REFRESH_S: u32 = 2;

/// `GET /calls/{id}` (with `fragment=1`: the live part only).
pub(super) async fn page(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if super::page::signed_in(&app, &headers).is_none() {
        return super::page::to_login();
    }
    let fragment = params.get("fragment").is_some_and(|v| v == "1");
    let store = &app.vendors.store;
    let unavailable = |e: store::StoreError| {
        tracing::error!(error = %e, "dashboard: cannot read a call");
        super::page::message(
            StatusCode::SERVICE_UNAVAILABLE,
            "Call",
            "The database is unavailable.",
        )
    };
    let summary = match store.call_summary(&id).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return super::page::message(StatusCode::NOT_FOUND, "Call", &format!("No call {id}."))
        }
        Err(e) => return unavailable(e),
    };
    let events = match store.events(&id).await {
        Ok(e) => e,
        Err(e) => return unavailable(e),
    };
    let deliveries = store.outbox_for_call(&id).await.unwrap_or_default();
    // The post-call record (a finished call's) holds the last session.
    let record = match store.get_call(&id).await {
        Ok(r) => r.and_then(|r| stored_record(&id, &r.record)),
        Err(e) => return unavailable(e),
    };
    let live = summary.status == CallStatus::Active;
    let start = events.first().map_or(0.0, |e| e.at_unix);
    let business = &app.cfg.business;
    let session = last_session(record.as_ref(), &events);
    let who = caller_name(&summary, &session);

    let mut body = headline(&Headline {
        summary: &summary,
        record: record.as_ref(),
        session: &session,
        deliveries: &deliveries,
        business,
    });
    let _ = write!(
        body,
        "<section><h2>Details</h2><dl><dt>status</dt><dd>{}</dd>\
         <dt>last step</dt><dd>{} <code>{}</code></dd><dt>outcome</dt><dd><code>{}</code> {}</dd>\
         <dt>revenue</dt><dd>{}</dd><dt>call id</dt><dd><code>{}</code></dd></dl></section>",
        match summary.status {
            CallStatus::Active => "<span class=\"pill live\">live</span>",
            CallStatus::Completed => "finished",
            CallStatus::Interrupted => "cut off (the server stopped during the call)",
        },
        esc(&super::calls::state_words(&summary.final_state)),
        esc(&summary.final_state),
        esc(&summary.end_call_reason),
        esc(&summary.booking_status),
        esc(&summary.revenue_tier),
        esc(&id),
    );
    body.push_str(&super::recording::section(&app, &id, live));
    let said = entries(&events);
    body.push_str(&transcript(&said, start));
    body.push_str(&latency_chart(&crate::call::latency::from_events(&events)));
    body.push_str(&timeline(&said, start));
    body.push_str(&tools(&said, start));
    body.push_str(&fields(&events));
    body.push_str(&delivery_table(&deliveries, business));
    if !live {
        body.push_str("<span data-final hidden></span>");
    }
    if fragment {
        return super::page::answer("Call", body, true);
    }
    let refresh = if live {
        format!(" data-refresh=\"{REFRESH_S}\"")
    } else {
        String::new()
    };
    let page = format!("<div id=\"live\"{refresh}>{body}</div>");
    super::page::answer(&format!("Call from {who}"), page, false)
}

/// A call's post-call record, read through the writer's types; none for a
/// call that has none yet (live, or cut off), or one that cannot be read
/// (logged: the page shows what the journal has).
fn stored_record(id: &str, record: &Value) -> Option<FinishedCall> {
    if record.is_null() {
        return None;
    }
    FinishedCall::from_stored(record)
        .inspect_err(|e| tracing::warn!(call_id = %id, error = %e, "dashboard: a call's record"))
        .ok()
}

/// The session as last known: the post-call record's, else the last
/// snapshot in the event log (a live or cut-off call); empty if none.
fn last_session(record: Option<&FinishedCall>, events: &[StoredEvent]) -> Session {
    if let Some(r) = record {
        return r.session.clone();
    }
    events
        .iter()
        .rev()
        .find(|e| e.kind == "session")
        .and_then(|e| Session::deserialize(&e.data).ok())
        .unwrap_or_default()
}

/// The name the caller gave, if any.
fn given_name<'a>(summary: &'a store::CallSummary, session: &'a Session) -> Option<&'a str> {
    [summary.customer_name.trim(), session.customer_name.trim()]
        .into_iter()
        .find(|n| !n.is_empty())
}

/// Who called: the name they gave (else the number).
fn caller_name(summary: &store::CallSummary, session: &Session) -> String {
    given_name(summary, session)
        .unwrap_or(summary.phone.trim())
        .to_string()
}

/// What the top of the call page is made of.
struct Headline<'a> {
    summary: &'a store::CallSummary,
    record: Option<&'a FinishedCall>,
    session: &'a Session,
    deliveries: &'a [store::OutboxItem],
    business: &'a agent::BusinessProfile,
}

/// The call's first screen, as an owner asks: who called (name and
/// number), what happens next, the problem, where, when the technician
/// comes, when they called. The details follow below it.
fn headline(h: &Headline) -> String {
    let s = h.summary;
    let name = given_name(s, h.session);
    let problem = [s.problem.trim(), h.session.problem_description.trim()]
        .into_iter()
        .find(|p| !p.is_empty());
    let address = {
        let (street, zip) = (h.session.service_address.trim(), h.session.zip_code.trim());
        match (street.is_empty(), zip.is_empty() || street.contains(zip)) {
            (true, true) => None,
            (true, false) => Some(format!("ZIP {zip}")),
            (false, true) => Some(street.to_string()),
            (false, false) => Some(format!("{street} {zip}")),
        }
    };
    let (next, alarm) = next_step(h);
    let when = appointment(h);
    let missing = |what: &str| format!("<span class=\"note\">{what}</span>");
    let called = match s.ended_at {
        Some(e) => format!(
            "{}, {} s",
            html::local_time(h.business, s.started_at),
            (e - s.started_at).num_seconds().max(0)
        ),
        None => html::local_time(h.business, s.started_at),
    };
    format!(
        "<h1>{title}</h1><p class=\"next{alarm}\" id=\"next\">{next}</p>\
         <dl class=\"summary\" id=\"summary\"><dt>Caller</dt><dd>{who}</dd>\
         <dt>Problem</dt><dd>{problem}</dd><dt>Address</dt><dd>{address}</dd>\
         <dt>{when_label}</dt><dd>{when}</dd><dt>Called</dt><dd>{called}</dd>\
         <dt>Priority</dt><dd><span class=\"pill {color}\">{priority}</span></dd></dl>",
        title = esc(&format!("Call from {}", name.unwrap_or(s.phone.as_str()))),
        alarm = if alarm { " red" } else { "" },
        next = esc(&next),
        who = match name {
            Some(n) => format!("{}, {}", esc(n), esc(&s.phone)),
            None => format!("{} {}", esc(&s.phone), missing("(no name given)")),
        },
        problem = problem.map_or_else(|| missing("not said"), esc),
        address = address.map_or_else(|| missing("not given"), |a| esc(&a)),
        when_label = esc(when.0),
        when = when
            .1
            .map_or_else(|| missing("nothing booked"), |w| esc(&w)),
        called = esc(&called),
        color = esc(&s.priority_color),
        priority = esc(&super::calls::priority_words(&s.priority_color)),
    )
}

/// The appointment the call is about: one it booked ("Booked"), or the
/// caller's existing one it cancelled, moved or asked about
/// ("Appointment") — on the business's clock.
fn appointment(h: &Headline) -> (&'static str, Option<String>) {
    let booked = h.session.booked_time.trim();
    if !booked.is_empty() {
        return ("Booked", Some(html::appointment_time(h.business, booked)));
    }
    let moved = h.session.rescheduled_to.trim();
    if h.summary.end_call_reason == "appointment_rescheduled" && !moved.is_empty() {
        return ("Appointment", Some(format!("moved to {moved}")));
    }
    let (d, t) = (
        h.session.appointment_date.trim(),
        h.session.appointment_time.trim(),
    );
    let existing = match (d.is_empty(), t.is_empty()) {
        (true, true) => None,
        (false, true) => Some(d.to_string()),
        (true, false) => Some(t.to_string()),
        (false, false) => Some(format!("{d} at {t}")),
    };
    match (existing, h.summary.end_call_reason.as_str()) {
        (Some(w), "appointment_cancelled") => ("Appointment", Some(format!("{w} (cancelled)"))),
        (Some(w), _) => ("Appointment", Some(w)),
        (None, _) => ("Booked", None),
    }
}

/// What happens next, in a sentence, and whether it is an emergency.
fn next_step(h: &Headline) -> (String, bool) {
    let s = h.summary;
    if s.status == CallStatus::Active {
        return ("On the line now: this page follows the call.".into(), false);
    }
    let phone = Some(h.session.callback_phone.trim())
        .filter(|p| !p.is_empty())
        .unwrap_or(s.phone.as_str());
    let (_, appointment) = appointment(h);
    let said = match s.end_call_reason.as_str() {
        "safety_emergency" => {
            let alerts: Vec<&store::OutboxItem> = h
                .deliveries
                .iter()
                .filter(|d| d.kind == store::OutboxKind::Alert)
                .collect();
            let sent = alerts
                .iter()
                .any(|d| d.status == store::OutboxStatus::Delivered);
            let waiting = alerts
                .iter()
                .any(|d| d.status == store::OutboxStatus::Pending);
            let alert = if sent {
                "alert sent"
            } else if waiting {
                "the alert waits to be sent (see Outbox)"
            } else if alerts.is_empty() {
                "no alert was queued"
            } else {
                "the alert could not be sent: call the caller"
            };
            return (format!("Emergency: caller told to leave; {alert}."), true);
        }
        "completed" => match appointment {
            Some(w) => format!("Technician booked for {w}."),
            None => "Technician booked.".into(),
        },
        "callback_later" => format!("Call back: the caller is owed a callback at {phone}."),
        "sales_lead" => format!("Sales lead: call {phone} back with a quote."),
        "appointment_cancelled" => "Nothing to do: the caller cancelled the appointment.".into(),
        "appointment_rescheduled" => match appointment {
            Some(w) => format!("Appointment {w}."),
            None => "The appointment was moved.".into(),
        },
        "appointment_status" => "Nothing to do: the caller asked about the appointment.".into(),
        "no_response" => "Nothing promised: the caller never spoke.".into(),
        "customer_hangup" if s.booking_status == "attempted_failed" => {
            format!("Call back: the booking failed and the caller hung up ({phone}).")
        }
        "customer_hangup" => "Nothing promised: the caller hung up.".into(),
        _ if s.status == CallStatus::Interrupted => {
            format!("Call back: the call was cut off when the server stopped ({phone}).")
        }
        _ => super::calls::outcome_words(s, h.record, h.business) + ".",
    };
    (said, false)
}

fn offset(e: &StoredEvent, start: f64) -> String {
    format!("{:.1}s", (e.at_unix - start).max(0.0))
}

/// Each stored event with what it says, read once for the page's sections
/// (events of other kinds left out).
fn entries(events: &[StoredEvent]) -> Vec<(&StoredEvent, Entry)> {
    events
        .iter()
        .filter_map(|e| Some((e, Entry::read(&e.kind, &e.data)?)))
        .collect()
}

/// Caller and agent lines in order; an interrupted agent line is marked
/// with what was heard of it.
fn transcript(entries: &[(&StoredEvent, Entry)], start: f64) -> String {
    let cut: HashMap<u64, &str> = entries
        .iter()
        .filter_map(|(_, entry)| match entry {
            Entry::Interrupted(i) => Some((i.msg_id, i.heard.as_str())),
            _ => None,
        })
        .collect();
    let mut out = String::from("<section><h2>Transcript</h2><div class=\"scroll\"><table>");
    for (e, entry) in entries {
        match entry {
            Entry::Caller(line) => {
                let _ = write!(
                    out,
                    "<tr><td class=\"nowrap\">{}</td><td class=\"caller\">Caller</td><td>{}</td></tr>",
                    offset(e, start),
                    esc(&line.text)
                );
            }
            Entry::Agent(line) => {
                let mark = match line.msg_id.and_then(|id| cut.get(&id)) {
                    Some(heard) => format!(
                        "<br><span class=\"cut\">cut off — the caller heard: “{}”</span>",
                        esc(heard)
                    ),
                    None => String::new(),
                };
                let _ = write!(
                    out,
                    "<tr><td class=\"nowrap\">{}</td><td class=\"agent\">Agent</td><td>{}{mark}</td></tr>",
                    offset(e, start),
                    esc(&line.text)
                );
            }
            _ => {}
        }
    }
    out.push_str("</table></div></section>");
    out
}

/// The conversation's states, when each began.
fn timeline(entries: &[(&StoredEvent, Entry)], start: f64) -> String {
    let mut out =
        String::from("<section><h2>States</h2><div class=\"scroll\"><table><tr><th>at</th><th>from</th><th>to</th></tr>");
    for (e, entry) in entries {
        // `state {from, to}` (chat, replays), or a voice call's note
        // `{kind: "state", text: "from -> to"}`.
        let (from, to) = match &entry {
            Entry::State(c) => (c.from.as_str(), c.to.as_str()),
            Entry::Note(n) => match n.state_change() {
                Some(pair) => pair,
                None => continue,
            },
            _ => continue,
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            offset(e, start),
            esc(from),
            esc(to)
        );
    }
    out.push_str("</table></div></section>");
    out
}

/// Tool calls with their arguments, and results.
fn tools(entries: &[(&StoredEvent, Entry)], start: f64) -> String {
    let mut out = String::from(
        "<section><h2>Tools</h2><div class=\"scroll\"><table><tr><th>at</th><th>tool</th><th>arguments / result</th></tr>",
    );
    for (e, entry) in entries {
        let (what, tool, json) = match entry {
            Entry::ToolCall(c) => ("called", &c.tool, &c.args),
            Entry::ToolResult(r) => ("answered", &r.tool, &r.result),
            _ => continue,
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{} {}</td><td><pre>{}</pre></td></tr>",
            offset(e, start),
            esc(tool),
            what,
            esc(&serde_json::to_string_pretty(json).unwrap_or_default())
        );
    }
    out.push_str("</table></div></section>");
    out
}

/// The session's non-empty fields, as last written.
fn fields(events: &[StoredEvent]) -> String {
    let Some(Value::Object(s)) = events
        .iter()
        .rev()
        .find(|e| e.kind == "session")
        .map(|e| &e.data)
    else {
        return String::new();
    };
    let mut out = String::from("<section><h2>Fields</h2><dl>");
    for (k, v) in s {
        let text = match v {
            Value::String(t) if t.is_empty() => continue,
            Value::Bool(false) | Value::Null => continue,
            Value::String(t) => t.clone(),
            v => v.to_string(),
        };
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&text));
    }
    out.push_str("</dl></section>");
    out
}

fn delivery_table(items: &[store::OutboxItem], business: &agent::BusinessProfile) -> String {
    let mut out = String::from(
        "<section><h2>Deliveries</h2><div class=\"scroll\"><table><tr><th>kind</th><th>status</th>\
         <th>attempts</th><th>queued</th><th>last error</th></tr>",
    );
    for i in items {
        let status = match i.status.as_str() {
            "pending" => "waiting",
            "delivered" => "sent",
            "dead" => "gave up",
            other => other,
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&i.kind.to_string()),
            status,
            i.attempts,
            esc(&html::local_time_unix(business, i.created_unix)),
            esc(&i.last_error)
        );
    }
    out.push_str("</table></div></section>");
    out
}

/// One bar per answered turn, from the caller stopping to the reply being
/// heard, coloured by stage: speech recognition, the LLM's first token,
/// the voice's first audio, on to the phone. An SVG: a picture, not a table.
pub fn latency_chart(turns: &[TurnLatency]) -> String {
    if turns.is_empty() {
        return String::new();
    }
    const W: f64 = 560.0;
    const LEFT: f64 = 60.0;
    const ROW: f64 = 18.0;
    let end = |t: &TurnLatency| {
        [
            t.first_heard_ms,
            t.first_outbound_ms,
            t.tts_first_audio_ms,
            t.llm_first_token_ms,
            t.stt_final_ms,
        ]
        .into_iter()
        .flatten()
        .fold(0.0f64, f64::max)
    };
    let max_ms = turns
        .iter()
        .map(end)
        .fold(1000.0f64, f64::max)
        .min(15_000.0);
    let x = |ms: f64| LEFT + (ms.clamp(0.0, max_ms) / max_ms) * W;
    let stages: [(&str, &str); 4] = [
        ("speech recognised", "#7aa6c2"),
        ("LLM first token", "#c29a7a"),
        ("voice first audio", "#8fc27a"),
        ("heard at the phone", "#b58fc2"),
    ];
    let height = ROW * turns.len() as f64 + 40.0;
    let mut svg = format!(
        "<section><h2>Turn latency</h2><svg role=\"img\" aria-label=\"turn latency\" \
         xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" \
         viewBox=\"0 0 {} {height}\" style=\"background:#fff\">",
        LEFT + W + 20.0,
        LEFT + W + 20.0
    );
    for (i, t) in turns.iter().enumerate() {
        let y = 4.0 + ROW * i as f64;
        let _ = write!(
            svg,
            "<text x=\"4\" y=\"{}\" font-size=\"11\">turn {}</text>",
            y + 12.0,
            t.turn
        );
        let marks = [
            t.stt_final_ms.map(|m| m.max(0.0)),
            t.llm_first_token_ms,
            t.tts_first_audio_ms,
            t.first_heard_ms.or(t.first_outbound_ms),
        ];
        let mut from = 0.0;
        for ((label, colour), to) in stages.iter().zip(marks) {
            let Some(to) = to else { continue };
            if to < from {
                continue;
            }
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"{colour}\">\
                 <title>turn {}: {label} at {:.0} ms</title></rect>",
                x(from),
                (x(to) - x(from)).max(1.0),
                ROW - 4.0,
                t.turn,
                to
            );
            from = to;
        }
    }
    let axis_y = ROW * turns.len() as f64 + 10.0;
    let _ = write!(
        svg,
        "<text x=\"{LEFT}\" y=\"{}\" font-size=\"11\">0 (caller stopped)</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.1} s</text>",
        axis_y + 4.0,
        LEFT + W,
        axis_y + 4.0,
        max_ms / 1000.0
    );
    let mut lx = LEFT;
    for (label, colour) in stages {
        let _ = write!(
            svg,
            "<rect x=\"{lx}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"11\">{label}</text>",
            axis_y + 12.0,
            lx + 14.0,
            axis_y + 21.0
        );
        lx += 140.0;
    }
    svg.push_str("</svg></section>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(seq: i64, at: f64, kind: &str, data: Value) -> StoredEvent {
        StoredEvent {
            call_id: "CA1".into(),
            seq,
            at_unix: at,
            kind: kind.into(),
            data,
        }
    }

    #[test]
    fn a_cut_off_line_shows_what_was_heard_and_notes_make_the_timeline() {
        let events = vec![
            ev(
                1,
                100.0,
                "agent",
                json!({"text": "Thanks for calling!", "msg_id": 1}),
            ),
            ev(2, 103.0, "caller", json!({"text": "My AC <broke>"})),
            ev(
                3,
                104.0,
                "agent",
                json!({"text": "Quick safety check — any gas smell?", "msg_id": 2}),
            ),
            ev(
                4,
                104.8,
                "interrupted",
                json!({"msg_id": 2, "heard": "Quick safety"}),
            ),
            ev(
                5,
                104.9,
                "note",
                json!({"kind": "state", "text": "welcome -> safety"}),
            ),
        ];
        let t = transcript(&entries(&events), 100.0);
        assert!(t.contains("My AC &lt;broke&gt;"), "escaped: {t}");
        assert_eq!(t.matches("cut off").count(), 1, "{t}");
        assert!(t.contains("the caller heard: “Quick safety”"), "{t}");
        assert!(t.contains("4.0s"), "{t}");
        let s = timeline(&entries(&events), 100.0);
        assert!(s.contains("<td>welcome</td><td>safety</td>"), "{s}");
    }

    #[test]
    fn the_latency_chart_draws_one_bar_piece_per_known_stage() {
        let turn = |n: u32, heard: Option<f64>| TurnLatency {
            turn: n,
            stt_final_ms: Some(-20.0),
            llm_first_token_ms: Some(400.0),
            tts_first_audio_ms: Some(650.0),
            first_heard_ms: heard,
            ..Default::default()
        };
        let svg = latency_chart(&[turn(1, Some(900.0)), turn(2, None)]);
        // Turn 1: four pieces; turn 2: three (never heard, no outbound);
        // plus four legend squares.
        assert_eq!(svg.matches("<rect").count(), 4 + 3 + 4, "{svg}");
        assert!(svg.contains("turn 1: heard at the phone at 900 ms"));
        assert!(latency_chart(&[]).is_empty());
    }
}
