//! The bridge against a scripted ADK model (no network): replies stream
//! into the pipeline's LLM interface, the session keeps the conversation,
//! an interruption reaches the next model request as the heard part only,
//! and state pushed from the pipeline reaches the agent's instruction.

use adk_agent::LlmAgentBuilder;
use adk_bridge::interruptions::{with_interruptions, MARK};
use adk_bridge::llm::{AdkLlm, AdkTurn};
use adk_bridge::mock::{MockAnswer, MockModel};
use adk_bridge::session::AdkCall;
use adk_session::InMemorySessionService;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use voice::frames::Custom;
use voice::stages::llm::{Llm, LlmEvent};

const INSTRUCTION: &str = "You book haircuts. The customer's name: {name?}.";

async fn call(model: &MockModel) -> AdkCall {
    let agent = with_interruptions(
        LlmAgentBuilder::new("barber")
            .model(Arc::new(model.clone()))
            .instruction(INSTRUCTION),
    )
    .build()
    .unwrap();
    AdkCall::start(
        Arc::new(agent),
        Arc::new(InMemorySessionService::new()),
        "barbershop",
        "CA0001",
        HashMap::new(),
    )
    .await
    .unwrap()
}

/// Run one turn through the pipeline interface; the text pieces.
async fn turn(llm: &AdkLlm, said: &str) -> Vec<String> {
    let req = Custom::new(AdkTurn {
        caller_said: said.into(),
    });
    llm.stream(&req)
        .map(|e| match e.unwrap() {
            LlmEvent::Text(t) => t,
            other => panic!("unexpected {other:?}"),
        })
        .collect()
        .await
}

/// (author, text) of the session's events that carry text.
async fn session_texts(call: &AdkCall) -> Vec<(String, String)> {
    call.events()
        .await
        .unwrap()
        .iter()
        .filter_map(|e| {
            let c = e.llm_response.content.as_ref()?;
            let t: String = c.parts.iter().filter_map(|p| p.text()).collect();
            (!t.is_empty()).then(|| (e.author.clone(), t))
        })
        .collect()
}

#[tokio::test]
async fn a_plain_conversation_streams_and_the_session_keeps_it() {
    let model = MockModel::new([
        MockAnswer::text("Hi! When would you like to come in?"),
        MockAnswer::text("Friday at ten works."),
    ]);
    let c = call(&model).await;
    let llm = AdkLlm::new(c.clone());
    let first = turn(&llm, "I need a haircut").await;
    assert!(first.len() > 3, "streamed in pieces: {first:?}");
    assert_eq!(first.concat(), "Hi! When would you like to come in?");
    assert_eq!(
        turn(&llm, "Friday morning").await.concat(),
        "Friday at ten works."
    );
    let seen = model.requests();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].said_by("user").contains(&"Friday morning"));
    assert!(seen[1]
        .said_by("model")
        .contains(&"Hi! When would you like to come in?"));
    assert_eq!(
        session_texts(&c).await,
        [
            ("user".into(), "I need a haircut".into()),
            (
                "barber".into(),
                "Hi! When would you like to come in?".into()
            ),
            ("user".into(), "Friday morning".into()),
            ("barber".into(), "Friday at ten works.".into()),
        ]
    );
}

#[tokio::test]
async fn an_interruption_leaves_the_model_only_the_heard_part_and_the_session_everything() {
    let full = "We have Friday at ten, Saturday at noon, or Monday at four.";
    let model = MockModel::new([
        MockAnswer::text(full),
        MockAnswer::text("Saturday at noon it is."),
    ]);
    let c = call(&model).await;
    let llm = AdkLlm::new(c.clone());
    turn(&llm, "When are you free?").await;
    // The caller heard the first words and talked over the rest.
    c.interrupted("barber", full, "We have Friday at ten,", true);
    c.flush().await.unwrap();
    turn(&llm, "Saturday please").await;
    let second = &model.requests()[1];
    assert_eq!(second.said_by("model"), ["We have Friday at ten,"]);
    assert!(
        second.contents.iter().all(|(_, t)| !t.starts_with(MARK)),
        "the event itself is not shown to the model: {second:?}"
    );
    let kept = session_texts(&c).await;
    assert!(kept.contains(&("barber".into(), full.into())), "{kept:?}");
    assert!(
        kept.contains(&("user".into(), format!("{MARK}We have Friday at ten,"))),
        "{kept:?}"
    );
}

#[tokio::test]
async fn a_reply_cut_before_it_was_committed_is_recorded_with_what_was_heard() {
    let model = MockModel::new([
        MockAnswer::text("Let me look at the calendar for you, one moment."),
        MockAnswer::text("Sure."),
    ]);
    let c = call(&model).await;
    let llm = AdkLlm::new(c.clone());
    // The pipeline dropped the stream after two pieces (a barge-in).
    let req = Custom::new(AdkTurn {
        caller_said: "Do you have anything today?".into(),
    });
    let got: Vec<_> = llm.stream(&req).take(2).collect().await;
    let so_far: String = got
        .into_iter()
        .map(|e| match e.unwrap() {
            LlmEvent::Text(t) => t,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(so_far, "Let me ");
    // Queued: the next run appends it before the agent runs.
    c.interrupted("barber", &so_far, "Let", false);
    turn(&llm, "Actually, tomorrow").await;
    assert_eq!(model.requests()[1].said_by("model"), ["Let"]);
}

#[tokio::test]
async fn state_pushed_from_the_pipeline_reaches_the_next_instruction() {
    let model = MockModel::new([MockAnswer::text("Hello."), MockAnswer::text("Hi Dana.")]);
    let c = call(&model).await;
    let llm = AdkLlm::new(c.clone());
    turn(&llm, "hello").await;
    assert!(
        !model.requests()[0].contents[0].1.contains("Dana"),
        "{:?}",
        model.requests()[0]
    );
    c.push_state(HashMap::from([(
        "name".to_string(),
        serde_json::json!("Dana"),
    )]))
    .await
    .unwrap();
    turn(&llm, "it's me again").await;
    let instruction = &model.requests()[1].contents[0].1;
    assert!(
        instruction.contains("The customer's name: Dana."),
        "{instruction}"
    );
    assert_eq!(c.state().await.unwrap()["name"], "Dana");
}
