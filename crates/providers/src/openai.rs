//! An OpenAI-compatible chat-completions client (SPEC §5.8, §5.9, §5.11,
//! §7.7) implementing [`agent::responder::Responder`].
//!
//! Everything goes to `POST {base_url}/chat/completions` through one pooled
//! `reqwest` client (rustls, ring provider), with `Authorization: Bearer`
//! only when an API key is configured (local OpenAI-compatible servers need
//! none).
//!
//! * Conversation replies stream (`stream: true`): the body is read with our
//!   own SSE decoder ([`crate::sse`]) and the chunk parser
//!   [`ChatChunkParser`], which yields text deltas and reassembled tool
//!   calls ([`ChatDelta`]). [`OpenAiClient::chat_stream`] is the lower-level
//!   API; [`Responder::reply`] keeps only the text.
//! * Extraction and classification use JSON-object mode, non-streaming;
//!   the scoped wrap-up reply is a short non-streaming request.
//!
//! Time limits: streaming has a first-token deadline (from the request to
//! the first text or tool call) and an idle limit between body chunks after
//! that; a stalled stream ends with [`ResponderError::Timeout`]. Each
//! non-streaming request has its own whole-request timeout. Extraction and
//! classification (idempotent reads) are retried once after a short backoff
//! on a connect error, a 5xx or a 429; a timeout is not retried, and a
//! streamed reply is never retried.
//!
//! Dropping a [`ChatStream`] (or the [`ReplyStream`] of `reply`) drops the
//! HTTP response, which closes the connection: the server sees the client
//! go away.

use crate::sse::{SseDecoder, SseEvent, DEFAULT_MAX_EVENT_BYTES};
use agent::classify::parse_classification;
use agent::extract::{extraction_messages, parse_extraction, ExtractedFields};
use agent::profile::BusinessProfile;
use agent::prompts::scoped_reply_prompt;
use agent::responder::{
    ChatMessage, ChatRole, ExtractionRequest, ReplyStream, Responder, ResponderError,
    ScopedRequest, TurnRequest,
};
use bytes::Bytes;
use futures_core::Stream;
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::time::Duration;
use tokio::time::Instant;

/// The default API root.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The default model (SPEC §5.11).
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// Most tool calls one streamed answer may carry.
const MAX_TOOL_CALLS: u64 = 64;
/// Longest excerpt of an error body or a bad chunk quoted in an error.
const EXCERPT_CHARS: usize = 200;

/// Settings of one kind of non-streaming request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSettings {
    /// Sampling temperature; `None` leaves the server default.
    pub temperature: Option<f64>,
    /// `max_tokens`; `None` leaves the server default.
    pub max_tokens: Option<u32>,
    /// Whole-request timeout (connect, send, read the answer);
    /// `None` = [`OpenAiConfig::request_timeout`]. Applies per attempt.
    pub timeout: Option<Duration>,
    /// Ask for `response_format: {"type": "json_object"}`.
    pub json_object: bool,
    /// Retry once (after [`OpenAiConfig::retry_backoff`]) on a connect
    /// error, a 5xx or a 429. Only for idempotent reads.
    pub retry: bool,
}

impl RequestSettings {
    /// Extraction (SPEC §5.8/§5.11): temperature 0.1, JSON object, 10 s,
    /// one retry.
    pub fn extraction() -> Self {
        RequestSettings {
            temperature: Some(0.1),
            max_tokens: None,
            timeout: Some(Duration::from_secs(10)),
            json_object: true,
            retry: true,
        }
    }

    /// Post-call classification (SPEC §7.7/§5.11): temperature 0.2,
    /// max_tokens 500, JSON object, 5 s, one retry.
    pub fn classification() -> Self {
        RequestSettings {
            temperature: Some(0.2),
            max_tokens: Some(500),
            timeout: Some(Duration::from_secs(5)),
            json_object: true,
            retry: true,
        }
    }

    /// The terminal scoped reply (SPEC §5.6/§5.11): temperature 0.3,
    /// max_tokens 50, 2 s, plain text, no retry.
    pub fn scoped() -> Self {
        RequestSettings {
            temperature: Some(0.3),
            max_tokens: Some(50),
            timeout: Some(Duration::from_secs(2)),
            json_object: false,
            retry: false,
        }
    }
}

