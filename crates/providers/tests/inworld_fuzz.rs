//! Property-based fuzzing of the Inworld response path: the sans-IO
//! decoder (NDJSON framing, line parser, WAV stripping, sample assembly)
//! and the real client against the fake server.
//!
//! Case counts (10,000 sans-IO, 2,000 over the wire):
//! * `valid_bodies_lose_nothing_however_split`: 3,000 bodies of valid
//!   lines (audio with and without WAV headers, odd lengths, audio that
//!   looks like the start of a header, timings on their own lines or with
//!   audio, CRLF, blank and ignorable lines, no final newline) cut at
//!   random points: every audio byte (header-free) and every word comes out
//!   once, in order, and no error.
//! * `mutated_lines_end_cleanly`: 4,000 bodies of valid lines mutated —
//!   fields removed, wrong types, odd base64, huge numbers, arrays of
//!   mismatched length, error objects of every shape, byte flips,
//!   truncation, inserted bytes, invalid UTF-8.
//! * `soup_ends_cleanly`: 3,000 bodies of JSON-ish tokens and raw bytes,
//!   under three line limits.
//! * `client_over_the_wire_matches_the_decoder`: 2,000 of the above bodies
//!   served by the fake through `InworldTts`.
//!
//! Properties: never a panic; at most one error, and only last; audio in
//! whole non-empty samples, never more than the body's size; feeding the
//! body in any pieces gives the same items as feeding it whole; the client
//! yields exactly the decoder's words and audio, and an error exactly when
//! the decoder does.

mod support;

use base64::engine::general_purpose::{STANDARD as B64, URL_SAFE_NO_PAD};
use base64::Engine;
use futures_util::StreamExt;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{TestCaseError, TestRunner};
use providers::inworld::fake::{Behaviour, FakeConfig, FakeInworld};
use providers::inworld::stream::{Event, StreamDecoder, StreamError, MAX_LINE_BYTES};
use providers::inworld::wav::{canonical_header, header_with_list};
use providers::inworld::{InworldConfig, InworldTts};
use serde_json::{json, Value};
use std::time::Duration;
use support::fuzz::{config, pieces, splits};
use voice::accountant::WordTiming;
use voice::stages::tts::{Tts, TtsEvent};

// ---------------------------------------------------------------------
// Valid bodies

#[derive(Debug, Clone)]
struct Entry {
    audio: Vec<u8>,
    /// 0: none, 1: canonical, 2: with a LIST chunk.
    header: u8,
    words: Vec<(String, f64)>,
    /// Timings on a line of their own (ASYNC), before the audio.
    separate: bool,
    /// The audio under `audioChunk` (the WebSocket shape) instead.
    in_chunk: bool,
    /// Unpadded URL-safe base64.
    url_safe: bool,
}

fn audio_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => vec(any::<u8>(), 0..64),
        1 => Just(b"R".to_vec()),
        1 => Just(b"RIF".to_vec()),
        1 => vec(any::<u8>(), 0..6).prop_map(|t| [b"RIFF".to_vec(), t].concat()),
        1 => vec(any::<u8>(), 200..1500),
    ]
}

fn seconds() -> impl Strategy<Value = f64> {
    prop_oneof![
        0.0..600.0f64,
        Just(0.0),
        (0u32..100_000).prop_map(|ms| f64::from(ms) / 1000.0),
    ]
}

