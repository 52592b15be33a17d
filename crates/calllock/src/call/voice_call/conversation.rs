//! The conversation stage: the sans-IO [`Engine`] inside the voice
//! pipeline, with the interruption accountant, the background work and the
//! per-turn clocks (see the module above). What was said is the engine's
//! log: the stage reports what the line did (a line started, played to
//! its end, cut off after some words) by the engine's line ids, builds LLM
//! requests from the engine's context, and journals the log as it grows.

use agent::backend::Backend;
use agent::engine::{Effect, Engine, Input, Timer};
use agent::extract::ExtractedFields;
use agent::prompts::Canned;
use agent::responder::{ChatMessage, ExtractionRequest, Responder, ScopedRequest, TurnRequest};
use agent::session::Session;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use voice::accountant::{Accountant, Outcome};
use voice::floor::{Floor, MuteReason};
use voice::frames::{ControlFrame, Custom, Data, Frame, SystemFrame, UtteranceId, UtteranceText};
use voice::history::{EventLog, MsgId};
use voice::stages::llm::LlmReply;
use voice::{Ctx, Direction, Stage};

use super::journal::VoiceJournal;
use super::latency::{TurnClocks, Wait};
use super::played::PlayedProof;
use super::timers::{EngineTimers, Woke};
use crate::call::latency::{ReplyKind, TurnLatency};
use crate::call::outcome::Ending;

/// What the conversation stage leaves behind when the call ends.
pub struct CallOutcome {
    /// The call's engine, with its session and LLM context as the call
    /// left them: the transport gives it the inputs that only it can
    /// report after the pipeline stopped (the server ending the call).
    /// Its log is the call's one record of what was said.
    pub engine: Engine,
    /// Where each answered turn's time went, in the order written — for
    /// a call without a journal. A journaled call writes each turn to its
    /// journal instead (read back with `call::latency::from_events`), so
    /// a live call does not hold its turns twice.
    pub latency: Vec<TurnLatency>,
}

impl CallOutcome {
    /// The call's session (state, fields, transcript).
    pub fn session(&self) -> &Session {
        self.engine.session()
    }

    /// The engine's LLM context at the end (system prompt first).
    pub fn context(&self) -> Vec<ChatMessage> {
        self.engine.llm_messages()
    }

    /// Everything said on the call, as the engine recorded it.
    pub fn log(&self) -> &EventLog {
        self.engine.log()
    }
}

impl std::fmt::Debug for CallOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOutcome")
            .field("session", self.session())
            .field("log", self.log())
            .field("latency", &self.latency)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
enum Bg {
    Tool {
        result: Value,
    },
    Scoped(Option<String>),
    Extraction(ExtractedFields),
    /// A timer's task woke; it slept until this (call-clock seconds).
    Timer(Timer, f64),
}

#[derive(Debug, Default)]
struct Utt {
    /// The engine has the line (canned lines at once, LLM replies when
    /// their text came): what was heard of it can be reported.
    said: bool,
    /// What the caller heard, once it was cut off.
    heard: Option<String>,
    /// The turn it belongs to.
    epoch: u64,
    /// Handed to the accountant (at its first synthesized text: the
    /// accountant's queue is then the playback order).
    queued: bool,
    /// Played to the end or cut off.
    ended: bool,
}

/// Runs the conversation engine inside the pipeline.
pub struct ConversationStage {
    /// The call's engine; it leaves with the outcome when the stage stops
    /// (the stopped stage handles nothing more).
    engine: Option<Engine>,
    backend: Arc<dyn Backend>,
    responder: Arc<dyn Responder>,
    floor: Arc<Floor>,
    /// The durable journal of this call (events as they happen).
    pub(super) journal: Option<VoiceJournal>,
    /// What the far end proved it played, for the lines still playing
    /// when the call ends (see [`CallParts::played_proof`](super::CallParts::played_proof)).
    pub(super) played_proof: Option<PlayedProof>,
    accountant: Accountant,
    utts: HashMap<UtteranceId, Utt>,
    /// The reply being written, and its epoch.
    llm_pending: Option<(UtteranceId, u64)>,
    greeting: Option<UtteranceId>,
    /// Where each turn's time goes (and the turns measured so far).
    clocks: TurnClocks,
    /// The turns measured, kept only without a journal.
    latencies: Vec<TurnLatency>,
    /// The engine's timers (one sleeping task per kind).
    timers: EngineTimers,
    start: Instant,
    start_unix: f64,
    end_tx: watch::Sender<Option<Ending>>,
    outcome: Option<oneshot::Sender<CallOutcome>>,
}

