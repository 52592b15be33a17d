//! A scripted LLM: replies streamed token by token with chosen delays (and
//! tool calls), every request recorded with whether it completed or was
//! dropped.

use crate::frames::Custom;
use crate::offline::timed::TimedStream as ScriptedStream;
use crate::stages::llm::{Llm, LlmError, LlmEvent, LlmStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// One scripted reply.
#[derive(Clone, Debug, PartialEq)]
pub struct MockReply {
    /// Delay before the first token.
    pub first_token: Duration,
    /// Delay between tokens.
    pub per_token: Duration,
    pub tokens: Vec<String>,
    /// Tool calls sent before the text (name, JSON arguments).
    pub tool_calls: Vec<(String, String)>,
    /// Fail after the tokens with this error.
    pub fail: Option<String>,
}

impl MockReply {
    /// `text` streamed word by word (each token keeps its trailing space).
    pub fn text(text: &str, first_token: Duration, per_token: Duration) -> Self {
        let mut tokens: Vec<String> = text.split_inclusive(' ').map(str::to_string).collect();
        if tokens.is_empty() {
            tokens.push(String::new());
        }
        MockReply {
            first_token,
            per_token,
            tokens,
            tool_calls: Vec::new(),
            fail: None,
        }
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmEnding {
    Completed,
    /// The stream was dropped (cancelled) before its end.
    Dropped,
}

/// One request the mock received.
#[derive(Clone, Debug)]
pub struct LlmCall {
    pub request: Custom,
    pub started: Instant,
    pub ended: Option<(Instant, LlmEnding)>,
}

type ReplyFn = dyn Fn(&Custom, usize) -> MockReply + Send + Sync;

/// The scripted LLM.
#[derive(Clone)]
pub struct MockLlm {
    reply: Arc<ReplyFn>,
    pub log: Arc<Mutex<Vec<LlmCall>>>,
}

impl MockLlm {
    /// `reply(request, index)` scripts the reply to the `index`-th request.
    pub fn new(reply: impl Fn(&Custom, usize) -> MockReply + Send + Sync + 'static) -> Self {
        MockLlm {
            reply: Arc::new(reply),
            log: Arc::default(),
        }
    }

    /// Every request so far.
    pub fn calls(&self) -> Vec<LlmCall> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Llm for MockLlm {
    fn stream(&self, request: &Custom) -> LlmStream {
        let idx = {
            let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            log.push(LlmCall {
                request: request.clone(),
                started: Instant::now(),
                ended: None,
            });
            log.len() - 1
        };
        let reply = (self.reply)(request, idx);
        let mut items: Vec<(Duration, Result<LlmEvent, LlmError>)> = Vec::new();
        let mut first = true;
        for (name, arguments) in reply.tool_calls {
            let d = if first {
                reply.first_token
            } else {
                Duration::ZERO
            };
            first = false;
            items.push((d, Ok(LlmEvent::ToolCall { name, arguments })));
        }
        for t in reply.tokens {
            let d = if first {
                reply.first_token
            } else {
                reply.per_token
            };
            first = false;
            items.push((d, Ok(LlmEvent::Text(t))));
        }
        if let Some(e) = reply.fail {
            items.push((reply.per_token, Err(LlmError(e))));
        }
        let log = self.log.clone();
        Box::pin(ScriptedStream::new(items, move |done| {
            if let Some(c) = log.lock().unwrap_or_else(|e| e.into_inner()).get_mut(idx) {
                let ending = if done {
                    LlmEnding::Completed
                } else {
                    LlmEnding::Dropped
                };
                c.ended = Some((Instant::now(), ending));
            }
        }))
    }
}
