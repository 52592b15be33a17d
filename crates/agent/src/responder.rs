//! Where the agent's words come from.
//!
//! The conversation engine's async shell asks a [`Responder`] for three
//! things: the reply of an LLM turn (streamed as text chunks, so TTS can start
//! on the first sentence), the one-off scoped wrap-up reply of terminal
//! routing (SPEC §5.6), and background field extraction (SPEC §5.8).
//!
//! Implementations: [`ScriptedResponder`] here (deterministic, offline; what
//! `calllock chat` / `demo` and the simulations use) and the
//! OpenAI-compatible client in `providers`.

use crate::extract::{heuristic_extract, ExtractedFields};
use crate::profile::BusinessProfile;
use crate::prompts::terminal_script;
use crate::questions::{answer, off_script_question};
use crate::session::{HistoryMessage, Session};
use crate::state::State;
use futures_core::Stream;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
    /// A backend tool's result as text. CallLock's tools are run by the
    /// state machine, not requested by the model, so there is no
    /// `tool_call_id` to answer: OpenAI-compatible clients send it as a
    /// system message.
    Tool,
}

/// One message of an LLM conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: ChatRole::System,
            content: content.into(),
        }
    }
    /// A caller message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: ChatRole::User,
            content: content.into(),
        }
    }
    /// An agent message.
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: ChatRole::Assistant,
            content: content.into(),
        }
    }
}

/// One LLM turn: the state after processing, a snapshot of the session and
/// the messages (system prompt first, then the projected history; the last
/// one is the caller's text).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    pub state: State,
    pub session: Session,
    pub messages: Vec<ChatMessage>,
}

impl TurnRequest {
    /// The caller's latest text (the last user message), or "".
    pub fn last_user_text(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == ChatRole::User)
            .map(|m| m.content.as_str())
            .unwrap_or("")
    }
}

/// The one-off terminal wrap-up reply (SPEC §5.6).
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedRequest {
    pub state: State,
    pub session: Session,
    pub user_text: String,
}

/// A background extraction pass over the last (≤ 10) history entries.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractionRequest {
    pub history: Vec<HistoryMessage>,
}

/// Why a responder could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponderError {
    #[error("responder timed out")]
    Timeout,
    #[error("responder HTTP error: {0}")]
    Http(String),
    #[error("responder answer could not be parsed: {0}")]
    Parse(String),
    #[error("responder error: {0}")]
    Other(String),
}

/// A streamed reply: text chunks whose concatenation is the whole reply.
pub type ReplyStream = Pin<Box<dyn Stream<Item = Result<String, ResponderError>> + Send>>;

/// A source of the agent's words.
#[async_trait::async_trait]
pub trait Responder: Send + Sync {
    /// The reply of one LLM turn, streamed.
    async fn reply(&self, req: &TurnRequest) -> Result<ReplyStream, ResponderError>;
    /// The scoped wrap-up reply (one sentence at most; the caller of this
    /// method still applies [`passes_booking_filter`]).
    async fn scoped_reply(&self, req: &ScopedRequest) -> Result<String, ResponderError>;
    /// Field extraction from the caller's lines.
    async fn extract(&self, req: &ExtractionRequest) -> Result<ExtractedFields, ResponderError>;
    /// Post-call classification (SPEC §7.7): `prompt` is
    /// [`crate::classify::classification_prompt`]; the answer is the
    /// validated, clamped fields ([`crate::classify::parse_classification`]).
    /// A responder without a language model has nothing to add: `{}` (the
    /// deterministic classification of §7.6 is always in the payload).
    async fn classify(
        &self,
        _prompt: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, ResponderError> {
        Ok(serde_json::Map::new())
    }
    /// A short name for logs ("scripted", "openai:gpt-4o-mini", …).
    fn name(&self) -> &str;
}

/// A stream over ready-made chunks (for scripted replies and test fakes).
struct ChunkStream {
    chunks: VecDeque<Result<String, ResponderError>>,
}

impl Stream for ChunkStream {
    type Item = Result<String, ResponderError>;
    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.chunks.pop_front())
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.chunks.len(), Some(self.chunks.len()))
    }
}

