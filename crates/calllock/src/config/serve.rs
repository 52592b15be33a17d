//! The `[serve]` and `[twilio]` sections: how `calllock serve` listens and
//! how it talks to Twilio.

use serde::{Deserialize, Serialize};

/// `calllock serve`: the HTTP + WebSocket server Twilio calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSection {
    /// TCP port (env `PORT`, `--port`).
    pub port: u16,
    /// Address to bind (`--bind`). Loopback unless said otherwise: a
    /// public address without `twilio.auth_token` is refused (signatures
    /// could not be checked) unless `--allow-unsigned`.
    pub bind: String,
    /// The URL Twilio reaches this server at, e.g.
    /// `https://calllock.example.com` (env `CALLLOCK_PUBLIC_URL`; on Fly.io
    /// `FLY_APP_NAME` gives `https://<app>.fly.dev`). Empty: taken from the
    /// request's `Host` (fine on loopback and behind a trusted proxy).
    pub public_url: String,
    /// Honour `X-Forwarded-Proto` / `X-Forwarded-Host`, and take the last
    /// `X-Forwarded-For` entry as the client's address for the sign-in
    /// limit (only behind a proxy you run, the server reachable through it
    /// alone: anyone can send these headers).
    pub trusted_proxy: bool,
    /// Calls at once; a call beyond it hears a short apology and gets a
    /// callback.
    pub max_calls: u32,
    /// On SIGTERM/SIGINT, live calls may go on this long before they are
    /// ended politely.
    pub shutdown_grace_s: f64,
    /// Agent audio handed to Twilio ahead of real time (its playout buffer
    /// never runs dry), milliseconds.
    pub output_lead_ms: u64,
    /// Agent audio per `media` message to Twilio, milliseconds: whole
    /// 20 ms frames, 20 to 100. Pipecat sends 40 ms; very small messages
    /// made audible jitter in OpenAI's Twilio sample; each message is a
    /// socket write, so longer ones cost less CPU per call. A barge-in
    /// still stops the audio at once (`clear`); marks go between frames,
    /// so `twilio.mark_interval_ms` rounds up to whole frames.
    pub output_frame_ms: u64,
    /// Threads that pace agent audio (env `CALLLOCK_PLAYOUT_THREADS`); each
    /// call is pinned to one. 0: half the cores, at least one. One thread
    /// carries about 1,500 calls (`cargo bench --bench playout`).
    pub playout_threads: u32,
    /// How the caller's speech is detected (turn-taking, barge-in):
    /// `"model"` (the earshot voice model: real voices), `"codec"` (the
    /// offline speech codec that `calllock dial` speaks), or `"auto"`:
    /// the model when a speech vendor hears the call, else the codec.
    pub vad: String,
    /// The bearer token `GET /metrics` requires (env
    /// `CALLLOCK_METRICS_TOKEN`; `Authorization: Bearer <token>`). Empty:
    /// `/metrics` answers anyone who reaches the server — fine on loopback
    /// or a private network, not on a public address.
    pub metrics_token: String,
    /// The bearer token the JSON API (`/api/…`) requires (env
    /// `CALLLOCK_API_TOKEN`). The signed-in operator's session works too.
    pub api_token: String,
    /// The operator's password as an argon2 hash (PHC string, env
    /// `CALLLOCK_OPERATOR_PASSWORD_HASH`); wins over the one `calllock
    /// operator password` keeps in the database.
    pub operator_password_hash: String,
    /// Sign-in attempts count this long ([`crate::operator`]): a client's
    /// failures, and all attempts for the global back-off. After a flood
    /// of sign-ins ends, the owner can sign in again within this long.
    pub sign_in_window_s: f64,
    /// Failed sign-ins one client address may have per window.
    pub sign_in_failures_per_address: u32,
    /// Sign-in attempts all clients together may have per window (beyond:
    /// everyone is asked to wait).
    pub sign_in_attempts_global: u32,
}

impl Default for ServeSection {
    fn default() -> Self {
        ServeSection {
            port: 8765,
            bind: "127.0.0.1".into(),
            public_url: String::new(),
            trusted_proxy: false,
            max_calls: 1000,
            shutdown_grace_s: 120.0,
            output_lead_ms: 100,
            output_frame_ms: 40,
            playout_threads: 0,
            vad: "auto".into(),
            metrics_token: String::new(),
            api_token: String::new(),
            operator_password_hash: String::new(),
            sign_in_window_s: 60.0,
            sign_in_failures_per_address: 5,
            sign_in_attempts_global: 30,
        }
    }
}

/// Twilio: signatures and the REST API (hang-up).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TwilioSection {
    /// `AC…` (env `TWILIO_ACCOUNT_SID`). Needed for the REST hang-up.
    pub account_sid: String,
    /// Env `TWILIO_AUTH_TOKEN`. When set, every webhook and stream must
    /// carry a valid `X-Twilio-Signature`.
    pub auth_token: String,
    /// The REST API base (env `CALLLOCK_TWILIO_API_URL`).
    pub api_url: String,
    /// A mark every this much agent audio (what the caller heard is known
    /// to this precision), rounded up to whole `serve.output_frame_ms`
    /// frames (a mark goes between two `media` messages).
    pub mark_interval_ms: u64,
    /// How long a hang-up waits for the goodbye's last mark echo.
    pub hangup_wait_s: f64,
}

impl Default for TwilioSection {
    fn default() -> Self {
        TwilioSection {
            account_sid: String::new(),
            auth_token: String::new(),
            api_url: "https://api.twilio.com".into(),
            mark_interval_ms: 200,
            hangup_wait_s: 5.0,
        }
    }
}