/// Handles to a running conversation stage.
pub struct CallControl {
    /// Becomes `Some(Ending::Agent)` when the engine hangs up (after its
    /// last line was heard); `None` while the call goes on.
    pub end: watch::Receiver<Option<Ending>>,
    /// The outcome, sent when the stage stops.
    pub outcome: oneshot::Receiver<CallOutcome>,
}

impl ConversationStage {
    /// A stage for `engine`; `start_unix` is the call's start (Unix s).
    pub fn new(
        engine: Engine,
        backend: Arc<dyn Backend>,
        responder: Arc<dyn Responder>,
        floor: Arc<Floor>,
        start_unix: f64,
    ) -> (Self, CallControl) {
        let (end_tx, end_rx) = watch::channel(None);
        let (out_tx, out_rx) = oneshot::channel();
        (
            ConversationStage {
                engine: Some(engine),
                backend,
                responder,
                floor,
                journal: None,
                played_proof: None,
                accountant: Accountant::default(),
                utts: HashMap::new(),
                llm_pending: None,
                greeting: None,
                clocks: TurnClocks::new(Instant::now(), start_unix),
                latencies: Vec::new(),
                timers: EngineTimers::default(),
                start: Instant::now(),
                start_unix,
                end_tx,
                outcome: Some(out_tx),
            },
            CallControl {
                end: end_rx,
                outcome: out_rx,
            },
        )
    }

    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    fn now(&self) -> f64 {
        self.start_unix + self.elapsed().as_secs_f64()
    }

    fn feed(&mut self, input: Input, ctx: &mut Ctx<'_>) {
        let now = self.now();
        let answers = matches!(
            input,
            Input::Transcript { is_final: true, .. }
                | Input::ToolResult { .. }
                | Input::ScopedReply { .. }
                | Input::TimerFired(Timer::Debounce)
        );
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        let effects = engine.handle(input, now);
        let was = self.clocks.set_answering(answers);
        for e in effects {
            self.perform(e, ctx);
        }
        self.clocks.set_answering(was);
        let at = self.now();
        if let (Some(j), Some(engine)) = (&mut self.journal, &self.engine) {
            j.write(engine.log());
            j.session(at, engine.session());
        }
        self.update_floor();
    }

    /// Journal a measured turn (or, without a journal, keep it for the
    /// outcome). The event is stamped now (the log stays in time order);
    /// the turn's own `at` is when the caller stopped.
    fn turn_measured(&mut self, t: Option<TurnLatency>) {
        if let Some(t) = t {
            let now = self.now();
            // The metrics count every turn, journal or not.
            crate::metrics::turn_measured(&t);
            match &self.journal {
                Some(j) => j.latency(now, &t),
                None => self.latencies.push(t),
            }
        }
    }

    fn update_floor(&self) {
        self.floor
            .set_responding(self.llm_pending.is_some() || !self.accountant.is_idle());
    }

    /// The LLM request: the engine's context (the system prompt, then the
    /// projection of the log), as for every call.
    fn llm_request(&self) -> Option<TurnRequest> {
        let engine = self.engine.as_ref()?;
        Some(TurnRequest {
            state: engine.state(),
            session: engine.session().clone(),
            messages: engine.llm_messages(),
        })
    }

    /// Keep track of the engine's line `id` on its way to the caller.
    fn new_utterance(&mut self, MsgId(id): MsgId, said: bool, epoch: u64) {
        self.utts.insert(
            id,
            Utt {
                said,
                epoch,
                ..Utt::default()
            },
        );
    }

    /// Utterances of turns before `epoch` that never reached the output
    /// were cut off before a word was heard.
    fn cut_unplayed(&mut self, epoch: u64, ctx: &mut Ctx<'_>) {
        let mut ids: Vec<UtteranceId> = self
            .utts
            .iter()
            .filter(|(_, u)| u.epoch < epoch && !u.ended && !u.queued)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        let outcomes = ids
            .into_iter()
            .map(|id| Outcome::Interrupted {
                msg_id: MsgId(id),
                heard_text: String::new(),
            })
            .collect();
        self.outcomes(outcomes, ctx);
    }

