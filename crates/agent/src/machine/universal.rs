//! What holds in every state, decided the same way wherever it is said:
//!
//! - a hazard reported now → `safety_exit` at once (D-22);
//! - slots the caller gives in any order are kept; a correction replaces
//!   the earlier value until the booking is made, and the read-back is said
//!   again (D-24);
//! - a goodbye → a polite close fitting the state;
//! - a request for a manager or a person → an escalation callback;
//! - "I'll call you" → no callback is created;
//! - no question is put a fourth time: the second time it is reworded, the
//!   third time the agent changes strategy (spell it, take the whole
//!   answer), and a fourth would-be ask moves on with a callback.

use super::{transition, Action, Why};
use crate::booking_time::TimeAsk;
use crate::extract::house_number_correction;
use crate::session::{Heard, Session};
use crate::state::State;
use crate::understand::{Asked, Hazard, Understanding};
use crate::validate::{extract_phone, validate_address, validate_name, zip_correction};

/// The acts of `u` the responder words its next line from.
pub(super) fn heard(u: &Understanding) -> Heard {
    Heard {
        question: u.question,
        repeat: u.repeat,
        changed: Vec::new(),
        goodbye: u.goodbye,
        wants_person: u.wants_person,
        no: u.no,
        unclear_time: false,
    }
}

/// D-22: a hazard reported now, in any state before the safety script,
/// moves the call to `safety_exit`. Before the safety question it goes the
/// legal way (→ lookup → safety → safety_exit; the lookup cannot matter
/// now); at the safety question the state's own rule judges it (D-3).
pub(super) fn hazard(s: &mut Session, u: &Understanding, text: &str) -> Option<Action> {
    if u.hazard != Hazard::Now || matches!(s.state, State::Safety | State::SafetyExit) {
        return None;
    }
    if s.problem_description.is_empty() {
        // The emergency's record says what the caller reported.
        s.problem_description = u
            .slots
            .problem
            .clone()
            .unwrap_or_else(|| text.trim().to_string());
    }
    match s.state {
        State::Welcome
        | State::Lookup
        | State::NonService
        | State::FollowUp
        | State::ManageBooking => {
            if s.state == State::Welcome {
                transition(s, State::Lookup, Why::Rule);
            }
            transition(s, State::Safety, Why::Rule);
            transition(s, State::SafetyExit, Why::Rule);
        }
        _ => {
            transition(s, State::SafetyExit, Why::Hazard);
        }
    }
    Some(Action::llm())
}

