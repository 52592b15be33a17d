//! The call driver: runs the sans-IO [`Engine`] against a backend and a
//! responder, with a model of time.
//!
//! Two clocks share one event loop:
//! - **virtual** (`demo`, `replay`, tests): events jump straight to their
//!   time, so a whole call runs in milliseconds and always the same way;
//! - **real** (`chat`): the loop sleeps until the next event or the next line
//!   the person types, whichever comes first.
//!
//! The driver models what a phone call adds around the engine: the
//! responder's latency, each agent line's speaking time (so hang-up after
//! speech, fragments and talk-over behave as on a real call), a backend
//! tool's latency, and a newer LLM turn superseding an older one still in
//! flight (the caller kept talking).

use super::outcome::{Ending, Outcome, ToolLog};
use agent::backend::{Backend, ToolCall};
use agent::engine::{Effect, Engine, Input, Timer};
use agent::prompts::Canned;
use agent::responder::{collect_reply, ExtractionRequest, Responder, ScopedRequest, TurnRequest};
use agent::session::Session;
use agent::state::{State, Tool};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// How the driver models time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub llm_latency_s: f64,
    pub tool_latency_s: f64,
    pub speech_chars_per_s: f64,
}

impl Timing {
    /// The `[sim]` timing of a configuration.
    pub fn of(cfg: &crate::config::Config) -> Self {
        Timing {
            llm_latency_s: cfg.sim.llm_latency_s,
            tool_latency_s: cfg.sim.tool_latency_s,
            speech_chars_per_s: cfg.sim.speech_chars_per_s,
        }
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            llm_latency_s: 0.6,
            tool_latency_s: 0.3,
            speech_chars_per_s: 15.0,
        }
    }
}

impl Timing {
    /// Seconds the agent needs to say `text`.
    pub fn speaking_time(&self, text: &str) -> f64 {
        (text.chars().count() as f64 / self.speech_chars_per_s.max(0.1)).max(0.4)
    }
}

/// When a scripted caller line is said.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum When {
    /// Seconds from the start of the call.
    At(f64),
    /// Seconds after the previous caller line.
    After(f64),
    /// A natural pause (3 s) after the agent's last line finished.
    Default,
}

/// One item of a caller script.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptItem {
    Caller {
        text: String,
        when: When,
    },
    /// The caller says nothing for this many seconds.
    Silence(f64),
    /// The next call of `tool` returns `result` instead of asking the backend.
    ToolResult {
        tool: Tool,
        result: Value,
    },
    /// The caller hangs up (when the agent is quiet).
    HangUp,
}

/// Something that happened, for display.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    Agent {
        text: String,
        state: State,
        canned: Option<String>,
    },
    Caller {
        text: String,
        state: State,
    },
    ToolCall(ToolCall),
    ToolResult {
        tool: Tool,
        result: Value,
        state: State,
    },
    StateChanged {
        from: State,
        to: State,
    },
    Ended(Ending),
}

/// Receives [`CallEvent`]s as they happen (`t` = seconds since call start).
pub trait Observer {
    fn on_event(&mut self, t: f64, event: &CallEvent);
    /// The call's log, after each handled event (for durable journals:
    /// what is new in it).
    fn on_log(&mut self, _log: &voice::history::EventLog) {}
    /// The session after each handled event (for durable journals).
    fn on_session(&mut self, _t: f64, _session: &Session) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {
    fn on_event(&mut self, _: f64, _: &CallEvent) {}
}

#[derive(Debug, Clone)]
enum Ev {
    Caller(String),
    CallerHangUp,
    SilenceOver,
    Timer(Timer),
    ToolDone(Value),
    ScopedDone(Option<String>),
    LlmDone {
        epoch: u64,
        msg_id: agent::engine::MsgId,
        text: String,
    },
    ExtractionDone(agent::extract::ExtractedFields),
    SpeechDone,
}

#[derive(Debug)]
struct Scheduled {
    at: f64,
    seq: u64,
    ev: Ev,
}
impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.total_cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

/// A call cannot run longer than this (virtual or real seconds).
pub const MAX_CALL_S: f64 = 3600.0;

/// Drives one call. See the module docs.
pub struct CallDriver<'o> {
    engine: Engine,
    backend: Arc<dyn Backend>,
    responder: Arc<dyn Responder>,
    timing: Timing,
    observer: &'o mut dyn Observer,
    start: f64,
    t: f64,
    seq: u64,
    queue: BinaryHeap<Scheduled>,
    speech_until: f64,
    llm_epoch: u64,
    llm_pending: bool,
    tool_pending: bool,
    scoped_pending: bool,
    overrides: HashMap<Tool, VecDeque<Value>>,
    /// Interactive calls: background work (extraction) reports here, so a
    /// slow vendor never holds up the conversation. `None` in virtual time
    /// (replay, demo), where everything runs inline and deterministically.
    background: Option<tokio::sync::mpsc::UnboundedSender<Ev>>,
    tools: Vec<ToolLog>,
    ended_by: Option<Ending>,
}

