//! `adk_assistant`: bring your own agent — a small bakery assistant built
//! with the Google Agent Development Kit (adk-rust), answering through
//! CallLock's real-time voice pipeline on the console.
//!
//! ```sh
//! cargo run -p adk_bridge --features adk --example adk_assistant
//! ```
//!
//! Type as the caller; every line is spoken into the pipeline as audio
//! (the offline speech codec: text carried in real 8 kHz audio frames),
//! heard, turned over to the agent, spoken back and printed as the words
//! reach you. Type while the agent talks to interrupt it. Ctrl-D hangs up.
//!
//! The agent has one tool, `check_stock`. With `CALLLOCK_LLM_BASE_URL` (an
//! OpenAI-compatible server) or `OPENAI_API_KEY` set, a real model drives
//! it (`CALLLOCK_LLM_MODEL`, default gpt-4o-mini); otherwise a tiny rule
//! model below stands in, so the example runs with no network. To make it
//! yours: change the instruction, the tools and the sub-agents in
//! `agent()`; the pipeline around it stays as it is.

use adk_agent::LlmAgentBuilder;
use adk_bridge::interruptions::with_interruptions;
use adk_bridge::session::AdkCall;
use adk_bridge::voice_call::{self, Parts};
use adk_core::{Content, Llm, LlmRequest, LlmResponse, LlmResponseStream, Part};
use adk_session::InMemorySessionService;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncBufReadExt;
use voice::frames::{Audio, Epoch, Frame, UtteranceId};
use voice::offline::codec::{self, Decoded};
use voice::offline::{CodecDetector, CodecStt, CodecTts};
use voice::stages::output::AudioSink;

/// Characters per second both sides speak at.
const CPS: f64 = 15.0;

/// What the bakery has.
fn stock(item: &str) -> Value {
    let item = item.to_lowercase();
    let (count, price) = match item.trim_end_matches('s') {
        "croissant" => (12, 2.5),
        "baguette" => (4, 3.0),
        "sourdough" | "bread" => (0, 6.0),
        "cake" => (2, 24.0),
        _ => return json!({"item": item, "known": false}),
    };
    json!({"item": item, "known": true, "in_stock": count, "price_usd": price})
}

/// The agent: instruction, one tool, the interruption hook.
fn agent(model: Arc<dyn Llm>) -> Arc<dyn adk_core::Agent> {
    let check_stock = adk_tool::FunctionTool::new(
        "check_stock",
        "How many of an item the bakery has today, and its price.",
        |_ctx, args: Value| async move { Ok(stock(args["item"].as_str().unwrap_or_default())) },
    );
    let agent = with_interruptions(
        LlmAgentBuilder::new("baker")
            .description("Answers the bakery's phone")
            .instruction(
                "You answer the phone for a small bakery. Be brief: this is a \
                 phone call. Use check_stock before saying whether something \
                 is available.",
            )
            .model(model)
            .tool(Arc::new(check_stock)),
    )
    .build()
    .expect("the agent");
    Arc::new(agent)
}

