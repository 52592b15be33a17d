//! The conversation engine: the sans-IO orchestrator of one call
//! (SPEC §5 with DECISIONS D-1 … D-13 and D-16).
//!
//! The engine owns the session, the state machine and the call's event log
//! ([`history::EventLog`]): everything said on the call is recorded there
//! once, and the LLM context ([`Engine::llm_messages`]) and the call's
//! transcript ([`Engine::transcript`]) are projections of it (see
//! `said.rs`). The session's copy of the transcript
//! (`Session::transcript_log`) is written when the call finishes, not kept
//! twice while it runs. It allocates the ids of the agent's lines ([`MsgId`]), so a
//! transport reports what was heard of a line by id. It never performs I/O: the async shell feeds it [`Input`]s (transcripts, tool
//! results, timer expiries, "the bot finished speaking", …) together with the
//! current time, and carries out the [`Effect`]s it returns (call a tool,
//! speak a canned line, run an LLM turn, start a timer, hang up). Time is a
//! plain `f64` of Unix seconds, so tests and `calllock replay` run whole calls
//! in virtual time.
//!
//! One turn may need several backend answers in a row (a booking, then the
//! callback promised on entering `booking_failed`). The engine therefore
//! suspends a turn while it waits for [`Input::ToolResult`] or
//! [`Input::ScopedReply`]; caller utterances that arrive meanwhile are queued
//! and handled, in order, once the turn is done (a tool call blocks later
//! utterances, as in the reference).
//!
//! What differs from the reference (see DECISIONS.md):
//! - D-1: a post-tool buffer flush judges only the fragments that arrived
//!   while buffering; the LLM still receives every fragment as one message.
//! - D-2: a flushed text takes the same path as any utterance (speak, tools,
//!   terminal routing, end-call).
//! - D-4/D-5/D-7: entering a state that promises a call back creates the
//!   callback in the same turn (high-ticket leads: the sales alert first).
//! - D-9/D-10: hang-ups wait for the bot to finish its last line (+ grace),
//!   with a hard ceiling.
//! - D-16: canned lines are written to the transcript when spoken.

use crate::backend::ToolCall;
use crate::booking_time::{callback_window, resolve_booking_time};
use crate::extract::{apply_extraction, ExtractedFields};
use crate::machine::{Action, Policy, Speak, StateMachine};
use crate::profile::BusinessProfile;
use crate::prompts::{
    after_persona, callback_script, join_system_prompt, passes_booking_filter, persona,
    terminal_follow_up, Canned, FILLERS,
};
use crate::responder::{ChatMessage, ChatRole};
use crate::session::{HistoryMessage, Role, Session, TranscriptEntry};
use crate::state::{State, Tool};
use chrono::{DateTime, FixedOffset, TimeZone, Utc};
pub use history::{EventLog, MsgId};
use serde_json::Value;
use std::collections::VecDeque;

mod said;
mod server_end;
#[cfg(test)]
mod tests;
mod timers;
mod transcript;
mod turn;

pub use said::llm_context_of;
pub use server_end::{cut_off_by_the_server, turned_away};
pub use transcript::{caller_lines, log_of_transcript, transcript_of, transcript_since};

/// Timing knobs of the engine (seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineConfig {
    /// Quiet time that ends post-tool buffering (SPEC §5.5).
    pub buffer_debounce_s: f64,
    /// Longest post-tool buffering before a forced flush.
    pub buffer_max_s: f64,
    /// Pause after the bot's last line before hanging up (D-10).
    pub end_call_grace_s: f64,
    /// Hang up this long after the request even if speech never ends (D-10).
    pub end_call_max_wait_s: f64,
    /// Silence after the agent's last line before "are you still there?"
    /// (0 disables the idle controller).
    pub idle_prompt_s: f64,
    /// Unanswered idle prompts before the agent says goodbye and hangs up.
    pub idle_max_prompts: u32,
    /// The dead-air budget's filler (issue 24): a caller turn whose reply
    /// has not begun this long after the caller stopped speaking (or the
    /// words came in, without a VAD) hears "One moment."
    /// (0 = off: text chats and simulations, which have no dead air).
    pub filler_after_s: f64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            buffer_debounce_s: 1.5,
            buffer_max_s: 5.0,
            end_call_grace_s: 0.5,
            end_call_max_wait_s: 10.0,
            idle_prompt_s: 10.0,
            idle_max_prompts: 2,
            filler_after_s: 0.0,
        }
    }
}

