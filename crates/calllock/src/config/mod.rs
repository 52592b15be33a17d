//! Configuration: one TOML file plus `CALLLOCK_…` environment overrides,
//! validated at startup with one message that lists every problem.
//!
//! Lookup order for the file: `--config PATH`, else `$CALLLOCK_CONFIG`, else
//! `./calllock.toml` if it exists, else the embedded defaults (the HVAC
//! company of SPEC.md). Nothing is required: the defaults run offline.

use agent::engine::EngineConfig;
use agent::BusinessProfile;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod local_speech;
mod paths;
mod recording;
mod serve;
mod speech;
pub use local_speech::SpeechSection;
pub use paths::default_database;
pub use recording::RecordingSection;
pub use serve::{ServeSection, TwilioSection};
pub use speech::{DeepgramSection, InworldSection, TtsSection};

/// Timing of the conversation engine (seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSection {
    pub buffer_debounce_s: f64,
    pub buffer_max_s: f64,
    pub end_call_grace_s: f64,
    pub end_call_max_wait_s: f64,
    /// Silence after the agent's last line before "are you still there?"
    /// (0 disables it).
    pub idle_prompt_s: f64,
    /// Unanswered idle prompts before the agent says goodbye and hangs up.
    pub idle_max_prompts: u32,
    /// On a phone call, a reply not begun this long after the caller
    /// stopped speaking is preceded by a short filler ("One moment."): the
    /// dead-air budget (0 disables it; text chats never use it).
    pub filler_after_s: f64,
}

impl Default for EngineSection {
    fn default() -> Self {
        let d = EngineConfig::default();
        EngineSection {
            buffer_debounce_s: d.buffer_debounce_s,
            buffer_max_s: d.buffer_max_s,
            end_call_grace_s: d.end_call_grace_s,
            end_call_max_wait_s: d.end_call_max_wait_s,
            idle_prompt_s: d.idle_prompt_s,
            idle_max_prompts: d.idle_max_prompts,
            filler_after_s: 0.8,
        }
    }
}

impl EngineSection {
    /// The engine of a text call (`chat`, `demo`): no audio, so no dead
    /// air to fill.
    pub fn text_engine_config(&self) -> EngineConfig {
        EngineConfig {
            filler_after_s: 0.0,
            ..self.engine_config()
        }
    }

    /// The engine of a phone call.
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            buffer_debounce_s: self.buffer_debounce_s,
            buffer_max_s: self.buffer_max_s,
            end_call_grace_s: self.end_call_grace_s,
            end_call_max_wait_s: self.end_call_max_wait_s,
            idle_prompt_s: self.idle_prompt_s,
            idle_max_prompts: self.idle_max_prompts,
            filler_after_s: self.filler_after_s,
        }
    }
}

/// How simulated calls (chat, demo, replay) model time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimSection {
    /// Seconds from an LLM request to its reply.
    pub llm_latency_s: f64,
    /// Seconds a backend tool call takes.
    pub tool_latency_s: f64,
    /// Speaking rate of the agent's voice, in characters per second.
    pub speech_chars_per_s: f64,
}

impl Default for SimSection {
    fn default() -> Self {
        SimSection {
            llm_latency_s: 0.6,
            tool_latency_s: 0.3,
            speech_chars_per_s: 15.0,
        }
    }
}

/// The conversation LLM: any OpenAI-compatible chat-completions server
/// (OpenAI, a local llama.cpp / Ollama / vLLM server, …). Off (the scripted
/// responder speaks) while `base_url` and `api_key` are both empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSection {
    /// e.g. "https://api.openai.com/v1" or "http://127.0.0.1:8080/v1".
    /// Empty with an `api_key` set means OpenAI's.
    pub base_url: String,
    pub model: String,
    pub api_key: String,
    /// Longest wait for the first words of a reply before the scripted line
    /// is spoken instead.
    pub first_token_budget_s: f64,
    /// A reply request that failed at once or is still silent this long is
    /// sent a second time, and the first to speak is the reply (within the
    /// same first-token budget). 0: never (a provider billed per request
    /// where the extra request is not wanted).
    pub hedge_after_s: f64,
    /// Failed replies in a row (any call) that open the LLM's breaker:
    /// while open, the scripted line is said at once.
    pub breaker_failures: u32,
    /// How long the breaker stays open before one reply probes the LLM.
    pub breaker_cooldown_s: f64,
    /// Who phrases the replies (env `CALLLOCK_LLM_KIND`): `"openai"` (the
    /// model directly) or `"adk"` (a Google ADK agent on the same model,
    /// reading the state and KNOWN INFO as session state; needs a build
    /// with `--features calllock/adk`).
    pub kind: String,
}

impl Default for LlmSection {
    fn default() -> Self {
        LlmSection {
            base_url: String::new(),
            model: "gpt-4o-mini".into(),
            api_key: String::new(),
            first_token_budget_s: 2.5,
            hedge_after_s: 1.0,
            breaker_failures: 3,
            breaker_cooldown_s: 30.0,
            kind: "openai".into(),
        }
    }
}

/// The OpenAI endpoint used when only an API key is configured.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

