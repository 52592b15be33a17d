//! Each state's own rule (SPEC §2 with DECISIONS D-3 … D-25), given the
//! utterance's [`Understanding`]. What holds in every state — hazards,
//! corrections, goodbyes, a request for a person — was handled before
//! these run (see [`super::universal`]).

use super::{transition, Action, Speak, Why, MORE_ROUTINE_SIGNALS, MORE_URGENT_SIGNALS};
use super::{State, Tool, SOONEST_AVAILABLE};
use crate::booking_time::TimeAsk;
use crate::keywords::{
    match_any, MANAGE_BOOKING_KEYWORDS, NEW_ISSUE_SIGNALS, ROUTINE_SIGNALS, SCHEDULE_SIGNALS,
    SERVICE_KEYWORDS, TIME_PATTERNS, URGENT_SIGNALS, YES_SIGNALS,
};
use crate::profile::BusinessProfile;
use crate::questions::Question;
use crate::session::Session;
use crate::understand::{Errand, Understanding};
use crate::validate::{
    classify_intent, extract_zip, is_bare_no, is_service_area, is_wrap_up, manage_request,
    names_a_time, non_service_callback_type, safety_answer, validate_address, validate_name,
    validate_zip, Intent, ManageRequest, SafetyAnswer, MISSED_CALLBACK_PHRASES,
};

pub(super) fn welcome(s: &mut Session, u: &Understanding, text: &str) -> Action {
    let question = match u.question {
        Some(crate::understand::Asking::Known(q)) => Some(q),
        _ => None,
    };
    if question.is_some() && !match_any(text, SERVICE_KEYWORDS) && u.slots.problem.is_none() {
        // "How much is a visit?", "are you a robot?": answered, and the
        // call is still at its start — not a billing call, not a lookup.
        return Action::llm();
    }
    let mut intent = classify_intent(text);
    if question == Some(Question::Price) && intent == Intent::NonService {
        // "How much do you charge to fix my AC?" is a service caller.
        intent = Intent::Service;
    }
    if intent == Intent::Service && (u.missed_callback || match_any(text, MISSED_CALLBACK_PHRASES))
    {
        // "Nobody called me back": a follow-up, not a new service call.
        intent = Intent::FollowUp;
    }
    // Appointment talk in natural words ("can we push Thursday's visit to
    // Monday", "what time is my tech coming?").
    let appointment = u.appointment.or_else(|| {
        (intent == Intent::ManageBooking)
            .then(|| manage_request(text))
            .flatten()
    });
    // An explicit request about an appointment wins over a "problem" in
    // the same words ("Wednesday doesn't work anymore, can we move it?").
    if intent == Intent::Service
        && (appointment.is_some() || (u.has_appointment && u.slots.problem.is_none()))
    {
        intent = Intent::ManageBooking;
    }
    if u.errand == Errand::Billing && u.slots.problem.is_none() && appointment.is_none() {
        intent = Intent::NonService;
        if s.callback_type == "service" || s.callback_type.is_empty() {
            s.callback_type = "billing".into();
        }
    } else if u.errand != Errand::None && u.slots.problem.is_none() {
        intent = Intent::NonService;
    }
    s.caller_intent = intent.as_str().to_string();
    if intent == Intent::ManageBooking {
        // Remembered, so the lookup goes straight to it and a time said
        // now is the new time.
        match appointment {
            Some(ManageRequest::Reschedule) => {
                s.manage_action = "reschedule".into();
                if reschedule_time(u, text) {
                    s.manage_time_hint = text.trim().to_string();
                }
            }
            Some(ManageRequest::Cancel) => s.manage_action = "cancel".into(),
            Some(ManageRequest::Status) => s.manage_action = "status".into(),
            None => {}
        }
    }
    if intent == Intent::NonService {
        if let Some(kind) = non_service_callback_type(text) {
            s.callback_type = kind.to_string();
        }
        s.errand = if u.errand == Errand::Billing {
            Errand::None
        } else {
            u.errand
        };
        transition(s, State::NonService, Why::Rule);
        if matches!(u.errand, Errand::Sales | Errand::WrongNumber) || u.declines_callback {
            // A pitch, a wrong number, "I'll call you": a polite line and
            // goodbye.
            return Action::end();
        }
        return Action::llm();
    }
    transition(s, State::Lookup, Why::Rule);
    Action::tool(Tool::LookupCaller, false)
}

/// D-7: a caller who asks to be called back gets one callback.
fn wants_callback(s: &Session, u: &Understanding) -> bool {
    u.wants_callback && !s.callback_created && !s.callback_declined
}

