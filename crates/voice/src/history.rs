//! The per-call history event log (to be written).