/// Quiet after the safety script before the agent hangs up: time for one
/// short question, not for "are you still there?" (issue 23).
pub const SAFETY_EXIT_WAIT_S: f64 = 4.0;

/// The engine's timers. The shell starts them on [`Effect::StartTimer`] and
/// reports expiry with [`Input::TimerFired`]; restarting a timer replaces it,
/// and stale expiries are ignored by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Timer {
    /// Post-tool debounce.
    Debounce,
    /// Grace after the bot's last line before hanging up.
    HangupGrace,
    /// Hard ceiling on a pending hang-up.
    HangupCeiling,
    /// The caller has been silent since the agent's last line.
    Idle,
    /// The reply to the caller's turn is late: say a filler.
    Filler,
}

/// Something that happened to the call.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The caller's media stream connected: speak the greeting.
    ClientConnected,
    /// The caller spoke, but speech recognition produced no words for it
    /// (its watchdog gave up): ask them to say it again — unless a reply
    /// is already on its way or the call is ending.
    NotHeard,
    /// A speech-to-text result. Interim results pass through untouched.
    Transcript {
        text: String,
        is_final: bool,
    },
    /// The answer to the pending [`Effect::CallTool`].
    ToolResult {
        result: Value,
    },
    /// The answer to the pending [`Effect::AskScopedReply`] (`None` = error
    /// or timeout).
    ScopedReply {
        text: Option<String>,
    },
    /// The LLM's reply to [`Effect::ToLlm`] `reply`, complete: it joins the
    /// context and is written into the transcript at once (a capture).
    LlmReplied {
        msg_id: MsgId,
        text: String,
    },
    /// A message added to the context from outside the engine (a test, a
    /// seeded conversation): any role enters the context as given; an
    /// assistant message is an agent line, written into the transcript at
    /// the next capture.
    ContextMessage(ChatMessage),
    /// Log assistant messages added since the last capture as agent lines.
    CaptureAgentResponses,
    /// The caller cut off the agent line `msg_id`; they heard `heard` (may
    /// be empty). The transcript line and the LLM context keep only what was
    /// heard; the line is marked interrupted. A line cut off before a word
    /// was heard is dropped, and is no agent reply for turn counting.
    AgentInterrupted {
        msg_id: MsgId,
        heard: String,
    },
    /// The first audio of the line `msg_id` reached the caller (recorded).
    SpeechStarted {
        msg_id: MsgId,
    },
    /// The line `msg_id` was played to its end (recorded).
    SpeechFinished {
        msg_id: MsgId,
    },
    /// The model asked to call a tool; tools are chosen by the state
    /// machine, never by the LLM, so the call is recorded and refused.
    LlmToolRefused {
        name: String,
        args: String,
    },
    /// The end-of-call capture (same as [`Input::CaptureAgentResponses`]).
    FlushTranscript,
    /// The call's pipeline stopped: the end-of-call capture, and a tool
    /// still running is cancelled.
    CallFinished,
    /// The audio output finished playing everything queued so far.
    BotStoppedSpeaking,
    /// The caller is speaking (voice activity; no text yet). A post-tool buffer waits for quiet: its debounce restarts
    /// (still capped by `buffer_max_s`), and the idle prompt is off until
    /// the words are in.
    CallerSpeaking,
    /// An interim transcript: words are coming. Like [`Input::CallerSpeaking`],
    /// except that words of speech that already stopped (owed a final
    /// result) do not make the caller "speaking" again.
    CallerWords,
    /// The caller stopped speaking (voice activity ended); their words may
    /// still be being recognised. The idle wait counts from here, and if no
    /// words (and no word of "nothing") come by its end, the caller hears
    /// "Sorry, I didn't catch that" — never "are you still there?".
    CallerStopped,
    /// The audio output is still playing (progress). A pending hang-up's
    /// ceiling (D-10) counts from the last sign of progress: it exists so a
    /// stuck TTS cannot keep a call open, not to cut off a long last line.
    BotSpeaking,
    TimerFired(Timer),
    /// A background extraction finished.
    ExtractionDone {
        fields: ExtractedFields,
    },
    /// The caller hung up (media stream closed).
    CallerHungUp,
    /// The reply to the caller's turn has begun (the LLM's first words, or
    /// a new line's first audio): no filler is needed.
    ReplyStarted,
    /// The server, not the conversation, ends the call (see
    /// [`ServerEnd`]): the transport reports it; what happens to the call
    /// is decided here.
    ServerEnding(ServerEnd),
}

