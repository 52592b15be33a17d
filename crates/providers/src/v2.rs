//! The V2 booking backend over HTTP (SPEC §6 as corrected by D-18 … D-20).
//!
//! [`V2Client`] implements [`agent::backend::Backend`]: every tool is a
//! `POST {base_url}/webhook/retell/<tool>` with the Retell function-webhook
//! envelope `{"call": {call_id, from_number, metadata: {}}, "args": {…}}`
//! ([`request_body`]). The call id is always the call's real id (D-18);
//! `manage_appointment` sends the new time as both `new_time` and
//! `new_date_time` (D-19).
//!
//! A 2xx answer whose body is a JSON object is returned as-is and counts as
//! a success for the circuit breaker. A transport error, a timeout, a status
//! other than 2xx, or a body that is not a JSON object is a failure: the
//! client returns the tool's failure object ([`failure_result`]) and records
//! a breaker failure ([`interpret_reply`] is that decision as a pure
//! function). One [`CircuitBreaker`] (3 failures, 60 s cooldown; a failed
//! half-open probe restarts the cooldown, D-20) guards all five tools; while
//! it is open no request is sent and the tool's "V2 backend unavailable"
//! object is returned ([`unavailable_result`]). While half-open only one
//! probe is in flight at a time.
//!
//! The API key is sent as `X-API-Key` only when configured and is never
//! logged (nor shown by `Debug`).

use agent::backend::{failure_result, Backend, ToolCall};
use agent::breaker::{BreakerState, CircuitBreaker};
use agent::state::Tool;
use async_trait::async_trait;
use reqwest::header::{HeaderValue, CONTENT_TYPE};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

/// Default request timeout (SPEC §6.1).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The error text of the breaker-open objects (SPEC §6.1).
pub const UNAVAILABLE: &str = "V2 backend unavailable";

/// Largest response body the client reads; a larger one is a failure.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Longest body excerpt (characters) put in logs and error texts.
pub const EXCERPT_CHARS: usize = 200;

/// A monotonic clock in seconds, for the circuit breaker.
pub type Clock = Arc<dyn Fn() -> f64 + Send + Sync>;

