//! Observers: watch a pipeline without slowing it down.
//!
//! Stages report [`Observation`]s with a non-blocking `try_send` into a
//! bounded queue read by the observer's own task. When the observer falls
//! behind, observations are dropped (and counted), never waited for.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Something a stage reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    /// Stale frames (of an interrupted turn) dropped from the inbox or on
    /// arrival.
    DroppedStale(usize),
    /// The next stage stopped before this one; the call was cancelled.
    NextStageGone,
    /// The stage task ended.
    Stopped,
    /// Application-defined.
    Note(&'static str),
    /// A tool the model called started (`finished: false`) or returned.
    Tool { name: String, finished: bool },
}

/// One observation with where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub stage_index: usize,
    pub stage: &'static str,
    pub what: Observation,
}

/// The sending side, held by every stage task of an observed pipeline.
#[derive(Clone)]
pub struct ObserverTx {
    tx: mpsc::Sender<Observed>,
    lost: Arc<AtomicU64>,
}

impl ObserverTx {
    /// Report without waiting; drops (and counts) when the observer lags.
    pub fn send(&self, stage_index: usize, stage: &'static str, what: Observation) {
        let o = Observed {
            stage_index,
            stage,
            what,
        };
        if self.tx.try_send(o).is_err() {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The receiving side.
pub struct ObserverRx {
    pub rx: mpsc::Receiver<Observed>,
    lost: Arc<AtomicU64>,
}

impl ObserverRx {
    /// Observations dropped because this receiver lagged.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}

/// A bounded observer queue.
pub fn observer(capacity: usize) -> (ObserverTx, ObserverRx) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let lost = Arc::new(AtomicU64::new(0));
    (
        ObserverTx {
            tx,
            lost: lost.clone(),
        },
        ObserverRx { rx, lost },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_observer_never_blocks_and_counts_losses() {
        let (tx, mut rx) = observer(2);
        for _ in 0..5 {
            tx.send(0, "s", Observation::Note("x"));
        }
        assert_eq!(rx.lost(), 3);
        assert!(rx.rx.try_recv().is_ok());
    }
}
