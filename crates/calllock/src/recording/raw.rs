//! What a call's recording hands the writer thread ([`Msg`]), for which
//! side, and where each side's raw samples live while the call is on.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// 8 kHz µ-law: bytes (samples) per second of one side.
pub(crate) const RATE: u64 = 8000;
/// What a call hands the writer thread.
#[derive(Debug)]
pub(crate) enum Msg {
    /// `bytes` of `side`, starting `at` samples into the call.
    Write {
        call: Arc<str>,
        side: Side,
        at: u64,
        bytes: Vec<u8>,
    },
    /// Samples `from..to` of `side` were never played: silence them.
    Silence {
        call: Arc<str>,
        side: Side,
        from: u64,
        to: u64,
    },
    /// The call is over: merge its sides into `<call>.wav`, then answer.
    Finish {
        call: Arc<str>,
        done: Option<tokio::sync::oneshot::Sender<()>>,
    },
}

/// One side of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Caller,
    Agent,
}

impl Side {
    pub(crate) fn file_suffix(self) -> &'static str {
        match self {
            Side::Caller => "caller.ulaw",
            Side::Agent => "agent.ulaw",
        }
    }
}

/// A call id that is safe as a file name (`CA…` call SIDs, local ids).
pub fn usable_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

pub(crate) fn raw_path(dir: &Path, call: &str, side: Side) -> PathBuf {
    dir.join(format!("{call}.{}", side.file_suffix()))
}
