//! The dashboard webhooks (SPEC §7.8, D-17).
//!
//! Every request is a `POST` of a JSON body with `Content-Type:
//! application/json`, the shared secret `X-Webhook-Secret`, and (D-17)
//! `X-Webhook-Signature: sha256=<lowercase hex HMAC-SHA256 of the exact body
//! bytes keyed with the secret>` ([`sign`]). The body is serialized once and
//! exactly those bytes are signed and sent. An optional `Idempotency-Key`
//! (the durable outbox item id) is added when given.
//!
//! Two levels:
//! * [`DashboardClient::post_once`]: one attempt, a classified
//!   [`DeliveryError`] on failure; the durable outbox worker calls this.
//! * [`DashboardClient::send_job`] / [`send_call`](DashboardClient::send_call)
//!   / [`send_emergency_alert`](DashboardClient::send_emergency_alert): the
//!   reference behaviour: on any failure wait 2 s (through the injectable
//!   [`Sleeper`]) and try once more; the result is the parsed JSON body, or
//!   `{success: false, error}` after the second failure.
//!
//! A success is a 2xx answer whose body is a JSON object
//! ([`interpret_reply`]). The secret is never logged.

pub use crate::v2::ConfigError;
use crate::v2::{check_url, describe_error, excerpt, http_client, json_object_body, read_capped};
use futures_util::future::BoxFuture;
use hmac::{Hmac, Mac};
use reqwest::header::{HeaderValue, CONTENT_TYPE};
use serde_json::{json, Value};
use sha2::Sha256;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Default request timeout (SPEC §7.8).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
/// Wait between the two attempts of the `send_*` methods.
pub const RETRY_DELAY: Duration = Duration::from_secs(2);
/// The shared-secret header.
pub const SECRET_HEADER: &str = "X-Webhook-Secret";
/// The D-17 body-signature header.
pub const SIGNATURE_HEADER: &str = "X-Webhook-Signature";
/// The idempotency header (outbox item id).
pub const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";
/// Largest response body the client reads.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// The `X-Webhook-Signature` value for `body`: `sha256=` followed by the
/// lowercase hex HMAC-SHA256 of the exact bytes, keyed with `secret`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Waits between attempts; injectable so tests record the waits instead of
/// sleeping.
pub type Sleeper = Arc<dyn Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync>;

/// The default [`Sleeper`]: `tokio::time::sleep`.
pub fn tokio_sleeper() -> Sleeper {
    Arc::new(|d| Box::pin(tokio::time::sleep(d)))
}

// ---------------------------------------------------------------------------
// Configuration

/// Where and how to deliver (SPEC §7.1 environment).
#[derive(Clone, PartialEq, Eq)]
pub struct DashboardConfig {
    /// `DASHBOARD_JOBS_URL` ("" = not configured).
    pub jobs_url: String,
    /// `DASHBOARD_CALLS_URL` ("" = not configured).
    pub calls_url: String,
    /// `DASHBOARD_ALERTS_URL` ("" = not configured).
    pub alerts_url: String,
    /// `DASHBOARD_WEBHOOK_SECRET`: sent as `X-Webhook-Secret` and the HMAC key.
    pub webhook_secret: String,
    /// `DASHBOARD_USER_EMAIL` (carried for the payload builders; the client
    /// itself does not send it).
    pub user_email: String,
    /// Per-attempt timeout (default 15 s).
    pub timeout: Duration,
}

impl Default for DashboardConfig {
    fn default() -> Self {
        DashboardConfig {
            jobs_url: String::new(),
            calls_url: String::new(),
            alerts_url: String::new(),
            webhook_secret: String::new(),
            user_email: String::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for DashboardConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DashboardConfig")
            .field("jobs_url", &self.jobs_url)
            .field("calls_url", &self.calls_url)
            .field("alerts_url", &self.alerts_url)
            .field("webhook_secret", &"<redacted>")
            .field("user_email", &self.user_email)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The three dashboard webhooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DashboardKind {
    /// The job / lead (`jobs_url`).
    Job,
    /// The call record (`calls_url`).
    Call,
    /// The emergency alert (`alerts_url`, safety exits only).
    EmergencyAlert,
}

impl DashboardKind {
    /// `job`, `call` or `emergency_alert`.
    pub fn as_str(self) -> &'static str {
        match self {
            DashboardKind::Job => "job",
            DashboardKind::Call => "call",
            DashboardKind::EmergencyAlert => "emergency_alert",
        }
    }
}

// ---------------------------------------------------------------------------
// Errors and interpretation

/// Why one delivery attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// The client was closed.
    #[error("the dashboard client is closed")]
    Closed,
    /// The request could not be built (no URL configured, bad URL, bad
    /// idempotency key). Retrying does not help.
    #[error("cannot send the dashboard request: {0}")]
    Request(String),
    /// No usable answer: connection refused or reset, DNS, TLS, a malformed
    /// or truncated HTTP response.
    #[error("no usable answer from the dashboard: {0}")]
    Transport(String),
    /// No complete answer within the timeout.
    #[error("the dashboard did not answer within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// A status other than 2xx.
    #[error("the dashboard answered HTTP {status}{}", colon(body_excerpt))]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body_excerpt: String,
    },
    /// A 2xx answer whose body is not a JSON object.
    #[error(
        "the dashboard answered HTTP {status} with {what}{}",
        colon(body_excerpt)
    )]
    NotJson {
        /// The HTTP status.
        status: u16,
        /// What was wrong, in plain words.
        what: String,
        /// The start of the body.
        body_excerpt: String,
    },
}

