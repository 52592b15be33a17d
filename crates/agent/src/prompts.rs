//! Everything the agent says or tells the LLM (SPEC §5.6, §5.9, §5.10).
//!
//! * [`system_prompt`] = persona + KNOWN INFO + the state's instructions,
//!   rebuilt after every processed utterance;
//! * [`known_info_block`] lists what the call has established, in SPEC order
//!   and with the SPEC's gating (appointment only where it can be serviced,
//!   booking result only in `confirm`, …);
//! * [`terminal_script`] and [`Canned`] are the lines spoken straight to TTS;
//! * [`scoped_reply_prompt`] / [`passes_booking_filter`] drive the one-off
//!   wrap-up reply of terminal routing.
//!
//! The wording is CallLock's own. Business facts (name, city, trade, service
//! area, price, opening days) come from the [`BusinessProfile`], never from
//! literals here.

use crate::profile::{parse_weekday, BusinessProfile};
use crate::session::Session;
use crate::state::State;
use crate::validate::{is_bare_no, say_phone};
use chrono::Weekday;

/// The words a terminal scoped reply must not contain (SPEC §2.1
/// BOOKING_LANGUAGE), matched as whole words, case-insensitively.
pub use crate::keywords::BOOKING_LANGUAGE;

/// The full system prompt for `state`: persona, a blank line, the KNOWN INFO
/// block (left out together with its blank line when empty), a blank line and
/// the state's instructions.
pub fn system_prompt(state: State, session: &Session, profile: &BusinessProfile) -> String {
    join_system_prompt(&persona(profile), &after_persona(state, session, profile))
}

/// What follows the persona in [`system_prompt`]: the KNOWN INFO block
/// (with its blank line, when not empty) and the state's instructions.
/// [`persona`] depends on the profile alone, so the calls of one business
/// share it, and an engine keeps only this part, which changes as the
/// call moves on ([`join_system_prompt`] writes the whole prompt when a
/// request is made).
pub fn after_persona(state: State, session: &Session, profile: &BusinessProfile) -> String {
    let known = known_info_block(state, session);
    let instructions = state_block(state, session, profile);
    let mut out = String::with_capacity(known.len() + instructions.len() + 2);
    if !known.is_empty() {
        out.push_str(&known);
        out.push_str("\n\n");
    }
    out.push_str(&instructions);
    out
}

/// The whole system prompt: `persona`, a blank line, then
/// [`after_persona`]'s part.
pub fn join_system_prompt(persona: &str, after: &str) -> String {
    let mut out = String::with_capacity(persona.len() + after.len() + 2);
    out.push_str(persona);
    out.push_str("\n\n");
    out.push_str(after);
    out
}

fn opening_days(profile: &BusinessProfile) -> String {
    const ORDER: [(Weekday, &str); 7] = [
        (Weekday::Mon, "Monday"),
        (Weekday::Tue, "Tuesday"),
        (Weekday::Wed, "Wednesday"),
        (Weekday::Thu, "Thursday"),
        (Weekday::Fri, "Friday"),
        (Weekday::Sat, "Saturday"),
        (Weekday::Sun, "Sunday"),
    ];
    let open: Vec<&str> = ORDER
        .iter()
        .filter(|(d, _)| {
            profile
                .business_days
                .iter()
                .any(|b| parse_weekday(b) == Some(*d))
        })
        .map(|(_, n)| *n)
        .collect();
    match open.len() {
        7 => "seven days a week".to_string(),
        0 => "on the days the office sets".to_string(),
        _ => format!("on {}", open.join(", ")),
    }
}