/// The default breaker clock: seconds since the clock was made, from
/// [`Instant`] (monotonic).
pub fn monotonic_clock() -> Clock {
    let start = Instant::now();
    Arc::new(move || start.elapsed().as_secs_f64())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---------------------------------------------------------------------------
// Configuration

/// How to reach the V2 backend.
#[derive(Clone, PartialEq, Eq)]
pub struct V2Config {
    /// `V2_BACKEND_URL`, e.g. `https://calllock-v2.example.com` (a trailing
    /// slash is stripped).
    pub base_url: String,
    /// `V2_API_KEY`; sent as `X-API-Key` when set and non-empty.
    pub api_key: Option<String>,
    /// Whole-request timeout (default 10 s).
    pub timeout: Duration,
}

impl V2Config {
    /// A configuration without an API key and with the default timeout.
    pub fn new(base_url: impl Into<String>) -> Self {
        V2Config {
            base_url: base_url.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same configuration with this API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The same configuration with this timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

impl Default for V2Config {
    /// No URL (set `base_url` before [`V2Client::new`]), no key, 10 s.
    fn default() -> Self {
        V2Config::new("")
    }
}

impl std::fmt::Debug for V2Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("V2Config")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The configuration cannot be used (bad URL, bad key, TLS setup failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

// ---------------------------------------------------------------------------
// Pure request / response logic

/// The path of a backend tool (`None` for the `end_call` pseudo-tool).
pub fn tool_path(tool: Tool) -> Option<&'static str> {
    Some(match tool {
        Tool::LookupCaller => "/webhook/retell/lookup_caller",
        Tool::BookService => "/webhook/retell/book_appointment",
        Tool::CreateCallback => "/webhook/retell/create_callback",
        Tool::SendSalesLeadAlert => "/webhook/retell/send_sales_lead_alert",
        Tool::ManageAppointment => "/webhook/retell/manage_appointment",
        Tool::EndCall => return None,
    })
}

fn or_default<'a>(value: &'a str, default: &'a str) -> &'a str {
    if value.is_empty() {
        default
    } else {
        value
    }
}

/// The request body for a tool call: `{"call": {call_id, from_number,
/// metadata: {}}, "args": {…}}` (SPEC §6.1, D-18, D-19).
pub fn request_body(call: &ToolCall) -> Value {
    let envelope = |call_id: &str, phone: &str, args: Value| {
        json!({
            "call": {"call_id": call_id, "from_number": phone, "metadata": {}},
            "args": args,
        })
    };
    match call {
        ToolCall::LookupCaller { phone, call_id } => envelope(call_id, phone, json!({})),
        ToolCall::BookService {
            customer_name,
            problem,
            address,
            preferred_time,
            phone,
            call_id,
        } => envelope(
            call_id,
            phone,
            json!({
                "customer_name": customer_name,
                "customer_phone": phone,
                "problem_description": problem,
                "service_address": address,
                "date_time": preferred_time,
            }),
        ),
        ToolCall::CreateCallback {
            phone,
            callback_type,
            reason,
            customer_name,
            urgency,
            call_id,
        } => envelope(
            call_id,
            phone,
            json!({
                "reason": or_default(reason, "Callback requested"),
                "callback_type": or_default(callback_type, "service"),
                "customer_name": customer_name,
                "urgency": or_default(urgency, "normal"),
            }),
        ),
        ToolCall::SendSalesLeadAlert {
            phone,
            reason,
            call_id,
        } => envelope(call_id, phone, json!({"execution_message": reason})),
        ToolCall::ManageAppointment {
            action,
            phone,
            booking_uid,
            reason,
            new_time,
            call_id,
        } => {
            let mut args = Map::new();
            args.insert("action".into(), json!(action));
            for (key, value) in [
                ("booking_uid", booking_uid),
                ("reason", reason),
                ("new_time", new_time),
                ("new_date_time", new_time),
            ] {
                if !value.is_empty() {
                    args.insert(key.into(), json!(value));
                }
            }
            envelope(call_id, phone, Value::Object(args))
        }
    }
}

/// The object returned without a request while the breaker is open (SPEC
/// §6.1): lookup → `{found:false, message}`, book → `{booked:false, error:
/// "V2 backend unavailable"}`, others → `{success:false, error: "V2 backend
/// unavailable"}`.
pub fn unavailable_result(tool: Tool) -> Value {
    match tool {
        Tool::LookupCaller => json!({
            "found": false,
            "message": "V2 backend unavailable; proceeding without history.",
        }),
        Tool::BookService => json!({"booked": false, "error": UNAVAILABLE}),
        _ => json!({"success": false, "error": UNAVAILABLE}),
    }
}

/// Why one V2 request failed. `Display` is the short text put in the
/// failure object; [`V2Failure::excerpt`] is the body excerpt for logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum V2Failure {
    /// No usable answer: connection refused or reset, DNS, TLS, a malformed
    /// or truncated HTTP response.
    #[error("no usable answer from the V2 backend: {0}")]
    Transport(String),
    /// No complete answer within the timeout.
    #[error("the V2 backend did not answer within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// A status other than 2xx (4xx and 5xx included).
    #[error("the V2 backend answered HTTP {status}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the body (for logs).
        excerpt: String,
    },
    /// A 2xx answer whose body is not a JSON object (or is too large).
    #[error("the V2 backend answered HTTP {status} with {what}")]
    BadBody {
        /// The HTTP status.
        status: u16,
        /// What was wrong, in plain words.
        what: String,
        /// The start of the body (for logs).
        excerpt: String,
    },
}

impl V2Failure {
    /// The HTTP status, when there was an answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            V2Failure::Status { status, .. } | V2Failure::BadBody { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The start of the response body, when there was one.
    pub fn excerpt(&self) -> &str {
        match self {
            V2Failure::Status { excerpt, .. } | V2Failure::BadBody { excerpt, .. } => excerpt,
            _ => "",
        }
    }

    fn with_excerpt(mut self, text: String) -> Self {
        if let V2Failure::Status { excerpt, .. } | V2Failure::BadBody { excerpt, .. } = &mut self {
            *excerpt = text;
        }
        self
    }
}

/// Decide what an answer means: a 2xx status with a JSON-object body is the
/// result; anything else is a failure. Never panics, whatever the bytes.
pub fn interpret_reply(status: u16, body: &[u8]) -> Result<Value, V2Failure> {
    if !(200..300).contains(&status) {
        return Err(V2Failure::Status {
            status,
            excerpt: excerpt(body, &[]),
        });
    }
    json_object_body(body, MAX_RESPONSE_BYTES).map_err(|what| V2Failure::BadBody {
        status,
        what: what.to_string(),
        excerpt: excerpt(body, &[]),
    })
}

/// The JSON object a 2xx answer must carry, or what it carried instead
/// ("a body that is not JSON", …). Shared by the V2 and dashboard clients.
pub(crate) fn json_object_body(body: &[u8], max_bytes: usize) -> Result<Value, &'static str> {
    if body.len() > max_bytes {
        return Err("a body that is too large");
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("JSON that is not an object"),
        Err(_) if body.iter().all(u8::is_ascii_whitespace) => Err("an empty body"),
        Err(_) => Err("a body that is not JSON"),
    }
}

/// The tool result for an interpreted answer: the body on success, the
/// tool's failure object otherwise.
pub fn result_for(tool: Tool, outcome: &Result<Value, V2Failure>) -> Value {
    match outcome {
        Ok(v) => v.clone(),
        Err(f) => failure_result(tool, &f.to_string()),
    }
}

// ---------------------------------------------------------------------------
// Helpers shared with the dashboard client

/// The start of a body as one printable line of at most [`EXCERPT_CHARS`]
/// characters plus `…` when cut (lossy UTF-8, control characters escaped),
/// with each non-empty `secret` replaced by `<redacted>`.
pub(crate) fn excerpt(body: &[u8], secrets: &[&str]) -> String {
    // Only the start matters; redaction runs before truncation, so a secret
    // crossing the excerpt's end is still hidden.
    let head = body.get(..8192).unwrap_or(body);
    let mut text = String::from_utf8_lossy(head).into_owned();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        text = text.replace(s, "<redacted>");
    }
    let mut out = String::new();
    let mut count = 0;
    for c in text.chars() {
        let escaped: String = if c.is_control() {
            c.escape_default().collect()
        } else {
            c.to_string()
        };
        let n = escaped.chars().count();
        if count + n > EXCERPT_CHARS {
            out.push('…');
            break;
        }
        out.push_str(&escaped);
        count += n;
    }
    out
}