/// Configuration of an [`OpenAiClient`]. `Default` gives the SPEC values
/// against the public OpenAI API without a key.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// API root; `/chat/completions` is appended (a trailing `/` is fine).
    pub base_url: String,
    /// Model name for every request.
    pub model: String,
    /// Bearer token; `None` (or empty) sends no `Authorization` header.
    pub api_key: Option<String>,
    /// TCP + TLS connect limit.
    pub connect_timeout: Duration,
    /// Streaming: from sending the request to the first text or tool call.
    pub first_token_timeout: Duration,
    /// Streaming: longest wait for the next body chunk after the first
    /// token.
    pub idle_timeout: Duration,
    /// Default whole-request timeout of non-streaming requests whose
    /// [`RequestSettings::timeout`] is `None`.
    pub request_timeout: Duration,
    /// Pause before the one retry of a retryable request.
    pub retry_backoff: Duration,
    /// Conversation replies: temperature (`None` = server default, as in
    /// SPEC §5.11).
    pub reply_temperature: Option<f64>,
    /// Conversation replies: `max_tokens` (`None` = server default).
    pub reply_max_tokens: Option<u32>,
    /// Background extraction.
    pub extraction: RequestSettings,
    /// Post-call classification.
    pub classification: RequestSettings,
    /// Terminal scoped reply.
    pub scoped: RequestSettings,
    /// Largest single SSE event accepted from a stream.
    pub max_event_bytes: usize,
    /// Largest non-streaming response body accepted.
    pub max_response_bytes: usize,
    /// The business the scoped reply speaks for
    /// ([`agent::prompts::scoped_reply_prompt`]).
    pub profile: BusinessProfile,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            base_url: DEFAULT_BASE_URL.into(),
            model: DEFAULT_MODEL.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(3),
            first_token_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            retry_backoff: Duration::from_millis(250),
            reply_temperature: None,
            reply_max_tokens: None,
            extraction: RequestSettings::extraction(),
            classification: RequestSettings::classification(),
            scoped: RequestSettings::scoped(),
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_response_bytes: 4 * 1024 * 1024,
            profile: BusinessProfile::default(),
        }
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field(
                "api_key",
                &self
                    .api_key
                    .as_ref()
                    .map(|_| "<redacted>")
                    .unwrap_or("<none>"),
            )
            .field("connect_timeout", &self.connect_timeout)
            .field("first_token_timeout", &self.first_token_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("retry_backoff", &self.retry_backoff)
            .field("reply_temperature", &self.reply_temperature)
            .field("reply_max_tokens", &self.reply_max_tokens)
            .field("extraction", &self.extraction)
            .field("classification", &self.classification)
            .field("scoped", &self.scoped)
            .field("max_event_bytes", &self.max_event_bytes)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

/// Why an [`OpenAiClient`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenAiSetupError {
    /// `base_url` is not an absolute `http`/`https` URL.
    #[error("invalid OpenAI base URL {url:?}: {reason}")]
    InvalidBaseUrl {
        /// The configured value.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The API key cannot be sent in an HTTP header.
    #[error("the OpenAI API key contains characters not allowed in an HTTP header")]
    InvalidApiKey,
    /// The HTTP client could not be built (TLS setup).
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}

/// One completed tool call of a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The call's `index` in the answer.
    pub index: u32,
    /// The call id (`call_…`); empty if the server sent none.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The function arguments as sent (a JSON text, not validated here).
    pub arguments: String,
}

impl ToolCall {
    /// The arguments parsed as JSON.
    pub fn arguments_json(&self) -> Result<Value, ResponderError> {
        serde_json::from_str(&self.arguments).map_err(|e| {
            ResponderError::Parse(format!(
                "arguments of tool call {:?} are not JSON ({e}): {}",
                self.name,
                excerpt(&self.arguments)
            ))
        })
    }
}

/// One item of a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatDelta {
    /// The next piece of the answer's text (never empty).
    Text(String),
    /// A tool call, complete (its argument fragments joined). Tool calls
    /// come when the answer finishes (`finish_reason` or `[DONE]`), in
    /// index order.
    ToolCall(ToolCall),
}

/// A streamed answer: deltas in order; an error is always the last item.
pub type ChatStream = Pin<Box<dyn Stream<Item = Result<ChatDelta, ResponderError>> + Send>>;

#[derive(Debug, Default)]
struct PartialToolCall {
    id: String,
    name: String,
    arguments: String,
}

/// Sans-IO parser of a streamed chat-completions body: SSE decoding plus
/// the `chat.completion.chunk` JSON of each event.
///
/// Feed it body pieces with [`push`](Self::push) and call
/// [`finish`](Self::finish) at the end of the body. It stops (yields
/// nothing more, [`is_done`](Self::is_done) is true) at `[DONE]` or after
/// the first error; an error is always the last item it yields.
///
/// Errors: a chunk that is not JSON, an unexpected shape or an oversize
/// event → [`ResponderError::Parse`]; an `error` object (or an `error`
/// event) in the stream → [`ResponderError::Http`]; the body ending before
/// `[DONE]` or a `finish_reason` → [`ResponderError::Http`].
#[derive(Debug)]
pub struct ChatChunkParser {
    sse: SseDecoder,
    tools: BTreeMap<u32, PartialToolCall>,
    max_tool_call_bytes: usize,
    finish_reason: Option<String>,
    done: bool,
}

impl Default for ChatChunkParser {
    fn default() -> Self {
        ChatChunkParser::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl ChatChunkParser {
    /// A parser accepting SSE events (and tool-call arguments) of up to
    /// `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        ChatChunkParser {
            sse: SseDecoder::with_max_event_bytes(max_event_bytes),
            tools: BTreeMap::new(),
            max_tool_call_bytes: max_event_bytes.max(1),
            finish_reason: None,
            done: false,
        }
    }

