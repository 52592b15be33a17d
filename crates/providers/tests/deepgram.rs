//! The Deepgram live client against the loopback fake (real WebSockets,
//! the real protocol): utterances from speech, options and key on the
//! socket, keep-alive while audio pauses, `Finalize` bounded, a dropped
//! socket reconnected with the unheard audio replayed, a refused key final,
//! `CloseStream` at the end — and never an empty audio frame.

use bytes::Bytes;
use providers::deepgram::fake::{FakeBehaviour, FakeDeepgram};
use providers::deepgram::live::{spawn, LiveConfig, LiveEvent, LiveEvents, LiveHandle};
use providers::deepgram::utterances::Heard;
use std::time::Duration;
use voice::offline::codec::encode_mulaw;

fn config(fake: &FakeDeepgram) -> LiveConfig {
    let mut c = LiveConfig::new(fake.base_url(), "test-key");
    c.options.keyterms = vec!["ACE Cooling".into()];
    c
}

/// Speak `text` (codec speech) then `silence_ms` of silence, in 20 ms
/// frames, as fast as the socket takes them.
fn say(h: &LiveHandle, text: &str, silence_ms: usize) {
    let (mut ulaw, _) = encode_mulaw(text, 15.0);
    ulaw.extend(std::iter::repeat_n(0xFFu8, silence_ms * 8));
    for chunk in ulaw.chunks(160) {
        h.audio(Bytes::copy_from_slice(chunk));
    }
}

/// Events until `n` finals arrived (or `wait` passed).
async fn finals(rx: &mut LiveEvents, n: usize, wait: Duration) -> (Vec<String>, Vec<LiveEvent>) {
    let mut finals = Vec::new();
    let mut all = Vec::new();
    let until = tokio::time::Instant::now() + wait;
    while finals.len() < n {
        match tokio::time::timeout_at(until, rx.recv()).await {
            Ok(Some(e)) => {
                if let LiveEvent::Heard(Heard::Final(t)) = &e {
                    finals.push(t.clone());
                }
                all.push(e);
            }
            _ => break,
        }
    }
    (finals, all)
}

#[tokio::test]
async fn speech_becomes_one_final_utterance_each_with_interims_between() {
    let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
    let (h, mut rx) = spawn(config(&fake));
    say(&h, "Hi, my AC stopped cooling last night", 700);
    say(&h, "It's 78745", 700);
    let (got, all) = finals(&mut rx, 2, Duration::from_secs(10)).await;
    assert_eq!(got, ["Hi, my AC stopped cooling last night", "It's 78745"]);
    assert!(
        all.iter()
            .any(|e| matches!(e, LiveEvent::Heard(Heard::Interim(t)) if t == "Hi, my AC")),
        "interim text grows word by word: {all:?}"
    );
    let log = fake.log();
    assert_eq!(log.connections, 1);
    // The socket was opened with exactly the configured options.
    assert_eq!(log.queries[0], config(&fake).options.url(""));
    assert!(log.queries[0].contains("keyterm=ACE%20Cooling"));
    drop(h);
    assert_eq!(rx.recv().await, None, "the task ends after the close");
    let log = fake.log();
    assert_eq!(log.close_streams, 1, "CloseStream at the end");
    assert_eq!(log.empty_frames, 0);
}

#[tokio::test]
async fn without_speech_final_utterance_end_ends_the_utterance() {
    let fake = FakeDeepgram::start(FakeBehaviour {
        speech_final: false,
        ..FakeBehaviour::default()
    })
    .await;
    let (h, mut rx) = spawn(config(&fake));
    say(&h, "My name is Dana Fields", 1200);
    let (got, _) = finals(&mut rx, 1, Duration::from_secs(10)).await;
    assert_eq!(got, ["My name is Dana Fields"]);
}