/// Normalised for comparing values the caller said twice.
fn same(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// Keep a value the caller gave: fill an empty field, or replace it when
/// `replace` (a correction) and it differs. Returns true on a replacement.
fn keep(field: &mut String, value: Option<&String>, replace: bool) -> bool {
    let Some(v) = value.filter(|v| !v.trim().is_empty()) else {
        return false;
    };
    if field.is_empty() {
        *field = v.clone();
        false
    } else if replace && !same(field, v) {
        *field = v.clone();
        true
    } else {
        false
    }
}

/// Slots said in any state until the booking is made (D-24).
pub(super) fn take_slots(s: &mut Session, u: &Understanding, asked: Asked, text: &str) {
    if matches!(s.state, State::Booking | State::Confirm) {
        return;
    }
    let read_back = s.state == State::PreConfirm;
    // A question changes nothing ("do you charge extra on weekends?" names
    // no new day); only a correction said as one does.
    let asking = u.question.is_some() && !u.correcting;
    let read_back_fix = read_back && !asking;
    let mut changed: Vec<String> = Vec::new();

    // Name: the third ask takes the whole answer ("spell it for me").
    let mut name = u.slots.name.clone().map(|n| validate_name(&n));
    let plain = !u.yes && !u.no && u.question.is_none() && u.slots.time.is_none();
    if name.as_deref().is_none_or(str::is_empty)
        && asked == Asked::Name
        && s.asked_times == 3
        && plain
    {
        // The third ask was "could you spell it?": take the answer whole.
        name = Some(validate_name(&spelled(text)));
    }
    let name = name.filter(|n| !n.is_empty());
    if keep(
        &mut s.customer_name,
        name.as_ref(),
        !asking && (u.correcting || read_back || asked == Asked::Name),
    ) {
        changed.push("name".into());
    }

    // Address, or only its house number re-said ("5120, not 5210").
    let mut address = u.slots.address.clone().map(|a| validate_address(&a));
    if address.as_deref().is_none_or(str::is_empty)
        && asked == Asked::Address
        && s.asked_times == 3
        && plain
        && text.bytes().any(|b| b.is_ascii_digit())
    {
        address = Some(validate_address(text.trim()));
    }
    let address = address.filter(|a| !a.is_empty());
    if keep(
        &mut s.service_address,
        address.as_ref(),
        !asking && (u.correcting || read_back || asked == Asked::Address),
    ) {
        changed.push("address".into());
    } else if address.is_none()
        && (u.correcting || read_back_fix)
        && u.slots.time.is_none()
        && !s.service_address.is_empty()
    {
        if let Some(fixed) = house_number_correction(text, &s.service_address) {
            if !same(&fixed, &s.service_address) {
                s.service_address = fixed;
                changed.push("address".into());
            }
        }
    }

    // A new system is a problem too ("we're thinking about replacing our
    // old furnace"), so the high-ticket rule sees it.
    if s.problem_description.is_empty()
        && u.slots.problem.is_none()
        && crate::understand::wants_new_system(text)
        && !matches!(s.state, State::NonService)
    {
        s.problem_description = text.trim().to_string();
    }

    // Problem: kept when first said; replaced only by a correction.
    if (s.state != State::Welcome || s.problem_description.is_empty())
        && keep(
            &mut s.problem_description,
            u.slots.problem.as_ref(),
            u.correcting && !asking,
        )
    {
        changed.push("problem".into());
    }

    // ZIP: owned by the service-area step; volunteered before it, kept;
    // corrected after it, replaced.
    let after_area = !matches!(
        s.state,
        State::Welcome
            | State::Lookup
            | State::Safety
            | State::ServiceArea
            | State::NonService
            | State::FollowUp
            | State::ManageBooking
    );
    if after_area {
        let corrected = zip_correction(text, &s.zip_code).or_else(|| {
            u.slots
                .zip
                .clone()
                .filter(|z| (u.correcting || read_back_fix) && !same(z, &s.zip_code))
        });
        if let Some(zip) = corrected {
            if !same(&zip, &s.zip_code) {
                s.zip_code = zip;
                changed.push("zip".into());
            }
        }
    } else if s.state != State::ServiceArea && s.zip_code.is_empty() {
        if let Some(zip) = &u.slots.zip {
            s.zip_code = zip.clone();
            s.zip_said = true;
        }
    }

    // When the caller wants the visit, said before the agent asks: kept,
    // so "how soon?" is not asked again.
    let before_urgency = matches!(
        s.state,
        State::Welcome | State::Lookup | State::Safety | State::ServiceArea | State::Discovery
    );
    if before_urgency && s.preferred_time.is_empty() && !asking {
        match u.slots.time {
            Some(TimeAsk::Asap) => {
                s.urgency_tier = "urgent".into();
                s.preferred_time = super::SOONEST_AVAILABLE.into();
                s.time_said = true;
            }
            Some(TimeAsk::When) | Some(TimeAsk::NoRush) => {
                s.urgency_tier = "routine".into();
                s.preferred_time = text.trim().to_string();
                s.time_said = true;
            }
            _ => {}
        }
    }

    // A new day or time at the read-back (a yes with a time is a yes).
    if read_back_fix {
        match u.slots.time {
            Some(TimeAsk::Unclear) => s.heard.unclear_time = true,
            // A new time with only a soft yes ("today would be great") is
            // a change; "yes, Tuesday works" confirms.
            Some(ask) if !u.firm_yes || u.correcting || u.no => {
                let (tier, words) = match ask {
                    TimeAsk::Asap => ("urgent", super::SOONEST_AVAILABLE.to_string()),
                    _ => ("routine", text.trim().to_string()),
                };
                if !same(&words, &s.preferred_time) {
                    s.urgency_tier = tier.into();
                    s.preferred_time = words;
                    changed.push("time".into());
                }
            }
            _ => {}
        }
    }
    s.heard.changed = changed;
}

/// A spelled answer ("D E V  R A M A N", "dev, d-e-v") as words.
fn spelled(text: &str) -> String {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = String::new();
    let mut letters = String::new();
    for w in words {
        let bare = w.trim_matches(|c: char| !c.is_alphanumeric());
        let single = bare.chars().count() == 1 || bare.split('-').all(|p| p.chars().count() == 1);
        if single && !bare.is_empty() {
            letters.extend(bare.chars().filter(|c| c.is_alphabetic()));
            continue;
        }
        if !letters.is_empty() {
            out.push_str(&letters);
            out.push(' ');
            letters.clear();
        }
        out.push_str(bare);
        out.push(' ');
    }
    out.push_str(&letters);
    let spelled_letters = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == '-')
        .filter(|w| w.trim_matches(|c: char| !c.is_alphabetic()).chars().count() == 1)
        .count();
    if spelled_letters < 3 {
        // Not spelled out: nothing to take whole.
        return String::new();
    }
    out.trim().to_string()
}

