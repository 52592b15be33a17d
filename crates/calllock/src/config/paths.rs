//! Where CallLock keeps its files when the configuration does not say.

use std::path::PathBuf;

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
