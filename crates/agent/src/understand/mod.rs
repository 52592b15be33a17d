//! One understanding of every caller utterance.
//!
//! [`understand`] reads an utterance once and says what the caller *did*:
//! answered, corrected a field, confirmed, denied, asked a question, said
//! goodbye, asked for a person, turned a callback down, reported a hazard,
//! asked to hear something again — and which slots they gave (name, phone,
//! address, ZIP, problem, time, appointment talk), in any order and in any
//! state. The state machine consumes the result; the acts that mean the same
//! everywhere are handled the same way in every state (see
//! [`crate::machine`]), so a correction, a goodbye or a hazard is never read
//! one way at the address question and another at the read-back.
//!
//! Pure and synchronous: no I/O, no clock, no allocation beyond the slot
//! strings. With an LLM configured, the model's background extraction is
//! merged into the session later, but the acts are decided here, so both
//! modes behave alike.
//!
//! The one piece of context is [`Asked`]: what the agent's pending question
//! is. It lets a bare answer count ("Dev Raman" after "what's your name?")
//! without making every capitalised word a name.

mod acts;
mod lexicon;
mod slots;

pub use acts::Errand;

use crate::booking_time::TimeAsk;
use crate::keywords::LowerText;
use crate::safety::{triage, SafetyAnswer};
use crate::session::Session;
use crate::state::State;
use crate::validate::ManageRequest;
use serde::{Deserialize, Serialize};

/// The question the agent is waiting on when the caller speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Asked {
    /// Nothing in particular (greeting, wrap-up).
    #[default]
    Nothing,
    /// The gas/smoke question.
    Safety,
    /// The ZIP code.
    Zip,
    /// The caller's name.
    Name,
    /// What is going on with the system.
    Problem,
    /// The service address.
    Address,
    /// How soon / when.
    Time,
    /// The read-back: "Shall I go ahead and book that?"
    ReadBack,
    /// Cancel, reschedule or check on an appointment.
    Appointment,
    /// The new day for a reschedule.
    NewTime,
}

impl Asked {
    /// The pending question of `s`: derived from the state and the fields
    /// still missing, in the order the agent asks them.
    pub fn of(s: &Session) -> Asked {
        Asked::at(s.state, s)
    }

    /// [`Asked::of`] in `state` (a responder's request names its state).
    pub fn at(state: State, s: &Session) -> Asked {
        match state {
            State::Safety => Asked::Safety,
            State::ServiceArea => Asked::Zip,
            State::Discovery => {
                if s.customer_name.is_empty() {
                    Asked::Name
                } else if s.problem_description.is_empty() {
                    Asked::Problem
                } else if s.service_address.is_empty() {
                    Asked::Address
                } else {
                    Asked::Nothing
                }
            }
            State::Urgency => Asked::Time,
            State::NonService if s.errand == Errand::Job && s.customer_name.is_empty() => {
                Asked::Name
            }
            State::PreConfirm => Asked::ReadBack,
            State::ManageBooking => {
                if s.manage_action == "reschedule" {
                    Asked::NewTime
                } else {
                    Asked::Appointment
                }
            }
            _ => Asked::Nothing,
        }
    }

    /// A stable name (logs, the session's `asked` counter).
    pub fn as_str(self) -> &'static str {
        match self {
            Asked::Nothing => "nothing",
            Asked::Safety => "safety",
            Asked::Zip => "zip",
            Asked::Name => "name",
            Asked::Problem => "problem",
            Asked::Address => "address",
            Asked::Time => "time",
            Asked::ReadBack => "read_back",
            Asked::Appointment => "appointment",
            Asked::NewTime => "new_time",
        }
    }
}

/// How a hazard was reported (DECISIONS D-3, D-22).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hazard {
    /// No hazard words.
    #[default]
    None,
    /// Reported as present — now, earlier or "maybe": the caller must leave.
    Now,
    /// Only negated or retracted ("no gas smell, nothing like that").
    Denied,
    /// Hazard words that are not a report: equipment ("gas furnace"), a
    /// question ("gas?").
    Unclear,
}

/// What the caller asked, when they asked something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Asking {
    /// One of the profile's known questions (price, robot, brands, hours).
    Known(crate::questions::Question),
    /// Anything else ("is that covered by the warranty?").
    Other,
}

