//! A whole voice call in virtual time, checking each answered turn's
//! latency record against the delays the mocks were given: the STT's
//! endpointing, the backend tool, the post-tool debounce, the model's first
//! token and token rate, the voice's first audio, the far end's echo.
//! A stage missed or stamped in the wrong place moves a delta off what
//! was configured.

use super::{start_call, CallParts};
use crate::call::latency::{Anchor, ReplyKind, TurnLatency};
use agent::backend::{Backend, ToolCall};
use agent::engine::{Engine, EngineConfig};
use agent::profile::BusinessProfile;
use agent::responder::{Responder, ScriptedResponder, TurnRequest};
use agent::session::Session;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::time::Instant;
use voice::frames::{Audio, Epoch, UtteranceId};
use voice::history::Event;
use voice::latency::{Milestone, MilestoneReporter};
use voice::stages::output::AudioSink;
use voice::testkit::{CodecDetector, MockLlm, MockReply, MockStt, MockTts, Mouth};

const TOOL: Duration = Duration::from_millis(300);
const FIRST_TOKEN: Duration = Duration::from_millis(300);
const PER_TOKEN: Duration = Duration::from_millis(30);
const TTS_FIRST_AUDIO: Duration = Duration::from_millis(150);
const ENDPOINTING: Duration = Duration::from_millis(700);
/// The VAD's `stop_secs` (the default parameters).
const VAD_STOP: Duration = Duration::from_millis(500);
const ECHO: Duration = Duration::from_millis(120);
const CPS: f64 = 30.0;

/// A backend whose every answer takes [`TOOL`]: a new caller, and every
/// other tool succeeds.
struct Stub;

#[async_trait::async_trait]
impl Backend for Stub {
    async fn lookup_caller(&self, _: &str, _: &str) -> Value {
        tokio::time::sleep(TOOL).await;
        json!({"found": false, "message": "No customer record for this number."})
    }
    async fn book_service(&self, _: &ToolCall) -> Value {
        tokio::time::sleep(TOOL).await;
        json!({"success": true})
    }
    async fn create_callback(&self, _: &ToolCall) -> Value {
        tokio::time::sleep(TOOL).await;
        json!({"success": true})
    }
    async fn send_sales_lead_alert(&self, _: &ToolCall) -> Value {
        tokio::time::sleep(TOOL).await;
        json!({"success": true})
    }
    async fn manage_appointment(&self, _: &ToolCall) -> Value {
        tokio::time::sleep(TOOL).await;
        json!({"success": true})
    }
}

/// The far end: confirms each utterance's first audio [`ECHO`] after it
/// arrived, as a Twilio mark echo would.
struct Echoing {
    reporter: Arc<OnceLock<MilestoneReporter>>,
    last: Option<UtteranceId>,
    /// When each utterance's first frame arrived.
    arrived: Arc<Mutex<Vec<(UtteranceId, Instant)>>>,
}

impl AudioSink for Echoing {
    fn play(&mut self, _: &Audio, id: UtteranceId, _: Epoch) {
        if self.last == Some(id) {
            return;
        }
        self.last = Some(id);
        self.arrived.lock().unwrap().push((id, Instant::now()));
        let reporter = self.reporter.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ECHO).await;
            if let Some(r) = reporter.get() {
                r.report(id, Milestone::FirstHeard { confirmed_ms: 20 });
            }
        });
    }
    fn clear(&mut self) {}
}

/// Tokens of `text` up to its first sentence end (the mock streams one
/// word, with its trailing space, per token).
fn first_sentence_tokens(text: &str) -> u32 {
    let mut n = 0;
    for w in text.split_inclusive(' ') {
        n += 1;
        if w.trim_end().ends_with(['.', '!', '?']) {
            break;
        }
    }
    n
}

fn near(got: Option<f64>, want: Duration, what: &str, t: &TurnLatency) {
    let want = want.as_secs_f64() * 1000.0;
    let got = got.unwrap_or_else(|| panic!("{what} missing: {t:#?}"));
    assert!(
        (got - want).abs() <= 1.0,
        "{what}: {got} ms, want {want} ms: {t:#?}"
    );
}

