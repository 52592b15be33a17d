//! Property-based fuzzing of the streaming path: the SSE decoder, the chat
//! chunk parser and the real client against the fake server.
//!
//! Case counts (10,000 in all):
//! * direct, sans-IO (fast, the bulk):
//!   - `decoder_is_split_invariant_and_bounded`: 2,500 random/token-soup
//!     bodies through [`SseDecoder`] alone (three event-size limits);
//!   - `valid_streams_round_trip`: 2,000 valid streams with random
//!     line ends, comments, multi-line data and split points;
//!   - `truncated_streams_never_pass_for_complete`: 1,500 truncated valid
//!     streams;
//!   - `mutated_streams_end_cleanly`: 3,000 valid streams with byte flips,
//!     inserted garbage, deletions and duplications;
//!   - `token_soup_ends_cleanly`: 800 bodies of SSE-ish tokens and bytes;
//! * through the fake server and the real client (each bounded by a
//!   timeout): `client_over_the_wire_matches_the_parser`: 200 mutated or
//!   soup bodies.
//!
//! Properties: never a panic; the parser always ends (`is_done` after
//! `finish`); at most one error and only as the last item; output bounded
//! by the input; feeding in any pieces gives the same items as feeding the
//! whole body; a valid stream yields exactly its text and tool calls; a
//! truncated stream either errors or is complete; over the wire the client
//! yields exactly what the parser yields for the same bytes.

mod support;

use agent::responder::ResponderError;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{TestCaseError, TestRunner};
use providers::fake::openai::{Behaviour, FakeOpenAi};
use providers::openai::{ChatChunkParser, ChatDelta, OpenAiClient, OpenAiConfig, ToolCall};
use providers::sse::{SseDecoder, SseError, SseEvent};
use serde_json::json;
use std::time::Duration;
use support::fuzz::{config, pieces, splits};

type Item = Result<ChatDelta, ResponderError>;

// ---------------------------------------------------------------------
// Generators

/// A valid streamed answer and what it must yield.
#[derive(Debug, Clone)]
struct ValidStream {
    body: Vec<u8>,
    text: String,
    tools: Vec<ToolCall>,
    /// Where the finish_reason event starts in `body`.
    finish_at: usize,
}

#[derive(Debug, Clone)]
struct Shape {
    texts: Vec<String>,
    tools: Vec<(String, String, String, usize)>,
    line_end: usize,
    comments: bool,
    pretty: bool,
    no_space: bool,
    done: bool,
    ids: bool,
}

fn text_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z ,.!?'-]{0,12}",
        "\\PC{0,8}",
        Just("\n".to_string()),
        Just("data: [DONE]\n\n".to_string()),
        Just("é😀\u{0}\"\\".to_string()),
    ]
}

fn tool() -> impl Strategy<Value = (String, String, String, usize)> {
    (
        "call_[a-zA-Z0-9]{0,6}",
        "[a-z_]{1,12}",
        prop::collection::btree_map("[a-z]{1,6}", "\\PC{0,10}", 0..4),
        1usize..5,
    )
        .prop_map(|(id, name, args, pieces)| {
            let args = serde_json::to_string(&args).unwrap_or_default();
            (id, name, args, pieces)
        })
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        prop::collection::vec(text_piece(), 0..8),
        prop::collection::vec(tool(), 0..3),
        0usize..3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(texts, tools, line_end, comments, pretty, no_space, done, ids)| Shape {
                texts,
                tools,
                line_end,
                comments,
                pretty,
                no_space,
                done,
                ids,
            },
        )
}

fn split_chars(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let size = chars.len().div_ceil(n.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn build(shape: &Shape) -> ValidStream {
    let le = ["\n", "\r\n", "\r"][shape.line_end % 3];
    let prefix = if shape.no_space { "data:" } else { "data: " };
    let mut body = String::new();
    let mut n = 0;
    let mut event = |body: &mut String, v: &serde_json::Value| {
        n += 1;
        if shape.comments {
            body.push_str(": keep-alive");
            body.push_str(le);
        }
        if shape.ids {
            body.push_str(&format!("id: {n}{le}"));
        }
        let text = if shape.pretty {
            serde_json::to_string_pretty(v).unwrap_or_default()
        } else {
            v.to_string()
        };
        // Pretty JSON goes out as several data lines, joined back with \n.
        for line in text.split('\n') {
            body.push_str(prefix);
            body.push_str(line);
            body.push_str(le);
        }
        body.push_str(le);
    };
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        json!({"id": "x", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    event(
        &mut body,
        &chunk(json!({"role": "assistant", "content": ""}), None),
    );
    for t in &shape.texts {
        event(&mut body, &chunk(json!({ "content": t }), None));
    }
    let mut tools = Vec::new();
    for (i, (id, name, args, pieces)) in shape.tools.iter().enumerate() {
        event(
            &mut body,
            &chunk(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                                       "function": {"name": name, "arguments": ""}}]}),
                None,
            ),
        );
        for p in split_chars(args, *pieces) {
            event(
                &mut body,
                &chunk(
                    json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                    None,
                ),
            );
        }
        tools.push(ToolCall {
            index: i as u32,
            id: id.clone(),
            name: name.clone(),
            arguments: args.clone(),
        });
    }
    let finish_at = body.len();
    let reason = if tools.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    event(&mut body, &chunk(json!({}), Some(reason)));
    if shape.done {
        body.push_str(&format!("data: [DONE]{le}{le}"));
    }
    ValidStream {
        body: body.into_bytes(),
        text: shape.texts.concat(),
        tools,
        finish_at,
    }
}

