//! The conversation state machine: pure and synchronous (SPEC §2–§4 with
//! DECISIONS D-3 … D-14).
//!
//! [`StateMachine::process`] judges one caller utterance (turn counting,
//! limits, the current state's rules) and returns an [`Action`];
//! [`StateMachine::apply_tool_result`] updates the session from a backend
//! answer. Every state change goes through one transition helper that
//! enforces the table of [`State::allowed_next`] (plus the turn-limit
//! escalation to `callback` from anywhere): an illegal move is refused and
//! logged, and panics in debug builds so tests catch it.

mod states;
mod universal;

use crate::profile::BusinessProfile;
use crate::session::Session;
use crate::state::{State, Tool};
use crate::tools;
use crate::understand::{understand, Asked};
use crate::validate::{is_service_area, is_wrap_up, validate_address, validate_name, validate_zip};
use serde_json::Value;
use universal::take_callback_number;

/// Per-state exchange limit (SPEC §3).
pub const MAX_TURNS_PER_STATE: i64 = 5;
/// Per-call utterance limit (SPEC §3).
pub const MAX_TURNS_PER_CALL: i64 = 30;
/// Urgent words beyond the reference's URGENT_SIGNALS ("it's urgent").
const MORE_URGENT_SIGNALS: &[&str] = &[
    "urgent",
    "urgently",
    "quickly",
    "earliest",
    "first available",
    "soon as you can",
    "as early as",
];
/// Flexible answers beyond the reference's ROUTINE_SIGNALS.
const MORE_ROUTINE_SIGNALS: &[&str] = &[
    "no hurry",
    "anytime",
    "any time",
    "whenever works",
    "doesn't matter",
    "don't care",
    "flexible",
    "can wait",
    "not in a rush",
    "not a rush",
];

/// What urgency writes into `preferred_time` for ASAP/routine answers.
pub const SOONEST_AVAILABLE: &str = "soonest available";

/// A canned line the state machine asks to be spoken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speak {
    /// "Let me check what's open" while booking runs.
    FillerBookingCheck,
    /// The per-call limit apology.
    TurnLimitPerCall,
    /// The per-state limit hand-off.
    TurnLimitPerState,
}

/// What the orchestrator should do with one utterance (SPEC §1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    pub speak: Option<Speak>,
    pub call_tool: Option<Tool>,
    pub end_call: bool,
    pub needs_llm: bool,
}

impl Default for Action {
    fn default() -> Self {
        Action {
            speak: None,
            call_tool: None,
            end_call: false,
            needs_llm: true,
        }
    }
}

impl Action {
    fn llm() -> Self {
        Action::default()
    }
    fn tool(tool: Tool, needs_llm: bool) -> Self {
        Action {
            call_tool: Some(tool),
            needs_llm,
            ..Action::default()
        }
    }
    fn end() -> Self {
        Action {
            end_call: true,
            ..Action::default()
        }
    }
    fn silent() -> Self {
        Action {
            needs_llm: false,
            ..Action::default()
        }
    }
}

/// Why a transition happens: a state rule (checked against the table) or
/// the turn-limit escalation (always to `callback`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    Rule,
    TurnLimit,
    /// D-22: a hazard reported in any state moves the call to
    /// `safety_exit` at once.
    Hazard,
    /// The caller asked for a person, or a question went unanswered three
    /// times: a callback, from any state before a terminal one (the same
    /// move as the turn-limit escalation).
    Escalate,
}

/// Move `session` to `to`, resetting the per-state counters. Returns false
/// (and changes nothing) for a transition the table does not allow.
pub fn transition(session: &mut Session, to: State, why: Why) -> bool {
    let from = session.state;
    let legal = match why {
        Why::TurnLimit | Why::Escalate => to == State::Callback,
        Why::Hazard => to == State::SafetyExit && from != State::SafetyExit,
        Why::Rule => from.can_move_to(to),
    };
    if !legal {
        tracing::error!(%from, %to, ?why, "illegal state transition refused");
        debug_assert!(legal, "illegal state transition {from} -> {to} ({why:?})");
        return false;
    }
    // D-4: entering a state that promises a call back is a new promise; a
    // callback created earlier in the call (say, for a billing question)
    // does not keep it.
    if to.promises_callback() && !from.promises_callback() {
        session.callback_created = false;
        session.callback_attempts = 0;
    }
    session.state = to;
    session.state_turn_count = 0;
    session.agent_has_responded = false;
    true
}