/// A [`ReplyStream`] that yields `items` in order.
pub fn stream_from_items(items: Vec<Result<String, ResponderError>>) -> ReplyStream {
    Box::pin(ChunkStream {
        chunks: items.into(),
    })
}

/// A [`ReplyStream`] that yields `text` in sentence-sized chunks (split after
/// `.`, `?`, `!` and `,`); the chunks concatenate back to `text`.
pub fn stream_from_text(text: &str) -> ReplyStream {
    let chunks: Vec<Result<String, ResponderError>> = text
        .split_inclusive(['.', '?', '!', ','])
        .filter(|c| !c.is_empty())
        .map(|c| Ok(c.to_string()))
        .collect();
    stream_from_items(chunks)
}

struct NextChunk<'a> {
    stream: &'a mut ReplyStream,
}

impl Future for NextChunk<'_> {
    type Output = Option<Result<String, ResponderError>>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.stream.as_mut().poll_next(cx)
    }
}

/// Read a reply stream to the end and return the whole text (the first error
/// ends it).
pub async fn collect_reply(mut stream: ReplyStream) -> Result<String, ResponderError> {
    let mut out = String::new();
    while let Some(chunk) = (NextChunk {
        stream: &mut stream,
    })
    .await
    {
        out.push_str(&chunk?);
    }
    Ok(out)
}

/// Deterministic, offline responder: state-aware lines filled with what the
/// call knows, one question at a time. Nothing random; the same request
/// always gets the same words.
#[derive(Debug, Clone, Default)]
pub struct ScriptedResponder {
    profile: BusinessProfile,
}

const SAFETY_QUESTION: &str =
    "Quick safety check — any gas smell, burning smell or smoke right now?";
const SAFETY_REASK: &str = "Sorry, just to be sure — do you smell gas or something burning, \
or see any smoke in the house right now?";
const ZIP_QUESTION: &str = "What's the ZIP code where you need service?";
const ZIP_REASK: &str = "Sorry, I didn't catch that — what's the five-digit ZIP code there?";
const NAME_QUESTION: &str = "Can I get your name, please?";
const PROBLEM_QUESTION: &str = "What's going on with your system?";
const ADDRESS_QUESTION: &str = "What's the street address for the visit?";
const DISCOVERY_DONE: &str = "Is there anything else about the problem the technician should know?";
const URGENCY_QUESTION: &str = "How soon do you need someone — today, or is later this week okay?";
const URGENCY_REASK: &str =
    "Just so I get it right — do you need someone today, or can it wait a few days?";
