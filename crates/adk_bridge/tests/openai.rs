//! An ADK agent on an OpenAI-compatible endpoint through CallLock's own
//! client, against the loopback fake that speaks the real wire protocol
//! (SSE chat completions, streamed tool calls).

use adk_agent::LlmAgentBuilder;
use adk_bridge::interruptions::with_interruptions;
use adk_bridge::llm::{AdkLlm, AdkTurn};
use adk_bridge::openai::OpenAiModel;
use adk_bridge::session::AdkCall;
use adk_session::InMemorySessionService;
use futures_util::StreamExt;
use providers::fake::openai::{Behaviour, FakeOpenAi, FakeToolCall};
use providers::openai::{OpenAiClient, OpenAiConfig};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use voice::frames::Custom;
use voice::stages::llm::{Llm, LlmEvent};

#[tokio::test]
async fn the_agent_streams_text_and_calls_its_tool_over_the_wire() {
    let fake = FakeOpenAi::start(vec![
        Behaviour::StreamToolCall {
            calls: vec![FakeToolCall {
                id: "call_42".into(),
                name: "check_calendar".into(),
                arguments: r#"{"day":"Friday"}"#.into(),
            }],
            pieces: 3,
        },
        Behaviour::Reply("Friday at ten is open.".into()),
    ])
    .await;
    let client = OpenAiClient::new(OpenAiConfig {
        base_url: fake.base_url(),
        model: "gpt-test".into(),
        api_key: Some("sk-adk".into()),
        ..OpenAiConfig::default()
    })
    .unwrap();
    let calendar = Arc::new(adk_tool::FunctionTool::new(
        "check_calendar",
        "Open slots on a day",
        |_ctx, args| async move { Ok(json!({"day": args["day"], "open": ["10:00"]})) },
    ));
    let agent = with_interruptions(
        LlmAgentBuilder::new("barber")
            .model(Arc::new(OpenAiModel::new(Arc::new(client))))
            .instruction("You book haircuts.")
            .tool(calendar),
    )
    .build()
    .unwrap();
    let call = AdkCall::start(
        Arc::new(agent),
        Arc::new(InMemorySessionService::new()),
        "barbershop",
        "CAwire",
        HashMap::new(),
    )
    .await
    .unwrap();
    let llm = AdkLlm::new(call);
    let req = Custom::new(AdkTurn {
        caller_said: "Anything on Friday?".into(),
    });
    let items: Vec<LlmEvent> = llm.stream(&req).map(Result::unwrap).collect().await;
    assert!(
        matches!(&items[0], LlmEvent::ToolCall { name, arguments } if name == "check_calendar" && arguments.contains("Friday")),
        "{items:?}"
    );
    let text: String = items[1..]
        .iter()
        .filter_map(|e| match e {
            LlmEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Friday at ten is open.");

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "the tool call, then the answer");
    for r in &reqs {
        assert_eq!(r.body["stream"], true);
        assert_eq!(r.body["model"], "gpt-test");
        assert!(r
            .headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer sk-adk"));
    }
    assert_eq!(
        reqs[0].body["tools"][0]["function"]["name"], "check_calendar",
        "{}",
        reqs[0].body
    );
    let second = reqs[1].body["messages"].as_array().unwrap();
    let call_msg = second
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the assistant's tool call");
    assert_eq!(call_msg["tool_calls"][0]["id"], "call_42");
    let result = second
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the tool's result");
    assert_eq!(result["tool_call_id"], "call_42");
    assert!(
        result["content"].as_str().unwrap().contains("10:00"),
        "{result}"
    );
}
