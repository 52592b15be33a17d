//! # providers — CallLock's vendor clients
//!
//! Thin protocol layers of our own on `reqwest` (rustls with the ring
//! provider):
//!
//! * [`sse`]: a sans-IO Server-Sent Events decoder.
//! * [`openai`]: an OpenAI-compatible chat-completions client (streaming
//!   with tool-call deltas, JSON-object mode) that implements
//!   `agent::responder::Responder`.
//! * [`fallback`]: a responder that falls back to the scripted one when the
//!   LLM errors or is slow to start (a hedged retry, a breaker).
//! * [`breaker`]: a circuit breaker shared by every call of a process.
//! * [`v2`]: the V2 booking backend over HTTP (SPEC §6, D-18 … D-20),
//!   implementing `agent::backend::Backend`.
//! * [`dashboard`]: the dashboard webhooks (SPEC §7.8, D-17 signatures).
//! * [`twilio`]: Twilio Media Streams wire messages (sans-IO).
//! * [`deepgram`]: Deepgram live speech-to-text and Aura text-to-speech.
//! * [`inworld`]: Inworld streaming text-to-speech.
//! * [`speech_text`]: cutting a long line into text-to-speech requests
//!   (sans-IO; Inworld and Aura).
//! * [`tts_fallback`]: a primary voice with a lazily started fallback, a
//!   circuit breaker and a last resort.
//! * `fake` (feature `testing`): loopback fake servers speaking the real
//!   wire protocols, for tests.

pub mod breaker;
pub mod dashboard;
pub mod deepgram;
pub mod fallback;
pub mod inworld;
pub mod metrics;
pub mod openai;
pub mod probe;
pub mod speech_text;
pub mod sse;
pub mod tts_fallback;
pub mod twilio;
pub mod v2;

#[cfg(feature = "testing")]
pub mod fake;