/// The orchestrator's view of a state machine, so tests can substitute one.
pub trait Policy {
    fn process(&mut self, session: &mut Session, text: &str) -> Action;
    fn apply_tool_result(&mut self, session: &mut Session, tool: Tool, result: &Value);
}

/// The CallLock state machine.
#[derive(Debug, Clone, Default)]
pub struct StateMachine {
    profile: BusinessProfile,
}

impl StateMachine {
    pub fn new(profile: BusinessProfile) -> Self {
        StateMachine { profile }
    }

    /// Judge one caller utterance: understand it once
    /// ([`crate::understand`]), apply what holds in every state (a hazard,
    /// a correction, a goodbye, a request for a person), then the current
    /// state's rule.
    pub fn process(&self, s: &mut Session, text: &str) -> Action {
        s.turn_count += 1;
        let exchange = s.agent_has_responded;
        if s.agent_has_responded {
            s.state_turn_count += 1;
            s.agent_has_responded = false;
        }
        if s.turn_count > MAX_TURNS_PER_CALL {
            transition(s, State::Callback, Why::TurnLimit);
            return Action {
                speak: Some(Speak::TurnLimitPerCall),
                call_tool: Some(Tool::CreateCallback),
                end_call: true,
                needs_llm: false,
            };
        }
        if s.state_turn_count > MAX_TURNS_PER_STATE {
            transition(s, State::Callback, Why::TurnLimit);
            return Action {
                speak: Some(Speak::TurnLimitPerState),
                call_tool: Some(Tool::CreateCallback),
                end_call: false,
                needs_llm: false,
            };
        }
        let asked = Asked::of(s);
        let u = understand(text, asked);
        s.heard = universal::heard(&u);
        if let Some(action) = universal::hazard(s, &u, text) {
            return action;
        }
        universal::take_slots(s, &u, asked, text);
        let open_before =
            !s.state.is_terminal() && !matches!(s.state, State::SafetyExit | State::Booking);
        if let Some(action) = universal::acts(s, &u) {
            return action;
        }
        if let Some(action) = self.late_zip_correction(s) {
            return action;
        }
        take_callback_number(s, text);
        let action = match s.state {
            State::Welcome => states::welcome(s, &u, text),
            State::NonService => states::non_service(s, &u, text),
            State::Lookup => Action::tool(Tool::LookupCaller, false),
            State::FollowUp => states::follow_up(s, &u, text),
            State::ManageBooking => states::manage_booking(s, &u, text),
            State::Safety => states::safety(s, text, &self.profile),
            State::SafetyExit => Action::end(),
            State::ServiceArea => states::service_area(s, text, &self.profile),
            State::Discovery => states::discovery(s),
            State::Urgency => states::urgency(s, &u, text),
            State::UrgencyCallback => states::urgency_callback(s),
            State::PreConfirm => states::pre_confirm(s, &u, text),
            State::Booking => states::booking(s),
            State::BookingFailed | State::Callback => states::callback_like(s, &u, text),
            State::Confirm => {
                if is_wrap_up(text) {
                    Action::end()
                } else {
                    Action::llm()
                }
            }
        };
        let action = universal::goodbye(s, &u, open_before, action);
        universal::count_ask(s, asked, exchange, action)
    }

    /// After `service_area`: a corrected ZIP (taken by
    /// [`universal::take_slots`]) outside the area ends in a callback where
    /// the table allows it (urgency, pre_confirm), never in a booking.
    fn late_zip_correction(&self, s: &mut Session) -> Option<Action> {
        if !matches!(s.state, State::Urgency | State::PreConfirm) {
            return None;
        }
        let outside = !s.zip_code.is_empty() && !is_service_area(&s.zip_code, &self.profile);
        if outside {
            transition(s, State::Callback, Why::Rule);
            return Some(Action::llm());
        }
        None
    }

