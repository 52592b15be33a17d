//! `calllock serve` with the production speech vendors, each a loopback
//! fake speaking its real protocol: Deepgram live STT (WebSocket), Inworld
//! TTS (streaming NDJSON over HTTP), Deepgram Aura TTS (streamed µ-law over
//! HTTP), an OpenAI-compatible LLM and Twilio's REST API. The caller is the
//! Twilio-speaking phone of `calllock dial`; the fakes speak and hear the
//! offline speech codec, so every word crosses real sockets both ways.

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/served.rs"]
mod served;

use calllock::config::Config;
use providers::deepgram::aura_fake::{AuraBehaviour, FakeAura, FakeAuraConfig};
use providers::deepgram::fake::{FakeBehaviour, FakeDeepgram};
use providers::fake::http::FakeHttp;
use providers::fake::openai::FakeOpenAi;
use providers::inworld::fake::{Behaviour as InworldBehaviour, FakeConfig, FakeInworld};
use served::*;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Every vendor of a served call, faked on loopback.
struct Vendors {
    deepgram: FakeDeepgram,
    inworld: FakeInworld,
    aura: FakeAura,
    llm: Arc<FakeOpenAi>,
    twilio: FakeHttp,
}

impl Vendors {
    async fn start() -> Vendors {
        let llm = FakeOpenAi::start(vec![]).await;
        llm.set_handler(Arc::new(fake_llm::llm_handler));
        let twilio = FakeHttp::start();
        Vendors {
            deepgram: FakeDeepgram::start(FakeBehaviour::default()).await,
            inworld: FakeInworld::start(FakeConfig {
                chars_per_second: CPS,
                ..FakeConfig::default()
            })
            .await,
            aura: FakeAura::start(FakeAuraConfig {
                chars_per_second: CPS,
                ..FakeAuraConfig::default()
            })
            .await,
            llm: Arc::new(llm),
            twilio,
        }
    }

    /// Point `cfg` at the fakes.
    fn configure(&self, c: &mut Config) {
        c.deepgram.api_key = "test-key".into();
        c.deepgram.url = self.deepgram.base_url();
        c.deepgram.tts_url = self.aura.base_url();
        c.serve.vad = "codec".into(); // the test phone speaks the codec
        c.inworld.api_key = "test-key".into();
        c.inworld.url = self.inworld.base_url();
        c.llm.base_url = self.llm.base_url();
        c.llm.api_key = "test".into();
        c.twilio.account_sid = ACCOUNT.into();
        c.twilio.auth_token = TOKEN.into();
        c.twilio.api_url = self.twilio.url();
    }
}

