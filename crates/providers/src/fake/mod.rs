//! Loopback fake servers that speak the vendors' real wire protocols
//! (HTTP/1.1 on 127.0.0.1), for tests: [`http`] a scripted JSON/HTTP server
//! (V2 backend, dashboard), [`openai`] an OpenAI-compatible SSE server.

pub mod http;
pub mod openai;
