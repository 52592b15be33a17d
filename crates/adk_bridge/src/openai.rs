//! An OpenAI-compatible model for ADK agents, over CallLock's own client
//! ([`providers::openai::OpenAiClient`]: rustls with ring, first-token and
//! idle deadlines, the tested SSE parser) rather than the ADK's provider
//! crate (which brings a second HTTP stack and another TLS library).
//!
//! The request's contents become chat-completions messages: `user` turns
//! (a function's results become `tool` messages answering their call ids),
//! `model` turns become `assistant` messages (with `tool_calls` when the
//! model called tools), and each tool declaration a `function` tool. The
//! answer streams back as partial responses: text as it comes, each tool
//! call once complete, then an empty terminal chunk (the agent keeps what
//! was streamed).

use adk_core::{Content, Llm, LlmRequest, LlmResponse, LlmResponseStream, Part};
use futures_util::StreamExt;
use providers::openai::{ChatDelta, OpenAiClient};
use serde_json::{json, Value};
use std::sync::Arc;

/// The model behind an agent: an OpenAI-compatible endpoint.
#[derive(Clone)]
pub struct OpenAiModel {
    client: Arc<OpenAiClient>,
    name: String,
}

impl OpenAiModel {
    pub fn new(client: Arc<OpenAiClient>) -> Self {
        let name = client.config().model.clone();
        OpenAiModel { client, name }
    }
}

/// The chat-completions messages of `contents`.
pub fn wire_messages(contents: &[Content]) -> Vec<Value> {
    let mut out = Vec::new();
    for c in contents {
        let mut text = String::new();
        let mut calls = Vec::new();
        for p in &c.parts {
            match p {
                Part::Text { text: t } => text.push_str(t),
                Part::FunctionCall { name, args, id, .. } => calls.push(json!({
                    "id": id.clone().unwrap_or_else(|| format!("call_{name}")),
                    "type": "function",
                    "function": {"name": name, "arguments": args.to_string()},
                })),
                Part::FunctionResponse {
                    function_response,
                    id,
                    ..
                } => out.push(json!({
                    "role": "tool",
                    "tool_call_id": id.clone().unwrap_or_else(|| format!("call_{}", function_response.name)),
                    "content": function_response.response.to_string(),
                })),
                _ => {}
            }
        }
        let role = if c.role == "model" {
            "assistant"
        } else {
            "user"
        };
        if role == "assistant" && !calls.is_empty() {
            let content = if text.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
            out.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
        } else if !text.is_empty() {
            out.push(json!({"role": role, "content": text}));
        }
    }
    out
}

/// The chat-completions tools of a request's declarations.
fn wire_tools(req: &LlmRequest) -> Option<Vec<Value>> {
    let mut names: Vec<&String> = req.tools.keys().collect();
    names.sort();
    let tools: Vec<Value> = names
        .into_iter()
        .map(|n| {
            let mut decl = req.tools[n].clone();
            if decl.get("name").is_none() {
                decl["name"] = json!(n);
            }
            json!({"type": "function", "function": decl})
        })
        .collect();
    (!tools.is_empty()).then_some(tools)
}

fn partial(content: Content) -> LlmResponse {
    LlmResponse {
        content: Some(content),
        partial: true,
        ..LlmResponse::default()
    }
}

#[async_trait::async_trait]
impl Llm for OpenAiModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn generate_content(
        &self,
        req: LlmRequest,
        _stream: bool,
    ) -> adk_core::Result<LlmResponseStream> {
        let deltas = self
            .client
            .chat_stream_wire(wire_messages(&req.contents), wire_tools(&req))
            .await
            .map_err(|e| adk_core::AdkError::model(e.to_string()))?;
        let answer = deltas.map(|d| match d {
            Ok(ChatDelta::Text(t)) => Ok(partial(Content::new("model").with_text(t))),
            Ok(ChatDelta::ToolCall(call)) => {
                let args = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                let mut c = Content::new("model");
                c.parts.push(Part::FunctionCall {
                    name: call.name,
                    args,
                    id: (!call.id.is_empty()).then_some(call.id),
                    thought_signature: None,
                });
                Ok(partial(c))
            }
            Err(e) => Err(adk_core::AdkError::model(e.to_string())),
        });
        let end = futures_util::stream::once(async {
            Ok(LlmResponse {
                partial: false,
                turn_complete: true,
                finish_reason: Some(adk_core::FinishReason::Stop),
                ..LlmResponse::default()
            })
        });
        Ok(Box::pin(answer.chain(end)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_become_chat_messages_with_tool_calls_and_results() {
        let mut call = Content::new("model");
        call.parts.push(Part::FunctionCall {
            name: "book".into(),
            args: json!({"when": "Friday"}),
            id: Some("call_7".into()),
            thought_signature: None,
        });
        let mut result = Content::new("user");
        result.parts.push(Part::FunctionResponse {
            function_response: adk_core::FunctionResponseData::new("book", json!({"booked": true})),
            id: Some("call_7".into()),
            annotations: None,
        });
        let wire = wire_messages(&[
            Content::new("user").with_text("You book haircuts."),
            Content::new("user").with_text("Friday please"),
            call,
            result,
            Content::new("model").with_text("Booked."),
        ]);
        assert_eq!(
            wire,
            [
                json!({"role": "user", "content": "You book haircuts."}),
                json!({"role": "user", "content": "Friday please"}),
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_7", "type": "function",
                     "function": {"name": "book", "arguments": "{\"when\":\"Friday\"}"}}
                ]}),
                json!({"role": "tool", "tool_call_id": "call_7", "content": "{\"booked\":true}"}),
                json!({"role": "assistant", "content": "Booked."}),
            ]
        );
    }
}
