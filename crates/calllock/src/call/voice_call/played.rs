//! What the far end proved it played of the agent's lines: the transport
//! learns it (Twilio's mark echoes), the conversation stage asks for it.

use std::sync::Arc;
use std::time::Duration;

/// What the far end proved it played of utterance `id`.
pub type PlayedProof = Arc<dyn Fn(voice::frames::UtteranceId) -> Played + Send + Sync>;

/// What the far end proved it played of one utterance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Played {
    /// How much of its audio.
    pub heard: Duration,
    /// All of it, to its last frame.
    pub whole: bool,
}
