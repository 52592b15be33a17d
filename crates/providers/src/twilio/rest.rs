//! Twilio's REST API, as far as CallLock needs it: hanging up a call.
//!
//! Closing the Media Streams socket already ends a `<Connect><Stream>` call
//! (nothing follows `</Connect>` in our TwiML), but the explicit way — and
//! the one that works while the socket is still draining audio — is to
//! update the call resource (research note §1.10; twilio-python
//! `CallContext.update`, Pipecat's Twilio serializer `_hang_up_call`):
//!
//! ```text
//! POST {base}/2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json
//! Authorization: Basic base64(AccountSid ":" AuthToken)
//! Content-Type: application/x-www-form-urlencoded
//!
//! Status=completed
//! ```
//!
//! `completed` ends an in-progress call (`canceled` would only affect a
//! call still queued or ringing). Answers:
//!
//! - 2xx (200 with the call's JSON): [`HangUp::Completed`].
//! - 404, normally `{"code": 20404, "message": "The requested resource …
//!   was not found"}`: the call is already over, which is what we wanted —
//!   [`HangUp::AlreadyEnded`], not an error (Pipecat PR #2149 after issue
//!   #2145).
//! - Anything else: [`TwilioRestError::Status`] with the status and, when
//!   the body is Twilio's JSON error, its `code` and `message` (e.g. 401 /
//!   20003 "Authenticate" for a wrong token).
//! - No answer: [`TwilioRestError::Timeout`] or [`TwilioRestError::Network`].
//!
//! One request, no retry: the caller closes the stream either way. The
//! client follows no redirects (a redirect would be an answer, never a
//! reason to resend our credentials) and reads at most
//! [`MAX_ERROR_BODY_BYTES`] of an error body.
//!
//! **SIDs in the path.** Both SIDs are interpolated into the URL, so they
//! are checked first ([`is_sid`]: the two-letter prefix — `AC` for an
//! account, `CA` for a call — and 32 hex digits). Anything else, e.g.
//! `CA../../Accounts`, is a [`TwilioRestError::BadSid`] and no request is
//! sent. The base URL is configurable (`https://api.twilio.com`; a regional
//! `https://api.{edge}.{region}.twilio.com`; a loopback fake in tests).
//! The auth token is never shown by `Debug` nor put in an error.

use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use std::time::Duration;

/// Twilio's global REST host.
pub const DEFAULT_API_BASE_URL: &str = "https://api.twilio.com";

/// Default whole-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest error body read (for its `message`); the rest is ignored.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Longest excerpt of a non-JSON error body kept in an error.
const EXCERPT_CHARS: usize = 200;

/// Where and as whom.
#[derive(Clone, PartialEq, Eq)]
pub struct TwilioRestConfig {
    /// `https://api.twilio.com` by default; a trailing slash is ignored.
    pub api_base_url: String,
    /// `AC` + 32 hex digits; also the Basic auth user name.
    pub account_sid: String,
    /// The account's auth token (Basic auth password). Never logged.
    pub auth_token: String,
    /// Whole-request timeout (connecting included). Default 10 s.
    pub timeout: Duration,
}

impl Default for TwilioRestConfig {
    /// Twilio's host, no credentials (set them before [`TwilioRest::new`]),
    /// 10 s.
    fn default() -> Self {
        TwilioRestConfig {
            api_base_url: DEFAULT_API_BASE_URL.into(),
            account_sid: String::new(),
            auth_token: String::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for TwilioRestConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwilioRestConfig")
            .field("api_base_url", &self.api_base_url)
            .field("account_sid", &self.account_sid)
            .field("auth_token", &"<redacted>")
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// What a hang-up did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HangUp {
    /// Twilio ended the call (2xx).
    Completed,
    /// The call had already ended (404, Twilio error 20404).
    AlreadyEnded,
}

/// Why a request failed (or was not sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TwilioRestError {
    /// A SID that would go into the URL is malformed; nothing was sent.
    #[error("{what} {sid:?} is not a Twilio SID ({prefix} followed by 32 hex digits)")]
    BadSid {
        /// `"the account SID"` or `"the call SID"`.
        what: &'static str,
        /// The prefix it should have (`AC`, `CA`).
        prefix: &'static str,
        /// The rejected value (at most 64 characters of it).
        sid: String,
    },
    /// The client cannot be set up (bad base URL, TLS setup failed).
    #[error("cannot set up the Twilio REST client: {0}")]
    Setup(String),
    /// No answer within the configured timeout.
    #[error("Twilio did not answer within {0:?}")]
    Timeout(Duration),
    /// No answer: connection refused or reset, DNS, TLS…
    #[error("Twilio did not answer: {0}")]
    Network(String),
    /// Twilio answered with a status other than 2xx or 404.
    #[error(
        "Twilio answered {status}{}{}",
        code.map(|c| format!(" (error {c})")).unwrap_or_default(),
        if message.is_empty() { String::new() } else { format!(": {message}") }
    )]
    Status {
        /// The HTTP status.
        status: u16,
        /// Twilio's error code (`code` of the JSON body), when present.
        code: Option<i64>,
        /// Twilio's `message`, else an excerpt of the body (may be empty).
        message: String,
    },
}