/// Who the agent is, how it talks and the business facts: the first part
/// of every system prompt, the same all call long.
pub fn persona(p: &BusinessProfile) -> String {
    format!(
        "You are the virtual receptionist answering the phone for {company}, the {trade} company \
serving {city}. Sound like a calm, seasoned dispatcher: warm, brief and sure of yourself. \
Your words are spoken aloud, so use plain sentences with no lists, symbols or formatting.

HOW TO TALK:
- Ask one thing at a time, then stop and let the caller answer.
- Keep acknowledgments tiny (\"Got it.\", \"Okay.\") and never say the same sentence twice.
- Mirror the caller's energy: quick and focused with someone in a hurry, gentle with someone who is worried.
- Put the caller's problem in professional words, e.g. \"it's pushing hot air\" becomes \"the AC is blowing warm air\".
- Never describe your own process; avoid words like \"transition\", \"step\" or \"moving on\".
- If you did not catch something, ask the caller to say it again; never end the call because of it.
- If someone asks whether you are a person, a robot or an AI, say you are {company}'s virtual receptionist.
- When the caller is already known by name, greet them by name as a statement, not a question.
- Anything listed under KNOWN INFO is settled: never ask for it again.
- Accept loose timing words (\"whenever\", \"after work\", \"first thing\") without pushing for an exact time.

BOOKING FIREWALL:
- NEVER say a visit is booked, scheduled or confirmed unless this prompt contains BOOKING CONFIRMED.
- NEVER name open days, times or slots, and never promise when a technician can come; the scheduling system decides that.

BUSINESS FACTS:
- Service area: {area}.
- A diagnostic visit costs ${price}, and that amount is credited toward the repair if the customer goes ahead.
- Visits can be set up {days}.",
        company = p.company_name,
        trade = p.trade,
        city = p.city,
        area = p.area_description(),
        price = p.diagnostic_price,
        days = opening_days(p),
    )
}

/// Whether the existing appointment may be shown in `state` (SPEC §5.9 item
/// 5: hidden elsewhere so the LLM cannot start a conversation it cannot
/// service).
fn shows_appointment(state: State) -> bool {
    matches!(
        state,
        State::Lookup | State::FollowUp | State::ManageBooking | State::Callback
    )
}

fn appointment_text(s: &Session) -> String {
    let when = s.appointment_when();
    if when.is_empty() {
        "yes (day and time not on file)".to_string()
    } else {
        when
    }
}

/// The KNOWN INFO block for `state`: "" when nothing applies, otherwise a
/// `KNOWN INFO:` header and one line per item in SPEC §5.9 order (no
/// trailing newline).
pub fn known_info_block(state: State, session: &Session) -> String {
    let s = session;
    let mut lines: Vec<String> = Vec::new();
    if !s.customer_name.trim().is_empty() {
        lines.push(format!("- Caller's name: {}", s.customer_name.trim()));
    }
    if !s.problem_description.trim().is_empty() {
        lines.push(format!("- Issue: {}", s.problem_description.trim()));
    }
    if !s.service_address.trim().is_empty() {
        lines.push(format!("- Service address: {}", s.service_address.trim()));
    }
    if !s.zip_code.trim().is_empty() {
        lines.push(format!("- ZIP code: {}", s.zip_code.trim()));
    }
    if s.has_appointment && shows_appointment(state) {
        lines.push(format!("- Existing appointment: {}", appointment_text(s)));
    }
    if !s.preferred_time.trim().is_empty() {
        lines.push(format!("- Preferred timing: {}", s.preferred_time.trim()));
    }
    let tier = s.urgency_tier.trim();
    if !tier.is_empty() && !tier.eq_ignore_ascii_case("routine") {
        lines.push(format!("- Urgency: {tier}"));
    }
    if s.caller_known {
        lines.push("- Returning caller: we already have their details on file.".to_string());
    }
    if !s.callback_promise.trim().is_empty() {
        lines.push(format!(
            "- We owe this caller a callback: {}",
            s.callback_promise.trim()
        ));
    }
    if s.is_high_ticket() {
        lines.push(
            "- HIGH-TICKET lead: asking about a new system or a replacement (sales quote)."
                .to_string(),
        );
    }
    if s.is_third_party {
        let mut line = "- Calling on someone else's behalf".to_string();
        let name = s.site_contact_name.trim();
        let phone = s.site_contact_phone.trim();
        if !name.is_empty() || !phone.is_empty() {
            line.push_str("; on-site contact: ");
            line.push_str(name);
            if !phone.is_empty() {
                if !name.is_empty() {
                    line.push(' ');
                }
                line.push_str(&format!("({phone})"));
            }
        }
        lines.push(line);
    }
    if state == State::Confirm && !s.confirmation_message.trim().is_empty() {
        lines.push(format!(
            "- Booking result: {}",
            s.confirmation_message.trim()
        ));
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("KNOWN INFO:");
    for l in lines {
        out.push('\n');
        out.push_str(&l);
    }
    out
}

fn discovery_missing(s: &Session) -> Vec<&'static str> {
    let mut v = Vec::new();
    if s.customer_name.trim().is_empty() {
        v.push("the caller's name");
    }
    if s.problem_description.trim().is_empty() {
        v.push("what is wrong with the system");
    }
    if s.service_address.trim().is_empty() {
        v.push("the street address for the visit");
    }
    v
}

/// The instructions for one state (the last part of the system prompt).
pub fn state_block(state: State, session: &Session, profile: &BusinessProfile) -> String {
    let company = &profile.company_name;
    let price = profile.diagnostic_price;
    let area = profile.area_description();
    match state {
        State::Welcome => "RIGHT NOW: find out why they are calling.\n\
- Reply with one short line that invites them to say what they need.\n\
- Do not troubleshoot, diagnose or ask for details yet."
            .to_string(),
        State::NonService => format!(
            "RIGHT NOW: this caller is not asking for a repair visit.\n\
- Billing, payment or warranty questions: say someone from the office will call them back about it.\n\
- Vendors, suppliers or sales pitches: thank them and say this line is for customers; the office will pass their details along.\n\
- Job seekers: thank them and say the office handles hiring and will follow up.\n\
- Price questions: the diagnostic visit is ${price}, credited toward the repair; offer to send someone out.\n\
- Wrong number: wish them a good day.\n\
- Do not ask the safety question and do not ask for a ZIP code here."
        ),
        State::Lookup => "RIGHT NOW: their account is being pulled up.\n\
- Say one short line such as \"One second while I pull that up.\" and nothing else."
            .to_string(),
        State::FollowUp => "RIGHT NOW: the caller is following up on an earlier call.\n\
- If KNOWN INFO shows a callback we owe them, acknowledge it by name and date, apologise for the wait and say you will make sure the team follows up.\n\
- If they have a new or different problem, ask them briefly what is going on.\n\
- Never promise a specific callback time."
            .to_string(),
        State::ManageBooking => "RIGHT NOW: the caller is asking about an existing appointment.\n\
- State the appointment day and time from KNOWN INFO.\n\
- Ask whether they want to cancel it, reschedule it, or just check on it.\n\
- For a reschedule, ask which day and time of day would suit them better; never offer specific times yourself."
            .to_string(),
        State::Safety => "RIGHT NOW: one safety check before anything else.\n\
- Ask exactly one question: do they smell gas or something burning, or see smoke, right now?\n\
- Only what is happening right now matters, not what happened earlier.\n\
- A hazard the caller mentions and then RETRACTED (\"actually no\", \"never mind\") counts as a no.\n\
- If the answer is unclear, ask one short follow-up; otherwise do not bring safety up again."
            .to_string(),
        State::SafetyExit => "RIGHT NOW: this is a possible emergency.\n\
- Say only this: leave the house right away, call 911 once outside, and do not flip any light switches on the way out.\n\
- Do not ask questions or talk about service visits."
            .to_string(),
        State::ServiceArea => format!(
            "RIGHT NOW: confirm the visit is inside the service area.\n\
- If KNOWN INFO has no ZIP code, ask for the five-digit ZIP code of the home; that is your only job here.\n\
- If the ZIP is already known, just acknowledge it briefly.\n\
- {company} serves {area}; do not promise anything outside it."
        ),
        State::Discovery => {
            let missing = discovery_missing(session);
            let still = if missing.is_empty() {
                "Nothing is missing: thank them briefly and ask if there is anything else the technician should know.".to_string()
            } else {
                format!("Still missing: {}. Ask for the first of these only.", missing.join(", then "))
            };
            format!(
                "RIGHT NOW: gather the details for the visit.\n\
- Collect, one question at a time and in this order, whatever is missing: the caller's name, what is wrong, and the street address of the visit.\n\
- {still}\n\
- Do not ask about timing and do not read anything back yet."
            )
        }
        State::Urgency => "RIGHT NOW: work out how soon they need someone.\n\
- Ask whether they need someone today or whether later in the week is fine, unless they already said.\n\
- If the answer is unclear, ask once more in different words.\n\
- NEVER claim a time or day is open and never promise arrival times."
            .to_string(),
        State::UrgencyCallback => {
            if session.is_high_ticket() {
                "RIGHT NOW: this is a new-system or replacement enquiry.\n\
- Tell them one of our comfort advisors will reach out to go over options and put together a quote.\n\
- Do not quote prices for new equipment and do not set up a repair visit.\n\
- Answer any last question briefly and close warmly."
                    .to_string()
            } else {
                "RIGHT NOW: the caller wants a call back instead of a visit.\n\
- Tell them a callback is being set up and someone from the team will reach out.\n\
- Do not offer times. Answer any last question briefly and close warmly."
                    .to_string()
            }
        }
        State::PreConfirm => "RIGHT NOW: check the details before anything is booked.\n\
- Read back the name, the problem, the street address and the timing from KNOWN INFO in one or two sentences.\n\
- Ask for a clear yes before booking. NEVER book or say it is booked without their explicit approval.\n\
- If something is wrong, fix it and read it back again.\n\
- If they decline, offer to have someone call them back instead."
            .to_string(),
        State::Booking => "RIGHT NOW: the booking request is being processed.\n\
- Say one short line such as \"Let me see what we have.\"\n\
- NEVER say the visit is booked, scheduled or confirmed, and never mention a day or time."
            .to_string(),
        State::BookingFailed => "RIGHT NOW: the booking did not go through.\n\
- Apologise briefly and say someone from the team will call them back to find a time.\n\
- Do not offer other times yourself."
            .to_string(),
        State::Confirm => confirm_block(session, profile),
        State::Callback => "RIGHT NOW: the call ends with a callback.\n\
- Confirm that someone from the team will call them back, and check that this number is the best one to reach them.\n\
- If KNOWN INFO shows an existing appointment, let them know it is still on the books.\n\
- Do not offer times or set up a visit."
            .to_string(),
    }
}

fn confirm_block(s: &Session, p: &BusinessProfile) -> String {
    let price = p.diagnostic_price;
    let tail = format!(
        "- Mention that the technician will call about 30 minutes before arriving.\n\
- If they ask about price: the diagnostic visit is ${price}, credited toward the repair.\n\
- If it helps, give one practical tip for the wait (for example, keep blinds closed and the thermostat steady).\n\
- Answer follow-up questions briefly; when they are done, close in a friendly way."
    );
    let msg = s.confirmation_message.trim();
    if !s.manage_action.trim().is_empty() && !s.booking_confirmed {
        let what = if msg.is_empty() {
            format!("the {} request went through", s.manage_action.trim())
        } else {
            msg.to_string()
        };
        return format!(
            "RIGHT NOW: the caller's appointment change is done.\n\
APPOINTMENT UPDATE: {what}\n\
- Tell them plainly what happened, using only the words above.\n\
- Answer any last question briefly and close in a friendly way."
        );
    }
    if msg.is_empty() {
        format!(
            "RIGHT NOW: the booking went through, but its day and time were not passed to you.\n\
- Tell them they are on the books and that the office will confirm the exact time; NEVER guess a day or time.\n\
{tail}"
        )
    } else {
        format!(
            "RIGHT NOW: the booking went through.\n\
BOOKING CONFIRMED: {msg}\n\
- Read the booking details above back to the caller in a natural sentence; do not add any day or time of your own.\n\
{tail}"
        )
    }
}

/// The canned line of a terminal state with one (callback, booking_failed,
/// safety_exit); `None` for every other state.
pub fn terminal_script(state: State, profile: &BusinessProfile) -> Option<String> {
    match state {
        State::Callback => Some(format!(
            "I'm passing this to the {} team, and someone will call you back within the hour. \
Is the number you're calling from the best one to reach you?",
            profile.company_name
        )),
        State::BookingFailed => Some(
            "I'm sorry, I wasn't able to lock in that time. \
I've asked the team to call you back and get you sorted out."
                .to_string(),
        ),
        State::SafetyExit => Some(
            "This could be dangerous, so please get everyone out of the house right now \
and call 911 once you're outside. Don't flip any light switches or use anything \
electrical on your way out. Please stay safe."
                .to_string(),
        ),
        _ => None,
    }
}

/// The callback script as said on this call: out-of-area callers are told
/// so, and the call back is promised `when` the business hours allow (see
/// [`crate::booking_time::callback_window`]).
pub fn callback_script(s: &Session, profile: &BusinessProfile, when: &str) -> String {
    let out_of_area = !s.zip_code.is_empty() && !profile.zip_in_area(&s.zip_code);
    let lead = if out_of_area {
        format!(
            "{} is outside the area we serve, so I can't book a visit there — but I'm passing \
this to the {} team",
            s.zip_code, profile.company_name
        )
    } else {
        format!("I'm passing this to the {} team", profile.company_name)
    };
    format!(
        "{lead}, and someone will call you back {when}. Is the number you're calling from \
the best one to reach you?"
    )
}

/// What a terminal state says once its script was said: a short closing
/// that answers the caller (`said`) instead of the script word for word.
/// The callback script asks whether the number they call from is the best
/// one: a number they give is read back, a "no" is asked for the number.
pub fn terminal_follow_up(
    state: State,
    s: &Session,
    profile: &BusinessProfile,
    said: &str,
) -> String {
    match state {
        State::SafetyExit => "Please don't wait — get everyone outside and call 911 from there. \
Stay safe."
            .to_string(),
        State::Callback | State::BookingFailed => {
            if !s.callback_phone.is_empty() {
                format!(
                    "Got it — we'll call you back at {}. Thanks for calling {}.",
                    say_phone(&s.callback_phone),
                    profile.company_name
                )
            } else if state == State::Callback && is_bare_no(said) {
                "No problem — what's the best number to reach you?".to_string()
            } else {
                format!(
                    "Okay — someone from {} will call you back at the number you're calling \
from. Thanks for calling.",
                    profile.company_name
                )
            }
        }
        _ => String::new(),
    }
}

/// The states that have a canned terminal script, sorted by name.
pub fn terminal_script_states() -> Vec<State> {
    let mut v: Vec<State> = State::ALL
        .into_iter()
        .filter(|s| terminal_script(*s, &BusinessProfile::default()).is_some())
        .collect();
    v.sort_by_key(|s| s.as_str());
    v
}

/// A line spoken straight to TTS, identified as in the conformance events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Canned {
    /// The first line of every call.
    Greeting,
    /// Spoken while `book_service` runs.
    FillerBookingCheck,
    /// The per-call turn limit was reached.
    TurnLimitPerCall,
    /// The per-state turn limit was reached.
    TurnLimitPerState,
    /// The canned script of a terminal state.
    Terminal(State),
    /// The one-off scoped wrap-up reply (its text comes from the LLM).
    ScopedReply,
    /// Asked after the caller has been silent for a while.
    IdlePrompt,
    /// Asked when the caller stays silent after [`Canned::IdlePrompt`]:
    /// other words, so the same line is never said twice in a row.
    IdlePromptAgain,
    /// Said before hanging up on a caller who stayed silent.
    IdleGoodbye,
    /// The caller spoke but speech recognition made out no words (its
    /// watchdog gave up waiting): ask them to say it again.
    NotHeard,
    /// Said when the reply is late (the dead-air budget, issue 24): one of
    /// [`FILLERS`], by index, never the same one twice in a row.
    Filler(u8),
    /// Said when the server must end a live call (it is shutting down).
    /// `settled`: the call already ended in a booking or a promised
    /// callback, so no new promise is made.
    ShuttingDown { settled: bool },
    /// Said when the caller can no longer be heard (speech recognition is
    /// lost); `settled` as for [`Canned::ShuttingDown`].
    SpeechLost { settled: bool },
    /// Said (by the telephone network, before any pipeline) to a caller
    /// the server cannot take: every line is busy, or it is shutting down.
    LinesBusy,
}

/// Short acknowledgements said while a late reply is on its way.
pub const FILLERS: [&str; 3] = ["One moment.", "Let me check that.", "Just a second."];

impl Canned {
    /// The id used in events and logs: `greeting`, `filler:booking_check`,
    /// `turn_limit:per_call`, `turn_limit:per_state`,
    /// `canned_terminal:<state>`, `scoped_reply`.
    pub fn id(&self) -> String {
        match self {
            Canned::Greeting => "greeting".to_string(),
            Canned::FillerBookingCheck => "filler:booking_check".to_string(),
            Canned::TurnLimitPerCall => "turn_limit:per_call".to_string(),
            Canned::TurnLimitPerState => "turn_limit:per_state".to_string(),
            Canned::Terminal(s) => format!("canned_terminal:{}", s.as_str()),
            Canned::ScopedReply => "scoped_reply".to_string(),
            Canned::IdlePrompt => "idle:prompt".to_string(),
            Canned::IdlePromptAgain => "idle:prompt_again".to_string(),
            Canned::IdleGoodbye => "idle:goodbye".to_string(),
            Canned::NotHeard => "not_heard".to_string(),
            Canned::Filler(n) => format!("filler:{n}"),
            Canned::ShuttingDown { settled: false } => "server_end:shutdown".to_string(),
            Canned::ShuttingDown { settled: true } => "server_end:shutdown:settled".to_string(),
            Canned::SpeechLost { settled: false } => "server_end:speech_lost".to_string(),
            Canned::SpeechLost { settled: true } => "server_end:speech_lost:settled".to_string(),
            Canned::LinesBusy => "lines_busy".to_string(),
        }
    }

    /// Parse an id produced by [`Canned::id`].
    pub fn from_id(id: &str) -> Option<Canned> {
        Some(match id {
            "greeting" => Canned::Greeting,
            "filler:booking_check" => Canned::FillerBookingCheck,
            "turn_limit:per_call" => Canned::TurnLimitPerCall,
            "turn_limit:per_state" => Canned::TurnLimitPerState,
            "scoped_reply" => Canned::ScopedReply,
            "idle:prompt" => Canned::IdlePrompt,
            "idle:prompt_again" => Canned::IdlePromptAgain,
            "idle:goodbye" => Canned::IdleGoodbye,
            "not_heard" => Canned::NotHeard,
            "server_end:shutdown" => Canned::ShuttingDown { settled: false },
            "server_end:shutdown:settled" => Canned::ShuttingDown { settled: true },
            "server_end:speech_lost" => Canned::SpeechLost { settled: false },
            "server_end:speech_lost:settled" => Canned::SpeechLost { settled: true },
            "lines_busy" => Canned::LinesBusy,
            other if other.starts_with("filler:") => {
                let n: u8 = other.strip_prefix("filler:")?.parse().ok()?;
                (usize::from(n) < FILLERS.len()).then_some(Canned::Filler(n))?
            }
            other => Canned::Terminal(other.strip_prefix("canned_terminal:")?.parse().ok()?),
        })
    }

    /// The words to speak. `ScopedReply` (LLM text) and states without a
    /// script give "".
    pub fn text(&self, profile: &BusinessProfile) -> String {
        match self {
            Canned::Greeting => profile.greeting_line(),
            Canned::FillerBookingCheck => "Okay, give me just a moment while I check.".to_string(),
            Canned::TurnLimitPerCall => "I'm sorry this is taking so long. I'll have someone \
from the team call you back to take care of it."
                .to_string(),
            Canned::TurnLimitPerState => "Let me have someone from the team call you back \
to sort this out."
                .to_string(),
            Canned::Terminal(s) => terminal_script(*s, profile).unwrap_or_default(),
            Canned::ScopedReply => String::new(),
            Canned::IdlePrompt => "Are you still there?".to_string(),
            Canned::IdlePromptAgain => {
                "I can't hear anything on the line. If you're still there, please say something."
                    .to_string()
            }
            Canned::NotHeard => "Sorry, I didn't catch that. Could you say that again?".to_string(),
            Canned::Filler(n) => FILLERS[usize::from(*n) % FILLERS.len()].to_string(),
            Canned::IdleGoodbye => format!(
                "I haven't heard anything, so I'll let you go. Call {} back anytime. Goodbye!",
                profile.company_name
            ),
            Canned::ShuttingDown { settled } => {
                let company = &profile.company_name;
                if *settled {
                    format!(
                        "I'm sorry, I have to end our call now. Thank you for calling {company}. \
                         Goodbye."
                    )
                } else {
                    format!(
                        "I'm sorry, I have to end our call now. Someone from {company} will call \
                         you back shortly to finish up. Goodbye."
                    )
                }
            }
            Canned::LinesBusy => format!(
                "Thanks for calling {}. All of our lines are busy right now. We will call you \
                 back shortly. Goodbye.",
                profile.company_name
            ),
            Canned::SpeechLost { settled } => {
                let company = &profile.company_name;
                if *settled {
                    format!(
                        "I'm sorry, I'm having trouble hearing you on this line. Thank you for \
                         calling {company}. Goodbye."
                    )
                } else {
                    format!(
                        "I'm sorry, I'm having trouble hearing you on this line. Someone from \
                         {company} will call you back shortly at this number. Goodbye."
                    )
                }
            }
        }
    }
}

/// The system prompt of the one-off wrap-up reply in terminal routing
/// (SPEC §5.6): at most one sentence, no scheduling talk, no service help.
pub fn scoped_reply_prompt(profile: &BusinessProfile) -> String {
    format!(
        "You are closing out a phone call for {company}. Reply to the caller's last words in one \
short, friendly sentence at most. Do not talk about scheduling, appointments, availability, \
booking or what happens next, and do not offer help with their heating or cooling problem. \
If there is nothing to answer, just acknowledge them kindly.",
        company = profile.company_name
    )
}

/// Whether a scoped reply may be spoken: false if it contains any
/// BOOKING_LANGUAGE word (whole word, case-insensitive).
pub fn passes_booking_filter(reply: &str) -> bool {
    let lower = reply.to_lowercase();
    !crate::keywords::match_any_lower(&lower, BOOKING_LANGUAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> BusinessProfile {
        BusinessProfile::default()
    }

    fn session(json: serde_json::Value) -> Session {
        serde_json::from_value(json).unwrap()
    }

    fn appt() -> Session {
        session(serde_json::json!({
            "has_appointment": true,
            "appointment_date": "2026-02-20",
            "appointment_time": "10:00 AM"
        }))
    }

    #[test]
    fn appointment_gating() {
        // prompt.appointment_in_manage_booking / _visible_callback / _lookup / _follow_up
        for st in [
            State::ManageBooking,
            State::Callback,
            State::Lookup,
            State::FollowUp,
        ] {
            let sp = system_prompt(st, &appt(), &p());
            assert!(sp.contains("2026-02-20"), "{st}");
            assert!(sp.contains("10:00 AM"), "{st}");
        }
        // prompt.appointment_hidden_urgency / _pre_confirm / _discovery / _confirm
        for st in [
            State::Urgency,
            State::PreConfirm,
            State::Discovery,
            State::Confirm,
        ] {
            let sp = system_prompt(st, &appt(), &p());
            assert!(!sp.contains("2026-02-20"), "{st}");
            assert!(!sp.contains("10:00 AM"), "{st}");
        }
    }

    #[test]
    fn confirm_injects_message() {
        // prompt.confirm_injects_message
        let s = session(serde_json::json!({
            "booking_confirmed": true,
            "confirmation_message": "Appointment confirmed for Wednesday, February 25 at 3:00 PM"
        }));
        let sp = system_prompt(State::Confirm, &s, &p());
        assert!(sp.contains("Wednesday, February 25 at 3:00 PM"));
        assert!(sp.contains("BOOKING CONFIRMED:"));
        // Without a message there is no marker.
        let sp = system_prompt(State::Confirm, &Session::default(), &p());
        assert!(!sp.contains("BOOKING CONFIRMED:"));
    }

    #[test]
    fn booking_result_only_in_confirm() {
        // prompt.context_confirm_has_booking / prompt.context_booking_lacks_booking
        let s = session(serde_json::json!({
            "customer_name": "Jonas",
            "confirmation_message": "Appointment confirmed for Monday, February 24 at 2:00 PM"
        }));
        assert!(known_info_block(State::Confirm, &s).contains("Monday, February 24 at 2:00 PM"));
        assert!(!known_info_block(State::Booking, &s).contains("Monday, February 24"));
    }

    #[test]
    fn full_order() {
        // prompt.context_full_order
        let s = session(serde_json::json!({
            "customer_name": "Jonas", "problem_description": "AC out",
            "service_address": "1 Elm St", "zip_code": "78701", "has_appointment": true,
            "appointment_date": "Thursday", "appointment_time": "3 PM", "preferred_time": "ASAP",
            "urgency_tier": "urgent", "caller_known": true, "callback_promise": "yesterday",
            "lead_type": "high_ticket"
        }));
        let b = known_info_block(State::Callback, &s);
        assert!(b.starts_with("KNOWN INFO:"));
        assert_eq!(b.split('\n').count(), 11, "{b}");
        let mut at = 0;
        for needle in [
            "Jonas",
            "AC out",
            "1 Elm St",
            "78701",
            "Thursday",
            "3 PM",
            "ASAP",
            "urgent",
            "Returning",
            "yesterday",
            "HIGH-TICKET",
        ] {
            let pos = b[at..].find(needle).unwrap_or_else(|| panic!("{needle}"));
            at += pos + needle.len();
        }
    }

    #[test]
    fn routine_hidden_and_empty_block() {
        // prompt.context_routine_hidden
        let s = session(serde_json::json!({"urgency_tier": "routine", "customer_name": "A"}));
        assert!(!known_info_block(State::Urgency, &s).contains("Urgency"));
        let empty = Session::default();
        assert_eq!(known_info_block(State::Welcome, &empty), "");
        let sp = system_prompt(State::Welcome, &empty, &p());
        assert!(!sp.contains("KNOWN INFO:"));
        assert!(!sp.contains("\n\n\n"));
        let sp = system_prompt(State::Urgency, &s, &p());
        assert!(sp.contains("\n\nKNOWN INFO:\n- Caller's name: A\n\nRIGHT NOW"));
    }

    #[test]
    fn advisory_prose_checks() {
        let w = system_prompt(State::Welcome, &Session::default(), &p());
        for n in [
            "ACE Cooling",
            "BOOKING FIREWALL",
            "Mirror",
            "blowing warm air",
        ] {
            assert!(w.contains(n), "{n}");
        }
        let b = system_prompt(State::Booking, &Session::default(), &p());
        assert!(b.contains("NEVER") && b.contains("confirmed"));
        let pc = system_prompt(State::PreConfirm, &Session::default(), &p());
        assert!(pc.contains("NEVER") && pc.contains("approval"));
        let sf = system_prompt(State::Safety, &Session::default(), &p());
        assert!(sf.contains("RETRACTED"));
    }

    #[test]
    fn profile_drives_business_facts() {
        let prof = BusinessProfile {
            company_name: "Polar Air".into(),
            city: "Denver, Colorado".into(),
            service_area_zip_prefixes: vec!["802".into()],
            diagnostic_price: 120,
            business_days: vec!["mon".into(), "tue".into()],
            ..BusinessProfile::default()
        };
        let sp = system_prompt(State::NonService, &Session::default(), &prof);
        assert!(sp.contains("Polar Air") && sp.contains("802") && sp.contains("$120"));
        assert!(sp.contains("Monday, Tuesday"));
        assert!(!sp.contains("ACE") && !sp.contains("787") && !sp.contains("$89"));
    }

    #[test]
    fn all_states_have_long_prompts() {
        // system_prompt_all_states_min_length
        for st in State::ALL {
            assert!(
                system_prompt(st, &Session::default(), &p()).len() > 500,
                "{st}"
            );
        }
    }

    #[test]
    fn terminal_scripts() {
        // sm.terminal.callback_script / booking_failed_script / script_states
        let cb = terminal_script(State::Callback, &p()).unwrap();
        assert!(cb.contains("call you back") && cb.contains("best"));
        assert!(!terminal_script(State::BookingFailed, &p())
            .unwrap()
            .is_empty());
        let se = terminal_script(State::SafetyExit, &p()).unwrap();
        assert!(se.contains("911") && se.contains("light switches"));
        assert!(terminal_script(State::Confirm, &p()).is_none());
        assert!(terminal_script(State::UrgencyCallback, &p()).is_none());
        let names: Vec<&str> = terminal_script_states()
            .iter()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(names, ["booking_failed", "callback", "safety_exit"]);
    }

    #[test]
    fn canned_ids_and_text() {
        let all = [
            (Canned::Greeting, "greeting"),
            (Canned::FillerBookingCheck, "filler:booking_check"),
            (Canned::TurnLimitPerCall, "turn_limit:per_call"),
            (Canned::TurnLimitPerState, "turn_limit:per_state"),
            (
                Canned::Terminal(State::SafetyExit),
                "canned_terminal:safety_exit",
            ),
            (Canned::ScopedReply, "scoped_reply"),
        ];
        for (c, id) in all {
            assert_eq!(c.id(), id);
            assert_eq!(Canned::from_id(id), Some(c));
        }
        assert_eq!(Canned::from_id("canned_terminal:nowhere"), None);
        assert!(Canned::Greeting.text(&p()).contains("ACE Cooling"));
        assert_eq!(Canned::ScopedReply.text(&p()), "");
        for c in [
            Canned::FillerBookingCheck,
            Canned::TurnLimitPerCall,
            Canned::TurnLimitPerState,
            Canned::Terminal(State::Callback),
        ] {
            assert!(!c.text(&p()).is_empty());
        }
    }

    #[test]
    fn booking_filter() {
        assert!(passes_booking_filter("Thanks so much, take care!"));
        assert!(passes_booking_filter(""));
        assert!(passes_booking_filter("That's what the booklet says.")); // not whole word
        assert!(passes_booking_filter("We'll reopen that later"));
        assert!(!passes_booking_filter("Your APPOINTMENT is set."));
        assert!(!passes_booking_filter("I can book that."));
        assert!(!passes_booking_filter("We're open late."));
        assert!(!passes_booking_filter("I'll send a tech out."));
        assert!(!passes_booking_filter("Nothing available, sorry"));
        assert!(!passes_booking_filter("Let's schedule."));
        assert!(passes_booking_filter("Scheduling is done by the office")); // whole word only
        assert!(passes_booking_filter("ünïcode 🙂 \u{0} ok"));
        let p = scoped_reply_prompt(&BusinessProfile::default());
        assert!(p.contains("ACE Cooling") && p.contains("one"));
    }
}