/// A reqwest error in plain words: the specific causes (e.g. "tcp connect
/// error: Connection refused (os error 111)"), without reqwest's generic
/// wrappers and without the URL.
pub(crate) fn describe_error(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut chain = vec![e.to_string()];
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        chain.push(s.to_string());
        source = s.source();
    }
    let generic = |m: &str| {
        m.starts_with("error sending request")
            || m.starts_with("client error (")
            || m.starts_with("error decoding response body")
            || m.starts_with("request or response body error")
    };
    let mut parts: Vec<String> = Vec::new();
    for m in chain.iter().filter(|m| !generic(m)) {
        // Skip a cause already contained in the previous message.
        if !parts.last().is_some_and(|p| p.contains(m.as_str())) {
            parts.push(m.clone());
        }
    }
    if parts.is_empty() {
        chain.join(": ")
    } else {
        parts.join(": ")
    }
}

/// Read a response body, at most `limit` bytes (one byte more marks it as
/// too large for the interpreter).
pub(crate) async fn read_capped(
    mut resp: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = limit.saturating_add(1).saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() > limit {
            break;
        }
    }
    Ok(body)
}

/// Up to `limit` bytes of the body; whatever arrived if it breaks off
/// (for quoting an error answer).
pub(crate) async fn read_some(mut resp: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = limit - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= limit {
            break;
        }
    }
    body
}

/// The HTTP client the providers use: the timeout, no redirects (a redirect
/// is an answer, never followed with our headers), rustls.
pub(crate) fn http_client(timeout: Duration) -> Result<reqwest::Client, ConfigError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| {
            ConfigError(format!(
                "cannot set up the HTTP client: {}",
                describe_error(e)
            ))
        })
}

/// Check that a URL is an absolute http(s) URL with a host.
pub(crate) fn check_url(what: &str, url: &str) -> Result<(), ConfigError> {
    http_url(what, url).map(|_| ())
}

/// `url` parsed, when it is an absolute http(s) URL with a host; else an
/// error naming it as `what`.
pub(crate) fn http_url(what: &str, url: &str) -> Result<reqwest::Url, ConfigError> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(u),
        Ok(_) => Err(ConfigError(format!(
            "{what} {url:?} is not an http:// or https:// URL"
        ))),
        Err(e) => Err(ConfigError(format!(
            "{what} {url:?} is not a valid URL: {e}"
        ))),
    }
}

// ---------------------------------------------------------------------------
// The client

struct BreakerSlot {
    breaker: CircuitBreaker,
    probe_in_flight: bool,
}

/// Permission to send one request; records the outcome on the breaker.
/// Dropped without an outcome (the call was cancelled), it only releases
/// the half-open probe slot.
struct Permit<'a> {
    slot: &'a Mutex<BreakerSlot>,
    probe: bool,
}

