//! One call's recording: where each frame lands on its side's timeline,
//! batched into half seconds for the writer thread.

use super::raw::{Msg, Side, RATE};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Audio a side batches before handing it to the writer (half a second;
/// twice a second per side is all the writer thread is woken for).
const BATCH: usize = (RATE / 2) as usize;
/// A batch grows by this much (a tenth of a second) as it fills: a live
/// call holds two batches, and each holds about what it has, not a whole
/// half second from its first frame.
const BATCH_STEP: usize = (RATE / 10) as usize;
/// A caller timestamp this far from the server's clock is not believed.
const CLOCK_SLACK: u64 = 2 * RATE;
/// Nothing is recorded past this point of a call (four hours).
const MAX_SAMPLES: u64 = 4 * 3600 * RATE;

/// The recording of one live call. Cheap to clone: the socket reader
/// records the caller, the call's [`TwilioSink`](crate::serve::twilio_sink)
/// the agent. [`finish`](CallRecording::finish) it when the call is over;
/// if every clone is dropped first (a panic, an early return), the writer
/// is still told and merges the sides.
#[derive(Clone)]
pub struct CallRecording(Arc<Shared>);

struct Shared {
    call: Arc<str>,
    t0: Instant,
    tx: SyncSender<Msg>,
    dropped: Arc<AtomicU64>,
    finished: AtomicBool,
    caller: Mutex<Track>,
    agent: Mutex<Track>,
}

/// One side: the batch being filled and where the next frame goes.
#[derive(Default)]
struct Track {
    /// Samples not yet handed to the writer …
    batch: Vec<u8>,
    /// … starting this many samples into the call.
    batch_at: u64,
    /// Where the next frame goes at the earliest (nothing overlaps).
    cursor: u64,
}

impl CallRecording {
    pub(super) fn new(call_id: &str, tx: SyncSender<Msg>, dropped: Arc<AtomicU64>) -> Self {
        CallRecording(Arc::new(Shared {
            call: Arc::from(call_id),
            t0: Instant::now(),
            tx,
            dropped,
            finished: AtomicBool::new(false),
            caller: Mutex::default(),
            agent: Mutex::default(),
        }))
    }

    /// A frame of the caller's audio, `timestamp_ms` into the stream (as
    /// Twilio stamps it).
    pub fn caller(&self, ulaw: &[u8], timestamp_ms: u64) {
        let s = &self.0;
        if s.finished.load(Ordering::Relaxed) {
            return;
        }
        let clock = s.now();
        let stamped = timestamp_ms.saturating_mul(RATE / 1000);
        let at = if stamped.abs_diff(clock) <= CLOCK_SLACK {
            stamped
        } else {
            clock
        };
        s.put(Side::Caller, at, ulaw);
    }

    /// A frame of the agent's audio, sent to the caller now.
    pub fn agent(&self, ulaw: &[u8]) {
        let s = &self.0;
        if s.finished.load(Ordering::Relaxed) {
            return;
        }
        s.put(Side::Agent, s.now(), ulaw);
    }

    /// The agent's queued audio was cleared (the caller talked over it):
    /// what was sent for later than now was never played.
    pub fn agent_cleared(&self) {
        let s = &self.0;
        if s.finished.load(Ordering::Relaxed) {
            return;
        }
        let now = s.now();
        let mut t = s.track(Side::Agent);
        if now >= t.cursor {
            return;
        }
        let sent_to = t.cursor;
        let batch_end = t.batch_at + t.batch.len() as u64;
        if !t.batch.is_empty() && now >= t.batch_at && batch_end == sent_to {
            // Still in the batch: cut it there.
            let keep = (now - t.batch_at) as usize;
            t.batch.truncate(keep);
        } else {
            s.flush(Side::Agent, &mut t);
            s.send(Msg::Silence {
                call: s.call.clone(),
                side: Side::Agent,
                from: now,
                to: sent_to,
            });
        }
        t.cursor = now;
    }

    /// The call is over: hand the rest to the writer and wait (at most
    /// `limit`) until `<call>.wav` is written. Later frames are ignored.
    pub async fn finish(&self, limit: Duration) {
        let Some(done) = self.0.finish(true) else {
            return;
        };
        match tokio::time::timeout(limit, done).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                tracing::warn!(call_id = %self.0.call, "the recording thread is gone; recording not saved")
            }
            Err(_) => tracing::warn!(
                call_id = %self.0.call,
                "the recording was not saved within {limit:?}; it is finished in the background"
            ),
        }
    }
}

