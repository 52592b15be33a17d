//! The playout threads: where every served call's agent audio is paced.
//!
//! A call's player wakes every frame (40 ms) to hand the next to Twilio; the
//! rest of a call (reading the caller's audio, turn detection, the
//! conversation, speech) wakes about as often but at no fixed time. With a
//! thousand calls on the same worker threads, a player's wake-up queues
//! behind whatever else is ready, and its frame leaves late. So the
//! players, and the socket writers they feed, run on runtimes of their
//! own — playout threads, which do little but are always there when a
//! frame is due. The two stages that feed a player (resample and output,
//! see [`voice::telephone`]) run there too: the voice's audio leaves the
//! busy runtime once, at the TTS stage, rather than queueing behind the
//! rest of the server at each hop on its way to the player. (Timers and
//! sockets work across runtimes: the socket stays registered with the
//! main runtime's reactor; only the writing task runs here.)
//!
//! # Sharding
//!
//! One thread carries about 1,500 calls (40 ms `media` messages, on a
//! 2-core cloud machine) before its frames leave late (`cargo bench -p
//! calllock --bench playout` measures it on any machine), so the playout
//! is a pool of single-thread runtimes ([`Playout`]),
//! `serve.playout_threads` of them (default: half the cores, at least
//! one). Each call is pinned to one of them for its whole
//! life ([`Playout::assign`], the one carrying the fewest calls): its
//! last two stages, its player and its socket writer share that thread
//! (the benchmark counts all four), so a frame never
//! crosses threads on its way to the socket, and each shard counts its
//! own pacing ([`PacingStats`], one per shard: no cache line shared
//! between threads on every frame; readers add them up).
//!
//! # Priority
//!
//! A thread of its own is not enough when the cores are busy: the
//! operating system still runs a playout thread only when it gets to it,
//! behind the server's worker threads. So `calllock serve` starts the
//! playout threads first ([`start`]), then lowers its main thread
//! ([`run_behind_playout`], a nice value [`BEHIND_PLAYOUT`] higher) before
//! it starts anything else: every later thread (the runtime's workers and
//! blocking threads, the speech pools, the database and recording
//! threads) starts with its creator's priority, so all of them run a
//! little behind the playout threads, and when a frame is due it gets a
//! core at once. It needs no privilege (a thread may always lower its own
//! priority), and it changes nothing while cores are free.
//!
//! [`PacingStats`]: voice::pacing::PacingStats

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use tokio::runtime::{Builder, Handle, Runtime};

/// How far behind the playout threads the server's other threads run: a
/// nice value added to theirs (Linux; elsewhere nothing changes).
pub const BEHIND_PLAYOUT: i32 = 4;

/// The process's playout threads: one runtime of one thread per shard.
pub struct Playout {
    shards: Vec<Shard>,
}

struct Shard {
    runtime: Runtime,
    /// Calls pinned here now.
    calls: AtomicUsize,
}

/// One call's place on the playout: the shard its player and socket
/// writer run on. Dropping it frees the place.
pub struct Lane {
    shard: &'static Shard,
    index: usize,
}

impl Lane {
    /// The runtime this call's playout tasks run on.
    pub fn handle(&self) -> Handle {
        self.shard.runtime.handle().clone()
    }

    /// Which shard (0-based): the index of its pacing counters.
    pub fn index(&self) -> usize {
        self.index
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.shard.calls.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The number of playout threads when `serve.playout_threads` is 0: half
/// the cores this process may use, rounded up (a playout thread is
/// mostly idle, waiting for the next frame; the other half of the cores
/// run everything else a call does).
pub fn default_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.div_ceil(2).max(1)
}

/// Start the process's playout threads now, from the calling thread,
/// whose CPU priority they keep (a thread starts with its creator's):
/// `threads` of them (0: [`default_threads`]). Call it before the
/// server's runtime starts; the first call decides the number, later
/// calls return the pool already running.
///
/// # Panics
/// When the operating system cannot start a thread.
pub fn start(threads: usize) -> &'static Playout {
    static POOL: OnceLock<Playout> = OnceLock::new();
    POOL.get_or_init(|| {
        let n = if threads == 0 {
            default_threads()
        } else {
            threads
        };
        let shards = (0..n)
            .map(|i| Shard {
                runtime: Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name(format!("calllock-playout-{i}"))
                    .enable_all()
                    .build()
                    .expect("start a playout thread"),
                calls: AtomicUsize::new(0),
            })
            .collect();
        Playout { shards }
    })
}

impl Playout {
    /// How many playout threads there are.
    pub fn threads(&self) -> usize {
        self.shards.len()
    }

    /// Pin a new call to the shard carrying the fewest calls (the first
    /// of them on a tie).
    pub fn assign(&'static self) -> Lane {
        let (index, shard) = self
            .shards
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.calls.load(Ordering::Relaxed))
            .expect("at least one playout thread");
        shard.calls.fetch_add(1, Ordering::Relaxed);
        Lane { shard, index }
    }

    /// Calls pinned to each shard now.
    pub fn calls(&self) -> Vec<usize> {
        self.shards
            .iter()
            .map(|s| s.calls.load(Ordering::Relaxed))
            .collect()
    }
}

/// Run the calling thread [`BEHIND_PLAYOUT`] nice steps behind the
/// playout threads; the threads it starts afterwards inherit that. Call
/// it once, on the main thread, after [`start`].
pub fn run_behind_playout() {
    #[cfg(target_os = "linux")]
    {
        // On Linux a nice value belongs to a thread: PRIO_PROCESS with the
        // thread's id changes this thread only.
        // SAFETY: plain system calls on the calling thread; no memory is
        // shared with them.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            *libc::__errno_location() = 0;
            let nice = libc::getpriority(libc::PRIO_PROCESS, tid);
            if nice == -1 && *libc::__errno_location() != 0 {
                return;
            }
            libc::setpriority(libc::PRIO_PROCESS, tid, nice + BEHIND_PLAYOUT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_go_to_the_least_loaded_shard_and_leave_it() {
        // The process's one pool (sized by the first start in this test
        // binary); its counts are this test's alone.
        let pool = start(3);
        let n = pool.threads();
        let before = pool.calls();
        let lanes: Vec<Lane> = (0..2 * n).map(|_| pool.assign()).collect();
        let after = pool.calls();
        let added: Vec<usize> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        if before.iter().all(|&c| c == 0) {
            assert_eq!(added, vec![2; n], "two calls on each shard");
        }
        assert_eq!(added.iter().sum::<usize>(), 2 * n);
        let mut seen: Vec<usize> = lanes.iter().map(Lane::index).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n, "every shard was used");
        drop(lanes);
        assert_eq!(pool.calls(), before, "a call's place is freed with it");
    }

    #[test]
    fn the_default_uses_half_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let d = default_threads();
        assert!(d >= 1 && d * 2 >= cores && d <= cores, "{d} of {cores}");
    }
}
