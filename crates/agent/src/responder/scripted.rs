//! The offline [`ScriptedResponder`]: deterministic lines for every state,
//! worded from what the state machine understood of the caller
//! ([`crate::session::Session::heard`]).

use super::{
    stream_from_text, ChatRole, ExtractionRequest, ReplyStream, Responder, ResponderError,
    ScopedRequest, TurnRequest,
};
use crate::extract::{heuristic_extract, ExtractedFields};
use crate::profile::BusinessProfile;
use crate::prompts::terminal_script;
use crate::questions::answer;
use crate::session::{HistoryMessage, Session};
use crate::state::State;
use crate::understand::{Asked, Errand};
use crate::wording;

/// Deterministic, offline responder: state-aware lines filled with what the
/// call knows, one question at a time. Nothing random; the same request
/// always gets the same words.
#[derive(Debug, Clone, Default)]
pub struct ScriptedResponder {
    profile: BusinessProfile,
}

use wording::SAFETY_QUESTION;
const ZIP_QUESTION: &str = "What's the ZIP code where you need service?";
const URGENCY_QUESTION: &str = "How soon do you need someone — today, or is later this week okay?";
const DISCOVERY_DONE: &str = "Is there anything else about the problem the technician should know?";
#[cfg(test)]
const SAFETY_REASK: &str = "Sorry, just to be sure — do you smell gas or something burning, \
or see any smoke in the house right now?";
#[cfg(test)]
const ZIP_REASK: &str = "Sorry, I didn't catch that — what's the five-digit ZIP code there?";
#[cfg(test)]
const NAME_QUESTION: &str = "Can I get your name, please?";
#[cfg(test)]
const PROBLEM_QUESTION: &str = "What's going on with your system?";
#[cfg(test)]
const ADDRESS_QUESTION: &str = "What's the street address for the visit?";
const READ_BACK_MARK: &str = wording::READ_BACK_QUESTION;

/// Whole-word phrase test on lower-cased text.
fn has_phrase(lower: &str, phrases: &[&str]) -> bool {
    crate::keywords::match_any_lower(lower, phrases)
}

fn is_goodbye(lower: &str) -> bool {
    crate::validate::is_wrap_up(lower)
}

fn is_price_question(lower: &str) -> bool {
    has_phrase(
        lower,
        &[
            "how much", "price", "cost", "costs", "charge", "fee", "pricing",
        ],
    )
}

fn first_name(name: &str) -> &str {
    name.split_whitespace().next().unwrap_or("")
}

impl ScriptedResponder {
    /// A scripted responder speaking for `profile`.
    pub fn new(profile: BusinessProfile) -> Self {
        ScriptedResponder { profile }
    }

    /// The line for one turn (what [`Responder::reply`] streams), worded
    /// from what the state machine understood of the caller
    /// ([`Session::heard`]): a goodbye gets a close, a question its answer
    /// and then the step in progress, a correction a fresh read-back. Never
    /// the same line twice in a row (SPEC §5.9).
    pub fn line(&self, req: &TurnRequest) -> String {
        let line = self.compose(req);
        let last = req
            .messages
            .iter()
            .rev()
            .find(|m| m.role == ChatRole::Assistant)
            .map(|m| m.content.as_str());
        if last == Some(line.as_str()) {
            return format!("Sorry — let me say that again. {line}");
        }
        line
    }

