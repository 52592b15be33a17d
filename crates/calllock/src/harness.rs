//! The call harness: a whole CallLock voice call in virtual time, driven by
//! a small DSL and checked against invariants.
//!
//! ```ignore
//! #[tokio::test(start_paused = true)]
//! async fn books() {
//!     let h = Harness::start(HarnessConfig::default()).await;
//!     h.wait_for_response().await;            // the greeting
//!     h.say("my AC is broken").await;
//!     let reply = h.wait_for_response().await;
//!     let report = h.hang_up().await;
//!     report.assert_invariants();
//! }
//! ```
//!
//! Everything real runs: the pipeline, every stage, the conversation
//! engine, the embedded backend (in memory). Only the vendors are mocks, and
//! symmetric ones: the caller's words are encoded into audio and decoded by
//! the mock STT; the agent's words are encoded by the mock TTS and decoded
//! by the caller's ear — so "what the caller heard" is read from the audio
//! that actually reached them, not from the agent's bookkeeping.

use crate::call::voice_call::{start_call, CallOutcome, CallParts, RunningCall};
use agent::backend::{Backend, ToolCall};
use agent::engine::{Engine, EngineConfig};
use agent::profile::BusinessProfile;
use agent::responder::{ChatMessage, Responder, ScriptedResponder, TurnRequest};
use agent::session::Session;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use voice::history::{AgentSource, Event};
use voice::stages::turn::BargeInRules;
pub use voice::testkit::Heard;
use voice::testkit::{
    normalise, Caller, CodecDetector, Ear, EarLog, LlmCall, MockLlm, MockReply, MockStt, MockTts,
};
use voice::StopReport;

/// A backend whose every answer takes `delay` (virtual time).
///
/// The inner backend's own work (SQLite on its worker threads) runs on a
/// blocking thread: Tokio does not auto-advance a paused clock while a
/// blocking task runs, so the database's real time never turns into
/// virtual time and a harness call stays deterministic.
pub struct SlowBackend {
    pub inner: Arc<dyn Backend>,
    pub delay: Duration,
}

/// Run `fut` to completion on a blocking thread (see [`SlowBackend`]).
pub async fn off_the_clock<T: Send + 'static>(
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || handle.block_on(fut))
        .await
        .expect("blocking task")
}

#[async_trait::async_trait]
impl Backend for SlowBackend {
    async fn lookup_caller(&self, phone: &str, call_id: &str) -> Value {
        tokio::time::sleep(self.delay).await;
        let (inner, phone, call_id) = (self.inner.clone(), phone.to_string(), call_id.to_string());
        off_the_clock(async move { inner.lookup_caller(&phone, &call_id).await }).await
    }
    async fn book_service(&self, call: &ToolCall) -> Value {
        self.call_inner(call).await
    }
    async fn create_callback(&self, call: &ToolCall) -> Value {
        self.call_inner(call).await
    }
    async fn send_sales_lead_alert(&self, call: &ToolCall) -> Value {
        self.call_inner(call).await
    }
    async fn manage_appointment(&self, call: &ToolCall) -> Value {
        self.call_inner(call).await
    }
}

impl SlowBackend {
    async fn call_inner(&self, call: &ToolCall) -> Value {
        tokio::time::sleep(self.delay).await;
        let (inner, call) = (self.inner.clone(), call.clone());
        off_the_clock(async move { inner.call(&call).await }).await
    }
}

type ReplyOverride = dyn Fn(&TurnRequest, usize) -> Option<MockReply> + Send + Sync;

/// How the harness call is set up.
#[derive(Clone)]
pub struct HarnessConfig {
    pub caller_id: String,
    /// Unix seconds of the call start (pins "now" for the backend).
    pub start_unix: f64,
    pub profile: BusinessProfile,
    pub engine: EngineConfig,
    /// How long every backend tool takes.
    pub tool_latency: Duration,
    pub llm_first_token: Duration,
    pub llm_per_token: Duration,
    /// Script some LLM replies (request, index) → reply; `None` = the
    /// scripted responder's line.
    pub replies: Option<Arc<ReplyOverride>>,
    pub tts_first_audio: Duration,
    /// Speaking rate of both sides.
    pub chars_per_second: f64,
    pub stt_endpointing: Duration,
    pub barge_in: BargeInRules,
    /// The longest the caller may wait for the agent after they stopped
    /// speaking.
    pub dead_air_budget: Duration,
    /// The pipeline must be stopped this long after the hang-up.
    pub stop_deadline: Duration,
}

