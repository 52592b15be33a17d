//! An ADK agent as the voice pipeline's language model
//! ([`voice::stages::llm::Llm`]): each request runs the agent once on what
//! the caller said, and its streamed partial text flows on to sentence
//! aggregation and speech as it arrives.
//!
//! The request's [`Custom`] carries an [`AdkTurn`]. Dropping the stream (a
//! barge-in, a newer request) stops the run; the ADK then commits no reply
//! for it, which the caller's interruption then records
//! ([`AdkCall::interrupted`]). A tool the agent called is the exception:
//! it runs to its result (the result lands in the session) whatever the
//! caller does, and barge-in is muted on the call's floor while it runs.

use crate::session::AdkCall;
use adk_core::{Event, Part};
use futures_util::stream::{self, StreamExt};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::mpsc;
use voice::floor::{Floor, MuteReason};
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
    floor: Option<Arc<Floor>>,
}

impl AdkLlm {
    pub fn new(call: AdkCall) -> Self {
        AdkLlm { call, floor: None }
    }

    /// Mute barge-in on `floor` while one of the agent's tools runs.
    pub fn with_floor(mut self, floor: Arc<Floor>) -> Self {
        self.floor = Some(floor);
        self
    }
}

/// What the pipeline hears of one ADK event. Partial events carry the
/// reply as it streams; the final event repeats it whole, so its text is
/// used only by an author that streamed none (a model that does not
/// stream). Each tool call and each tool result is reported once.
pub(crate) fn pieces(e: &Event, streamed: &mut HashSet<String>) -> Vec<LlmEvent> {
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
            Part::FunctionCall { name, args, id, .. } => {
                let key = format!("call:{}", id.as_deref().unwrap_or(name));
                if streamed.insert(key) {
                    out.push(LlmEvent::ToolCall {
                        name: name.clone(),
                        arguments: args.to_string(),
                    });
                }
            }
            Part::FunctionResponse {
                function_response,
                id,
                ..
            } => {
                let key = format!(
                    "result:{}",
                    id.as_deref().unwrap_or(&function_response.name)
                );
                if streamed.insert(key) {
                    out.push(LlmEvent::ToolResult {
                        name: function_response.name.clone(),
                        result: function_response.response.to_string(),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// Tool calls of `e` that started (`+1` each) and finished (`-1`), by id.
fn tool_changes(e: &Event, open: &mut HashSet<String>) {
    let Some(content) = &e.llm_response.content else {
        return;
    };
    for p in &content.parts {
        match p {
            Part::FunctionCall { name, id, .. } => {
                open.insert(id.clone().unwrap_or_else(|| name.clone()));
            }
            Part::FunctionResponse {
                function_response,
                id,
                ..
            } => {
                open.remove(id.as_deref().unwrap_or(&function_response.name));
            }
            _ => {}
        }
    }
}

/// Clears the tool mute however a run ends.
struct Unmute(Option<Arc<Floor>>);

impl Drop for Unmute {
    fn drop(&mut self) {
        if let Some(f) = &self.0 {
            f.set_muted(MuteReason::Tool, false);
        }
    }
}

type Items = mpsc::UnboundedSender<Result<LlmEvent, LlmError>>;

/// Run the agent once, forwarding what the pipeline hears to `tx`. The
/// run stops when the pipeline lets go of the reply (a barge-in) — except
/// while a tool runs: a tool works under the call, not the turn, so its
/// result reaches the session whatever the caller does meanwhile.
async fn drive(call: AdkCall, turn: AdkTurn, tx: Items, floor: Option<Arc<Floor>>) {
    let _unmute = Unmute(floor.clone());
    let mut events = match call.run(&turn.caller_said).await {
        Ok(e) => e,
        Err(e) => {
            let _ = tx.send(Err(LlmError(e.to_string())));
            return;
        }
    };
    let mut streamed = HashSet::new();
    let mut open_tools = HashSet::new();
    while let Some(e) = events.next().await {
        match e {
            Ok(e) => {
                tool_changes(&e, &mut open_tools);
                if let Some(f) = &floor {
                    f.set_muted(MuteReason::Tool, !open_tools.is_empty());
                }
                for piece in pieces(&e, &mut streamed) {
                    let _ = tx.send(Ok(piece));
                }
            }
            Err(e) => {
                let _ = tx.send(Err(LlmError(e.to_string())));
                return;
            }
        }
        if tx.is_closed() && open_tools.is_empty() {
            return;
        }
    }
}

impl Llm for AdkLlm {
    fn stream(&self, request: &Custom) -> LlmStream {
        let Some(turn) = request.get::<AdkTurn>().cloned() else {
            let err = LlmError("the LLM request carries no ADK turn".into());
            return Box::pin(stream::iter([Err(err)]));
        };
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(drive(self.call.clone(), turn, tx, self.floor.clone()));
        Box::pin(stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        }))
    }
}