fn entry() -> impl Strategy<Value = Entry> {
    (
        audio_bytes(),
        0u8..3,
        vec(("[A-Za-z'.,?é]{1,10}", seconds()), 0..4),
        any::<bool>(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(audio, header, words, separate, in_chunk, url_safe)| Entry {
                audio,
                header,
                words,
                separate,
                in_chunk,
                url_safe,
            },
        )
}

#[derive(Debug, Clone)]
struct ValidBody {
    body: Vec<u8>,
    words: Vec<WordTiming>,
    audio: Vec<u8>,
}

const LINE_ENDS: [&str; 5] = ["\n", "\r\n", "\n\n", "\r\n  \r\n", "\n\t\n"];

fn build(entries: &[Entry], ends: &[usize], extras: &[bool], no_final_newline: bool) -> ValidBody {
    let mut lines: Vec<String> = Vec::new();
    let mut words = Vec::new();
    let mut audio = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if extras.get(i).copied().unwrap_or(false) {
            lines.push(json!({"usage": {"processedCharactersCount": 3}}).to_string());
        }
        let timing = json!({"wordAlignment": {
            "words": e.words.iter().map(|w| w.0.clone()).collect::<Vec<_>>(),
            "wordStartTimeSeconds": e.words.iter().map(|w| w.1).collect::<Vec<_>>(),
            "wordEndTimeSeconds": e.words.iter().map(|w| w.1 + 0.2).collect::<Vec<_>>(),
        }});
        let len = e.audio.len() as u32;
        let mut chunk = match e.header {
            1 => canonical_header(8000, len),
            2 => header_with_list(8000, len),
            _ => Vec::new(),
        };
        chunk.extend_from_slice(&e.audio);
        let b64 = if e.url_safe {
            URL_SAFE_NO_PAD.encode(&chunk)
        } else {
            B64.encode(&chunk)
        };
        let mut result = json!({});
        if e.in_chunk {
            result["audioChunk"] = json!({"audioContent": b64});
        } else {
            result["audioContent"] = json!(b64);
        }
        if e.separate {
            if !e.words.is_empty() {
                lines.push(json!({"result": {"timestampInfo": timing}}).to_string());
            }
        } else {
            result["timestampInfo"] = timing;
        }
        lines.push(json!({ "result": result }).to_string());
        for (w, t) in &e.words {
            words.push(WordTiming {
                word: w.clone(),
                start: Duration::from_secs_f64(*t),
            });
        }
        audio.extend_from_slice(&e.audio);
    }
    audio.truncate(audio.len() / 2 * 2);
    let mut body = String::new();
    for (i, l) in lines.iter().enumerate() {
        body.push_str(l);
        let last = i + 1 == lines.len();
        if !(last && no_final_newline) {
            body.push_str(LINE_ENDS[ends.get(i).copied().unwrap_or(0) % LINE_ENDS.len()]);
        }
    }
    ValidBody {
        body: body.into_bytes(),
        words,
        audio,
    }
}

fn valid_body() -> impl Strategy<Value = ValidBody> {
    (
        vec(entry(), 0..8),
        vec(0usize..5, 16),
        vec(prop::bool::weighted(0.2), 8),
        any::<bool>(),
    )
        .prop_map(|(entries, ends, extras, no_nl)| build(&entries, &ends, &extras, no_nl))
}

type Items = Vec<Result<Event, StreamError>>;

fn decode(pieces: &[&[u8]], limit: usize) -> Items {
    let mut d = StreamDecoder::new(limit);
    let mut out = Vec::new();
    for p in pieces {
        out.extend(d.push(p));
    }
    out.extend(d.finish());
    out
}

/// Words, concatenated audio, and whether it failed.
fn summary(items: &Items) -> (Vec<WordTiming>, Vec<u8>, bool) {
    let mut words = Vec::new();
    let mut audio = Vec::new();
    let mut failed = false;
    for i in items {
        match i {
            Ok(Event::Word(w)) => words.push(w.clone()),
            Ok(Event::Audio { pcm, .. }) => audio.extend_from_slice(pcm),
            Err(_) => failed = true,
        }
    }
    (words, audio, failed)
}

/// The invariants every output keeps; returns its summary.
fn check_items(
    body: &[u8],
    splits: &[Index],
    limit: usize,
) -> Result<(Vec<WordTiming>, Vec<u8>, bool), TestCaseError> {
    let whole = decode(&[body], limit);
    let split = decode(&pieces(body, splits), limit);
    let (w1, a1, f1) = summary(&whole);
    let (w2, a2, f2) = summary(&split);
    prop_assert_eq!(&w1, &w2, "words differ by split");
    prop_assert_eq!(&a1, &a2, "audio differs by split");
    prop_assert_eq!(f1, f2, "error differs by split");
    for items in [&whole, &split] {
        if let Some(pos) = items.iter().position(Result::is_err) {
            prop_assert_eq!(pos + 1, items.len(), "an error is last");
        }
        for i in items.iter() {
            if let Ok(Event::Audio { pcm, .. }) = i {
                prop_assert!(!pcm.is_empty() && pcm.len() % 2 == 0);
            }
        }
    }
    prop_assert!(a1.len() <= body.len(), "no more audio than body");
    Ok((w1, a1, f1))
}

