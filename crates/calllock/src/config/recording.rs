//! The `[recording]` section: both sides of every served call kept as a
//! WAV file the dashboard plays ([`crate::recording`]).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Call recordings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecordingSection {
    /// Record every call `calllock serve` answers (Twilio and the browser
    /// phone) (env `CALLLOCK_RECORDING`: `on`/`off`). Many places require
    /// telling callers that a call is recorded: say it in
    /// `business.greeting`, or turn this off.
    pub enabled: bool,
    /// Where recordings are kept (env `CALLLOCK_RECORDINGS_DIR`). Empty:
    /// `recordings/` beside the SQLite database, or in CallLock's data
    /// directory when the database is a PostgreSQL URL.
    pub dir: String,
    /// Recordings older than this are deleted (0: kept forever).
    pub keep_days: u32,
}

impl Default for RecordingSection {
    fn default() -> Self {
        RecordingSection {
            enabled: true,
            dir: String::new(),
            keep_days: 90,
        }
    }
}

impl RecordingSection {
    /// The directory recordings go to, for this `database`.
    pub fn dir_for(&self, database: &Path) -> PathBuf {
        let dir = self.dir.trim();
        if !dir.is_empty() {
            return PathBuf::from(dir);
        }
        let db = database.to_string_lossy();
        if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            return super::paths::default_database()
                .parent()
                .map_or_else(|| PathBuf::from("recordings"), |d| d.join("recordings"));
        }
        match database.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.join("recordings"),
            _ => PathBuf::from("recordings"),
        }
    }
}

/// Environment overrides of this section.
pub(super) fn apply_env(
    r: &mut RecordingSection,
    get: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<String>,
) {
    if let Some(v) = get("CALLLOCK_RECORDING") {
        match v.trim().to_ascii_lowercase().as_str() {
            "on" | "true" | "1" | "yes" => r.enabled = true,
            "off" | "false" | "0" | "no" => r.enabled = false,
            _ => problems.push(format!(
                "CALLLOCK_RECORDING={v:?} must be \"on\" or \"off\""
            )),
        }
    }
    if let Some(v) = get("CALLLOCK_RECORDINGS_DIR") {
        r.dir = v.trim().to_string();
    }
}

/// What is wrong with this section, in plain words.
pub(super) fn problems(r: &RecordingSection) -> Vec<String> {
    let mut out = Vec::new();
    if r.keep_days > 36_500 {
        out.push(format!(
            "recording.keep_days = {} must be at most 36500 (0: kept forever)",
            r.keep_days
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recordings_sit_beside_the_database_unless_told() {
        let r = RecordingSection::default();
        assert_eq!(
            r.dir_for(Path::new("/var/lib/calllock/calllock.db")),
            PathBuf::from("/var/lib/calllock/recordings")
        );
        assert_eq!(r.dir_for(Path::new("x.db")), PathBuf::from("recordings"));
        let pg = r.dir_for(Path::new("postgres://u:p@localhost/calllock"));
        assert!(pg.ends_with("calllock/recordings"), "{}", pg.display());
        let told = RecordingSection {
            dir: " /srv/rec ".into(),
            ..r
        };
        assert_eq!(told.dir_for(Path::new("x.db")), PathBuf::from("/srv/rec"));
    }

    #[test]
    fn the_switch_is_read_from_the_environment_and_checked() {
        let mut r = RecordingSection::default();
        let mut problems = Vec::new();
        let get = |k: &str| (k == "CALLLOCK_RECORDING").then(|| "Off".to_string());
        apply_env(&mut r, &get, &mut problems);
        assert!(!r.enabled && problems.is_empty());
        let get = |k: &str| (k == "CALLLOCK_RECORDING").then(|| "sometimes".to_string());
        apply_env(&mut r, &get, &mut problems);
        assert!(problems[0].contains("CALLLOCK_RECORDING"), "{problems:?}");
    }
}
