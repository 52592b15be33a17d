//! The Deepgram Aura client against the loopback fake (real HTTP/1.1, the
//! real protocol): the audio decodes back to the words in order; query,
//! headers and body as Deepgram documents them; error statuses, an empty
//! 200, a JSON 200, a reset mid-body, a hang and a stall each end in one
//! error (after the audio already delivered, never with the key in it);
//! long text becomes several requests in order; dropping the stream
//! closes the request at the fake within a chunk.

use futures_util::StreamExt;
use providers::deepgram::aura::{AuraConfig, AuraTts};
use providers::deepgram::aura_fake::{AuraBehaviour, FakeAura, FakeAuraConfig, RawResponse};
use std::time::Duration;
use tokio::time::Instant;
use voice::offline::codec::{decode_mulaw, Decoded, FRAME_SAMPLES_8K};
use voice::stages::tts::{Tts, TtsError, TtsEvent, TtsStream};

const KEY: &str = "test-key";

fn config(fake: &FakeAura) -> AuraConfig {
    let mut c = AuraConfig::new(KEY).with_base_url(fake.base_url());
    c.first_byte_timeout = Duration::from_secs(3);
    c.chunk_timeout = Duration::from_secs(3);
    c
}

fn tts(fake: &FakeAura) -> AuraTts {
    AuraTts::new(config(fake)).expect("config")
}

/// Everything a synthesis produced.
#[derive(Default)]
struct Heard {
    /// The audio: µ-law as Deepgram sent it (what goes to Twilio).
    ulaw: Vec<u8>,
    pieces: Vec<usize>,
    words_events: usize,
    error: Option<TtsError>,
    /// Items after the error (must be none).
    after_error: usize,
}

impl Heard {
    fn words(&self) -> Vec<String> {
        words_of(&self.ulaw)
    }
}

fn words_of(ulaw: &[u8]) -> Vec<String> {
    ulaw.chunks(FRAME_SAMPLES_8K)
        .filter_map(|f| match decode_mulaw(f) {
            Decoded::Word(w) => Some(w),
            _ => None,
        })
        .collect()
}

async fn collect(mut s: TtsStream) -> Heard {
    let mut h = Heard::default();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(20), s.next())
        .await
        .expect("the stream never stalls unbounded")
    {
        if h.error.is_some() {
            h.after_error += 1;
            continue;
        }
        match item {
            Ok(TtsEvent::Audio(a)) => {
                assert_eq!(a.rate, 8000);
                assert_eq!(a.encoding, voice::frames::Encoding::MuLaw);
                h.pieces.push(a.bytes.len());
                h.ulaw.extend_from_slice(&a.bytes);
            }
            Ok(TtsEvent::Word(_)) => h.words_events += 1,
            Ok(TtsEvent::Cut) => panic!("Aura's client never cuts a line itself"),
            Err(e) => h.error = Some(e),
        }
    }
    h
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

#[tokio::test]
async fn speaks_the_words_in_order_with_the_documented_request() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let text = "Thanks for calling ACE Cooling, this is Helena. How can I help?";
    let h = collect(tts(&fake).synthesize(text)).await;
    assert!(h.error.is_none(), "{:?}", h.error);
    assert_eq!(h.words(), words(text));
    // The body's bytes themselves, never decoded and encoded again.
    assert!(
        h.ulaw == providers::deepgram::aura_fake::speech_mulaw(text, 15.0),
        "{} bytes",
        h.ulaw.len()
    );
    assert_eq!(h.words_events, 0, "Aura has no word timings");
    assert!(h.pieces.iter().all(|n| *n <= 800), "≤ 100 ms per piece");
    assert!(h.pieces.len() > 1);

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/speak");
    let query: Vec<(&str, &str)> = r
        .query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        query,
        [
            ("model", "aura-2-helena-en"),
            ("encoding", "mulaw"),
            ("sample_rate", "8000"),
            ("container", "none"),
        ]
    );
    assert_eq!(r.header("authorization"), Some("Token test-key"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body, serde_json::json!({ "text": text }));
    assert_eq!(r.status, 200);
    assert!(r.response_finished);
    assert!(!r.client_disconnected);
}

