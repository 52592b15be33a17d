//! Inworld text-to-speech over streaming HTTP — CallLock's primary voice.
//!
//! One line of the agent's speech is one (or, past 2,000 characters,
//! several) `POST https://api.inworld.ai/tts/v1/voice:stream` requests:
//!
//! ```text
//! POST /tts/v1/voice:stream
//! Authorization: Basic <INWORLD_API_KEY>      (the key already is the credential)
//! Content-Type: application/json
//! X-Request-Id: calllock-…                    (ours, for support tickets)
//!
//! {"text": "…", "voiceId": "Ashley", "modelId": "inworld-tts-1.5-max",
//!  "audioConfig": {"audioEncoding": "LINEAR16", "sampleRateHertz": 8000},
//!  "timestampType": "WORD", "timestampTransportStrategy": "SYNC"}
//! ```
//!
//! The answer is `200` and a body of newline-delimited JSON, one object per
//! line, streamed as the audio is made:
//!
//! ```text
//! {"result": {"audioContent": "<base64 WAV chunk>",
//!             "timestampInfo": {"wordAlignment": {"words": ["Hi,"],
//!                 "wordStartTimeSeconds": [0.0], "wordEndTimeSeconds": [0.31]}}}}
//! {"result": {"audioContent": "…"}}
//! {"error": {"code": 8, "message": "…", "details": []}}     (possible at any point)
//! ```
//!
//! Facts the client relies on (Inworld's API reference, Pipecat's and
//! LiveKit's clients; see `/work/shared/research/telephony-speech.md` §3a):
//!
//! * A line may be split across socket reads, and several lines may come
//!   in one read; lines may end in `\r\n`; the last may have no line end.
//! * With `LINEAR16` each chunk's audio starts with its own WAV header;
//!   strip it wherever it appears at the start of a chunk — by parsing the
//!   RIFF chunks, not by assuming 44 bytes.
//! * Word times are seconds from the start of *that request's* audio;
//!   with `ASYNC` transport a line may carry timings without audio.
//! * `text` is limited to 2,000 characters per request.
//! * Cancelling is closing the HTTP response; there is no cancel message.
//!
//! The modules, protocol first:
//!
//! * [`MAX_CHARS`]: the text limit of one request; longer lines are cut
//!   by [`crate::speech_text::split_text`] (shared with Aura).
//! * [`ndjson`]: line framing across reads, with a line-size limit
//!   (sans-IO).
//! * [`wav`]: WAV header stripping and whole-sample assembly (sans-IO).
//! * [`stream`]: the request body, the response lines, and
//!   [`stream::StreamDecoder`], all of the above over one response
//!   (sans-IO).
//! * [`tts`]: [`InworldTts`], the voice for the pipeline (reqwest; lazy,
//!   back-pressured reads; timeouts per wait, not per request), and
//!   [`probe`] for `calllock doctor`.
//! * `fake` (feature `testing`): a loopback Inworld that speaks the offline
//!   speech codec, with faults.
//!
//! ```ignore
//! use providers::inworld::{InworldConfig, InworldTts};
//! let tts = InworldTts::new(InworldConfig {
//!     voice_id: env("INWORLD_VOICE_ID"),
//!     ..InworldConfig::new(env("INWORLD_API_KEY"))
//! })?;
//! let stream = tts.synthesize("Thanks for calling ACE Cooling.");
//! ```

pub mod ndjson;
pub mod stream;
pub mod tts;
pub mod wav;

#[cfg(feature = "testing")]
pub mod fake;

pub use tts::{probe, InworldConfig, InworldTts};

/// The most characters Inworld takes in one request.
pub const MAX_CHARS: usize = 2000;