/// Why the server ends a live call that neither side ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerEnd {
    /// The server is shutting down. `politely`: the caller hears why and
    /// what happens next before the line is cut; else it is cut at once.
    ShuttingDown { politely: bool },
    /// The caller can no longer be heard (speech recognition is lost).
    SpeechLost,
}

/// Something the shell must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Queue a canned line for speech (no LLM); report what became of it
    /// by `msg_id`.
    Speak {
        canned: Canned,
        text: String,
        msg_id: MsgId,
    },
    /// Run an LLM turn: the caller's `text` is the last user message of
    /// [`Engine::llm_messages`]; answer with [`Input::LlmReplied`] under
    /// `reply` (the id of the line to come).
    ToLlm { text: String, reply: MsgId },
    /// A transcription frame passed through untouched (blank finals,
    /// interims); not a turn.
    PassThrough { text: String, is_final: bool },
    /// The caller's text was added to the LLM context without a reply.
    ContextUserAppend { text: String },
    /// Call a backend tool; answer with [`Input::ToolResult`].
    CallTool(ToolCall),
    /// Ask the responder for the one scoped terminal reply; answer with
    /// [`Input::ScopedReply`].
    AskScopedReply { user_text: String },
    /// Start background field extraction over these caller lines (the last
    /// ten); answer with [`Input::ExtractionDone`] whenever it finishes.
    StartExtraction { history: Vec<HistoryMessage> },
    /// (Re)start a timer to fire at `at` (Unix seconds).
    StartTimer { timer: Timer, at: f64 },
    /// The state changed (for display and logs).
    StateChanged { from: State, to: State },
    /// Hang up now.
    EndCall,
}

