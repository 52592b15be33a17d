//! An ADK agent as the brain of a whole voice call, in virtual time: the
//! caller's words are encoded into audio and heard by the mock STT, the
//! agent's replies are spoken by the mock TTS and read back from the audio
//! that reached the caller's ear. Only the model is scripted.

use adk_agent::LlmAgentBuilder;
use adk_bridge::interruptions::{with_interruptions, MARK};
use adk_bridge::mock::{MockAnswer, MockModel};
use adk_bridge::session::AdkCall;
use adk_session::InMemorySessionService;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use voice::floor::Floor;
use voice::stages::turn::BargeInRules;
use voice::testkit::{Caller, CodecDetector, Ear, MockStt, MockTts};

#[path = "support/mod.rs"]
mod support;

const CPS: f64 = 15.0;

struct Call {
    observed: voice::observe::ObserverRx,
    adk: AdkCall,
    model: MockModel,
    caller: Caller,
    ear: Ear,
    floor: Arc<Floor>,
    pipeline: voice::Pipeline,
}

async fn start(answers: Vec<MockAnswer>) -> Call {
    start_with(answers, None).await
}

/// A call whose agent has `tool`.
async fn start_with(answers: Vec<MockAnswer>, tool: Option<Arc<dyn adk_core::Tool>>) -> Call {
    start_agent(answers, |b| match tool {
        Some(t) => b.tool(t),
        None => b,
    })
    .await
}

/// A call whose root agent `barber` is finished by `more` (tools,
/// sub-agents).
async fn start_agent(
    answers: Vec<MockAnswer>,
    more: impl FnOnce(LlmAgentBuilder) -> LlmAgentBuilder,
) -> Call {
    let mut model = MockModel::new(answers);
    model.piece_delay = Duration::from_millis(30);
    let builder = LlmAgentBuilder::new("barber")
        .model(Arc::new(model.clone()))
        .instruction("You book haircuts. The customer's name: {name?}.");
    let agent = with_interruptions(more(builder)).build().unwrap();
    let adk = AdkCall::start(
        Arc::new(agent),
        Arc::new(InMemorySessionService::new()),
        "barbershop",
        "CAvoice",
        HashMap::new(),
    )
    .await
    .unwrap();
    let tts = MockTts {
        rate: 8000,
        chars_per_second: CPS,
        first_audio: Duration::from_millis(150),
        ..MockTts::default()
    };
    let ear = Ear::default();
    let (observer, observed) = voice::observe::observer(1024);
    let running = adk_bridge::voice_call::start(
        adk_bridge::voice_call::Parts {
            call: adk.clone(),
            agent_name: "barber".into(),
            stt: MockStt::new(Duration::from_millis(500)),
            detector: CodecDetector::default(),
            tts: Arc::new(tts),
            barge_in: BargeInRules::default(),
            output_lead: Duration::ZERO,
            observer: Some(observer),
        },
        ear.clone(),
    );
    let (pipeline, floor) = (running.pipeline, running.floor);
    let input = pipeline.input().unwrap().clone();
    let mut caller = Caller::on(input, 8000, CPS, ear.clone(), floor.clone());
    // A reply's sentences follow one another within half a second.
    caller.quiet = Duration::from_millis(500);
    Call {
        observed,
        adk,
        model,
        caller,
        ear,
        floor,
        pipeline,
    }
}

impl Call {
    /// Words heard from frame `from` on.
    fn heard_since(&self, from: usize) -> Vec<String> {
        self.ear.snapshot().frames[from..]
            .iter()
            .filter_map(|f| f.word.clone())
            .collect()
    }

    /// Say `text` and wait for the whole reply (quiet for 0.5 s; dead air
    /// over 5 s fails).
    async fn turn(&self, text: &str) -> String {
        self.caller.turn(text, Duration::from_secs(5)).await.text
    }

