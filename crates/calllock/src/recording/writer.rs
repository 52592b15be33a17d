//! The recording thread: the only place recordings touch the disk.
//!
//! A live call's two sides are raw µ-law files written at their samples'
//! positions (a gap is filled with µ-law silence, 0xFF — a zero byte would
//! be the loudest sample there is). Each write opens, writes and closes
//! its file: a thousand live calls hold no file descriptors. At the end
//! the sides are interleaved into `<call>.wav` through a `.part` file and
//! a rename, so a reader never sees half a recording.
//!
//! Every ten minutes (and at start) the sweep merges raw files nobody has
//! touched for two minutes (a crash, or a `Finish` that could not be
//! queued) and deletes recordings older than `recording.keep_days`.

use super::raw::{raw_path, usable_id, Msg, Side, RATE};
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How often the sweep runs.
const SWEEP_EVERY: Duration = Duration::from_secs(600);
/// Raw files untouched this long belong to no live call.
const ORPHAN_AGE: Duration = Duration::from_secs(120);
/// A `.part` file this old was left by a merge that never finished.
const PART_AGE: Duration = Duration::from_secs(3600);
/// µ-law silence.
const SILENCE: u8 = 0xFF;
/// After the writer has written what was queued, it sleeps this long
/// before it looks again: at most this many milliseconds of every call's
/// batches wait in the queue (sized for it, [`QUEUE`]), and the
/// thread wakes at most twenty times a second, however many calls.
pub(super) const PAUSE: Duration = Duration::from_millis(50);
/// Messages the writer's queue holds. Each live call sends about four a
/// second (two sides, half a second each); the writer empties the queue
/// every [`PAUSE`] (50 ms), so this is room for some 10,000
/// calls' pauses, or a disk that stalls for half a second under 1,000
/// calls (full, about 8 MiB of audio waits).
pub(super) const QUEUE: usize = 2048;

pub(super) struct Writer {
    dir: PathBuf,
    keep: Option<Duration>,
    orphan_age: Duration,
    /// Each live call's sides' lengths (samples written).
    live: HashMap<Arc<str>, [u64; 2]>,
    /// Calls whose recording already failed once (logged once).
    failed: HashSet<Arc<str>>,
}

impl Writer {
    pub(super) fn new(dir: PathBuf, keep: Option<Duration>) -> Self {
        Writer {
            dir,
            keep,
            orphan_age: ORPHAN_AGE,
            live: HashMap::new(),
            failed: HashSet::new(),
        }
    }

