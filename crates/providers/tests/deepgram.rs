//! The Deepgram live client against the loopback fake (real WebSockets,
//! the real protocol): utterances from speech, options and key on the
//! socket, keep-alive while audio pauses, `Finalize` bounded, a dropped
//! socket reconnected with the unheard audio replayed, a refused key final,
//! `CloseStream` at the end — and never an empty audio frame.

use bytes::Bytes;
use providers::deepgram::fake::{FakeBehaviour, FakeDeepgram};
use providers::deepgram::live::{spawn, LiveConfig, LiveEvent, LiveHandle};
use providers::deepgram::utterances::Heard;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
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
async fn finals(
    rx: &mut UnboundedReceiver<LiveEvent>,
    n: usize,
    wait: Duration,
) -> (Vec<String>, Vec<LiveEvent>) {
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
async fn events_for(rx: &mut UnboundedReceiver<LiveEvent>, wait: Duration) -> Vec<LiveEvent> {
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