#[test]
fn valid_bodies_lose_nothing_however_split() {
    let mut runner = TestRunner::new(config(3000));
    let result = runner.run(&(valid_body(), splits()), |(v, splits)| {
        let (words, audio, failed) = check_items(&v.body, &splits, MAX_LINE_BYTES)?;
        prop_assert!(!failed, "a valid body failed");
        // Times go through JSON: equal to the microsecond.
        prop_assert_eq!(words.len(), v.words.len(), "{:?} vs {:?}", words, v.words);
        for (got, want) in words.iter().zip(&v.words) {
            prop_assert_eq!(&got.word, &want.word);
            prop_assert!(got.start.abs_diff(want.start) <= Duration::from_micros(1));
        }
        prop_assert_eq!(audio, v.audio);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------
// Mutated lines

fn weird_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!(true)),
        Just(json!(1e308)),
        Just(json!(-1e308)),
        Just(json!(u64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(0.5)),
        Just(json!(-3)),
        Just(json!("")),
        Just(json!("=")),
        Just(json!("A")),
        Just(json!("AB")),
        Just(json!("A===")),
        Just(json!("!!!!")),
        Just(json!("😀😀")),
        Just(json!("\u{0}")),
        Just(json!("NaN")),
        Just(json!("1e999")),
        Just(json!([])),
        Just(json!([[]])),
        Just(json!({})),
        Just(json!({"a": 1})),
        Just(json!([1, "x", null, 2.5, 1e300])),
        Just(json!(["x", "y", "z", "w"])),
        "\\PC{0,12}".prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
    ]
}

const PATHS: [&str; 10] = [
    "/result",
    "/result/audioContent",
    "/result/timestampInfo",
    "/result/timestampInfo/wordAlignment",
    "/result/timestampInfo/wordAlignment/words",
    "/result/timestampInfo/wordAlignment/wordStartTimeSeconds",
    "/result/timestampInfo/wordAlignment/words/0",
    "/result/timestampInfo/wordAlignment/wordStartTimeSeconds/1",
    "/error",
    "/error/message",
];

#[derive(Debug, Clone)]
enum Mutation {
    Remove(usize),
    Set(usize, Value),
    Flip(Index, u8),
    Truncate(Index),
    Insert(Index, Vec<u8>),
    Duplicate(Index, Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (0..PATHS.len()).prop_map(Mutation::Remove),
        6 => (0..PATHS.len(), weird_value()).prop_map(|(p, v)| Mutation::Set(p, v)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), vec(any::<u8>(), 1..6)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Duplicate(a, b)),
    ]
}

/// Set `path` in `v` (creating objects on the way; arrays by index).
fn set(v: &mut Value, path: &str, new: Value) {
    let mut cur = v;
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    for (i, key) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let next = match cur {
            Value::Object(m) => {
                if last {
                    m.insert((*key).to_string(), new);
                    return;
                }
                m.entry((*key).to_string()).or_insert_with(|| json!({}))
            }
            Value::Array(a) => match key.parse::<usize>().ok().and_then(|k| a.get_mut(k)) {
                Some(slot) if last => {
                    *slot = new;
                    return;
                }
                Some(slot) => slot,
                None => return,
            },
            _ => return,
        };
        cur = next;
    }
}

fn remove(v: &mut Value, path: &str) {
    let (parent, key) = path.rsplit_once('/').unwrap_or(("", path));
    match v.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.remove(key);
        }
        Some(Value::Array(a)) => {
            if let Some(k) = key.parse::<usize>().ok().filter(|k| *k < a.len()) {
                a.remove(k);
            }
        }
        _ => {}
    }
}

fn mutate(line: &str, muts: &[Mutation]) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
    let mut bytes_muts = Vec::new();
    for m in muts {
        match m {
            Mutation::Remove(p) => remove(&mut v, PATHS[*p]),
            Mutation::Set(p, new) => set(&mut v, PATHS[*p], new.clone()),
            other => bytes_muts.push(other.clone()),
        }
    }
    let mut b = v.to_string().into_bytes();
    for m in bytes_muts {
        match m {
            Mutation::Flip(i, x) if !b.is_empty() => {
                let k = i.index(b.len());
                b[k] ^= x;
            }
            Mutation::Truncate(i) => b.truncate(i.index(b.len() + 1)),
            Mutation::Insert(i, ins) => {
                let k = i.index(b.len() + 1);
                b.splice(k..k, ins);
            }
            Mutation::Duplicate(x, y) if !b.is_empty() => {
                let (s, e) = (x.index(b.len()), y.index(b.len()));
                let (s, e) = (s.min(e), s.max(e));
                let dup = b[s..e].to_vec();
                b.splice(e..e, dup);
            }
            _ => {}
        }
    }
    b
}