#[tokio::test]
async fn the_voice_is_url_encoded_and_the_connection_is_reused() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let t = AuraTts::new(config(&fake).with_voice("aura-2-thalia-en")).unwrap();
    assert!(t.speak_url().contains("model=aura-2-thalia-en&"));
    for line in ["First line.", "Second line."] {
        let h = collect(t.synthesize(line)).await;
        assert_eq!(h.words(), words(line));
    }
    let reqs = fake.requests();
    assert_eq!(reqs[1].query_value("model"), Some("aura-2-thalia-en"));
    assert_eq!(fake.connection_count(), 1, "one kept-alive connection");

    let odd = AuraTts::new(config(&fake).with_voice("aura-2 x&y")).unwrap();
    assert!(odd.speak_url().contains("model=aura-2+x%26y&"));
    let h = collect(odd.synthesize("Hi.")).await;
    assert_eq!(fake.requests()[2].query_value("model"), Some("aura-2 x&y"));
    assert!(h.error.is_none(), "{:?}", h.error);
}

#[tokio::test]
async fn nothing_is_sent_until_polled_and_blank_text_sends_nothing() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let t = tts(&fake);
    let s = t.synthesize("Not yet.");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(fake.requests().len(), 0);
    drop(s);
    let h = collect(t.synthesize(" \n\t ")).await;
    assert!(h.error.is_none() && h.pieces.is_empty());
    assert_eq!(fake.requests().len(), 0);
}

#[tokio::test]
async fn a_wrong_key_is_401_with_deepgrams_message_and_no_key() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let secret = "dg-wrong-key-0123456789";
    let t = AuraTts::new(AuraConfig::new(secret).with_base_url(fake.base_url())).unwrap();
    let h = collect(t.synthesize("Hello.")).await;
    let e = h.error.expect("an error").0;
    assert!(e.contains("401"), "{e}");
    assert!(
        e.contains("INVALID_AUTH") && e.contains("Invalid credentials."),
        "{e}"
    );
    assert!(!e.contains(secret), "{e}");
    assert!(h.pieces.is_empty());
    assert_eq!(h.after_error, 0);
    assert_eq!(
        fake.requests()[0].header("authorization"),
        Some(format!("Token {secret}").as_str())
    );
}

#[tokio::test]
async fn error_statuses_are_one_error_naming_the_status() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let t = tts(&fake);
    let cases = [
        (
            500,
            r#"{"err_code":"INTERNAL_SERVER_ERROR","err_msg":"Something went wrong.","request_id":"r1"}"#,
            "INTERNAL_SERVER_ERROR: Something went wrong.",
        ),
        (
            429,
            r#"{"err_code":"TOO_MANY_REQUESTS","err_msg":"Too many requests.","request_id":"r2"}"#,
            "TOO_MANY_REQUESTS",
        ),
        (503, "upstream unavailable", "upstream unavailable"),
        (
            400,
            r#"{"category":"INVALID_JSON","message":"bad","details":"x"}"#,
            "INVALID_JSON: bad",
        ),
        (
            500,
            r#"{"err_code":42,"err_msg":{"nested":"test-key"}}"#,
            "err_code",
        ),
    ];
    for (status, body, want) in cases {
        fake.push(AuraBehaviour::Status(status, body.into()));
        let h = collect(t.synthesize("Hello there.")).await;
        let e = h.error.expect("an error").0;
        assert!(e.contains(&format!("HTTP {status}")), "{e}");
        assert!(e.contains(want), "{e}");
        assert!(!e.contains(KEY), "the key is redacted: {e}");
        assert!(h.pieces.is_empty() && h.after_error == 0);
    }
}