fn colon(excerpt: &str) -> String {
    if excerpt.is_empty() {
        String::new()
    } else {
        format!(": {excerpt}")
    }
}

impl DeliveryError {
    /// The HTTP status, when there was an answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            DeliveryError::Status { status, .. } | DeliveryError::NotJson { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// Whether another attempt could succeed (false for a closed client or a
    /// request that cannot be built).
    pub fn is_retryable(&self) -> bool {
        !matches!(self, DeliveryError::Closed | DeliveryError::Request(_))
    }

    fn with_excerpt(mut self, text: String) -> Self {
        if let DeliveryError::Status { body_excerpt, .. }
        | DeliveryError::NotJson { body_excerpt, .. } = &mut self
        {
            *body_excerpt = text;
        }
        self
    }
}

/// Decide what an answer means: a 2xx status with a JSON-object body is the
/// result; anything else is a [`DeliveryError`]. Never panics.
pub fn interpret_reply(status: u16, body: &[u8]) -> Result<Value, DeliveryError> {
    if !(200..300).contains(&status) {
        return Err(DeliveryError::Status {
            status,
            body_excerpt: excerpt(body, &[]),
        });
    }
    json_object_body(body, MAX_RESPONSE_BYTES).map_err(|what| DeliveryError::NotJson {
        status,
        what: what.to_string(),
        body_excerpt: excerpt(body, &[]),
    })
}

/// The `send_*` failure result: `{"success": false, "error": <text>}`.
pub fn failure_value(error: &DeliveryError) -> Value {
    json!({"success": false, "error": error.to_string()})
}

// ---------------------------------------------------------------------------
// The client

/// The dashboard webhook client. See the module documentation.
pub struct DashboardClient {
    config: DashboardConfig,
    secret: HeaderValue,
    http: RwLock<Option<reqwest::Client>>,
    sleeper: Sleeper,
}

