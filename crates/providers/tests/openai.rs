//! The OpenAI-compatible client against the loopback fake server (real
//! sockets, real HTTP/1.1, real SSE).

use agent::classify::classification_prompt;
use agent::extract::extraction_messages;
use agent::prompts::scoped_reply_prompt;
use agent::responder::{
    ChatMessage, ExtractionRequest, ReplyStream, Responder, ResponderError, ScopedRequest,
    TurnRequest,
};
use agent::session::HistoryMessage;
use agent::{BusinessProfile, Session, State};
use futures_util::StreamExt;
use providers::fake::openai::{Behaviour, FakeMode, FakeOpenAi, FakeToolCall};
use providers::openai::{ChatDelta, OpenAiClient, OpenAiConfig, RequestSettings, ToolCall};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn client_with(fake: &FakeOpenAi, tweak: impl FnOnce(&mut OpenAiConfig)) -> OpenAiClient {
    let mut cfg = OpenAiConfig {
        base_url: fake.base_url(),
        first_token_timeout: Duration::from_secs(3),
        idle_timeout: Duration::from_secs(3),
        retry_backoff: Duration::from_millis(50),
        ..OpenAiConfig::default()
    };
    tweak(&mut cfg);
    match OpenAiClient::new(cfg) {
        Ok(c) => c,
        Err(e) => panic!("client: {e}"),
    }
}

fn client(fake: &FakeOpenAi) -> OpenAiClient {
    client_with(fake, |_| {})
}

fn turn(text: &str) -> TurnRequest {
    TurnRequest {
        state: State::Discovery,
        session: Session::default(),
        messages: vec![
            ChatMessage::system("You are the receptionist."),
            ChatMessage::assistant("Thanks for calling. How can I help?"),
            ChatMessage::user(text),
        ],
    }
}

/// Every item of a reply stream; fails the test if it does not end in 5 s.
async fn reply_items(stream: ReplyStream) -> Vec<Result<String, ResponderError>> {
    match tokio::time::timeout(Duration::from_secs(5), stream.collect::<Vec<_>>()).await {
        Ok(v) => v,
        Err(_) => panic!("the reply stream did not end"),
    }
}

async fn reply(c: &OpenAiClient, text: &str) -> Vec<Result<String, ResponderError>> {
    match c.reply(&turn(text)).await {
        Ok(s) => reply_items(s).await,
        Err(e) => panic!("reply failed before streaming: {e}"),
    }
}

fn user(s: &str) -> HistoryMessage {
    HistoryMessage {
        role: "user".into(),
        content: s.into(),
    }
}

#[tokio::test]
async fn text_streams_in_order_and_the_request_is_a_stream_request() {
    let fake = FakeOpenAi::start(vec![Behaviour::slow_stream(
        Duration::from_millis(20),
        ["Hel", "lo, ", "Jonas. ", "What's wrong? 😀"],
    )])
    .await;
    let c = client(&fake);
    let items = reply(&c, "my AC is out").await;
    assert_eq!(
        items,
        vec![
            Ok("Hel".to_string()),
            Ok("lo, ".into()),
            Ok("Jonas. ".into()),
            Ok("What's wrong? 😀".into())
        ]
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert!(r.is_stream());
    assert_eq!(r.body["model"], "gpt-4o-mini");
    assert_eq!(
        r.body["messages"],
        json!([
            {"role": "system", "content": "You are the receptionist."},
            {"role": "assistant", "content": "Thanks for calling. How can I help?"},
            {"role": "user", "content": "my AC is out"},
        ])
    );
    assert!(r.body.get("tools").is_none());
    assert!(r.body.get("response_format").is_none());
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    assert_eq!(r.header("authorization"), None, "no key, no header");
    assert!(r.response_finished);
    assert!(!r.client_disconnected);
    assert_eq!(c.name(), "openai:gpt-4o-mini");
}

#[tokio::test]
async fn tool_call_deltas_are_reassembled() {
    let calls = vec![
        FakeToolCall {
            id: "call_1".into(),
            name: "lookup_caller".into(),
            arguments: r#"{"phone_number":"+15125550100"}"#.into(),
        },
        FakeToolCall {
            id: "call_2".into(),
            name: "book_service".into(),
            arguments: r#"{"customer_name":"Jonas Müller","preferred_time":"tomorrow 9am"}"#.into(),
        },
    ];
    let fake = FakeOpenAi::start(vec![
        Behaviour::StreamToolCall {
            calls: calls.clone(),
            pieces: 5,
        },
        Behaviour::StreamToolCall {
            calls: calls.clone(),
            pieces: 3,
        },
    ])
    .await;
    let c = client(&fake);
    let tool = json!({"type": "function", "function": {"name": "lookup_caller", "parameters": {"type": "object"}}});
    let stream = match c
        .chat_stream(&turn("hi").messages, Some(vec![tool.clone()]))
        .await
    {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let items: Vec<_> = tokio::time::timeout(Duration::from_secs(5), stream.collect())
        .await
        .unwrap_or_default();
    let expected: Vec<Result<ChatDelta, ResponderError>> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            Ok(ChatDelta::ToolCall(ToolCall {
                index: i as u32,
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            }))
        })
        .collect();
    assert_eq!(items, expected);
    if let Some(Ok(ChatDelta::ToolCall(t))) = items.get(1) {
        assert_eq!(
            t.arguments_json(),
            Ok(json!({"customer_name":"Jonas Müller","preferred_time":"tomorrow 9am"}))
        );
    }
    assert_eq!(fake.requests()[0].body["tools"], json!([tool]));
    // `reply` passes on text only: a tool-call answer is an empty reply.
    let items = reply(&c, "hi").await;
    assert_eq!(items, vec![]);
}