impl LlmSection {
    /// Whether an LLM is configured.
    pub fn enabled(&self) -> bool {
        !self.base_url.trim().is_empty() || !self.api_key.trim().is_empty()
    }

    /// The base URL in use (OpenAI's when only a key is set).
    pub fn effective_base_url(&self) -> &str {
        if self.base_url.trim().is_empty() {
            OPENAI_BASE_URL
        } else {
            self.base_url.trim()
        }
    }
}

/// Which booking backend answers the agent's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Bookings in CallLock's own database.
    #[default]
    Embedded,
    /// The V2 backend over HTTP (SPEC §6).
    V2,
}

/// The booking backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackendSection {
    pub kind: BackendKind,
    /// V2 base URL (kind = "v2").
    pub url: String,
    /// Sent as `X-API-Key` when set.
    pub api_key: String,
    pub timeout_s: f64,
}

impl Default for BackendSection {
    fn default() -> Self {
        BackendSection {
            kind: BackendKind::Embedded,
            url: String::new(),
            api_key: String::new(),
            timeout_s: 10.0,
        }
    }
}

/// The dashboard webhooks (SPEC §7.1–§7.8). Delivery is off while
/// `jobs_url` is empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DashboardSection {
    pub jobs_url: String,
    pub calls_url: String,
    pub alerts_url: String,
    pub webhook_secret: String,
    pub user_email: String,
    pub timeout_s: f64,
}

impl Default for DashboardSection {
    fn default() -> Self {
        DashboardSection {
            jobs_url: String::new(),
            calls_url: String::new(),
            alerts_url: String::new(),
            webhook_secret: String::new(),
            user_email: String::new(),
            timeout_s: 15.0,
        }
    }
}

impl DashboardSection {
    /// Whether deliveries are configured (SPEC §7.1: jobs URL and secret).
    pub fn enabled(&self) -> bool {
        !self.jobs_url.trim().is_empty() && !self.webhook_secret.is_empty()
    }
}

/// Retries of undelivered post-call work (D-17).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutboxSection {
    /// First retry delay; doubled per failed attempt …
    pub backoff_base_s: f64,
    /// … up to this cap.
    pub backoff_max_s: f64,
    /// How often a running CallLock looks for due deliveries.
    pub poll_s: f64,
    /// How long a claimed delivery stays reserved for its worker.
    pub lease_s: f64,
}

impl Default for OutboxSection {
    fn default() -> Self {
        OutboxSection {
            backoff_base_s: 5.0,
            backoff_max_s: 300.0,
            poll_s: 2.0,
            lease_s: 120.0,
        }
    }
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The database: a SQLite file (created on first use) or a
    /// `postgres://` URL (several instances sharing one database).
    pub database: PathBuf,
    /// This process's name in a shared database (which instance owns a
    /// live call). Default: the host name.
    pub instance: String,
    /// A process that wrote no heartbeat for this long is gone: its live
    /// calls are taken over (interrupted, post-processed) by another.
    pub instance_lease_s: f64,
    pub business: BusinessProfile,
    pub engine: EngineSection,
    pub sim: SimSection,
    pub llm: LlmSection,
    pub backend: BackendSection,
    pub dashboard: DashboardSection,
    pub outbox: OutboxSection,
    pub serve: ServeSection,
    pub twilio: TwilioSection,
    pub deepgram: DeepgramSection,
    pub inworld: InworldSection,
    pub tts: TtsSection,
    pub speech: SpeechSection,
    pub recording: RecordingSection,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            database: default_database(),
            instance: default_instance(),
            instance_lease_s: 30.0,
            business: BusinessProfile::default(),
            engine: EngineSection::default(),
            sim: SimSection::default(),
            llm: LlmSection::default(),
            backend: BackendSection::default(),
            dashboard: DashboardSection::default(),
            outbox: OutboxSection::default(),
            serve: ServeSection::default(),
            twilio: TwilioSection::default(),
            deepgram: DeepgramSection::default(),
            inworld: InworldSection::default(),
            tts: TtsSection::default(),
            speech: SpeechSection::default(),
            recording: RecordingSection::default(),
        }
    }
}

/// The host name (from /etc/hostname or $HOSTNAME), else "calllock".
pub fn default_instance() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "calllock".into())
}

