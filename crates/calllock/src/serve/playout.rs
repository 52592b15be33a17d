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

use std::sync::OnceLock;
use tokio::runtime::{Builder, Handle, Runtime};

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