#[tokio::test(start_paused = true)]
async fn every_stage_of_a_turn_is_stamped_where_it_happens() {
    let profile = BusinessProfile::default();
    let scripted = Arc::new(ScriptedResponder::new(profile.clone()));
    let lines = scripted.clone();
    let llm = MockLlm::new(move |req, _| {
        let text = req
            .get::<TurnRequest>()
            .map(|r| lines.line(r))
            .unwrap_or_default();
        MockReply::text(&text, FIRST_TOKEN, PER_TOKEN)
    });
    let tts = MockTts {
        rate: 8000,
        chars_per_second: CPS,
        first_audio: TTS_FIRST_AUDIO,
        ..MockTts::default()
    };
    let mut session = Session::new("+15125551234".to_string());
    session.call_sid = "CAlatency".into();
    let engine = Engine::new(session, profile, EngineConfig::default());
    let reporter = Arc::new(OnceLock::new());
    let arrived = Arc::new(Mutex::new(Vec::new()));
    let sink = Echoing {
        reporter: reporter.clone(),
        last: None,
        arrived: arrived.clone(),
    };
    let responder: Arc<dyn Responder> = scripted;
    let mut call = start_call(
        CallParts {
            engine,
            backend: Arc::new(Stub),
            responder,
            llm: Arc::new(llm),
            tts: Arc::new(tts),
            stt: MockStt::new(ENDPOINTING),
            detector: CodecDetector::default(),
            barge_in: voice::stages::turn::BargeInRules::default(),
            start_unix: 1_771_344_000.0,
            journal: None,
            output_lead: Duration::ZERO,
            pacing: None,
            playout: None,
            played_proof: None,
        },
        sink,
    );
    let _ = reporter.set(call.milestones.clone());
    let t0 = Instant::now();
    let mouth = Mouth::start(call.pipeline.input().unwrap().clone(), 8000, CPS);
    let mut spoke = Vec::new();
    tokio::time::sleep(Duration::from_secs(5)).await; // the greeting
    for line in [
        "Hi, my AC stopped cooling last night",
        "No, nothing like that",
    ] {
        mouth.speak(line);
        mouth.finished().await;
        spoke.push(mouth.last_voiced().unwrap());
        tokio::time::sleep(Duration::from_secs(8)).await;
    }
    mouth.hang_up();
    call.pipeline.end(Duration::from_secs(2)).await;
    let _ = (&mut call.player).await;
    let out = call.control.outcome.await.unwrap();

    let turns = &out.latency;
    eprintln!("{}", crate::call::latency::render(turns));
    assert_eq!(turns.len(), 2, "one record per answered turn: {turns:#?}");
    let said = |id: u64| {
        out.log()
            .events()
            .iter()
            .find_map(|e| match &e.event {
                Event::AgentSaid { msg_id, text, .. } if msg_id.0 == id => Some(text.clone()),
                _ => None,
            })
            .unwrap()
    };
    for (i, t) in turns.iter().enumerate() {
        assert_eq!(t.turn, i as u32 + 1);
        assert_eq!((t.reply, t.anchor), (ReplyKind::Llm, Anchor::SpeechEnd));
        // The anchor is the VAD's stop: `stop_secs` after the last voiced
        // frame (20 ms long) the caller sent.
        let speech_end = spoke[i] + Duration::from_millis(20) + VAD_STOP;
        let anchor = t0 + Duration::from_secs_f64(t.at - 1_771_344_000.0);
        let off = anchor.max(speech_end) - anchor.min(speech_end);
        assert!(off <= Duration::from_millis(25), "anchor off by {off:?}");
        // The first turn looks the caller up (a tool), then waits out the
        // post-tool debounce; the second goes straight to the model.
        let (tool, debounce) = if i == 0 {
            (TOOL, Duration::from_millis(1500))
        } else {
            (Duration::ZERO, Duration::ZERO)
        };
        near(Some(t.tool_ms), tool, "tool", t);
        near(Some(t.debounce_ms), debounce, "debounce", t);
        let stt = ENDPOINTING - VAD_STOP;
        near(t.stt_final_ms, stt, "stt final", t);
        let request = stt + tool + debounce;
        near(t.llm_request_ms, request, "llm request", t);
        near(
            t.llm_first_token_ms,
            request + FIRST_TOKEN,
            "first token",
            t,
        );
        let sentence = PER_TOKEN * (first_sentence_tokens(&said(t.msg_id)) - 1);
        let tts_request = request + FIRST_TOKEN + sentence;
        near(t.tts_request_ms, tts_request, "tts request", t);
        let audio = tts_request + TTS_FIRST_AUDIO;
        near(t.tts_first_audio_ms, audio, "tts first audio", t);
        near(t.first_outbound_ms, audio, "first outbound", t);
        near(t.first_heard_ms, audio + ECHO, "first heard", t);
        assert_eq!(t.heard_audio_ms, Some(20));
        // Our own time is what is left: nothing, in virtual time.
        near(t.ours_ms(), Duration::ZERO, "ours", t);
        // The outbound stamp is when the sink got the reply's first frame.
        let got = arrived
            .lock()
            .unwrap()
            .iter()
            .find(|(id, _)| *id == t.msg_id)
            .unwrap()
            .1;
        near(
            Some(got.saturating_duration_since(anchor).as_secs_f64() * 1000.0),
            audio,
            "sink",
            t,
        );
        let order = [
            Some(0.0),
            t.stt_final_ms,
            t.llm_request_ms,
            t.llm_first_token_ms,
            t.tts_request_ms,
            t.tts_first_audio_ms,
            t.first_outbound_ms,
            t.first_heard_ms,
        ];
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "in order: {t:#?}");
    }
}