impl Permit<'_> {
    fn success(self) {
        lock(self.slot).breaker.record_success();
    }

    fn failure(self, now: f64) {
        lock(self.slot).breaker.record_failure(now);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.probe {
            lock(self.slot).probe_in_flight = false;
        }
    }
}

/// The V2 backend client for one call (one pooled HTTP client, one circuit
/// breaker shared by the five tools). See the module documentation.
pub struct V2Client {
    base_url: String,
    api_key: Option<HeaderValue>,
    timeout: Duration,
    http: RwLock<Option<reqwest::Client>>,
    breaker: Mutex<BreakerSlot>,
    clock: Clock,
}

impl std::fmt::Debug for V2Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("V2Client")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl V2Client {
    /// A client for `config` with a closed breaker (threshold 3, cooldown
    /// 60 s) on the monotonic clock.
    pub fn new(config: V2Config) -> Result<V2Client, ConfigError> {
        let base_url = config.base_url.trim().trim_end_matches('/').to_string();
        check_url("V2 backend URL", &base_url)?;
        let api_key = match config.api_key.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(key) => {
                let mut v = HeaderValue::from_str(key).map_err(|_| {
                    ConfigError(
                        "the V2 API key contains characters that cannot be sent in an HTTP header"
                            .into(),
                    )
                })?;
                v.set_sensitive(true);
                Some(v)
            }
        };
        Ok(V2Client {
            base_url,
            api_key,
            timeout: config.timeout,
            http: RwLock::new(Some(http_client(config.timeout)?)),
            breaker: Mutex::new(BreakerSlot {
                breaker: CircuitBreaker::default(),
                probe_in_flight: false,
            }),
            clock: monotonic_clock(),
        })
    }

    /// Use this breaker clock (monotonic seconds) instead of the real one.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Use this breaker (e.g. another threshold or cooldown).
    pub fn with_breaker(self, breaker: CircuitBreaker) -> Self {
        lock(&self.breaker).breaker = breaker;
        self
    }

    /// The base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The breaker's state now.
    pub fn breaker_state(&self) -> BreakerState {
        let now = (self.clock)();
        lock(&self.breaker).breaker.state(now)
    }

    /// Consecutive failed requests since the last success.
    pub fn consecutive_failures(&self) -> u32 {
        lock(&self.breaker).breaker.consecutive_failures()
    }

    /// Close the client (end of call): drops the connection pool; later
    /// tool calls answer with the failure object without sending anything.
    pub fn close(&self) {
        *self.http.write().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Whether [`V2Client::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.http
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    fn client(&self) -> Option<reqwest::Client> {
        self.http.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// May a request be sent now? Half-open admits one probe at a time.
    fn admit(&self) -> Option<Permit<'_>> {
        let now = (self.clock)();
        let mut slot = lock(&self.breaker);
        match slot.breaker.state(now) {
            BreakerState::Closed => Some(Permit {
                slot: &self.breaker,
                probe: false,
            }),
            BreakerState::HalfOpen if !slot.probe_in_flight => {
                slot.probe_in_flight = true;
                Some(Permit {
                    slot: &self.breaker,
                    probe: true,
                })
            }
            _ => None,
        }
    }

    /// Is the backend reachable? A plain HTTP `GET` of the base URL: any HTTP
    /// answer (whatever its status) means reachable. Does not touch the
    /// breaker and sends no API key. For `calllock doctor`.
    pub async fn health(&self) -> Result<String, String> {
        let Some(http) = self.client() else {
            return Err("the V2 client is closed".into());
        };
        match http.get(format!("{}/", self.base_url)).send().await {
            Ok(resp) => Ok(format!(
                "the V2 backend at {} is reachable (HTTP {})",
                self.base_url,
                resp.status().as_u16()
            )),
            Err(e) if e.is_timeout() => Err(format!(
                "the V2 backend at {} did not answer within {} s",
                self.base_url,
                self.timeout.as_secs_f64()
            )),
            Err(e) => Err(format!(
                "cannot reach the V2 backend at {}: {}",
                self.base_url,
                describe_error(e)
            )),
        }
    }

    /// Send one tool call and return the backend's answer or the failure /
    /// unavailable object (never panics, never errors).
    pub async fn call_tool(&self, call: &ToolCall) -> Value {
        let tool = call.tool();
        let Some(path) = tool_path(tool) else {
            return failure_result(tool, "not a backend tool");
        };
        let Some(http) = self.client() else {
            return failure_result(tool, "the V2 client is closed");
        };
        let Some(permit) = self.admit() else {
            tracing::debug!(
                tool = tool.as_str(),
                "V2 circuit breaker open; request not sent"
            );
            return unavailable_result(tool);
        };
        let url = format!("{}{path}", self.base_url);
        let outcome = self.send(&http, &url, &request_body(call)).await;
        match outcome {
            Ok(v) => {
                permit.success();
                v
            }
            Err(failure) => {
                permit.failure((self.clock)());
                tracing::warn!(
                    tool = tool.as_str(),
                    url = %url,
                    status = failure.status().map(i64::from).unwrap_or(-1),
                    body = %failure.excerpt(),
                    consecutive_failures = self.consecutive_failures(),
                    "V2 backend request failed: {failure}"
                );
                failure_result(tool, &failure.to_string())
            }
        }
    }

    async fn send(
        &self,
        http: &reqwest::Client,
        url: &str,
        body: &Value,
    ) -> Result<Value, V2Failure> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| V2Failure::Transport(format!("cannot encode the request: {e}")))?;
        let mut req = http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .body(bytes);
        if let Some(key) = &self.api_key {
            req = req.header("X-API-Key", key.clone());
        }
        let fail = |e: reqwest::Error| {
            if e.is_timeout() {
                V2Failure::Timeout(self.timeout)
            } else {
                V2Failure::Transport(describe_error(e))
            }
        };
        let resp = req.send().await.map_err(fail)?;
        let status = resp.status().as_u16();
        let body = read_capped(resp, MAX_RESPONSE_BYTES).await.map_err(fail)?;
        // Excerpts for logs never show the key, even if the backend echoes it.
        let key = self
            .api_key
            .as_ref()
            .and_then(|k| k.to_str().ok())
            .unwrap_or("");
        interpret_reply(status, &body).map_err(|f| f.with_excerpt(excerpt(&body, &[key])))
    }
}

#[async_trait]
impl Backend for V2Client {
    async fn lookup_caller(&self, phone: &str, call_id: &str) -> Value {
        self.call_tool(&ToolCall::LookupCaller {
            phone: phone.to_string(),
            call_id: call_id.to_string(),
        })
        .await
    }

    async fn book_service(&self, call: &ToolCall) -> Value {
        self.call_tool(call).await
    }

    async fn create_callback(&self, call: &ToolCall) -> Value {
        self.call_tool(call).await
    }

    async fn send_sales_lead_alert(&self, call: &ToolCall) -> Value {
        self.call_tool(call).await
    }

    async fn manage_appointment(&self, call: &ToolCall) -> Value {
        self.call_tool(call).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manage_sends_only_non_empty_optionals() {
        let body = request_body(&ToolCall::ManageAppointment {
            action: "cancel".into(),
            phone: "+1".into(),
            booking_uid: "".into(),
            reason: "sick".into(),
            new_time: "".into(),
            call_id: "CA1".into(),
        });
        assert_eq!(body["args"], json!({"action": "cancel", "reason": "sick"}));
        assert_eq!(body["call"]["call_id"], "CA1");
    }

    #[test]
    fn interpret_reply_classifies() {
        assert_eq!(interpret_reply(200, br#"{"a":1}"#), Ok(json!({"a": 1})));
        assert!(matches!(
            interpret_reply(401, br#"{"error":"x"}"#),
            Err(V2Failure::Status { status: 401, .. })
        ));
        assert!(matches!(
            interpret_reply(200, b"[1]"),
            Err(V2Failure::BadBody { .. })
        ));
        assert!(matches!(
            interpret_reply(200, b""),
            Err(V2Failure::BadBody { .. })
        ));
        assert!(matches!(
            interpret_reply(302, b""),
            Err(V2Failure::Status { .. })
        ));
    }

    #[test]
    fn excerpt_is_short_printable_and_redacted() {
        let e = excerpt(b"key=sekrit\n\x01tail", &["sekrit"]);
        assert_eq!(e, "key=<redacted>\\n\\u{1}tail");
        let long = excerpt(&[b'a'; 500], &[]);
        assert_eq!(long.chars().count(), EXCERPT_CHARS + 1);
        // Escapes count towards the limit.
        let zeros = excerpt(&[0; 500], &[]);
        assert!(zeros.chars().count() <= EXCERPT_CHARS + 1, "{zeros}");
        assert!(zeros.ends_with('…'));
        assert_eq!(excerpt(&[0xff, 0xfe], &[]), "\u{fffd}\u{fffd}");
    }

    #[test]
    fn config_debug_hides_key() {
        let c = V2Config::new("https://x.example.com").with_api_key("sekrit");
        assert!(!format!("{c:?}").contains("sekrit"));
    }
}