    fn compose(&self, req: &TurnRequest) -> String {
        let h = &req.session.heard;
        let p = &self.profile;
        let open = !req.state.is_terminal() && req.state != State::SafetyExit;
        if open && (h.goodbye || (req.session.callback_declined && h.question.is_none())) {
            return format!(
                "No problem — thanks for calling {}. Goodbye!",
                p.company_name
            );
        }
        let answered_elsewhere = matches!(
            req.state,
            State::Confirm
                | State::SafetyExit
                | State::Callback
                | State::BookingFailed
                | State::NonService
        );
        match h.question {
            Some(q) if !answered_elsewhere && h.changed.is_empty() => {
                let said = match q {
                    crate::understand::Asking::Known(q) => answer(q, p),
                    crate::understand::Asking::Other => {
                        crate::wording::answer_other(&req.last_user_text().to_lowercase())
                            .to_string()
                    }
                };
                let resume = match req.state {
                    State::Welcome => "What can I help you with today?".to_string(),
                    _ => self.step_line(req),
                };
                let resume = resume
                    .strip_prefix("Got it. ")
                    .or_else(|| resume.strip_prefix("Okay. "))
                    .unwrap_or(&resume);
                format!("{said} {resume}")
            }
            _ if h.changed.iter().any(|c| c == "zip")
                && matches!(
                    req.state,
                    State::Discovery | State::Urgency | State::PreConfirm
                ) =>
            {
                // A ZIP corrected after the service-area step is confirmed.
                let step = self.step_line(req);
                let step = step.strip_prefix("Got it. ").unwrap_or(&step);
                let step = step
                    .strip_prefix("Got it — I've changed that. ")
                    .unwrap_or(step);
                format!(
                    "Thanks — I've updated the ZIP code to {}. {step}",
                    req.session.zip_code
                )
            }
            _ => self.step_line(req),
        }
    }