fn valid_stream() -> impl Strategy<Value = ValidStream> {
    shape().prop_map(|s| build(&s))
}

/// Bytes that mean something to SSE or JSON, and some that are just bad.
fn token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::sample::select(vec![
            &b"\n"[..], b"\r", b"\r\n", b"\n\n", b"data:", b"data: ", b"event: error\n",
            b"event:", b"id:", b"retry: 10\n", b":", b": ping\n", b"[DONE]", b"{", b"}",
            b"\"", b"\\", b"\xEF\xBB\xBF", b"\xff", b"\xc3", b"\xf0\x9f", b"{\"choices\":[",
            b"{\"delta\":{\"content\":\"hi\"}}", b"]}", b"\"finish_reason\":\"stop\"",
            b"{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}",
            b"{\"error\":{\"message\":\"boom\"}}", b"null", b"0",
        ])
        .prop_map(|t| t.to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..6),
    ]
}

fn soup() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(token(), 0..60).prop_map(|ts| ts.concat())
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(Index, u8),
    Insert(Index, Vec<u8>),
    Delete(Index, usize),
    Duplicate(Index, usize),
    Truncate(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        3 => (any::<Index>(), token()).prop_map(|(i, t)| Mutation::Insert(i, t)),
        2 => (any::<Index>(), 1usize..40).prop_map(|(i, n)| Mutation::Delete(i, n)),
        1 => (any::<Index>(), 1usize..80).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(mut body: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        let len = body.len();
        match m {
            Mutation::Flip(i, x) if len > 0 => {
                let at = i.index(len);
                if let Some(b) = body.get_mut(at) {
                    *b ^= x;
                }
            }
            Mutation::Insert(i, t) => {
                let at = i.index(len + 1);
                body.splice(at..at, t.iter().copied());
            }
            Mutation::Delete(i, n) if len > 0 => {
                let at = i.index(len);
                let end = (at + n).min(len);
                body.drain(at..end);
            }
            Mutation::Duplicate(i, n) if len > 0 => {
                let at = i.index(len);
                let end = (at + n).min(len);
                let copy = body.get(at..end).map(<[u8]>::to_vec).unwrap_or_default();
                body.splice(end..end, copy);
            }
            Mutation::Truncate(i) => body.truncate(i.index(len + 1)),
            _ => {}
        }
    }
    body
}

// ---------------------------------------------------------------------
// Checks

fn feed_parser(ps: &[&[u8]]) -> Result<Vec<Item>, TestCaseError> {
    let mut p = ChatChunkParser::default();
    let mut out = Vec::new();
    for piece in ps {
        out.extend(p.push(piece));
    }
    out.extend(p.finish());
    prop_assert!(p.is_done(), "the parser must be over after finish()");
    let after = p.push(b"data: [DONE]\n\n");
    prop_assert!(after.is_empty(), "items after the end: {:?}", after);
    prop_assert!(p.finish().is_empty());
    Ok(out)
}

/// Parse `body` whole and in pieces; check the common properties; return
/// the items.
fn check_parser(body: &[u8], splits: &[Index]) -> Result<Vec<Item>, TestCaseError> {
    let whole = feed_parser(&[body])?;
    let split = feed_parser(&pieces(body, splits))?;
    prop_assert_eq!(&whole, &split, "split feeding changed the items");
    let errors = whole.iter().filter(|i| i.is_err()).count();
    prop_assert!(errors <= 1, "more than one error: {:?}", whole);
    if errors == 1 {
        prop_assert!(whole.last().is_some_and(Result::is_err), "error not last");
    }
    let out_bytes: usize = whole
        .iter()
        .map(|i| match i {
            Ok(ChatDelta::Text(t)) => t.len(),
            Ok(ChatDelta::ToolCall(t)) => t.arguments.len() + t.name.len() + t.id.len(),
            Err(_) => 0,
        })
        .sum();
    // Lossy UTF-8 decoding turns one bad byte into U+FFFD (3 bytes).
    prop_assert!(out_bytes <= 3 * body.len(), "output larger than input");
    for i in &whole {
        if let Ok(ChatDelta::Text(t)) = i {
            prop_assert!(!t.is_empty(), "empty text delta");
        }
    }
    Ok(whole)
}