pub(super) fn non_service(s: &mut Session, u: &Understanding, text: &str) -> Action {
    if wants_callback(s, u) {
        return Action::tool(Tool::CreateCallback, true);
    }
    if s.errand == Errand::None && u.errand != Errand::None {
        s.errand = u.errand;
    }
    if u.declines_callback || matches!(s.errand, Errand::WrongNumber | Errand::Sales) {
        return Action::end();
    }
    if s.errand != Errand::None && (u.no || is_wrap_up(text)) {
        return Action::end();
    }
    if s.errand == Errand::Job {
        // An applicant leaves a name and a number for the office.
        if let Some(phone) = &u.slots.phone {
            s.callback_phone = phone.clone();
        }
        return Action::llm();
    }
    if match_any(text, SCHEDULE_SIGNALS) || u.slots.problem.is_some() {
        transition(s, State::Safety, Why::Rule);
    }
    Action::llm()
}

pub(super) fn follow_up(s: &mut Session, u: &Understanding, text: &str) -> Action {
    if wants_callback(s, u) {
        return Action::tool(Tool::CreateCallback, true);
    }
    if match_any(text, NEW_ISSUE_SIGNALS)
        || match_any(text, SCHEDULE_SIGNALS)
        || u.slots.problem.is_some()
    {
        transition(s, State::Safety, Why::Rule);
        return Action::llm();
    }
    if u.no || u.declines_callback || is_wrap_up(text) {
        // Nothing new: the call back they are owed is put on record (a
        // follow-up callback, D-21's callback_later), then a polite close.
        if !s.callback_created && !s.callback_declined && s.callback_attempts < 2 {
            return Action {
                end_call: true,
                ..Action::tool(Tool::CreateCallback, true)
            };
        }
        return Action::end();
    }
    Action::llm()
}

/// A time usable as the new time of a reschedule.
fn reschedule_time(u: &Understanding, text: &str) -> bool {
    match u.slots.time {
        Some(TimeAsk::Unclear) => false,
        Some(_) => true,
        None => names_a_time(text),
    }
}

/// D-8: cancel, reschedule (once a new time is named) and status requests
/// call `manage_appointment`; the result moves to confirm or callback.
pub(super) fn manage_booking(s: &mut Session, u: &Understanding, text: &str) -> Action {
    if match_any(text, NEW_ISSUE_SIGNALS) {
        transition(s, State::Safety, Why::Rule);
        return Action::llm();
    }
    let request = u.appointment.or_else(|| manage_request(text));
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
            let timed = reschedule_time(u, text);
            let asks_reschedule = request == Some(ManageRequest::Reschedule)
                || (request.is_none() && s.has_appointment && timed);
            if asks_reschedule || pending_reschedule {
                s.manage_action = "reschedule".into();
                if timed {
                    s.manage_time_hint = text.trim().to_string();
                    return Action::tool(Tool::ManageAppointment, true);
                }
            }
            Action::llm()
        }
    }
}

pub(super) fn safety(s: &mut Session, text: &str, profile: &BusinessProfile) -> Action {
    match safety_answer(text) {
        SafetyAnswer::Emergency => {
            transition(s, State::SafetyExit, Why::Rule);
        }
        SafetyAnswer::ClearNo => {
            transition(s, State::ServiceArea, Why::Rule);
            if s.zip_said {
                // The caller gave the ZIP already: not asked again.
                return service_area(s, "", profile);
            }
        }
        SafetyAnswer::Unclear => {}
    }
    Action::llm()
}

pub(super) fn service_area(s: &mut Session, text: &str, profile: &BusinessProfile) -> Action {
    // What the caller says now wins over a ZIP on file (a returning caller
    // calling about another house).
    let said = validate_zip(&extract_zip(text));
    if !said.is_empty() {
        s.zip_code = said;
    }
    if !s.zip_code.is_empty() {
        let next = if is_service_area(&s.zip_code, profile) {
            State::Discovery
        } else {
            State::Callback
        };
        transition(s, next, Why::Rule);
    }
    Action::llm()
}

