//! The Inworld client against the loopback fake (real HTTP, the real
//! NDJSON protocol): the words come back in order and out of the audio,
//! long text is split with word times continuing across the pieces, the
//! request is as documented, every failure is one error (and never shows
//! the key), WAV headers never reach the audio, dropping the stream closes
//! the request at the server, and the doctor's probe.

use futures_util::StreamExt;
use providers::inworld::fake::{Behaviour, FakeConfig, FakeInworld, WavHeaders};
use providers::inworld::{probe, InworldConfig, InworldTts};
use std::time::Duration;
use voice::accountant::WordTiming;
use voice::frames::Encoding;
use voice::offline::codec::{decode, from_bytes, Decoded};
use voice::stages::tts::{Tts, TtsError, TtsEvent, TtsStream};

const KEY: &str = "test-key";

fn config(fake: &FakeInworld) -> InworldConfig {
    at(&fake.base_url(), KEY)
}

fn at(base_url: &str, key: &str) -> InworldConfig {
    InworldConfig {
        base_url: base_url.into(),
        ..InworldConfig::new(key)
    }
}

fn tts(cfg: InworldConfig) -> InworldTts {
    match InworldTts::new(cfg) {
        Ok(t) => t,
        Err(e) => panic!("config: {e}"),
    }
}

/// What a synthesis yielded.
#[derive(Debug, Default)]
struct Heard {
    words: Vec<WordTiming>,
    /// All audio, concatenated, and its chunks' sizes.
    audio: Vec<u8>,
    chunks: Vec<usize>,
    rate: u32,
    error: Option<TtsError>,
    /// Audio bytes before each word event.
    audio_before_word: Vec<usize>,
    /// Items after an error (must be none).
    after_error: usize,
}

impl Heard {
    fn words(&self) -> Vec<&str> {
        self.words.iter().map(|w| w.word.as_str()).collect()
    }

    /// The words the audio carries (codec frames of 20 ms).
    fn decoded(&self) -> Vec<String> {
        let samples = from_bytes(&self.audio);
        samples
            .chunks((self.rate as usize / 50).max(1))
            .filter_map(|f| match decode(f) {
                Decoded::Word(w) => Some(w),
                _ => None,
            })
            .collect()
    }

    fn duration(&self) -> Duration {
        Duration::from_nanos(self.audio.len() as u64 / 2 * 1_000_000_000 / u64::from(self.rate))
    }
}

async fn hear(mut s: TtsStream) -> Heard {
    let mut h = Heard::default();
    let run = async {
        while let Some(item) = s.next().await {
            if h.error.is_some() {
                h.after_error += 1;
                continue;
            }
            match item {
                Ok(TtsEvent::Word(w)) => {
                    h.audio_before_word.push(h.audio.len());
                    h.words.push(w);
                }
                Ok(TtsEvent::Audio(a)) => {
                    assert_eq!(a.encoding, Encoding::Pcm16);
                    assert!(!a.bytes.is_empty() && a.bytes.len() % 2 == 0);
                    h.rate = a.rate;
                    h.chunks.push(a.bytes.len());
                    h.audio.extend_from_slice(&a.bytes);
                }
                Ok(TtsEvent::Cut) => panic!("Inworld's client never cuts a line itself"),
                Err(e) => h.error = Some(e),
            }
        }
    };
    if tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .is_err()
    {
        panic!("the synthesis did not end");
    }
    assert_eq!(h.after_error, 0, "nothing after an error");
    h
}

fn text_words(t: &str) -> Vec<&str> {
    t.split_whitespace().collect()
}

fn close(a: Duration, b: Duration) -> bool {
    a.abs_diff(b) <= Duration::from_micros(10)
}

#[tokio::test]
async fn speaks_the_words_in_order_and_the_audio_carries_them() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    let text = "Thanks for calling ACE Cooling, this is Ashley. How can I help?";
    let h = hear(tts(config(&fake)).synthesize(text)).await;
    assert!(h.error.is_none(), "{:?}", h.error);
    assert_eq!(h.words(), text_words(text));
    assert_eq!(h.decoded(), text_words(text));
    assert_eq!(h.rate, 8000);
    // Each word starts where the audio before it ends.
    for (w, before) in h.words.iter().zip(&h.audio_before_word) {
        let at = Duration::from_nanos(*before as u64 / 2 * 125_000);
        assert!(close(w.start, at), "{w:?} vs {at:?}");
    }
    assert_eq!(fake.requests().len(), 1);
    assert!(fake.requests()[0].response_finished);
}

#[tokio::test]
async fn lines_split_across_reads_and_other_rates_work() {
    let fake = FakeInworld::start(FakeConfig {
        split_lines: 5,
        ..FakeConfig::default()
    })
    .await;
    let text = "My furnace is making a loud banging noise";
    let h = hear(tts(config(&fake)).synthesize(text)).await;
    assert!(h.error.is_none(), "{:?}", h.error);
    assert_eq!(h.decoded(), text_words(text));
    // 16 kHz: asked for, sent, and played at 16 kHz.
    let h = hear(
        tts(InworldConfig {
            sample_rate: 16000,
            ..config(&fake)
        })
        .synthesize(text),
    )
    .await;
    assert_eq!(h.rate, 16000);
    assert_eq!(h.decoded(), text_words(text));
    assert_eq!(
        fake.requests()[1].body["audioConfig"]["sampleRateHertz"],
        16000
    );
}