/// Whether `sid` is `prefix` followed by exactly 32 hex digits (Twilio's
/// SID shape: `AC…` accounts, `CA…` calls, `MZ…` streams).
pub fn is_sid(sid: &str, prefix: &str) -> bool {
    sid.len() == prefix.len() + 32
        && sid.starts_with(prefix)
        && sid.as_bytes()[prefix.len()..]
            .iter()
            .all(u8::is_ascii_hexdigit)
}

fn check_sid(what: &'static str, prefix: &'static str, sid: &str) -> Result<(), TwilioRestError> {
    if is_sid(sid, prefix) {
        Ok(())
    } else {
        Err(TwilioRestError::BadSid {
            what,
            prefix,
            sid: sid.chars().take(64).collect(),
        })
    }
}

/// The client: one reqwest client (rustls, pooled connections) and the
/// configuration. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TwilioRest {
    cfg: TwilioRestConfig,
    base: String,
    http: reqwest::Client,
}

impl TwilioRest {
    /// Check the configuration (account SID shape, an absolute `http(s)`
    /// base URL) and build the HTTP client.
    pub fn new(cfg: TwilioRestConfig) -> Result<Self, TwilioRestError> {
        check_sid("the account SID", "AC", &cfg.account_sid)?;
        let base = cfg.api_base_url.trim().trim_end_matches('/').to_string();
        crate::v2::check_url("the Twilio API base URL", &base)
            .map_err(|e| TwilioRestError::Setup(e.0))?;
        let http = crate::v2::http_client(cfg.timeout).map_err(|e| TwilioRestError::Setup(e.0))?;
        Ok(TwilioRest { cfg, base, http })
    }

    /// The URL of call `call_sid`'s resource (the SID checked first).
    pub fn call_url(&self, call_sid: &str) -> Result<String, TwilioRestError> {
        check_sid("the call SID", "CA", call_sid)?;
        Ok(format!(
            "{}/2010-04-01/Accounts/{}/Calls/{call_sid}.json",
            self.base, self.cfg.account_sid
        ))
    }

    /// End call `call_sid`: one `POST … Status=completed` (module docs).
    pub async fn hang_up(&self, call_sid: &str) -> Result<HangUp, TwilioRestError> {
        let url = self.call_url(call_sid)?;
        let resp = self
            .http
            .post(url)
            .basic_auth(&self.cfg.account_sid, Some(&self.cfg.auth_token))
            .header(
                CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            )
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .body("Status=completed")
            .send()
            .await
            .map_err(|e| self.transport_error(e))?;
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(HangUp::Completed);
        }
        if status == 404 {
            return Ok(HangUp::AlreadyEnded);
        }
        // The status is the answer; a body that breaks off is still read
        // as far as it came.
        let body = crate::v2::read_some(resp, MAX_ERROR_BODY_BYTES).await;
        let (code, message) = twilio_error(&body);
        Err(TwilioRestError::Status {
            status,
            code,
            message,
        })
    }

    fn transport_error(&self, e: reqwest::Error) -> TwilioRestError {
        if e.is_timeout() {
            TwilioRestError::Timeout(self.cfg.timeout)
        } else {
            TwilioRestError::Network(crate::v2::describe_error(e))
        }
    }
}