impl Default for HarnessConfig {
    fn default() -> Self {
        HarnessConfig {
            caller_id: "+15125551234".into(),
            // Tue 2026-02-17 10:00 America/Chicago (business hours).
            start_unix: 1_771_344_000.0,
            profile: BusinessProfile::default(),
            engine: EngineConfig::default(),
            tool_latency: Duration::from_millis(300),
            llm_first_token: Duration::from_millis(300),
            llm_per_token: Duration::from_millis(30),
            replies: None,
            tts_first_audio: Duration::from_millis(150),
            chars_per_second: 15.0,
            stt_endpointing: Duration::from_millis(500),
            barge_in: BargeInRules::default(),
            dead_air_budget: Duration::from_secs(4),
            stop_deadline: Duration::from_secs(2),
        }
    }
}

/// A call in progress.
pub struct Harness {
    pub cfg: HarnessConfig,
    call: RunningCall<Ear>,
    /// The caller: its mouth on the pipeline's input, its ear at the sink.
    pub caller: Caller,
    pub ear: Ear,
    pub llm: MockLlm,
    pub tts: MockTts,
    pub t0: Instant,
}

impl Harness {
    /// Start a call (in-memory embedded backend seeded with the demo data).
    pub async fn start(cfg: HarnessConfig) -> Harness {
        let now = crate::call::record::utc(cfg.start_unix);
        let profile = cfg.profile.clone();
        let embedded = off_the_clock(async move {
            let store = store::Store::open_in_memory()
                .await
                .expect("in-memory store");
            let embedded =
                store::EmbeddedBackend::with_clock(store, profile, Arc::new(move || now));
            embedded.seed_demo(now).await.expect("demo data");
            embedded
        })
        .await;
        let backend: Arc<dyn Backend> = Arc::new(SlowBackend {
            inner: Arc::new(embedded),
            delay: cfg.tool_latency,
        });
        Self::start_with(cfg, backend).await
    }

    /// Start a call against `backend`.
    pub async fn start_with(cfg: HarnessConfig, backend: Arc<dyn Backend>) -> Harness {
        let scripted = Arc::new(ScriptedResponder::new(cfg.profile.clone()));
        let responder: Arc<dyn Responder> = scripted.clone();
        let base = scripted_llm(scripted.clone(), cfg.llm_first_token, cfg.llm_per_token);
        let llm = match cfg.replies.clone() {
            None => base,
            Some(over) => {
                let (first, per) = (cfg.llm_first_token, cfg.llm_per_token);
                MockLlm::new(move |req, i| {
                    let tr = req.get::<TurnRequest>();
                    tr.and_then(|r| over(r, i)).unwrap_or_else(|| {
                        let text = tr.map(|r| scripted.line(r)).unwrap_or_default();
                        MockReply::text(&text, first, per)
                    })
                })
            }
        };
        let tts = MockTts {
            rate: 8000,
            chars_per_second: cfg.chars_per_second,
            first_audio: cfg.tts_first_audio,
            ..MockTts::default()
        };
        let mut session = Session::new(cfg.caller_id.clone());
        session.call_sid = "CAharness".into();
        let engine = Engine::new(session, cfg.profile.clone(), cfg.engine);
        let ear = Ear::default();
        let t0 = Instant::now();
        let call = start_call(
            CallParts {
                engine,
                backend,
                responder,
                llm: Arc::new(llm.clone()),
                tts: Arc::new(tts.clone()),
                stt: MockStt::new(cfg.stt_endpointing),
                detector: CodecDetector::default(),
                barge_in: cfg.barge_in,
                start_unix: cfg.start_unix,
                journal: None,
                output_lead: Duration::ZERO,
                pacing: None,
                playout: None,
                played_proof: None,
            },
            ear.clone(),
        );
        let input = call.pipeline.input().expect("input").clone();
        let mut caller = Caller::on(
            input,
            8000,
            cfg.chars_per_second,
            ear.clone(),
            call.floor.clone(),
        );
        caller.t0 = t0;
        Harness {
            cfg,
            call,
            caller,
            ear,
            llm,
            tts,
            t0,
        }
    }

    /// Seconds since the call started.
    pub fn t(&self) -> f64 {
        self.secs(Instant::now())
    }