#[tokio::test]
async fn long_text_is_split_and_word_times_run_on_across_pieces() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    let sentence = "We can have a technician out between eight and ten tomorrow. ";
    let text = sentence.repeat(45);
    assert!(text.chars().count() > 2000);
    let h = hear(tts(config(&fake)).synthesize(&text)).await;
    assert!(h.error.is_none(), "{:?}", h.error);
    let reqs = fake.requests();
    assert!(reqs.len() >= 2, "{} requests", reqs.len());
    for r in &reqs {
        assert!(r.text().chars().count() <= 2000);
        assert!(r.text().ends_with('.'), "cut at a sentence end");
    }
    let sent: Vec<&str> = reqs.iter().flat_map(|r| text_words(r.text())).collect();
    assert_eq!(sent, text_words(&text));
    assert_eq!(h.words(), text_words(&text));
    assert_eq!(h.decoded(), text_words(&text));
    // Times are from the start of the line, not of each request.
    for (w, before) in h.words.iter().zip(&h.audio_before_word) {
        let at = Duration::from_nanos(*before as u64 / 2 * 125_000);
        assert!(close(w.start, at), "{w:?} vs {at:?}");
    }
    assert!(h.words.windows(2).all(|p| p[0].start < p[1].start));
    assert!(h.words.last().is_some_and(|w| w.start < h.duration()));
}

#[tokio::test]
async fn the_request_is_as_documented() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    let t = tts(config(&fake));
    hear(t.synthesize("Hello there.")).await;
    hear(t.synthesize("Goodbye.")).await;
    let reqs = fake.requests();
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/tts/v1/voice:stream");
    assert_eq!(r.header("authorization"), Some("Basic test-key"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.body,
        serde_json::json!({
            "text": "Hello there.",
            "voiceId": "Ashley",
            "modelId": "inworld-tts-1.5-max",
            "audioConfig": {"audioEncoding": "LINEAR16", "sampleRateHertz": 8000},
            "timestampType": "WORD",
            "timestampTransportStrategy": "SYNC",
        })
    );
    let ids: Vec<&str> = reqs
        .iter()
        .filter_map(|r| r.header("x-request-id"))
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "one id per request");
}

#[tokio::test]
async fn asynchronous_timestamps_pair_with_their_audio() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    let cfg = InworldConfig {
        timestamp_transport: Some("ASYNC".into()),
        ..config(&fake)
    };
    let text = "Is anyone there?";
    let h = hear(tts(cfg).synthesize(text)).await;
    assert_eq!(h.words(), text_words(text));
    assert_eq!(h.decoded(), text_words(text));
    assert_eq!(
        fake.requests()[0].lines_sent,
        6,
        "a timing line and an audio line per word"
    );
}

#[tokio::test]
async fn a_refused_key_or_a_bad_status_is_one_error_without_the_key() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    let secret = "c2VjcmV0LWtleS1kby1ub3Qtc2hvdw==";
    let h = hear(tts(at(&fake.base_url(), secret)).synthesize("Hello.")).await;
    let e = h.error.expect("an error");
    assert!(e.0.contains("401"), "{e}");
    assert!(e.0.contains("Invalid authorization"), "{e}");
    assert!(!e.0.contains(secret), "{e}");
    assert!(h.audio.is_empty() && h.words.is_empty());
    for status in [429u16, 500, 503] {
        fake.push(Behaviour::Status(status));
        let h = hear(tts(config(&fake)).synthesize("Hello.")).await;
        let e = h.error.expect("an error");
        assert!(e.0.contains(&status.to_string()), "{e}");
        assert!(e.0.starts_with("Inworld: HTTP"), "{e}");
    }
}

#[tokio::test]
async fn an_error_line_before_audio_is_an_error_and_nothing_else() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    fake.push(Behaviour::ErrorBeforeAudio);
    let h = hear(tts(config(&fake)).synthesize("Hello there.")).await;
    let e = h.error.expect("an error");
    assert!(e.0.contains("Inworld: error 13: Internal error"), "{e}");
    assert!(h.audio.is_empty() && h.words.is_empty());
}

#[tokio::test]
async fn an_error_line_after_audio_comes_after_that_audio() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    fake.push(Behaviour::ErrorAfter(2));
    let h = hear(tts(config(&fake)).synthesize("One two three four.")).await;
    assert_eq!(h.words(), ["One", "two"]);
    assert_eq!(h.decoded(), ["One", "two"]);
    let e = h.error.expect("an error");
    assert!(e.0.contains("Resource exhausted"), "{e}");
}

#[tokio::test]
async fn a_connection_reset_mid_body_is_an_error_after_the_audio() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    fake.push(Behaviour::ResetAfter(2));
    let h = hear(tts(config(&fake)).synthesize("One two three four.")).await;
    assert_eq!(h.decoded(), ["One", "two"]);
    let e = h.error.expect("an error");
    assert!(e.0.contains("broke off"), "{e}");
}

