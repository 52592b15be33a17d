//! A stage's inbox: a never-blocking control queue beside a bounded data
//! queue, read control-first.
//!
//! Why not two `tokio::sync::mpsc` channels and a biased `select!`? Same
//! semantics, but one mutex-protected pair of `VecDeque`s costs one small
//! allocation per stage instead of two pre-allocated channel blocks (an idle
//! call has to stay small), needs one waker instead of two, and lets a stage
//! purge stale frames *in place* when a barge-in happens
//! ([`Receiver::purge_stale`]) instead of only when they are dequeued.
//!
//! - [`Sender::send`] waits while the data queue is full (backpressure).
//! - [`Sender::push_control`] / [`ControlHandle::push`] never wait.
//! - [`Receiver::recv`] returns control frames first, then data in order;
//!   `None` once every [`Sender`] is gone and the queues are empty.
//!   [`ControlHandle`]s do not keep the inbox open.

use crate::frames::Frame;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

struct Queues {
    control: VecDeque<Frame>,
    data: VecDeque<Frame>,
    rx_waker: Option<Waker>,
    tx_wakers: Vec<Waker>,
    rx_closed: bool,
}

/// A data queue that held a burst gives its memory back once it runs
/// empty (a thousand live calls have a dozen inboxes each); up to this
/// many slots are kept, for the next frame of a steady stream (audio
/// every 20 ms).
const KEEP_CAPACITY: usize = 4;

impl Queues {
    /// The next frame, control first.
    fn pop(&mut self) -> Option<(Frame, Lane)> {
        fn taken(q: &mut VecDeque<Frame>, keep: usize) -> Option<Frame> {
            let f = q.pop_front()?;
            if q.is_empty() && q.capacity() > keep {
                q.shrink_to(keep);
            }
            Some(f)
        }
        // Control frames come now and then: an empty control queue keeps
        // no slots at all.
        if let Some(f) = taken(&mut self.control, 0) {
            return Some((f, Lane::Control));
        }
        taken(&mut self.data, KEEP_CAPACITY).map(|f| (f, Lane::Data))
    }
}

struct Shared {
    queues: Mutex<Queues>,
    capacity: usize,
    senders: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        // A panic while holding this lock cannot leave the queues in a torn
        // state (every critical section is a push or a pop), so a poisoned
        // lock is still usable.
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending side of an inbox (cloneable).
pub struct Sender {
    shared: Arc<Shared>,
}

/// Pushes out-of-band frames into an inbox; does not keep it open.
#[derive(Clone)]
pub struct ControlHandle {
    shared: Arc<Shared>,
}

/// The receiving side of an inbox (one per stage).
pub struct Receiver {
    shared: Arc<Shared>,
}

/// Which queue of an inbox a frame came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// Out of band: system frames and frames travelling upstream.
    Control,
    /// In order: data and downstream control frames.
    Data,
}

/// The inbox is closed (its stage stopped); the frame is handed back.
#[derive(Debug)]
pub struct Closed(pub Frame);

