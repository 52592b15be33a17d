//! The CallLock application: configuration, the call driver that runs the
//! conversation engine against a backend and a responder (virtual or real
//! time), replay scripts, demo callers, post-call records and terminal
//! output. The `calllock` binary is a thin CLI over this library.

pub mod api;
pub mod call;
pub mod cli;
pub mod config;
pub mod dial;
#[cfg(feature = "testing")]
pub mod harness;
pub mod instance;
pub mod local_speech;
pub mod logging;
pub mod metrics;
#[cfg(feature = "testing")]
pub mod one_log;
pub mod operator;
pub mod recording;
pub mod serve;
pub mod web;
pub mod wiring;