impl TwilioSection {
    /// Whether signatures are checked.
    pub fn signed(&self) -> bool {
        !self.auth_token.is_empty()
    }
}

/// Environment overrides of these sections.
pub(super) fn apply_env(
    serve: &mut ServeSection,
    twilio: &mut TwilioSection,
    get: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<String>,
) {
    if let Some(v) = get("PORT") {
        match v.trim().parse::<u16>() {
            Ok(p) => serve.port = p,
            Err(_) => problems.push(format!("PORT={v:?} is not a port number (0-65535)")),
        }
    }
    if let Some(v) = get("CALLLOCK_PUBLIC_URL") {
        serve.public_url = v.trim().to_string();
    } else if serve.public_url.is_empty() {
        if let Some(app) = get("FLY_APP_NAME") {
            serve.public_url = format!("https://{}.fly.dev", app.trim());
        }
    }
    if let Some(v) = get("CALLLOCK_MAX_CALLS") {
        match v.trim().parse::<u32>() {
            Ok(n) => serve.max_calls = n,
            Err(_) => problems.push(format!("CALLLOCK_MAX_CALLS={v:?} is not a whole number")),
        }
    }
    if let Some(v) = get("CALLLOCK_PLAYOUT_THREADS") {
        match v.trim().parse::<u32>() {
            Ok(n) => serve.playout_threads = n,
            Err(_) => problems.push(format!(
                "CALLLOCK_PLAYOUT_THREADS={v:?} is not a whole number"
            )),
        }
    }
    if let Some(v) = get("CALLLOCK_METRICS_TOKEN") {
        serve.metrics_token = v.trim().to_string();
    }
    if let Some(v) = get("CALLLOCK_API_TOKEN") {
        serve.api_token = v.trim().to_string();
    }
    if let Some(v) = get("CALLLOCK_OPERATOR_PASSWORD_HASH") {
        serve.operator_password_hash = v.trim().to_string();
    }
    if let Some(v) = get("TWILIO_ACCOUNT_SID") {
        twilio.account_sid = v.trim().to_string();
    }
    if let Some(v) = get("TWILIO_AUTH_TOKEN") {
        twilio.auth_token = v.trim().to_string();
    }
    if let Some(v) = get("CALLLOCK_TWILIO_API_URL") {
        twilio.api_url = v.trim().to_string();
    }
}

/// What is wrong with these sections, in plain words.
pub(super) fn problems(serve: &ServeSection, twilio: &TwilioSection) -> Vec<String> {
    let mut out = Vec::new();
    if serve.bind.trim().parse::<std::net::IpAddr>().is_err() {
        out.push(format!(
            "serve.bind = {:?} must be an IP address like 127.0.0.1 or 0.0.0.0",
            serve.bind
        ));
    }
    let p = serve.public_url.trim();
    if !(p.is_empty() || p.starts_with("https://") || p.starts_with("http://")) {
        out.push(format!(
            "serve.public_url (CALLLOCK_PUBLIC_URL) = {p:?} must be an https:// or http:// URL"
        ));
    }
    if serve.max_calls == 0 {
        out.push("serve.max_calls must be at least 1".into());
    }
    let g = serve.shutdown_grace_s;
    if !(g.is_finite() && (0.0..=3600.0).contains(&g)) {
        out.push(format!(
            "serve.shutdown_grace_s = {g} must be between 0 and 3600 seconds"
        ));
    }
    if serve.output_lead_ms > 1000 {
        out.push(format!(
            "serve.output_lead_ms = {} must be at most 1000",
            serve.output_lead_ms
        ));
    }
    let f = serve.output_frame_ms;
    if !(20..=100).contains(&f) || !f.is_multiple_of(20) {
        out.push(format!(
            "serve.output_frame_ms = {f} must be 20, 40, 60, 80 or 100 (whole 20 ms frames)"
        ));
    }
    if serve.playout_threads > 1024 {
        out.push(format!(
            "serve.playout_threads = {} must be at most 1024 (0: half the cores)",
            serve.playout_threads
        ));
    }
    if !matches!(serve.vad.as_str(), "auto" | "model" | "codec") {
        out.push(format!(
            "serve.vad = {:?} must be \"auto\", \"model\" or \"codec\"",
            serve.vad
        ));
    }
    let w = serve.sign_in_window_s;
    if !(w.is_finite() && (0.1..=3600.0).contains(&w)) {
        out.push(format!(
            "serve.sign_in_window_s = {w} must be between 0.1 and 3600 seconds"
        ));
    }
    if serve.sign_in_failures_per_address == 0 || serve.sign_in_attempts_global == 0 {
        out.push(
            "serve.sign_in_failures_per_address and serve.sign_in_attempts_global must be at least 1 (else nobody can sign in)"
                .into(),
        );
    }
    let a = twilio.api_url.trim();
    if !(a.starts_with("https://") || a.starts_with("http://")) {
        out.push(format!(
            "twilio.api_url (CALLLOCK_TWILIO_API_URL) = {a:?} must be an https:// or http:// URL"
        ));
    }
    if !(20..=5000).contains(&twilio.mark_interval_ms) {
        out.push(format!(
            "twilio.mark_interval_ms = {} must be between 20 and 5000",
            twilio.mark_interval_ms
        ));
    }
    let w = twilio.hangup_wait_s;
    if !(w.is_finite() && (0.0..=60.0).contains(&w)) {
        out.push(format!(
            "twilio.hangup_wait_s = {w} must be between 0 and 60 seconds"
        ));
    }
    out
}