#[tokio::test]
async fn a_stall_after_the_first_token_ends_with_timeout_within_the_idle_budget() {
    let fake = FakeOpenAi::start(vec![Behaviour::Stall {
        chunks: vec!["Let me ".into(), "check".into()],
    }])
    .await;
    let c = client_with(&fake, |cfg| cfg.idle_timeout = Duration::from_millis(300));
    let t0 = Instant::now();
    let items = reply(&c, "hello").await;
    let took = t0.elapsed();
    assert_eq!(
        items,
        vec![
            Ok("Let me ".to_string()),
            Ok("check".into()),
            Err(ResponderError::Timeout)
        ]
    );
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_millis(2000), "{took:?}");
    // the stream ended, so the connection was closed
    assert!(fake.wait_for_disconnect(0, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn no_first_token_in_time_is_a_timeout() {
    // Headers, then nothing.
    let fake = FakeOpenAi::start(vec![Behaviour::Stall { chunks: vec![] }, Behaviour::Hang]).await;
    let c = client_with(&fake, |cfg| {
        cfg.first_token_timeout = Duration::from_millis(400);
        cfg.idle_timeout = Duration::from_secs(30);
    });
    let t0 = Instant::now();
    let items = reply(&c, "hello").await;
    assert_eq!(items, vec![Err(ResponderError::Timeout)]);
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_millis(2000),
        "{took:?}"
    );
    // No headers at all: `reply` itself times out.
    let t0 = Instant::now();
    let r = c.reply(&turn("hello")).await;
    assert!(matches!(r, Err(ResponderError::Timeout)));
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_millis(2000),
        "{took:?}"
    );
    assert!(fake.wait_for_disconnect(1, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn a_500_before_streaming_is_an_http_error_and_not_retried() {
    let fake = FakeOpenAi::start(vec![Behaviour::status(
        500,
        r#"{"error":{"message":"The server had an error","type":"server_error"}}"#,
    )])
    .await;
    let c = client(&fake);
    match c.reply(&turn("hi")).await {
        Err(ResponderError::Http(m)) => {
            assert!(m.contains("500"), "{m}");
            assert!(m.contains("The server had an error"), "{m}");
        }
        Err(e) => panic!("wrong error {e:?}"),
        Ok(_) => panic!("a 500 must not stream"),
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(fake.request_count(), 1, "a streamed reply is never retried");
}

#[tokio::test]
async fn a_malformed_chunk_ends_the_stream_with_a_parse_error_without_waiting() {
    // The fake hangs after the bad chunk; the idle timeout is long, so only
    // the parse error can end the stream in time.
    let fake = FakeOpenAi::start(vec![Behaviour::MalformedChunk]).await;
    let c = client_with(&fake, |cfg| cfg.idle_timeout = Duration::from_secs(30));
    let t0 = Instant::now();
    let items = reply(&c, "hi").await;
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0], Ok("Hel".to_string()));
    assert!(
        matches!(&items[1], Err(ResponderError::Parse(m)) if m.contains("malformed")),
        "{:?}",
        items[1]
    );
    assert!(fake.wait_for_disconnect(0, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn a_dropped_connection_mid_stream_is_an_error_then_the_end() {
    let fake = FakeOpenAi::start(vec![Behaviour::DropConnection {
        chunks: vec!["Sure, ".into(), "one moment".into()],
    }])
    .await;
    let c = client(&fake);
    let items = reply(&c, "hi").await;
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(items[0], Ok("Sure, ".to_string()));
    assert_eq!(items[1], Ok("one moment".to_string()));
    assert!(
        matches!(&items[2], Err(ResponderError::Http(m)) if m.contains("mid-stream")),
        "{:?}",
        items[2]
    );
}

#[tokio::test]
async fn an_error_object_in_the_stream_is_an_http_error() {
    let fake = FakeOpenAi::start(vec![Behaviour::StreamError("model overloaded".into())]).await;
    let c = client(&fake);
    let items = reply(&c, "hi").await;
    assert!(
        matches!(&items[..], [Err(ResponderError::Http(m))] if m.contains("model overloaded")),
        "{items:?}"
    );
}

#[tokio::test]
async fn dropping_the_stream_mid_reply_closes_the_connection() {
    let fake = FakeOpenAi::start(vec![Behaviour::slow_stream(
        Duration::from_millis(100),
        (0..50).map(|i| format!("word{i} ")),
    )])
    .await;
    let c = client(&fake);
    let mut stream = match c.reply(&turn("hi")).await {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let first = tokio::time::timeout(Duration::from_secs(3), stream.next()).await;
    assert!(
        matches!(first, Ok(Some(Ok(ref w))) if w == "word0 "),
        "{first:?}"
    );
    assert!(!fake.requests()[0].client_disconnected);
    drop(stream);
    assert!(
        fake.wait_for_disconnect(0, Duration::from_secs(3)).await,
        "the fake must see the client go away"
    );
    let r = &fake.requests()[0];
    assert!(!r.response_finished);
}

#[tokio::test]
async fn extraction_uses_json_mode_and_sends_the_key() {
    let answer = r#"{"customer_name":"Jonas","problem_description":"AC blowing warm air","service_address":"","zip_code":"78701","preferred_time":"","problem_duration":"two days","equipment_type":"AC"}"#;
    let fake = FakeOpenAi::start(vec![Behaviour::json(answer)]).await;
    let c = client_with(&fake, |cfg| cfg.api_key = Some("sk-test-123".into()));
    let history = vec![
        user("hi, this is Jonas"),
        HistoryMessage {
            role: "assistant".into(),
            content: "How can I help?".into(),
        },
        user("my AC has been blowing warm air for two days, ZIP 78701"),
    ];
    let f = match c
        .extract(&ExtractionRequest {
            history: history.clone(),
        })
        .await
    {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(f.customer_name, "Jonas");
    assert_eq!(f.problem_description, "AC blowing warm air");
    assert_eq!(f.zip_code, "78701");
    assert_eq!(f.problem_duration, "two days");
    assert_eq!(f.equipment_type, "AC");
    let r = &fake.requests()[0];
    assert_eq!(r.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body["response_format"], json!({"type": "json_object"}));
    assert_eq!(r.body["temperature"], json!(0.1));
    assert_eq!(r.body["stream"], json!(false));
    assert!(r.body.get("max_tokens").is_none());
    let expected = serde_json::to_value(extraction_messages(&history)).unwrap_or(Value::Null);
    assert_eq!(r.body["messages"], expected);
    assert!(r.response_finished);
}

#[tokio::test]
async fn extraction_without_a_caller_line_sends_nothing() {
    let fake = FakeOpenAi::start(vec![]).await;
    let c = client(&fake);
    let f = c
        .extract(&ExtractionRequest {
            history: vec![HistoryMessage {
                role: "assistant".into(),
                content: "Hello?".into(),
            }],
        })
        .await;
    assert_eq!(f, Ok(Default::default()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(fake.request_count(), 0);
}

#[tokio::test]
async fn classification_request_and_parsed_answer() {
    let answer = r#"{"ai_summary":"Caller booked an AC repair.","card_headline":"AC repair booked for tomorrow","card_summary":"Warm air from vents.","call_type":"SERVICE","call_subtype":"REPAIR_AC","sentiment_score":4.7}"#;
    let fake = FakeOpenAi::start(vec![Behaviour::json(answer)]).await;
    let c = client(&fake);
    let prompt = classification_prompt(
        "Jonas",
        State::Confirm,
        "confirmed",
        "urgent",
        "Caller: my AC is out",
    );
    let m = match c.classify(&prompt).await {
        Ok(m) => m,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(m["call_type"], "SERVICE");
    assert_eq!(m["call_subtype"], "REPAIR_AC");
    assert_eq!(m["sentiment_score"], 4, "truncated toward zero");
    assert_eq!(m["card_headline"], "AC repair booked for tomorrow");
    let r = &fake.requests()[0];
    assert_eq!(r.body["temperature"], json!(0.2));
    assert_eq!(r.body["max_tokens"], json!(500));
    assert_eq!(r.body["response_format"], json!({"type": "json_object"}));
    assert_eq!(
        r.body["messages"],
        json!([{"role": "user", "content": prompt}])
    );
}

#[tokio::test]
async fn classification_retries_once_on_500_then_succeeds() {
    let fake = FakeOpenAi::start(vec![
        Behaviour::status(500, "upstream exploded"),
        Behaviour::json(r#"{"call_type":"ESTIMATE"}"#),
    ])
    .await;
    let c = client_with(&fake, |cfg| cfg.retry_backoff = Duration::from_millis(200));
    let t0 = Instant::now();
    let m = c.classify("classify this call").await;
    assert!(
        t0.elapsed() >= Duration::from_millis(200),
        "backoff before the retry"
    );
    assert_eq!(
        m.map(|m| m.get("call_type").cloned()),
        Ok(Some(json!("ESTIMATE")))
    );
    assert_eq!(fake.request_count(), 2);
    assert_eq!(fake.requests()[0].body, fake.requests()[1].body);
}

#[tokio::test]
async fn at_most_one_retry_and_only_for_retryable_statuses() {
    // 429 then 503: retried once, then the second error is returned.
    let fake = FakeOpenAi::start(vec![
        Behaviour::status(429, r#"{"error":{"message":"slow down"}}"#),
        Behaviour::status(503, r#"{"error":{"message":"unavailable"}}"#),
        Behaviour::status(400, r#"{"error":{"message":"bad request"}}"#),
    ])
    .await;
    let c = client(&fake);
    let e = c
        .extract(&ExtractionRequest {
            history: vec![user("hello")],
        })
        .await;
    assert!(
        matches!(&e, Err(ResponderError::Http(m)) if m.contains("503") && m.contains("unavailable")),
        "{e:?}"
    );
    assert_eq!(fake.request_count(), 2);
    // 400 is not retried.
    let e = c.classify("x").await;
    assert!(
        matches!(&e, Err(ResponderError::Http(m)) if m.contains("400") && m.contains("bad request")),
        "{e:?}"
    );
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(fake.request_count(), 3);
    // The scoped reply is never retried.
    fake.push(Behaviour::status(500, "x"));
    fake.push(Behaviour::json("never asked"));
    let e = c
        .scoped_reply(&ScopedRequest {
            state: State::Callback,
            session: Session::default(),
            user_text: "ok".into(),
        })
        .await;
    assert!(matches!(e, Err(ResponderError::Http(_))), "{e:?}");
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(fake.request_count(), 4);
}

#[tokio::test]
async fn scoped_reply_request_and_trimmed_answer() {
    let fake = FakeOpenAi::start(vec![Behaviour::json("  You're welcome, stay cool!\n")]).await;
    let c = client(&fake);
    let r = c
        .scoped_reply(&ScopedRequest {
            state: State::Callback,
            session: Session::default(),
            user_text: "thanks so much".into(),
        })
        .await;
    assert_eq!(r, Ok("You're welcome, stay cool!".to_string()));
    let req = &fake.requests()[0];
    assert_eq!(req.body["temperature"], json!(0.3));
    assert_eq!(req.body["max_tokens"], json!(50));
    assert!(req.body.get("response_format").is_none());
    assert_eq!(
        req.body["messages"],
        json!([
            {"role": "system", "content": scoped_reply_prompt(&BusinessProfile::default())},
            {"role": "user", "content": "thanks so much"},
        ])
    );
}

#[tokio::test]
async fn a_slow_scoped_reply_times_out_within_its_budget() {
    let fake = FakeOpenAi::start(vec![Behaviour::delayed(
        Duration::from_secs(5),
        Behaviour::json("too late"),
    )])
    .await;
    let c = client_with(&fake, |cfg| {
        cfg.scoped = RequestSettings {
            timeout: Some(Duration::from_millis(300)),
            ..RequestSettings::scoped()
        }
    });
    let t0 = Instant::now();
    let r = c
        .scoped_reply(&ScopedRequest {
            state: State::SafetyExit,
            session: Session::default(),
            user_text: "what?".into(),
        })
        .await;
    assert_eq!(r, Err(ResponderError::Timeout));
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    assert!(fake.wait_for_disconnect(0, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn a_timeout_is_not_retried() {
    let fake = FakeOpenAi::start(vec![Behaviour::Hang, Behaviour::json("{}")]).await;
    let c = client_with(&fake, |cfg| {
        cfg.classification.timeout = Some(Duration::from_millis(300));
    });
    assert_eq!(c.classify("x").await, Err(ResponderError::Timeout));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn bad_non_streaming_answers_are_parse_errors() {
    let fake = FakeOpenAi::start(vec![
        Behaviour::status(200, "<html>not json</html>"),
        Behaviour::status(200, r#"{"choices":[]}"#),
    ])
    .await;
    let c = client(&fake);
    for _ in 0..2 {
        let r = c
            .scoped_reply(&ScopedRequest {
                state: State::Callback,
                session: Session::default(),
                user_text: "ok".into(),
            })
            .await;
        assert!(matches!(r, Err(ResponderError::Parse(_))), "{r:?}");
    }
    // A JSON-mode answer that is not the expected object: empty fields, no error.
    fake.push(Behaviour::json("I cannot help with that."));
    let f = c
        .extract(&ExtractionRequest {
            history: vec![user("hello")],
        })
        .await;
    assert_eq!(f, Ok(Default::default()));
}

#[tokio::test]
async fn connection_refused_is_an_http_error_after_one_retry() {
    // A port nobody listens on.
    let port = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(a) => a.port(),
        Err(e) => panic!("{e}"),
    };
    let c = match OpenAiClient::new(OpenAiConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        retry_backoff: Duration::from_millis(300),
        ..OpenAiConfig::default()
    }) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let t0 = Instant::now();
    let r = c.classify("x").await;
    assert!(
        matches!(&r, Err(ResponderError::Http(m)) if m.contains("could not connect")),
        "{r:?}"
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "a connect error is retried once after the backoff"
    );
    let r = c.reply(&turn("hi")).await.map(|_| ());
    assert!(
        matches!(&r, Err(ResponderError::Http(m)) if m.contains("could not connect")),
        "{r:?}"
    );
}

#[tokio::test]
async fn the_fake_can_be_switched_off_mid_test() {
    let fake = FakeOpenAi::start(vec![Behaviour::text_stream(["One."])]).await;
    let c = client_with(&fake, |cfg| {
        cfg.first_token_timeout = Duration::from_millis(400);
    });
    assert_eq!(reply(&c, "hi").await, vec![Ok("One.".to_string())]);
    // Hang: requests are recorded but never answered.
    fake.set_mode(FakeMode::Hang);
    assert!(matches!(
        c.reply(&turn("hi")).await,
        Err(ResponderError::Timeout)
    ));
    assert_eq!(fake.request_count(), 2);
    // Close: connections are cut before any answer.
    fake.set_mode(FakeMode::Close);
    let r = c.reply(&turn("hi")).await.map(|_| ());
    assert!(matches!(r, Err(ResponderError::Http(_))), "{r:?}");
    // Back on: the default behaviour answers in the shape asked for.
    fake.set_mode(FakeMode::Answer);
    assert_eq!(
        reply(&c, "hi")
            .await
            .into_iter()
            .collect::<Result<String, _>>(),
        Ok("Okay.".to_string())
    );
    assert_eq!(c.classify("x").await.map(|m| m.len()), Ok(0));
    // Stop: the port is closed for good.
    fake.stop();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let r = c.reply(&turn("hi")).await.map(|_| ());
    assert!(
        matches!(&r, Err(ResponderError::Http(m)) if m.contains("could not connect")),
        "{r:?}"
    );
}

#[tokio::test]
async fn unknown_paths_get_a_404_and_do_not_consume_the_script() {
    let fake = FakeOpenAi::start(vec![Behaviour::json("scripted")]).await;
    let c = client_with(&fake, |cfg| {
        cfg.base_url = format!("http://{}/v2", fake.addr())
    });
    let r = c.classify("x").await;
    assert!(
        matches!(&r, Err(ResponderError::Http(m)) if m.contains("404")),
        "{r:?}"
    );
    let good = client(&fake);
    let r = good
        .scoped_reply(&ScopedRequest {
            state: State::Callback,
            session: Session::default(),
            user_text: "ok".into(),
        })
        .await;
    assert_eq!(r, Ok("scripted".to_string()));
}

#[tokio::test]
async fn connections_are_reused_after_complete_answers_but_not_after_a_drop() {
    let fake = FakeOpenAi::start(vec![
        Behaviour::text_stream(["a ", "b"]),
        Behaviour::json("ok"),
        Behaviour::text_stream(["c"]),
        // The end of the body comes 200 ms after [DONE]: the client reads it
        // in the background so the connection goes back to the pool.
        Behaviour::RawStream {
            chunks: vec![
                (
                    Duration::ZERO,
                    b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"e\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
                        .to_vec(),
                ),
                (Duration::from_millis(200), Vec::new()),
            ],
        },
        Behaviour::slow_stream(Duration::from_millis(100), ["x "; 30]),
        Behaviour::text_stream(["d"]),
    ])
    .await;
    fake.set_keep_alive(true);
    let c = client(&fake);
    let pause = || tokio::time::sleep(Duration::from_millis(50));
    assert_eq!(
        reply(&c, "1").await,
        vec![Ok("a ".to_string()), Ok("b".into())]
    );
    pause().await;
    let r = c
        .scoped_reply(&ScopedRequest {
            state: State::Callback,
            session: Session::default(),
            user_text: "ok".into(),
        })
        .await;
    assert_eq!(r, Ok("ok".to_string()));
    pause().await;
    assert_eq!(reply(&c, "3").await, vec![Ok("c".to_string())]);
    pause().await;
    let t0 = Instant::now();
    assert_eq!(reply(&c, "4").await, vec![Ok("e".to_string())]);
    assert!(t0.elapsed() < Duration::from_millis(200), "ends at [DONE]");
    tokio::time::sleep(Duration::from_millis(350)).await;
    let conns: Vec<usize> = fake.requests().iter().map(|r| r.connection).collect();
    assert_eq!(conns, vec![1, 1, 1, 1], "one pooled connection");
    // Dropping a reply mid-stream closes its connection: the next request
    // needs a new one.
    let mut s = match c.reply(&turn("5")).await {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let first = tokio::time::timeout(Duration::from_secs(3), s.next()).await;
    assert!(matches!(first, Ok(Some(Ok(_)))), "{first:?}");
    drop(s);
    assert!(fake.wait_for_disconnect(4, Duration::from_secs(3)).await);
    assert_eq!(reply(&c, "6").await, vec![Ok("d".to_string())]);
    let conns: Vec<usize> = fake.requests().iter().map(|r| r.connection).collect();
    assert_eq!(conns, vec![1, 1, 1, 1, 1, 2]);
    assert_eq!(fake.connection_count(), 2);
}