/// The caller says `line` and the agent must start answering within 3 s of
/// the line's end (no dead air); returns the agent's turn.
async fn answered(c: &mut Caller, line: &str) -> String {
    c.agent_turn().await;
    c.say(line);
    let speaking = Duration::from_secs_f64((line.len() as f64 + 1.0) / CPS);
    tokio::time::sleep(speaking).await;
    let waited = c.first_word_within(Duration::from_secs(6)).await;
    assert!(
        waited < Duration::from_secs(3),
        "{waited:?} of dead air after {line:?}"
    );
    c.agent_turn().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_booking_call_through_every_vendor() {
    let v = Vendors::start().await;
    let s = serve_with(|c| v.configure(c)).await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    let hang_up = twilio_rest(&v.twilio, &sid);
    let said = booking_lines();
    let mut heard = Vec::new();
    for line in &said {
        heard.push(answered(&mut c, line).await);
        if c.closed {
            break;
        }
    }
    let log = c.finish().await;
    assert!(!log.caller_hung_up, "the agent ended the call");
    let rec = s.record(&sid).await;
    assert_eq!(rec.booking_status, "confirmed", "{:#}", rec.record);
    assert_eq!(rec.customer_name, "Dana Fields");
    // Every caller line reached the record through Deepgram, once.
    assert_eq!(user_lines(&rec), said);
    // The LLM's words were spoken by Inworld and heard at the phone.
    assert!(
        heard.iter().any(|h| h.contains("Got it, thanks")),
        "{heard:?}"
    );
    let asked = v.inworld.requests();
    assert!(asked.len() >= said.len(), "{} requests", asked.len());
    assert!(asked.iter().all(|r| r.body["voiceId"] == "Ashley"));
    assert!(
        v.aura.requests().is_empty(),
        "the fallback was never needed"
    );
    // The agent hung up through Twilio's REST API, once.
    assert_eq!(v.twilio.count(&hang_up), 1);
    // The record shows where each turn's time went, Inworld's first audio
    // and the first mark echo included.
    let events = s.server.store().events(&sid).await.unwrap();
    let turns = calllock::latency::from_events(&events);
    assert!(
        turns.len() >= said.len() - 1,
        "{} latency entries",
        turns.len()
    );
    for t in &turns {
        let (audio, heard) = (t.tts_first_audio_ms.unwrap(), t.first_heard_ms.unwrap());
        assert!(audio <= heard, "{t:?}");
        assert!(t.ours_ms().is_some_and(|o| o < 100.0), "{t:?}");
    }
    assert!(turns.iter().any(|t| t.llm_first_token_ms.is_some()));
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inworld_down_then_aura_down_the_caller_always_hears_the_agent() {
    let v = Vendors::start().await;
    let s = serve_with(|c| {
        v.configure(c);
        c.tts.first_audio_timeout_s = 1.0;
    })
    .await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    // Inworld answers, then errs after its first audio: the line is cut
    // short in Inworld's voice (no other voice splices in).
    answered(&mut c, "Hi, my AC stopped cooling last night").await;
    let aura_before = v.aura.requests().len();
    v.inworld.set_default(InworldBehaviour::ErrorAfter(1));
    let cut = answered(&mut c, "No, nothing like that").await;
    assert!(!cut.contains("thanks"), "the line was cut: {cut:?}");
    // The connection resets mid-stream: the same.
    v.inworld.set_default(InworldBehaviour::ResetAfter(2));
    let cut = answered(&mut c, "Yes, it's a central unit").await;
    assert!(!cut.contains("thanks"), "the line was cut: {cut:?}");
    assert_eq!(v.aura.requests().len(), aura_before, "no fallback mid-line");
    // Inworld errs before any audio: Aura says the whole line.
    v.inworld.set_default(InworldBehaviour::ErrorBeforeAudio);
    let said = answered(&mut c, "78745").await;
    let aura_after = v.aura.requests().len();
    assert!(aura_after > aura_before, "Aura spoke");
    assert!(said.contains("Got it, thanks"), "{said:?}");
    // Inworld hangs (the breaker is open by now or the 1 s bound passes)
    // and Aura fails: the offline voice says the whole line.
    v.inworld.set_default(InworldBehaviour::Hang);
    v.aura
        .set_behaviour(AuraBehaviour::Status(500, "{\"err_msg\":\"down\"}".into()));
    let said = answered(&mut c, "My name is Dana Fields").await;
    assert!(
        v.aura.requests().len() > aura_after,
        "Aura was asked and failed"
    );
    assert!(said.contains("Got it, thanks"), "{said:?}");
    answered(&mut c, "It's 4329 Franklin Street").await;
    c.phone.as_ref().unwrap().hang_up();
    c.finish().await;
    let rec = s.record(&sid).await;
    assert_eq!(rec.customer_name, "Dana Fields", "{:#}", rec.record);
    assert!(rec.ended_at.is_some());
    s.server.stop().await;
}

/// The first spoken reply of the barge-in test: long, with words that
/// the next reply does not have.
const LONG_REPLY: &str = "Okay, I can help with that, and before we go any further I would \
     like to ask a few quick questions about the system at your home today.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barge_in_during_a_slow_inworld_stream_cancels_it_and_nothing_stale_plays() {
    let v = Vendors::start().await;
    // The first spoken reply is long; every later one is the usual line.
    let streamed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n = streamed.clone();
    v.llm.set_handler(Arc::new(move |req: &serde_json::Value| {
        if req["stream"] == true && n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            return Some(providers::fake::openai::Behaviour::Reply(LONG_REPLY.into()));
        }
        fake_llm::llm_handler(req)
    }));
    let s = serve_with(|c| v.configure(c)).await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    c.agent_turn().await;
    // From now on Inworld streams slowly: a word every 300 ms.
    v.inworld
        .set_default(InworldBehaviour::Slow(Duration::from_millis(300)));
    c.say("Hi, my AC stopped cooling last night");
    c.first_word_within(Duration::from_secs(10)).await;
    c.pump(Duration::from_millis(600)).await;
    let slow = v.inworld.requests().len() - 1;
    assert!(
        v.inworld.requests()[slow]
            .text()
            .starts_with("Okay, I can help"),
        "the long reply is being said"
    );
    c.say("Sorry, hold on, it's actually the heater");
    // The phone gets `clear`; the request in flight is dropped at once.
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.clears == 0 {
        assert!(Instant::now() < deadline, "no clear");
        c.pump(Duration::from_millis(5)).await;
    }
    let t = Instant::now();
    assert!(
        v.inworld
            .wait_for_disconnect(slow, Duration::from_secs(2))
            .await,
        "the slow request was never dropped"
    );
    let cancel = t.elapsed();
    assert!(
        cancel < Duration::from_millis(200),
        "cancelled {cancel:?} after the clear"
    );
    // What plays after the clear is the new reply only.
    c.words.clear();
    let next = c.agent_turn().await;
    assert_eq!(c.clears, 1, "exactly one clear");
    for stale in ["further", "questions", "system", "home"] {
        assert!(
            !next.contains(stale),
            "stale audio after the clear: {next:?}"
        );
    }
    assert!(next.contains("Got it"), "{next:?}");
    c.phone.as_ref().unwrap().hang_up();
    c.finish().await;
    let rec = s.record(&sid).await;
    assert_eq!(
        user_lines(&rec),
        [
            "Hi, my AC stopped cooling last night",
            "Sorry, hold on, it's actually the heater"
        ]
    );
    s.server.stop().await;
}

