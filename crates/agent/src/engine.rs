//! The conversation engine: the sans-IO orchestrator of one call
//! (SPEC §5 with DECISIONS D-1 … D-13 and D-16).
//!
//! The engine owns the session, the state machine and the LLM context. It
//! never performs I/O: the async shell feeds it [`Input`]s (transcripts, tool
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
    callback_script, passes_booking_filter, persona, system_prompt_after, terminal_follow_up,
    Canned, FILLERS,
};
use crate::responder::{ChatMessage, ChatRole};
use crate::session::{HistoryMessage, Role, Session, TranscriptEntry};
use crate::state::{State, Tool};
use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use serde_json::Value;
use std::collections::VecDeque;

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
    /// A message the LLM side added to the context: usually the assistant's
    /// reply (logged as an agent line at the next capture), but any role
    /// enters the context as given; only assistant messages become agent
    /// lines.
    ContextMessage(ChatMessage),
    /// Log assistant messages added since the last capture as agent lines.
    CaptureAgentResponses,
    /// The caller cut off the agent line `said`; they heard `heard` (may be
    /// empty). The transcript line and the LLM context keep only what was
    /// heard; the line is marked interrupted. A line cut off before a word
    /// was heard is dropped, and is no agent reply for turn counting.
    AgentInterrupted {
        said: String,
        heard: String,
    },
    /// The end-of-call capture (same as [`Input::CaptureAgentResponses`]).
    FlushTranscript,
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
    session.transcript_log.push(TranscriptEntry::agent(
        Canned::LinesBusy.text(profile),
        now,
        State::Callback,
    ));
    session
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
    /// Queue a canned line for speech (no LLM).
    Speak { canned: Canned, text: String },
    /// Run an LLM turn: the caller's `text` is the last user message of
    /// [`Engine::llm_messages`].
    ToLlm { text: String },
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