/// Post-tool buffering (SPEC §5.5, D-1).
#[derive(Debug, Clone)]
struct Buffer {
    /// The utterance that triggered the tool; already judged (D-1).
    trigger: String,
    /// Fragments that arrived while buffering.
    fragments: Vec<String>,
    start: f64,
    deadline: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Speak,
    MachineTool,
    Obligations,
    AfterTools,
    Terminal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Awaiting {
    Tool(Tool),
    Scoped,
}

/// A turn in progress (possibly suspended on a backend answer).
#[derive(Debug, Clone)]
struct Turn {
    /// What the LLM receives for this turn.
    llm_text: String,
    action: Action,
    /// State when the turn started (before the state machine ran).
    start_state: State,
    /// State before the machine's tool ran.
    pre_tool_state: State,
    force_llm: bool,
    stage: Stage,
    callback_attempted: bool,
    alert_attempted: bool,
    manage_attempted: bool,
    awaiting: Option<Awaiting>,
}

#[derive(Debug, Clone, Copy)]
struct Hangup {
    grace_at: Option<f64>,
    ceiling_at: f64,
}

/// Epsilon for comparing timer deadlines.
const EPS: f64 = 1e-9;

/// The soonest a filler follows the caller's words: a reply whose first
/// words come within this needs none, and a filler said in the same
/// instant as the reply's first words could be queued behind them.
const FILLER_AT_THE_SOONEST_S: f64 = 0.2;

/// The LLM's system prompt as an engine keeps it.
enum SystemPrompt {
    /// The persona (shared by the business's calls), then this part, which
    /// changes as the call moves on ([`after_persona`]); joined only when
    /// a request is made, so a call does not hold a copy of the persona.
    AfterPersona(String),
    /// A prompt given whole ([`Engine::seed_context`]).
    Given(String),
}

/// The conversation engine of one call. See the module docs.
pub struct Engine<P: Policy = StateMachine> {
    policy: P,
    profile: BusinessProfile,
    /// The system prompt's first part, written once ([`persona`]).
    persona: std::sync::Arc<str>,
    config: EngineConfig,
    session: Session,
    /// The LLM's system prompt (refreshed as the call moves on; not part
    /// of the conversation, so not in the log).
    system: SystemPrompt,
    /// Everything said on the call (see the module docs).
    log: EventLog,
    /// Log entries before this one have been captured (SPEC §5.3).
    capture_from: usize,
    /// The tool call the engine waits on, as logged.
    open_tool: Option<history::ToolCallId>,
    buffer: Option<Buffer>,
    turn: Option<Turn>,
    queued: VecDeque<String>,
    hangup: Option<Hangup>,
    ended: bool,
    /// The line is gone ([`Input::CallFinished`]): the session's transcript
    /// is written, and every later entry keeps it up to date.
    finished: bool,
    /// When the idle controller fires next (None = not armed).
    idle_at: Option<f64>,
    /// Idle prompts said since the caller last spoke.
    idle_prompts: u32,
    /// When a filler is said if the reply has not begun (None = not armed).
    filler_at: Option<f64>,
    /// Fillers said this call (the next one's words).
    fillers: u8,
    /// Since when the line has been quiet for the caller: their speech
    /// stopped (or, if later, the agent was last heard). The
    /// dead-air budget counts from here, not from when the words came back
    /// from the recogniser. None while the caller speaks.
    quiet_since: Option<f64>,
    /// The caller is speaking (voice activity or an interim transcript,
    /// and no stop or final result since).
    speaking: bool,
    /// Stretches of the caller's speech that ended and whose final result
    /// (words, nothing, or "not heard") has not come: a recogniser under
    /// load can be several behind. While the caller speaks or words are
    /// owed, the idle controller must not ask whether they are there.
    owed: u32,
    /// The terminal state whose script was said; later replies there get a
    /// short closing instead of the script word for word.
    terminal_said: Option<State>,
}

/// `text` as one shared copy: every call of a business has the same
/// persona (3 KB), so the engines of a server's live calls share it
/// rather than keep one each. Copies no call holds any more are
/// forgotten.
fn shared_persona(text: String) -> std::sync::Arc<str> {
    use std::sync::{Arc, Mutex, Weak};
    static LIVE: Mutex<Vec<Weak<str>>> = Mutex::new(Vec::new());
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    live.retain(|w| w.strong_count() > 0);
    if let Some(shared) = live.iter().filter_map(Weak::upgrade).find(|s| **s == *text) {
        return shared;
    }
    let shared: Arc<str> = text.into();
    live.push(Arc::downgrade(&shared));
    shared
}

impl Engine<StateMachine> {
    /// An engine with the CallLock state machine.
    pub fn new(session: Session, profile: BusinessProfile, config: EngineConfig) -> Self {
        let machine = StateMachine::new(profile.clone());
        Engine::with_policy(machine, session, profile, config)
    }
}

impl<P: Policy> Engine<P> {
    /// An engine with a substitute state machine (tests).
    pub fn with_policy(
        policy: P,
        session: Session,
        profile: BusinessProfile,
        config: EngineConfig,
    ) -> Self {
        let persona = shared_persona(persona(&profile));
        let prompt = SystemPrompt::AfterPersona(after_persona(session.state, &session, &profile));
        // A session that comes with a transcript (carried over) starts the
        // log with it, so the projection keeps it.
        let log = log_of_transcript(&session.transcript_log);
        let mut session = session;
        session.transcript_log = Vec::new();
        Engine {
            policy,
            profile,
            persona,
            config,
            session,
            system: prompt,
            capture_from: log.len(),
            log,
            open_tool: None,
            buffer: None,
            turn: None,
            queued: VecDeque::new(),
            hangup: None,
            ended: false,
            finished: false,
            idle_at: None,
            idle_prompts: 0,
            speaking: false,
            owed: 0,
            filler_at: None,
            fillers: 0,
            quiet_since: None,
            terminal_said: None,
        }
    }

    /// Seed the LLM context of a call that has not started: a leading
    /// system message replaces the system prompt; the rest join the log as
    /// given (assistant messages as agent lines not yet captured).
    pub fn seed_context(&mut self, messages: Vec<ChatMessage>, now: f64) {
        let mut messages = messages.into_iter().peekable();
        if let Some(m) = messages.next_if(|m| m.role == ChatRole::System) {
            self.system = SystemPrompt::Given(m.content);
        }
        for m in messages {
            self.context_message(m, now);
        }
    }