    /// Whether the answer is over: `[DONE]` seen or an error yielded.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The `finish_reason` of the answer, once the server sent one.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    /// Feed the next piece of the body.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Result<ChatDelta, ResponderError>> {
        let mut out = Vec::new();
        if self.done {
            return out;
        }
        for ev in self.sse.push(bytes) {
            match ev {
                Ok(ev) => self.event(&ev, &mut out),
                Err(e) => self.fail(ResponderError::Parse(e.to_string()), &mut out),
            }
            if self.done {
                break;
            }
        }
        out
    }

    /// The body ended. Yields what the last, unterminated event held and,
    /// unless the answer was complete (`[DONE]` or a `finish_reason`), an
    /// error saying the stream was cut short.
    pub fn finish(&mut self) -> Vec<Result<ChatDelta, ResponderError>> {
        let mut out = Vec::new();
        if self.done {
            return out;
        }
        if let Some(ev) = self.sse.finish() {
            self.event(&ev, &mut out);
        }
        if self.done {
            return out;
        }
        if self.finish_reason.is_some() {
            self.flush_tools(&mut out);
            self.done = true;
        } else {
            self.fail(
                ResponderError::Http("the stream ended before the answer was complete".into()),
                &mut out,
            );
        }
        out
    }

    fn fail(&mut self, e: ResponderError, out: &mut Vec<Result<ChatDelta, ResponderError>>) {
        if !self.done {
            out.push(Err(e));
            self.done = true;
            self.tools.clear();
        }
    }

    fn flush_tools(&mut self, out: &mut Vec<Result<ChatDelta, ResponderError>>) {
        let tools = std::mem::take(&mut self.tools);
        for (index, t) in tools {
            if t.name.is_empty() {
                self.fail(
                    ResponderError::Parse(format!("tool call {index} has no function name")),
                    out,
                );
                return;
            }
            out.push(Ok(ChatDelta::ToolCall(ToolCall {
                index,
                id: t.id,
                name: t.name,
                arguments: t.arguments,
            })));
        }
    }

    fn event(&mut self, ev: &SseEvent, out: &mut Vec<Result<ChatDelta, ResponderError>>) {
        if self.done {
            return;
        }
        let data = ev.data.trim();
        if ev.event.as_deref() == Some("error") {
            let msg = serde_json::from_str::<Value>(data)
                .ok()
                .and_then(|v| error_message(&v))
                .unwrap_or_else(|| excerpt(data));
            self.fail(
                ResponderError::Http(format!("error event in the stream: {msg}")),
                out,
            );
            return;
        }
        if data == "[DONE]" {
            self.flush_tools(out);
            self.done = true;
            return;
        }
        if data.is_empty() {
            return;
        }
        let chunk: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(e) => {
                self.fail(
                    ResponderError::Parse(format!(
                        "malformed stream chunk ({e}): {}",
                        excerpt(data)
                    )),
                    out,
                );
                return;
            }
        };
        if let Err(e) = self.chunk(&chunk, out) {
            self.fail(e, out);
        }
    }

    fn chunk(
        &mut self,
        chunk: &Value,
        out: &mut Vec<Result<ChatDelta, ResponderError>>,
    ) -> Result<(), ResponderError> {
        let Some(obj) = chunk.as_object() else {
            return Err(ResponderError::Parse(format!(
                "stream chunk is not a JSON object: {}",
                excerpt(&chunk.to_string())
            )));
        };
        if let Some(err) = obj.get("error").filter(|e| !e.is_null()) {
            let msg = error_message(chunk).unwrap_or_else(|| excerpt(&err.to_string()));
            return Err(ResponderError::Http(format!("error in the stream: {msg}")));
        }
        let choices = match obj.get("choices") {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(ResponderError::Parse(format!(
                    "stream chunk \"choices\" is not a list: {}",
                    excerpt(&other.to_string())
                )))
            }
        };
        for choice in choices {
            let Some(choice) = choice.as_object() else {
                return Err(ResponderError::Parse(
                    "stream chunk choice is not an object".into(),
                ));
            };
            // Only the first choice is used (we never ask for n > 1).
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            match choice.get("delta") {
                None | Some(Value::Null) => {}
                Some(Value::Object(delta)) => self.delta(delta, out)?,
                Some(_) => {
                    return Err(ResponderError::Parse(
                        "stream chunk \"delta\" is not an object".into(),
                    ))
                }
            }
            match choice.get("finish_reason") {
                None | Some(Value::Null) => {}
                Some(Value::String(r)) => {
                    self.finish_reason = Some(r.clone());
                    self.flush_tools(out);
                }
                Some(_) => {
                    return Err(ResponderError::Parse(
                        "stream chunk \"finish_reason\" is not a string".into(),
                    ))
                }
            }
        }
        Ok(())
    }

    fn delta(
        &mut self,
        delta: &Map<String, Value>,
        out: &mut Vec<Result<ChatDelta, ResponderError>>,
    ) -> Result<(), ResponderError> {
        match delta.get("content") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                if !s.is_empty() {
                    out.push(Ok(ChatDelta::Text(s.clone())));
                }
            }
            Some(_) => {
                return Err(ResponderError::Parse(
                    "stream delta \"content\" is not a string".into(),
                ))
            }
        }
        let calls = match delta.get("tool_calls") {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(a)) => a,
            Some(_) => {
                return Err(ResponderError::Parse(
                    "stream delta \"tool_calls\" is not a list".into(),
                ))
            }
        };
        for call in calls {
            let Some(call) = call.as_object() else {
                return Err(ResponderError::Parse(
                    "tool call delta is not an object".into(),
                ));
            };
            let index = match call.get("index") {
                None | Some(Value::Null) => 0,
                Some(v) => match v.as_u64() {
                    Some(i) if i < MAX_TOOL_CALLS => i as u32,
                    _ => {
                        return Err(ResponderError::Parse(format!(
                            "tool call index {} is not an integer below {MAX_TOOL_CALLS}",
                            excerpt(&v.to_string())
                        )))
                    }
                },
            };
            let id = opt_str(call.get("id"), "tool call \"id\"")?;
            let (name, args) = match call.get("function") {
                None | Some(Value::Null) => (None, None),
                Some(Value::Object(f)) => (
                    opt_str(f.get("name"), "tool call function \"name\"")?,
                    opt_str(f.get("arguments"), "tool call function \"arguments\"")?,
                ),
                Some(_) => {
                    return Err(ResponderError::Parse(
                        "tool call \"function\" is not an object".into(),
                    ))
                }
            };
            let limit = self.max_tool_call_bytes;
            let entry = self.tools.entry(index).or_default();
            if let Some(id) = id.filter(|s| !s.is_empty()) {
                entry.id = id.to_string();
            }
            if let Some(name) = name {
                entry.name.push_str(name);
            }
            if let Some(args) = args {
                entry.arguments.push_str(args);
            }
            if entry.name.len() + entry.arguments.len() + entry.id.len() > limit {
                return Err(ResponderError::Parse(format!(
                    "tool call {index} is larger than {limit} bytes"
                )));
            }
        }
        Ok(())
    }
}

