//! Loopback fake servers that speak the vendors' real wire protocols
//! (HTTP/1.1 on 127.0.0.1), for tests: [`http`] a scripted JSON/HTTP server
//! (V2 backend, dashboard), [`openai`] an OpenAI-compatible SSE server.
//! `wire` is the HTTP/1.1 plumbing they share with the Deepgram, Aura and
//! Inworld fakes (listening, reading a request, chunked and sized answers,
//! waiting for a recorded condition); [`unit_draw`] picks the requests a
//! fake fails at random, the same way each run.

pub mod http;
pub mod openai;
pub(crate) mod wire;

pub use wire::unit_draw;
