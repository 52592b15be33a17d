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
        let s = &mut self.session;
        let settled = s.booking_confirmed || s.state.promises_callback() || s.state.is_terminal();
        if !settled {
            let from = s.state;
            s.state = State::Callback;
            if s.callback_type.is_empty() {
                s.callback_type = "service".into();
            }
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
