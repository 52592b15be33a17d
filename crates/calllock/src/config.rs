//! Configuration: one TOML file plus `CALLLOCK_…` environment overrides,
//! validated at startup with one message that lists every problem.
//!
//! Lookup order for the file: `--config PATH`, else `$CALLLOCK_CONFIG`, else
//! `./calllock.toml` if it exists, else the embedded defaults (the HVAC
//! company of SPEC.md). Nothing is required: the defaults run offline.

use agent::engine::EngineConfig;
use agent::BusinessProfile;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Timing of the conversation engine (seconds).
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
        }
    }
}

impl EngineSection {
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            buffer_debounce_s: self.buffer_debounce_s,
            buffer_max_s: self.buffer_max_s,
            end_call_grace_s: self.end_call_grace_s,
            end_call_max_wait_s: self.end_call_max_wait_s,
            idle_prompt_s: self.idle_prompt_s,
            idle_max_prompts: self.idle_max_prompts,
        }
    }
}

/// How simulated calls (chat, demo, replay) model time.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// SQLite database file (created on first use).
    pub database: PathBuf,
    pub business: BusinessProfile,
    pub engine: EngineSection,
    pub sim: SimSection,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            database: default_database(),
            business: BusinessProfile::default(),
            engine: EngineSection::default(),
            sim: SimSection::default(),
        }
    }
}

/// `$XDG_DATA_HOME/calllock/calllock.db`, else `~/.local/share/…`, else
/// `./calllock.db`.
pub fn default_database() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(d).join("calllock").join("calllock.db");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(h)
            .join(".local/share/calllock")
            .join("calllock.db");
    }
    PathBuf::from("calllock.db")
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
    if problems.is_empty() {
        Ok(cfg)
    } else {
        Err(fail(problems))
    }
}

/// A commented example configuration (printed by `calllock config --example`).
pub const EXAMPLE: &str = r#"# CallLock configuration. Every key is optional; these are the defaults.
# Environment overrides: CALLLOCK_DATABASE, CALLLOCK_COMPANY_NAME,
# CALLLOCK_SERVICE_AREA_ZIP_PREFIXES (comma-separated), CALLLOCK_TIMEZONE,
# CALLLOCK_OPEN_HOUR, CALLLOCK_CLOSE_HOUR, CALLLOCK_BUSINESS_DAYS,
# CALLLOCK_DIAGNOSTIC_PRICE, CALLLOCK_GREETING, CALLLOCK_BUFFER_DEBOUNCE_S, …

# database = "/home/you/.local/share/calllock/calllock.db"

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

[sim]
llm_latency_s = 0.6
tool_latency_s = 0.3
speech_chars_per_s = 15.0
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
    fn example_parses_to_the_defaults() {
        let c: Config = toml::from_str(EXAMPLE).unwrap();
        assert_eq!(c.business, BusinessProfile::default());
        assert_eq!(c.engine, EngineSection::default());
        assert_eq!(c.sim, SimSection::default());
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