    /// The line of the step in progress.
    fn step_line(&self, req: &TurnRequest) -> String {
        let user = req.last_user_text().trim().to_lowercase();
        let asked = |marker: &str| {
            req.messages
                .iter()
                .any(|m| m.role == ChatRole::Assistant && m.content.contains(marker))
        };
        // What the caller said lately, merged into a copy of the session:
        // background extraction may not have landed yet (older lines have
        // been extracted into the session already). Same window as extract.
        let mut s = req.session.clone();
        let mut history: Vec<HistoryMessage> = req
            .messages
            .iter()
            .rev()
            .filter(|m| m.role == ChatRole::User)
            .take(10)
            .map(|m| HistoryMessage {
                role: "user".into(),
                content: m.content.clone(),
            })
            .collect();
        history.reverse();
        crate::extract::apply_extraction(&mut s, &heuristic_extract(&history));
        let p = &self.profile;
        let name = first_name(s.customer_name.trim()).to_string();
        // Which question is pending, and which time it is put: the state
        // machine's view (it counts), not the extraction-merged copy, so the
        // two never disagree about what was asked.
        let pending = Asked::at(req.state, &req.session);
        let times = if req.session.asked == pending {
            req.session.asked_times.max(1)
        } else {
            1
        };
        let ask = |a: Asked| wording::ask(a, times).unwrap_or_default();

        match req.state {
            State::Welcome => format!(
                "Thanks for calling {}. What can I help you with today?",
                p.company_name
            ),
            State::Lookup => "One second while I pull up your account.".to_string(),
            State::Safety => {
                if asked("Quick safety check") {
                    wording::ask(Asked::Safety, times.max(2))
                        .unwrap_or_default()
                        .to_string()
                } else {
                    let greet = if s.caller_known && !name.is_empty() {
                        format!("Hi {name}, good to hear from you again. ")
                    } else if !s.problem_description.is_empty() {
                        "Okay, I can help with that. ".to_string()
                    } else {
                        String::new()
                    };
                    format!("{greet}{SAFETY_QUESTION}")
                }
            }
            State::SafetyExit | State::BookingFailed => {
                terminal_script(req.state, p).unwrap_or_default()
            }
            State::ServiceArea => {
                if !s.zip_code.is_empty() {
                    format!(
                        "Good. I have your ZIP code as {} — is that where you need service?",
                        s.zip_code
                    )
                } else if times > 1 || asked(ZIP_QUESTION) {
                    wording::ask(Asked::Zip, times.max(2))
                        .unwrap_or_default()
                        .to_string()
                } else {
                    format!("Good, thanks. {}", ask(Asked::Zip))
                }
            }
            State::Discovery => {
                let q = ask(pending);
                match pending {
                    _ if times > 1 => q.to_string(),
                    Asked::Name => format!("Got it. {q}"),
                    Asked::Problem if !name.is_empty() => format!("Thanks, {name}. {q}"),
                    Asked::Problem => format!("Thanks. {q}"),
                    Asked::Address => format!("Okay. {q}"),
                    _ => format!("Thanks, I have everything for the visit. {DISCOVERY_DONE}"),
                }
            }
            State::Urgency => {
                if req.session.heard.unclear_time {
                    wording::WHICH_DAY.to_string()
                } else if times > 1 || asked(URGENCY_QUESTION) {
                    wording::ask(Asked::Time, times.max(2))
                        .unwrap_or_default()
                        .to_string()
                } else {
                    format!("Got it. {}", ask(Asked::Time))
                }
            }
            State::PreConfirm => {
                let h = &req.session.heard;
                if !h.changed.is_empty() {
                    format!("Got it — I've changed that. {}", self.read_back(&s, times))
                } else if h.unclear_time {
                    wording::WHICH_DAY.to_string()
                } else if !asked(READ_BACK_MARK) || user.is_empty() {
                    self.read_back(&s, times)
                } else if h.no {
                    "No problem — what should I change: the name, the address, or the time? \
Or I can have someone call you back instead."
                        .to_string()
                } else {
                    // After an answer (see `compose`) or an unclear word:
                    // the read-back's question again, in other words.
                    wording::ask(Asked::ReadBack, times.max(2))
                        .unwrap_or_default()
                        .to_string()
                }
            }
            State::Booking => "Let me check what's open.".to_string(),
            State::Confirm => self.confirm_line(&s, &user, &asked),
            State::NonService => self.non_service_line(&s, &history),
            State::FollowUp => {
                let h = &req.session.heard;
                let opened = asked("sorry for the wait") || asked("Thanks for following up");
                if opened && (h.no || h.goodbye || is_goodbye(&user)) {
                    format!(
                        "Understood — I've flagged it, and the team will call you back today. \
Thanks for calling {}. Goodbye!",
                        p.company_name
                    )
                } else if opened {
                    "Understood. I'll flag it for the team so they get back to you. \
Is anything new going on with your system?"
                        .to_string()
                } else {
                    let hi = if name.is_empty() {
                        String::new()
                    } else {
                        format!("Hi {name}. ")
                    };
                    if s.callback_promise.trim().is_empty() {
                        format!(
                            "{hi}Thanks for following up. I'll make sure the team gets back to you. \
Is anything new going on with your system?"
                        )
                    } else {
                        format!(
                            "{hi}I see we owe you a call back about {}. I'm sorry for the wait — \
I'll make sure the team follows up. Is anything new going on with your system?",
                            s.callback_promise.trim()
                        )
                    }
                }
            }
            State::ManageBooking => self.manage_line(&s),
            State::UrgencyCallback => {
                if is_goodbye(&user) && (asked("comfort advisor") || asked("callback")) {
                    format!("Thanks for calling {}. Goodbye!", p.company_name)
                } else if s.is_high_ticket() {
                    "Since you're looking at a new system, one of our comfort advisors will reach out \
to go over options and put together a quote. Anything else I can help with?"
                        .to_string()
                } else {
                    "I've set up a callback, and someone from the team will reach out shortly. \
Anything else I can help with?"
                        .to_string()
                }
            }
            State::Callback => {
                if is_goodbye(&user) {
                    format!("Thanks for calling {}. Goodbye!", p.company_name)
                } else {
                    terminal_script(State::Callback, p).unwrap_or_default()
                }
            }
        }
    }

