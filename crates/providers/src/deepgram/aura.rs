//! Deepgram Aura-2 text-to-speech over HTTP (`POST /v1/speak`). Being
//! written.