/// Two caller lines through a Deepgram that behaves as `b`: each is
/// answered within 3 s and reaches the record whole, once. Returns the
/// fakes for what else the test checks.
async fn two_lines_heard_through(b: FakeBehaviour) -> Vendors {
    const LINES: [&str; 2] = [
        "Hi, my AC stopped cooling last night",
        "No, nothing like that",
    ];
    let v = Vendors::start().await;
    v.deepgram.set_behaviour(b);
    let s = serve_with(|c| v.configure(c)).await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    for line in LINES {
        answered(&mut c, line).await;
    }
    c.phone.as_ref().unwrap().hang_up();
    c.finish().await;
    let rec = s.record(&sid).await;
    assert_eq!(user_lines(&rec), LINES);
    s.server.stop().await;
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deepgram_socket_dropped_mid_utterance_loses_no_word() {
    let v = two_lines_heard_through(FakeBehaviour {
        drop_after_words: Some(4),
        ..FakeBehaviour::default()
    })
    .await;
    assert_eq!(v.deepgram.log().connections, 2, "reconnected once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deepgram_never_finalizing_still_ends_every_turn() {
    // Only UtteranceEnd ends an utterance.
    let v = two_lines_heard_through(FakeBehaviour {
        speech_final: false,
        ..FakeBehaviour::default()
    })
    .await;
    assert_eq!(v.deepgram.log().connections, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deepgram_refusing_the_key_ends_the_call_with_an_apology_and_a_callback() {
    let v = Vendors::start().await;
    v.deepgram.set_behaviour(FakeBehaviour {
        refuse: Some(401),
        ..FakeBehaviour::default()
    });
    let s = serve_with(|c| v.configure(c)).await;
    let mut c = Caller::call(&s.dial("+15125550444")).await;
    let sid = c.sid();
    let hang_up = twilio_rest(&v.twilio, &sid);
    c.until_said("trouble hearing you").await;
    let log = c.finish().await;
    assert!(!log.caller_hung_up, "the agent ended the call");
    let rec = s.record(&sid).await;
    assert_eq!(rec.final_state, "callback", "{:#}", rec.record);
    let cbs = s.server.store().open_callbacks(10).await.unwrap();
    assert!(cbs.iter().any(|c| c.phone == "+15125550444"), "{cbs:?}");
    let said: Vec<(String, String)> = lines(&rec.transcript);
    assert_eq!(
        said.iter()
            .filter(|(_, t)| t.contains("trouble hearing you"))
            .count(),
        1,
        "the apology is said once: {said:?}"
    );
    assert_eq!(v.twilio.count(&hang_up), 1);
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deepgram_hearing_but_never_answering_is_caught_by_the_watchdog() {
    let v = Vendors::start().await;
    v.deepgram.set_behaviour(FakeBehaviour {
        silent: true,
        ..FakeBehaviour::default()
    });
    let s = serve_with(|c| v.configure(c)).await;
    let mut c = Caller::call(&s.dial("+15125550555")).await;
    let sid = c.sid();
    // The greeting plays; the caller answers; Deepgram says nothing. The
    // socket is reopened with the replay, then afresh, and the caller is
    // asked to say it again — within 3 s, no dead air.
    let asked = answered(&mut c, "Hi, my AC stopped cooling last night").await;
    assert!(asked.contains("say that again"), "{asked:?}");
    // Still nothing: an apology and a callback, not a caller talking to
    // nobody.
    let bye = answered(&mut c, "Hi, my AC stopped cooling last night").await;
    assert!(bye.contains("trouble hearing you"), "{bye:?}");
    c.finish().await;
    let rec = s.record(&sid).await;
    assert_eq!(rec.final_state, "callback", "{:#}", rec.record);
    assert_eq!(v.deepgram.log().connections, 3, "reopened twice");
    let cbs = s.server.store().open_callbacks(10).await.unwrap();
    assert!(cbs.iter().any(|c| c.phone == "+15125550555"), "{cbs:?}");
    s.server.stop().await;
}