    fn spawn_bg<F>(&self, ctx: &mut Ctx<'_>, work: F)
    where
        F: std::future::Future<Output = Bg> + Send + 'static,
    {
        // Call-scoped work reports on the control lane: its results are
        // never stale (a barge-in must not lose a booking's answer).
        let token = ctx.scope().call_token().clone();
        ctx.spawn_control(token, async move {
            let done = BgDone(std::sync::Mutex::new(Some(work.await)));
            Frame::Control(ControlFrame::Custom(Custom::new(done)))
        });
    }

    /// A task that wakes at `at` (call-clock seconds) for `timer`.
    fn sleep_until(&self, timer: Timer, at: f64, ctx: &mut Ctx<'_>) {
        let wait = Duration::from_secs_f64((at - self.now()).clamp(0.0, 3600.0));
        self.spawn_bg(ctx, async move {
            tokio::time::sleep(wait).await;
            Bg::Timer(timer, at)
        });
    }

    fn perform(&mut self, effect: Effect, ctx: &mut Ctx<'_>) {
        match effect {
            Effect::Speak {
                canned,
                text,
                msg_id,
            } => {
                if text.trim().is_empty() {
                    return;
                }
                let id = msg_id.0;
                self.new_utterance(msg_id, true, ctx.epoch());
                self.clocks.reply(id, ReplyKind::Canned, Instant::now());
                if canned == Canned::Greeting {
                    self.greeting = Some(id);
                    self.floor.set_muted(MuteReason::Greeting, true);
                }
                let epoch = ctx.epoch();
                ctx.push(Frame::data(
                    epoch,
                    Data::Speak(UtteranceText {
                        id,
                        text: Arc::from(text.as_str()),
                    }),
                ));
                ctx.push(Frame::data(epoch, Data::SpeakEnd { id }));
            }
            Effect::ToLlm { reply, .. } => {
                if self.llm_pending.take().is_some() {
                    // The caller said more while the last reply was still
                    // being written: that reply is stale everywhere.
                    ctx.interrupt();
                }
                let Some(request) = self.llm_request() else {
                    return;
                };
                let id = reply.0;
                self.new_utterance(reply, false, ctx.epoch());
                self.clocks.reply(id, ReplyKind::Llm, Instant::now());
                self.llm_pending = Some((id, ctx.epoch()));
                ctx.push(Frame::data(
                    ctx.epoch(),
                    Data::LlmRequest {
                        id,
                        request: Custom::new(request),
                    },
                ));
            }
            Effect::ContextUserAppend { .. } | Effect::PassThrough { .. } => {}
            Effect::CallTool(call) => {
                self.clocks.wait_started(Wait::Tool, Instant::now());
                self.floor.set_muted(MuteReason::Tool, true);
                let backend = self.backend.clone();
                self.spawn_bg(ctx, async move {
                    let result = backend.call(&call).await;
                    Bg::Tool { result }
                });
            }
            Effect::AskScopedReply { user_text } => {
                let Some(engine) = &self.engine else {
                    return;
                };
                let req = ScopedRequest {
                    state: engine.state(),
                    session: engine.session().clone(),
                    user_text,
                };
                let responder = self.responder.clone();
                self.clocks.wait_started(Wait::Scoped, Instant::now());
                self.spawn_bg(ctx, async move {
                    Bg::Scoped(responder.scoped_reply(&req).await.ok())
                });
            }
            Effect::StartExtraction { history } => {
                if history.len() >= 2 {
                    let responder = self.responder.clone();
                    self.spawn_bg(ctx, async move {
                        let req = ExtractionRequest { history };
                        match responder.extract(&req).await {
                            Ok(f) => Bg::Extraction(f),
                            Err(e) => {
                                tracing::warn!(error = %e, "extraction failed; ignored");
                                Bg::Extraction(ExtractedFields::default())
                            }
                        }
                    });
                }
            }
            Effect::StartTimer { timer, at } => {
                if timer == Timer::Debounce {
                    self.clocks.wait_started(Wait::Debounce, Instant::now());
                }
                if self.timers.start(timer, at) {
                    self.sleep_until(timer, at, ctx);
                }
            }
            Effect::StateChanged { .. } => {}
            Effect::EndCall => {
                let _ = self.end_tx.send(Some(Ending::Agent));
            }
        }
    }

    fn outcomes(&mut self, outcomes: Vec<Outcome>, ctx: &mut Ctx<'_>) {
        for o in outcomes {
            let id = o.msg_id().0;
            match self.utts.get_mut(&id) {
                Some(u) if u.ended => continue,
                Some(u) => u.ended = true,
                None => {}
            }
            if self.greeting == Some(id) {
                self.floor.set_muted(MuteReason::Greeting, false);
            }
            match o {
                Outcome::Done { msg_id } => self.feed(Input::SpeechFinished { msg_id }, ctx),
                Outcome::Interrupted { msg_id, heard_text } => {
                    // A reply cut off before its text came is reported
                    // when it comes (the engine only then has the line).
                    let said = self.utts.get_mut(&id).is_none_or(|u| {
                        u.heard = Some(heard_text.clone());
                        u.said
                    });
                    if said {
                        let heard = heard_text;
                        self.feed(Input::AgentInterrupted { msg_id, heard }, ctx);
                    }
                }
            }
        }
        self.update_floor();
    }

    fn llm_reply(&mut self, reply: &LlmReply, ctx: &mut Ctx<'_>) {
        if self.llm_pending.map(|p| p.0) == Some(reply.id) {
            self.llm_pending = None;
        }
        if let Some(e) = &reply.error {
            tracing::warn!(error = %e, "LLM reply failed");
        }
        let text = reply.text.trim().to_string();
        if text.is_empty() {
            self.update_floor();
            return;
        }
        let heard = self.utts.get(&reply.id).and_then(|u| u.heard.clone());
        if let Some(u) = self.utts.get_mut(&reply.id) {
            u.said = true;
        }
        let msg_id = MsgId(reply.id);
        self.feed(Input::LlmReplied { msg_id, text }, ctx);
        if let Some(heard) = heard {
            // Cut off before the reply was complete: keep only what was heard.
            self.feed(Input::AgentInterrupted { msg_id, heard }, ctx);
        }
        self.update_floor();
    }

    fn background(&mut self, bg: Bg, ctx: &mut Ctx<'_>) {
        match bg {
            Bg::Tool { result } => {
                self.clocks.wait_ended(Wait::Tool, Instant::now());
                self.floor.set_muted(MuteReason::Tool, false);
                self.feed(Input::ToolResult { result }, ctx);
            }
            Bg::Scoped(text) => {
                self.clocks.wait_ended(Wait::Scoped, Instant::now());
                self.feed(Input::ScopedReply { text }, ctx)
            }
            Bg::Extraction(fields) => self.feed(Input::ExtractionDone { fields }, ctx),
            Bg::Timer(timer, woke_for) => match self.timers.woke(timer, woke_for) {
                Woke::Fire => self.feed(Input::TimerFired(timer), ctx),
                Woke::SleepUntil(at) => self.sleep_until(timer, at, ctx),
                Woke::Nothing => {}
            },
        }
    }

    fn finish(&mut self, ctx: &mut Ctx<'_>) {
        // The player reports progress once a second, and finishes a line
        // once the far end proves its end; the far end may have proved
        // more played since (a caller hanging up mid-line heard it).
        if let Some(proof) = self.played_proof.take() {
            let ids: Vec<MsgId> = self.accountant.active().collect();
            for id in ids {
                let proved = proof(id.0);
                let o = if proved.whole {
                    // Its last frame played before the line went quiet.
                    self.accountant.finished(id)
                } else if !proved.heard.is_zero() {
                    self.accountant.played(id, proved.heard)
                } else {
                    continue;
                };
                self.outcomes(o, ctx);
            }
        }
        let outcomes = self.accountant.interrupt();
        self.outcomes(outcomes, ctx);
        self.cut_unplayed(u64::MAX, ctx);
        let last = self.clocks.finish();
        self.turn_measured(last);
        self.feed(Input::CallFinished, ctx);
        if let (Some(tx), Some(engine)) = (self.outcome.take(), self.engine.take()) {
            // The call's engine goes with the outcome.
            let _ = tx.send(CallOutcome {
                engine,
                latency: std::mem::take(&mut self.latencies),
            });
        }
    }
}

/// A background result delivered to the stage's own inbox.
struct BgDone(std::sync::Mutex<Option<Bg>>);

impl Stage for ConversationStage {
    fn name(&self) -> &'static str {
        "conversation"
    }

    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::System(SystemFrame::Start) => {
                self.start = Instant::now();
                self.clocks.set_origin(self.start, self.start_unix);
                if let Some(engine) = self.engine.as_mut() {
                    engine.session_mut().start_time = self.start_unix;
                }
                self.feed(Input::ClientConnected, ctx);
            }
            Frame::System(SystemFrame::Interrupt { epoch }) => {
                // The reply being written is cut (the LLM stage reports its
                // text); what was heard comes with the output's report.
                if self.llm_pending.is_some_and(|p| p.1 < epoch) {
                    self.llm_pending = None;
                }
                self.update_floor();
            }
            Frame::System(SystemFrame::Cancel) | Frame::Control(ControlFrame::End) => {
                self.finish(ctx);
            }
            Frame::Data(d) => match d.data {
                Data::Transcript { text, is_final } => {
                    if !is_final && !text.trim().is_empty() {
                        self.clocks.caller_words();
                        self.feed(Input::CallerWords, ctx);
                    }
                    if is_final {
                        if !text.trim().is_empty() {
                            let now = Instant::now();
                            let done = self.clocks.stt_final(now);
                            self.turn_measured(done);
                            // The engine queues it behind a suspended turn.
                            if self.engine.as_ref().is_some_and(|e| e.is_suspended()) {
                                self.clocks.wait_started(Wait::Queued, now);
                            }
                        }
                        self.feed(
                            Input::Transcript {
                                text: text.to_string(),
                                is_final,
                            },
                            ctx,
                        );
                    }
                }
                Data::NotHeard => self.feed(Input::NotHeard, ctx),
                data => ctx.push(Frame::data(d.epoch, data)),
            },
            Frame::Control(ControlFrame::UserStartedSpeaking) => {
                self.clocks.caller_started();
                self.feed(Input::CallerSpeaking, ctx);
            }
            f @ Frame::Control(ControlFrame::UserStoppedSpeaking) => {
                self.clocks.caller_stopped(Instant::now());
                self.feed(Input::CallerStopped, ctx);
                ctx.pass(f, dir);
            }
            Frame::Control(c) if dir == Direction::Upstream => {
                let utts = &mut self.utts;
                let ended = self.accountant.observe(&c, |id| {
                    let wanted = utts.get_mut(&id).filter(|u| !u.queued && !u.ended);
                    wanted.map(|u| u.queued = true).is_some()
                });
                self.upstream(c, ended, ctx);
            }
            f => ctx.pass(f, dir),
        }
    }
}