/// A string field that may be absent or null.
fn opt_str<'a>(v: Option<&'a Value>, what: &str) -> Result<Option<&'a str>, ResponderError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ResponderError::Parse(format!("{what} is not a string"))),
    }
}

/// `error.message` (or a string `error`) of an API answer.
fn error_message(v: &Value) -> Option<String> {
    match v.get("error")? {
        Value::String(s) => Some(excerpt(s)),
        Value::Object(o) => match o.get("message") {
            Some(Value::String(s)) => Some(excerpt(s)),
            _ => Some(excerpt(&Value::Object(o.clone()).to_string())),
        },
        other => Some(excerpt(&other.to_string())),
    }
}

/// The first [`EXCERPT_CHARS`] characters of `s` on one line.
fn excerpt(s: &str) -> String {
    let one_line: String = s
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(EXCERPT_CHARS + 1)
        .collect();
    if one_line.chars().count() > EXCERPT_CHARS {
        let cut: String = one_line.chars().take(EXCERPT_CHARS).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// An error and whether the request may be retried.
struct AttemptError {
    error: ResponderError,
    retryable: bool,
}

impl From<ResponderError> for AttemptError {
    fn from(error: ResponderError) -> Self {
        AttemptError {
            error,
            retryable: false,
        }
    }
}

/// `e` with its chain of causes.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let msg = c.to_string();
        if !s.contains(&msg) {
            s.push_str(": ");
            s.push_str(&msg);
        }
        cur = c.source();
    }
    s
}

/// The `messages` array of a request. A [`ChatRole::Tool`] message (a
/// backend result as text; the model did not ask for it, so there is no
/// `tool_call_id`) goes as a system message.
fn wire_messages(messages: &[ChatMessage]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| match m.role {
            ChatRole::Tool => {
                json!({"role": "system", "content": format!("Tool result: {}", m.content)})
            }
            _ => json!(m),
        })
        .collect()
}

fn transport_error(e: &reqwest::Error) -> AttemptError {
    if e.is_timeout() {
        return ResponderError::Timeout.into();
    }
    let what = if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    AttemptError {
        error: ResponderError::Http(format!("{what}: {}", error_chain(e))),
        retryable: e.is_connect(),
    }
}

type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// The I/O side of a streamed answer.
struct StreamIo {
    /// `None` once handed to [`drain`].
    body: Option<BodyStream>,
    parser: ChatChunkParser,
    queue: VecDeque<Result<ChatDelta, ResponderError>>,
    first_deadline: Instant,
    idle: Duration,
    got_first: bool,
    ended: bool,
}