impl Config {
    /// The effective configuration as TOML (every section, in the file's
    /// own format), secrets shown only as `"<set>"` and a database URL's
    /// password masked. What `calllock config` prints.
    pub fn to_toml_redacted(&self) -> String {
        let mut v = toml::Value::try_from(self)
            .unwrap_or_else(|e| toml::Value::String(format!("cannot show the configuration: {e}")));
        let mask = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                "<set>".into()
            }
        };
        if let Some(t) = v.as_table_mut() {
            for (section, key) in [
                ("llm", "api_key"),
                ("backend", "api_key"),
                ("dashboard", "webhook_secret"),
                ("twilio", "auth_token"),
                ("serve", "metrics_token"),
                ("serve", "api_token"),
                ("serve", "operator_password_hash"),
                ("deepgram", "api_key"),
                ("inworld", "api_key"),
            ] {
                if let Some(toml::Value::String(s)) =
                    t.get_mut(section).and_then(|x| x.get_mut(key))
                {
                    *s = mask(s);
                }
            }
            if let Some(toml::Value::String(db)) = t.get_mut("database") {
                *db = redact_url_password(db);
            }
        }
        toml::to_string_pretty(&v).unwrap_or_default()
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:<set>@host/db`.
pub fn redact_url_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_string();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:<set>@{host}"),
        None => url.to_string(),
    }
}

/// Every problem with the configuration, reported at once.
#[derive(Debug)]
pub struct ConfigErrors {
    pub source: String,
    pub problems: Vec<String>,
}

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "configuration ({}) has problems:", self.source)?;
        for p in &self.problems {
            writeln!(f, "  - {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Where the configuration comes from (for messages): the file, or
/// "embedded defaults".
pub fn source_of(path: Option<&Path>) -> String {
    path.map(Path::to_path_buf)
        .or_else(|| {
            std::env::var_os("CALLLOCK_CONFIG")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| {
            let p = PathBuf::from("calllock.toml");
            p.exists().then_some(p)
        })
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "embedded defaults".into())
}

/// Load the configuration from an optional file and the environment.
pub fn load(path: Option<&Path>) -> Result<Config, ConfigErrors> {
    let env: Vec<(String, String)> = std::env::vars().collect();
    load_from(path, &env)
}

/// [`load`] with an explicit environment (tests).
pub fn load_from(path: Option<&Path>, env: &[(String, String)]) -> Result<Config, ConfigErrors> {
    let get = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    let chosen: Option<PathBuf> = path
        .map(Path::to_path_buf)
        .or_else(|| get("CALLLOCK_CONFIG").map(PathBuf::from))
        .or_else(|| {
            let p = PathBuf::from("calllock.toml");
            p.exists().then_some(p)
        });
    let source = chosen
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "embedded defaults".into());
    let fail = |problems: Vec<String>| ConfigErrors {
        source: source.clone(),
        problems,
    };
    let mut cfg = match &chosen {
        None => Config::default(),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| fail(vec![format!("cannot read {}: {e}", p.display())]))?;
            toml::from_str::<Config>(&text)
                .map_err(|e| fail(vec![format!("{}", e.to_string().trim())]))?
        }
    };

    let mut problems = Vec::new();
    let mut num = |key: &str, target: &mut f64| {
        if let Some(v) = get(key) {
            match v.trim().parse::<f64>() {
                Ok(x) => *target = x,
                Err(_) => problems.push(format!("{key}={v:?} is not a number")),
            }
        }
    };
    num(
        "CALLLOCK_BUFFER_DEBOUNCE_S",
        &mut cfg.engine.buffer_debounce_s,
    );
    num("CALLLOCK_BUFFER_MAX_S", &mut cfg.engine.buffer_max_s);
    num(
        "CALLLOCK_END_CALL_GRACE_S",
        &mut cfg.engine.end_call_grace_s,
    );
    num(
        "CALLLOCK_END_CALL_MAX_WAIT_S",
        &mut cfg.engine.end_call_max_wait_s,
    );
    num("CALLLOCK_LLM_LATENCY_S", &mut cfg.sim.llm_latency_s);
    num("CALLLOCK_TOOL_LATENCY_S", &mut cfg.sim.tool_latency_s);
    num(
        "CALLLOCK_SPEECH_CHARS_PER_S",
        &mut cfg.sim.speech_chars_per_s,
    );
    if let Some(v) = get("CALLLOCK_DATABASE") {
        cfg.database = PathBuf::from(v);
    }
    if let Some(v) = get("CALLLOCK_INSTANCE") {
        cfg.instance = v;
    }
    num("CALLLOCK_INSTANCE_LEASE_S", &mut cfg.instance_lease_s);
    // Vendors: the reference agent's variable names work too.
    let text_vars: [(&[&str], &mut String); 11] = [
        (
            &["CALLLOCK_LLM_BASE_URL", "OPENAI_BASE_URL"],
            &mut cfg.llm.base_url,
        ),
        (&["CALLLOCK_LLM_MODEL"], &mut cfg.llm.model),
        (&["CALLLOCK_LLM_KIND"], &mut cfg.llm.kind),
        (
            &["CALLLOCK_LLM_API_KEY", "OPENAI_API_KEY"],
            &mut cfg.llm.api_key,
        ),
        (&["V2_BACKEND_URL"], &mut cfg.backend.url),
        (&["V2_API_KEY"], &mut cfg.backend.api_key),
        (&["DASHBOARD_JOBS_URL"], &mut cfg.dashboard.jobs_url),
        (&["DASHBOARD_CALLS_URL"], &mut cfg.dashboard.calls_url),
        (&["DASHBOARD_ALERTS_URL"], &mut cfg.dashboard.alerts_url),
        (
            &["DASHBOARD_WEBHOOK_SECRET"],
            &mut cfg.dashboard.webhook_secret,
        ),
        (&["DASHBOARD_USER_EMAIL"], &mut cfg.dashboard.user_email),
    ];
    for (keys, target) in text_vars {
        if let Some(v) = keys.iter().find_map(|k| get(k)) {
            *target = v;
        }
    }
    if get("V2_BACKEND_URL").is_some() {
        cfg.backend.kind = BackendKind::V2;
    }
    match get("CALLLOCK_BACKEND").as_deref() {
        None => {}
        Some("embedded") => cfg.backend.kind = BackendKind::Embedded,
        Some("v2") => cfg.backend.kind = BackendKind::V2,
        Some(other) => problems.push(format!(
            "CALLLOCK_BACKEND={other:?} must be \"embedded\" or \"v2\""
        )),
    }
    let b = &mut cfg.business;
    if let Some(v) = get("CALLLOCK_COMPANY_NAME") {
        b.company_name = v;
    }
    if let Some(v) = get("CALLLOCK_SERVICE_AREA_ZIP_PREFIXES") {
        b.service_area_zip_prefixes = v.split(',').map(|s| s.trim().to_string()).collect();
    }
    if let Some(v) = get("CALLLOCK_TIMEZONE") {
        b.timezone = v;
    }
    if let Some(v) = get("CALLLOCK_BUSINESS_DAYS") {
        b.business_days = v.split(',').map(|s| s.trim().to_string()).collect();
    }
    if let Some(v) = get("CALLLOCK_GREETING") {
        b.greeting = v;
    }
    for (key, target) in [
        ("CALLLOCK_OPEN_HOUR", &mut b.open_hour),
        ("CALLLOCK_CLOSE_HOUR", &mut b.close_hour),
        ("CALLLOCK_DIAGNOSTIC_PRICE", &mut b.diagnostic_price),
    ] {
        if let Some(v) = get(key) {
            match v.trim().parse::<u32>() {
                Ok(x) => *target = x,
                Err(_) => problems.push(format!("{key}={v:?} is not a whole number")),
            }
        }
    }

    if let Err(e) = cfg.business.validate() {
        problems.extend(e.0.into_iter().map(|p| format!("business.{p}")));
    }
    let e = &cfg.engine;
    for (name, v) in [
        ("engine.buffer_debounce_s", e.buffer_debounce_s),
        ("engine.buffer_max_s", e.buffer_max_s),
        ("engine.end_call_grace_s", e.end_call_grace_s),
        ("engine.end_call_max_wait_s", e.end_call_max_wait_s),
        ("engine.idle_prompt_s", e.idle_prompt_s),
        ("engine.filler_after_s", e.filler_after_s),
        ("sim.llm_latency_s", cfg.sim.llm_latency_s),
        ("sim.tool_latency_s", cfg.sim.tool_latency_s),
    ] {
        if !(v.is_finite() && (0.0..=600.0).contains(&v)) {
            problems.push(format!("{name} = {v} must be between 0 and 600 seconds"));
        }
    }
    if !(cfg.sim.speech_chars_per_s.is_finite() && cfg.sim.speech_chars_per_s > 0.0) {
        problems.push(format!(
            "sim.speech_chars_per_s = {} must be a positive number",
            cfg.sim.speech_chars_per_s
        ));
    }
    serve::apply_env(&mut cfg.serve, &mut cfg.twilio, &get, &mut problems);
    problems.extend(serve::problems(&cfg.serve, &cfg.twilio));
    speech::apply_env(&mut cfg.deepgram, &get);
    problems.extend(speech::problems(&cfg.deepgram));
    speech::apply_inworld_env(&mut cfg.inworld, &get);
    problems.extend(speech::inworld_problems(&cfg.inworld));
    problems.extend(speech::tts_problems(&cfg.tts));
    local_speech::apply_env(&mut cfg.speech, &get);
    problems.extend(local_speech::problems(&cfg.speech));
    recording::apply_env(&mut cfg.recording, &get, &mut problems);
    problems.extend(recording::problems(&cfg.recording));
    problems.extend(vendor_problems(&cfg));
    problems.extend(llm_kind_problems(&cfg));
    if problems.is_empty() {
        Ok(cfg)
    } else {
        Err(fail(problems))
    }
}

/// What is wrong with `llm.kind`, in plain words.
fn llm_kind_problems(cfg: &Config) -> Vec<String> {
    let mut out = Vec::new();
    match cfg.llm.kind.trim() {
        "openai" => {}
        "adk" if !cfg!(feature = "adk") => out.push(
            "llm.kind = \"adk\" (CALLLOCK_LLM_KIND) needs the ADK bridge, which this build \
             leaves out: build with `cargo build --release --features calllock/adk`"
                .into(),
        ),
        "adk" if !cfg.llm.enabled() => out.push(
            "llm.kind = \"adk\" (CALLLOCK_LLM_KIND) needs a model: set llm.base_url \
             (CALLLOCK_LLM_BASE_URL) or OPENAI_API_KEY"
                .into(),
        ),
        "adk" => {}
        other => out.push(format!(
            "llm.kind (CALLLOCK_LLM_KIND) = {other:?} must be \"openai\" or \"adk\""
        )),
    }
    out
}

/// What is wrong with the vendor sections, in plain words.
fn vendor_problems(cfg: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let url_ok = |u: &str| u.starts_with("http://") || u.starts_with("https://");
    let mut url = |name: &str, v: &str, required: bool| {
        let v = v.trim();
        if v.is_empty() {
            if required {
                out.push(format!("{name} is required"));
            }
        } else if !url_ok(v) {
            out.push(format!("{name} = {v:?} must be an http:// or https:// URL"));
        }
    };
    url("llm.base_url", &cfg.llm.base_url, false);
    url(
        "backend.url (V2_BACKEND_URL)",
        &cfg.backend.url,
        cfg.backend.kind == BackendKind::V2,
    );
    let d = &cfg.dashboard;
    let any_dashboard =
        !d.jobs_url.is_empty() || !d.calls_url.is_empty() || !d.alerts_url.is_empty();
    url(
        "dashboard.jobs_url (DASHBOARD_JOBS_URL)",
        &d.jobs_url,
        any_dashboard,
    );
    url(
        "dashboard.calls_url (DASHBOARD_CALLS_URL)",
        &d.calls_url,
        any_dashboard,
    );
    url(
        "dashboard.alerts_url (DASHBOARD_ALERTS_URL)",
        &d.alerts_url,
        false,
    );
    if any_dashboard && d.webhook_secret.is_empty() {
        out.push(
            "dashboard.webhook_secret (DASHBOARD_WEBHOOK_SECRET) is required when the dashboard \
             URLs are set"
                .into(),
        );
    }
    if cfg.llm.enabled() && cfg.llm.model.trim().is_empty() {
        out.push("llm.model must not be empty".into());
    }
    let hedge = cfg.llm.hedge_after_s;
    if !(hedge.is_finite() && (hedge == 0.0 || (0.1..=30.0).contains(&hedge))) {
        out.push(format!(
            "llm.hedge_after_s = {hedge} must be 0 (never) or between 0.1 and 30 seconds"
        ));
    }
    if cfg.llm.breaker_failures == 0 {
        out.push("llm.breaker_failures must be at least 1".into());
    }
    let cooldown = cfg.llm.breaker_cooldown_s;
    if !(cooldown.is_finite() && (0.0..=3600.0).contains(&cooldown)) {
        out.push(format!(
            "llm.breaker_cooldown_s = {cooldown} must be between 0 and 3600 seconds"
        ));
    }
    for (name, v, lo, hi) in [
        (
            "llm.first_token_budget_s",
            cfg.llm.first_token_budget_s,
            0.1,
            30.0,
        ),
        ("backend.timeout_s", cfg.backend.timeout_s, 0.1, 120.0),
        ("dashboard.timeout_s", cfg.dashboard.timeout_s, 0.1, 120.0),
        (
            "outbox.backoff_base_s",
            cfg.outbox.backoff_base_s,
            0.01,
            3600.0,
        ),
        (
            "outbox.backoff_max_s",
            cfg.outbox.backoff_max_s,
            0.01,
            86400.0,
        ),
        ("outbox.poll_s", cfg.outbox.poll_s, 0.01, 3600.0),
        ("outbox.lease_s", cfg.outbox.lease_s, 1.0, 86400.0),
        ("instance_lease_s", cfg.instance_lease_s, 0.5, 3600.0),
    ] {
        if !(v.is_finite() && (lo..=hi).contains(&v)) {
            out.push(format!(
                "{name} = {v} must be between {lo} and {hi} seconds"
            ));
        }
    }
    if cfg.instance.trim().is_empty() {
        out.push("instance must not be empty".into());
    }
    out
}

/// A commented example configuration (printed by `calllock config --example`).
pub const EXAMPLE: &str = r#"# CallLock configuration. Every key is optional; these are the defaults.
# Environment overrides: CALLLOCK_DATABASE, CALLLOCK_COMPANY_NAME,
# CALLLOCK_SERVICE_AREA_ZIP_PREFIXES (comma-separated), CALLLOCK_TIMEZONE,
# CALLLOCK_OPEN_HOUR, CALLLOCK_CLOSE_HOUR, CALLLOCK_BUSINESS_DAYS,
# CALLLOCK_DIAGNOSTIC_PRICE, CALLLOCK_GREETING, CALLLOCK_BUFFER_DEBOUNCE_S, …

# database = "/home/you/.local/share/calllock/calllock.db"
# Several processes may share one database (PostgreSQL). Each names itself
# "<instance>:<pid>:<start>" and writes a heartbeat; a live call is taken
# over by another process only when its owner wrote no heartbeat for
# instance_lease_s (it crashed). CALLLOCK_INSTANCE, CALLLOCK_INSTANCE_LEASE_S.
# instance = "<host name>"
instance_lease_s = 30.0

[business]
company_name = "ACE Cooling"
city = "Austin, Texas"
trade = "HVAC"
service_area_zip_prefixes = ["787"]
timezone = "America/Chicago"
open_hour = 9
close_hour = 18
business_days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
diagnostic_price = 89
greeting = "Thanks for calling {company}! How can I help you today?"

[engine]
buffer_debounce_s = 1.5
buffer_max_s = 5.0
end_call_grace_s = 0.5
end_call_max_wait_s = 10.0
idle_prompt_s = 10.0       # "are you still there?" after this much silence (0 = off)
idle_max_prompts = 2       # then goodbye and hang up
filler_after_s = 0.8       # a phone reply not begun this long after the caller stopped speaking: "One moment." first (0 = off)

[sim]
llm_latency_s = 0.6
tool_latency_s = 0.3
speech_chars_per_s = 15.0

# The conversation LLM: any OpenAI-compatible server. Off while base_url
# and api_key are empty (the scripted responder speaks). Env:
# CALLLOCK_LLM_BASE_URL / OPENAI_BASE_URL, CALLLOCK_LLM_MODEL,
# CALLLOCK_LLM_API_KEY / OPENAI_API_KEY.
[llm]
base_url = ""                # e.g. "http://127.0.0.1:8080/v1" (llama.cpp)
model = "gpt-4o-mini"
api_key = ""
first_token_budget_s = 2.5   # then the scripted line is spoken instead
hedge_after_s = 1.0          # a reply failed or silent this long is asked again; first to speak wins (0: never)
breaker_failures = 3         # failed replies in a row (any call) that open the breaker
breaker_cooldown_s = 30.0    # open: the scripted line at once, this long
kind = "openai"              # "adk": a Google ADK agent phrases replies (build with --features calllock/adk)

# The booking backend: "embedded" (this database) or "v2" (HTTP, SPEC §6).
# Env: CALLLOCK_BACKEND, V2_BACKEND_URL (implies v2), V2_API_KEY.
[backend]
kind = "embedded"
url = ""
api_key = ""
timeout_s = 10.0

# Dashboard webhooks; off while jobs_url is empty. Env: DASHBOARD_JOBS_URL,
# DASHBOARD_CALLS_URL, DASHBOARD_ALERTS_URL, DASHBOARD_WEBHOOK_SECRET,
# DASHBOARD_USER_EMAIL.
[dashboard]
jobs_url = ""
calls_url = ""
alerts_url = ""
webhook_secret = ""
user_email = ""
timeout_s = 15.0

# Undelivered post-call work is retried until accepted (D-17).
[outbox]
backoff_base_s = 5.0         # doubled per failed attempt …
backoff_max_s = 300.0        # … up to this
poll_s = 2.0
lease_s = 120.0

# `calllock serve`: Twilio calls this server. Env: PORT, CALLLOCK_PUBLIC_URL
# (or FLY_APP_NAME), CALLLOCK_MAX_CALLS, CALLLOCK_PLAYOUT_THREADS, CALLLOCK_METRICS_TOKEN,
# CALLLOCK_API_TOKEN, CALLLOCK_OPERATOR_PASSWORD_HASH.
[serve]
port = 8765
bind = "127.0.0.1"           # "0.0.0.0" needs twilio.auth_token (or --allow-unsigned)
public_url = ""              # e.g. "https://calllock.example.com"; empty: the Host header
trusted_proxy = false        # honour X-Forwarded-Proto/Host/For (only behind your own proxy)
max_calls = 1000             # beyond: an apology and a callback
shutdown_grace_s = 120.0     # live calls may finish this long after SIGTERM
output_lead_ms = 100         # agent audio queued at Twilio ahead of playback
output_frame_ms = 40         # agent audio per media message: 20, 40, 60, 80 or 100
playout_threads = 0          # threads pacing agent audio, ~1,500 calls each; 0: half the cores
vad = "auto"                 # "model" (real voices), "codec" (calllock dial), auto: by the STT
metrics_token = ""           # set: GET /metrics needs "Authorization: Bearer <token>"
api_token = ""               # set: the JSON API (/api/…) answers "Authorization: Bearer <token>"
operator_password_hash = ""  # argon2 PHC string; else `calllock operator password` (in the database)
sign_in_window_s = 60.0      # sign-in attempts count this long (the owner waits at most this after a flood)
sign_in_failures_per_address = 5   # failed sign-ins per client address per window
sign_in_attempts_global = 30 # sign-in attempts per window from everyone together (the back-off)

# Twilio. Env: TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, CALLLOCK_TWILIO_API_URL.
[twilio]
account_sid = ""
auth_token = ""              # set: every request must carry a valid X-Twilio-Signature
api_url = "https://api.twilio.com"
mark_interval_ms = 200       # what the caller heard is known to this precision (whole output frames)
hangup_wait_s = 5.0          # wait for the goodbye to finish playing, at most

# Deepgram live speech-to-text: set api_key to hear callers through it
# (empty: the offline speech codec). Env: DEEPGRAM_API_KEY,
# CALLLOCK_DEEPGRAM_URL, CALLLOCK_DEEPGRAM_MODEL.
[deepgram]
api_key = ""
url = "wss://api.deepgram.com"
model = "nova-3"
endpointing_ms = 500         # silence that ends an utterance
utterance_end_ms = 1000      # ends it when noise keeps endpointing from firing
tts_url = "https://api.deepgram.com"  # Aura, the fallback voice (same key)
tts_voice = "aura-2-helena-en"

# Inworld text-to-speech, the agent's voice: set api_key to speak through it
# (with Aura as the fallback when [deepgram] has a key; the offline voice
# always last). Env: INWORLD_API_KEY, CALLLOCK_INWORLD_URL,
# INWORLD_VOICE_ID, INWORLD_MODEL.
[inworld]
api_key = ""
url = "https://api.inworld.ai"
voice_id = "Ashley"
model = "inworld-tts-1.5-max"

# How a line falls back from one voice to the next.
[tts]
first_audio_timeout_s = 5.0  # then the fallback voice says the line alone
hedge_after_s = 0.5          # primary this late: the fallback is asked too; the first to speak says it
stall_after_s = 1.0          # a gap this long after the first audio: the fallback says the rest
breaker_failures = 3         # failed lines in a row (any call) that open the breaker
breaker_cooldown_s = 60.0    # open: every line goes to the fallback this long

# Both sides of every served call as a WAV file (left the caller, right the
# agent) the dashboard plays. Many places require telling callers a call is
# recorded: say so in business.greeting, or turn this off. Env:
# CALLLOCK_RECORDING (on/off), CALLLOCK_RECORDINGS_DIR.
[recording]
enabled = true
dir = ""                     # empty: recordings/ beside the SQLite database
keep_days = 90               # older recordings are deleted; 0 keeps them forever
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_load_without_a_file() {
        let c = load_from(None, &env(&[("CALLLOCK_DATABASE", "/tmp/x.db")])).unwrap();
        assert_eq!(c.business.company_name, "ACE Cooling");
        assert_eq!(c.database, PathBuf::from("/tmp/x.db"));
    }

    #[test]
    fn the_output_frame_is_whole_20_ms_frames_up_to_100() {
        let twilio = TwilioSection::default();
        for ms in [0, 10, 30, 120] {
            let s = ServeSection {
                output_frame_ms: ms,
                ..ServeSection::default()
            };
            let p = serve::problems(&s, &twilio).join("; ");
            assert!(
                p.contains(&format!("serve.output_frame_ms = {ms} must be")),
                "{ms}: {p}"
            );
        }
        for ms in [20, 40, 60, 80, 100] {
            let s = ServeSection {
                output_frame_ms: ms,
                ..ServeSection::default()
            };
            assert!(serve::problems(&s, &twilio).is_empty(), "{ms}");
        }
    }

    #[test]
    fn the_llm_kind_is_checked() {
        let e = load_from(None, &env(&[("CALLLOCK_LLM_KIND", "gpt")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be \"openai\" or \"adk\""), "{e}");
        let adk = load_from(None, &env(&[("CALLLOCK_LLM_KIND", "adk")]));
        let e = adk.unwrap_err().to_string();
        if cfg!(feature = "adk") {
            assert!(e.contains("needs a model"), "{e}");
        } else {
            assert!(e.contains("--features calllock/adk"), "{e}");
        }
        let with_model = load_from(
            None,
            &env(&[
                ("CALLLOCK_LLM_KIND", "adk"),
                ("CALLLOCK_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
            ]),
        );
        assert_eq!(with_model.is_ok(), cfg!(feature = "adk"));
    }

    #[test]
    fn example_parses_to_the_defaults() {
        let c: Config = toml::from_str(EXAMPLE).unwrap();
        assert_eq!(c.business, BusinessProfile::default());
        assert_eq!(c.engine, EngineSection::default());
        assert_eq!(c.sim, SimSection::default());
        assert_eq!(c.llm, LlmSection::default());
        assert_eq!(c.backend, BackendSection::default());
        assert_eq!(c.dashboard, DashboardSection::default());
        assert_eq!(c.outbox, OutboxSection::default());
        assert_eq!(c.serve, ServeSection::default());
        assert_eq!(c.twilio, TwilioSection::default());
        assert_eq!(c.deepgram, DeepgramSection::default());
        assert_eq!(c.inworld, InworldSection::default());
        assert_eq!(c.tts, TtsSection::default());
        assert_eq!(c.recording, RecordingSection::default());
    }

    #[test]
    fn the_voices_are_configured_by_the_reference_names_and_checked() {
        let c = load_from(
            None,
            &env(&[
                ("INWORLD_API_KEY", " iw-key "),
                ("CALLLOCK_INWORLD_URL", "http://127.0.0.1:9"),
                ("INWORLD_VOICE_ID", "Dennis"),
                ("INWORLD_MODEL", "inworld-tts-1"),
                ("CALLLOCK_DEEPGRAM_TTS_URL", "http://127.0.0.1:10"),
                ("DEEPGRAM_TTS_VOICE", "aura-2-thalia-en"),
            ]),
        )
        .unwrap();
        assert!(c.inworld.enabled());
        assert!(!Config::default().inworld.enabled(), "off without a key");
        assert_eq!(
            (c.inworld.api_key.as_str(), c.inworld.url.as_str()),
            ("iw-key", "http://127.0.0.1:9")
        );
        assert_eq!(
            (c.inworld.voice_id.as_str(), c.inworld.model.as_str()),
            ("Dennis", "inworld-tts-1")
        );
        assert_eq!(c.deepgram.tts_url, "http://127.0.0.1:10");
        assert_eq!(c.deepgram.tts_voice, "aura-2-thalia-en");
        let shown = c.to_toml_redacted();
        assert!(!shown.contains("iw-key"), "{shown}");
        let err = load_from(
            None,
            &env(&[
                ("CALLLOCK_INWORLD_URL", "wss://api.inworld.ai"),
                ("CALLLOCK_DEEPGRAM_TTS_URL", "api.deepgram.com"),
                ("INWORLD_VOICE_ID", " "),
            ]),
        )
        .unwrap_err();
        for name in [
            "CALLLOCK_INWORLD_URL",
            "CALLLOCK_DEEPGRAM_TTS_URL",
            "INWORLD_VOICE_ID",
        ] {
            assert!(
                err.problems.iter().any(|p| p.contains(name)),
                "{name}: {:?}",
                err.problems
            );
        }
        let bad: Result<Config, _> =
            toml::from_str("[tts]\nbreaker_failures = 0\nfirst_audio_timeout_s = 0.0\n");
        let bad = bad.unwrap();
        let p = speech::tts_problems(&bad.tts);
        assert_eq!(p.len(), 2, "{p:?}");
    }

    #[test]
    fn deepgram_is_configured_by_the_reference_names_and_checked() {
        let c = load_from(
            None,
            &env(&[
                ("DEEPGRAM_API_KEY", " dg-key "),
                ("CALLLOCK_DEEPGRAM_URL", "ws://127.0.0.1:9"),
                ("CALLLOCK_DEEPGRAM_MODEL", "nova-2-phonecall"),
            ]),
        )
        .unwrap();
        assert!(c.deepgram.enabled());
        assert_eq!(c.deepgram.api_key, "dg-key");
        assert_eq!(c.deepgram.url, "ws://127.0.0.1:9");
        assert_eq!(c.deepgram.model, "nova-2-phonecall");
        assert!(!Config::default().deepgram.enabled(), "off without a key");
        let err = load_from(
            None,
            &env(&[("CALLLOCK_DEEPGRAM_URL", "https://api.deepgram.com")]),
        )
        .unwrap_err();
        assert!(
            err.problems
                .iter()
                .any(|p| p.contains("CALLLOCK_DEEPGRAM_URL")),
            "{err:?}"
        );
    }

    #[test]
    fn reference_variable_names_configure_the_vendors() {
        let c = load_from(
            None,
            &env(&[
                ("OPENAI_API_KEY", "sk-x"),
                ("V2_BACKEND_URL", "http://127.0.0.1:9/"),
                ("V2_API_KEY", "k"),
                ("DASHBOARD_JOBS_URL", "http://127.0.0.1:9/jobs"),
                ("DASHBOARD_CALLS_URL", "http://127.0.0.1:9/calls"),
                ("DASHBOARD_WEBHOOK_SECRET", "s"),
            ]),
        )
        .unwrap();
        assert!(c.llm.enabled());
        assert_eq!(c.llm.effective_base_url(), OPENAI_BASE_URL);
        assert_eq!(c.backend.kind, BackendKind::V2);
        assert_eq!(c.backend.api_key, "k");
        assert!(c.dashboard.enabled());
        assert!(!Config::default().llm.enabled());
        assert!(!Config::default().dashboard.enabled());
    }

    #[test]
    fn half_configured_vendors_are_named() {
        let err = load_from(
            None,
            &env(&[
                ("CALLLOCK_BACKEND", "v2"),
                ("DASHBOARD_JOBS_URL", "ftp://x"),
                ("CALLLOCK_LLM_BASE_URL", "localhost:8080"),
            ]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("backend.url (V2_BACKEND_URL) is required"),
            "{err}"
        );
        assert!(err.contains("must be an http:// or https:// URL"), "{err}");
        assert!(err.contains("webhook_secret"), "{err}");
        assert!(err.contains("llm.base_url"), "{err}");
    }

    #[test]
    fn every_problem_is_listed_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            "[business]\ntimezone = \"Nowhere/Land\"\nopen_hour = 30\n[engine]\nbuffer_max_s = -1\n",
        )
        .unwrap();
        let err = load_from(Some(&p), &env(&[("CALLLOCK_CLOSE_HOUR", "late")])).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("Nowhere/Land"), "{text}");
        assert!(text.contains("open_hour"), "{text}");
        assert!(text.contains("buffer_max_s"), "{text}");
        assert!(text.contains("CALLLOCK_CLOSE_HOUR"), "{text}");
        assert!(err.problems.len() >= 4, "{text}");
    }

    #[test]
    fn unknown_keys_and_bad_toml_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "[business]\ncompany = \"x\"\n").unwrap();
        let err = load_from(Some(&p), &[]).unwrap_err().to_string();
        assert!(err.contains("company"), "{err}");
        std::fs::write(&p, "[business\n").unwrap();
        assert!(load_from(Some(&p), &[]).is_err());
        let missing = dir.path().join("nope.toml");
        let err = load_from(Some(&missing), &[]).unwrap_err().to_string();
        assert!(err.contains("cannot read"), "{err}");
    }
}