pub(super) fn discovery(s: &mut Session) -> Action {
    s.customer_name = validate_name(&s.customer_name);
    s.service_address = validate_address(&s.service_address);
    if !s.customer_name.is_empty()
        && !s.problem_description.is_empty()
        && !s.service_address.is_empty()
    {
        if crate::understand::wants_new_system(&s.problem_description) {
            s.lead_type = "high_ticket".into();
            // D-6: a new-system lead is owed an estimate call.
            s.callback_type = "estimate".into();
        }
        transition(s, State::Urgency, Why::Rule);
        if s.time_said && !s.preferred_time.is_empty() && !s.is_high_ticket() {
            // The caller already said when: no need to ask how soon.
            transition(s, State::PreConfirm, Why::Rule);
        }
    }
    Action::llm()
}

/// Keep the caller's words about when, for the resolver (D-14, D-25).
fn wants_time(s: &mut Session, tier: &str, preferred: &str) {
    s.urgency_tier = tier.into();
    s.preferred_time = preferred.to_string();
    transition(s, State::PreConfirm, Why::Rule);
}

pub(super) fn urgency(s: &mut Session, u: &Understanding, text: &str) -> Action {
    if matches!(u.question, Some(crate::understand::Asking::Known(_))) {
        // "Are you open on Sunday?" asks about the business; it names no
        // wish (answered, then "how soon?" again).
        return Action::llm();
    }
    if (u.wants_callback && !s.callback_declined) || s.is_high_ticket() {
        transition(s, State::UrgencyCallback, Why::Rule);
    } else if s.has_appointment && match_any(text, MANAGE_BOOKING_KEYWORDS) {
        transition(s, State::Callback, Why::Rule);
    } else if u.slots.time.is_none()
        && (match_any(text, URGENT_SIGNALS) || match_any(text, MORE_URGENT_SIGNALS))
    {
        wants_time(s, "urgent", SOONEST_AVAILABLE);
    } else {
        // The time classifier first: it knows "not urgent" from "urgent".
        match u.slots.time {
            Some(TimeAsk::Asap) => wants_time(s, "urgent", SOONEST_AVAILABLE),
            // D-25: routine, never today — the resolver reads the words.
            Some(TimeAsk::NoRush) | Some(TimeAsk::When) => wants_time(s, "routine", text.trim()),
            Some(TimeAsk::Unclear) => {
                // One short clarifying question (the responder asks it).
                s.heard.unclear_time = true;
            }
            None if match_any(text, ROUTINE_SIGNALS) || match_any(text, MORE_ROUTINE_SIGNALS) => {
                wants_time(s, "routine", text.trim());
            }
            // (A day or clock time is always `When`: `said::day` and
            // `said::clock` find nothing the classifier did not.)
            None if match_any(text, TIME_PATTERNS) => {
                wants_time(s, "routine", text.trim());
            }
            None => {}
        }
    }
    Action::llm()
}

/// D-5: a high-ticket lead gets one sales alert, then one callback; after
/// that the call wraps up.
pub(super) fn urgency_callback(s: &mut Session) -> Action {
    if s.is_high_ticket() && !s.lead_alert_sent {
        Action::tool(Tool::SendSalesLeadAlert, true)
    } else if !s.callback_created && s.callback_attempts < 2 && !s.callback_declined {
        Action::tool(Tool::CreateCallback, true)
    } else {
        Action::end()
    }
}

/// The read-back (D-24): a yes — warm ones too — books; a question, a
/// correction or a no does not (the read-back is said again, or the caller
/// is asked what to change).
pub(super) fn pre_confirm(s: &mut Session, u: &Understanding, text: &str) -> Action {
    if u.wants_callback && !s.callback_declined {
        transition(s, State::Callback, Why::Rule);
        return Action::llm();
    }
    let corrected = !s.heard.changed.is_empty();
    let yes = u.yes || match_any(text, YES_SIGNALS);
    if yes && !corrected && !u.no && u.question.is_none() && !s.heard.unclear_time {
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

pub(super) fn booking(s: &mut Session) -> Action {
    if s.booking_attempted {
        return Action::silent();
    }
    s.booking_attempted = true;
    Action::tool(Tool::BookService, false)
}

/// `callback` and `booking_failed`: create the callback (two attempts at
/// most), then end the call.
pub(super) fn callback_like(s: &mut Session, u: &Understanding, text: &str) -> Action {
    if s.state == State::Callback
        && s.callback_created
        && s.callback_phone.is_empty()
        && is_bare_no(text)
    {
        // "Is this the best number?" — "no": stay to hear the right one.
        return Action::llm();
    }
    if u.declines_callback {
        s.callback_declined = true;
    }
    if s.callback_created || s.callback_attempts >= 2 || s.callback_declined {
        Action::end()
    } else {
        Action::tool(Tool::CreateCallback, true)
    }
}