impl StreamIo {
    async fn next_item(&mut self) -> Option<Result<ChatDelta, ResponderError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                match &item {
                    Ok(_) => self.got_first = true,
                    Err(_) => {
                        self.queue.clear();
                        self.ended = true;
                    }
                }
                return Some(item);
            }
            if self.ended || self.parser.is_done() {
                if !self.ended {
                    // A complete answer: let the connection go back to the
                    // pool instead of closing it.
                    self.ended = true;
                    if let Some(body) = self.body.take() {
                        drain(body);
                    }
                }
                return None;
            }
            let body = self.body.as_mut()?;
            let deadline = if self.got_first {
                Instant::now() + self.idle
            } else {
                self.first_deadline
            };
            match tokio::time::timeout_at(deadline, body.next()).await {
                Err(_) => {
                    self.ended = true;
                    if self.parser.finish_reason().is_some() {
                        // The answer is complete; the server just did not
                        // send [DONE] or close.
                        self.queue.extend(self.parser.finish());
                        continue;
                    }
                    tracing::debug!(first = !self.got_first, "LLM stream timed out");
                    return Some(Err(ResponderError::Timeout));
                }
                Ok(Some(Ok(bytes))) => self.queue.extend(self.parser.push(&bytes)),
                Ok(Some(Err(e))) => {
                    self.ended = true;
                    if self.parser.finish_reason().is_some() {
                        self.queue.extend(self.parser.finish());
                        continue;
                    }
                    return Some(Err(ResponderError::Http(format!(
                        "connection lost mid-stream: {}",
                        error_chain(&e)
                    ))));
                }
                Ok(None) => {
                    self.ended = true;
                    self.queue.extend(self.parser.finish());
                }
            }
        }
    }
}

/// Read what follows `[DONE]` (normally just the end of the chunked body)
/// in the background, briefly and boundedly, so that the connection can be
/// reused; a server that keeps sending is cut off.
fn drain(mut body: BodyStream) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    rt.spawn(async move {
        let read = async {
            let mut n = 0usize;
            while let Some(Ok(c)) = body.next().await {
                n += c.len();
                if n > 64 * 1024 {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_millis(500), read).await;
    });
}

/// The OpenAI-compatible client; see the module docs.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    url: reqwest::Url,
    cfg: OpenAiConfig,
    name: String,
}