/// The model: an OpenAI-compatible endpoint when configured, else rules.
fn model() -> Arc<dyn Llm> {
    let base = std::env::var("CALLLOCK_LLM_BASE_URL").ok();
    let key = std::env::var("OPENAI_API_KEY").ok();
    if base.is_none() && key.is_none() {
        eprintln!("(no CALLLOCK_LLM_BASE_URL or OPENAI_API_KEY: a rule model answers)");
        return Arc::new(RuleModel);
    }
    let cfg = providers::openai::OpenAiConfig {
        base_url: base.unwrap_or_else(|| "https://api.openai.com/v1".into()),
        model: std::env::var("CALLLOCK_LLM_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into()),
        api_key: key,
        ..Default::default()
    };
    let client = providers::openai::OpenAiClient::new(cfg).expect("the model's client");
    Arc::new(adk_bridge::openai::OpenAiModel::new(Arc::new(client)))
}

/// A stand-in model with no network: calls `check_stock` for a known item
/// the caller names, then reads the result back.
struct RuleModel;

#[async_trait::async_trait]
impl Llm for RuleModel {
    fn name(&self) -> &str {
        "rules"
    }

    async fn generate_content(
        &self,
        req: LlmRequest,
        _stream: bool,
    ) -> adk_core::Result<LlmResponseStream> {
        let last = req
            .contents
            .last()
            .cloned()
            .unwrap_or_else(|| Content::new("user"));
        let mut reply = Content::new("model");
        let result = last.parts.iter().find_map(|p| match p {
            Part::FunctionResponse {
                function_response, ..
            } => Some(function_response.response.clone()),
            _ => None,
        });
        if let Some(r) = result {
            let text = match (r["in_stock"].as_u64(), r["item"].as_str()) {
                (Some(0), Some(item)) => format!("Sorry, we are out of {item} today."),
                (Some(n), Some(item)) => format!(
                    "Yes, we have {n} {item} left, at {} dollars each.",
                    r["price_usd"]
                ),
                _ => "I'm not sure we make that. We have croissants, baguettes, bread and cake."
                    .to_string(),
            };
            reply.parts.push(Part::Text { text });
        } else {
            let said = last
                .parts
                .iter()
                .filter_map(|p| p.text())
                .collect::<String>()
                .to_lowercase();
            let item = ["croissant", "baguette", "sourdough", "bread", "cake"]
                .into_iter()
                .find(|i| said.contains(i));
            match item {
                Some(item) => reply.parts.push(Part::FunctionCall {
                    name: "check_stock".into(),
                    args: json!({"item": item}),
                    id: Some(format!("call_{item}")),
                    thought_signature: None,
                }),
                None => reply.parts.push(Part::Text {
                    text: "Hello, this is the bakery. What would you like today?".into(),
                }),
            }
        }
        let chunks = vec![
            Ok(LlmResponse {
                content: Some(reply),
                partial: true,
                ..LlmResponse::default()
            }),
            Ok(LlmResponse {
                partial: false,
                turn_complete: true,
                ..LlmResponse::default()
            }),
        ];
        Ok(Box::pin(futures_util::stream::iter(chunks)))
    }
}

/// The console's speaker: prints the agent's words as they arrive.
struct Speaker {
    speaking: bool,
}

impl AudioSink for Speaker {
    fn play(&mut self, audio: &Audio, _id: UtteranceId, _epoch: Epoch) {
        if let Decoded::Word(w) = codec::decode(&codec::from_bytes(&audio.bytes)) {
            if !self.speaking {
                print!("agent: ");
                self.speaking = true;
            }
            print!("{w} ");
            let _ = std::io::stdout().flush();
        }
    }

    fn clear(&mut self) {
        if self.speaking {
            println!("— (interrupted)");
            self.speaking = false;
        }
    }

    fn utterance_end(&mut self, _id: UtteranceId) {
        if self.speaking {
            println!();
            self.speaking = false;
        }
    }
}

#[tokio::main]
async fn main() {
    let call = AdkCall::start(
        agent(model()),
        Arc::new(InMemorySessionService::new()),
        "bakery",
        "console-call",
        HashMap::new(),
    )
    .await
    .expect("the call's session");
    let running = voice_call::start(
        Parts {
            call: call.clone(),
            agent_name: "baker".into(),
            stt: CodecStt::new(Duration::from_millis(500)),
            detector: CodecDetector::default(),
            tts: Arc::new(CodecTts::default()),
            barge_in: Default::default(),
            output_lead: Duration::ZERO,
            observer: None,
        },
        Speaker { speaking: false },
    );
    let input = running.pipeline.input().expect("input").clone();
    eprintln!("(type as the caller; Ctrl-D hangs up)");
    // The caller's line: typed text spoken as 20 ms audio frames in real
    // time, silence in between (as a phone line carries it).
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            if lines_tx.send(l).is_err() {
                break;
            }
        }
    });
    let per_frame = 160;
    let mut queued: std::collections::VecDeque<Vec<i16>> = Default::default();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let mut open = true;
    while open || !queued.is_empty() {
        tokio::select! {
            _ = tick.tick() => {
                let frame = queued.pop_front().unwrap_or_else(|| vec![0; per_frame]);
                let audio = Audio::pcm16(codec::to_bytes(&frame), 8000);
                if input.send(Frame::input_audio(audio)).await.is_err() {
                    break;
                }
            }
            line = lines_rx.recv(), if open => match line {
                Some(l) if !l.trim().is_empty() => {
                    let (samples, _) = codec::encode(l.trim(), 8000, CPS);
                    queued.extend(samples.chunks(per_frame).map(<[i16]>::to_vec));
                }
                Some(_) => {}
                None => open = false,
            },
        }
    }
    // Let the last reply finish, then hang up.
    tokio::time::sleep(Duration::from_secs(1)).await;
    while running.floor.bot_speaking() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut pipeline = running.pipeline;
    pipeline.end(Duration::from_secs(2)).await;
    let events = call.events().await.map(|e| e.len()).unwrap_or(0);
    eprintln!("(hung up; the agent's session holds {events} events)");
}