#[tokio::test]
async fn an_empty_200_or_a_json_200_is_an_error() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let t = tts(&fake);
    fake.push(AuraBehaviour::Empty);
    let e = collect(t.synthesize("Hello."))
        .await
        .error
        .expect("error")
        .0;
    assert!(e.contains("no audio"), "{e}");

    fake.push(AuraBehaviour::Raw(RawResponse::json(
        200,
        r#"{"err_code":"SLOW_DOWN","err_msg":"Try later."}"#,
    )));
    let h = collect(t.synthesize("Hello.")).await;
    let e = h.error.expect("error").0;
    assert!(
        e.contains("not audio") && e.contains("SLOW_DOWN: Try later."),
        "{e}"
    );
    assert!(h.pieces.is_empty());
}

#[tokio::test]
async fn a_reset_mid_body_ends_with_an_error_after_the_audio() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    fake.push(AuraBehaviour::ResetAfter(2400));
    let text = "My AC is blowing warm air since last night and the thermostat is blank.";
    let h = collect(tts(&fake).synthesize(text)).await;
    assert_eq!(
        h.ulaw.len(),
        2400,
        "the audio before the reset is delivered"
    );
    let e = h.error.clone().expect("an error after the audio").0;
    assert!(e.contains("broke off after 2400 bytes"), "{e}");
    assert_eq!(h.after_error, 0);
    let heard = h.words();
    assert!(!heard.is_empty() && heard.len() < words(text).len());
    assert_eq!(heard[..], words(text)[..heard.len()]);
}

#[tokio::test]
async fn long_text_is_split_into_requests_played_in_order() {
    let fake = FakeAura::start(FakeAuraConfig {
        chars_per_second: 400.0,
        ..FakeAuraConfig::default()
    })
    .await;
    let mut text = String::new();
    let mut n = 0;
    while text.chars().count() < 4500 {
        n += 1;
        text.push_str(&format!(
            "Sentence {n} says the technician arrives between nine and eleven. "
        ));
    }
    let h = collect(tts(&fake).synthesize(&text)).await;
    assert!(h.error.is_none(), "{:?}", h.error);
    assert_eq!(h.words(), words(&text), "all words, in order");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3, "4,500 characters in pieces of ≤ 2,000");
    let mut sent = Vec::new();
    for r in &reqs {
        let t = r.text.clone().unwrap_or_default();
        assert!(t.chars().count() <= 2000);
        assert!(t.ends_with('.'), "cut at a sentence end: {t:?}");
        sent.extend(words(&t));
    }
    assert_eq!(sent, words(&text));
}

#[tokio::test]
async fn dropping_the_stream_closes_the_request_within_a_chunk() {
    let fake = FakeAura::start(FakeAuraConfig {
        pace: Duration::from_millis(20),
        ..FakeAuraConfig::default()
    })
    .await;
    let text = "Let me read back the whole appointment: Tuesday the fourth between \
                nine and eleven in the morning at 1200 Barton Springs Road.";
    let total = providers::deepgram::aura_fake::speech_mulaw(text, 15.0).len();
    let mut s = tts(&fake).synthesize(text);
    let first = s.next().await;
    assert!(matches!(first, Some(Ok(TtsEvent::Audio(_)))), "{first:?}");
    let dropped = Instant::now();
    drop(s); // a barge-in
    assert!(
        fake.wait_for_disconnect(0, Duration::from_secs(2)).await,
        "the fake saw the client go"
    );
    let seen_after = dropped.elapsed();
    let r = &fake.requests()[0];
    assert!(!r.response_finished);
    assert!(
        r.bytes_sent <= 800 * 3,
        "cancelled within a chunk or so: {} of {total} bytes sent",
        r.bytes_sent
    );
    assert!(seen_after < Duration::from_millis(500), "{seen_after:?}");
}

#[tokio::test]
async fn a_hang_is_bounded_by_the_first_byte_timeout() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    fake.push(AuraBehaviour::Hang);
    let mut c = config(&fake);
    c.first_byte_timeout = Duration::from_millis(300);
    let start = Instant::now();
    let h = collect(AuraTts::new(c).unwrap().synthesize("Hello.")).await;
    let took = start.elapsed();
    let e = h.error.expect("an error").0;
    assert!(e.contains("no answer within 0.3 s"), "{e}");
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert!(
        fake.wait_for_disconnect(0, Duration::from_secs(2)).await,
        "the request was dropped"
    );
}