impl OpenAiClient {
    /// A client for `cfg` (one connection pool shared by all requests).
    pub fn new(cfg: OpenAiConfig) -> Result<Self, OpenAiSetupError> {
        let base = cfg.base_url.trim().trim_end_matches('/');
        let invalid = |reason: String| OpenAiSetupError::InvalidBaseUrl {
            url: cfg.base_url.clone(),
            reason,
        };
        let root = reqwest::Url::parse(base).map_err(|e| invalid(e.to_string()))?;
        if !matches!(root.scheme(), "http" | "https") {
            return Err(invalid(format!(
                "scheme {:?} is not http or https",
                root.scheme()
            )));
        }
        if root.host_str().is_none_or(str::is_empty) {
            return Err(invalid("no host".into()));
        }
        let url = reqwest::Url::parse(&format!("{base}/chat/completions"))
            .map_err(|e| invalid(e.to_string()))?;
        if let Some(key) = cfg.api_key.as_deref() {
            if reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).is_err() {
                return Err(OpenAiSetupError::InvalidApiKey);
            }
        }
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .tcp_nodelay(true)
            .user_agent(concat!("calllock/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| OpenAiSetupError::Client(error_chain(&e)))?;
        let name = format!("openai:{}", cfg.model);
        Ok(OpenAiClient {
            http,
            url,
            cfg,
            name,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &OpenAiConfig {
        &self.cfg
    }

    /// The chat-completions endpoint (`{base_url}/chat/completions`).
    pub fn endpoint(&self) -> &str {
        self.url.as_str()
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut rb = self.http.post(self.url.clone()).json(body);
        if let Some(key) = self.cfg.api_key.as_deref().filter(|k| !k.is_empty()) {
            rb = rb.bearer_auth(key);
        }
        rb
    }

    /// Stream an answer to `messages` (`stream: true`), optionally offering
    /// `tools` (OpenAI tool definitions, sent as given).
    ///
    /// Returns once the response headers arrived (within the first-token
    /// deadline): a non-2xx status is an [`ResponderError::Http`] error
    /// here, a deadline miss is [`ResponderError::Timeout`]. The stream then
    /// yields text deltas as they come and the tool calls at the end; see
    /// [`ChatChunkParser`] for the errors. Dropping the stream closes the
    /// connection.
    pub async fn chat_stream(
        &self,
        messages: &[ChatMessage],
        tools: Option<Vec<Value>>,
    ) -> Result<ChatStream, ResponderError> {
        self.chat_stream_wire(wire_messages(messages), tools).await
    }

    /// [`chat_stream`](Self::chat_stream) with messages already in the
    /// wire format (for callers with their own message types: assistant
    /// `tool_calls`, `tool` messages with a `tool_call_id`).
    pub async fn chat_stream_wire(
        &self,
        messages: Vec<Value>,
        tools: Option<Vec<Value>>,
    ) -> Result<ChatStream, ResponderError> {
        let first_deadline = Instant::now() + self.cfg.first_token_timeout;
        let mut body = json!({
            "model": self.cfg.model,
            "messages": messages,
            "stream": true,
        });
        if let Some(t) = self.cfg.reply_temperature {
            body["temperature"] = json!(t);
        }
        if let Some(m) = self.cfg.reply_max_tokens {
            body["max_tokens"] = json!(m);
        }
        if let Some(tools) = tools.filter(|t| !t.is_empty()) {
            body["tools"] = Value::Array(tools);
        }
        let rb = self
            .post(&body)
            .header(reqwest::header::ACCEPT, "text/event-stream");
        // The request holds the body as JSON text now: the tree (the whole
        // context) is not kept while the model thinks.
        drop(body);
        let resp = match tokio::time::timeout_at(first_deadline, rb.send()).await {
            Err(_) => return Err(ResponderError::Timeout),
            Ok(Err(e)) => return Err(transport_error(&e).error),
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if !status.is_success() {
            return Err(status_error(status, resp, first_deadline).await);
        }
        let io = StreamIo {
            body: Some(Box::pin(resp.bytes_stream())),
            parser: ChatChunkParser::new(self.cfg.max_event_bytes),
            queue: VecDeque::new(),
            first_deadline,
            idle: self.cfg.idle_timeout,
            got_first: false,
            ended: false,
        };
        Ok(Box::pin(futures_util::stream::unfold(
            io,
            |mut io| async move {
                let item = io.next_item().await?;
                Some((item, io))
            },
        )))
    }

    /// One non-streaming request; returns `choices[0].message.content`.
    /// Applies `settings` (temperature, max_tokens, JSON-object mode,
    /// timeout per attempt, at most one retry when `settings.retry`).
    pub async fn chat_json(
        &self,
        messages: &[ChatMessage],
        settings: &RequestSettings,
    ) -> Result<String, ResponderError> {
        let mut body = json!({
            "model": self.cfg.model,
            "messages": wire_messages(messages),
            "stream": false,
        });
        if let Some(t) = settings.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(m) = settings.max_tokens {
            body["max_tokens"] = json!(m);
        }
        if settings.json_object {
            body["response_format"] = json!({"type": "json_object"});
        }
        let timeout = settings.timeout.unwrap_or(self.cfg.request_timeout);
        let attempts = if settings.retry { 2 } else { 1 };
        let mut attempt = 1;
        loop {
            let result = match tokio::time::timeout(timeout, self.json_attempt(&body)).await {
                Err(_) => Err(AttemptError::from(ResponderError::Timeout)),
                Ok(r) => r,
            };
            match result {
                Ok(content) => return Ok(content),
                Err(e) if e.retryable && attempt < attempts => {
                    tracing::warn!(error = %e.error, "LLM request failed; retrying once");
                    tokio::time::sleep(self.cfg.retry_backoff).await;
                    attempt += 1;
                }
                Err(e) => return Err(e.error),
            }
        }
    }

    async fn json_attempt(&self, body: &Value) -> Result<String, AttemptError> {
        let mut resp = self
            .post(body)
            .send()
            .await
            .map_err(|e| transport_error(&e))?;
        let status = resp.status();
        if !status.is_success() {
            let far = Instant::now() + Duration::from_secs(3600);
            return Err(AttemptError {
                error: status_error(status, resp, far).await,
                retryable: status.is_server_error()
                    || status == reqwest::StatusCode::TOO_MANY_REQUESTS,
            });
        }
        let mut raw = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| transport_error(&e))? {
            if raw.len() + chunk.len() > self.cfg.max_response_bytes {
                return Err(ResponderError::Parse(format!(
                    "answer larger than {} bytes",
                    self.cfg.max_response_bytes
                ))
                .into());
            }
            raw.extend_from_slice(&chunk);
        }
        Ok(completion_content(&raw)?)
    }
}

/// `choices[0].message.content` of a non-streaming answer body.
pub fn completion_content(raw: &[u8]) -> Result<String, ResponderError> {
    let v: Value = serde_json::from_slice(raw).map_err(|e| {
        ResponderError::Parse(format!(
            "answer is not JSON ({e}): {}",
            excerpt(&String::from_utf8_lossy(raw))
        ))
    })?;
    if let Some(msg) = v
        .get("error")
        .filter(|e| !e.is_null())
        .map(|_| error_message(&v))
    {
        return Err(ResponderError::Http(format!(
            "error in the answer: {}",
            msg.unwrap_or_default()
        )));
    }
    match v.pointer("/choices/0/message/content") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Null) | None => Err(ResponderError::Parse(format!(
            "answer has no choices[0].message.content: {}",
            excerpt(&v.to_string())
        ))),
        Some(other) => Err(ResponderError::Parse(format!(
            "choices[0].message.content is not a string: {}",
            excerpt(&other.to_string())
        ))),
    }
}

/// An [`ResponderError::Http`] for a non-2xx answer, quoting the start of
/// its body (read for at most a second and 4 KiB).
async fn status_error(
    status: reqwest::StatusCode,
    resp: reqwest::Response,
    deadline: Instant,
) -> ResponderError {
    let read = crate::v2::read_some(resp, 4096);
    let limit = deadline.min(Instant::now() + Duration::from_secs(1));
    let raw = tokio::time::timeout_at(limit, read)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&raw);
    let detail = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| error_message(&v))
        .unwrap_or_else(|| excerpt(&text));
    if detail.is_empty() {
        ResponderError::Http(format!("HTTP {status}"))
    } else {
        ResponderError::Http(format!("HTTP {status}: {detail}"))
    }
}

