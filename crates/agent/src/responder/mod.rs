//! Where the agent's words come from.
//!
//! The conversation engine's async shell asks a [`Responder`] for three
//! things: the reply of an LLM turn (streamed as text chunks, so TTS can start
//! on the first sentence), the one-off scoped wrap-up reply of terminal
//! routing (SPEC §5.6), and background field extraction (SPEC §5.8).
//!
//! Implementations: [`ScriptedResponder`] here (deterministic, offline; what
//! `calllock chat` / `demo` and the simulations use) and the
//! OpenAI-compatible client in `providers`.

mod scripted;

pub use scripted::ScriptedResponder;

use crate::extract::ExtractedFields;
use crate::session::{HistoryMessage, Session};
use crate::state::State;
use futures_core::Stream;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
    /// A backend tool's result as text. CallLock's tools are run by the
    /// state machine, not requested by the model, so there is no
    /// `tool_call_id` to answer: OpenAI-compatible clients send it as a
    /// system message.
    Tool,
}

/// One message of an LLM conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: ChatRole::System,
            content: content.into(),
        }
    }
    /// A caller message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: ChatRole::User,
            content: content.into(),
        }
    }
    /// An agent message.
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: ChatRole::Assistant,
            content: content.into(),
        }
    }
}

/// One LLM turn: the state after processing, a snapshot of the session and
/// the messages (system prompt first, then the projected history; the last
/// one is the caller's text).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    pub state: State,
    pub session: Session,
    pub messages: Vec<ChatMessage>,
}

impl TurnRequest {
    /// The caller's latest text (the last user message), or "".
    pub fn last_user_text(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == ChatRole::User)
            .map(|m| m.content.as_str())
            .unwrap_or("")
    }
}

/// The one-off terminal wrap-up reply (SPEC §5.6).
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedRequest {
    pub state: State,
    pub session: Session,
    pub user_text: String,
}

/// A background extraction pass over the last (≤ 10) history entries.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractionRequest {
    pub history: Vec<HistoryMessage>,
}

/// Why a responder could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponderError {
    #[error("responder timed out")]
    Timeout,
    #[error("responder HTTP error: {0}")]
    Http(String),
    #[error("responder answer could not be parsed: {0}")]
    Parse(String),
    #[error("responder error: {0}")]
    Other(String),
}

/// A streamed reply: text chunks whose concatenation is the whole reply.
pub type ReplyStream = Pin<Box<dyn Stream<Item = Result<String, ResponderError>> + Send>>;

/// A source of the agent's words.
#[async_trait::async_trait]
pub trait Responder: Send + Sync {
    /// The reply of one LLM turn, streamed.
    async fn reply(&self, req: &TurnRequest) -> Result<ReplyStream, ResponderError>;
    /// The scoped wrap-up reply (one sentence at most; the caller of this
    /// method still applies [`passes_booking_filter`]).
    async fn scoped_reply(&self, req: &ScopedRequest) -> Result<String, ResponderError>;
    /// Field extraction from the caller's lines.
    async fn extract(&self, req: &ExtractionRequest) -> Result<ExtractedFields, ResponderError>;
    /// Post-call classification (SPEC §7.7): `prompt` is
    /// [`crate::classify::classification_prompt`]; the answer is the
    /// validated, clamped fields ([`crate::classify::parse_classification`]).
    /// A responder without a language model has nothing to add: `{}` (the
    /// deterministic classification of §7.6 is always in the payload).
    async fn classify(
        &self,
        _prompt: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, ResponderError> {
        Ok(serde_json::Map::new())
    }
    /// A short name for logs ("scripted", "openai:gpt-4o-mini", …).
    fn name(&self) -> &str;
}

/// A stream over ready-made chunks (for scripted replies and test fakes).
struct ChunkStream {
    chunks: VecDeque<Result<String, ResponderError>>,
}

impl Stream for ChunkStream {
    type Item = Result<String, ResponderError>;
    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.chunks.pop_front())
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.chunks.len(), Some(self.chunks.len()))
    }
}

/// A [`ReplyStream`] that yields `items` in order.
pub fn stream_from_items(items: Vec<Result<String, ResponderError>>) -> ReplyStream {
    Box::pin(ChunkStream {
        chunks: items.into(),
    })
}

/// A [`ReplyStream`] that yields `text` in sentence-sized chunks (split after
/// `.`, `?`, `!` and `,`); the chunks concatenate back to `text`.
pub fn stream_from_text(text: &str) -> ReplyStream {
    let chunks: Vec<Result<String, ResponderError>> = text
        .split_inclusive(['.', '?', '!', ','])
        .filter(|c| !c.is_empty())
        .map(|c| Ok(c.to_string()))
        .collect();
    stream_from_items(chunks)
}

struct NextChunk<'a> {
    stream: &'a mut ReplyStream,
}

impl Future for NextChunk<'_> {
    type Output = Option<Result<String, ResponderError>>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.stream.as_mut().poll_next(cx)
    }
}

/// Read a reply stream to the end and return the whole text (the first error
/// ends it).
pub async fn collect_reply(mut stream: ReplyStream) -> Result<String, ResponderError> {
    let mut out = String::new();
    while let Some(chunk) = (NextChunk {
        stream: &mut stream,
    })
    .await
    {
        out.push_str(&chunk?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    /// Minimal executor for futures that never wait on I/O (the scripted
    /// responder's tests use it too).
    pub(super) fn block_on<F: Future>(f: F) -> F::Output {
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        let mut f = std::pin::pin!(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    #[test]
    fn chat_role_serde() {
        let m = ChatMessage::assistant("hi");
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({"role": "assistant", "content": "hi"})
        );
        let m: ChatMessage = serde_json::from_str(r#"{"role":"system","content":"x"}"#).unwrap();
        assert_eq!(m.role, ChatRole::System);
    }

    #[test]
    fn stream_round_trip_and_error() {
        let text = "Hello there. How are you, friend? Fine!";
        let got = block_on(collect_reply(stream_from_text(text))).unwrap();
        assert_eq!(got, text);
        let s = stream_from_items(vec![
            Ok("a".into()),
            Err(ResponderError::Timeout),
            Ok("b".into()),
        ]);
        assert_eq!(block_on(collect_reply(s)), Err(ResponderError::Timeout));
        assert_eq!(block_on(collect_reply(stream_from_text(""))).unwrap(), "");
    }
}
