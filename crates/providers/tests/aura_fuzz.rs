//! Garbage from Deepgram Aura (proptest; no nightly needed).
//!
//! Counts per run:
//! * 5,000 random or mutated responses (any status, any `Content-Type`,
//!   random bytes, Deepgram error JSON with fields of the wrong types, the
//!   API key in the body) through the sans-IO [`Reply`], each body cut at
//!   random boundaries and ended normally or broken off;
//! * 2,500 random responses (random statuses, types, bodies, chunk
//!   boundaries, wrong `Content-Length`s, resets, early closes, raw
//!   non-HTTP bytes) served by one `FakeAura` to the real `AuraTts`.
//!
//! Properties: no panic; a 200 audio body comes out whole, once, in order,
//! in pieces of at most 100 ms however it was cut (over sockets: a prefix
//! of it, all of it when the response is well formed); anything else is
//! exactly one error that names the status and is one printable line of
//! bounded length without the key; nothing follows an error.

use futures_util::StreamExt;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use providers::deepgram::aura::wire::{self, Reply};
use providers::deepgram::aura::{AuraConfig, AuraTts};
use providers::deepgram::aura_fake::{
    speech_mulaw, AuraBehaviour, FakeAura, FakeAuraConfig, RawEnd, RawResponse,
};
use serde_json::{json, Value};
use std::time::Duration;
use voice::stages::tts::{Tts, TtsError, TtsEvent};

const SECRET: &str = "dg-SECRET-key-4242";

// ---------------------------------------------------------------------------
// Inputs

/// Deepgram error bodies as documented, plus pages a proxy might send.
const CORPUS: &[&str] = &[
    r#"{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials.","request_id":"0b5c"}"#,
    r#"{"err_code":"Payload Too Large","err_msg":"Input text exceeds maximum character limit of 2000.","request_id":"1"}"#,
    r#"{"err_code":"INVALID_QUERY_PARAMETER","err_msg":"Invalid callback url.","request_id":"2"}"#,
    r#"{"err_code":"PAYLOAD_ERROR","err_msg":"Failed to decode payload as UTF-8.","request_id":"3"}"#,
    r#"{"category":"INVALID_JSON","message":"Invalid JSON submitted.","details":"Json deserialize error","request_id":"4"}"#,
    r#"{"reason":"Insufficient permissions."}"#,
    "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
    "upstream connect error or disconnect/reset before headers",
    "",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
    Secret(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Flip(p, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Insert(p, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
        any::<usize>().prop_map(Mutation::Secret),
    ]
}

fn mutate(mut body: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = body.len();
        match *m {
            Mutation::Flip(p, b) if len > 0 => body[p % len] ^= b | 1,
            Mutation::Insert(p, b) => body.insert(p % (len + 1), b),
            Mutation::Delete(p) if len > 0 => {
                body.remove(p % len);
            }
            Mutation::Truncate(p) => body.truncate(p % (len + 1)),
            Mutation::Secret(p) => {
                let at = p % (len + 1);
                body.splice(at..at, SECRET.bytes());
            }
            _ => {}
        }
    }
    body
}

/// Any JSON value, a few levels deep (the wrong types for Deepgram's
/// fields), sometimes holding the key.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "\\PC{0,20}".prop_map(Value::from),
        Just(Value::from(SECRET)),
        Just(Value::from(format!("bad key {SECRET}\n\u{0}"))),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,8}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A Deepgram-shaped error object whose fields have any type.
fn wrong_types() -> impl Strategy<Value = Vec<u8>> {
    (
        json_value(),
        json_value(),
        json_value(),
        prop::sample::select(vec![
            "err_code", "err_msg", "reason", "message", "category", "details",
        ]),
    )
        .prop_map(|(code, msg, extra, key)| {
            json!({"err_code": code, "err_msg": msg, key: extra, "request_id": 7})
                .to_string()
                .into_bytes()
        })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..3000),
        2 => (prop::sample::select(CORPUS), prop::collection::vec(mutation(), 0..6))
            .prop_map(|(b, m)| mutate(b.as_bytes().to_vec(), &m)),
        2 => wrong_types(),
        1 => "[a-zA-Z ,.]{0,60}".prop_map(|t| speech_mulaw(&t, 200.0)),
        1 => Just(Vec::new()),
    ]
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![
        5 => Just(200u16),
        3 => prop::sample::select(vec![
            201u16, 204, 206, 301, 304, 400, 401, 402, 403, 404, 405, 408, 413, 415, 422, 429,
            500, 502, 503, 504,
        ]),
        2 => 200u16..600,
    ]
}

/// Content types: Deepgram's, error types, odd ones (all valid header
/// values).
fn content_type() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        2 => Just(None),
        4 => prop::sample::select(vec![
            "audio/mulaw",
            "audio/basic",
            "audio/wav",
            "application/octet-stream",
            "application/json",
            "application/json; charset=utf-8",
            "text/html; charset=utf-8",
            "text/plain",
            "application/problem+json",
            "",
        ])
        .prop_map(|s| Some(s.to_string())),
        1 => "[!-~][ -~]{0,30}".prop_map(Some),
    ]
}