fn text_of(items: &[Item]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(ChatDelta::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn tools_of(items: &[Item]) -> Vec<ToolCall> {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(ChatDelta::ToolCall(t)) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

fn feed_decoder(max: usize, ps: &[&[u8]]) -> Vec<Result<SseEvent, SseError>> {
    let mut d = SseDecoder::with_max_event_bytes(max);
    let mut out = Vec::new();
    for piece in ps {
        out.extend(d.push(piece));
    }
    out.extend(d.finish().map(Ok));
    out
}

// ---------------------------------------------------------------------
// Direct (sans-IO) properties: 9,800 cases

proptest! {
    #![proptest_config(config(2_500))]
    #[test]
    fn decoder_is_split_invariant_and_bounded(
        body in prop_oneof![soup(), prop::collection::vec(any::<u8>(), 0..300)],
        splits in splits(),
        max in prop::sample::select(vec![16usize, 64, 1024 * 1024]),
    ) {
        let whole = feed_decoder(max, &[&body]);
        let split = feed_decoder(max, &pieces(&body, &splits));
        prop_assert_eq!(&whole, &split);
        let errors = whole.iter().filter(|e| e.is_err()).count();
        prop_assert!(errors <= 1);
        if errors == 1 {
            prop_assert!(whole.last().is_some_and(Result::is_err));
        }
        for ev in whole.iter().flatten() {
            prop_assert!(ev.data.len() <= max.max(3 * body.len()));
            prop_assert!(ev.data.len() + ev.event.as_ref().map_or(0, String::len) <= max);
        }
    }
}

proptest! {
    #![proptest_config(config(2_000))]
    #[test]
    fn valid_streams_round_trip(stream in valid_stream(), splits in splits()) {
        let items = check_parser(&stream.body, &splits)?;
        prop_assert!(items.iter().all(Result::is_ok), "{:?}", items);
        prop_assert_eq!(text_of(&items), stream.text);
        prop_assert_eq!(tools_of(&items), stream.tools);
    }
}

proptest! {
    #![proptest_config(config(1_500))]
    #[test]
    fn truncated_streams_never_pass_for_complete(
        stream in valid_stream(),
        cut in any::<Index>(),
        splits in splits(),
    ) {
        let at = cut.index(stream.body.len() + 1);
        let body = stream.body.get(..at).unwrap_or(&[]);
        let items = check_parser(body, &splits)?;
        let text = text_of(&items);
        prop_assert!(stream.text.starts_with(&text), "{:?} is not a prefix of {:?}", text, stream.text);
        if items.iter().all(Result::is_ok) {
            // No error: the cut came after the finish_reason event.
            prop_assert!(at > stream.finish_at, "cut at {} before finish at {}: {:?}", at, stream.finish_at, items);
            prop_assert_eq!(text, stream.text);
            prop_assert_eq!(tools_of(&items), stream.tools);
        }
        if at <= stream.finish_at {
            prop_assert!(items.last().is_some_and(Result::is_err));
        }
    }
}

proptest! {
    #![proptest_config(config(3_000))]
    #[test]
    fn mutated_streams_end_cleanly(
        stream in valid_stream(),
        muts in prop::collection::vec(mutation(), 1..5),
        splits in splits(),
    ) {
        let body = mutate(stream.body.clone(), &muts);
        check_parser(&body, &splits)?;
    }
}

proptest! {
    #![proptest_config(config(800))]
    #[test]
    fn token_soup_ends_cleanly(body in soup(), splits in splits()) {
        check_parser(&body, &splits)?;
    }
}

// ---------------------------------------------------------------------
// Through the fake server and the real client: 200 cases

/// Items compared across the wire: errors by kind and message.
fn wire_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => (valid_stream(), prop::collection::vec(mutation(), 0..4))
            .prop_map(|(s, m)| mutate(s.body, &m)),
        1 => soup(),
    ]
}

#[test]
fn client_over_the_wire_matches_the_parser() {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    };
    let fake = rt.block_on(FakeOpenAi::start(vec![]));
    let client = match OpenAiClient::new(OpenAiConfig {
        base_url: fake.base_url(),
        // Generous: a whole body is sent at once, so only a hang could
        // reach these.
        first_token_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        ..OpenAiConfig::default()
    }) {
        Ok(c) => c,
        Err(e) => panic!("client: {e}"),
    };
    let mut runner = TestRunner::new(config(200));
    let result = runner.run(&(wire_body(), splits()), |(body, splits)| {
        let expected = check_parser(&body, &splits)?;
        let chunks: Vec<(Duration, Vec<u8>)> = pieces(&body, &splits)
            .into_iter()
            .map(|p| (Duration::ZERO, p.to_vec()))
            .collect();
        fake.push(Behaviour::RawStream { chunks });
        let got = rt.block_on(async {
            let run = async {
                match client.chat_stream(&[], None).await {
                    Ok(s) => futures_util::StreamExt::collect::<Vec<Item>>(s).await,
                    Err(e) => vec![Err(e)],
                }
            };
            tokio::time::timeout(Duration::from_secs(15), run).await
        });
        let Ok(got) = got else {
            return Err(TestCaseError::fail("the client stream did not end"));
        };
        prop_assert_eq!(got, expected);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    assert_eq!(fake.request_count(), 200);
}
