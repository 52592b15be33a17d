//! A bounded pool of worker threads for blocking native work (a Whisper
//! decode, a Flite synthesis), so a slow job never stalls the async
//! runtime and the calls it carries.
//!
//! Each worker thread owns its own engine (`E`), made on that thread by the
//! factory given to [`Workers::start`]: native engines keep per-thread
//! scratch state (a Whisper decoding state, a Flite voice) and are used by
//! one job at a time. Jobs wait in a queue of fixed length; when it is
//! full, [`Workers::run`] says [`Busy`] at once instead of queueing work
//! that would come back too late to matter — the caller decides what the
//! call hears instead.
//!
//! ```text
//!  call tasks ──run(job)──▶ [queue, bounded] ──▶ worker 1 (engine) ─┐
//!                                          └──▶ worker n (engine) ─┴─▶ oneshot → caller
//! ```
//!
//! Dropping the pool closes the queue; the workers finish the job in hand
//! and exit.

use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

type Job<E> = Box<dyn FnOnce(&mut E) + Send>;

/// The queue was full: too much work is waiting already.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("every local speech worker is busy and the queue is full")]
pub struct Busy;

/// Worker threads, each with its own engine.
pub struct Workers<E> {
    tx: SyncSender<Job<E>>,
    threads: usize,
}

impl<E: 'static> Workers<E> {
    /// Start `threads` workers (at least one) named `name-N`, each with an
    /// engine made by `make` on its own thread; at most `queue` jobs wait.
    /// Fails with the first factory error (after every worker tried).
    pub fn start<F>(name: &str, threads: usize, queue: usize, make: F) -> Result<Self, String>
    where
        F: Fn() -> Result<E, String> + Send + Sync + 'static,
    {
        let threads = threads.max(1);
        let (tx, rx) = mpsc::sync_channel::<Job<E>>(queue);
        let rx = Arc::new(Mutex::new(rx));
        let make = Arc::new(make);
        let mut ready = Vec::with_capacity(threads);
        for i in 0..threads {
            let (rtx, rrx) = mpsc::channel::<Result<(), String>>();
            let rx = rx.clone();
            let make = make.clone();
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    let mut engine = match make() {
                        Ok(e) => {
                            let _ = rtx.send(Ok(()));
                            e
                        }
                        Err(e) => {
                            let _ = rtx.send(Err(e));
                            return;
                        }
                    };
                    loop {
                        // Hold the lock only to take a job.
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(poisoned) => poisoned.into_inner().recv(),
                        };
                        match job {
                            Ok(job) => job(&mut engine),
                            Err(_) => return,
                        }
                    }
                })
                .map_err(|e| format!("cannot start a {name} worker thread: {e}"))?;
            ready.push(rrx);
        }
        let mut first_error = None;
        for r in ready {
            match r.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(_) => {
                    first_error.get_or_insert_with(|| format!("a {name} worker died starting"));
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(Workers { tx, threads }),
        }
    }

    /// Queue `job`; its result arrives on the receiver. [`Busy`] when the
    /// queue is full. If the job panics, the receiver sees the sender
    /// dropped (an error), and the worker goes on with the next job.
    pub fn run<R, F>(&self, job: F) -> Result<oneshot::Receiver<R>, Busy>
    where
        R: Send + 'static,
        F: FnOnce(&mut E) -> R + Send + 'static,
    {
        let (otx, orx) = oneshot::channel();
        let boxed: Job<E> = Box::new(move |engine: &mut E| {
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(engine)));
            if let Ok(out) = out {
                let _ = otx.send(out);
            }
        });
        match self.tx.try_send(boxed) {
            Ok(()) => Ok(orx),
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => Err(Busy),
        }
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn jobs_run_on_a_worker_with_its_own_engine() {
        let w = Workers::start("t", 2, 8, || Ok(0u32)).unwrap();
        let mut rs = Vec::new();
        for i in 0..10u32 {
            // The queue holds 8; wait a little when it is full.
            loop {
                match w.run(move |n: &mut u32| {
                    *n += 1;
                    (i, std::thread::current().name().unwrap().to_string())
                }) {
                    Ok(r) => break rs.push(r),
                    Err(Busy) => tokio::time::sleep(Duration::from_millis(1)).await,
                }
            }
        }
        for (i, r) in rs.into_iter().enumerate() {
            let (j, name) = r.await.unwrap();
            assert_eq!(j as usize, i);
            assert!(name.starts_with("t-"), "{name}");
        }
    }

    #[tokio::test]
    async fn a_full_queue_says_busy_at_once() {
        let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate_rx));
        let w = Workers::start("t", 1, 1, || Ok(())).unwrap();
        let g = gate.clone();
        // The worker blocks on the gate; one more job fits in the queue.
        let first = w
            .run(move |_: &mut ()| g.lock().unwrap().recv().unwrap())
            .unwrap();
        let mut accepted = 0;
        let mut busy = 0;
        for _ in 0..5 {
            match w.run(|_: &mut ()| ()) {
                Ok(_) => accepted += 1,
                Err(Busy) => busy += 1,
            }
        }
        assert!(
            accepted <= 2,
            "at most the queue (and a race with the first take)"
        );
        assert!(busy >= 3);
        gate_tx.send(()).unwrap();
        first.await.unwrap();
    }

    #[tokio::test]
    async fn a_panicking_job_fails_alone() {
        let w = Workers::start("t", 1, 4, || Ok(())).unwrap();
        let bad = w.run(|_: &mut ()| -> u8 { panic!("boom") }).unwrap();
        assert!(bad.await.is_err());
        let good = w.run(|_: &mut ()| 7u8).unwrap();
        assert_eq!(good.await.unwrap(), 7);
    }

    #[test]
    fn a_factory_error_is_reported() {
        let e = Workers::<()>::start("t", 2, 1, || Err("no model at /x".into()))
            .err()
            .unwrap();
        assert_eq!(e, "no model at /x");
    }
}