    /// Serve the queue until every sender is gone.
    pub(super) fn run(mut self, rx: Receiver<Msg>) {
        self.sweep();
        let mut next_sweep = Instant::now() + SWEEP_EVERY;
        loop {
            match rx.recv_timeout(next_sweep.saturating_duration_since(Instant::now())) {
                Ok(msg) => {
                    self.handle(msg);
                    // At most a queue's worth: the sweep gets its turn
                    // even when the queue never empties.
                    for msg in rx.try_iter().take(QUEUE) {
                        self.handle(msg);
                    }
                    // Let the queue fill a while: a thread blocked in
                    // `recv` is woken (a system call on the sender's side,
                    // a context switch here) for every message, and a
                    // thousand calls send four thousand a second.
                    std::thread::sleep(PAUSE);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            if Instant::now() >= next_sweep {
                self.sweep();
                next_sweep = Instant::now() + SWEEP_EVERY;
            }
        }
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Write {
                call,
                side,
                at,
                bytes,
            } => {
                let r = self.write(&call, side, at, &bytes);
                self.report(&call, r);
            }
            Msg::Silence {
                call,
                side,
                from,
                to,
            } => {
                let r = self.silence(&call, side, from, to);
                self.report(&call, r);
            }
            Msg::Finish { call, done } => {
                self.live.remove(&call);
                let r = merge(&self.dir, &call);
                self.report(&call, r.map(|_| ()));
                self.failed.remove(&call);
                if let Some(done) = done {
                    let _ = done.send(());
                }
            }
        }
    }

    fn report(&mut self, call: &Arc<str>, r: std::io::Result<()>) {
        if let Err(e) = r {
            if self.failed.insert(call.clone()) {
                tracing::warn!(call_id = %call, error = %e, dir = %self.dir.display(), "cannot write the call's recording (the call goes on)");
            }
        }
    }

    /// The length of `call`'s `side` (its file's, the first time).
    fn len(&mut self, call: &Arc<str>, side: Side) -> &mut u64 {
        let dir = &self.dir;
        let lens = self.live.entry(call.clone()).or_insert_with(|| {
            [Side::Caller, Side::Agent]
                .map(|s| std::fs::metadata(raw_path(dir, call, s)).map_or(0, |m| m.len()))
        });
        &mut lens[side as usize]
    }

    fn write(&mut self, call: &Arc<str>, side: Side, at: u64, bytes: &[u8]) -> std::io::Result<()> {
        let path = raw_path(&self.dir, call, side);
        let len = *self.len(call, side);
        let mut f = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(path)?;
        if at > len {
            fill(&mut f, len, at)?;
        }
        f.seek(SeekFrom::Start(at))?;
        f.write_all(bytes)?;
        let end = at + bytes.len() as u64;
        let len = self.len(call, side);
        *len = (*len).max(end);
        Ok(())
    }

    fn silence(&mut self, call: &Arc<str>, side: Side, from: u64, to: u64) -> std::io::Result<()> {
        let to = to.min(*self.len(call, side));
        if from >= to {
            return Ok(());
        }
        let mut f = OpenOptions::new()
            .write(true)
            .open(raw_path(&self.dir, call, side))?;
        fill(&mut f, from, to)
    }

    /// Merge forgotten raw files, delete what is past keeping.
    fn sweep(&mut self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let age = |p: &Path| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .unwrap_or_default()
        };
        let mut orphans = HashSet::new();
        let (mut merged, mut deleted) = (0, 0);
        for e in entries.flatten() {
            let path = e.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if let Some(call) = [Side::Caller, Side::Agent]
                .iter()
                .find_map(|s| name.strip_suffix(&format!(".{}", s.file_suffix())))
            {
                if usable_id(call) && !self.live.contains_key(call) {
                    orphans.insert(call.to_string());
                }
            } else {
                let expired = if name.ends_with(".wav.part") {
                    age(&path) > PART_AGE
                } else {
                    name.ends_with(".wav") && self.keep.is_some_and(|k| age(&path) > k)
                };
                if expired && std::fs::remove_file(&path).is_ok() {
                    deleted += 1;
                }
            }
        }
        for call in orphans {
            let untouched = [Side::Caller, Side::Agent]
                .iter()
                .map(|s| raw_path(&self.dir, &call, *s))
                .filter(|p| p.exists())
                .all(|p| age(&p) > self.orphan_age);
            if untouched {
                match merge(&self.dir, &call) {
                    Ok(true) => merged += 1,
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(call_id = call, error = %e, "cannot finish a recording left unfinished")
                    }
                }
            }
        }
        if merged > 0 || deleted > 0 {
            tracing::info!(
                merged,
                deleted,
                dir = %self.dir.display(),
                "recordings: unfinished ones saved, expired ones deleted"
            );
        }
    }
}