const READ_BACK_MARK: &str = "Shall I go ahead and book that?";

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

    /// The line for one turn (what [`Responder::reply`] streams). An
    /// off-script question (price, robot, brands, hours) is answered from
    /// the profile, then the step in progress is taken up again.
    pub fn line(&self, req: &TurnRequest) -> String {
        let question = off_script_question(req.last_user_text());
        let answered_elsewhere = matches!(
            req.state,
            State::Confirm
                | State::SafetyExit
                | State::Callback
                | State::BookingFailed
                | State::NonService
        );
        match question {
            Some(q) if !answered_elsewhere => {
                let resume = match req.state {
                    State::Welcome => "What can I help you with today?".to_string(),
                    State::PreConfirm => "Shall I go ahead and book that?".to_string(),
                    _ => self.step_line(req),
                };
                format!("{} {resume}", answer(q, &self.profile))
            }
            _ if matches!(
                req.state,
                State::Discovery | State::Urgency | State::PreConfirm
            ) =>
            {
                // A ZIP corrected after the service-area step is confirmed.
                match crate::validate::zip_correction(req.last_user_text(), "") {
                    Some(zip) => {
                        let step = self.step_line(req);
                        let step = step.strip_prefix("Got it. ").unwrap_or(&step);
                        format!("Thanks — I've updated the ZIP code to {zip}. {step}")
                    }
                    None => self.step_line(req),
                }
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

        match req.state {
            State::Welcome => format!(
                "Thanks for calling {}. What can I help you with today?",
                p.company_name
            ),
            State::Lookup => "One second while I pull up your account.".to_string(),
            State::Safety => {
                if asked("Quick safety check") {
                    SAFETY_REASK.to_string()
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
                } else if asked(ZIP_QUESTION) || asked(ZIP_REASK) {
                    ZIP_REASK.to_string()
                } else {
                    format!("Good, thanks. {ZIP_QUESTION}")
                }
            }
            State::Discovery => {
                if s.customer_name.is_empty() {
                    format!("Got it. {NAME_QUESTION}")
                } else if s.problem_description.is_empty() {
                    format!("Thanks, {name}. {PROBLEM_QUESTION}")
                } else if s.service_address.is_empty() {
                    format!("Okay. {ADDRESS_QUESTION}")
                } else {
                    format!("Thanks, I have everything for the visit. {DISCOVERY_DONE}")
                }
            }
            State::Urgency => {
                if asked(URGENCY_QUESTION) {
                    URGENCY_REASK.to_string()
                } else {
                    format!("Got it. {URGENCY_QUESTION}")
                }
            }
            State::PreConfirm => {
                if !asked(READ_BACK_MARK) || user.is_empty() {
                    self.read_back(&s)
                } else if has_phrase(
                    &user,
                    &[
                        "sure", "ok", "okay", "alright", "please", "do it", "book it", "fine",
                    ],
                ) && !has_phrase(&user, &["no", "not", "wrong", "change", "wait"])
                {
                    "Just to be sure — is that a yes to go ahead?".to_string()
                } else {
                    "No problem — tell me what to change, or I can have someone call you back instead."
                        .to_string()
                }
            }
            State::Booking => "Let me check what's open.".to_string(),
            State::Confirm => self.confirm_line(&s, &user, &asked),
            State::NonService => self.non_service_line(&history),
            State::FollowUp => {
                if asked("sorry for the wait") || asked("Thanks for following up") {
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

    fn read_back(&self, s: &Session) -> String {
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
        format!(
            "Let me make sure I have this right: {who}, {problem}{place}, timing {when}. {READ_BACK_MARK}"
        )
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

    fn non_service_line(&self, history: &[HistoryMessage]) -> String {
        let p = &self.profile;
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
                    "billing", "bill", "charge", "charged", "payment", "invoice", "warranty",
                ],
            ) {
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
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    /// Minimal executor for futures that never wait on I/O.
    fn block_on<F: Future>(f: F) -> F::Output {
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        let mut f = std::pin::pin!(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

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
    fn chat_role_serde() {
        let m = ChatMessage::assistant("hi");
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({"role": "assistant", "content": "hi"})
        );
        let m: ChatMessage = serde_json::from_str(r#"{"role":"system","content":"x"}"#).unwrap();
        assert_eq!(m.role, ChatRole::System);
    }

    #[test]
    fn stream_round_trip_and_error() {
        let text = "Hello there. How are you, friend? Fine!";
        let got = block_on(collect_reply(stream_from_text(text))).unwrap();
        assert_eq!(got, text);
        let s = stream_from_items(vec![
            Ok("a".into()),
            Err(ResponderError::Timeout),
            Ok("b".into()),
        ]);
        assert_eq!(block_on(collect_reply(s)), Err(ResponderError::Timeout));
        assert_eq!(block_on(collect_reply(stream_from_text(""))).unwrap(), "");
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
        let l = say(State::Discovery, Session::default(), &[("user", "78701")]);
        assert!(l.contains(NAME_QUESTION), "{l}");
        let l = say(
            State::Discovery,
            Session::default(),
            &[("user", "my name is jonas")],
        );
        assert!(l.contains("Jonas") && l.contains(PROBLEM_QUESTION), "{l}");
        let l = say(
            State::Discovery,
            Session::default(),
            &[
                ("user", "my AC is blowing warm air"),
                ("user", "this is Jonas"),
            ],
        );
        assert!(l.contains(ADDRESS_QUESTION), "{l}");
        let l = say(
            State::Discovery,
            Session::default(),
            &[
                ("user", "my AC is blowing warm air"),
                ("user", "this is Jonas"),
                ("user", "4329 Franklin Street"),
            ],
        );
        assert!(l.contains(DISCOVERY_DONE), "{l}");
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
        let l = say(State::PreConfirm, s.clone(), &msgs("sure"));
        assert!(l.contains("yes to go ahead"), "{l}");
        let l = say(State::PreConfirm, s, &msgs("no the address is wrong"));
        assert!(l.contains("what to change"), "{l}");
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