/// Cut `body` at these positions (any byte, possibly repeated: empty
/// pieces).
fn cut(body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for a in at {
        out.push(body[from..a].to_vec());
        from = a;
    }
    out.push(body[from..].to_vec());
    out
}

fn check_text(e: &TtsError) -> Result<(), TestCaseError> {
    prop_assert!(!e.0.contains(SECRET), "key leaked: {}", e.0);
    prop_assert!(!e.0.contains('\n') && !e.0.contains('\r'), "{:?}", e.0);
    prop_assert!(e.0.chars().count() <= 800, "{} chars", e.0.chars().count());
    prop_assert!(e.0.starts_with("Deepgram Aura"), "{}", e.0);
    Ok(())
}

// ---------------------------------------------------------------------------
// Sans-IO

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_response_through_the_reply(
        status in status(),
        ct in content_type(),
        body in body(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        broken in any::<bool>(),
    ) {
        let mut r = Reply::new(status, ct.as_deref(), 8000).redacting(SECRET);
        let audio = status == 200 && wire::is_audio_type(ct.as_deref());
        prop_assert_eq!(r.is_audio(), audio);
        let mut ulaw = Vec::new();
        let mut error = None;
        for piece in cut(&body, &cuts) {
            match r.on_chunk(&piece) {
                Ok(a) => for a in a {
                    prop_assert!(!a.bytes.is_empty() && a.bytes.len() <= 800);
                    prop_assert_eq!(a.rate, 8000);
                    prop_assert_eq!(a.encoding, voice::frames::Encoding::MuLaw);
                    ulaw.extend_from_slice(&a.bytes);
                },
                Err(e) => { error = Some(e); break; }
            }
        }
        if error.is_none() {
            error = if broken {
                Some(r.on_broken(&format!("connection reset ({SECRET})")))
            } else {
                r.on_end().err()
            };
        }
        if audio {
            prop_assert_eq!(&ulaw, &body, "every byte once, in order, as sent");
            prop_assert_eq!(r.audio_bytes(), body.len());
            prop_assert_eq!(error.is_some(), broken || body.is_empty());
        } else {
            prop_assert!(ulaw.is_empty());
            let e = error.clone().expect("an error answer is an error");
            prop_assert!(e.0.contains(&format!("HTTP {status}")), "{}", e.0);
        }
        if let Some(e) = &error {
            check_text(e)?;
            // The reply is over: the same error again.
            prop_assert_eq!(r.on_end().err(), Some(e.clone()));
            prop_assert_eq!(r.on_chunk(b"more").err(), Some(e.clone()));
        }
    }

    #[test]
    fn error_bodies_with_wrong_types(status in 100u16..1000, body in wrong_types()) {
        let t = wire::error_text(status, &body, &[SECRET]);
        check_text(&TtsError(t.clone()))?;
        prop_assert!(t.contains(&format!("HTTP {status}")), "{}", t);
        if let Some(m) = wire::deepgram_message(&body) {
            prop_assert!(!m.is_empty());
        }
    }
}

// ---------------------------------------------------------------------------
// Over sockets, through the real client

#[derive(Debug, Clone)]
enum Length {
    Chunked,
    Exact,
    Declared(usize),
}

fn answer() -> impl Strategy<Value = AuraBehaviour> {
    let length = prop_oneof![
        4 => Just(Length::Chunked),
        2 => Just(Length::Exact),
        1 => (0usize..4000).prop_map(Length::Declared),
    ];
    let end = prop_oneof![
        6 => Just(RawEnd::Complete),
        1 => Just(RawEnd::Reset),
        1 => Just(RawEnd::Close),
    ];
    let raw = (
        status(),
        content_type(),
        body(),
        prop::collection::vec(any::<usize>(), 0..10),
        length,
        end,
    )
        .prop_map(|(status, content_type, body, cuts, length, end)| {
            let content_length = match length {
                Length::Chunked => None,
                Length::Exact => Some(body.len()),
                Length::Declared(n) => Some(n),
            };
            AuraBehaviour::Raw(RawResponse {
                status,
                content_type,
                chunks: cut(&body, &cuts),
                content_length,
                end,
            })
        });
    let wire_bytes = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        (prop::collection::vec(mutation(), 1..4)).prop_map(|m| mutate(
            b"HTTP/1.1 200 OK\r\nContent-Type: audio/mulaw\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                .to_vec(),
            &m
        )),
    ];
    prop_oneof![
        19 => raw,
        1 => wire_bytes.prop_map(AuraBehaviour::Wire),
    ]
}

/// Tally of the socket runs.
#[derive(Default, Debug)]
struct Tally {
    well_formed_audio: usize,
    delivered_whole: usize,
    errors: usize,
    ok: usize,
}