/// Write µ-law silence over samples `from..to` of `f`.
fn fill(f: &mut File, from: u64, to: u64) -> std::io::Result<()> {
    const CHUNK: [u8; 4096] = [SILENCE; 4096];
    f.seek(SeekFrom::Start(from))?;
    let mut left = to.saturating_sub(from);
    while left > 0 {
        let n = left.min(CHUNK.len() as u64) as usize;
        f.write_all(&CHUNK[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// Interleave `call`'s raw sides into `<call>.wav` (left the caller,
/// right the agent; the shorter side padded with silence) and remove
/// them. `Ok(false)`: there was no audio.
fn merge(dir: &Path, call: &str) -> std::io::Result<bool> {
    let paths = [Side::Caller, Side::Agent].map(|s| raw_path(dir, call, s));
    let lens = paths
        .each_ref()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()));
    let n = lens[0].max(lens[1]);
    if n == 0 {
        for p in &paths {
            let _ = std::fs::remove_file(p);
        }
        return Ok(false);
    }
    let open = |p: &PathBuf| -> std::io::Result<Option<BufReader<File>>> {
        match File::open(p) {
            Ok(f) => Ok(Some(BufReader::new(f))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    };
    let mut sides = [open(&paths[0])?, open(&paths[1])?];
    let part = dir.join(format!("{call}.wav.part"));
    let mut out = BufWriter::new(File::create(&part)?);
    let data_len = usize::try_from(n.saturating_mul(2)).unwrap_or(usize::MAX);
    out.write_all(&audio::wav::mulaw_header(RATE as u32, 2, data_len))?;
    const CHUNK: usize = 8192;
    let mut bufs = [vec![SILENCE; CHUNK], vec![SILENCE; CHUNK]];
    let mut frame = Vec::with_capacity(CHUNK * 2);
    let mut done = 0u64;
    while done < n {
        let want = (n - done).min(CHUNK as u64) as usize;
        for (side, buf) in sides.iter_mut().zip(bufs.iter_mut()) {
            buf[..want].fill(SILENCE);
            if let Some(r) = side {
                read_up_to(r, &mut buf[..want])?;
            }
        }
        frame.clear();
        for (c, a) in bufs[0][..want].iter().zip(&bufs[1][..want]) {
            frame.push(*c);
            frame.push(*a);
        }
        out.write_all(&frame)?;
        done += want as u64;
    }
    out.flush()?;
    drop(out);
    std::fs::rename(&part, dir.join(format!("{call}.wav")))?;
    for p in &paths {
        let _ = std::fs::remove_file(p);
    }
    Ok(true)
}

/// Fill `buf` from `r` as far as it goes (the rest stays as it was).
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        match r.read(&mut buf[at..]) {
            Ok(0) => return Ok(()),
            Ok(k) => at += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Arc<str> {
        Arc::from(id)
    }

    fn wav_sides(path: &Path) -> (Vec<u8>, Vec<u8>) {
        let bytes = std::fs::read(path).unwrap();
        let w = audio::wav::read_wav(&bytes).unwrap();
        assert_eq!((w.sample_rate, w.channels), (8000, 2));
        assert_eq!(u16::from_le_bytes([bytes[20], bytes[21]]), 7, "µ-law");
        let data = &bytes[44..];
        (
            data.iter().step_by(2).copied().collect(),
            data.iter().skip(1).step_by(2).copied().collect(),
        )
    }

    #[test]
    fn sides_are_placed_gaps_silenced_and_merged_into_one_stereo_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::new(dir.path().into(), None);
        let c = call("CA1");
        w.handle(Msg::Write {
            call: c.clone(),
            side: Side::Caller,
            at: 0,
            bytes: vec![1; 100],
        });
        // A lost packet: 50 samples of nothing, then more.
        w.handle(Msg::Write {
            call: c.clone(),
            side: Side::Caller,
            at: 150,
            bytes: vec![2; 50],
        });
        w.handle(Msg::Write {
            call: c.clone(),
            side: Side::Agent,
            at: 20,
            bytes: vec![3; 100],
        });
        // Its last 40 samples were never played.
        w.handle(Msg::Silence {
            call: c.clone(),
            side: Side::Agent,
            from: 80,
            to: 500,
        });
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        w.handle(Msg::Finish {
            call: c,
            done: Some(tx),
        });
        assert!(rx.try_recv().is_ok(), "answered once written");
        let (caller, agent) = wav_sides(&dir.path().join("CA1.wav"));
        assert_eq!(caller.len(), 200);
        assert!(caller[..100].iter().all(|&b| b == 1));
        assert!(caller[100..150].iter().all(|&b| b == SILENCE));
        assert!(caller[150..].iter().all(|&b| b == 2));
        assert!(agent[..20].iter().all(|&b| b == SILENCE));
        assert!(agent[20..80].iter().all(|&b| b == 3));
        assert!(agent[80..].iter().all(|&b| b == SILENCE));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["CA1.wav"], "raw sides removed");
    }

    #[test]
    fn a_call_without_audio_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::new(dir.path().into(), None);
        w.handle(Msg::Finish {
            call: call("CA2"),
            done: None,
        });
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_sweep_saves_what_a_crash_left_and_deletes_what_is_past_keeping() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let old = SystemTime::now() - Duration::from_secs(3 * 86_400);
        // A crash left one call's sides (old), another call is live
        // (fresh files), a recording is past keeping, one is not.
        std::fs::write(d.join("CAcrashed.caller.ulaw"), [5u8; 80]).unwrap();
        std::fs::write(d.join("CAcrashed.agent.ulaw"), [6u8; 40]).unwrap();
        for f in ["CAcrashed.caller.ulaw", "CAcrashed.agent.ulaw"] {
            File::options()
                .write(true)
                .open(d.join(f))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        std::fs::write(d.join("CAlive.caller.ulaw"), [5u8; 80]).unwrap();
        std::fs::write(d.join("CAexpired.wav"), b"x").unwrap();
        File::options()
            .write(true)
            .open(d.join("CAexpired.wav"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        std::fs::write(d.join("CArecent.wav"), b"x").unwrap();
        let mut w = Writer::new(d.into(), Some(Duration::from_secs(86_400)));
        w.sweep();
        let (caller, agent) = wav_sides(&d.join("CAcrashed.wav"));
        assert_eq!((caller.len(), agent.len()), (80, 80));
        assert!(agent[40..].iter().all(|&b| b == SILENCE));
        assert!(!d.join("CAcrashed.caller.ulaw").exists());
        assert!(
            d.join("CAlive.caller.ulaw").exists(),
            "a live call is left alone"
        );
        assert!(!d.join("CAexpired.wav").exists());
        assert!(d.join("CArecent.wav").exists());
    }

    #[test]
    fn a_failing_disk_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("not-there");
        let mut w = Writer::new(gone, None);
        let c = call("CA3");
        for _ in 0..3 {
            w.handle(Msg::Write {
                call: c.clone(),
                side: Side::Caller,
                at: 0,
                bytes: vec![1; 10],
            });
        }
        assert!(w.failed.contains(&c));
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        w.handle(Msg::Finish {
            call: c,
            done: Some(tx),
        });
        assert!(rx.try_recv().is_ok(), "the call is still answered");
    }
}