    /// The read-back of what will be booked, ending in the read-back's
    /// question as put for the `times`-th time (a read-back said again
    /// after a correction is worded anew, never the same question thrice).
    fn read_back(&self, s: &Session, times: u32) -> String {
        let who = if s.customer_name.is_empty() {
            "you".to_string()
        } else {
            s.customer_name.clone()
        };
        let problem = if s.problem_description.is_empty() {
            "a service visit".to_string()
        } else {
            s.problem_description
                .trim_end_matches(['.', '!'])
                .to_string()
        };
        let place = if s.service_address.is_empty() {
            String::new()
        } else {
            format!(" at {}", s.service_address)
        };
        // What will be booked, exactly (the engine fixed it on entry).
        let at = if s.booking_time.is_empty() {
            String::new()
        } else {
            crate::booking_time::say_time(&s.booking_time)
        };
        let when = match (s.urgency_tier == "urgent", at.is_empty()) {
            (true, true) => "as soon as we can get someone out".to_string(),
            (true, false) => format!("as soon as we can get someone out — {at}"),
            (false, false) => at,
            (false, true)
                if s.preferred_time.is_empty() || s.preferred_time == "soonest available" =>
            {
                "the next visit that works".to_string()
            }
            (false, true) => s.preferred_time.clone(),
        };
        let question = wording::ask(Asked::ReadBack, times).unwrap_or(READ_BACK_MARK);
        format!("Let me make sure I have this right: {who}, {problem}{place}, timing {when}. {question}")
    }

    fn confirm_line(&self, s: &Session, user: &str, asked: &dyn Fn(&str) -> bool) -> String {
        let p = &self.profile;
        let opened = asked("minutes before arriving") || asked("Done —");
        if opened && is_goodbye(user) {
            return format!("Thanks for calling {}. Take care, goodbye!", p.company_name);
        }
        if opened && is_price_question(user) {
            return format!(
                "The diagnostic visit is ${}, and that goes toward the repair if you go ahead. \
Anything else?",
                p.diagnostic_price
            );
        }
        if opened
            && has_phrase(
                &user.to_lowercase(),
                &[
                    "until",
                    "meantime",
                    "what should i do",
                    "what can i do",
                    "in the meanwhile",
                ],
            )
        {
            return "Until they get there, keep the thermostat steady, close the blinds on the sunny side, \
and switch the system off if it's making loud noises. Anything else?"
                .to_string();
        }
        if opened && user.contains('?') {
            return "Good question — the technician can go over that with you when they call ahead. \
Anything else?"
                .to_string();
        }
        if opened {
            return "Happy to help. Anything else before I let you go?".to_string();
        }
        let msg = s.confirmation_message.trim().trim_end_matches('.');
        if !s.manage_action.is_empty() && !s.booking_confirmed {
            let what = match s.manage_action.as_str() {
                "cancel" => "your appointment is cancelled".to_string(),
                "reschedule" => {
                    let when = s.appointment_when();
                    if when.is_empty() {
                        "your appointment has been moved".to_string()
                    } else {
                        format!("your appointment is now {when}")
                    }
                }
                _ => {
                    let when = s.appointment_when();
                    if when.is_empty() {
                        "your appointment is still on the books".to_string()
                    } else {
                        format!("your appointment is still on for {when}")
                    }
                }
            };
            // The backend's own message says the same thing; say it once.
            return format!("Done — {what}. Anything else I can help with?");
        }
        let details = if msg.is_empty() {
            "You're all set, and the office will confirm the exact time.".to_string()
        } else {
            format!("You're all set: {msg}.")
        };
        format!(
            "{details} The technician will call about 30 minutes before arriving. \
Do you have any questions in the meantime?"
        )
    }

    fn manage_line(&self, s: &Session) -> String {
        if s.manage_action == "reschedule" && s.manage_time_hint.trim().is_empty() {
            return "Sure — what day and time of day would work better for you?".to_string();
        }
        let when = s.appointment_when();
        if when.is_empty() {
            "I see you have an appointment with us. Would you like to cancel it, reschedule it, \
or just check on it?"
                .to_string()
        } else {
            format!(
                "I see your appointment on {when}. Would you like to cancel it, reschedule it, \
or just check on it?"
            )
        }
    }

