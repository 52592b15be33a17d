//! The playout thread: where every served call's agent audio is paced.
//!
//! A call's player wakes every 20 ms to hand the next frame to Twilio; the
//! rest of a call (reading the caller's audio, turn detection, the
//! conversation, speech) wakes about as often but at no fixed time. With a
//! thousand calls on the same worker threads, a player's wake-up queues
//! behind whatever else is ready, and its frame leaves late. So the
//! players, and the socket writers they feed, run on a runtime of their
//! own — one thread, which does little but is always there when a frame is
//! due. (Timers and sockets work across runtimes: the socket stays
//! registered with the main runtime's reactor; only the writing task runs
//! here.)
//!
//! A thread of its own is not enough when the cores are busy: the
//! operating system still runs the playout thread only when it gets to it,
//! behind the server's worker threads. So `calllock serve` starts the
//! playout thread first ([`start`]), then lowers its main thread
//! ([`run_behind_playout`], a nice value [`BEHIND_PLAYOUT`] higher) before
//! it starts anything else: every later thread (the runtime's workers and
//! blocking threads, the speech pools, the database and recording
//! threads) starts with its creator's priority, so all of them run a
//! little behind the playout thread, and when a frame is due it gets a
//! core at once. It needs no privilege (a thread may always lower its own
//! priority), and it changes nothing while cores are free.

use std::sync::OnceLock;
use tokio::runtime::{Builder, Handle, Runtime};

/// How far behind the playout thread the server's other threads run: a
/// nice value added to theirs (Linux; elsewhere nothing changes).
pub const BEHIND_PLAYOUT: i32 = 4;

/// Start the playout thread now, from the calling thread, whose CPU
/// priority it keeps (a thread starts with its creator's). Call it before
/// the server's runtime starts.
pub fn start() {
    let _ = handle();
}

/// Run the calling thread [`BEHIND_PLAYOUT`] nice steps behind the
/// playout thread; the threads it starts afterwards inherit that. Call it
/// once, on the main thread, after [`start`].
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

/// The process's playout runtime, started on first use.
///
/// # Panics
/// When the operating system cannot start a thread.
pub fn handle() -> Handle {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("calllock-playout")
                .enable_all()
                .build()
                .expect("start the playout thread")
        })
        .handle()
        .clone()
}