    /// The call's session. While the call runs its `transcript_log` is
    /// empty (the log holds every line once: [`Engine::transcript`]); it is
    /// written when the call finishes ([`Input::CallFinished`]).
    pub fn session(&self) -> &Session {
        &self.session
    }
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }
    /// The call's transcript so far: the log's projection, in the
    /// session's words (`Session::transcript_log` once the call finished).
    pub fn transcript(&self) -> Vec<TranscriptEntry> {
        transcript_of(&self.log)
    }
    /// The session, its transcript written.
    pub fn into_session(self) -> Session {
        self.into_parts().0
    }
    /// The session (its transcript written) and the log it is the
    /// projection of.
    pub fn into_parts(mut self) -> (Session, EventLog) {
        if !self.finished {
            self.session.transcript_log = transcript_of(&self.log);
        }
        (self.session, self.log)
    }
    pub fn profile(&self) -> &BusinessProfile {
        &self.profile
    }
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }
    pub fn state(&self) -> State {
        self.session.state
    }
    /// A turn is suspended on a backend answer (a tool result or a scoped
    /// reply): a caller utterance now is queued until that turn is done.
    pub fn is_suspended(&self) -> bool {
        self.turn.is_some() && !self.ended
    }
    /// The LLM context: the system prompt, then the conversation as the
    /// log tells it.
    pub fn llm_messages(&self) -> Vec<ChatMessage> {
        let joined;
        let system = match &self.system {
            SystemPrompt::AfterPersona(after) => {
                joined = join_system_prompt(&self.persona, after);
                &joined
            }
            SystemPrompt::Given(whole) => whole,
        };
        said::llm_context_of(system, &self.log)
    }
    /// Everything said on the call, as recorded.
    pub fn log(&self) -> &EventLog {
        &self.log
    }
    /// Post-tool buffering is active.
    pub fn buffer_mode(&self) -> bool {
        self.buffer.is_some()
    }
    /// A hang-up has been requested and has not happened yet.
    pub fn end_call_pending(&self) -> bool {
        self.hangup.is_some() && !self.ended
    }
    /// The call has been hung up (by us or by the caller).
    pub fn is_ended(&self) -> bool {
        self.ended
    }
    /// A turn is suspended waiting for a backend or scoped-reply answer.
    pub fn is_busy(&self) -> bool {
        self.turn.is_some()
    }
    /// What the engine is waiting for, if anything.
    pub fn awaiting_tool(&self) -> Option<Tool> {
        match self.turn.as_ref()?.awaiting? {
            Awaiting::Tool(t) => Some(t),
            Awaiting::Scoped => None,
        }
    }

    /// Handle one input at time `now` (Unix seconds); returns what to do.
    pub fn handle(&mut self, input: Input, now: f64) -> Vec<Effect> {
        let mut out = Vec::new();
        self.handle_into(input, now, &mut out);
        out
    }

    /// [`handle`](Self::handle) appending to a caller-owned vector.
    pub fn handle_into(&mut self, input: Input, now: f64, out: &mut Vec<Effect>) {
        let input_is_vad = matches!(input, Input::CallerSpeaking);
        match input {
            Input::ClientConnected => {
                if !self.ended {
                    self.speak(Canned::Greeting, now, out);
                }
            }
            Input::NotHeard => {
                self.words_came();
                if !self.ended && self.turn.is_none() && self.buffer.is_none() {
                    self.speak(Canned::NotHeard, now, out);
                }
            }
            Input::Transcript { text, is_final } => {
                // Only control characters is no words either.
                let nothing = crate::printable::is_blank(&text);
                if is_final {
                    let was_hearing = self.hearing();
                    self.words_came();
                    if nothing && was_hearing {
                        // A breath, a cough: the recogniser is done and
                        // heard no words. The idle wait starts again.
                        self.arm_idle(now, out);
                    }
                }
                if !is_final || nothing {
                    out.push(Effect::PassThrough { text, is_final });
                } else if self.ended {
                    tracing::debug!("utterance after hang-up ignored");
                } else if self.turn.is_some() {
                    self.queued.push_back(text);
                } else {
                    self.utterance(&text, now, out);
                }
            }
            Input::ToolResult { result } => self.tool_result(result, now, out),
            Input::ScopedReply { text } => self.scoped_reply(text, now, out),
            Input::LlmReplied { msg_id, text } => self.llm_replied(msg_id, text, now),
            Input::ContextMessage(m) => {
                if m.role == ChatRole::Assistant {
                    self.filler_at = None;
                }
                self.context_message(m, now)
            }
            Input::CaptureAgentResponses | Input::FlushTranscript => self.capture(now),
            Input::CallFinished => self.call_finished(now),
            Input::AgentInterrupted { msg_id, heard } => {
                self.agent_interrupted(msg_id, &heard, now)
            }
            Input::SpeechStarted { msg_id } => {
                self.record(now, history::Event::SpeechStarted { msg_id })
            }
            Input::SpeechFinished { msg_id } => {
                self.record(now, history::Event::SpeechFinished { msg_id })
            }
            Input::LlmToolRefused { name, args } => self.tool_refused(name, args, now),
            Input::CallerSpeaking | Input::CallerWords => {
                self.idle_at = None;
                if input_is_vad || self.owed == 0 {
                    self.speaking = true;
                    self.quiet_since = None;
                }
                if let Some(b) = self.buffer.as_mut() {
                    let deadline = (now + self.config.buffer_debounce_s)
                        .min(b.start + self.config.buffer_max_s);
                    if deadline > b.deadline {
                        b.deadline = deadline;
                        out.push(Effect::StartTimer {
                            timer: Timer::Debounce,
                            at: deadline,
                        });
                    }
                }
            }
            Input::CallerStopped => {
                if std::mem::take(&mut self.speaking) {
                    self.owed += 1;
                    self.quiet_since = Some(now);
                    self.arm_idle(now, out);
                }
            }
            Input::BotSpeaking => {
                // The line is not quiet while the agent is heard: a caller
                // who stopped speaking waits from the agent's last audio.
                // The filler stays armed (a line from before the turn, the
                // greeting say, may still be playing out): only a new
                // line's first audio ([`Input::ReplyStarted`]) disarms it.
                if self.quiet_since.is_some() {
                    self.quiet_since = Some(now);
                }
                if let Some(h) = self.hangup.as_mut() {
                    if h.grace_at.is_none() && !self.ended {
                        h.ceiling_at = now + self.config.end_call_max_wait_s;
                        out.push(Effect::StartTimer {
                            timer: Timer::HangupCeiling,
                            at: h.ceiling_at,
                        });
                    }
                }
            }
            Input::BotStoppedSpeaking => {
                if self.quiet_since.is_some() {
                    self.quiet_since = Some(now);
                }
                self.arm_idle(now, out);
                if let Some(h) = self.hangup.as_mut() {
                    if h.grace_at.is_none() && !self.ended {
                        let at = now + self.config.end_call_grace_s;
                        h.grace_at = Some(at);
                        out.push(Effect::StartTimer {
                            timer: Timer::HangupGrace,
                            at,
                        });
                    }
                }
            }
            Input::TimerFired(timer) => self.timer(timer, now, out),
            Input::ExtractionDone { fields } => apply_extraction(&mut self.session, &fields),
            Input::ReplyStarted => self.filler_at = None,
            Input::CallerHungUp => {
                if !self.ended {
                    self.record(
                        now,
                        history::Event::CallEnded {
                            reason: "caller".into(),
                        },
                    );
                }
                self.ended = true;
                self.hangup = None;
                self.buffer = None;
            }
            Input::ServerEnding(why) => self.server_ending(why, now, out),
        }
        self.drain_queue(now, out);
    }

    fn drain_queue(&mut self, now: f64, out: &mut Vec<Effect>) {
        while self.turn.is_none() && !self.ended {
            let Some(text) = self.queued.pop_front() else {
                break;
            };
            self.utterance(&text, now, out);
        }
    }

    /// `now` as local wall-clock time of the business.
    pub fn local_now(&self, now: f64) -> DateTime<FixedOffset> {
        let secs = now.floor() as i64;
        let nanos = ((now - now.floor()) * 1e9) as u32;
        let utc = Utc
            .timestamp_opt(secs, nanos.min(999_999_999))
            .single()
            .unwrap_or_default();
        utc.with_timezone(&self.profile.tz()).fixed_offset()
    }
}

#[cfg(test)]
mod persona_tests {
    use super::*;

    #[test]
    fn the_calls_of_one_business_share_one_persona() {
        let profile = BusinessProfile::default();
        let a = shared_persona(persona(&profile));
        let b = shared_persona(persona(&profile));
        assert!(std::sync::Arc::ptr_eq(&a, &b), "one copy for both calls");
        let mut other = profile.clone();
        other.company_name = format!("{} East", other.company_name);
        let c = shared_persona(persona(&other));
        assert!(!std::sync::Arc::ptr_eq(&a, &c));
        assert_eq!(*c, persona(&other), "another business has its own");
    }
}