    fn non_service_line(&self, s: &Session, history: &[HistoryMessage]) -> String {
        let p = &self.profile;
        if history
            .last()
            .is_some_and(|m| crate::validate::is_wrap_up(&m.content))
        {
            return format!("Thanks for calling {}. Goodbye!", p.company_name);
        }
        match s.errand {
            Errand::Sales => {
                return "Thanks for reaching out — this line is for our customers, so I'll pass \
your details along to the office. Goodbye!"
                    .to_string()
            }
            Errand::WrongNumber => return "No problem at all — have a good day!".to_string(),
            Errand::Job if s.customer_name.is_empty() => {
                return "Thanks for your interest! The office handles hiring — can I get your \
name and the best number to reach you?"
                    .to_string()
            }
            Errand::Job => {
                return format!(
                    "Thanks, {} — I'll pass your details to the office, and they'll be in touch \
if there's an opening. Anything else?",
                    first_name(&s.customer_name)
                )
            }
            Errand::None | Errand::Billing => {}
        }
        if history
            .last()
            .is_some_and(|m| crate::validate::is_wrap_up(&m.content))
        {
            return format!("Thanks for calling {}. Goodbye!", p.company_name);
        }
        let lines: Vec<String> = history
            .iter()
            .rev()
            .map(|m| m.content.to_lowercase())
            .collect();
        for l in &lines {
            if has_phrase(l, &["wrong number"]) {
                return "No problem at all — have a good day!".to_string();
            }
            if has_phrase(
                l,
                &[
                    "billing", "bill", "billed", "charge", "charged", "payment", "invoice",
                    "warranty", "refund",
                ],
            ) {
                if history.len() > 1 {
                    return "Thanks — someone from the office will call you back about it. \
Anything else I can help with?"
                        .to_string();
                }
                return "I'll have someone from the office call you back about that. \
Is the number you're calling from the best one to reach you?"
                    .to_string();
            }
            if has_phrase(
                l,
                &[
                    "vendor",
                    "supplier",
                    "selling",
                    "partnership",
                    "parts supplier",
                ],
            ) {
                return "Thanks for reaching out. This line is for our customers, \
but I'll pass your details along to the office."
                    .to_string();
            }
            if has_phrase(
                l,
                &[
                    "hiring",
                    "job",
                    "apply",
                    "application",
                    "position",
                    "employment",
                ],
            ) {
                return "Thanks for your interest! The office handles hiring, \
and I'll let them know you called."
                    .to_string();
            }
            if is_price_question(l) {
                return format!(
                    "Our diagnostic visit is ${}, and that's credited toward the repair. \
Would you like us to send someone out?",
                    p.diagnostic_price
                );
            }
        }
        "Got it. Is there anything I can help with on your heating or cooling?".to_string()
    }
}

/// The scripted wrap-up sentence (passes the booking filter).

#[async_trait::async_trait]
impl Responder for ScriptedResponder {
    async fn reply(&self, req: &TurnRequest) -> Result<ReplyStream, ResponderError> {
        Ok(stream_from_text(&self.line(req)))
    }

    /// Offline there is nothing that could answer a wrap-up question, so the
    /// scripted responder adds no scoped reply: the canned terminal line
    /// alone is spoken (an empty reply is never spoken).
    async fn scoped_reply(&self, _req: &ScopedRequest) -> Result<String, ResponderError> {
        Ok(String::new())
    }

    async fn extract(&self, req: &ExtractionRequest) -> Result<ExtractedFields, ResponderError> {
        let start = req.history.len().saturating_sub(10);
        Ok(heuristic_extract(req.history.get(start..).unwrap_or(&[])))
    }