/// Everything one utterance says, decided once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Understanding {
    pub hazard: Hazard,
    /// A yes ("perfect", "that works", "yep that's it").
    pub yes: bool,
    /// A yes that is more than politeness ("yes", "book it"; not "ok,
    /// thanks, bye").
    pub firm_yes: bool,
    /// Mentions an appointment the caller has.
    pub has_appointment: bool,
    /// A no ("nope", "that's wrong"); "no problem" is not one.
    pub no: bool,
    /// Correction words ("actually", "no wait", "make that", "not …").
    pub correcting: bool,
    /// A question, and which.
    pub question: Option<Asking>,
    /// A goodbye that ends the call wherever it is said.
    pub goodbye: bool,
    /// Asks for a manager / a person.
    pub wants_person: bool,
    /// Asks to be called back (and did not turn one down).
    pub wants_callback: bool,
    /// Turns a callback down ("I'll call you").
    pub declines_callback: bool,
    /// Asks to hear the last line again.
    pub repeat: bool,
    /// Cancel / reschedule / status talk about an appointment.
    pub appointment: Option<ManageRequest>,
    /// A caller with another errand than service.
    pub errand: Errand,
    /// A caller still waiting for a promised call back.
    pub missed_callback: bool,
    /// The slots said in this utterance.
    pub slots: Slots,
}

/// Values the caller gave in this utterance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Slots {
    pub name: Option<String>,
    pub phone: Option<String>,
    pub address: Option<String>,
    pub zip: Option<String>,
    pub problem: Option<String>,
    /// What they said about when, and the words.
    pub time: Option<TimeAsk>,
}

impl Understanding {
    /// Only a question: nothing else worth acting on was said.
    pub fn only_asks(&self) -> bool {
        self.question.is_some()
            && !self.yes
            && !self.no
            && self.hazard != Hazard::Now
            && self.slots == Slots::default()
    }
}

/// A new system wished for in more words than the reference's high-ticket
/// list ("replacing our old furnace", "upgrading to a heat pump"); repair
/// words still cancel it, as in [`crate::validate::detect_high_ticket`].
pub fn wants_new_system(text: &str) -> bool {
    const MORE: &[&str] = &[
        "replacing",
        "upgrading",
        "upgraded",
        "a new one",
        "new heat pump",
        "new air conditioner",
        "new hvac",
        "install a new",
        "put in a new",
        "more efficient system",
    ];
    let t = LowerText::new(text);
    crate::validate::detect_high_ticket(text)
        || (t.matches_any(MORE) && !t.matches_any(crate::keywords::HIGH_TICKET_NEGATIVE))
}

