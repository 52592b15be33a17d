//! How late the player hands frames to the far end: outbound pacing jitter.
//!
//! The [`Player`](crate::stages::output::Player) sends one frame per tick
//! (as long as its sink asks: 40 ms on Twilio). Under load a tick can
//! fire late; the far end (Twilio's playout
//! buffer) absorbs lateness up to the player's lead, beyond that the caller
//! hears a gap. [`PacingStats`] counts every frame's lateness — the time it
//! was sent minus the time it was due — in a fixed set of buckets, with
//! atomics only, so one instance can be shared by every call of a process
//! and read at any time (the server's `/health?verbose=1`, a load test).
//!
//! Frames sent at once on purpose (the lead at the start of an utterance)
//! are due when the utterance starts, so they count as on time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in milliseconds (the last bucket is open).
pub const BUCKETS_MS: [u64; 10] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

/// Frame lateness counted per bucket, shared across calls.
#[derive(Debug, Default)]
pub struct PacingStats {
    /// `counts[i]` frames were late by less than `BUCKETS_MS[i]` (and at
    /// least the previous bound); the last slot holds the rest.
    counts: [AtomicU64; BUCKETS_MS.len() + 1],
    max_us: AtomicU64,
}

/// A snapshot of [`PacingStats`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacingSummary {
    /// Frames counted.
    pub frames: u64,
    /// Upper bound (ms) of the bucket holding the median frame.
    pub p50_ms: u64,
    /// Upper bound (ms) of the bucket holding the 99th percentile (past the
    /// last bucket: the latest frame).
    pub p99_ms: u64,
    /// The latest frame, in milliseconds.
    pub max_ms: f64,
    /// Frames late by 20 ms or more.
    pub late_20ms: u64,
}

impl PacingStats {
    /// Count one frame sent `late` after it was due.
    pub fn record(&self, late: Duration) {
        let ms = late.as_millis() as u64;
        let i = BUCKETS_MS
            .iter()
            .position(|&b| ms < b)
            .unwrap_or(BUCKETS_MS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.max_us
            .fetch_max(late.as_micros() as u64, Ordering::Relaxed);
    }

    /// Start counting afresh (a measurement window: a frame recorded at
    /// the same moment may be lost, never counted twice).
    pub fn reset(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
        self.max_us.store(0, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn summary(&self) -> PacingSummary {
        Self::summary_of([self])
    }

    /// The counts of several stats together: each playout thread keeps
    /// its own (no cache line is shared between threads on every frame),
    /// and a reader adds them up.
    pub fn summary_of<'a>(all: impl IntoIterator<Item = &'a PacingStats>) -> PacingSummary {
        let mut counts = [0u64; BUCKETS_MS.len() + 1];
        let mut max_us = 0;
        for s in all {
            for (sum, c) in counts.iter_mut().zip(&s.counts) {
                *sum += c.load(Ordering::Relaxed);
            }
            max_us = max_us.max(s.max_us.load(Ordering::Relaxed));
        }
        let frames: u64 = counts.iter().sum();
        // The open bucket's bound is the latest frame seen.
        let bound = |i: usize| {
            BUCKETS_MS
                .get(i)
                .copied()
                .unwrap_or_else(|| max_us.div_ceil(1000))
        };
        let quantile = |q: f64| {
            if frames == 0 {
                return 0;
            }
            let rank = ((frames as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return bound(i);
                }
            }
            bound(counts.len() - 1)
        };
        let on_time = BUCKETS_MS.iter().position(|&b| b == 20).unwrap_or(0) + 1;
        PacingSummary {
            frames,
            p50_ms: quantile(0.5),
            p99_ms: quantile(0.99),
            max_ms: max_us as f64 / 1000.0,
            late_20ms: counts[on_time..].iter().sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_stats_say_zero() {
        let s = PacingStats::default().summary();
        assert_eq!(s.frames, 0);
        assert_eq!(s.p99_ms, 0);
        assert_eq!(s.late_20ms, 0);
    }

    #[test]
    fn quantiles_come_from_the_buckets() {
        let s = PacingStats::default();
        for _ in 0..98 {
            s.record(Duration::from_micros(300));
        }
        s.record(Duration::from_millis(7));
        s.record(Duration::from_millis(30));
        let sum = s.summary();
        assert_eq!(sum.frames, 100);
        assert_eq!(sum.p50_ms, 1);
        assert_eq!(sum.p99_ms, 10, "the 99th frame is the 7 ms one");
        assert_eq!(sum.late_20ms, 1);
        assert_eq!(sum.max_ms, 30.0);
    }

    #[test]
    fn several_stats_add_up() {
        let (a, b) = (PacingStats::default(), PacingStats::default());
        for _ in 0..60 {
            a.record(Duration::from_micros(300));
        }
        for _ in 0..39 {
            b.record(Duration::from_millis(3));
        }
        b.record(Duration::from_millis(60));
        let sum = PacingStats::summary_of([&a, &b]);
        assert_eq!(sum.frames, 100);
        assert_eq!(sum.p50_ms, 1, "the 50th frame is one of a's");
        assert_eq!(sum.p99_ms, 5, "the 99th is one of b's 3 ms frames");
        assert_eq!(sum.late_20ms, 1);
        assert_eq!(sum.max_ms, 60.0);
        assert_eq!(PacingStats::summary_of([&a]), a.summary());
        b.reset();
        assert_eq!(b.summary(), PacingStats::default().summary());
    }

    #[test]
    fn beyond_the_last_bound_is_counted_open() {
        let s = PacingStats::default();
        s.record(Duration::from_secs(5));
        let sum = s.summary();
        assert_eq!(sum.p99_ms, 5000);
        assert_eq!(sum.late_20ms, 1);
    }
}