impl<'o> CallDriver<'o> {
    /// A driver for `engine`, starting at `start` (Unix seconds).
    pub fn new(
        engine: Engine,
        backend: Arc<dyn Backend>,
        responder: Arc<dyn Responder>,
        timing: Timing,
        start: f64,
        observer: &'o mut dyn Observer,
    ) -> Self {
        CallDriver {
            engine,
            backend,
            responder,
            timing,
            observer,
            start,
            t: start,
            seq: 0,
            queue: BinaryHeap::new(),
            speech_until: start,
            llm_epoch: 0,
            llm_pending: false,
            tool_pending: false,
            scoped_pending: false,
            overrides: HashMap::new(),
            background: None,
            tools: Vec::new(),
            ended_by: None,
        }
    }

    fn rel(&self) -> f64 {
        self.t - self.start
    }

    fn schedule(&mut self, at: f64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Scheduled {
            at: at.max(self.t),
            seq: self.seq,
            ev,
        });
    }

    /// Nothing is in flight: the agent has answered and is waiting.
    fn quiet(&self) -> bool {
        !self.engine.is_busy()
            && !self.llm_pending
            && !self.tool_pending
            && !self.scoped_pending
            && !self.engine.buffer_mode()
    }

    fn emit(&mut self, ev: CallEvent) {
        let t = self.rel();
        self.observer.on_event(t, &ev);
    }

    /// Register a scripted answer for the next call of `tool`.
    pub fn override_tool(&mut self, tool: Tool, result: Value) {
        self.overrides.entry(tool).or_default().push_back(result);
    }

    async fn feed(&mut self, input: Input) {
        let mut pending: VecDeque<Effect> = self.engine.handle(input, self.t).into();
        while let Some(effect) = pending.pop_front() {
            let more = self.perform(effect).await;
            pending.extend(more);
        }
    }

    /// Carry out one effect; returns effects of inputs it fed back at once.
    async fn perform(&mut self, effect: Effect) -> Vec<Effect> {
        match effect {
            Effect::Speak { canned, text, .. } => {
                let state = self.engine.state();
                let id = (canned != Canned::ScopedReply || !text.is_empty()).then(|| canned.id());
                self.emit(CallEvent::Agent {
                    text: text.clone(),
                    state,
                    canned: id,
                });
                self.say(&text);
            }
            Effect::ToLlm { reply: msg_id, .. } => {
                self.llm_epoch += 1;
                let req = TurnRequest {
                    state: self.engine.state(),
                    session: self.engine.session().clone(),
                    messages: self.engine.llm_messages(),
                };
                let reply = match self.responder.reply(&req).await {
                    Ok(stream) => collect_reply(stream).await.unwrap_or_default(),
                    Err(e) => {
                        tracing::warn!(error = %e, "responder failed; no reply");
                        String::new()
                    }
                };
                self.llm_pending = true;
                let epoch = self.llm_epoch;
                self.schedule(
                    self.t + self.timing.llm_latency_s,
                    Ev::LlmDone {
                        epoch,
                        msg_id,
                        text: reply,
                    },
                );
            }
            Effect::PassThrough { .. } | Effect::ContextUserAppend { .. } => {}
            Effect::CallTool(call) => {
                self.emit(CallEvent::ToolCall(call.clone()));
                let tool = call.tool();
                let scripted = self.overrides.get_mut(&tool).and_then(VecDeque::pop_front);
                let result = match scripted {
                    Some(r) => r,
                    None => self.backend.call(&call).await,
                };
                self.tools.push(ToolLog {
                    t: self.rel(),
                    call,
                    result: result.clone(),
                });
                self.tool_pending = true;
                self.schedule(self.t + self.timing.tool_latency_s, Ev::ToolDone(result));
            }
            Effect::AskScopedReply { user_text } => {
                let req = ScopedRequest {
                    state: self.engine.state(),
                    session: self.engine.session().clone(),
                    user_text,
                };
                let reply = self.responder.scoped_reply(&req).await.ok();
                self.scoped_pending = true;
                self.schedule(self.t + self.timing.llm_latency_s, Ev::ScopedDone(reply));
            }
            Effect::StartExtraction { history } => {
                if history.len() >= 2 {
                    let req = ExtractionRequest { history };
                    if let Some(tx) = &self.background {
                        let (tx, responder) = (tx.clone(), self.responder.clone());
                        tokio::spawn(async move {
                            match responder.extract(&req).await {
                                Ok(fields) => {
                                    let _ = tx.send(Ev::ExtractionDone(fields));
                                }
                                Err(e) => tracing::warn!(error = %e, "extraction failed; ignored"),
                            }
                        });
                        return Vec::new();
                    }
                    match self.responder.extract(&req).await {
                        Ok(fields) => self.schedule(
                            self.t + self.timing.llm_latency_s,
                            Ev::ExtractionDone(fields),
                        ),
                        Err(e) => tracing::warn!(error = %e, "extraction failed; ignored"),
                    }
                }
            }
            Effect::StartTimer { timer, at } => self.schedule(at, Ev::Timer(timer)),
            Effect::StateChanged { from, to } => self.emit(CallEvent::StateChanged { from, to }),
            Effect::EndCall => {
                if self.ended_by.is_none() {
                    self.ended_by = Some(Ending::Agent);
                    self.emit(CallEvent::Ended(Ending::Agent));
                }
            }
        }
        Vec::new()
    }

    fn say(&mut self, text: &str) {
        let start = self.speech_until.max(self.t);
        self.speech_until = start + self.timing.speaking_time(text);
        let until = self.speech_until;
        self.schedule(until, Ev::SpeechDone);
    }

    async fn dispatch(&mut self, ev: Ev) {
        self.dispatch_event(ev).await;
        let t = self.rel();
        self.observer.on_log(self.engine.log());
        self.observer.on_session(t, self.engine.session());
    }

    async fn dispatch_event(&mut self, ev: Ev) {
        match ev {
            Ev::Caller(text) => {
                let state = self.engine.state();
                if !text.trim().is_empty() {
                    self.emit(CallEvent::Caller {
                        text: text.clone(),
                        state,
                    });
                }
                self.feed(Input::Transcript {
                    text,
                    is_final: true,
                })
                .await;
            }
            Ev::CallerHangUp => {
                if self.ended_by.is_none() {
                    self.ended_by = Some(Ending::Caller);
                    self.emit(CallEvent::Ended(Ending::Caller));
                    self.feed(Input::CallerHungUp).await;
                }
            }
            Ev::SilenceOver => {}
            Ev::Timer(timer) => self.feed(Input::TimerFired(timer)).await,
            Ev::ToolDone(result) => {
                self.tool_pending = false;
                let tool = self.engine.awaiting_tool();
                self.feed(Input::ToolResult {
                    result: result.clone(),
                })
                .await;
                if let Some(tool) = tool {
                    let state = self.engine.state();
                    self.emit(CallEvent::ToolResult {
                        tool,
                        result,
                        state,
                    });
                }
            }
            Ev::ScopedDone(text) => {
                self.scoped_pending = false;
                self.feed(Input::ScopedReply { text }).await;
            }
            Ev::LlmDone {
                epoch,
                msg_id,
                text,
            } => {
                if epoch != self.llm_epoch {
                    return; // superseded by a newer turn
                }
                self.llm_pending = false;
                if text.trim().is_empty() {
                    return;
                }
                self.feed(Input::LlmReplied {
                    msg_id,
                    text: text.clone(),
                })
                .await;
                let state = self.engine.state();
                self.emit(CallEvent::Agent {
                    text: text.clone(),
                    state,
                    canned: None,
                });
                self.say(&text);
            }
            Ev::ExtractionDone(fields) => self.feed(Input::ExtractionDone { fields }).await,
            Ev::SpeechDone => {
                if self.t + 1e-9 >= self.speech_until {
                    self.feed(Input::BotStoppedSpeaking).await;
                }
            }
        }
    }

    fn ended(&self) -> bool {
        self.ended_by.is_some()
    }

    async fn connect(&mut self) {
        self.engine.session_mut().start_time = self.start;
        self.feed(Input::ClientConnected).await;
        let t = self.rel();
        self.observer.on_log(self.engine.log());
        self.observer.on_session(t, self.engine.session());
    }

    /// Pop and handle the next due event (virtual clock). False when idle.
    async fn step_virtual(&mut self) -> bool {
        let Some(next) = self.queue.pop() else {
            return false;
        };
        self.t = self.t.max(next.at);
        self.dispatch(next.ev).await;
        true
    }

    fn finish(mut self) -> Outcome {
        let end = self.t.max(self.speech_until);
        self.t = end;
        let now = self.t;
        let _ = self.engine.handle(Input::CallFinished, now);
        self.observer.on_log(self.engine.log());
        let (session, log) = self.engine.into_parts();
        Outcome {
            session,
            log,
            ended_by: self.ended_by.unwrap_or(Ending::TimeLimit),
            start_time: self.start,
            end_time: end,
            tools: self.tools,
        }
    }

    /// Run a scripted caller in virtual time.
    pub async fn run_script(mut self, script: Vec<ScriptItem>) -> Outcome {
        self.connect().await;
        let mut items: VecDeque<ScriptItem> = script.into();
        let mut last_caller_at = self.start;
        let mut waiting_silence = false;
        let mut gap_after_silence = false;
        let mut caller_scheduled = false;
        loop {
            if self.ended() || self.t - self.start > MAX_CALL_S {
                break;
            }
            // Release the next caller item when its time is known.
            if !caller_scheduled && !waiting_silence {
                while let Some(ScriptItem::ToolResult { .. }) = items.front() {
                    if let Some(ScriptItem::ToolResult { tool, result }) = items.pop_front() {
                        self.override_tool(tool, result);
                    }
                }
                match items.front().cloned() {
                    Some(ScriptItem::Caller { text, when }) => {
                        let at = match when {
                            When::At(s) => Some(self.start + s),
                            When::After(s) => Some(last_caller_at + s),
                            When::Default if self.quiet() => Some(if gap_after_silence {
                                self.t
                            } else {
                                self.speech_until.max(self.t) + 3.0
                            }),
                            When::Default => None,
                        };
                        if let Some(at) = at {
                            items.pop_front();
                            let at = at.max(self.t);
                            last_caller_at = at;
                            gap_after_silence = false;
                            caller_scheduled = true;
                            self.schedule(at, Ev::Caller(text));
                        }
                    }
                    Some(ScriptItem::Silence(s)) if self.quiet() => {
                        items.pop_front();
                        waiting_silence = true;
                        let at = self.speech_until.max(self.t) + s.max(0.0);
                        self.schedule(at, Ev::SilenceOver);
                    }
                    Some(ScriptItem::HangUp) | None if self.quiet() => {
                        items.pop_front();
                        let at = self.speech_until.max(self.t) + 1.0;
                        caller_scheduled = true;
                        self.schedule(at, Ev::CallerHangUp);
                    }
                    _ => {}
                }
            }
            let Some(next) = self.queue.pop() else {
                if caller_scheduled || waiting_silence {
                    break; // cannot happen: scheduled events live in the queue
                }
                // Nothing is scheduled and the next caller line is still
                // waiting for quiet that will not come (or the script is
                // over): the caller hangs up rather than the loop spinning.
                self.schedule(self.t + 1.0, Ev::CallerHangUp);
                caller_scheduled = true;
                continue;
            };
            self.t = self.t.max(next.at);
            match &next.ev {
                Ev::Caller(_) | Ev::CallerHangUp => caller_scheduled = false,
                Ev::SilenceOver => {
                    waiting_silence = false;
                    gap_after_silence = true;
                }
                _ => {}
            }
            self.dispatch(next.ev).await;
        }
        // Let a pending hang-up or trailing speech finish.
        while !self.ended() && self.engine.end_call_pending() && self.step_virtual().await {}
        self.finish()
    }

    /// Run with a person typing caller lines (real time). `lines` yields
    /// `None` when the person hangs up (Ctrl-D).
    pub async fn run_interactive(
        mut self,
        mut lines: tokio::sync::mpsc::Receiver<Option<String>>,
    ) -> Outcome {
        let origin = std::time::Instant::now();
        let (bg_tx, mut bg_rx) = tokio::sync::mpsc::unbounded_channel();
        self.background = Some(bg_tx);
        self.connect().await;
        let real_now = |start: f64| start + origin.elapsed().as_secs_f64();
        loop {
            if self.ended() || self.t - self.start > MAX_CALL_S {
                break;
            }
            let next_at = self.queue.peek().map(|s| s.at);
            let wait = next_at.map(|at| (at - real_now(self.start)).max(0.0));
            tokio::select! {
                biased;
                line = lines.recv() => {
                    self.t = real_now(self.start);
                    match line {
                        Some(Some(text)) => self.dispatch(Ev::Caller(text)).await,
                        Some(None) | None => {
                            self.dispatch(Ev::CallerHangUp).await;
                        }
                    }
                }
                Some(ev) = bg_rx.recv() => {
                    self.t = real_now(self.start);
                    self.dispatch(ev).await;
                }
                _ = sleep_opt(wait) => {
                    if let Some(next) = self.queue.pop() {
                        self.t = real_now(self.start).max(next.at);
                        self.dispatch(next.ev).await;
                    }
                }
            }
        }
        self.finish()
    }
}

async fn sleep_opt(wait: Option<f64>) {
    match wait {
        Some(s) => tokio::time::sleep(Duration::from_secs_f64(s.min(MAX_CALL_S))).await,
        None => std::future::pending::<()>().await,
    }
}