    /// `at` in seconds since the call started.
    pub fn secs(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.t0).as_secs_f64()
    }

    /// The caller says `text` (returns when the last word was spoken).
    pub async fn say(&self, text: &str) {
        self.caller.say(text).await
    }

    /// The caller says each fragment, pausing `gap` between them.
    pub async fn say_fragments(&self, fragments: &[&str], gap: Duration) {
        self.caller.say_fragments(fragments, gap).await
    }

    /// The caller says nothing for `d`.
    pub async fn stay_silent(&self, d: Duration) {
        self.caller.stay_silent(d).await
    }

    /// Wait for the agent's next response (audio that starts from now on)
    /// and until it finished playing. Panics (dead air) when nothing starts
    /// within the dead-air budget after the caller's last word.
    pub async fn wait_for_response(&self) -> Heard {
        self.wait_for_response_within(self.cfg.dead_air_budget)
            .await
    }

    /// [`Harness::wait_for_response`] with another budget (e.g. the idle
    /// prompt).
    pub async fn wait_for_response_within(&self, budget: Duration) -> Heard {
        self.caller.wait_for_response_within(budget).await
    }

    /// Wait until the caller has heard `words` (a phrase, case-insensitive)
    /// from the agent, then say `text` over the agent. Returns when the
    /// interrupting speech began (its first voiced frame).
    pub async fn interrupt_after(&self, words: &str, text: &str) -> Instant {
        self.caller.interrupt_after(words, text).await
    }

    /// The caller hangs up; the pipeline is ended and the call checked.
    pub async fn hang_up(self) -> Report {
        self.caller.hang_up();
        self.finish(None).await
    }

    /// Wait (up to `within`) for the agent to hang up, then end the call.
    pub async fn wait_for_agent_hangup(mut self, within: Duration) -> Report {
        let end = &mut self.call.control.end;
        let ok = tokio::time::timeout(within, end.wait_for(Option::is_some))
            .await
            .is_ok();
        assert!(ok, "the agent did not hang up within {within:?}");
        let at = Instant::now();
        self.caller.hang_up();
        self.finish(Some(at)).await
    }

    async fn finish(mut self, agent_hung_up_at: Option<Instant>) -> Report {
        let hung_up = Instant::now();
        let stop = self.call.pipeline.end(self.cfg.stop_deadline).await;
        let stop_took = hung_up.elapsed();
        let player_done = tokio::time::timeout(self.cfg.stop_deadline, &mut self.call.player)
            .await
            .is_ok();
        let outcome = (&mut self.call.control.outcome).await.ok();
        Report {
            outcome,
            ear: self.ear.snapshot(),
            llm_calls: self.llm.calls(),
            tts_calls: self.tts.log.lock().map(|l| l.clone()).unwrap_or_default(),
            stretches: self.caller.mouth.stretches(),
            t0: self.t0,
            stop,
            stop_took,
            player_done,
            agent_hung_up_at,
            cfg: self.cfg,
        }
    }
}

/// Everything about a finished harness call.
pub struct Report {
    pub outcome: Option<CallOutcome>,
    pub ear: EarLog,
    pub llm_calls: Vec<LlmCall>,
    pub tts_calls: Vec<voice::testkit::TtsCall>,
    /// The caller's stretches of speech.
    pub stretches: Vec<(Instant, Instant)>,
    pub t0: Instant,
    pub stop: StopReport,
    /// From the hang-up to every stage stopped.
    pub stop_took: Duration,
    pub player_done: bool,
    pub agent_hung_up_at: Option<Instant>,
    pub cfg: HarnessConfig,
}

