//! Inworld text-to-speech over streaming HTTP (`POST /tts/v1/voice:stream`,
//! newline-delimited JSON). Being written.