impl std::fmt::Debug for DashboardClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DashboardClient")
            .field("config", &self.config)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl DashboardClient {
    /// A client for `config`, sleeping with Tokio between attempts. Every
    /// non-empty URL must be an absolute http(s) URL.
    pub fn new(config: DashboardConfig) -> Result<DashboardClient, ConfigError> {
        for (what, url) in [
            ("dashboard jobs URL", &config.jobs_url),
            ("dashboard calls URL", &config.calls_url),
            ("dashboard alerts URL", &config.alerts_url),
        ] {
            if !url.trim().is_empty() {
                check_url(what, url.trim())?;
            }
        }
        let mut secret = HeaderValue::from_str(&config.webhook_secret).map_err(|_| {
            ConfigError(
                "the dashboard webhook secret contains characters that cannot be sent in an HTTP header"
                    .into(),
            )
        })?;
        secret.set_sensitive(true);
        Ok(DashboardClient {
            http: RwLock::new(Some(http_client(config.timeout)?)),
            config,
            secret,
            sleeper: tokio_sleeper(),
        })
    }

    /// Use this sleeper between attempts (tests record the waits).
    pub fn with_sleeper(mut self, sleeper: Sleeper) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &DashboardConfig {
        &self.config
    }

    /// The configured URL for a webhook ("" when not configured).
    pub fn url_for(&self, kind: DashboardKind) -> &str {
        match kind {
            DashboardKind::Job => self.config.jobs_url.trim(),
            DashboardKind::Call => self.config.calls_url.trim(),
            DashboardKind::EmergencyAlert => self.config.alerts_url.trim(),
        }
    }

    /// Close the client: later deliveries fail with [`DeliveryError::Closed`]
    /// without sending anything.
    pub fn close(&self) {
        *self.http.write().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Whether [`DashboardClient::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.http
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// POST the job payload (SPEC §7.3); one retry after 2 s.
    pub async fn send_job(&self, payload: &Value) -> Value {
        self.send(DashboardKind::Job, payload, None).await
    }

    /// POST the call payload (SPEC §7.4); one retry after 2 s.
    pub async fn send_call(&self, payload: &Value) -> Value {
        self.send(DashboardKind::Call, payload, None).await
    }

    /// POST the emergency alert payload (SPEC §7.5); one retry after 2 s.
    pub async fn send_emergency_alert(&self, payload: &Value) -> Value {
        self.send(DashboardKind::EmergencyAlert, payload, None)
            .await
    }

    /// POST `payload` to the webhook of `kind`: on any failure wait
    /// [`RETRY_DELAY`] and try once more (not when the request cannot be
    /// built or the client is closed). Returns the parsed JSON body, or
    /// `{success: false, error}`. Failures are logged at error level with the
    /// status and a body excerpt.
    pub async fn send(
        &self,
        kind: DashboardKind,
        payload: &Value,
        idempotency_key: Option<&str>,
    ) -> Value {
        let body = match serde_json::to_vec(payload) {
            Ok(b) => b,
            Err(e) => {
                return failure_value(&DeliveryError::Request(format!(
                    "cannot encode the payload: {e}"
                )))
            }
        };
        let url = self.url_for(kind).to_string();
        let mut attempt = 1;
        loop {
            match self.post_once(&url, &body, idempotency_key).await {
                Ok(v) => return v,
                Err(e) => {
                    tracing::error!(
                        webhook = kind.as_str(),
                        url = %url,
                        attempt,
                        status = e.status().map(i64::from).unwrap_or(-1),
                        "dashboard delivery failed: {e}"
                    );
                    if attempt >= 2 || !e.is_retryable() {
                        return failure_value(&e);
                    }
                    attempt += 1;
                    (self.sleeper)(RETRY_DELAY).await;
                }
            }
        }
    }

    /// One attempt: POST exactly `body` to `url` with the secret, the
    /// signature of `body` and, when given, the idempotency key. No retry.
    pub async fn post_once(
        &self,
        url: &str,
        body: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<Value, DeliveryError> {
        let http = self
            .http
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(DeliveryError::Closed)?;
        if url.trim().is_empty() {
            return Err(DeliveryError::Request(
                "no URL is configured for this webhook".into(),
            ));
        }
        check_url("dashboard URL", url).map_err(|e| DeliveryError::Request(e.0))?;
        let signature = HeaderValue::from_str(&sign(&self.config.webhook_secret, body))
            .map_err(|_| DeliveryError::Request("cannot encode the signature".into()))?;
        let mut req = http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(SECRET_HEADER, self.secret.clone())
            .header(SIGNATURE_HEADER, signature)
            .body(body.to_vec());
        if let Some(key) = idempotency_key {
            let value = HeaderValue::from_str(key).map_err(|_| {
                DeliveryError::Request(
                    "the idempotency key contains characters that cannot be sent in an HTTP header"
                        .into(),
                )
            })?;
            req = req.header(IDEMPOTENCY_HEADER, value);
        }
        let timeout = self.config.timeout;
        let fail = |e: reqwest::Error| {
            if e.is_timeout() {
                DeliveryError::Timeout(timeout)
            } else {
                DeliveryError::Transport(describe_error(e))
            }
        };
        let resp = req.send().await.map_err(fail)?;
        let status = resp.status().as_u16();
        let bytes = read_capped(resp, MAX_RESPONSE_BYTES).await.map_err(fail)?;
        interpret_reply(status, &bytes)
            .map_err(|e| e.with_excerpt(excerpt(&bytes, &[&self.config.webhook_secret])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_matches_a_known_vector() {
        // RFC 4231 test case 2.
        assert_eq!(
            sign("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn status_error_text_has_excerpt() {
        let e = interpret_reply(500, b"boom").unwrap_err();
        assert_eq!(e.to_string(), "the dashboard answered HTTP 500: boom");
        assert_eq!(e.status(), Some(500));
        let e = interpret_reply(500, b"").unwrap_err();
        assert_eq!(e.to_string(), "the dashboard answered HTTP 500");
    }

    #[test]
    fn config_debug_hides_secret() {
        let c = DashboardConfig {
            webhook_secret: "sekrit".into(),
            ..DashboardConfig::default()
        };
        assert!(!format!("{c:?}").contains("sekrit"));
    }
}
