//! The `session` events of a call's journal: the session after each
//! change, without its lines.
//!
//! The conversation hands its session to the journal after every input
//! (a transcript, a timer, a tool's answer…), many times a second on a
//! busy call, and most inputs change nothing in it. So what is kept is a
//! fingerprint of the last snapshot, made without building anything: each
//! field's JSON is fed to a hasher as it is written. Only when the
//! fingerprint changes is the snapshot built and journaled.

use agent::session::Session;
use serde_json::Value;
use std::hash::Hasher;

/// The session without its transcript and its caller lines
/// (`conversation_history`): the journal's own events carry every line,
/// and [`super::rebuild`] takes both back from them. A snapshot is written
/// at every change, so with the lines it would grow with the call, and
/// the journal with its square.
pub fn session_snapshot(s: &Session) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove("transcript_log");
        o.remove("conversation_history");
    }
    v
}

/// Decides when the session (without its transcript) is journaled: each
/// time its snapshot changed.
///
/// Only a fingerprint of the last snapshot is kept (a live call must stay
/// small: the snapshot holds the whole conversation history, and a
/// thousand calls would each carry one).
#[derive(Default)]
pub struct SessionSnapshots {
    last: Option<u64>,
}

impl SessionSnapshots {
    /// The snapshot of `session` to journal (JSON text), unless it equals
    /// the last one this returned.
    pub fn changed(&mut self, session: &Session) -> Option<String> {
        let print = fingerprint(session);
        if self.last == Some(print) {
            return None;
        }
        self.last = Some(print);
        Some(session_snapshot(session).to_string())
    }
}

/// A hasher the JSON writer writes into.
struct HashWriter(std::collections::hash_map::DefaultHasher);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A hash of every field a snapshot holds, each as its JSON: two sessions
/// with the same snapshot have the same fingerprint, and a change to any
/// field of it changes the fingerprint (but for a hash collision).
///
/// Every field is named (a new one is a compile error here until it is
/// placed): the lines are the only ones left out, as in
/// [`session_snapshot`].
fn fingerprint(s: &Session) -> u64 {
    let mut w = HashWriter(Default::default());
    // One list: the destructuring names every field, then each is fed.
    macro_rules! feed {
        ($($field:ident,)*) => {
            let Session {
                $($field,)*
                transcript_log: _,
                conversation_history: _,
            } = s;
            $(
                // Writing JSON into a hasher fails only if a value cannot
                // be JSON, and then it fails the same way every time.
                let _ = serde_json::to_writer(&mut w, $field);
                w.0.write_u8(b',');
            )*
        };
    }
    feed!(
        phone_number,
        state,
        caller_known,
        customer_name,
        zip_code,
        service_address,
        has_appointment,
        appointment_date,
        appointment_time,
        appointment_uid,
        callback_promise,
        caller_intent,
        problem_description,
        equipment_type,
        problem_duration,
        is_third_party,
        site_contact_name,
        site_contact_phone,
        preferred_time,
        urgency_tier,
        lead_type,
        lead_alert_sent,
        caller_confirmed,
        booking_confirmed,
        booking_attempted,
        booked_time,
        appointment_id,
        confirmation_message,
        callback_created,
        callback_attempts,
        callback_type,
        callback_phone,
        booking_time,
        terminal_reply_used,
        call_sid,
        start_time,
        turn_count,
        state_turn_count,
        agent_has_responded,
        manage_action,
        manage_time_hint,
        caller_silent,
        rescheduled_to,
        heard,
        asked,
        asked_times,
        callback_declined,
        callback_reason,
        errand,
        zip_said,
        time_said,
    );
    w.0.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_the_snapshot_and_not_the_lines() {
        let mut s = Session::new("+15125550142");
        let first = fingerprint(&s);
        assert_eq!(
            fingerprint(&s.clone()),
            first,
            "the same session, the same print"
        );
        // The lines are not in the snapshot: no new print.
        s.conversation_history.push(agent::session::HistoryMessage {
            role: "user".into(),
            content: "my AC is out".into(),
        });
        s.transcript_log
            .push(agent::session::TranscriptEntry::user("hi", 1.0, s.state));
        assert_eq!(fingerprint(&s), first);
        // Any field of the snapshot is.
        for change in [
            |s: &mut Session| s.customer_name = "Dana".into(),
            |s: &mut Session| s.state = agent::State::Discovery,
            |s: &mut Session| s.turn_count += 1,
            |s: &mut Session| s.start_time += 0.5,
            |s: &mut Session| s.time_said = true,
            |s: &mut Session| s.asked_times += 1,
            |s: &mut Session| s.heard.repeat = true,
        ] {
            let mut changed = s.clone();
            change(&mut changed);
            assert_ne!(session_snapshot(&changed), session_snapshot(&s));
            assert_ne!(fingerprint(&changed), first);
        }
        // A value moved from one field to the next is a change too.
        let mut a = s.clone();
        a.customer_name = "Dana".into();
        let mut b = s.clone();
        b.zip_code = "Dana".into();
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }
}