/// A new inbox whose data queue holds at most `capacity` frames.
pub fn inbox(capacity: usize) -> (Sender, Receiver) {
    let shared = Arc::new(Shared {
        queues: Mutex::new(Queues {
            control: VecDeque::new(),
            data: VecDeque::new(),
            rx_waker: None,
            tx_wakers: Vec::new(),
            rx_closed: false,
        }),
        capacity: capacity.max(1),
        senders: AtomicUsize::new(1),
    });
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

impl Clone for Sender {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::Relaxed);
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            let waker = self.shared.lock().rx_waker.take();
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

fn push_control(shared: &Shared, frame: Frame) -> Result<(), Closed> {
    let waker = {
        let mut q = shared.lock();
        if q.rx_closed {
            return Err(Closed(frame));
        }
        q.control.push_back(frame);
        q.rx_waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
    Ok(())
}

impl Sender {
    /// Queue a data/control frame in order, waiting while the data queue is
    /// full.
    pub async fn send(&self, frame: Frame) -> Result<(), Closed> {
        let mut frame = Some(frame);
        poll_fn(|cx| {
            let mut q = self.shared.lock();
            if q.rx_closed {
                return Poll::Ready(Err(Closed(frame.take().expect("polled after ready"))));
            }
            if q.data.len() < self.shared.capacity {
                q.data.push_back(frame.take().expect("polled after ready"));
                let waker = q.rx_waker.take();
                drop(q);
                if let Some(w) = waker {
                    w.wake();
                }
                return Poll::Ready(Ok(()));
            }
            if !q.tx_wakers.iter().any(|w| w.will_wake(cx.waker())) {
                q.tx_wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// Queue a frame in order without waiting; hands it back when the queue
    /// is full or closed.
    pub fn try_send(&self, frame: Frame) -> Result<(), Closed> {
        let waker = {
            let mut q = self.shared.lock();
            if q.rx_closed || q.data.len() >= self.shared.capacity {
                return Err(Closed(frame));
            }
            q.data.push_back(frame);
            q.rx_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }

    /// Push an out-of-band frame (never waits).
    pub fn push_control(&self, frame: Frame) -> Result<(), Closed> {
        push_control(&self.shared, frame)
    }

    /// A handle for out-of-band frames only.
    pub fn control_handle(&self) -> ControlHandle {
        ControlHandle {
            shared: self.shared.clone(),
        }
    }

    /// Frames waiting in the data queue.
    pub fn data_len(&self) -> usize {
        self.shared.lock().data.len()
    }
}

impl ControlHandle {
    /// Push an out-of-band frame (never waits).
    pub fn push(&self, frame: Frame) -> Result<(), Closed> {
        push_control(&self.shared, frame)
    }
}

impl Receiver {
    /// The next frame: control first, then data in order. `None` when every
    /// sender is gone and nothing is left.
    pub async fn recv(&mut self) -> Option<Frame> {
        self.recv_lane().await.map(|(f, _)| f)
    }

    /// Like [`Receiver::recv`], also telling which queue the frame came
    /// from.
    pub async fn recv_lane(&mut self) -> Option<(Frame, Lane)> {
        poll_fn(|cx| {
            let mut q = self.shared.lock();
            if let Some((f, lane)) = q.pop() {
                if lane == Lane::Data {
                    let wakers = std::mem::take(&mut q.tx_wakers);
                    drop(q);
                    for w in wakers {
                        w.wake();
                    }
                }
                return Poll::Ready(Some((f, lane)));
            }
            if self.shared.senders.load(Ordering::Acquire) == 0 {
                return Poll::Ready(None);
            }
            match &q.rx_waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => q.rx_waker = Some(cx.waker().clone()),
            }
            Poll::Pending
        })
        .await
    }

    /// The next frame if one is ready now.
    pub fn try_recv(&mut self) -> Option<Frame> {
        let mut q = self.shared.lock();
        let (f, lane) = q.pop()?;
        if lane == Lane::Control {
            return Some(f);
        }
        let wakers = std::mem::take(&mut q.tx_wakers);
        drop(q);
        for w in wakers {
            w.wake();
        }
        Some(f)
    }

    /// Drop every queued frame that `stale` says is stale; returns how many.
    pub fn purge_stale(&mut self, mut stale: impl FnMut(&Frame) -> bool) -> usize {
        let mut q = self.shared.lock();
        let before = q.data.len();
        q.data.retain(|f| !stale(f));
        let dropped = before - q.data.len();
        let wakers = if dropped > 0 {
            std::mem::take(&mut q.tx_wakers)
        } else {
            Vec::new()
        };
        drop(q);
        for w in wakers {
            w.wake();
        }
        dropped
    }

    /// A sender into this inbox (for a stage's own background work).
    pub fn sender(&self) -> Sender {
        self.shared.senders.fetch_add(1, Ordering::Relaxed);
        Sender {
            shared: self.shared.clone(),
        }
    }

    /// A control handle into this inbox.
    pub fn control_handle(&self) -> ControlHandle {
        ControlHandle {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let wakers = {
            let mut q = self.shared.lock();
            q.rx_closed = true;
            q.control.clear();
            q.data.clear();
            std::mem::take(&mut q.tx_wakers)
        };
        for w in wakers {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::{ControlFrame, Data, SystemFrame};

    fn text(epoch: u64, s: &str) -> Frame {
        Frame::data(
            epoch,
            Data::Speak(crate::frames::UtteranceText {
                id: 1,
                text: s.into(),
            }),
        )
    }

    #[tokio::test]
    async fn control_overtakes_data() {
        let (tx, mut rx) = inbox(4);
        tx.send(text(0, "a")).await.unwrap();
        tx.push_control(Frame::System(SystemFrame::Cancel)).unwrap();
        assert!(matches!(
            rx.recv().await,
            Some(Frame::System(SystemFrame::Cancel))
        ));
        assert!(matches!(rx.recv().await, Some(Frame::Data(_))));
    }

    #[tokio::test]
    async fn emptied_queues_keep_a_few_data_slots_and_no_control_slots() {
        let (tx, mut rx) = inbox(64);
        for _ in 0..32 {
            tx.send(text(0, "a")).await.unwrap();
            tx.push_control(Frame::Control(ControlFrame::BotStoppedSpeaking))
                .unwrap();
        }
        for _ in 0..64 {
            rx.recv().await.unwrap();
        }
        let q = rx.shared.lock();
        assert_eq!(q.control.capacity(), 0);
        assert!(q.data.capacity() <= KEEP_CAPACITY, "{}", q.data.capacity());
    }

    #[tokio::test]
    async fn bounded_data_waits_and_control_never_does() {
        let (tx, mut rx) = inbox(2);
        tx.send(text(0, "a")).await.unwrap();
        tx.send(text(0, "b")).await.unwrap();
        assert!(tx.try_send(text(0, "c")).is_err());
        for _ in 0..100 {
            tx.push_control(Frame::Control(ControlFrame::BotStoppedSpeaking))
                .unwrap();
        }
        let waiting = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send(text(0, "c")).await.is_ok() }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        for _ in 0..101 {
            rx.recv().await.unwrap();
        }
        assert!(waiting.await.unwrap());
    }

    #[tokio::test]
    async fn closes_when_senders_are_gone_but_not_for_control_handles() {
        let (tx, mut rx) = inbox(2);
        let control = tx.control_handle();
        tx.send(text(0, "a")).await.unwrap();
        drop(tx);
        assert!(rx.recv().await.is_some());
        assert!(rx.recv().await.is_none());
        control
            .push(Frame::System(SystemFrame::Start))
            .expect("receiver alive");
        drop(rx);
        assert!(control.push(Frame::System(SystemFrame::Start)).is_err());
    }

    #[tokio::test]
    async fn purge_drops_stale_frames_in_place() {
        let (tx, mut rx) = inbox(8);
        tx.send(text(0, "old")).await.unwrap();
        tx.send(Frame::Control(ControlFrame::End)).await.unwrap();
        tx.send(text(1, "new")).await.unwrap();
        assert_eq!(rx.purge_stale(|f| f.is_stale(1)), 1);
        assert!(matches!(
            rx.recv().await,
            Some(Frame::Control(ControlFrame::End))
        ));
        match rx.recv().await {
            Some(Frame::Data(d)) => assert_eq!(d.epoch, 1),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn send_to_a_stopped_stage_hands_the_frame_back() {
        let (tx, rx) = inbox(1);
        tx.send(text(0, "a")).await.unwrap();
        let blocked = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send(text(0, "b")).await }
        });
        tokio::task::yield_now().await;
        drop(rx);
        assert!(blocked.await.unwrap().is_err());
        assert!(tx.send(text(0, "c")).await.is_err());
    }
}
