//! The terminal commands beyond the server, and what they print: the
//! binary (`main.rs`) parses arguments and calls into these.
//!
//! - [`console`]: `chat` (type as the caller) and `voice` (a phone call
//!   over loopback);
//! - [`demo`]: `demo` (scripted callers against the database) and the
//!   engine of `replay`;
//! - [`script`]: the replay file format;
//! - [`ops`]: `doctor`, `calls`, `transcript`, `agenda`, `outbox` and the
//!   other operator commands;
//! - [`display`]: terminal output (live call lines, summaries, agenda);
//! - [`transcribe`]: `transcribe` (local speech on a WAV file).

pub mod console;
pub mod demo;
pub mod display;
pub mod ops;
pub mod script;
pub mod transcribe;