#[async_trait::async_trait]
impl Responder for OpenAiClient {
    /// Streams the turn's messages; only text deltas are passed on.
    async fn reply(&self, req: &TurnRequest) -> Result<ReplyStream, ResponderError> {
        let stream = self.chat_stream(&req.messages, None).await?;
        Ok(Box::pin(stream.filter_map(|d| async move {
            match d {
                Ok(ChatDelta::Text(t)) => Some(Ok(t)),
                Ok(ChatDelta::ToolCall(t)) => {
                    tracing::debug!(tool = %t.name, "tool call in a reply ignored");
                    None
                }
                Err(e) => Some(Err(e)),
            }
        })))
    }

    /// The scoped prompt as the system message and the caller's text as
    /// the user message; the answer trimmed.
    async fn scoped_reply(&self, req: &ScopedRequest) -> Result<String, ResponderError> {
        let messages = [
            ChatMessage::system(scoped_reply_prompt(&self.cfg.profile)),
            ChatMessage::user(req.user_text.clone()),
        ];
        let content = self.chat_json(&messages, &self.cfg.scoped).await?;
        Ok(content.trim().to_string())
    }

    /// No request when the last ten entries hold no caller line (empty
    /// fields then).
    async fn extract(&self, req: &ExtractionRequest) -> Result<ExtractedFields, ResponderError> {
        let Some(messages) = extraction_messages(&req.history) else {
            return Ok(ExtractedFields::default());
        };
        let content = self.chat_json(&messages, &self.cfg.extraction).await?;
        Ok(parse_extraction(&content))
    }