/// Twilio's `code` and `message` from an error body
/// (`{"code": 20003, "message": "Authenticate", "more_info": …, "status":
/// 401}`); for a body that is not such JSON, no code and an excerpt.
fn twilio_error(body: &[u8]) -> (Option<i64>, String) {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let code = v
        .get("code")
        .and_then(|c| c.as_i64().or_else(|| c.as_str()?.trim().parse().ok()));
    let message = match v.get("message").and_then(|m| m.as_str()) {
        Some(m) => m.to_string(),
        None => String::from_utf8_lossy(body)
            .trim()
            .chars()
            .take(EXCERPT_CHARS)
            .collect(),
    };
    (code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AC: &str = "AC0123456789abcdef0123456789ABCDEF";

    #[test]
    fn sids() {
        assert!(is_sid("CA0123456789abcdef0123456789abcdef", "CA"));
        assert!(is_sid(AC, "AC"));
        for bad in [
            "",
            "CA",
            "CA0123",
            "CA0123456789abcdef0123456789abcdeg",
            "CA0123456789abcdef0123456789abcdef0",
            "ca0123456789abcdef0123456789abcdef",
            "AC0123456789abcdef0123456789abcdef",
            "../0123456789abcdef0123456789abcdef",
            "CA0123456789abcdef0123456789abcd/.",
            "CA0123456789abcdef0123456789abcdé",
            " CA0123456789abcdef0123456789abcde",
        ] {
            assert!(!is_sid(bad, "CA"), "{bad:?}");
        }
    }

    #[test]
    fn the_configuration_is_checked() {
        let bad = TwilioRest::new(TwilioRestConfig {
            account_sid: "nope".into(),
            ..TwilioRestConfig::default()
        });
        assert!(bad.unwrap_err().to_string().contains("account SID"));
        for base in ["", "api.twilio.com", "ftp://api.twilio.com", "https://"] {
            let e = TwilioRest::new(TwilioRestConfig {
                api_base_url: base.into(),
                account_sid: AC.into(),
                ..TwilioRestConfig::default()
            })
            .unwrap_err();
            assert!(matches!(e, TwilioRestError::Setup(_)), "{base:?}: {e}");
        }
    }

    #[test]
    fn call_urls() {
        let c = TwilioRest::new(TwilioRestConfig {
            api_base_url: "https://api.twilio.com/".into(),
            account_sid: AC.into(),
            ..TwilioRestConfig::default()
        })
        .unwrap();
        assert_eq!(
            c.call_url("CAfedcba9876543210fedcba9876543210").unwrap(),
            format!(
                "https://api.twilio.com/2010-04-01/Accounts/{AC}/Calls/CAfedcba9876543210fedcba9876543210.json"
            )
        );
        let e = c.call_url("CA../../Accounts").unwrap_err();
        assert!(e.to_string().contains("call SID"), "{e}");
    }

    #[test]
    fn the_token_is_never_shown() {
        let cfg = TwilioRestConfig {
            account_sid: AC.into(),
            auth_token: "s3cr3t-token".into(),
            ..TwilioRestConfig::default()
        };
        assert!(!format!("{cfg:?}").contains("s3cr3t"));
        let c = TwilioRest::new(cfg).unwrap();
        assert!(!format!("{c:?}").contains("s3cr3t"));
    }

    #[test]
    fn error_bodies() {
        assert_eq!(
            twilio_error(br#"{"code":20003,"message":"Authenticate","status":401}"#),
            (Some(20003), "Authenticate".to_string())
        );
        assert_eq!(
            twilio_error(br#"{"code":"21220","message":"m"}"#),
            (Some(21220), "m".to_string())
        );
        assert_eq!(twilio_error(b" boom \n"), (None, "boom".to_string()));
        assert_eq!(twilio_error(b""), (None, String::new()));
        let long = "x".repeat(1000);
        assert_eq!(twilio_error(long.as_bytes()).1.len(), EXCERPT_CHARS);
        let e = TwilioRestError::Status {
            status: 500,
            code: None,
            message: String::new(),
        };
        assert_eq!(e.to_string(), "Twilio answered 500");
    }
}