impl ConversationStage {
    /// A control frame from below, after the accountant took it in
    /// (`ended`: the utterances it settled).
    fn upstream(&mut self, c: ControlFrame, ended: Vec<Outcome>, ctx: &mut Ctx<'_>) {
        match c {
            ControlFrame::Milestone { id, milestone, at } => {
                if milestone == voice::latency::Milestone::LlmFirstToken {
                    // The reply has begun: no filler for this turn.
                    self.feed(Input::ReplyStarted, ctx);
                }
                let done = self.clocks.milestone(id, milestone, at);
                self.turn_measured(done);
            }
            ControlFrame::UtteranceStarted { id } => {
                self.feed(Input::SpeechStarted { msg_id: MsgId(id) }, ctx);
                self.outcomes(ended, ctx);
                // A new line is audible: the turn's filler is not needed.
                self.feed(Input::ReplyStarted, ctx);
                self.feed(Input::BotSpeaking, ctx);
            }
            ControlFrame::UtteranceProgress { .. } => {
                self.outcomes(ended, ctx);
                self.feed(Input::BotSpeaking, ctx);
            }
            ControlFrame::UtteranceFinished { .. } => self.outcomes(ended, ctx),
            ControlFrame::PlaybackInterrupted { .. } => {
                self.outcomes(ended, ctx);
                let epoch = ctx.epoch();
                self.cut_unplayed(epoch, ctx);
            }
            ControlFrame::BotStoppedSpeaking if self.accountant.is_idle() => {
                self.feed(Input::BotStoppedSpeaking, ctx);
            }
            ControlFrame::Custom(c) => {
                if let Some(bg) = c
                    .get::<BgDone>()
                    .and_then(|b| b.0.lock().ok().and_then(|mut g| g.take()))
                {
                    self.background(bg, ctx);
                }
            }
            ControlFrame::LlmReply(reply) => self.llm_reply(&reply, ctx),
            ControlFrame::LlmToolCall(call) => {
                // Tools are chosen by the state machine, never by the
                // LLM: the engine records the model's call and refuses it.
                let (name, args) = (call.name.clone(), call.arguments.clone());
                self.feed(Input::LlmToolRefused { name, args }, ctx);
            }
            ControlFrame::Error { stage, message } => {
                tracing::warn!(stage, %message, "pipeline error");
            }
            _ => {}
        }
    }
}