#[tokio::test]
async fn a_dropped_socket_is_reopened_and_no_word_is_lost() {
    let fake = FakeDeepgram::start(FakeBehaviour {
        drop_after_words: Some(4),
        final_every_words: 2,
        ..FakeBehaviour::default()
    })
    .await;
    let (h, mut rx) = spawn(config(&fake));
    say(&h, "It's 4329 Franklin Street in Austin", 800);
    let (got, all) = finals(&mut rx, 1, Duration::from_secs(10)).await;
    assert_eq!(got, ["It's 4329 Franklin Street in Austin"], "{all:?}");
    assert!(all
        .iter()
        .any(|e| matches!(e, LiveEvent::Reconnected { .. })));
    assert_eq!(fake.log().connections, 2);
}

#[tokio::test]
async fn a_refused_key_is_final_and_said_once() {
    let fake = FakeDeepgram::start(FakeBehaviour {
        key: "another-key".into(),
        ..FakeBehaviour::default()
    })
    .await;
    let (h, mut rx) = spawn(config(&fake));
    say(&h, "hello", 100);
    let ev = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("an answer");
    match ev {
        Some(LiveEvent::Failed { why, unheard }) => {
            assert!(why.contains("401"), "{why}");
            // What was said before the refusal is handed on whole (it
            // waited in the queue while the handshake was refused).
            assert_eq!(unheard.len(), encode_mulaw("hello", 15.0).0.len() + 800);
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(rx.recv().await, None, "nothing after Failed");
    assert_eq!(fake.log().refused, 1, "a 4xx is not retried");
    drop(h);
}

#[tokio::test]
async fn keep_alive_while_audio_pauses_and_never_an_empty_frame() {
    let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
    let mut cfg = config(&fake);
    cfg.keepalive_every = Duration::from_millis(150);
    let (h, mut rx) = spawn(cfg);
    h.audio(Bytes::new()); // ignored, never sent
    say(&h, "one two", 0);
    tokio::time::sleep(Duration::from_millis(700)).await;
    say(&h, "three", 600);
    let (got, _) = finals(&mut rx, 1, Duration::from_secs(10)).await;
    assert_eq!(got, ["one two three"]);
    let log = fake.log();
    assert!(log.keepalives >= 2, "{log:?}");
    assert_eq!(log.empty_frames, 0);
}

#[tokio::test]
async fn finalize_is_answered_or_the_words_are_taken_after_a_bounded_wait() {
    let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
    let (h, mut rx) = spawn(config(&fake));
    say(&h, "yes that's right", 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.finalize();
    let (got, _) = finals(&mut rx, 1, Duration::from_secs(5)).await;
    assert_eq!(got, ["yes that's right"]);
    assert_eq!(fake.log().finalizes, 1);
    // Words Deepgram never finalizes are taken at the end of the call.
    let fake = FakeDeepgram::start(FakeBehaviour {
        final_every_words: 10,
        ..FakeBehaviour::default()
    })
    .await;
    let (h, mut rx) = spawn(config(&fake));
    say(&h, "I have to go", 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(h);
    let (got, _) = finals(&mut rx, 1, Duration::from_secs(5)).await;
    assert_eq!(got, ["I have to go"]);
}

/// Every event until `wait` passed or the task ended.
async fn events_for(rx: &mut LiveEvents, wait: Duration) -> Vec<LiveEvent> {
    let until = tokio::time::Instant::now() + wait;
    let mut all = Vec::new();
    while let Ok(Some(e)) = tokio::time::timeout_at(until, rx.recv()).await {
        all.push(e);
    }
    all
}

#[tokio::test]
async fn a_socket_that_goes_quiet_is_reopened_then_the_caller_asked_then_given_up() {
    let fake = FakeDeepgram::start(FakeBehaviour {
        silent: true, // hears audio, never answers
        ..FakeBehaviour::default()
    })
    .await;
    let mut cfg = config(&fake);
    cfg.stall_after = Duration::from_millis(300);
    let (h, mut rx) = spawn(cfg);
    say(&h, "My name is Dana Fields", 300);
    h.finalize(); // the VAD heard the caller stop
    let all = events_for(&mut rx, Duration::from_secs(3)).await;
    // Stall 1: reopened, the replay finalized; stall 2: reopened afresh
    // and the caller is to be asked again.
    assert!(
        matches!(
            all.as_slice(),
            [
                LiveEvent::Reconnected { .. },
                LiveEvent::NotHeard,
                LiveEvent::Reconnected { .. }
            ]
        ),
        "{all:?}"
    );
    assert_eq!(fake.log().connections, 3);
    assert_eq!(fake.log().finalizes, 2, "the replay was finalized once");
    // The caller says it again; still nothing: given up.
    say(&h, "My name is Dana Fields", 300);
    h.finalize();
    let all = events_for(&mut rx, Duration::from_secs(3)).await;
    let [LiveEvent::Failed { why, unheard }] = all.as_slice() else {
        panic!("{all:?}");
    };
    assert!(why.contains("stopped answering"), "{why}");
    // The line said again, which Deepgram never answered, is handed on
    // whole (its words decode from it), and nothing from before it.
    let (said, _) = encode_mulaw("My name is Dana Fields", 15.0);
    assert_eq!(unheard.len(), said.len() + 300 * 8, "just the last line");
    assert_eq!(&unheard[..said.len()], &said[..]);
}

#[tokio::test]
async fn an_unanswered_finalize_after_speech_is_no_stall() {
    let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
    let mut cfg = config(&fake);
    cfg.stall_after = Duration::from_millis(300);
    let (h, mut rx) = spawn(cfg);
    say(&h, "It's 78745", 700);
    let (got, _) = finals(&mut rx, 1, Duration::from_secs(10)).await;
    assert_eq!(got, ["It's 78745"]);
    // Deepgram answered with speech_final already: this Finalize finds
    // nothing pending, and the fake (like Deepgram) need not answer.
    h.finalize();
    let all = events_for(&mut rx, Duration::from_secs(1)).await;
    assert!(all.is_empty(), "{all:?}");
    assert_eq!(fake.log().connections, 1);
}

#[tokio::test]
async fn after_the_caller_is_asked_again_a_recovered_socket_hears_them() {
    // Socket 1 hears the first line (the call clock moves on), then drops
    // in the second; sockets 2 and 3 are silent (two stalls: the caller is
    // asked again); socket 4 is healthy.
    let fake = FakeDeepgram::start(FakeBehaviour {
        drop_after_words: Some(9),
        ..FakeBehaviour::default()
    })
    .await;
    let mut cfg = config(&fake);
    cfg.stall_after = Duration::from_millis(300);
    let (h, mut rx) = spawn(cfg);
    let until = |n: usize| {
        let fake = &fake;
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while fake.log().connections < n {
                assert!(tokio::time::Instant::now() < deadline, "no socket {n}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    until(1).await;
    fake.set_behaviour(FakeBehaviour {
        silent: true,
        ..FakeBehaviour::default()
    });
    say(&h, "Hi, my AC stopped cooling last night", 700);
    let (got, _) = finals(&mut rx, 1, Duration::from_secs(10)).await;
    assert_eq!(got, ["Hi, my AC stopped cooling last night"]);
    say(&h, "My name is Dana Fields", 300);
    until(2).await;
    h.finalize();
    until(3).await;
    fake.set_behaviour(FakeBehaviour::default());
    let all = events_for(&mut rx, Duration::from_secs(3)).await;
    assert!(all.contains(&LiveEvent::NotHeard), "{all:?}");
    assert_eq!(fake.log().connections, 4);
    // The caller's repeat is heard on the recovered socket.
    say(&h, "My name is Dana Fields", 700);
    let (got, all) = finals(&mut rx, 1, Duration::from_secs(10)).await;
    assert_eq!(got, ["My name is Dana Fields"], "{all:?}");
}

mod through_the_pipeline {
    //! The inbound path of a phone call — VAD stage, STT stage, Deepgram
    //! client — against the fake: the caller's µ-law reaches Deepgram's
    //! socket byte for byte, and the socket says what it carries.

    use super::*;
    use providers::deepgram::stt::DeepgramStt;
    use voice::frames::{Audio, ControlFrame, Data, Frame};
    use voice::offline::CodecDetector;
    use voice::stages::stt::SttStage;
    use voice::stages::vad::VadStage;
    use voice::Pipeline;

    /// Sends `frames` as caller audio through VAD → Deepgram STT; the
    /// final transcripts, once `want` arrived (or 10 s passed).
    async fn heard(fake: &FakeDeepgram, frames: Vec<Audio>, want: usize) -> Vec<String> {
        let mut p = Pipeline::builder()
            .stage(VadStage::new(CodecDetector::default()))
            .stage(SttStage::new(DeepgramStt::new(config(fake))))
            .tail(4096)
            .build();
        let input = p.input().unwrap().clone();
        for a in frames {
            input.send(Frame::input_audio(a)).await.unwrap();
        }
        let tail = p.tail().unwrap();
        let mut finals = Vec::new();
        let until = tokio::time::Instant::now() + Duration::from_secs(10);
        while finals.len() < want {
            match tokio::time::timeout_at(until, tail.recv()).await {
                Ok(Some(Frame::Data(d))) => {
                    if let Data::Transcript {
                        text,
                        is_final: true,
                    } = d.data
                    {
                        if !text.is_empty() {
                            finals.push(text.to_string());
                        }
                    }
                }
                Ok(Some(Frame::Control(ControlFrame::End))) | Ok(None) | Err(_) => break,
                Ok(Some(_)) => {}
            }
        }
        drop(input);
        p.end(Duration::from_secs(5)).await;
        finals
    }

    /// Waits until the fake received `n` audio bytes (or 5 s passed).
    async fn received(fake: &FakeDeepgram, n: usize) -> Vec<u8> {
        let until = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let got = fake.audio_received();
            if got.len() >= n || tokio::time::Instant::now() >= until {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Codec speech of `text` then 700 ms of silence, as 8 kHz µ-law.
    fn spoken(text: &str) -> Vec<u8> {
        let (mut ulaw, _) = encode_mulaw(text, 15.0);
        ulaw.extend(std::iter::repeat_n(0xFFu8, 700 * 8));
        ulaw
    }

    #[tokio::test]
    async fn the_callers_mulaw_reaches_deepgram_byte_for_byte() {
        let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
        let mut ulaw = spoken("Hi, my AC stopped cooling last night");
        // Two frames of line noise holding every byte value: nothing on
        // the way may "normalise" a byte (0x7F and 0xFF are both zero).
        ulaw.extend((0..320u32).map(|i| i as u8));
        ulaw.extend(spoken("It's 78745"));
        let frames = ulaw
            .chunks(160)
            .map(|c| Audio::mulaw(c.to_vec(), 8000))
            .collect();
        let got = heard(&fake, frames, 2).await;
        assert_eq!(got, ["Hi, my AC stopped cooling last night", "It's 78745"]);
        let sent = received(&fake, ulaw.len()).await;
        assert!(
            sent == ulaw,
            "{} bytes sent, {} received",
            ulaw.len(),
            sent.len()
        );
        let log = fake.log();
        assert_eq!(log.connections, 1);
        assert!(
            log.queries[0].contains("encoding=mulaw&sample_rate=8000"),
            "{}",
            log.queries[0]
        );
    }

    #[tokio::test]
    async fn pcm16_callers_are_encoded_to_what_the_socket_says_it_carries() {
        let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
        let ulaw = spoken("My name is Dana Fields");
        let pcm = audio::mulaw::decode_to_pcm16le(&ulaw);
        let frames = pcm
            .chunks(320)
            .map(|c| Audio::pcm16(c.to_vec(), 8000))
            .collect();
        let got = heard(&fake, frames, 1).await;
        assert_eq!(got, ["My name is Dana Fields"]);
        // Every µ-law level decodes and encodes back to itself.
        let sent = received(&fake, ulaw.len()).await;
        assert!(
            sent == ulaw,
            "{} bytes sent, {} received",
            ulaw.len(),
            sent.len()
        );
    }

    #[tokio::test]
    async fn audio_at_another_rate_is_resampled_to_the_sockets() {
        let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
        // One second of 16 kHz PCM16 in 20 ms frames, then an unusable
        // rate (left out, never sent mislabelled).
        let mut frames: Vec<Audio> = (0..50)
            .map(|_| Audio::pcm16(vec![0u8; 640], 16_000))
            .collect();
        frames.push(Audio::mulaw(vec![0xFFu8; 160], 11_025));
        heard(&fake, frames, 0).await;
        let sent = received(&fake, 8000).await;
        // 8 kHz again, less the resampler's latency (a few ms).
        assert!(
            (7_800..=8_000).contains(&sent.len()),
            "{} bytes for 1 s",
            sent.len()
        );
        assert!(sent.iter().all(|b| *b == 0xFF || *b == 0x7F));
    }
}

mod the_fake {
    //! The fake hears the format its socket's query names, as Deepgram
    //! does, and refuses a query without one.

    use super::*;
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;

    async fn open(
        fake: &FakeDeepgram,
        query: &str,
    ) -> Result<
        tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
        String,
    > {
        let url = format!("{}/v1/listen?{query}", fake.base_url());
        let mut req = url.into_client_request().unwrap();
        req.headers_mut()
            .insert("Authorization", "Token test-key".parse().unwrap());
        tokio_tungstenite::connect_async(req)
            .await
            .map(|(ws, _)| ws)
            .map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn linear16_is_heard_when_the_query_says_so() {
        let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
        let mut ws = open(&fake, "encoding=linear16&sample_rate=8000")
            .await
            .unwrap();
        let (mut ulaw, _) = encode_mulaw("one two three", 15.0);
        ulaw.extend(std::iter::repeat_n(0xFFu8, 700 * 8));
        let pcm = audio::mulaw::decode_to_pcm16le(&ulaw);
        for c in pcm.chunks(320) {
            ws.send(Message::Binary(Bytes::copy_from_slice(c)))
                .await
                .unwrap();
        }
        let until = tokio::time::Instant::now() + Duration::from_secs(5);
        while fake.log().words_heard.len() < 3 && tokio::time::Instant::now() < until {
            let _ = tokio::time::timeout(Duration::from_millis(50), ws.next()).await;
        }
        assert_eq!(fake.log().words_heard, ["one", "two", "three"]);
        assert_eq!(fake.audio_received(), pcm);
    }

    #[tokio::test]
    async fn a_query_without_the_audio_format_is_refused() {
        let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
        for query in [
            "model=nova-3",
            "encoding=mulaw",
            "sample_rate=8000",
            "encoding=opus&sample_rate=8000",
            "encoding=mulaw&sample_rate=16000",
        ] {
            let e = open(&fake, query).await.unwrap_err();
            assert!(e.contains("400"), "{query}: {e}");
        }
        assert_eq!(fake.log().refused, 5);
        assert_eq!(fake.log().connections, 0);
    }
}

#[tokio::test]
async fn audio_goes_up_in_100_ms_pieces_and_all_of_it_before_finalize() {
    let fake = FakeDeepgram::start(FakeBehaviour::default()).await;
    let (h, mut rx) = spawn(config(&fake));
    // 1.04 s of caller audio in Twilio's 20 ms frames: not a whole number
    // of 100 ms pieces, so the last 40 ms wait for the Finalize.
    let (mut ulaw, _) = encode_mulaw("the heater clicks", 15.0);
    ulaw.resize(8_320, 0xFF);
    for frame in ulaw.chunks(160) {
        h.audio(Bytes::copy_from_slice(frame));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.finalize();
    let (got, _) = finals(&mut rx, 1, Duration::from_secs(5)).await;
    assert_eq!(got, ["the heater clicks"]);
    assert_eq!(
        fake.audio_received(),
        ulaw,
        "every byte, in order, before the Finalize's answer"
    );
    let log = fake.log();
    assert!(
        log.binary_frames <= 11,
        "52 frames of 20 ms go up as 100 ms pieces and one rest: {log:?}"
    );
    assert_eq!(log.empty_frames, 0);
}
