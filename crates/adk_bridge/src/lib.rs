//! Bring your own agent: a Google Agent Development Kit agent (the
//! `adk-rust` crates) as the brain of a CallLock voice call.
//!
//! Without the `adk` feature this crate is empty, so the default build
//! never compiles the ADK.

#[cfg(feature = "adk")]
pub mod conversation;
#[cfg(feature = "adk")]
pub mod interruptions;
#[cfg(feature = "adk")]
pub mod llm;
#[cfg(feature = "adk")]
pub mod mock;
#[cfg(feature = "adk")]
pub mod openai;
#[cfg(feature = "adk")]
pub mod responder;
#[cfg(feature = "adk")]
pub mod session;
#[cfg(feature = "adk")]
pub mod voice_call;
