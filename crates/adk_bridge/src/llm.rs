//! An ADK agent as the voice pipeline's language model
//! ([`voice::stages::llm::Llm`]): each request runs the agent once on what
//! the caller said, and its streamed partial text flows on to sentence
//! aggregation and speech as it arrives.
//!
//! The request's [`Custom`] carries an [`AdkTurn`]. Dropping the stream (a
//! barge-in, a newer request) drops the run with it; the ADK then commits
//! no reply for it, which the caller's interruption then records
//! ([`AdkCall::interrupted`]).

use crate::session::AdkCall;
use adk_core::{Event, Part};
use futures_util::stream::{self, StreamExt};
use std::collections::HashSet;
use voice::frames::Custom;
use voice::stages::llm::{Llm, LlmError, LlmEvent, LlmStream};

/// What one request asks of the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdkTurn {
    /// The caller's words.
    pub caller_said: String,
}

/// The agent of one call as a voice-pipeline LLM.
#[derive(Clone)]
pub struct AdkLlm {
    call: AdkCall,
}

impl AdkLlm {
    pub fn new(call: AdkCall) -> Self {
        AdkLlm { call }
    }
}

/// What the pipeline hears of one ADK event. Partial events carry the
/// reply as it streams; the final event repeats it whole, so its text is
/// used only by an author that streamed none (a model that does not
/// stream).
fn pieces(e: &Event, streamed: &mut HashSet<String>) -> Vec<LlmEvent> {
    let Some(content) = &e.llm_response.content else {
        return Vec::new();
    };
    if e.author == "user" {
        return Vec::new();
    }
    let mut out = Vec::new();
    for p in &content.parts {
        match p {
            Part::Text { text } if !text.is_empty() => {
                if e.llm_response.partial {
                    streamed.insert(e.author.clone());
                    out.push(LlmEvent::Text(text.clone()));
                } else if !streamed.contains(&e.author) {
                    out.push(LlmEvent::Text(text.clone()));
                }
            }
            Part::FunctionCall { name, args, .. }
                if e.llm_response.partial || !streamed.contains(&format!("call:{name}")) =>
            {
                streamed.insert(format!("call:{name}"));
                out.push(LlmEvent::ToolCall {
                    name: name.clone(),
                    arguments: args.to_string(),
                });
            }
            _ => {}
        }
    }
    out
}

impl Llm for AdkLlm {
    fn stream(&self, request: &Custom) -> LlmStream {
        let Some(turn) = request.get::<AdkTurn>().cloned() else {
            let err = LlmError("the LLM request carries no ADK turn".into());
            return Box::pin(stream::iter([Err(err)]));
        };
        let call = self.call.clone();
        let events = stream::once(async move { call.run(&turn.caller_said).await });
        let s = events.flat_map(|r| match r {
            Err(e) => stream::iter(vec![Err(LlmError(e.to_string()))]).boxed(),
            Ok(events) => {
                let mut streamed = HashSet::new();
                events
                    .flat_map(move |e| {
                        let items: Vec<Result<LlmEvent, LlmError>> = match e {
                            Ok(e) => pieces(&e, &mut streamed).into_iter().map(Ok).collect(),
                            Err(e) => vec![Err(LlmError(e.to_string()))],
                        };
                        stream::iter(items)
                    })
                    .boxed()
            }
        });
        Box::pin(s)
    }
}