fn mutated_body() -> impl Strategy<Value = Vec<u8>> {
    (
        valid_body(),
        vec(vec(mutation(), 1..4), 1..6),
        any::<Index>(),
    )
        .prop_map(|(v, muts, which)| {
            let text = String::from_utf8_lossy(&v.body).into_owned();
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let mut out = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                // Mutate some lines (one chosen at least), keep the rest.
                let pick = (which.index(lines.len().max(1)) + i) % muts.len().max(1);
                if i % 3 == 0 || i == which.index(lines.len().max(1)) {
                    out.extend(mutate(line, &muts[pick]));
                } else {
                    out.extend_from_slice(line.as_bytes());
                }
                out.push(b'\n');
            }
            if lines.is_empty() {
                out.extend(mutate(r#"{"result":{"audioContent":"AAAA"}}"#, &muts[0]));
            }
            out
        })
}

#[test]
fn mutated_lines_end_cleanly() {
    let mut runner = TestRunner::new(config(4000));
    let result = runner.run(&(mutated_body(), splits()), |(body, splits)| {
        check_items(&body, &splits, MAX_LINE_BYTES)?;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------
// Token soup

fn token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"[".to_vec()),
        Just(b"]".to_vec()),
        Just(b":".to_vec()),
        Just(b",".to_vec()),
        Just(b"\"result\"".to_vec()),
        Just(b"\"error\"".to_vec()),
        Just(b"\"audioContent\"".to_vec()),
        Just(b"\"timestampInfo\"".to_vec()),
        Just(b"\"wordAlignment\"".to_vec()),
        Just(b"\"words\"".to_vec()),
        Just(b"\"wordStartTimeSeconds\"".to_vec()),
        Just(b"\"UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=\"".to_vec()),
        Just(b"\"AAEC\"".to_vec()),
        Just(b"null".to_vec()),
        Just(b"1e999".to_vec()),
        Just(b"-0.5".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b" ".to_vec()),
        vec(any::<u8>(), 1..8),
    ]
}

fn soup() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => vec(token(), 0..60).prop_map(|t| t.concat()),
        1 => vec(any::<u8>(), 0..300),
    ]
}

#[test]
fn soup_ends_cleanly() {
    let mut runner = TestRunner::new(config(3000));
    let limits = prop_oneof![Just(16usize), Just(256), Just(MAX_LINE_BYTES)];
    let result = runner.run(&(soup(), splits(), limits), |(body, splits, limit)| {
        check_items(&body, &splits, limit)?;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------
// Over the wire

#[test]
fn client_over_the_wire_matches_the_decoder() {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    };
    let fake = rt.block_on(FakeInworld::start(FakeConfig::default()));
    let tts = match InworldTts::new(InworldConfig {
        base_url: fake.base_url(),
        // Generous: a whole body is sent at once, so only a hang could
        // reach these.
        first_byte_timeout: Duration::from_secs(10),
        chunk_timeout: Duration::from_secs(10),
        ..InworldConfig::new(fake.key())
    }) {
        Ok(t) => t,
        Err(e) => panic!("client: {e}"),
    };
    let body = prop_oneof![
        1 => valid_body().prop_map(|v| v.body),
        2 => mutated_body(),
        2 => soup(),
    ];
    let mut runner = TestRunner::new(config(2000));
    let result = runner.run(&(body, splits()), |(body, splits)| {
        let (words, audio, failed) = check_items(&body, &splits, MAX_LINE_BYTES)?;
        fake.push(Behaviour::Raw(
            pieces(&body, &splits)
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect(),
        ));
        let got = rt.block_on(async {
            let mut s = tts.synthesize("fuzz");
            let mut items = Vec::new();
            let run = async {
                while let Some(i) = s.next().await {
                    items.push(i);
                }
            };
            tokio::time::timeout(Duration::from_secs(20), run)
                .await
                .map(|()| items)
        });
        let Ok(items) = got else {
            return Err(TestCaseError::fail("the stream did not end"));
        };
        let mut c_words = Vec::new();
        let mut c_audio = Vec::new();
        let mut c_failed = false;
        for (n, i) in items.iter().enumerate() {
            match i {
                Ok(TtsEvent::Word(w)) => c_words.push(w.clone()),
                Ok(TtsEvent::Audio(a)) => c_audio.extend_from_slice(&a.bytes),
                Ok(TtsEvent::Cut) => prop_assert!(false, "Inworld's client never cuts a line"),
                Err(_) => {
                    prop_assert_eq!(n + 1, items.len(), "an error is last");
                    c_failed = true;
                }
            }
        }
        prop_assert_eq!(c_words, words);
        prop_assert_eq!(c_audio, audio);
        prop_assert_eq!(c_failed, failed);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
