//! The CallLock application: configuration, the call driver that runs the
//! conversation engine against a backend and a responder (virtual or real
//! time), replay scripts, demo callers, post-call records and terminal
//! output. The `calllock` binary is a thin CLI over this library.

pub mod api;
pub mod config;
pub mod console;
pub mod delivery;
pub mod demo;
pub mod dial;
pub mod display;
#[cfg(feature = "testing")]
pub mod harness;
pub mod instance;
pub mod journal;
pub mod latency;
pub mod local_speech;
pub mod logging;
pub mod metrics;
pub mod operator;
pub mod ops;
pub mod record;
pub mod recording;
pub mod script;
pub mod serve;
pub mod sim;
pub mod transcribe;
pub mod voice_call;
pub mod web;
pub mod wiring;