    /// The prompt as the only (user) message, JSON-object mode.
    async fn classify(&self, prompt: &str) -> Result<Map<String, Value>, ResponderError> {
        let messages = [ChatMessage::user(prompt)];
        let content = self.chat_json(&messages, &self.cfg.classification).await?;
        Ok(parse_classification(&content))
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(delta: Value, finish: Option<&str>) -> String {
        let v = json!({"choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
        format!("data: {v}\n\n")
    }

    fn all(body: &str) -> Vec<Result<ChatDelta, ResponderError>> {
        let mut p = ChatChunkParser::default();
        let mut out = p.push(body.as_bytes());
        out.extend(p.finish());
        out
    }

    fn text(s: &str) -> Result<ChatDelta, ResponderError> {
        Ok(ChatDelta::Text(s.into()))
    }

    #[test]
    fn text_deltas_in_order_then_done() {
        let body = [
            chunk(json!({"role":"assistant","content":""}), None),
            chunk(json!({"content":"Hel"}), None),
            chunk(json!({"content":"lo."}), None),
            chunk(json!({}), Some("stop")),
            "data: [DONE]\n\n".into(),
        ]
        .concat();
        assert_eq!(all(&body), vec![text("Hel"), text("lo.")]);
    }

    #[test]
    fn finish_reason_without_done_is_complete_but_nothing_is_not() {
        let body = [
            chunk(json!({"content":"a"}), None),
            chunk(json!({}), Some("stop")),
        ]
        .concat();
        assert_eq!(all(&body), vec![text("a")]);
        let body = chunk(json!({"content":"a"}), None);
        let out = all(&body);
        assert_eq!(out.len(), 2);
        assert!(matches!(&out[1], Err(ResponderError::Http(m)) if m.contains("ended before")));
    }

    #[test]
    fn tool_call_fragments_are_joined_per_index() {
        let body = [
            chunk(
                json!({"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"b","arguments":""}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls":[{"index":0,"id":"call_a","function":{"name":"look","arguments":"{\"x\""}}]}),
                None,
            ),
            chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}), None),
            chunk(json!({"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}), None),
            chunk(json!({}), Some("tool_calls")),
            "data: [DONE]\n\n".into(),
        ]
        .concat();
        let out = all(&body);
        assert_eq!(
            out,
            vec![
                Ok(ChatDelta::ToolCall(ToolCall {
                    index: 0,
                    id: "call_a".into(),
                    name: "look".into(),
                    arguments: "{\"x\":1}".into()
                })),
                Ok(ChatDelta::ToolCall(ToolCall {
                    index: 1,
                    id: "call_b".into(),
                    name: "b".into(),
                    arguments: "{}".into()
                })),
            ]
        );
        if let Some(Ok(ChatDelta::ToolCall(t))) = out.first() {
            assert_eq!(t.arguments_json(), Ok(json!({"x":1})));
        }
    }

    #[test]
    fn malformed_chunk_is_a_parse_error_and_the_end() {
        let body = format!(
            "{}data: {{\"choices\":[{{\"delta\"\n\n{}",
            chunk(json!({"content":"a"}), None),
            chunk(json!({"content":"b"}), None)
        );
        let out = all(&body);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0], text("a"));
        assert!(matches!(&out[1], Err(ResponderError::Parse(m)) if m.contains("malformed")));
    }

    #[test]
    fn error_object_and_error_event() {
        let out =
            all("data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n");
        assert!(matches!(&out[..], [Err(ResponderError::Http(m))] if m.contains("overloaded")));
        let out = all("event: error\ndata: {\"error\":\"nope\"}\n\n");
        assert!(matches!(&out[..], [Err(ResponderError::Http(m))] if m.contains("nope")));
    }

    #[test]
    fn wrong_shapes_are_parse_errors() {
        for body in [
            "data: 42\n\n",
            "data: {\"choices\":{}}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":5}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1000000}]}}]}\n\n",
            "data: {\"choices\":[{\"finish_reason\":3}]}\n\n",
        ] {
            let out = all(body);
            assert!(
                matches!(&out[..], [Err(ResponderError::Parse(_))]),
                "{body}: {out:?}"
            );
        }
        // A tool call without a name is an error when the answer finishes.
        let body = [
            chunk(
                json!({"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
        ]
        .concat();
        assert!(matches!(&all(&body)[..], [Err(ResponderError::Parse(m))] if m.contains("name")));
    }

    #[test]
    fn choices_other_than_zero_and_usage_chunks_are_ignored() {
        let body = [
            "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"x\"}}]}\n\n".to_string(),
            "data: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\n".into(),
            chunk(json!({"content":"y"}), Some("stop")),
            "data: [DONE]\n\n".into(),
        ]
        .concat();
        assert_eq!(all(&body), vec![text("y")]);
    }

    #[test]
    fn tool_call_arguments_are_bounded() {
        let mut p = ChatChunkParser::new(1000);
        let piece = chunk(
            json!({"tool_calls":[{"index":0,"function":{"name":"f","arguments":"x".repeat(300)}}]}),
            None,
        );
        let mut out = Vec::new();
        for _ in 0..5 {
            out.extend(p.push(piece.as_bytes()));
        }
        assert!(matches!(&out[..], [Err(ResponderError::Parse(m))] if m.contains("larger")));
        assert!(p.is_done());
    }

    #[test]
    fn completion_content_shapes() {
        let ok = br#"{"choices":[{"message":{"role":"assistant","content":"{\"a\":1}"}}]}"#;
        assert_eq!(completion_content(ok), Ok("{\"a\":1}".into()));
        assert!(matches!(
            completion_content(b"<html>"),
            Err(ResponderError::Parse(_))
        ));
        assert!(matches!(
            completion_content(br#"{"choices":[]}"#),
            Err(ResponderError::Parse(_))
        ));
        assert!(matches!(
            completion_content(br#"{"error":{"message":"bad key"}}"#),
            Err(ResponderError::Http(m)) if m.contains("bad key")
        ));
    }

    #[test]
    fn excerpt_is_short_and_single_line() {
        let e = excerpt(&format!("a\nb{}", "é".repeat(500)));
        assert!(!e.contains('\n'));
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert_eq!(excerpt("  ok "), "ok");
    }

    #[test]
    fn config_debug_redacts_the_key_and_bad_urls_are_rejected() {
        let cfg = OpenAiConfig {
            api_key: Some("sk-secret".into()),
            ..OpenAiConfig::default()
        };
        assert!(!format!("{cfg:?}").contains("sk-secret"));
        for bad in ["", "ftp://x/v1", "not a url", "http://"] {
            let r = OpenAiClient::new(OpenAiConfig {
                base_url: bad.into(),
                ..OpenAiConfig::default()
            });
            assert!(
                matches!(r, Err(OpenAiSetupError::InvalidBaseUrl { .. })),
                "{bad}"
            );
        }
        let r = OpenAiClient::new(OpenAiConfig {
            api_key: Some("bad\nkey".into()),
            ..OpenAiConfig::default()
        });
        assert_eq!(r.err(), Some(OpenAiSetupError::InvalidApiKey));
        let c = OpenAiClient::new(OpenAiConfig {
            base_url: "http://127.0.0.1:9/v1/".into(),
            ..OpenAiConfig::default()
        });
        let c = c.map_err(|e| e.to_string());
        assert_eq!(
            c.as_ref().map(|c| c.endpoint().to_string()),
            Ok("http://127.0.0.1:9/v1/chat/completions".to_string())
        );
        assert_eq!(
            c.map(|c| c.name().to_string()),
            Ok("openai:gpt-4o-mini".into())
        );
    }
}
