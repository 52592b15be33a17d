//! # voice — the real-time pipeline
//!
//! Frames ([`frames`]), stage inboxes ([`inbox`]), stages and their runner
//! ([`stage`]), pipelines with a lifecycle ([`pipeline`]), turn epochs and
//! the cancellation tree ([`scope`]), observers ([`observe`]), outbound pacing jitter ([`pacing`]),
//! where a turn's time goes ([`latency`]), and the interruption accountant
//! ([`accountant`]), whose outcomes go into the per-call event log
//! ([`history`], its own crate, re-exported here). Knows nothing of HVAC,
//! states or business rules.

pub mod accountant;
pub mod floor;
pub mod frames;
pub mod inbox;
pub mod latency;
pub mod observe;
pub mod offline;
pub mod pacing;
pub mod passthrough;
pub mod pipeline;
pub mod scope;
pub mod stage;
pub mod stages;
pub mod telephone;
#[cfg(feature = "testing")]
pub mod testkit;

/// The per-call event log (the `history` crate).
pub use ::history;

pub use frames::{Audio, ControlFrame, Data, DataFrame, Epoch, Frame, SystemFrame, UtteranceId};
pub use pipeline::{Lifecycle, Pipeline, PipelineBuilder, StopReport};
pub use scope::CallScope;
pub use stage::{Ctx, Direction, Stage};
