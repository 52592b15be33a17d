//! The voice call's journal: the engine's log written down as it grows
//! (see [`crate::call::journal::log`]), the session when it changed, and
//! where each answered turn's time went.

use crate::call::journal::LogWriter;
use serde_json::Value;
use voice::history::EventLog;

/// Writes a voice call into its durable journal (see [`crate::call::journal`]).
pub(super) struct VoiceJournal {
    journal: crate::call::journal::Journal,
    rows: LogWriter,
    snapshots: crate::call::journal::SessionSnapshots,
}

impl VoiceJournal {
    pub(super) fn new(journal: crate::call::journal::Journal) -> Self {
        VoiceJournal {
            journal,
            rows: LogWriter::default(),
            snapshots: Default::default(),
        }
    }

    /// Write what the call's log gained since the last call.
    pub(super) fn write(&mut self, log: &EventLog) {
        self.rows.write(&self.journal, log);
    }

    /// One measured turn, written at `at` (a `latency` event).
    pub(super) fn latency(&self, at: f64, t: &crate::call::latency::TurnLatency) {
        let data = serde_json::to_value(t).unwrap_or(Value::Null);
        self.journal.record(at, "latency", data);
    }

    pub(super) fn session(&mut self, at: f64, session: &agent::Session) {
        if let Some(snap) = self.snapshots.changed(session) {
            self.journal.record_json(at, "session", snap);
        }
    }
}