impl Shared {
    /// Samples since the call's clock started.
    fn now(&self) -> u64 {
        let us = self.t0.elapsed().as_micros().min(u128::from(u64::MAX)) as u64;
        us.saturating_mul(RATE) / 1_000_000
    }

    fn track(&self, side: Side) -> std::sync::MutexGuard<'_, Track> {
        let m = match side {
            Side::Caller => &self.caller,
            Side::Agent => &self.agent,
        };
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Place `bytes` on `side` at `at` (or right after what is there).
    fn put(&self, side: Side, at: u64, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let mut t = self.track(side);
        let at = at.max(t.cursor);
        let end = at + bytes.len() as u64;
        if end > MAX_SAMPLES {
            return;
        }
        let batch_end = t.batch_at + t.batch.len() as u64;
        if !t.batch.is_empty() && (at != batch_end || t.batch.len() >= BATCH) {
            self.flush(side, &mut t);
        }
        if t.batch.is_empty() {
            t.batch_at = at;
        }
        // A side holds memory only while it has audio to batch (the agent
        // is silent half the call), and only about as much as it has.
        if t.batch.capacity() - t.batch.len() < bytes.len() {
            t.batch.reserve_exact(BATCH_STEP.max(bytes.len()));
        }
        t.batch.extend_from_slice(bytes);
        t.cursor = end;
    }

