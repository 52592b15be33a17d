//! Giving freed heap back to the operating system.
//!
//! A call allocates and frees audio buffers all the time (agent lines are
//! synthesized faster than they play and wait in the pipeline). glibc's
//! allocator keeps freed memory in its arenas, fragmented between live
//! allocations of other calls, so a server's resident memory drifts up to
//! about twice what its calls hold. [`trim_every`] asks glibc, from time to
//! time, to return whole free pages (`malloc_trim(0)`, which also releases
//! pages inside the heap, not only at its top). On other platforms it does
//! nothing.

use std::time::Duration;
use tokio::sync::watch;

/// How often the server trims: often enough that memory follows the number
/// of live calls, rarely enough that the walk over the arenas (well under a
/// millisecond for a thousand calls) never shows in audio pacing.
pub const TRIM_EVERY: Duration = Duration::from_secs(2);

/// Trim the heap every `every` until `stop` turns true.
pub async fn trim_every(every: Duration, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => trim(),
            r = stop.wait_for(|s| *s) => {
                let _ = r;
                return;
            }
        }
    }
}

/// Return free heap pages to the operating system now.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}
