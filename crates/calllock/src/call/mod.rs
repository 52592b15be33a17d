//! One call: driving it, and what it leaves behind.
//!
//! - [`driver`]: the sans-IO engine run against a backend and a responder
//!   in virtual or real time (`chat`, `demo`, `replay`, tests), and the
//!   replay script's items;
//! - [`voice_call`]: the same engine as the brain of a real-time voice
//!   pipeline (`serve`, `voice`, the harness);
//! - [`outcome`]: how a call ended and what it left (the input of
//!   post-call);
//! - [`journal`]: the durable event log of a live call, and rebuilding a
//!   call a crash interrupted;
//! - [`latency`]: where each answered turn's time went;
//! - [`record`]: the classified record of a finished call;
//! - [`delivery`]: post-call processing and the durable outbox.

pub mod delivery;
pub mod driver;
pub mod journal;
pub mod latency;
pub mod outcome;
pub mod record;
pub mod voice_call;