    /// (author, text) of the session's text events.
    async fn session(&self) -> Vec<(String, String)> {
        support::session_texts(&self.adk).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_plain_conversation_is_heard_and_kept_in_the_session() {
    let mut call = start(vec![
        MockAnswer::text("Hi! When would you like to come in?"),
        MockAnswer::text("Friday at ten works. See you then."),
    ])
    .await;
    let first = call.turn("I need a haircut").await;
    assert_eq!(first, "Hi! When would you like to come in?");
    let second = call.turn("Friday morning please").await;
    assert_eq!(second, "Friday at ten works. See you then.");
    let seen = call.model.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1].said_by("user")[1..],
        ["I need a haircut", "Friday morning please"]
    );
    assert_eq!(
        call.session().await,
        [
            ("user".into(), "I need a haircut".into()),
            (
                "barber".into(),
                "Hi! When would you like to come in?".into()
            ),
            ("user".into(), "Friday morning please".into()),
            ("barber".into(), "Friday at ten works. See you then.".into()),
        ]
    );
    call.pipeline.end(Duration::from_secs(2)).await;
}

#[tokio::test(start_paused = true)]
async fn after_an_interruption_the_model_gets_only_what_the_caller_heard() {
    let long = "We have openings on Friday at ten, on Saturday at noon, on Monday at four, \
                and on Tuesday at nine in the morning.";
    let mut call = start(vec![
        MockAnswer::text(long),
        MockAnswer::text("Saturday at noon it is."),
    ])
    .await;
    let from = call.ear.snapshot().frames.len();
    call.caller.say("When are you free?").await;
    // Talk over the reply once a few words were heard.
    let deadline = Instant::now() + Duration::from_secs(10);
    while call.heard_since(from).len() < 6 {
        assert!(Instant::now() < deadline, "no reply");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let talked_over = call.ear.snapshot().frames.len();
    call.caller.say("Saturday please").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !call.heard_since(talked_over).join(" ").ends_with("it is.") {
        assert!(
            Instant::now() < deadline,
            "no second reply: {:?}",
            call.heard_since(from)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let heard = call.heard_since(from);
    let second_at = heard
        .iter()
        .rposition(|w| w == "Saturday")
        .expect("the second reply");
    assert_eq!(heard[second_at..].join(" "), "Saturday at noon it is.");
    let heard_of_first = heard[..second_at].join(" ");
    assert!(
        heard_of_first.split(' ').count() < long.split(' ').count(),
        "the first reply was cut: {heard_of_first:?}"
    );
    // The model's second request: the first reply as heard, no more.
    let second = &call.model.requests()[1];
    let model_said = second.said_by("model");
    assert_eq!(model_said.len(), 1, "{second:?}");
    let as_sent = model_said[0];
    assert_eq!(
        as_sent, heard_of_first,
        "the model sees exactly the words that reached the caller"
    );
    // The session keeps the whole reply and the interruption.
    let kept = call.session().await;
    assert!(kept.contains(&("barber".into(), long.into())), "{kept:?}");
    assert!(
        kept.iter()
            .any(|(a, t)| a == "user" && t == &format!("{MARK}{as_sent}")),
        "{kept:?}"
    );
    call.pipeline.end(Duration::from_secs(2)).await;
}

#[tokio::test(start_paused = true)]
async fn the_caller_is_not_heard_over_a_running_tool_and_is_answered_after_it() {
    let booking = Arc::new(adk_tool::FunctionTool::new(
        "book",
        "Book a haircut",
        |_ctx, _args| async move {
            tokio::time::sleep(Duration::from_secs(4)).await;
            Ok(serde_json::json!({"booked": "Friday 10:00"}))
        },
    ));
    let mut call = start_with(
        vec![
            MockAnswer::tool("book", serde_json::json!({"when": "Friday 10:00"})),
            MockAnswer::text("You are booked for Friday at ten."),
            MockAnswer::text("Yes, I am still here."),
        ],
        Some(booking),
    )
    .await;
    let from = call.ear.snapshot().frames.len();
    call.caller.say("Book me for Friday at ten").await;
    // While the tool runs (about four seconds), the caller speaks.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(call.floor.muted(), "barge-in muted while the tool runs");
    call.caller.say("Hello are you there").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !call.heard_since(from).join(" ").ends_with("still here.") {
        assert!(
            Instant::now() < deadline,
            "heard only {:?}",
            call.heard_since(from)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        call.heard_since(from).join(" "),
        "You are booked for Friday at ten. Yes, I am still here.",
        "the tool's reply heard whole, then the held question answered"
    );
    assert!(call.ear.snapshot().clears.is_empty(), "nothing was cut");
    let mut tools = Vec::new();
    while let Ok(o) = call.observed.rx.try_recv() {
        if let voice::observe::Observation::Tool { name, finished } = o.what {
            tools.push((o.stage, name, finished));
        }
    }
    assert_eq!(
        tools,
        [
            ("adk_conversation", "book".to_string(), false),
            ("adk_conversation", "book".to_string(), true)
        ],
        "the observer saw the tool start and return"
    );
    let third = &call.model.requests()[2];
    assert_eq!(
        third.said_by("user").last(),
        Some(&"Hello are you there"),
        "{third:?}"
    );
    let kept = call.session().await;
    assert!(
        kept.iter()
            .any(|(a, t)| a == "barber" && t == "You are booked for Friday at ten."),
        "{kept:?}"
    );
    call.pipeline.end(Duration::from_secs(2)).await;
}

#[tokio::test(start_paused = true)]
async fn the_pipeline_invokes_the_agent_and_pushes_state_it_sees_next_turn() {
    use adk_bridge::conversation::AdkCommand;
    use voice::frames::{Custom, Data, Frame};
    let mut call = start(vec![
        MockAnswer::text("Hello, thanks for calling the barbershop."),
        MockAnswer::text("Hi Dana, what can I do for you?"),
    ])
    .await;
    let input = call.pipeline.input().unwrap().clone();
    let send = |c: AdkCommand| {
        let input = input.clone();
        async move {
            input
                .send(Frame::data(0, Data::Custom(Custom::new(c))))
                .await
                .unwrap()
        }
    };
    // No caller speech: the application has the agent greet.
    send(AdkCommand::Invoke {
        prompt: "[the call started: greet the caller]".into(),
    })
    .await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !call.heard_since(0).join(" ").ends_with("barbershop.") {
        assert!(Instant::now() < deadline, "{:?}", call.heard_since(0));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    while call.floor.bot_speaking() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The application learned the caller's name (say, from caller id).
    send(AdkCommand::PushState(HashMap::from([(
        "name".to_string(),
        serde_json::json!("Dana"),
    )])))
    .await;
    send(AdkCommand::Append {
        author: "user".into(),
        text: "[caller id: Dana Fields]".into(),
    })
    .await;
    let reply = call.turn("hi it's me").await;
    assert_eq!(reply, "Hi Dana, what can I do for you?");
    let seen = call.model.requests();
    assert!(
        !seen[0].contents[0].1.contains("Dana"),
        "not known at the greeting"
    );
    assert!(
        seen[1].contents[0].1.contains("The customer's name: Dana."),
        "{:?}",
        seen[1]
    );
    assert!(seen[1]
        .said_by("user")
        .contains(&"[caller id: Dana Fields]"));
    call.pipeline.end(Duration::from_secs(2)).await;
}

#[tokio::test(start_paused = true)]
async fn the_barber_hands_the_caller_to_the_colorist_mid_call() {
    let mut colorist_model = MockModel::new([
        MockAnswer::text("Hi, this is the colorist. Which shade would you like?"),
        MockAnswer::text("Copper it is. See you Friday."),
    ]);
    colorist_model.piece_delay = Duration::from_millis(30);
    let colorist = with_interruptions(
        LlmAgentBuilder::new("colorist")
            .description("Hair colouring")
            .model(Arc::new(colorist_model.clone()))
            .instruction("You book colouring."),
    )
    .build()
    .unwrap();
    let mut call = start_agent(
        vec![
            MockAnswer::text("Hello! Haircut or colour?"),
            MockAnswer::tool(
                "transfer_to_agent",
                serde_json::json!({"agent_name": "colorist"}),
            ),
        ],
        |b| b.sub_agent(Arc::new(colorist)),
    )
    .await;
    assert_eq!(call.turn("Hi there").await, "Hello! Haircut or colour?");
    assert_eq!(
        call.turn("Colour please").await,
        "Hi, this is the colorist. Which shade would you like?"
    );
    assert_eq!(call.turn("Copper").await, "Copper it is. See you Friday.");
    assert_eq!(call.model.requests().len(), 2, "the barber handed over");
    let seen = colorist_model.requests();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].said_by("user").contains(&"Copper"), "{:?}", seen[1]);
    let kept = call.session().await;
    assert_eq!(
        kept.last(),
        Some(&("colorist".into(), "Copper it is. See you Friday.".into()))
    );
    call.pipeline.end(Duration::from_secs(2)).await;
}