/// The conversation engine of one call. See the module docs.
pub struct Engine<P: Policy = StateMachine> {
    policy: P,
    profile: BusinessProfile,
    /// The system prompt's first part, written once ([`persona`]).
    persona: String,
    config: EngineConfig,
    session: Session,
    context: Vec<ChatMessage>,
    cursor: usize,
    buffer: Option<Buffer>,
    turn: Option<Turn>,
    queued: VecDeque<String>,
    hangup: Option<Hangup>,
    ended: bool,
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
        let persona = persona(&profile);
        let prompt = system_prompt_after(&persona, session.state, &session, &profile);
        Engine {
            policy,
            profile,
            persona,
            config,
            session,
            context: vec![ChatMessage {
                role: ChatRole::System,
                content: prompt,
            }],
            cursor: 1,
            buffer: None,
            turn: None,
            queued: VecDeque::new(),
            hangup: None,
            ended: false,
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

    /// Replace the LLM context (element 0 is the system prompt); the capture
    /// cursor restarts after the system message.
    pub fn set_context(&mut self, messages: Vec<ChatMessage>) {
        self.context = messages;
        if self.context.is_empty() {
            self.context.push(ChatMessage {
                role: ChatRole::System,
                content: String::new(),
            });
        }
        self.cursor = 1;
    }

    pub fn session(&self) -> &Session {
        &self.session
    }
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }
    pub fn into_session(self) -> Session {
        self.session
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
    /// The LLM context: the system prompt, then the conversation.
    pub fn llm_messages(&self) -> &[ChatMessage] {
        &self.context
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
                let nothing = text.trim().is_empty();
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
            Input::ContextMessage(m) => {
                if m.role == ChatRole::Assistant {
                    self.filler_at = None;
                }
                self.context.push(m)
            }
            Input::CaptureAgentResponses | Input::FlushTranscript => self.capture(now),
            Input::AgentInterrupted { said, heard } => self.agent_interrupted(&said, &heard),
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

    fn timer(&mut self, timer: Timer, now: f64, out: &mut Vec<Effect>) {
        match timer {
            Timer::Debounce => {
                let due = self
                    .buffer
                    .as_ref()
                    .is_some_and(|b| now + EPS >= b.deadline);
                if due && self.turn.is_none() && !self.ended {
                    self.flush(now, out);
                }
            }
            Timer::Idle => {
                let due = self.idle_at.is_some_and(|at| now + EPS >= at);
                if due && self.idle_allowed() && self.terminal_said == Some(State::SafetyExit) {
                    // The household was told to leave: no "are you still
                    // there?" — the call ends once the script has played
                    // and the line stays quiet.
                    self.idle_at = None;
                    self.end_call(out);
                } else if due && self.idle_allowed() && self.hearing() {
                    // The caller spoke and no words came for it in a whole
                    // idle wait (the recogniser fell behind or lost them):
                    // they are there; ask them to say it again, once.
                    self.idle_at = None;
                    (self.speaking, self.owed) = (false, 0);
                    self.speak(Canned::NotHeard, now, out);
                } else if due && self.idle_allowed() {
                    self.idle_at = None;
                    self.idle_prompts += 1;
                    if self.idle_prompts > self.config.idle_max_prompts {
                        self.session.caller_silent = true;
                        self.speak(Canned::IdleGoodbye, now, out);
                        self.request_hangup(now, out);
                    } else if self.idle_prompts % 2 == 1 {
                        self.speak(Canned::IdlePrompt, now, out);
                    } else {
                        // Other words: never the same line twice in a row.
                        self.speak(Canned::IdlePromptAgain, now, out);
                    }
                }
            }
            Timer::Filler => {
                let due = self.filler_at.is_some_and(|at| now + EPS >= at);
                // Post-tool buffering (SPEC §5.5) counts too: it is
                // silence on the line. The flush arms it again for the
                // wait on the reply.
                if due && !self.ended && self.hangup.is_none() {
                    self.filler_at = None;
                    let n = self.fillers % FILLERS.len() as u8;
                    self.fillers = self.fillers.wrapping_add(1);
                    self.speak(Canned::Filler(n), now, out);
                }
            }
            Timer::HangupGrace | Timer::HangupCeiling => {
                let due = self.hangup.is_some_and(|h| {
                    h.grace_at.is_some_and(|g| now + EPS >= g) || now + EPS >= h.ceiling_at
                });
                if due && !self.ended {
                    self.end_call(out);
                }
            }
        }
    }

    // ---- utterances -------------------------------------------------------

    /// SPEC §5.2 steps 1–3, then the turn.
    fn utterance(&mut self, raw: &str, now: f64, out: &mut Vec<Effect>) {
        self.idle_at = None;
        self.idle_prompts = 0;
        self.capture(now);
        let text = raw.trim().to_string();
        self.session.conversation_history.push(HistoryMessage {
            role: "user".into(),
            content: text.clone(),
        });
        let state = self.session.state;
        self.session
            .transcript_log
            .push(TranscriptEntry::user(text.clone(), now, state));

        if let Some(buf) = self.buffer.as_mut() {
            buf.fragments.push(text);
            if now - buf.start + EPS >= self.config.buffer_max_s {
                self.flush(now, out);
            } else {
                buf.deadline = now + self.config.buffer_debounce_s;
                out.push(Effect::StartTimer {
                    timer: Timer::Debounce,
                    at: buf.deadline,
                });
            }
            return;
        }
        // The caller has waited since the line went quiet.
        let from = self.quiet_since.filter(|&q| q <= now).unwrap_or(now);
        self.start_turn(text.clone(), &text, from, now, out);
    }

    /// The dead-air budget (issue 24): a turn that waits on the LLM or a
    /// tool with nothing said yet gets a filler if its reply has not begun
    /// within `filler_after_s` of `from` ([`Input::ReplyStarted`] disarms
    /// it). A recogniser that was slow to give the words has used up part
    /// of that wait: the filler is then due
    /// [`FILLER_AT_THE_SOONEST_S`] after the words came (a reply whose
    /// first words come sooner needs none).
    fn arm_filler(&mut self, from: f64, now: f64, out: &mut Vec<Effect>) {
        if self.config.filler_after_s <= 0.0 || self.ended {
            return;
        }
        let at = (from + self.config.filler_after_s).max(now + FILLER_AT_THE_SOONEST_S);
        self.filler_at = Some(at);
        out.push(Effect::StartTimer {
            timer: Timer::Filler,
            at,
        });
    }

    /// Leave buffer mode. D-1: only the fragments that arrived while
    /// buffering are judged (once, joined); with none, no state-machine run
    /// happens and the LLM just receives the text.
    fn flush(&mut self, now: f64, out: &mut Vec<Effect>) {
        let Some(buf) = self.buffer.take() else {
            return;
        };
        let mut llm_text = buf.trigger;
        for f in &buf.fragments {
            llm_text.push(' ');
            llm_text.push_str(f);
        }
        if buf.fragments.is_empty() {
            self.forward_to_llm(llm_text, out);
            self.arm_filler(now, now, out);
            return;
        }
        let judged = buf.fragments.join(" ");
        // Buffering was a deliberate wait: the reply's counts from here.
        self.start_turn(llm_text, &judged, now, now, out);
    }

    /// Run the state machine on `judged` and carry the turn as far as it
    /// goes without an outside answer.
    /// `waited_from`: when the caller's wait for this reply began.
    fn start_turn(
        &mut self,
        llm_text: String,
        judged: &str,
        waited_from: f64,
        now: f64,
        out: &mut Vec<Effect>,
    ) {
        let from = out.len();
        self.turn_body(llm_text, judged, now, out);
        let new = &out[from..];
        let speaks = new.iter().any(|e| matches!(e, Effect::Speak { .. }));
        let waits = new
            .iter()
            .any(|e| matches!(e, Effect::ToLlm { .. } | Effect::CallTool(_)));
        if waits && !speaks {
            self.arm_filler(waited_from, now, out);
        }
    }

    /// The turn itself ([`Self::start_turn`] adds the filler's timer).
    fn turn_body(&mut self, llm_text: String, judged: &str, now: f64, out: &mut Vec<Effect>) {
        let start_state = self.session.state;
        let action = self.policy.process(&mut self.session, judged);
        let time_changed = self.session.heard.changed.iter().any(|c| c == "time");
        if self.session.state == State::PreConfirm
            && (start_state != State::PreConfirm
                || self.session.booking_time.is_empty()
                || time_changed)
        {
            // Fix the visit time now, so the read-back says what is booked.
            let s = &self.session;
            self.session.booking_time = resolve_booking_time(
                &s.preferred_time,
                &s.urgency_tier,
                self.local_now(now),
                &self.profile,
            );
        }
        self.note_state(start_state, out);
        self.turn = Some(Turn {
            llm_text,
            action,
            start_state,
            pre_tool_state: self.session.state,
            force_llm: false,
            stage: Stage::Speak,
            callback_attempted: false,
            alert_attempted: false,
            manage_attempted: false,
            awaiting: None,
        });
        self.advance(now, out);
    }

    /// Drive the current turn until it finishes or must wait.
    fn advance(&mut self, now: f64, out: &mut Vec<Effect>) {
        loop {
            let Some(turn) = self.turn.as_mut() else {
                return;
            };
            if turn.awaiting.is_some() {
                return;
            }
            match turn.stage {
                Stage::Speak => {
                    turn.stage = Stage::MachineTool;
                    if let Some(sp) = turn.action.speak {
                        let canned = match sp {
                            Speak::FillerBookingCheck => Canned::FillerBookingCheck,
                            Speak::TurnLimitPerCall => Canned::TurnLimitPerCall,
                            Speak::TurnLimitPerState => Canned::TurnLimitPerState,
                        };
                        self.speak(canned, now, out);
                    }
                }
                Stage::MachineTool => {
                    turn.stage = Stage::Obligations;
                    turn.pre_tool_state = self.session.state;
                    if let Some(tool) = turn.action.call_tool.filter(|t| *t != Tool::EndCall) {
                        self.call_tool(tool, now, out);
                        return;
                    }
                }
                Stage::Obligations => {
                    if let Some(tool) = self.next_obligation() {
                        self.call_tool(tool, now, out);
                        return;
                    }
                    let state = self.session.state;
                    if let Some(t) = self.turn.as_mut() {
                        t.force_llm = state != t.pre_tool_state;
                        t.stage = Stage::AfterTools;
                    }
                }
                Stage::AfterTools => {
                    self.refresh_system_prompt();
                    let state = self.session.state;
                    if state.runs_extraction() {
                        self.start_extraction(out);
                    }
                    if state.has_canned_script() {
                        if let Some(t) = self.turn.as_mut() {
                            t.stage = Stage::Terminal;
                        }
                        continue;
                    }
                    if let Some(turn) = self.turn.take() {
                        self.finish_turn(turn, now, out);
                    }
                }
                Stage::Terminal => {
                    if !self.session.terminal_reply_used {
                        self.session.terminal_reply_used = true;
                        turn.awaiting = Some(Awaiting::Scoped);
                        out.push(Effect::AskScopedReply {
                            user_text: turn.llm_text.clone(),
                        });
                        return;
                    }
                    self.finish_terminal(now, out);
                }
            }
        }
    }

    /// SPEC §5.2 steps 10–12 for a turn that is not terminal-routed.
    fn finish_turn(&mut self, turn: Turn, now: f64, out: &mut Vec<Effect>) {
        if turn.action.end_call {
            if turn.action.needs_llm || turn.force_llm {
                self.forward_to_llm(turn.llm_text, out);
                self.request_hangup(now, out);
            } else {
                self.end_call(out);
            }
        } else if turn.force_llm {
            self.enter_buffer(turn.llm_text, now, out);
        } else if turn.action.needs_llm {
            self.forward_to_llm(turn.llm_text, out);
        } else {
            self.context.push(ChatMessage {
                role: ChatRole::User,
                content: turn.llm_text.clone(),
            });
            out.push(Effect::ContextUserAppend {
                text: turn.llm_text,
            });
        }
    }

    /// The tool a turn still owes the caller (D-4, D-5, D-7), if any.
    fn next_obligation(&self) -> Option<Tool> {
        let turn = self.turn.as_ref()?;
        let s = &self.session;
        if s.state == State::UrgencyCallback
            && s.is_high_ticket()
            && !s.lead_alert_sent
            && !turn.alert_attempted
        {
            return Some(Tool::SendSalesLeadAlert);
        }
        // A returning caller who asked after the appointment, or to move it
        // to a time they named, in their first words: done as soon as the
        // lookup finds it, not asked again.
        let asked_already = matches!(s.manage_action.as_str(), "status" | "cancel")
            || (s.manage_action == "reschedule" && !s.manage_time_hint.is_empty());
        if s.state == State::ManageBooking
            && turn.start_state != State::ManageBooking
            && asked_already
            && !turn.manage_attempted
        {
            return Some(Tool::ManageAppointment);
        }
        let promised = s.state.promises_callback()
            || (s.state == State::NonService
                && turn.start_state != State::NonService
                && matches!(s.callback_type.as_str(), "billing" | "warranty"));
        if promised
            && !s.callback_created
            && !s.callback_declined
            && s.callback_attempts < 2
            && !turn.callback_attempted
        {
            return Some(Tool::CreateCallback);
        }
        None
    }

    fn call_tool(&mut self, tool: Tool, now: f64, out: &mut Vec<Effect>) {
        let call = self.build_call(tool, now);
        if let ToolCall::ManageAppointment { new_time, .. } = &call {
            if !new_time.is_empty() {
                // Kept for the record, in case the answer does not say.
                self.session.rescheduled_to = crate::booking_time::say_time(new_time);
            }
        }
        if let Some(turn) = self.turn.as_mut() {
            match tool {
                Tool::CreateCallback => turn.callback_attempted = true,
                Tool::SendSalesLeadAlert => turn.alert_attempted = true,
                Tool::ManageAppointment => turn.manage_attempted = true,
                _ => {}
            }
            turn.awaiting = Some(Awaiting::Tool(tool));
        }
        out.push(Effect::CallTool(call));
    }

    fn tool_result(&mut self, result: Value, now: f64, out: &mut Vec<Effect>) {
        let Some(Awaiting::Tool(tool)) = self.turn.as_ref().and_then(|t| t.awaiting) else {
            tracing::warn!("tool result with no tool call pending; ignored");
            return;
        };
        let before = self.session.state;
        self.policy
            .apply_tool_result(&mut self.session, tool, &result);
        self.note_state(before, out);
        let state = self.session.state;
        self.session
            .transcript_log
            .push(TranscriptEntry::tool(tool.as_str(), result, now, state));
        if let Some(turn) = self.turn.as_mut() {
            turn.awaiting = None;
        }
        self.advance(now, out);
    }

    fn scoped_reply(&mut self, text: Option<String>, now: f64, out: &mut Vec<Effect>) {
        let waiting = self
            .turn
            .as_ref()
            .is_some_and(|t| t.awaiting == Some(Awaiting::Scoped));
        if !waiting {
            tracing::warn!("scoped reply with no request pending; ignored");
            return;
        }
        if let Some(reply) = text.map(|t| t.trim().to_string()) {
            if !reply.is_empty() && passes_booking_filter(&reply) {
                self.speak_text(Canned::ScopedReply, reply, now, out);
            }
        }
        if let Some(turn) = self.turn.as_mut() {
            turn.awaiting = None;
        }
        self.finish_terminal(now, out);
        self.advance(now, out);
    }

    /// Canned script of the terminal state, then the hang-up if asked for.
    fn finish_terminal(&mut self, now: f64, out: &mut Vec<Effect>) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        let state = self.session.state;
        if self.terminal_said == Some(State::SafetyExit)
            && state == State::SafetyExit
            && self.session.heard.question.is_none()
        {
            // The household was told to leave and asks nothing: no more
            // words keep them inside — the call ends now.
            self.end_call(out);
            return;
        }
        if self.terminal_said == Some(state) {
            // Said once; now answer the caller briefly (same canned id),
            // and never the same line twice in a row.
            let mut text = terminal_follow_up(state, &self.session, &self.profile, &turn.llm_text);
            let last = self
                .session
                .transcript_log
                .iter()
                .rev()
                .find(|e| e.role == crate::session::Role::Agent)
                .and_then(|e| e.content.as_deref());
            if last == Some(text.as_str()) {
                text = format!(
                    "Thanks for calling {} — goodbye.",
                    self.profile.company_name
                );
            }
            self.speak_text(Canned::Terminal(state), text, now, out);
        } else {
            self.terminal_said = Some(state);
            if state == State::Callback {
                let when = callback_window(self.local_now(now), &self.profile);
                let text = callback_script(&self.session, &self.profile, &when);
                self.speak_text(Canned::Terminal(state), text, now, out);
            } else {
                self.speak(Canned::Terminal(state), now, out);
            }
        }
        if turn.action.end_call {
            self.request_hangup(now, out);
        }
    }

    // ---- helpers ----------------------------------------------------------

    fn build_call(&self, tool: Tool, now: f64) -> ToolCall {
        let s = &self.session;
        let phone = s.phone_number.clone();
        let call_id = s.call_sid.clone();
        match tool {
            Tool::LookupCaller | Tool::EndCall => ToolCall::LookupCaller { phone, call_id },
            Tool::BookService => ToolCall::BookService {
                customer_name: s.customer_name.clone(),
                problem: s.problem_description.clone(),
                address: s.service_address.clone(),
                // The time read back in pre_confirm, exactly.
                preferred_time: if s.booking_time.is_empty() {
                    resolve_booking_time(
                        &s.preferred_time,
                        &s.urgency_tier,
                        self.local_now(now),
                        &self.profile,
                    )
                } else {
                    s.booking_time.clone()
                },
                phone,
                call_id,
            },
            Tool::CreateCallback => crate::backend::callback_request(s),
            Tool::SendSalesLeadAlert => ToolCall::SendSalesLeadAlert {
                phone,
                reason: s.problem_description.clone(),
                call_id,
            },
            Tool::ManageAppointment => {
                let action = if s.manage_action.is_empty() {
                    "status".to_string()
                } else {
                    s.manage_action.clone()
                };
                let new_time = if action == "reschedule" && !s.manage_time_hint.is_empty() {
                    resolve_booking_time(
                        &s.manage_time_hint,
                        "routine",
                        self.local_now(now),
                        &self.profile,
                    )
                } else {
                    String::new()
                };
                ToolCall::ManageAppointment {
                    action,
                    phone,
                    booking_uid: s.appointment_uid.clone(),
                    reason: s.problem_description.clone(),
                    new_time,
                    call_id,
                }
            }
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

    fn speak(&mut self, canned: Canned, now: f64, out: &mut Vec<Effect>) {
        let text = canned.text(&self.profile);
        self.speak_text(canned, text, now, out);
    }

    /// Queue a canned line: D-16 logs it as an agent line now; it also joins
    /// the LLM context (so the LLM knows what was said) without counting as
    /// an agent reply for turn counting.
    fn speak_text(&mut self, canned: Canned, text: String, now: f64, out: &mut Vec<Effect>) {
        self.idle_at = None;
        self.filler_at = None;
        self.capture(now);
        let state = self.session.state;
        self.session
            .transcript_log
            .push(TranscriptEntry::agent(text.clone(), now, state));
        self.context.push(ChatMessage {
            role: ChatRole::Assistant,
            content: text.clone(),
        });
        self.cursor = self.context.len();
        out.push(Effect::Speak { canned, text });
    }

    /// The server ends the call. Unless it already ended in a booking or a
    /// promised callback (or another terminal state), it becomes a
    /// callback: the state moves to `callback` (for service, unless a type
    /// was already set) and the caller is told someone will call back.
    /// Unless the line is cut at once, the caller hears why (a canned line,
    /// logged like every canned line; report what was heard of it with
    /// [`Input::AgentInterrupted`]); then the call ends. Whatever was
    /// pending (a turn, buffered words, a hang-up) is dropped.
    fn server_ending(&mut self, why: ServerEnd, now: f64, out: &mut Vec<Effect>) {
        let s = &mut self.session;
        let settled = s.booking_confirmed || s.state.promises_callback() || s.state.is_terminal();
        if !settled {
            let from = s.state;
            s.state = State::Callback;
            if s.callback_type.is_empty() {
                s.callback_type = "service".into();
            }
            out.push(Effect::StateChanged {
                from,
                to: State::Callback,
            });
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
        self.ended = true;
        out.push(Effect::EndCall);
    }

    fn forward_to_llm(&mut self, text: String, out: &mut Vec<Effect>) {
        self.idle_at = None;
        self.context.push(ChatMessage {
            role: ChatRole::User,
            content: text.clone(),
        });
        out.push(Effect::ToLlm { text });
    }

    fn enter_buffer(&mut self, trigger: String, now: f64, out: &mut Vec<Effect>) {
        let deadline = now + self.config.buffer_debounce_s;
        self.buffer = Some(Buffer {
            trigger,
            fragments: Vec::new(),
            start: now,
            deadline,
        });
        out.push(Effect::StartTimer {
            timer: Timer::Debounce,
            at: deadline,
        });
    }

    /// The idle controller may act: nothing in flight, nothing pending.
    /// The caller is speaking, or words they said are still owed.
    fn hearing(&self) -> bool {
        self.speaking || self.owed > 0
    }

    /// A final result (or "not heard") came: for the oldest stretch of
    /// speech still owed, else for the speech going on (a final before
    /// the voice activity's stop).
    fn words_came(&mut self) {
        if self.owed > 0 {
            self.owed -= 1;
        } else {
            self.speaking = false;
        }
    }

    fn idle_allowed(&self) -> bool {
        self.config.idle_prompt_s > 0.0
            && !self.ended
            && self.turn.is_none()
            && self.buffer.is_none()
            && self.hangup.is_none()
            && self.queued.is_empty()
    }

    /// The bot finished speaking: start waiting for the caller.
    fn arm_idle(&mut self, now: f64, out: &mut Vec<Effect>) {
        if !self.idle_allowed() {
            return;
        }
        // After the safety script the wait is only long enough for one
        // short question; then the call ends (see the idle timer).
        let wait = if self.terminal_said == Some(State::SafetyExit) {
            self.config.idle_prompt_s.min(SAFETY_EXIT_WAIT_S)
        } else {
            self.config.idle_prompt_s
        };
        let at = now + wait;
        self.idle_at = Some(at);
        out.push(Effect::StartTimer {
            timer: Timer::Idle,
            at,
        });
    }

    fn request_hangup(&mut self, now: f64, out: &mut Vec<Effect>) {
        if self.hangup.is_some() || self.ended {
            return;
        }
        let ceiling_at = now + self.config.end_call_max_wait_s;
        self.hangup = Some(Hangup {
            grace_at: None,
            ceiling_at,
        });
        out.push(Effect::StartTimer {
            timer: Timer::HangupCeiling,
            at: ceiling_at,
        });
    }

    fn end_call(&mut self, out: &mut Vec<Effect>) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.hangup = None;
        self.buffer = None;
        out.push(Effect::EndCall);
    }

    fn start_extraction(&mut self, out: &mut Vec<Effect>) {
        let h = &self.session.conversation_history;
        let from = h.len().saturating_sub(10);
        out.push(Effect::StartExtraction {
            history: h[from..].to_vec(),
        });
    }

    fn refresh_system_prompt(&mut self) {
        let prompt = system_prompt_after(
            &self.persona,
            self.session.state,
            &self.session,
            &self.profile,
        );
        match self.context.first_mut() {
            Some(m) if m.role == ChatRole::System => m.content = prompt,
            _ => self.context.insert(
                0,
                ChatMessage {
                    role: ChatRole::System,
                    content: prompt,
                },
            ),
        }
    }

    fn note_state(&mut self, before: State, out: &mut Vec<Effect>) {
        let after = self.session.state;
        if after != before {
            out.push(Effect::StateChanged {
                from: before,
                to: after,
            });
        }
    }

    fn agent_interrupted(&mut self, said: &str, heard: &str) {
        let heard = heard.trim();
        if let Some(i) = self
            .context
            .iter()
            .rposition(|m| m.role == ChatRole::Assistant && m.content == said)
        {
            if heard.is_empty() {
                self.context.remove(i);
                if self.cursor > i {
                    self.cursor -= 1;
                }
            } else {
                self.context[i].content = heard.to_string();
            }
        }
        let log = &mut self.session.transcript_log;
        if let Some(i) = log
            .iter()
            .rposition(|e| e.role == Role::Agent && e.content.as_deref() == Some(said))
        {
            if heard.is_empty() {
                // Nothing was heard: no line, and no exchange (SPEC §3
                // counts a fragment as a new turn only after an agent reply
                // the caller got).
                log.remove(i);
                self.session.agent_has_responded = log
                    .iter()
                    .rev()
                    .take_while(|e| e.role != Role::User)
                    .any(|e| e.role == Role::Agent);
            } else {
                log[i].content = Some(heard.to_string());
                log[i].interrupted = true;
            }
        }
    }

    /// SPEC §5.3: log assistant messages added since the last capture.
    fn capture(&mut self, now: f64) {
        let start = self.cursor.min(self.context.len());
        for i in start..self.context.len() {
            let m = &self.context[i];
            if m.role == ChatRole::Assistant && !m.content.trim().is_empty() {
                let entry = TranscriptEntry::agent(m.content.clone(), now, self.session.state);
                self.session.transcript_log.push(entry);
                self.session.agent_has_responded = true;
            }
        }
        self.cursor = self.context.len().max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine_in(state: State) -> Engine {
        let session = Session {
            state,
            ..Session::new("+15125551234")
        };
        Engine::new(session, BusinessProfile::default(), EngineConfig::default())
    }

    fn idle_timer(effects: &[Effect]) -> Option<f64> {
        effects.iter().find_map(|e| match e {
            Effect::StartTimer {
                timer: Timer::Idle,
                at,
            } => Some(*at),
            _ => None,
        })
    }

    fn spoke(effects: &[Effect], canned: Canned) -> bool {
        effects
            .iter()
            .any(|e| matches!(e, Effect::Speak { canned: c, .. } if *c == canned))
    }

    #[test]
    fn not_heard_asks_again_unless_a_reply_is_on_its_way() {
        let mut e = engine_in(State::Discovery);
        let fx = e.handle(Input::NotHeard, 1.0);
        assert!(spoke(&fx, Canned::NotHeard), "{fx:?}");
        let last = e.session().transcript_log.last().unwrap();
        assert_eq!(
            last.content.as_deref(),
            Some("Sorry, I didn't catch that. Could you say that again?")
        );
        // A tool call is running for what the caller said: no re-ask.
        let mut e = engine_in(State::Welcome);
        let fx = e.handle(
            Input::Transcript {
                text: "my AC is broken".into(),
                is_final: true,
            },
            2.0,
        );
        assert!(
            fx.iter().any(|f| matches!(f, Effect::CallTool { .. })),
            "{fx:?}"
        );
        assert!(!spoke(&e.handle(Input::NotHeard, 2.1), Canned::NotHeard));
        assert_eq!(
            Canned::from_id(&Canned::NotHeard.id()),
            Some(Canned::NotHeard)
        );
    }

    /// Any role enters the LLM context; only assistant messages become
    /// agent lines at the capture.
    #[test]
    fn context_messages_of_any_role_enter_the_context() {
        let mut e = engine_in(State::Discovery);
        let before = e.llm_messages().len();
        for m in [
            ChatMessage::user("my AC is out"),
            ChatMessage::system("note from the operator"),
            ChatMessage {
                role: ChatRole::Tool,
                content: "{\"found\": false}".into(),
            },
            ChatMessage::assistant("Thanks, what's your name?"),
        ] {
            e.handle(Input::ContextMessage(m.clone()), 1.0);
            assert_eq!(e.llm_messages().last(), Some(&m));
        }
        assert_eq!(e.llm_messages().len(), before + 4);
        e.handle(Input::CaptureAgentResponses, 2.0);
        let agent: Vec<_> = e
            .session()
            .transcript_log
            .iter()
            .filter_map(|t| t.content.clone())
            .collect();
        assert_eq!(agent, vec!["Thanks, what's your name?".to_string()]);
    }

    #[test]
    fn silence_gets_prompts_then_a_goodbye_and_hang_up() {
        let mut e = engine_in(State::Confirm);
        let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.0)).unwrap();
        assert_eq!(at, 10.0);
        // An early (stale) expiry does nothing.
        assert!(e.handle(Input::TimerFired(Timer::Idle), 5.0).is_empty());
        let fx = e.handle(Input::TimerFired(Timer::Idle), 10.0);
        assert!(spoke(&fx, Canned::IdlePrompt));
        // The second prompt is worded differently: never the same line
        // twice in a row.
        let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 11.0)).unwrap();
        assert!(spoke(
            &e.handle(Input::TimerFired(Timer::Idle), at),
            Canned::IdlePromptAgain
        ));
        let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 22.0)).unwrap();
        assert!(!e.session().caller_silent, "two prompts: still waiting");
        let fx = e.handle(Input::TimerFired(Timer::Idle), at);
        assert!(spoke(&fx, Canned::IdleGoodbye));
        assert!(e.end_call_pending());
        // The record will say the caller stopped answering (issue 15).
        assert!(e.session().caller_silent);
        // The goodbye is heard in full, then the call ends (D-10).
        let fx = e.handle(Input::BotStoppedSpeaking, at + 3.0);
        assert!(idle_timer(&fx).is_none());
        let fx = e.handle(Input::TimerFired(Timer::HangupGrace), at + 3.5);
        assert_eq!(fx, vec![Effect::EndCall]);
        // Canned idle lines are not agent replies for turn counting.
        assert!(!e.session().agent_has_responded);
    }

    #[test]
    fn the_caller_speaking_resets_the_idle_count() {
        let mut e = engine_in(State::Confirm);
        e.handle(Input::BotStoppedSpeaking, 0.0);
        assert!(spoke(
            &e.handle(Input::TimerFired(Timer::Idle), 10.0),
            Canned::IdlePrompt
        ));
        e.handle(
            Input::Transcript {
                text: "sorry, yes, I'm here".into(),
                is_final: true,
            },
            11.0,
        );
        // The pending idle expiry from before the utterance is stale.
        assert!(e.handle(Input::TimerFired(Timer::Idle), 20.0).is_empty());
        // Counting starts again: a first prompt, a second, no goodbye.
        for (t, line) in [(30.0, Canned::IdlePrompt), (50.0, Canned::IdlePromptAgain)] {
            let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, t)).unwrap();
            assert!(spoke(&e.handle(Input::TimerFired(Timer::Idle), at), line));
        }
        assert!(!e.end_call_pending());
    }

    #[test]
    fn never_idle_during_a_tool_call_or_buffering() {
        let mut e = engine_in(State::Welcome);
        let fx = e.handle(
            Input::Transcript {
                text: "my AC is broken".into(),
                is_final: true,
            },
            0.0,
        );
        assert!(matches!(fx.last(), Some(Effect::CallTool(_))));
        assert!(idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.1)).is_none());
        e.handle(
            Input::ToolResult {
                result: serde_json::json!({"found": false}),
            },
            0.5,
        );
        assert!(e.buffer_mode());
        assert!(idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.6)).is_none());
    }

    /// Issue 24 row 7: a caller who spoke while the agent's line was still
    /// playing, and whose words the recogniser is slow to deliver, is never
    /// asked whether they are there.
    #[test]
    fn never_are_you_still_there_while_words_are_being_recognised() {
        let mut e = engine_in(State::Discovery);
        e.handle(Input::CallerSpeaking, 0.0);
        // The agent's line ends after the caller started: the idle wait is
        // armed, but the caller's words are still coming.
        e.handle(Input::BotStoppedSpeaking, 0.5);
        let at = idle_timer(&e.handle(Input::CallerStopped, 2.0)).unwrap();
        assert_eq!(at, 12.0, "the wait counts from the end of the speech");
        // The earlier arming is stale now.
        assert!(e.handle(Input::TimerFired(Timer::Idle), 10.5).is_empty());
        // The words are in before the wait ends: an ordinary turn.
        let fx = e.handle(
            Input::Transcript {
                text: "my name is Dana Fields".into(),
                is_final: true,
            },
            9.0,
        );
        assert!(
            fx.iter().any(|f| matches!(f, Effect::ToLlm { .. })),
            "{fx:?}"
        );
        assert!(e.handle(Input::TimerFired(Timer::Idle), 12.0).is_empty());

        // The recogniser falls behind a whole wait: "didn't catch that",
        // once; then the ordinary idle prompts.
        let mut e = engine_in(State::Discovery);
        e.handle(Input::BotStoppedSpeaking, 0.0);
        e.handle(Input::CallerSpeaking, 1.0);
        let at = idle_timer(&e.handle(Input::CallerStopped, 3.0)).unwrap();
        let fx = e.handle(Input::TimerFired(Timer::Idle), at);
        assert!(spoke(&fx, Canned::NotHeard), "{fx:?}");
        assert!(!spoke(&fx, Canned::IdlePrompt));
        let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, at + 3.0)).unwrap();
        let fx = e.handle(Input::TimerFired(Timer::Idle), at);
        assert!(spoke(&fx, Canned::IdlePrompt), "{fx:?}");
        // The late words still count when they come.
        let fx = e.handle(
            Input::Transcript {
                text: "it's blowing warm air".into(),
                is_final: true,
            },
            at + 1.0,
        );
        assert!(
            fx.iter().any(|f| matches!(f, Effect::ToLlm { .. })),
            "{fx:?}"
        );
    }

    /// A sound with no words (the recogniser says so with an empty final
    /// result) restarts the idle wait; silence between results does not.
    #[test]
    fn a_cough_restarts_the_idle_wait_and_empty_results_alone_do_not() {
        let mut e = engine_in(State::Discovery);
        assert_eq!(
            idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.0)),
            Some(10.0)
        );
        let empty = || Input::Transcript {
            text: String::new(),
            is_final: true,
        };
        // A vendor's empty result in silence: the wait goes on.
        assert!(idle_timer(&e.handle(empty(), 4.0)).is_none());
        assert!(spoke(
            &e.handle(Input::TimerFired(Timer::Idle), 10.0),
            Canned::IdlePrompt
        ));
        e.handle(Input::BotStoppedSpeaking, 12.0);
        e.handle(Input::CallerSpeaking, 13.0);
        e.handle(Input::CallerStopped, 13.5);
        assert_eq!(idle_timer(&e.handle(empty(), 14.0)), Some(24.0));
        assert!(spoke(
            &e.handle(Input::TimerFired(Timer::Idle), 24.0),
            Canned::IdlePromptAgain
        ));
    }

    /// A recogniser several utterances behind (Whisper under load): the
    /// first stretch's words come and are answered while the second's are
    /// still owed — the wait after the answer ends in "didn't catch that",
    /// not "are you still there?". An interim result of speech that already
    /// stopped does not make the caller "speaking" again.
    #[test]
    fn words_still_owed_after_an_answer_are_never_taken_for_silence() {
        let mut e = engine_in(State::Discovery);
        e.handle(Input::CallerSpeaking, 0.0);
        e.handle(Input::CallerStopped, 1.0);
        e.handle(Input::CallerSpeaking, 1.5);
        e.handle(Input::CallerStopped, 2.5);
        let final_ = |text: &str| Input::Transcript {
            text: text.into(),
            is_final: true,
        };
        let fx = e.handle(final_("my name is"), 4.0);
        assert!(fx.iter().any(|f| matches!(f, Effect::ToLlm { .. })));
        e.handle(Input::ContextMessage(ChatMessage::assistant("Okay.")), 4.5);
        e.handle(Input::CaptureAgentResponses, 4.5);
        let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 6.0)).unwrap();
        let fx = e.handle(Input::TimerFired(Timer::Idle), at);
        assert!(spoke(&fx, Canned::NotHeard), "{fx:?}");
        assert!(!spoke(&fx, Canned::IdlePrompt));

        // The second stretch's words came: nothing is owed; a late interim
        // result of that speech changes nothing; silence is silence.
        let mut e = engine_in(State::Discovery);
        e.handle(Input::CallerSpeaking, 0.0);
        e.handle(Input::CallerStopped, 1.0);
        e.handle(Input::CallerSpeaking, 1.5);
        e.handle(Input::CallerStopped, 2.5);
        e.handle(final_(""), 3.0);
        e.handle(Input::CallerWords, 3.1);
        e.handle(final_("it's blowing warm air"), 3.5);
        e.handle(Input::ContextMessage(ChatMessage::assistant("Okay.")), 4.0);
        e.handle(Input::CaptureAgentResponses, 4.0);
        let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 6.0)).unwrap();
        let fx = e.handle(Input::TimerFired(Timer::Idle), at);
        assert!(spoke(&fx, Canned::IdlePrompt), "{fx:?}");
    }

    fn filler_timer(effects: &[Effect]) -> Option<f64> {
        effects.iter().find_map(|e| match e {
            Effect::StartTimer {
                timer: Timer::Filler,
                at,
            } => Some(*at),
            _ => None,
        })
    }

    /// An engine at the problem question with this configuration.
    fn discovery_with_filler(config: EngineConfig) -> Engine<StateMachine> {
        let session = Session {
            state: State::Discovery,
            ..Session::new("+15125551234")
        };
        Engine::new(session, BusinessProfile::default(), config)
    }

    /// The recogniser's final words.
    fn final_words(text: &str) -> Input {
        Input::Transcript {
            text: text.into(),
            is_final: true,
        }
    }

    /// Issue 24: a late reply is preceded by a filler, never the same one
    /// twice in a row; a reply that has begun gets none.
    #[test]
    fn a_late_reply_gets_a_filler_and_a_prompt_one_does_not() {
        let config = EngineConfig {
            filler_after_s: 1.0,
            ..EngineConfig::default()
        };
        let mut e = discovery_with_filler(config);
        let said = final_words;
        let mut fillers = Vec::new();
        for (i, line) in ["my name is Dana Fields", "it's blowing warm air", "yes"]
            .iter()
            .enumerate()
        {
            let t = 10.0 * i as f64;
            let fx = e.handle(said(line), t);
            let at = filler_timer(&fx).unwrap_or_else(|| panic!("{fx:?}"));
            assert_eq!(at, t + 1.0);
            if i == 1 {
                // The LLM's first words came in time: no filler.
                e.handle(Input::ReplyStarted, t + 0.6);
                assert!(e.handle(Input::TimerFired(Timer::Filler), at).is_empty());
            } else {
                let fx = e.handle(Input::TimerFired(Timer::Filler), at);
                let Some(Effect::Speak { canned, text }) = fx.first() else {
                    panic!("{fx:?}");
                };
                assert!(matches!(canned, Canned::Filler(_)));
                fillers.push(text.clone());
            }
            e.handle(
                Input::ContextMessage(ChatMessage::assistant("Okay.")),
                t + 2.0,
            );
            e.handle(Input::CaptureAgentResponses, t + 2.0);
        }
        assert_eq!(fillers.len(), 2);
        assert_ne!(
            fillers[0], fillers[1],
            "never the same filler twice in a row"
        );
        // Post-tool buffering is silence too: the filler comes during it,
        // and the wait for the reply counts again from the flush.
        let session = Session::new("+15125551234");
        let mut e = Engine::new(session, BusinessProfile::default(), config);
        let fx = e.handle(said("my AC is broken"), 0.0);
        assert!(
            fx.iter().any(|f| matches!(f, Effect::CallTool(_))),
            "{fx:?}"
        );
        e.handle(
            Input::ToolResult {
                result: serde_json::json!({"found": false}),
            },
            0.2,
        );
        assert!(e.buffer_mode());
        let fx = e.handle(Input::TimerFired(Timer::Filler), 1.0);
        assert!(
            fx.iter().any(|f| matches!(
                f,
                Effect::Speak {
                    canned: Canned::Filler(_),
                    ..
                }
            )),
            "{fx:?}"
        );
        let fx = e.handle(Input::TimerFired(Timer::Debounce), 1.7);
        assert!(
            fx.iter().any(|f| matches!(f, Effect::ToLlm { .. })),
            "{fx:?}"
        );
        assert_eq!(filler_timer(&fx), Some(2.7), "{fx:?}");
        // Off by default (text chats and simulations).
        let mut e = engine_in(State::Discovery);
        assert!(filler_timer(&e.handle(said("my name is Dana Fields"), 0.0)).is_none());
    }

    /// Issue 24: the filler's wait counts from when the caller stopped
    /// speaking, not from when the recogniser gave their words; words that
    /// came back later than the wait get the filler at once.
    /// The LLM's reply ("Okay.") is in: the turn has its answer.
    fn agent_answered(e: &mut Engine, at: f64) {
        e.handle(Input::ContextMessage(ChatMessage::assistant("Okay.")), at);
        e.handle(Input::CaptureAgentResponses, at);
    }

    #[test]
    fn the_filler_counts_from_the_end_of_the_callers_speech() {
        let mut e = discovery_with_filler(EngineConfig {
            filler_after_s: 0.7,
            ..EngineConfig::default()
        });
        let said = final_words;
        e.handle(Input::CallerSpeaking, 0.0);
        e.handle(Input::CallerStopped, 2.0);
        let fx = e.handle(said("my name is Dana Fields"), 2.3);
        assert_eq!(filler_timer(&fx), Some(2.7), "{fx:?}");
        agent_answered(&mut e, 3.0);
        e.handle(Input::BotStoppedSpeaking, 4.0);
        // A slow recogniser: the words come 1.5 s after the speech ended.
        e.handle(Input::CallerSpeaking, 5.0);
        e.handle(Input::CallerStopped, 6.0);
        let fx = e.handle(said("it's blowing warm air"), 7.5);
        let at = 7.5 + FILLER_AT_THE_SOONEST_S;
        assert_eq!(filler_timer(&fx), Some(at), "{fx:?}");
        let fx = e.handle(Input::TimerFired(Timer::Filler), at);
        assert!(
            matches!(
                fx.first(),
                Some(Effect::Speak {
                    canned: Canned::Filler(_),
                    ..
                })
            ),
            "{fx:?}"
        );
        agent_answered(&mut e, 8.0);
        // The agent is still heard after the caller stopped (an earlier
        // line playing out): the wait counts from its last audio.
        e.handle(Input::CallerSpeaking, 10.0);
        e.handle(Input::CallerStopped, 11.0);
        e.handle(Input::BotSpeaking, 11.5);
        let fx = e.handle(said("yes"), 11.6);
        assert_eq!(filler_timer(&fx), Some(11.5 + 0.7), "{fx:?}");
    }

    #[test]
    fn idle_can_be_switched_off() {
        let config = EngineConfig {
            idle_prompt_s: 0.0,
            ..EngineConfig::default()
        };
        let mut e = Engine::new(Session::new("+1512"), BusinessProfile::default(), config);
        assert!(idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.0)).is_none());
    }

    #[test]
    fn the_server_ending_a_call_promises_a_callback_unless_one_is_settled() {
        let mut e = engine_in(State::Discovery);
        let fx = e.handle(
            Input::ServerEnding(ServerEnd::ShuttingDown { politely: true }),
            5.0,
        );
        assert!(
            fx.contains(&Effect::StateChanged {
                from: State::Discovery,
                to: State::Callback
            }),
            "{fx:?}"
        );
        assert!(
            spoke(&fx, Canned::ShuttingDown { settled: false }),
            "{fx:?}"
        );
        assert_eq!(fx.last(), Some(&Effect::EndCall));
        assert_eq!(e.session().state, State::Callback);
        assert_eq!(e.session().callback_type, "service");
        assert!(e.is_ended());
        let said = e.session().transcript_log.last().unwrap();
        assert!(
            said.content
                .as_deref()
                .unwrap()
                .contains("will call you back"),
            "{said:?}"
        );
        // Nothing of it was heard: no line in the transcript.
        let text = said.content.clone().unwrap();
        e.handle(
            Input::AgentInterrupted {
                said: text.clone(),
                heard: String::new(),
            },
            6.0,
        );
        assert!(e
            .session()
            .transcript_log
            .iter()
            .all(|l| l.content.as_deref() != Some(text.as_str())));

        // A booked call keeps its state and promises nothing new.
        let mut e = engine_in(State::Confirm);
        e.session_mut().booking_confirmed = true;
        let fx = e.handle(Input::ServerEnding(ServerEnd::SpeechLost), 5.0);
        assert!(!fx.iter().any(|f| matches!(f, Effect::StateChanged { .. })));
        assert!(spoke(&fx, Canned::SpeechLost { settled: true }), "{fx:?}");
        assert_eq!(e.session().state, State::Confirm);

        // Cut at once: the callback, no line.
        let mut e = engine_in(State::Discovery);
        let fx = e.handle(
            Input::ServerEnding(ServerEnd::ShuttingDown { politely: false }),
            5.0,
        );
        assert!(
            !fx.iter().any(|f| matches!(f, Effect::Speak { .. })),
            "{fx:?}"
        );
        assert_eq!(e.session().state, State::Callback);
        let away = turned_away(
            &BusinessProfile::default(),
            "+15125551234".into(),
            "CA1-busy".into(),
            1.0,
        );
        assert_eq!(away.state, State::Callback);
        assert_eq!(away.callback_type, "service");
        assert!(away.transcript_log[0]
            .content
            .as_deref()
            .unwrap()
            .contains("lines are busy"));
        for c in [
            Canned::LinesBusy,
            Canned::ShuttingDown { settled: false },
            Canned::ShuttingDown { settled: true },
            Canned::SpeechLost { settled: false },
            Canned::SpeechLost { settled: true },
        ] {
            assert_eq!(Canned::from_id(&c.id()), Some(c));
        }
    }
}