    /// Hand `t`'s batch to the writer.
    fn flush(&self, side: Side, t: &mut Track) {
        if t.batch.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut t.batch);
        self.send(Msg::Write {
            call: self.call.clone(),
            side,
            at: t.batch_at,
            bytes,
        });
    }

    /// Queue `msg` for the writer; a full queue drops it (counted).
    fn send(&self, msg: Msg) {
        match self.tx.try_send(msg) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                metrics::counter!(crate::metrics::RECORDING_DROPPED).increment(1);
            }
            // The writer is gone (the server is stopping): nothing to do.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Flush both sides and tell the writer the call is over (once);
    /// with `ack`, the receiver answers when the file is written.
    fn finish(&self, ack: bool) -> Option<tokio::sync::oneshot::Receiver<()>> {
        if self.finished.swap(true, Ordering::Relaxed) {
            return None;
        }
        for side in [Side::Caller, Side::Agent] {
            let mut t = self.track(side);
            self.flush(side, &mut t);
        }
        let (done, rx) = if ack {
            let (tx, rx) = tokio::sync::oneshot::channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        // `Finish` must not be lost to a full queue: it waits for room,
        // bounded (the writer's sweep merges what is left otherwise).
        let mut msg = Msg::Finish {
            call: self.call.clone(),
            done,
        };
        let deadline = Instant::now() + Duration::from_millis(200);
        loop {
            match self.tx.try_send(msg) {
                Ok(()) => return rx,
                Err(TrySendError::Full(m)) if Instant::now() < deadline => {
                    msg = m;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return None,
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.finish(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{sync_channel, Receiver};

    fn recording(queue: usize) -> (CallRecording, Receiver<Msg>) {
        let (tx, rx) = sync_channel(queue);
        (CallRecording::new("CA1", tx, Arc::default()), rx)
    }

    fn writes(rx: &Receiver<Msg>) -> Vec<(Side, u64, usize)> {
        let mut out = Vec::new();
        while let Ok(m) = rx.try_recv() {
            if let Msg::Write {
                side, at, bytes, ..
            } = m
            {
                out.push((side, at, bytes.len()));
            }
        }
        out
    }

    #[test]
    fn caller_frames_land_where_twilio_stamps_them_in_half_second_batches() {
        let (r, rx) = recording(64);
        // 1.2 s of contiguous 20 ms frames, then a lost packet (40 ms
        // missing), then one more frame.
        for i in 0..60 {
            r.caller(&[1u8; 160], i * 20);
        }
        r.caller(&[2u8; 160], 1240);
        drop(r);
        let w = writes(&rx);
        assert_eq!(
            w,
            [
                (Side::Caller, 0, 4000),
                (Side::Caller, 4000, 4000),
                (Side::Caller, 8000, 1600),
                (Side::Caller, 9920, 160),
            ]
        );
    }

    #[test]
    fn a_timestamp_far_from_the_clock_is_not_believed() {
        let (r, rx) = recording(64);
        r.caller(&[1u8; 160], 10 * 3600 * 1000); // ten hours in
        r.caller(&[1u8; 160], u64::MAX);
        drop(r);
        let w = writes(&rx);
        // Both frames placed by the clock (now: near zero), one after the
        // other.
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].1 < RATE, "{w:?}");
        assert_eq!(w[0].2, 320);
    }

    #[test]
    fn agent_frames_follow_each_other_and_a_clear_cuts_what_was_not_played() {
        let (r, rx) = recording(64);
        // A burst of ten frames (200 ms) sent at once: laid end to end.
        for _ in 0..10 {
            r.agent(&[3u8; 160]);
        }
        // Cleared 5 ms later: only what the clock has reached played.
        std::thread::sleep(Duration::from_millis(5));
        r.agent_cleared();
        r.agent(&[4u8; 160]);
        drop(r);
        let mut got = Vec::new();
        while let Ok(m) = rx.try_recv() {
            match m {
                Msg::Write { at, bytes, .. } => got.push(("write", at, bytes.len() as u64)),
                Msg::Silence { from, to, .. } => got.push(("silence", from, to)),
                Msg::Finish { .. } => got.push(("finish", 0, 0)),
            }
        }
        // The burst was cut inside its batch (no silence needed); the
        // next frame starts where the cut was (in the same batch when the
        // clock has not moved on since).
        assert!(got.iter().all(|g| g.0 != "silence"), "{got:?}");
        assert_eq!(got.last().unwrap().0, "finish");
        let writes = &got[..got.len() - 1];
        assert_eq!(writes[0].1, 0);
        let kept = writes[0].2 - if writes.len() == 1 { 160 } else { 0 };
        assert!((40..1600).contains(&kept), "the unplayed part cut: {got:?}");
        if let [_, next] = writes {
            assert!((kept..kept + 400).contains(&next.1), "{got:?}");
            assert_eq!(next.2, 160);
        }
    }

    #[test]
    fn a_clear_after_a_flush_silences_the_unplayed_part() {
        let (r, rx) = recording(64);
        // 0.6 s sent at once: the first half second is flushed when the
        // batch fills.
        for _ in 0..30 {
            r.agent(&[3u8; 160]);
        }
        r.agent(&[3u8; 160]);
        // A new batch started at 4000; moving on to a non-contiguous
        // batch is impossible for the agent, so cut now.
        r.agent_cleared();
        drop(r);
        let msgs: Vec<Msg> = rx.try_iter().collect();
        let silence = msgs.iter().find_map(|m| match m {
            Msg::Silence { from, to, .. } => Some((*from, *to)),
            _ => None,
        });
        let (from, to) = silence.expect("silence after a flushed batch");
        assert!(from < RATE / 10, "cut near the start: {from}");
        assert_eq!(to, 31 * 160);
    }

    #[test]
    fn a_full_queue_drops_audio_and_counts_it_but_finish_still_arrives_once_there_is_room() {
        let (tx, rx) = sync_channel(1);
        let dropped = Arc::new(AtomicU64::new(0));
        let r = CallRecording::new("CA2", tx, dropped.clone());
        for i in 0..200 {
            r.caller(&[1u8; 160], i * 20);
        }
        assert!(dropped.load(Ordering::Relaxed) >= 1);
        // Make room while finish waits.
        let reader = std::thread::spawn(move || {
            let mut last = None;
            while let Ok(m) = rx.recv() {
                last = Some(m);
            }
            last
        });
        drop(r);
        let last = reader.join().unwrap();
        assert!(matches!(last, Some(Msg::Finish { .. })), "{last:?}");
    }

    #[test]
    fn nothing_is_recorded_after_finish() {
        let (r, rx) = recording(64);
        r.caller(&[1u8; 160], 0);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // No writer answers: finish gives up after its limit.
        rt.block_on(r.finish(Duration::from_millis(10)));
        r.caller(&[1u8; 160], 20);
        r.agent(&[1u8; 160]);
        drop(r);
        let msgs: Vec<Msg> = rx.try_iter().collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(matches!(msgs[1], Msg::Finish { .. }));
    }
}
