//! A scripted ADK model for tests and examples with no network: it
//! answers each request with the next scripted reply, streamed as partial
//! chunks the way a real provider streams, and keeps every request it was
//! sent (what the agent told the model is what tests check).

use adk_core::{Content, Llm, LlmRequest, LlmResponse, LlmResponseStream, Part};
use futures_util::stream;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum MockAnswer {
    /// Text, streamed in the given pieces.
    Text(Vec<String>),
    /// A call of the named tool with these arguments.
    ToolCall {
        name: String,
        args: serde_json::Value,
    },
}

impl MockAnswer {
    /// Text streamed word by word.
    pub fn text(t: &str) -> Self {
        let mut pieces = Vec::new();
        let mut cur = String::new();
        for c in t.chars() {
            cur.push(c);
            if c == ' ' {
                pieces.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() {
            pieces.push(cur);
        }
        MockAnswer::Text(pieces)
    }

    /// A tool call.
    pub fn tool(name: &str, args: serde_json::Value) -> Self {
        MockAnswer::ToolCall {
            name: name.into(),
            args,
        }
    }
}

/// One request the model received: its contents as (role, text) pairs,
/// function calls and responses written as `call name(args)` and
/// `result name: {...}`.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenRequest {
    pub contents: Vec<(String, String)>,
    pub tools: Vec<String>,
}

impl SeenRequest {
    /// The texts of one role, in order.
    pub fn said_by(&self, role: &str) -> Vec<&str> {
        self.contents
            .iter()
            .filter(|(r, _)| r == role)
            .map(|(_, t)| t.as_str())
            .collect()
    }
}

#[derive(Default)]
struct Script {
    answers: VecDeque<MockAnswer>,
    seen: Vec<SeenRequest>,
}

/// The scripted model. Clones share the script and the request log.
#[derive(Clone, Default)]
pub struct MockModel {
    script: Arc<Mutex<Script>>,
    /// Wait before each streamed piece (virtual time in tests).
    pub piece_delay: Duration,
}

impl MockModel {
    pub fn new(answers: impl IntoIterator<Item = MockAnswer>) -> Self {
        let m = MockModel::default();
        m.script().answers.extend(answers);
        m
    }

    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue more answers.
    pub fn answer(&self, a: MockAnswer) {
        self.script().answers.push_back(a);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.script().seen.clone()
    }
}

/// `(role, text)` of each content, for reading in tests.
pub fn describe(contents: &[Content]) -> Vec<(String, String)> {
    contents
        .iter()
        .map(|c| {
            let text: Vec<String> = c
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text.clone()),
                    Part::FunctionCall { name, args, .. } => Some(format!("call {name}({args})")),
                    Part::FunctionResponse {
                        function_response, ..
                    } => Some(format!(
                        "result {}: {}",
                        function_response.name, function_response.response
                    )),
                    _ => None,
                })
                .collect();
            (c.role.clone(), text.join(""))
        })
        .collect()
}

#[async_trait::async_trait]
impl Llm for MockModel {
    fn name(&self) -> &str {
        "mock"
    }

    async fn generate_content(
        &self,
        req: LlmRequest,
        _stream: bool,
    ) -> adk_core::Result<LlmResponseStream> {
        let answer = {
            let mut s = self.script();
            let mut tools: Vec<String> = req.tools.keys().cloned().collect();
            tools.sort();
            s.seen.push(SeenRequest {
                contents: describe(&req.contents),
                tools,
            });
            s.answers
                .pop_front()
                .unwrap_or_else(|| MockAnswer::text("(the script has no more answers)"))
        };
        let mut chunks: Vec<LlmResponse> = match answer {
            MockAnswer::Text(pieces) => pieces
                .into_iter()
                .map(|p| LlmResponse {
                    content: Some(Content::new("model").with_text(p)),
                    partial: true,
                    ..LlmResponse::default()
                })
                .collect(),
            MockAnswer::ToolCall { name, args } => {
                let mut c = Content::new("model");
                c.parts.push(Part::FunctionCall {
                    name,
                    args,
                    id: Some(format!("call_{}", self.script().seen.len())),
                    thought_signature: None,
                });
                vec![LlmResponse {
                    content: Some(c),
                    partial: true,
                    ..LlmResponse::default()
                }]
            }
        };
        // The terminal chunk is empty: the agent keeps what was streamed
        // (a terminal chunk repeating the text would be appended twice).
        chunks.push(LlmResponse {
            partial: false,
            turn_complete: true,
            finish_reason: Some(adk_core::FinishReason::Stop),
            ..LlmResponse::default()
        });
        let delay = self.piece_delay;
        let s = stream::iter(chunks).then(move |c| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok(c)
        });
        Ok(Box::pin(s))
    }
}

use futures_util::StreamExt;