impl Report {
    /// Seconds since the call started.
    pub fn secs(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.t0).as_secs_f64()
    }

    /// The conversation stage's outcome.
    pub fn outcome(&self) -> &CallOutcome {
        self.outcome
            .as_ref()
            .expect("the conversation stage reported")
    }

    /// Each agent utterance as heard: (seconds, words heard).
    pub fn heard(&self) -> Vec<(f64, String)> {
        self.ear
            .utterances()
            .into_iter()
            .map(|id| {
                let at = self
                    .ear
                    .span(id)
                    .map(|s| self.secs(s.0))
                    .unwrap_or_default();
                (at, self.ear.heard_text(id))
            })
            .collect()
    }

    /// Utterances whose heard words contain `phrase`.
    pub fn heard_ids_with(&self, phrase: &str) -> Vec<u64> {
        let want = normalise(phrase);
        self.ear
            .utterances()
            .into_iter()
            .filter(|id| normalise(&self.ear.heard_text(*id)).contains(&want))
            .collect()
    }

    /// The LLM requests, in order.
    pub fn llm_requests(&self) -> Vec<TurnRequest> {
        self.llm_calls
            .iter()
            .filter_map(|c| c.request.get::<TurnRequest>().cloned())
            .collect()
    }

    /// Check every invariant; the list of violations.
    pub fn violations(&self) -> Vec<String> {
        let mut v = Vec::new();
        // 1. No audio of an old turn after an interruption.
        for (k, (at, idx)) in self.ear.clears.iter().enumerate() {
            for f in &self.ear.frames[(*idx).min(self.ear.frames.len())..] {
                if f.epoch < (k as u64 + 1) {
                    v.push(format!(
                        "stale audio: utterance {} of epoch {} heard at {:.3} s after barge-in #{} at {:.3} s",
                        f.id,
                        f.epoch,
                        self.secs(f.at),
                        k + 1,
                        self.secs(*at)
                    ));
                    break;
                }
            }
        }
        let Some(out) = &self.outcome else {
            v.push("the conversation stage never reported its outcome".into());
            return v;
        };
        // 2. Every tool call finished or cancelled.
        let open = out.log().open_tool_calls();
        if !open.is_empty() {
            v.push(format!("tool calls never finished: {open:?}"));
        }
        // Every LLM request ended (completed or dropped).
        for (i, c) in self.llm_calls.iter().enumerate() {
            if c.ended.is_none() {
                v.push(format!("LLM request {i} still streaming after the call"));
            }
        }
        // 3. At most one agent reply (LLM) per caller turn.
        let llm_ids: Vec<u64> = out
            .log()
            .events()
            .iter()
            .filter_map(|e| match &e.event {
                Event::AgentSaid {
                    msg_id,
                    source: AgentSource::Llm,
                    ..
                } => Some(msg_id.0),
                _ => None,
            })
            .collect();
        let mut bounds: Vec<Instant> = self.stretches.iter().map(|s| s.1).collect();
        bounds.insert(0, self.t0);
        for (i, from) in bounds.iter().enumerate() {
            // The window after caller stretch i-1 ends where stretch i starts.
            let end = self.stretches.get(i).map(|s| s.0);
            let replies: Vec<u64> = llm_ids
                .iter()
                .copied()
                .filter(|id| {
                    self.ear
                        .span(*id)
                        .is_some_and(|(s, _)| s >= *from && end.is_none_or(|e| s < e))
                })
                .collect();
            if replies.len() > 1 {
                v.push(format!(
                    "{} agent replies after one caller turn (from {:.2} s): {replies:?}",
                    replies.len(),
                    self.secs(*from)
                ));
            }
        }
        // 4. No dead air over the budget after the caller stopped.
        for (i, (_, end)) in self.stretches.iter().enumerate() {
            let next_caller = self.stretches.get(i + 1).map(|s| s.0);
            let next_agent = self.ear.frames.iter().find(|f| f.at >= *end).map(|f| f.at);
            if let Some(a) = next_agent {
                if next_caller.is_none_or(|c| a < c) && a - *end > self.cfg.dead_air_budget {
                    v.push(format!(
                        "dead air: {:.2} s between the caller stopping at {:.2} s and the agent",
                        (a - *end).as_secs_f64(),
                        self.secs(*end)
                    ));
                }
            }
        }
        // 5. The pipeline stopped within its deadline.
        if !self.stop.graceful || self.stop_took > self.cfg.stop_deadline || !self.player_done {
            v.push(format!(
                "pipeline did not stop cleanly: {:?} after {:?} (player done: {})",
                self.stop, self.stop_took, self.player_done
            ));
        }
        // 6. One log: every LLM request, the transcript and the journal
        // are projections of the engine's log.
        let requests: Vec<Vec<ChatMessage>> = self
            .llm_calls
            .iter()
            .filter_map(|c| c.request.get::<TurnRequest>().map(|r| r.messages.clone()))
            .collect();
        v.extend(crate::one_log::requests(out.log(), &requests));
        v.extend(crate::one_log::transcript(
            out.log(),
            &out.session().transcript_log,
        ));
        v
    }

    /// Panic with every violation.
    pub fn assert_invariants(&self) {
        let v = self.violations();
        assert!(v.is_empty(), "invariants violated:\n- {}", v.join("\n- "));
    }
}

/// The scripted responder's line for each turn as a [`MockLlm`] (which
/// records every request), streamed word by word with a chosen latency.
fn scripted_llm(
    responder: Arc<ScriptedResponder>,
    first_token: Duration,
    per_token: Duration,
) -> MockLlm {
    MockLlm::new(move |req, _| {
        let text = req
            .get::<TurnRequest>()
            .map(|r| responder.line(r))
            .unwrap_or_default();
        MockReply::text(&text, first_token, per_token)
    })
}
