//! The names of the operator's metrics recorded by the vendor clients
//! (through the `metrics` facade: free when nothing is installed). `calllock
//! serve` exports them at `/metrics` and describes every one of them in
//! `calllock::metrics`.

/// Counter: a Deepgram socket was reopened mid-call.
pub const STT_RECONNECTS: &str = "calllock_stt_reconnects_total";
/// Counter, label `ears` (`deepgram` | `whisper`): the caller was asked to
/// say it again (no words came back, or the recogniser was overloaded).
pub const STT_NOT_HEARD: &str = "calllock_stt_not_heard_total";
/// Counter: Deepgram became unusable for a call.
pub const STT_LOST: &str = "calllock_stt_lost_total";
/// Counter, label `voice` (`fallback` | `last_resort`): a line was handed
/// to a voice other than the primary (one the fallback fails counts twice).
pub const TTS_FALLBACKS: &str = "calllock_tts_fallbacks_total";
/// Counter, label `kind` (`reply` | `reply_breaker_open` | `scoped` |
/// `extract` | `classify`): the LLM was slow or failed (or its breaker was
/// open) and the offline responder answered.
pub const LLM_FALLBACKS: &str = "calllock_llm_fallbacks_total";
/// Counter: an LLM reply was asked for a second time (the first failed at
/// once or was still silent at the hedge).
pub const LLM_HEDGES: &str = "calllock_llm_hedges_total";
