//! The server ending a call itself, and a caller it could not take.

use super::*;

/// The call of a caller the server could not take (every line busy, or
/// shutting down): they heard [`Canned::LinesBusy`] and nothing else, and
/// the call is a callback for service, so nobody is lost.
pub fn turned_away(
    profile: &BusinessProfile,
    caller: String,
    call_sid: String,
    now: f64,
) -> Session {
    let mut session = Session::new(caller);
    session.call_sid = call_sid;
    session.state = State::Callback;
    session.callback_type = "service".into();
    session.problem_description = "Called while every line was busy; call back.".into();
    let mut engine = Engine::new(session, profile.clone(), EngineConfig::default());
    let mut out = Vec::new();
    engine.speak(Canned::LinesBusy, now, &mut out);
    engine.into_session()
}

/// Whether a call needs nothing more from the business: it booked, it
/// already promised a callback, or it reached another terminal state.
fn settled(s: &Session) -> bool {
    s.booking_confirmed || s.state.promises_callback() || s.state.is_terminal()
}

/// Make an unsettled call a callback (for service, unless a type was
/// already set): what the caller is owed when the server ends their call.
/// Returns the state it left, when it changed.
fn owe_callback(s: &mut Session) -> Option<State> {
    if settled(s) {
        return None;
    }
    let from = s.state;
    s.state = State::Callback;
    if s.callback_type.is_empty() {
        s.callback_type = "service".into();
    }
    Some(from)
}

/// A call cut off by a server that stopped without ending it (killed, or
/// its machine lost): nobody told the caller anything, so, as when the
/// server ends a call itself, an unsettled call becomes a callback —
/// decided after the fact, by whichever process takes the call over.
/// Returns the state it left, when it changed.
pub fn cut_off_by_the_server(session: &mut Session) -> Option<State> {
    owe_callback(session)
}

impl<P: Policy> Engine<P> {
    /// The server ends the call. Unless it already ended in a booking or a
    /// promised callback (or another terminal state), it becomes a
    /// callback: the state moves to `callback` (for service, unless a type
    /// was already set) and the caller is told someone will call back.
    /// Unless the line is cut at once, the caller hears why (a canned line,
    /// logged like every canned line; report what was heard of it with
    /// [`Input::AgentInterrupted`]); then the call ends. Whatever was
    /// pending (a turn, buffered words, a hang-up) is dropped.
    pub(super) fn server_ending(&mut self, why: ServerEnd, now: f64, out: &mut Vec<Effect>) {
        let settled = settled(&self.session);
        if let Some(from) = owe_callback(&mut self.session) {
            self.note_state(from, now, out);
        }
        self.turn = None;
        self.buffer = None;
        self.queued.clear();
        self.hangup = None;
        let line = match why {
            ServerEnd::ShuttingDown { politely: false } => None,
            ServerEnd::ShuttingDown { politely: true } => Some(Canned::ShuttingDown { settled }),
            ServerEnd::SpeechLost => Some(Canned::SpeechLost { settled }),
        };
        if let Some(line) = line {
            self.speak(line, now, out);
        }
        self.idle_at = None;
        self.filler_at = None;
        self.end_call(now, out);
    }
}