    fn name(&self) -> &str {
        "scripted"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::responder::tests::block_on;
    use crate::responder::{collect_reply, ChatMessage};

    fn req(state: State, session: Session, msgs: &[(&str, &str)]) -> TurnRequest {
        let mut messages = vec![ChatMessage::system("sys")];
        for (r, c) in msgs {
            messages.push(if *r == "user" {
                ChatMessage::user(*c)
            } else {
                ChatMessage::assistant(*c)
            });
        }
        TurnRequest {
            state,
            session,
            messages,
        }
    }

    fn say(state: State, session: Session, msgs: &[(&str, &str)]) -> String {
        let r = ScriptedResponder::default();
        block_on(async { collect_reply(r.reply(&req(state, session, msgs)).await?).await }).unwrap()
    }

    #[test]
    fn known_caller_greeted_then_safety_question() {
        let s = Session {
            caller_known: true,
            customer_name: "Jonas".into(),
            ..Session::default()
        };
        let line = say(State::Safety, s, &[("user", "my AC is broken")]);
        assert!(line.starts_with("Hi Jonas"), "{line}");
        assert!(line.contains(SAFETY_QUESTION));
        assert!(!line.contains('?') || line.ends_with('?'));
        let again = say(
            State::Safety,
            Session::default(),
            &[
                ("user", "my AC is broken"),
                ("assistant", SAFETY_QUESTION),
                ("user", "hmm what?"),
            ],
        );
        assert_eq!(again, SAFETY_REASK);
    }

    #[test]
    fn discovery_asks_one_missing_thing_in_order() {
        // The fields as the state machine took them from the caller's words.
        let with = |name: &str, problem: &str, address: &str| Session {
            state: State::Discovery,
            customer_name: name.into(),
            problem_description: problem.into(),
            service_address: address.into(),
            ..Session::default()
        };
        let l = say(State::Discovery, with("", "", ""), &[("user", "78701")]);
        assert!(l.contains(NAME_QUESTION), "{l}");
        let l = say(
            State::Discovery,
            with("Jonas", "", ""),
            &[("user", "my name is jonas")],
        );
        assert!(l.contains("Jonas") && l.contains(PROBLEM_QUESTION), "{l}");
        let l = say(
            State::Discovery,
            with("Jonas", "AC is blowing warm air", ""),
            &[
                ("user", "my AC is blowing warm air"),
                ("user", "this is Jonas"),
            ],
        );
        assert!(l.contains(ADDRESS_QUESTION), "{l}");
        let l = say(
            State::Discovery,
            with("Jonas", "AC is blowing warm air", "4329 Franklin Street"),
            &[("user", "4329 Franklin Street")],
        );
        assert!(l.contains(DISCOVERY_DONE), "{l}");
        // The second time a question is put, it is worded differently.
        let mut again = with("", "", "");
        again.asked = Asked::Name;
        again.asked_times = 2;
        let l = say(State::Discovery, again, &[("user", "hmm")]);
        assert!(!l.contains(NAME_QUESTION) && l.contains("name"), "{l}");
    }

    #[test]
    fn service_area_and_urgency() {
        let l = say(State::ServiceArea, Session::default(), &[("user", "no")]);
        assert!(l.contains(ZIP_QUESTION));
        let l = say(
            State::ServiceArea,
            Session::default(),
            &[("user", "no"), ("assistant", l.as_str()), ("user", "uh")],
        );
        assert_eq!(l, ZIP_REASK);
        let l = say(State::Urgency, Session::default(), &[("user", "nope")]);
        assert!(l.contains(URGENCY_QUESTION));
    }

    #[test]
    fn pre_confirm_reads_back() {
        let s = Session {
            customer_name: "Jonas".into(),
            problem_description: "AC blowing warm air".into(),
            service_address: "4329 Franklin Street".into(),
            urgency_tier: "urgent".into(),
            preferred_time: "soonest available".into(),
            ..Session::default()
        };
        let l = say(State::PreConfirm, s, &[("user", "today please")]);
        for n in [
            "Jonas",
            "AC blowing warm air",
            "4329 Franklin Street",
            "book",
        ] {
            assert!(l.contains(n), "{n}: {l}");
        }
    }

    #[test]
    fn pre_confirm_follow_ups() {
        let s = Session {
            customer_name: "Jonas".into(),
            ..Session::default()
        };
        let first = say(State::PreConfirm, s.clone(), &[("user", "today")]);
        let msgs = |u: &'static str| {
            vec![
                ("user", "today"),
                ("assistant", first.as_str()),
                ("user", u),
            ]
        };
        let l = say(State::PreConfirm, s.clone(), &msgs("hmm"));
        assert!(l.contains("book it"), "{l}");
        assert!(!l.contains(READ_BACK_MARK), "{l}");
        let mut said_no = s;
        said_no.heard.no = true;
        let l = say(State::PreConfirm, said_no, &msgs("no the address is wrong"));
        assert!(l.contains("what should I change"), "{l}");
    }