#[test]
fn random_answers_through_the_real_client() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let fake = rt.block_on(FakeAura::start(FakeAuraConfig {
        key: SECRET.into(),
        reset_grace: Duration::ZERO,
        ..FakeAuraConfig::default()
    }));
    let mut cfg = AuraConfig::new(SECRET).with_base_url(fake.base_url());
    cfg.first_byte_timeout = Duration::from_secs(5);
    cfg.chunk_timeout = Duration::from_secs(5);
    let tts = AuraTts::new(cfg).unwrap();
    let tally = std::cell::RefCell::new(Tally::default());
    let mut runner = TestRunner::new(Config {
        cases: 2500,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&answer(), |behaviour| {
            fake.push(behaviour.clone());
            let (ulaw, pieces_ok, error, after_error) = rt.block_on(async {
                let mut s = tts.synthesize("Your technician is on the way.");
                let mut ulaw = Vec::new();
                let mut pieces_ok = true;
                let mut error = None;
                let mut after_error = 0;
                loop {
                    let next = tokio::time::timeout(Duration::from_secs(20), s.next()).await;
                    let Ok(next) = next else {
                        panic!("the stream stalled for 20 s on {behaviour:?}");
                    };
                    match next {
                        None => break,
                        Some(_) if error.is_some() => after_error += 1,
                        Some(Ok(TtsEvent::Audio(a))) => {
                            pieces_ok &= !a.bytes.is_empty()
                                && a.bytes.len() <= 800
                                && a.encoding == voice::frames::Encoding::MuLaw;
                            ulaw.extend_from_slice(&a.bytes);
                        }
                        Some(Ok(TtsEvent::Word(_) | TtsEvent::Cut)) => pieces_ok = false,
                        Some(Err(e)) => error = Some(e),
                    }
                }
                (ulaw, pieces_ok, error, after_error)
            });
            prop_assert!(pieces_ok, "pieces of at most 100 ms, audio only");
            prop_assert_eq!(after_error, 0, "nothing after an error");
            let mut t = tally.borrow_mut();
            match &error {
                Some(e) => {
                    check_text(e)?;
                    t.errors += 1;
                }
                None => t.ok += 1,
            }
            let AuraBehaviour::Raw(raw) = &behaviour else {
                return Ok(());
            };
            let body = raw.chunks.concat();
            let audio = raw.status == 200 && wire::is_audio_type(raw.content_type.as_deref());
            if audio {
                let want = &body;
                prop_assert!(
                    want.starts_with(&ulaw),
                    "the audio is a prefix of the body, in order"
                );
                let framed = match raw.content_length {
                    None => raw.end == RawEnd::Complete,
                    Some(n) => n == body.len() && raw.end != RawEnd::Reset,
                };
                if framed && !body.is_empty() {
                    t.well_formed_audio += 1;
                    prop_assert!(error.is_none(), "{:?}", error);
                    prop_assert_eq!(ulaw.len(), want.len(), "every byte once");
                    t.delivered_whole += 1;
                }
                if framed && body.is_empty() {
                    prop_assert!(error.is_some(), "an empty 200 is an error");
                }
            } else {
                prop_assert!(ulaw.is_empty(), "no audio from an error answer");
                let e = error.clone().expect("an error answer is an error");
                if raw.end != RawEnd::Reset {
                    prop_assert!(e.0.contains(&format!("HTTP {}", raw.status)), "{}", e.0);
                }
            }
            Ok(())
        })
        .unwrap();
    let t = tally.into_inner();
    eprintln!("aura over sockets: {t:?}");
    assert!(t.well_formed_audio >= 300, "the generator is off: {t:?}");
    assert_eq!(t.delivered_whole, t.well_formed_audio);
    assert!(t.errors >= 500, "{t:?}");
}

#[test]
fn one_response_cut_everywhere_over_sockets() {
    // The same audio, every chunk size from 1 byte up: nothing lost.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let fake = rt.block_on(FakeAura::start(FakeAuraConfig::default()));
    let tts = AuraTts::new(AuraConfig::new("test-key").with_base_url(fake.base_url())).unwrap();
    let body = speech_mulaw("Cut anywhere, heard whole.", 60.0);
    for size in [1usize, 2, 3, 7, 159, 160, 161, 799, 800, 801, 1601, 4096] {
        fake.push(AuraBehaviour::Raw(RawResponse {
            status: 200,
            content_type: Some("audio/mulaw".into()),
            chunks: body.chunks(size).map(<[u8]>::to_vec).collect(),
            content_length: None,
            end: RawEnd::Complete,
        }));
        let ulaw = rt.block_on(async {
            let mut s = tts.synthesize("x");
            let mut ulaw = Vec::new();
            while let Some(item) = s.next().await {
                match item {
                    Ok(TtsEvent::Audio(a)) => ulaw.extend_from_slice(&a.bytes),
                    other => panic!("{other:?}"),
                }
            }
            ulaw
        });
        assert_eq!(ulaw, body, "chunks of {size}");
    }
}