    /// Update the session from a backend answer (SPEC §4 with D-5, D-8, D-19).
    /// Results that arrive in a state that does not expect them update the
    /// fields but never move the state.
    pub fn apply_tool_result(&self, s: &mut Session, tool: Tool, result: &Value) {
        let before = s.state;
        self.apply_result(s, tool, result);
        if s.state != before {
            // The agent puts the new state's question next: its first time.
            s.asked = Asked::of(s);
            s.asked_times = 1;
        }
    }

    fn apply_result(&self, s: &mut Session, tool: Tool, result: &Value) {
        match tool {
            Tool::LookupCaller => {
                let l = tools::read_lookup(result);
                s.caller_known = l.found;
                // What the caller already said in this call wins over the
                // file (someone else calling from the number, another house).
                keep_said(&mut s.customer_name, validate_name(&l.customer_name));
                keep_said(&mut s.zip_code, validate_zip(&l.zip_code));
                keep_said(&mut s.service_address, validate_address(&l.address));
                s.has_appointment = l.has_appointment;
                if let Some(a) = l.appointment {
                    s.appointment_date = a.date;
                    s.appointment_time = a.time;
                    s.appointment_uid = a.uid;
                }
                s.callback_promise = l.callback_promise;
                if s.state == State::Lookup {
                    let next = if s.caller_intent == "follow_up" {
                        State::FollowUp
                    } else if s.caller_intent == "manage_booking" && s.has_appointment {
                        State::ManageBooking
                    } else {
                        State::Safety
                    };
                    transition(s, next, Why::Rule);
                }
            }
            Tool::BookService => {
                let b = tools::read_booking(result);
                if b.booked {
                    s.booking_confirmed = true;
                    s.booked_time = b.booked_time;
                    s.appointment_id = b.appointment_id;
                    s.confirmation_message = b.confirmation_message;
                    if s.state == State::Booking {
                        transition(s, State::Confirm, Why::Rule);
                    }
                } else {
                    s.booking_confirmed = false;
                    if s.state == State::Booking {
                        transition(s, State::BookingFailed, Why::Rule);
                    }
                }
            }
            Tool::CreateCallback => {
                if tools::call_succeeded(result) {
                    s.callback_created = true;
                } else {
                    s.callback_created = false;
                    s.callback_attempts += 1;
                }
            }
            Tool::SendSalesLeadAlert => {
                if tools::call_succeeded(result) {
                    s.lead_alert_sent = true;
                }
            }
            Tool::ManageAppointment => {
                let m = tools::read_manage(result);
                if m.action_taken == "cancel" {
                    s.has_appointment = false;
                }
                if m.action_taken == "reschedule" && m.success {
                    let backend_says_when = !m.new_date.is_empty() || !m.new_time.is_empty();
                    if !m.new_date.is_empty() {
                        s.appointment_date = m.new_date;
                    }
                    if !m.new_time.is_empty() {
                        s.appointment_time = m.new_time;
                    }
                    if backend_says_when {
                        s.rescheduled_to = s.appointment_when();
                    }
                }
                // manage_action stays: the confirm prompt reports the change.
                s.manage_time_hint.clear();
                if m.success && !m.message.is_empty() {
                    s.confirmation_message = m.message;
                }
                if s.state == State::ManageBooking {
                    let next = if m.success {
                        State::Confirm
                    } else {
                        State::Callback
                    };
                    transition(s, next, Why::Rule);
                }
            }
            Tool::EndCall => {}
        }
    }
}

/// Fill `field` from the file unless the caller said it already.
fn keep_said(field: &mut String, from_file: String) {
    if field.is_empty() {
        *field = from_file;
    }
}

impl Policy for StateMachine {
    fn process(&mut self, session: &mut Session, text: &str) -> Action {
        StateMachine::process(self, session, text)
    }
    fn apply_tool_result(&mut self, session: &mut Session, tool: Tool, result: &Value) {
        StateMachine::apply_tool_result(self, session, tool, result)
    }
}

#[cfg(test)]
mod tests;
