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

use crate::booking_time::said;
use crate::keywords::{
    lowercase, match_any, MANAGE_BOOKING_KEYWORDS, NEW_ISSUE_SIGNALS, ROUTINE_SIGNALS,
    SCHEDULE_SIGNALS, SERVICE_KEYWORDS, TIME_PATTERNS, URGENT_SIGNALS, YES_SIGNALS,
};
use crate::profile::BusinessProfile;
use crate::questions::{off_script_question, Question};
use crate::session::Session;
use crate::state::{State, Tool};
use crate::tools;
use crate::validate::{
    classify_intent, detect_callback_request, detect_high_ticket, extract_phone, extract_zip,
    is_bare_no, is_service_area, is_wrap_up, manage_request, names_a_time,
    non_service_callback_type, safety_answer, validate_address, validate_name, validate_zip,
    zip_correction, Intent, ManageRequest, SafetyAnswer, MISSED_CALLBACK_PHRASES,
};
use serde_json::Value;

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
}

/// Move `session` to `to`, resetting the per-state counters. Returns false
/// (and changes nothing) for a transition the table does not allow.
pub fn transition(session: &mut Session, to: State, why: Why) -> bool {
    let from = session.state;
    let legal = match why {
        Why::TurnLimit => to == State::Callback,
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

    /// Judge one caller utterance.
    pub fn process(&self, s: &mut Session, text: &str) -> Action {
        s.turn_count += 1;
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
        // Rules that hold across states, before the state's own rule.
        if let Some(action) = danger_before_safety(s, text) {
            return action;
        }
        if let Some(action) = self.late_zip_correction(s, text) {
            return action;
        }
        take_callback_number(s, text);
        match s.state {
            State::Welcome => self.welcome(s, text),
            State::NonService => non_service(s, text),
            State::Lookup => Action::tool(Tool::LookupCaller, false),
            State::FollowUp => follow_up(s, text),
            State::ManageBooking => manage_booking(s, text),
            State::Safety => safety(s, text),
            State::SafetyExit => Action::end(),
            State::ServiceArea => self.service_area(s, text),
            State::Discovery => discovery(s),
            State::Urgency => urgency(s, text),
            State::UrgencyCallback => urgency_callback(s),
            State::PreConfirm => pre_confirm(s, text),
            State::Booking => booking(s),
            State::BookingFailed | State::Callback => callback_like(s, text),
            State::Confirm => {
                if is_wrap_up(text) {
                    Action::end()
                } else {
                    Action::llm()
                }
            }
        }
    }

    fn welcome(&self, s: &mut Session, text: &str) -> Action {
        let question = off_script_question(text);
        if question.is_some() && !match_any(text, SERVICE_KEYWORDS) {
            // "How much is a visit?", "are you a robot?": answered, and the
            // call is still at its start — not a billing call, not a lookup.
            return Action::llm();
        }
        let mut intent = classify_intent(text);
        if question == Some(Question::Price) && intent == Intent::NonService {
            // "How much do you charge to fix my AC?" is a service caller.
            intent = Intent::Service;
        }
        if intent == Intent::Service && match_any(text, MISSED_CALLBACK_PHRASES) {
            // "Nobody called me back": a follow-up, not a new service call.
            intent = Intent::FollowUp;
        }
        s.caller_intent = intent.as_str().to_string();
        if intent == Intent::ManageBooking {
            // "I need to reschedule my appointment": remembered, so the
            // time said next is taken as the new time.
            match manage_request(text) {
                Some(ManageRequest::Reschedule) => s.manage_action = "reschedule".into(),
                Some(ManageRequest::Cancel) => s.manage_action = "cancel".into(),
                _ => {}
            }
        }
        if intent == Intent::NonService {
            if let Some(kind) = non_service_callback_type(text) {
                s.callback_type = kind.to_string();
            }
            transition(s, State::NonService, Why::Rule);
            return Action::llm();
        }
        transition(s, State::Lookup, Why::Rule);
        Action::tool(Tool::LookupCaller, false)
    }

    /// After `service_area`: a corrected ZIP replaces the one taken (see
    /// [`Self::correct_zip`]); one outside the area ends in a callback where
    /// the table allows it (urgency, pre_confirm), never in a booking.
    fn late_zip_correction(&self, s: &mut Session, text: &str) -> Option<Action> {
        if !matches!(
            s.state,
            State::Discovery | State::Urgency | State::PreConfirm
        ) {
            return None;
        }
        self.correct_zip(s, text);
        let outside = !s.zip_code.is_empty() && !is_service_area(&s.zip_code, &self.profile);
        if outside && matches!(s.state, State::Urgency | State::PreConfirm) {
            transition(s, State::Callback, Why::Rule);
            return Some(Action::llm());
        }
        None
    }

    /// A caller who corrects the ZIP later in the call ("actually my zip is
    /// 78702") replaces the one taken in `service_area`.
    fn correct_zip(&self, s: &mut Session, text: &str) {
        if let Some(zip) = zip_correction(text, &s.zip_code) {
            tracing::debug!(old = %s.zip_code, new = %zip, "ZIP corrected");
            s.zip_code = zip;
        }
    }

    fn service_area(&self, s: &mut Session, text: &str) -> Action {
        // What the caller says now wins over a ZIP on file (a returning
        // caller calling about another house).
        let said = validate_zip(&extract_zip(text));
        if !said.is_empty() {
            s.zip_code = said;
        }
        if !s.zip_code.is_empty() {
            let next = if is_service_area(&s.zip_code, &self.profile) {
                State::Discovery
            } else {
                State::Callback
            };
            transition(s, next, Why::Rule);
        }
        Action::llm()
    }

    /// Update the session from a backend answer (SPEC §4 with D-5, D-8, D-19).
    /// Results that arrive in a state that does not expect them update the
    /// fields but never move the state.
    pub fn apply_tool_result(&self, s: &mut Session, tool: Tool, result: &Value) {
        match tool {
            Tool::LookupCaller => {
                let l = tools::read_lookup(result);
                s.caller_known = l.found;
                s.customer_name = validate_name(&l.customer_name);
                s.zip_code = validate_zip(&l.zip_code);
                s.service_address = validate_address(&l.address);
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

impl Policy for StateMachine {
    fn process(&mut self, session: &mut Session, text: &str) -> Action {
        StateMachine::process(self, session, text)
    }
    fn apply_tool_result(&mut self, session: &mut Session, tool: Tool, result: &Value) {
        StateMachine::apply_tool_result(self, session, tool, result)
    }
}

/// D-7: a caller who asks to be called back gets one callback.
fn wants_callback(s: &Session, text: &str) -> bool {
    detect_callback_request(text) && !s.callback_created
}

fn non_service(s: &mut Session, text: &str) -> Action {
    if wants_callback(s, text) {
        return Action::tool(Tool::CreateCallback, true);
    }
    if match_any(text, SCHEDULE_SIGNALS) {
        transition(s, State::Safety, Why::Rule);
    }
    Action::llm()
}

fn follow_up(s: &mut Session, text: &str) -> Action {
    if wants_callback(s, text) {
        return Action::tool(Tool::CreateCallback, true);
    }
    if match_any(text, NEW_ISSUE_SIGNALS) || match_any(text, SCHEDULE_SIGNALS) {
        transition(s, State::Safety, Why::Rule);
    }
    Action::llm()
}

/// D-8: cancel, reschedule (once a new time is named) and status requests
/// call `manage_appointment`; the result moves to confirm or callback.
fn manage_booking(s: &mut Session, text: &str) -> Action {
    if match_any(text, NEW_ISSUE_SIGNALS) {
        transition(s, State::Safety, Why::Rule);
        return Action::llm();
    }
    let request = manage_request(text);
    let pending_reschedule = s.manage_action == "reschedule";
    match request {
        Some(ManageRequest::Cancel) => {
            s.manage_action = "cancel".into();
            Action::tool(Tool::ManageAppointment, true)
        }
        Some(ManageRequest::Status) if !pending_reschedule => {
            s.manage_action = "status".into();
            Action::tool(Tool::ManageAppointment, true)
        }
        Some(ManageRequest::Reschedule) | Some(ManageRequest::Status) | None => {
            // A new time said outright ("Friday afternoon please") asks to
            // reschedule too.
            let asks_reschedule = request == Some(ManageRequest::Reschedule)
                || (request.is_none() && s.has_appointment && names_a_time(text));
            if asks_reschedule || pending_reschedule {
                s.manage_action = "reschedule".into();
                if names_a_time(text) {
                    s.manage_time_hint = text.trim().to_string();
                    return Action::tool(Tool::ManageAppointment, true);
                }
            }
            Action::llm()
        }
    }
}

fn safety(s: &mut Session, text: &str) -> Action {
    match safety_answer(text) {
        SafetyAnswer::Emergency => {
            transition(s, State::SafetyExit, Why::Rule);
        }
        SafetyAnswer::ClearNo => {
            transition(s, State::ServiceArea, Why::Rule);
        }
        SafetyAnswer::Unclear => {}
    }
    Action::llm()
}

fn discovery(s: &mut Session) -> Action {
    s.customer_name = validate_name(&s.customer_name);
    s.service_address = validate_address(&s.service_address);
    if !s.customer_name.is_empty()
        && !s.problem_description.is_empty()
        && !s.service_address.is_empty()
    {
        if detect_high_ticket(&s.problem_description) {
            s.lead_type = "high_ticket".into();
        }
        transition(s, State::Urgency, Why::Rule);
    }
    Action::llm()
}

fn urgency(s: &mut Session, text: &str) -> Action {
    if detect_callback_request(text) || s.is_high_ticket() {
        transition(s, State::UrgencyCallback, Why::Rule);
    } else if s.has_appointment && match_any(text, MANAGE_BOOKING_KEYWORDS) {
        transition(s, State::Callback, Why::Rule);
    } else if said::clock(&lowercase(text)).is_some() {
        // "today at 3", "Friday at 3pm": the caller named the time.
        s.urgency_tier = "routine".into();
        s.preferred_time = text.trim().to_string();
        transition(s, State::PreConfirm, Why::Rule);
    } else if match_any(text, URGENT_SIGNALS) || match_any(text, MORE_URGENT_SIGNALS) {
        s.urgency_tier = "urgent".into();
        s.preferred_time = SOONEST_AVAILABLE.into();
        transition(s, State::PreConfirm, Why::Rule);
    } else if match_any(text, ROUTINE_SIGNALS) {
        s.urgency_tier = "routine".into();
        s.preferred_time = SOONEST_AVAILABLE.into();
        transition(s, State::PreConfirm, Why::Rule);
    } else if match_any(text, TIME_PATTERNS) || said::day(&lowercase(text)).is_some() {
        // Days the reference missed too: "next week", "this weekend", "in
        // a couple of days", "it can wait a few days".
        s.urgency_tier = "routine".into();
        s.preferred_time = text.trim().to_string();
        transition(s, State::PreConfirm, Why::Rule);
    } else if match_any(text, MORE_ROUTINE_SIGNALS) {
        s.urgency_tier = "routine".into();
        s.preferred_time = SOONEST_AVAILABLE.into();
        transition(s, State::PreConfirm, Why::Rule);
    }
    Action::llm()
}

/// D-5: a high-ticket lead gets one sales alert, then one callback; after
/// that the call wraps up.
fn urgency_callback(s: &mut Session) -> Action {
    if s.is_high_ticket() && !s.lead_alert_sent {
        Action::tool(Tool::SendSalesLeadAlert, true)
    } else if !s.callback_created && s.callback_attempts < 2 {
        Action::tool(Tool::CreateCallback, true)
    } else {
        Action::end()
    }
}

fn pre_confirm(s: &mut Session, text: &str) -> Action {
    if detect_callback_request(text) {
        transition(s, State::Callback, Why::Rule);
        return Action::llm();
    }
    if match_any(text, YES_SIGNALS) {
        s.caller_confirmed = true;
        s.booking_attempted = true;
        transition(s, State::Booking, Why::Rule);
        return Action {
            speak: Some(Speak::FillerBookingCheck),
            call_tool: Some(Tool::BookService),
            end_call: false,
            needs_llm: true,
        };
    }
    Action::llm()
}

fn booking(s: &mut Session) -> Action {
    if s.booking_attempted {
        return Action::silent();
    }
    s.booking_attempted = true;
    Action::tool(Tool::BookService, false)
}

/// `callback` and `booking_failed`: create the callback (two attempts at
/// most), then end the call.
/// Danger said before the safety question counts at once: "I smell gas in
/// my kitchen" as the first sentence goes straight to the 911 script,
/// through the legal path (→ lookup → safety → safety_exit; the lookup is
/// skipped, it cannot matter now).
fn danger_before_safety(s: &mut Session, text: &str) -> Option<Action> {
    let before_safety = matches!(
        s.state,
        State::Welcome | State::Lookup | State::NonService | State::FollowUp | State::ManageBooking
    );
    if !before_safety || safety_answer(text) != SafetyAnswer::Emergency {
        return None;
    }
    if s.state == State::Welcome {
        transition(s, State::Lookup, Why::Rule);
    }
    transition(s, State::Safety, Why::Rule);
    transition(s, State::SafetyExit, Why::Rule);
    Some(Action::llm())
}

/// In a state that promised a callback: "call my cell 512 555 0199" makes
/// the promise go to that number; a callback already made for the caller
/// id gets a new one for it.
fn take_callback_number(s: &mut Session, text: &str) {
    if !s.state.promises_callback() {
        return;
    }
    if let Some(phone) =
        extract_phone(text).filter(|p| *p != s.phone_number && *p != s.callback_phone)
    {
        s.callback_phone = phone;
        if s.callback_created {
            s.callback_created = false;
            s.callback_attempts = 0;
        }
    }
}

fn callback_like(s: &mut Session, text: &str) -> Action {
    if s.state == State::Callback
        && s.callback_created
        && s.callback_phone.is_empty()
        && is_bare_no(text)
    {
        // "Is this the best number?" — "no": stay to hear the right one.
        return Action::llm();
    }
    if s.callback_created || s.callback_attempts >= 2 {
        Action::end()
    } else {
        Action::tool(Tool::CreateCallback, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sm() -> StateMachine {
        StateMachine::default()
    }

    fn at(state: State) -> Session {
        Session {
            state,
            ..Session::new("+15125551234")
        }
    }

    #[test]
    fn happy_path_reaches_booking() {
        let m = sm();
        let mut s = at(State::Welcome);
        let a = m.process(&mut s, "my AC is broken");
        assert_eq!(a.call_tool, Some(Tool::LookupCaller));
        m.apply_tool_result(&mut s, Tool::LookupCaller, &json!({"found": false}));
        assert_eq!(s.state, State::Safety);
        m.process(&mut s, "no nothing like that");
        assert_eq!(s.state, State::ServiceArea);
        m.process(&mut s, "78701");
        assert_eq!(s.state, State::Discovery);
        s.customer_name = "Jonas".into();
        s.problem_description = "AC not cooling".into();
        s.service_address = "4329 Franklin Street".into();
        m.process(&mut s, "that's it");
        assert_eq!(s.state, State::Urgency);
        m.process(&mut s, "today please");
        assert_eq!(s.state, State::PreConfirm);
        let a = m.process(&mut s, "yes");
        assert_eq!(s.state, State::Booking);
        assert_eq!(a.call_tool, Some(Tool::BookService));
        assert_eq!(a.speak, Some(Speak::FillerBookingCheck));
        m.apply_tool_result(&mut s, Tool::BookService, &json!({"booked": true}));
        assert_eq!(s.state, State::Confirm);
        assert!(m.process(&mut s, "thanks, bye").end_call);
    }

    #[test]
    fn turn_limit_escalates_from_terminal_states() {
        let m = sm();
        let mut s = at(State::Confirm);
        s.state_turn_count = 5;
        s.agent_has_responded = true;
        let a = m.process(&mut s, "what?");
        assert_eq!(s.state, State::Callback);
        assert_eq!(a.speak, Some(Speak::TurnLimitPerState));
        assert_eq!(s.state_turn_count, 0);
    }

    #[test]
    #[should_panic(expected = "illegal state transition")]
    fn illegal_transition_is_caught() {
        let mut s = at(State::Confirm);
        transition(&mut s, State::Welcome, Why::Rule);
    }

    #[test]
    fn the_zip_said_in_service_area_wins_over_the_one_on_file() {
        let m = sm();
        let mut s = at(State::ServiceArea);
        s.zip_code = "90210".into(); // from lookup
        m.process(&mut s, "we're at our other house, zip 78745");
        assert_eq!(s.zip_code, "78745");
        assert_eq!(s.state, State::Discovery);
    }

    #[test]
    fn a_later_zip_correction_replaces_the_zip() {
        let m = sm();
        let mut s = at(State::ServiceArea);
        m.process(&mut s, "78701");
        assert_eq!(s.state, State::Discovery);
        m.process(&mut s, "oh sorry, my zip is actually 78745");
        assert_eq!(s.zip_code, "78745");
        // A house number in discovery is no correction.
        m.process(&mut s, "it's 12345 Oak Hollow Drive");
        assert_eq!(s.zip_code, "78745");
    }

    #[test]
    fn a_correction_to_a_zip_outside_the_area_ends_in_a_callback() {
        let m = sm();
        let mut s = at(State::Urgency);
        s.zip_code = "78701".into();
        m.process(&mut s, "wait, I gave you the wrong zip, it's 90210");
        assert_eq!(s.zip_code, "90210");
        assert_eq!(s.state, State::Callback);
    }

    /// Issue 15, item 1: a hazard in the first sentence (or before the
    /// safety question) is a safety exit at once.
    #[test]
    fn danger_before_the_safety_question_exits_at_once() {
        let m = sm();
        for (state, said) in [
            (State::Welcome, "I smell gas in my kitchen"),
            (State::Welcome, "hi, there's smoke coming out of my furnace"),
            (State::Lookup, "the carbon monoxide alarm is going off"),
            (State::NonService, "also I smell gas right now"),
            (State::FollowUp, "it's sparking again"),
            (State::ManageBooking, "and now there's a burning smell"),
        ] {
            let mut s = at(state);
            let a = m.process(&mut s, said);
            assert_eq!(s.state, State::SafetyExit, "{state:?}: {said:?}");
            assert_eq!(a.call_tool, None, "no lookup in an emergency");
        }
        // Equipment talk and denials take the usual way.
        for said in [
            "my gas furnace stopped working",
            "my AC is broken, no gas smell or anything",
        ] {
            let mut s = at(State::Welcome);
            let a = m.process(&mut s, said);
            assert_eq!(s.state, State::Lookup, "{said:?}");
            assert_eq!(a.call_tool, Some(Tool::LookupCaller));
        }
    }

    /// Issue 15, item 2: timing words the urgency question missed move the
    /// call on (no loop), keeping what the caller said for the booking.
    #[test]
    fn urgency_understands_how_people_say_when() {
        let m = sm();
        for (said, tier, kept) in [
            ("next week", "routine", true),
            ("in a couple of days", "routine", true),
            ("it can wait a few days", "routine", true),
            ("this weekend", "routine", true),
            ("tomorrow at 2", "routine", true),
            ("Friday at 3pm", "routine", true),
            ("today at 3 if you can", "routine", true),
            ("it's urgent", "urgent", false),
            ("no hurry, anytime", "routine", false),
        ] {
            let mut s = at(State::Urgency);
            m.process(&mut s, said);
            assert_eq!(s.state, State::PreConfirm, "{said:?}");
            assert_eq!(s.urgency_tier, tier, "{said:?}");
            if kept {
                assert_eq!(s.preferred_time, said, "{said:?}");
            } else {
                assert_eq!(s.preferred_time, SOONEST_AVAILABLE, "{said:?}");
            }
        }
    }

    #[test]
    fn stale_tool_result_does_not_move_state() {
        let m = sm();
        let mut s = at(State::Discovery);
        m.apply_tool_result(&mut s, Tool::BookService, &json!({"booked": true}));
        assert_eq!(s.state, State::Discovery);
        m.apply_tool_result(&mut s, Tool::LookupCaller, &json!({"found": true}));
        assert_eq!(s.state, State::Discovery);
    }

    #[test]
    fn each_callback_promise_is_its_own() {
        // A billing caller got a callback, then turns out to be out of area:
        // the out-of-area promise needs a callback of its own.
        let m = sm();
        let mut s = at(State::ServiceArea);
        s.callback_created = true;
        s.callback_attempts = 1;
        m.process(&mut s, "my zip is 90210");
        assert_eq!(s.state, State::Callback);
        assert!(!s.callback_created);
        assert_eq!(s.callback_attempts, 0);
        // Escalation inside callback is not a new promise.
        s.callback_created = true;
        s.state_turn_count = 5;
        s.agent_has_responded = true;
        m.process(&mut s, "what?");
        assert!(s.callback_created);
    }

    #[test]
    fn manage_reschedule_waits_for_a_time() {
        let m = sm();
        let mut s = at(State::ManageBooking);
        s.has_appointment = true;
        let a = m.process(&mut s, "I need to reschedule");
        assert_eq!(a.call_tool, None);
        let a = m.process(&mut s, "Friday afternoon works");
        assert_eq!(a.call_tool, Some(Tool::ManageAppointment));
        assert_eq!(s.manage_action, "reschedule");
        assert_eq!(s.manage_time_hint, "Friday afternoon works");
    }
}