    #[test]
    fn confirm_reads_message_and_says_goodbye() {
        let s = Session {
            booking_confirmed: true,
            confirmation_message: "Appointment confirmed for Monday, February 24 at 2:00 PM".into(),
            ..Session::default()
        };
        let first = say(State::Confirm, s.clone(), &[("user", "yes")]);
        assert!(first.contains("Monday, February 24 at 2:00 PM"));
        assert!(first.contains("30 minutes"));
        let price = say(
            State::Confirm,
            s.clone(),
            &[
                ("user", "yes"),
                ("assistant", first.as_str()),
                ("user", "how much is it?"),
            ],
        );
        assert!(price.contains("$89"), "{price}");
        let bye = say(
            State::Confirm,
            s,
            &[
                ("user", "yes"),
                ("assistant", first.as_str()),
                ("user", "no that's all, thanks"),
            ],
        );
        assert!(bye.to_lowercase().contains("goodbye"), "{bye}");
    }

    #[test]
    fn manage_and_follow_up_and_non_service() {
        let s = Session {
            has_appointment: true,
            appointment_date: "2026-02-20".into(),
            appointment_time: "10:00 AM".into(),
            ..Session::default()
        };
        let l = say(
            State::ManageBooking,
            s.clone(),
            &[("user", "my appointment")],
        );
        assert!(l.contains("2026-02-20 at 10:00 AM") && l.contains("reschedule"));
        let done = Session {
            manage_action: "cancel".into(),
            ..s
        };
        let l = say(State::Confirm, done, &[("user", "cancel it")]);
        assert!(l.contains("cancelled"), "{l}");

        let s = Session {
            callback_promise: "Tuesday, February 17 (AC not cooling)".into(),
            ..Session::default()
        };
        let l = say(State::FollowUp, s, &[("user", "following up")]);
        assert!(l.contains("Tuesday, February 17"));

        let l = say(
            State::NonService,
            Session::default(),
            &[("user", "I have a question about my bill")],
        );
        assert!(l.contains("office"));
        let l = say(
            State::NonService,
            Session::default(),
            &[("user", "how much do you charge for a visit")],
        );
        assert!(l.contains("office") || l.contains("$89"));
        let l = say(
            State::NonService,
            Session::default(),
            &[("user", "what's the price for a visit")],
        );
        assert!(l.contains("$89"), "{l}");
    }

    #[test]
    fn urgency_callback_lines() {
        let s = Session {
            lead_type: "high_ticket".into(),
            ..Session::default()
        };
        let l = say(State::UrgencyCallback, s, &[("user", "new system quote")]);
        assert!(l.contains("comfort advisor"));
        let l = say(
            State::UrgencyCallback,
            Session::default(),
            &[("user", "call me back")],
        );
        assert!(l.contains("callback"));
    }

    #[test]
    fn deterministic_and_no_scoped_reply_offline() {
        let r = ScriptedResponder::default();
        let rq = req(State::Urgency, Session::default(), &[("user", "hi")]);
        assert_eq!(r.line(&rq), r.line(&rq));
        let sr = block_on(r.scoped_reply(&ScopedRequest {
            state: State::Callback,
            session: Session::default(),
            user_text: "when will they call?".into(),
        }))
        .unwrap();
        assert!(sr.is_empty(), "offline there is no scoped reply: {sr:?}");
        assert_eq!(r.name(), "scripted");
    }

    #[test]
    fn scripted_extract_uses_heuristics() {
        let r = ScriptedResponder::default();
        let f = block_on(r.extract(&ExtractionRequest {
            history: vec![
                HistoryMessage {
                    role: "user".into(),
                    content: "my name is Jonas".into(),
                },
                HistoryMessage {
                    role: "user".into(),
                    content: "my furnace is making a loud noise".into(),
                },
            ],
        }))
        .unwrap();
        assert_eq!(f.customer_name, "Jonas");
        assert_eq!(f.equipment_type, "furnace");
    }

    #[test]
    fn every_state_has_a_line() {
        for st in State::ALL {
            let l = say(st, Session::default(), &[("user", "hello")]);
            assert!(!l.trim().is_empty(), "{st}");
        }
    }
}