/// Read `text` once, with `asked` the agent's pending question.
pub fn understand(text: &str, asked: Asked) -> Understanding {
    let lower = crate::keywords::lowercase(text);
    let straight;
    let lower: &str = if lower.contains('\u{2019}') {
        straight = lower.replace('\u{2019}', "'");
        &straight
    } else {
        &lower
    };
    let t = acts::Said::new(lower);
    let hazard = if crate::safety::may_mention_hazard(text) {
        let tri = triage(text);
        match tri.answer {
            SafetyAnswer::Emergency => Hazard::Now,
            SafetyAnswer::ClearNo if !tri.mentions.is_empty() => Hazard::Denied,
            _ if !tri.mentions.is_empty() => Hazard::Unclear,
            _ => Hazard::None,
        }
    } else {
        Hazard::None
    };
    let declines_callback = acts::declines_callback(&t);
    let is_question = acts::question(&t);
    let repeat = acts::repeat(&t);
    // "Sorry, what?" asks to hear it again; it is no question to answer.
    let question = if is_question && !repeat {
        Some(
            crate::questions::off_script_question(text)
                .map(Asking::Known)
                .unwrap_or(Asking::Other),
        )
    } else {
        None
    };
    let marker = acts::correction_marker(&t);
    let (slots, cued) = slots::read(text, asked, marker);
    let correcting = marker || cued;
    let about_appointment = matches!(asked, Asked::Appointment | Asked::NewTime);
    let appointment = acts::manage(&t, about_appointment).or_else(|| {
        // "Something came up, can we do Thursday instead of Wednesday?"
        (acts::move_to(&t) && matches!(slots.time, Some(TimeAsk::When)))
            .then_some(ManageRequest::Reschedule)
    });
    // "Can we push Wednesday's visit to Friday?" is a request, not a
    // question to answer: only the profile's known questions survive a
    // request or a slot said in the same breath.
    let question = match question {
        Some(Asking::Other)
            if appointment.is_some() || slots != Slots::default() || hazard == Hazard::Now =>
        {
            None
        }
        // "Can a person call me back?" asks for a call, not about robots.
        Some(Asking::Known(crate::questions::Question::Robot))
            if declines_callback || crate::validate::detect_callback_request(text) =>
        {
            None
        }
        q => q,
    };
    Understanding {
        hazard,
        yes: acts::yes(&t),
        firm_yes: acts::firm_yes(&t),
        has_appointment: acts::has_appointment(&t),
        no: acts::no(&t),
        correcting,
        question,
        goodbye: acts::goodbye(&t),
        // "Is the owner in? I'm selling SEO" is a pitch, not an escalation.
        wants_person: acts::wants_person(&t) && acts::errand(&t) != Errand::Sales,
        wants_callback: (crate::validate::detect_callback_request(text) || acts::call_me(&t))
            && !declines_callback,
        declines_callback,
        repeat,
        appointment,
        errand: acts::errand(&t),
        missed_callback: acts::missed_callback(&t),
        slots,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hazard_said_at_the_address_question() {
        let u = understand(
            "oh, and now that I think of it there's a smell like melting plastic",
            Asked::Address,
        );
        assert_eq!(u.hazard, Hazard::Now);
        let u = understand("no gas smell, nothing like that", Asked::Address);
        assert_ne!(u.hazard, Hazard::Now);
    }

    #[test]
    fn a_question_at_the_read_back_is_not_a_yes() {
        let u = understand("is that covered by the warranty?", Asked::ReadBack);
        assert!(u.question.is_some());
        assert!(!u.yes);
        assert!(u.only_asks());
    }

    #[test]
    fn declining_a_callback_is_not_asking_for_one() {
        let u = understand("I don't need a callback, I'll call you", Asked::Nothing);
        assert!(u.declines_callback);
        assert!(!u.wants_callback);
        let u = understand("just have someone call me back", Asked::Nothing);
        assert!(u.wants_callback);
    }
}

#[cfg(test)]
mod timing {
    /// Rough timing of [`super::understand`] (the real budget is checked
    /// by `cargo bench -p calllock --bench engine`): `cargo test -p agent
    /// --release --lib understand::timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn understand_timing() {
        let lines = [
            "hi, my AC stopped cooling last night and it's getting really hot",
            "no, nothing like that",
            "78745",
            "ha, okay, it's Dev Raman",
            "it's 10400 Research Blvd, the blue house",
            "no wait, it's 5120, not 5210",
            "the day after tomorrow around one",
            "perfect, that works",
            "is that covered by the warranty?",
            "oh and there's a smell like burning plastic near the vents",
            "can we push Wednesday's visit to Friday?",
            "I gotta run, bye",
        ];
        let mut all = Vec::new();
        for _ in 0..2000 {
            for l in &lines {
                let t = std::time::Instant::now();
                std::hint::black_box(super::understand(l, super::Asked::Address));
                all.push(t.elapsed().as_nanos() as f64 / 1000.0);
            }
        }
        all.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let p = |q: f64| all[((all.len() as f64 - 1.0) * q) as usize];
        eprintln!(
            "understand: p50 {:.2} µs, p99 {:.2} µs, max {:.2} µs",
            p(0.5),
            p(0.99),
            p(1.0)
        );
        type Part = (&'static str, fn(&str));
        let parts: [Part; 10] = [
            ("triage", |l| {
                std::hint::black_box(crate::safety::triage(l));
            }),
            ("acts", |l| {
                let lower = l.to_lowercase();
                let t = super::acts::Said::new(&lower);
                std::hint::black_box((
                    super::acts::yes(&t),
                    super::acts::no(&t),
                    super::acts::correction_marker(&t),
                    super::acts::goodbye(&t),
                    super::acts::wants_person(&t),
                    super::acts::declines_callback(&t),
                    super::acts::repeat(&t),
                    super::acts::question(&t),
                    super::acts::manage(&t, false),
                    super::acts::errand(&t),
                    super::acts::missed_callback(&t),
                    super::acts::call_me(&t),
                    super::acts::firm_yes(&t),
                    super::acts::has_appointment(&t),
                    super::acts::move_to(&t),
                ));
            }),
            ("name_in", |l| {
                std::hint::black_box(crate::extract::name_in(l, false));
            }),
            ("address_in", |l| {
                std::hint::black_box(crate::extract::address_in(l, true));
            }),
            ("problem_in", |l| {
                std::hint::black_box(crate::extract::problem_in(l, false));
            }),
            ("zip_in", |l| {
                std::hint::black_box(crate::validate::zip_in(l));
            }),
            ("time_ask", |l| {
                std::hint::black_box(crate::booking_time::time_ask(l));
            }),
            ("phone", |l| {
                std::hint::black_box(crate::validate::extract_phone(l));
            }),
            ("question", |l| {
                std::hint::black_box(crate::questions::off_script_question(l));
            }),
            ("callback", |l| {
                std::hint::black_box(crate::validate::detect_callback_request(l));
            }),
        ];
        for (name, f) in parts {
            let t = std::time::Instant::now();
            for _ in 0..500 {
                for l in &lines {
                    f(l);
                }
            }
            eprintln!(
                "  {name}: {:.2} µs per line",
                t.elapsed().as_nanos() as f64 / 1000.0 / (500.0 * lines.len() as f64)
            );
        }
    }
}
