//! Call recordings: both sides of every served call, as the line carried
//! them, kept as a WAV file the dashboard plays (`/calls/{id}/recording.wav`).
//!
//! ```text
//! socket reader ──caller µ-law (Twilio's timestamp)──▶ CallRecording ──▶ writer thread
//! TwilioSink    ──agent µ-law (as sent; `clear`)────▶   (½ s batches)     │
//!                                                                         ▼
//!        <dir>/<call>.caller.ulaw, <call>.agent.ulaw  (raw, while live)
//!        <dir>/<call>.wav  (8 kHz stereo µ-law: left the caller, right the agent)
//! ```
//!
//! **Where audio lands.** Each side is a timeline of 8 kHz samples from the
//! moment the call's `start` arrived. The caller's frames sit where
//! Twilio's `timestamp` puts them (a lost packet leaves silence, as the
//! caller's line did); a timestamp more than two seconds from the server's
//! own clock is not believed (the clock places the frame). The agent's
//! frames follow one another from when each utterance began to be sent;
//! a `clear` (the caller talked over the agent) silences what was sent but
//! never played. Nothing is ever written more than four hours in.
//!
//! **Never in the call's way.** A call only copies its frames into a small
//! buffer; every half second of audio goes to one writer thread per
//! process through a bounded queue. A full queue (a disk that cannot keep
//! up) drops that half second from the recording, counted in
//! `calllock_recording_dropped_total`; the call goes on.
//!
//! **Nothing lost on a crash.** While a call is live its two sides are
//! raw files; when it ends they are merged into `<call>.wav` before the
//! call's record is finished. Raw files a crash (or a lost message) left
//! behind are merged by the writer's sweep once untouched for two minutes;
//! the same sweep deletes recordings older than `recording.keep_days`.

mod call;
mod raw;
mod writer;

pub use call::CallRecording;
pub use raw::usable_id;

use raw::{raw_path, Msg, Side};

use crate::config::Config;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::time::Duration;

/// The process's recorder: where recordings go and the writer thread.
#[derive(Clone)]
pub struct Recorder {
    dir: PathBuf,
    tx: SyncSender<Msg>,
    /// Half seconds dropped because the queue was full.
    dropped: Arc<AtomicU64>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("dir", &self.dir).finish()
    }
}

impl Recorder {
    /// The recorder the configuration asks for (`None`: recording is
    /// off), its directory created and its writer thread started.
    pub fn start(cfg: &Config) -> Result<Option<Recorder>> {
        if !cfg.recording.enabled {
            return Ok(None);
        }
        let dir = cfg.recording.dir_for(&cfg.database);
        let keep = match cfg.recording.keep_days {
            0 => None,
            d => Some(Duration::from_secs(u64::from(d) * 86_400)),
        };
        Recorder::start_in(dir, keep).map(Some)
    }

    /// A recorder writing to `dir`, deleting recordings older than `keep`.
    pub fn start_in(dir: PathBuf, keep: Option<Duration>) -> Result<Recorder> {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create the recordings folder {}", dir.display()))?;
        let (tx, rx) = sync_channel(writer::QUEUE);
        let w = writer::Writer::new(dir.clone(), keep);
        std::thread::Builder::new()
            .name("calllock-recorder".into())
            .spawn(move || w.run(rx))
            .context("cannot start the recording thread")?;
        Ok(Recorder {
            dir,
            tx,
            dropped: Arc::default(),
        })
    }

    /// The folder recordings are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Start recording the call `call_id` (its clock starts now).
    pub fn begin(&self, call_id: &str) -> CallRecording {
        CallRecording::new(call_id, self.tx.clone(), self.dropped.clone())
    }

    /// The finished recording of `call_id`, if there is one.
    pub fn file(&self, call_id: &str) -> Option<PathBuf> {
        if !usable_id(call_id) {
            return None;
        }
        let p = self.dir.join(format!("{call_id}.wav"));
        p.is_file().then_some(p)
    }

    /// Whether `call_id` is being recorded now (its raw sides exist).
    pub fn in_progress(&self, call_id: &str) -> bool {
        usable_id(call_id)
            && [Side::Caller, Side::Agent]
                .iter()
                .any(|s| raw_path(&self.dir, call_id, *s).is_file())
    }

    /// Half seconds of audio dropped from recordings so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }
}