/// A goodbye, a request for a person, a callback turned down: the same in
/// every state before a terminal one.
pub(super) fn acts(s: &mut Session, u: &Understanding) -> Option<Action> {
    if u.declines_callback {
        s.callback_declined = true;
    }
    let open = !s.state.is_terminal() && !matches!(s.state, State::SafetyExit | State::Booking);
    // A hazard always wins (D-22; at the safety question its own rule).
    if !open || u.hazard == Hazard::Now {
        return None;
    }
    if u.declines_callback && !u.yes && u.slots.time.is_none() && u.slots.problem.is_none() {
        // "Don't call, I'll call you back": the caller is leaving.
        s.heard.goodbye = true;
    }
    // A call back asked for in a state with no rule of its own for it.
    let handles_callback = matches!(
        s.state,
        State::NonService | State::FollowUp | State::Urgency | State::PreConfirm
    );
    if u.wants_callback && !handles_callback && s.state != State::Welcome {
        s.callback_reason = "Caller asked to be called back".into();
        s.callback_declined = false;
        escalate(s);
        return Some(Action::llm());
    }
    if u.wants_person {
        s.callback_reason = "Caller asked to speak with a manager".into();
        s.callback_declined = false;
        escalate(s);
        return Some(Action::llm());
    }
    None
}

/// A goodbye said in a state before a terminal one closes the call
/// politely after the state's own rule has run ("no, bye" at the safety
/// question is still a no). A tool the rule started runs first.
pub(super) fn goodbye(s: &Session, u: &Understanding, open_before: bool, action: Action) -> Action {
    let yes_at_read_back = u.firm_yes && matches!(s.state, State::PreConfirm | State::Booking);
    if !(u.goodbye || s.heard.goodbye)
        || !open_before
        || yes_at_read_back
        || action.call_tool.is_some()
    {
        return action;
    }
    Action {
        end_call: true,
        needs_llm: true,
        ..action
    }
}

/// To `callback`: by the table where it allows it, else as an escalation.
fn escalate(s: &mut Session) {
    let why = if s.state.can_move_to(State::Callback) {
        Why::Rule
    } else {
        Why::Escalate
    };
    transition(s, State::Callback, why);
}

/// Count how many times the pending question is put. A question the
/// agent would put a fourth time is not put: the call moves on with a
/// callback (never for the safety question, which must not be skipped: it
/// has gentler fourth and fifth lines). A read-back the caller neither
/// confirms nor corrects into a yes after three tries (corrections count:
/// each says it again) ends in a callback to confirm the details.
pub(super) fn count_ask(s: &mut Session, before: Asked, exchange: bool, action: Action) -> Action {
    let now = Asked::of(s);
    if now != before || now != s.asked {
        s.asked = now;
        s.asked_times = 1;
        return action;
    }
    if exchange || s.asked_times == 0 {
        s.asked_times += 1;
    }
    let movable = matches!(
        now,
        Asked::Name
            | Asked::Problem
            | Asked::Address
            | Asked::Zip
            | Asked::Time
            | Asked::NewTime
            | Asked::ReadBack
    );
    if s.asked_times > 3 && movable && !s.state.is_terminal() && !action.end_call {
        s.callback_reason = if now == Asked::ReadBack {
            "Could not confirm the booking details by phone".to_string()
        } else {
            format!("Could not take the caller's {} by phone", now.as_str())
        };
        escalate(s);
        s.asked = Asked::of(s);
        s.asked_times = 1;
        return Action::llm();
    }
    action
}

/// In a state that promised a callback: "call my cell 512 555 0199" makes
/// the promise go to that number; a callback already made for the caller
/// id gets a new one for it.
pub(super) fn take_callback_number(s: &mut Session, text: &str) {
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
