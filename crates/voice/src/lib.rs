//! # voice — the real-time pipeline
//!
//! Frames, stages, the pipeline runner, turn epochs and the cancellation
//! tree, and the per-call history event log with its projections. Knows
//! nothing of HVAC, states or business rules.

pub mod accountant;
pub mod history;