#[tokio::test]
async fn a_garbage_line_is_an_error() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    fake.push(Behaviour::GarbageAfter(1));
    let h = hear(tts(config(&fake)).synthesize("One two three.")).await;
    assert_eq!(h.decoded(), ["One"]);
    let e = h.error.expect("an error");
    assert!(e.0.contains("not JSON"), "{e}");
}

#[tokio::test]
async fn wav_headers_never_reach_the_audio() {
    let text = "Your appointment is confirmed for Tuesday";
    let fake = FakeInworld::start(FakeConfig::default()).await;
    let plain = hear(tts(config(&fake)).synthesize(text)).await;
    for (headers, split) in [(WavHeaders::Canonical, 1), (WavHeaders::WithList, 3)] {
        fake.set_config(FakeConfig {
            wav_headers: headers,
            split_lines: split,
            ..FakeConfig::default()
        });
        let h = hear(tts(config(&fake)).synthesize(text)).await;
        assert!(h.error.is_none(), "{:?}", h.error);
        assert_eq!(
            h.audio, plain.audio,
            "{headers:?}: byte for byte the bare PCM"
        );
        assert!(!h.audio.windows(4).any(|w| w == b"RIFF"));
        assert_eq!(h.decoded(), text_words(text));
    }
}

#[tokio::test]
async fn dropping_the_stream_closes_the_request_at_the_server() {
    let fake = FakeInworld::start(FakeConfig {
        line_delay: Duration::from_millis(40),
        ..FakeConfig::default()
    })
    .await;
    let text = "word ".repeat(60);
    let t = tts(config(&fake));
    let mut s = t.synthesize(&text);
    // Nothing is sent before the stream is polled.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        fake.requests().is_empty(),
        "lazy: no request before polling"
    );
    loop {
        match tokio::time::timeout(Duration::from_secs(5), s.next()).await {
            Ok(Some(Ok(TtsEvent::Audio(_)))) => break,
            Ok(Some(Ok(_))) => {}
            other => panic!("{other:?}"),
        }
    }
    let at_drop = fake.requests()[0].lines_sent;
    drop(s);
    assert!(
        fake.wait_for_disconnect(0, Duration::from_secs(3)).await,
        "the server saw the connection close"
    );
    let r = &fake.requests()[0];
    assert!(!r.response_finished);
    assert!(
        r.lines_sent <= at_drop + 1,
        "cancelled within a chunk: {} lines at the drop, {} in all",
        at_drop,
        r.lines_sent
    );
}

#[tokio::test]
async fn silence_from_the_server_times_out() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    let cfg = InworldConfig {
        first_byte_timeout: Duration::from_millis(300),
        chunk_timeout: Duration::from_millis(300),
        ..config(&fake)
    };
    fake.push(Behaviour::Hang);
    let h = hear(tts(cfg.clone()).synthesize("Hello there.")).await;
    let e = h.error.expect("an error");
    assert!(e.0.contains("no data within 0.3 s"), "{e}");
    fake.push(Behaviour::StallAfter(1));
    let h = hear(tts(cfg).synthesize("Hello there.")).await;
    assert_eq!(h.decoded(), ["Hello"]);
    assert!(h.error.is_some_and(|e| e.0.contains("no data within")));
    assert!(fake.wait_for_disconnect(1, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn slow_lines_still_arrive_whole() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    fake.push(Behaviour::Slow(Duration::from_millis(30)));
    let h = hear(tts(config(&fake)).synthesize("one two three")).await;
    assert!(h.error.is_none());
    assert_eq!(h.decoded(), ["one", "two", "three"]);
}

#[tokio::test]
async fn blank_text_sends_nothing() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    let h = hear(tts(config(&fake)).synthesize("  \n ")).await;
    assert!(h.error.is_none() && h.audio.is_empty());
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn the_probe_names_the_voice_or_the_refused_key() {
    let fake = FakeInworld::start(FakeConfig::default()).await;
    let ok = probe(&config(&fake)).await;
    assert_eq!(
        ok,
        Ok("Inworld accepted the key: 3 voices, voice \"Ashley\" available".into())
    );
    let r = &fake.requests()[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("GET", "/tts/v1/voices")
    );
    assert_eq!(r.header("authorization"), Some("Basic test-key"));
    let odd = InworldConfig {
        voice_id: "Nobody".into(),
        ..config(&fake)
    };
    assert!(probe(&odd)
        .await
        .is_ok_and(|m| m.contains("NOT in the list")));
    let secret = "d3JvbmcteA==";
    let refused = probe(&at(&fake.base_url(), secret)).await;
    let e = refused.expect_err("refused");
    assert!(e.contains("INWORLD_API_KEY") && e.contains("401"), "{e}");
    assert!(!e.contains(secret), "{e}");
    let addr = fake.base_url();
    drop(fake);
    let down = probe(&at(&addr, KEY)).await;
    assert!(down.is_err_and(|e| e.contains("cannot reach Inworld")));
}