#[tokio::test]
async fn a_head_without_audio_is_bounded_by_the_first_byte_timeout() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    fake.push(AuraBehaviour::StallAfter(0));
    let mut c = config(&fake);
    c.first_byte_timeout = Duration::from_millis(300);
    c.chunk_timeout = Duration::from_secs(10);
    let start = Instant::now();
    let h = collect(AuraTts::new(c).unwrap().synthesize("Hello.")).await;
    let took = start.elapsed();
    let e = h.error.expect("an error").0;
    assert!(e.contains("no audio within 0.3 s"), "{e}");
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_secs(2),
        "{took:?}"
    );
}

#[tokio::test]
async fn a_stall_mid_body_is_bounded_by_the_chunk_timeout() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    fake.push(AuraBehaviour::StallAfter(1600));
    let mut c = config(&fake);
    c.chunk_timeout = Duration::from_millis(300);
    let start = Instant::now();
    let h = collect(AuraTts::new(c).unwrap().synthesize("Hello there, friend.")).await;
    let took = start.elapsed();
    assert_eq!(
        h.ulaw.len(),
        1600,
        "the audio before the stall is delivered"
    );
    let e = h.error.expect("an error").0;
    assert!(e.contains("no data for 0.3 s"), "{e}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[tokio::test]
async fn the_chunk_timeout_counts_only_while_polled() {
    // The stage pulls slowly (backpressure): a pause between polls longer
    // than the chunk timeout is not a stall.
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let mut c = config(&fake);
    c.chunk_timeout = Duration::from_millis(200);
    let text = "One two three four five six seven eight.";
    let mut s = AuraTts::new(c).unwrap().synthesize(text);
    let mut ulaw = Vec::new();
    let mut polls = 0;
    while let Some(item) = s.next().await {
        let TtsEvent::Audio(a) = item.expect("no error") else {
            continue;
        };
        ulaw.extend_from_slice(&a.bytes);
        polls += 1;
        if polls < 4 {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    assert_eq!(words_of(&ulaw), words(text));
}

#[tokio::test]
async fn slow_audio_and_garbage_audio_play_through() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let t = tts(&fake);
    fake.push(AuraBehaviour::Slow(Duration::from_millis(15)));
    let text = "Slowly but surely.";
    let h = collect(t.synthesize(text)).await;
    assert!(h.error.is_none(), "{:?}", h.error);
    assert_eq!(h.words(), words(text));

    fake.push(AuraBehaviour::Garbage(12_345));
    let h = collect(t.synthesize("Noise.")).await;
    assert!(h.error.is_none(), "{:?}", h.error);
    assert_eq!(h.ulaw.len(), 12_345, "every byte, once");
    assert!(h.pieces.iter().all(|n| *n <= 800));
}

#[tokio::test]
async fn the_fake_refuses_a_query_it_does_not_serve() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let mut c = config(&fake);
    c.sample_rate = 16000;
    let h = collect(AuraTts::new(c).unwrap().synthesize("Hello.")).await;
    let e = h.error.expect("an error").0;
    assert!(
        e.contains("HTTP 400") && e.contains("INVALID_QUERY_PARAMETER"),
        "{e}"
    );

    let http = reqwest::Client::new();
    let url = format!(
        "{}/v1/speak?model=aura-2-helena-en&encoding=linear16&sample_rate=8000&container=none",
        fake.base_url()
    );
    let r = http
        .post(&url)
        .header("Authorization", "Token test-key")
        .header("Content-Type", "application/json")
        .body(r#"{"text":"hi"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let r = http
        .post(url.replace("linear16", "mulaw"))
        .header("Authorization", "Token test-key")
        .header("Content-Type", "application/json")
        .body(serde_json::json!({ "text": "x".repeat(2001) }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);
}

#[tokio::test]
async fn an_unreachable_server_is_a_quick_error() {
    let fake = FakeAura::start(FakeAuraConfig::default()).await;
    let url = fake.base_url();
    fake.stop();
    drop(fake);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t = AuraTts::new(AuraConfig::new(KEY).with_base_url(url)).unwrap();
    let start = Instant::now();
    let e = collect(t.synthesize("Hello."))
        .await
        .error
        .expect("error")
        .0;
    assert!(
        e.contains("cannot connect") || e.contains("request failed"),
        "{e}"
    );
    assert!(start.elapsed() < Duration::from_secs(4));
}

mod to_the_sink {
    //! The agent's side of a phone call with Aura as its voice — TTS stage,
    //! 8 kHz resample stage, output, paced player — into a sink: Aura's
    //! µ-law reaches the sink byte for byte, never decoded and encoded
    //! again.

    use super::*;
    use std::sync::{Arc, Mutex};
    use voice::floor::Floor;
    use voice::frames::{Audio, Data, Encoding, Epoch, Frame, UtteranceId, UtteranceText};
    use voice::stages::output::{self, AudioSink, Player};
    use voice::stages::resample::ResampleStage;
    use voice::stages::tts::TtsStage;
    use voice::Pipeline;

    /// What reached the sink: each frame, and the utterances that ended.
    #[derive(Default)]
    struct Played {
        frames: Vec<Audio>,
        ended: Vec<UtteranceId>,
    }

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Played>>);

    impl AudioSink for Sink {
        fn play(&mut self, audio: &Audio, _: UtteranceId, _: Epoch) {
            self.0.lock().unwrap().frames.push(audio.clone());
        }
        fn clear(&mut self) {}
        fn utterance_end(&mut self, id: UtteranceId) {
            self.0.lock().unwrap().ended.push(id);
        }
    }

    #[tokio::test]
    async fn auras_mulaw_reaches_the_sink_untouched() {
        let fake = FakeAura::start(FakeAuraConfig {
            chars_per_second: 60.0,
            ..FakeAuraConfig::default()
        })
        .await;
        let text = "Your technician is on the way.";
        let mut p = Pipeline::builder()
            .stage(TtsStage::new(Arc::new(tts(&fake))))
            .stage(ResampleStage::new(8000))
            .stage(output::OutputStage)
            .tail(output::OUTPUT_QUEUE_FRAMES)
            .build();
        let up = p.stage_control(p.len() - 1).unwrap();
        let tail = p.take_tail().unwrap();
        let sink = Sink::default();
        let player = Player::new(
            sink.clone(),
            tail,
            up,
            p.scope().clone(),
            Arc::new(Floor::default()),
        );
        let player = tokio::spawn(player.run());
        let input = p.input().unwrap().clone();
        let speak = Data::Speak(UtteranceText {
            id: 1,
            text: text.into(),
        });
        input.send(Frame::data(0, speak)).await.unwrap();
        input
            .send(Frame::data(0, Data::SpeakEnd { id: 1 }))
            .await
            .unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while !sink.0.lock().unwrap().ended.contains(&1) {
            assert!(Instant::now() < until, "the line never ended at the sink");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(input);
        p.end(Duration::from_secs(5)).await;
        let _ = player.await;
        let played = sink.0.lock().unwrap();
        assert!(
            played
                .frames
                .iter()
                .all(|a| a.encoding == Encoding::MuLaw && a.rate == 8000 && a.bytes.len() <= 160),
            "frames of at most 20 ms of 8 kHz µ-law"
        );
        let ulaw: Vec<u8> = played
            .frames
            .iter()
            .flat_map(|a| a.bytes.to_vec())
            .collect();
        let body = providers::deepgram::aura_fake::speech_mulaw(text, 60.0);
        assert!(
            ulaw == body,
            "{} bytes played of {}",
            ulaw.len(),
            body.len()
        );
        assert_eq!(words_of(&ulaw), words(text));
    }
}
