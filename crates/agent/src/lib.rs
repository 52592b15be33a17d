//! # agent — CallLock itself
//!
//! Everything that decides what happens on a call, with no I/O and no vendor
//! wire formats: the business [`profile`], the 16 [`state`]s and the
//! [`machine`] that moves between them, the keyword lists and validators of
//! [`keywords`] / [`validate`], booking-time hints ([`booking_time`]),
//! prompts ([`prompts`]), the sans-IO conversation [`engine`], the
//! [`responder`] trait with its scripted implementation, field extraction
//! ([`extract`]), the backend trait ([`backend`]) and the post-call building
//! blocks ([`postcall`], [`classify`], [`transcript`], [`breaker`]).
//!
//! Tool results are handled as the JSON objects the booking backend answers
//! with (SPEC §6.3): every backend — embedded or V2 over HTTP — produces that
//! shape, the transcript stores it verbatim, and [`tools`] reads it through
//! typed accessors with the leniency the real backend needs (D-19).

pub mod backend;
pub mod booking_time;
pub mod breaker;
pub mod classify;
pub mod engine;
pub mod extract;
pub mod keywords;
pub mod machine;
pub mod postcall;
pub mod printable;
pub mod profile;
pub mod prompts;
pub mod questions;
pub mod responder;
pub mod safety;
pub mod session;
pub mod state;
pub mod tools;
pub mod transcript;
pub mod understand;
pub mod validate;
pub mod wording;

pub use profile::BusinessProfile;
pub use session::Session;
pub use state::{State, Tool};
