//! Stages: one task each, handing frames straight to the next stage.
//!
//! A [`Stage`] is a plain struct whose [`Stage::handle`] is synchronous: it
//! looks at one frame and says what to send on ([`Ctx::push`],
//! [`Ctx::push_up`], [`Ctx::pass`]). Slow work (an LLM stream, a TTS
//! request, a timer) is spawned with [`Ctx::spawn`] under a cancellation
//! token and reports back by sending frames into the stage's own inbox, so a
//! stage is never blocked and always sees a barge-in at once.
//!
//! The runner ([`run_stage`]) does what every stage needs, so no stage
//! repeats it:
//! - control frames first (biased), data in order;
//! - on [`SystemFrame::Interrupt`], purge stale frames from the inbox;
//! - never hand a stale interruptible data frame to the stage;
//! - on [`ControlFrame::End`], let the stage see it, forward it and stop;
//! - on [`SystemFrame::Cancel`], stop at once;
//! - if the next stage is gone (it stopped or panicked), cancel the call:
//!   a pipeline never keeps half-running.

use crate::frames::{ControlFrame, Frame, SystemFrame};
use crate::inbox::{ControlHandle, Lane, Receiver, Sender};
use crate::observe::{Observation, ObserverTx};
use crate::scope::CallScope;
use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Where a frame came from / is going.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the input towards the output (data inbox).
    Downstream,
    /// From the output back towards the input (control inbox).
    Upstream,
    /// Broadcast to every stage (system frames).
    Broadcast,
}

/// One step of a pipeline.
pub trait Stage: Send + 'static {
    /// Name for logs and metrics.
    fn name(&self) -> &'static str;

    /// Handle one frame. A stage that does not care about a frame passes it
    /// on with `ctx.pass(frame, dir)`.
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>);
}

pub(crate) enum Out {
    Down(Frame),
    Up(Frame),
}

/// What a stage can do while handling a frame.
pub struct Ctx<'a> {
    out: &'a mut Vec<Out>,
    scope: &'a Arc<CallScope>,
    rx: &'a Receiver,
    name: &'static str,
    observer: Option<&'a ObserverTx>,
    index: usize,
}

impl<'a> Ctx<'a> {
    /// Send a frame downstream (in order, after what was pushed before).
    pub fn push(&mut self, frame: Frame) {
        self.out.push(Out::Down(frame));
    }

    /// Send a control frame upstream (to the previous stage's control
    /// inbox).
    pub fn push_up(&mut self, frame: Frame) {
        self.out.push(Out::Up(frame));
    }

    /// Pass a frame on in the direction it was going. System frames are
    /// already broadcast to every stage and `End` is forwarded by the
    /// runner, so both are ignored here.
    pub fn pass(&mut self, frame: Frame, dir: Direction) {
        match (&frame, dir) {
            (Frame::System(_), _) | (Frame::Control(ControlFrame::End), _) => {}
            (_, Direction::Upstream) => self.push_up(frame),
            (_, _) => self.push(frame),
        }
    }

    /// The call's shared scope (epoch, tokens).
    pub fn scope(&self) -> &Arc<CallScope> {
        self.scope
    }

    /// The current turn epoch.
    pub fn epoch(&self) -> crate::frames::Epoch {
        self.scope.epoch()
    }

    /// Barge-in: start a new turn (see [`CallScope::interrupt`]).
    pub fn interrupt(&mut self) -> crate::frames::Epoch {
        self.scope.interrupt()
    }

    /// A sender into this stage's own inbox, for background work.
    pub fn self_sender(&self) -> Sender {
        self.rx.sender()
    }

    /// A control handle into this stage's own inbox.
    pub fn self_control(&self) -> ControlHandle {
        self.rx.control_handle()
    }

    /// This stage's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Tell the pipeline's observer (never waits: dropped and counted
    /// when the observer lags; nothing without one).
    pub fn observe(&self, o: Observation) {
        if let Some(tx) = self.observer {
            tx.send(self.index, self.name, o);
        }
    }

    /// Run `work` in the background until it finishes or `token` is
    /// cancelled (then it is dropped mid-way: cancelled, not waited for).
    /// `work` gets a sender into this stage's inbox to report back.
    pub fn spawn<F, Fut>(&self, token: CancellationToken, work: F)
    where
        F: FnOnce(Sender) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let fut = work(self.self_sender());
        // In the call's span (logs name the call).
        tokio::spawn(tracing::Instrument::in_current_span(async move {
            tokio::select! {
                biased;
                _ = token.cancelled() => {}
                _ = fut => {}
            }
        }));
    }
}

impl Ctx<'_> {
    /// Run `work` in the background until it finishes or `token` is
    /// cancelled; the frame it returns is delivered to this stage on the
    /// control lane (never stale, never waiting: for results that must not
    /// be lost to a barge-in, such as a booking's answer or a timer).
    pub fn spawn_control<Fut>(&self, token: CancellationToken, work: Fut)
    where
        Fut: Future<Output = Frame> + Send + 'static,
    {
        let control = self.self_control();
        tokio::spawn(tracing::Instrument::in_current_span(async move {
            tokio::select! {
                biased;
                _ = token.cancelled() => {}
                frame = work => {
                    let _ = control.push(frame);
                }
            }
        }));
    }
}

/// Everything a stage task is connected to.
pub(crate) struct Wiring {
    pub rx: Receiver,
    pub next: Option<Sender>,
    pub prev: Option<ControlHandle>,
    pub scope: Arc<CallScope>,
    pub observer: Option<ObserverTx>,
    pub index: usize,
}

/// Run a stage until `End`, `Cancel`, or its upstream is gone.
///
/// Not an `async fn`: an `async fn` keeps its arguments twice in its
/// state, once as passed and once moved into the body
/// (rust-lang/rust#62958), so every stage task of every call would carry
/// its stage twice. The `async move` block keeps the one it captured.
#[allow(clippy::manual_async_fn)] // on purpose: see above
pub(crate) fn run_stage<S: Stage>(
    mut stage: S,
    wiring: Wiring,
) -> impl std::future::Future<Output = ()> + Send {
    // A stage that panics (or is aborted) must not leave a half-running
    // call: its guard cancels the call when dropped before a normal exit.
    // It is made here, outside the task, so a task dropped before it ever
    // ran (spawned on a runtime that has shut down) cancels the call too.
    let guard = FailGuard {
        scope: wiring.scope.clone(),
        name: stage.name(),
        armed: true,
    };
    async move {
        // The whole guard moves into the task (a closure would capture
        // only the field it touches, `armed`, and drop the guard here).
        let mut guard = guard;
        let Wiring {
            mut rx,
            next,
            prev,
            scope,
            observer,
            index,
        } = wiring;
        let name = stage.name();
        let mut out: Vec<Out> = Vec::new();
        let observe = |o: Observation| {
            if let Some(tx) = &observer {
                tx.send(index, name, o);
            }
        };
        loop {
            let (frame, dir) = match rx.recv_lane().await {
                Some((f @ Frame::System(_), _)) => (f, Direction::Broadcast),
                Some((f, Lane::Control)) => (f, Direction::Upstream),
                Some((f, Lane::Data)) => (f, Direction::Downstream),
                // Every sender is gone: the input closed without an End.
                None => (Frame::Control(ControlFrame::End), Direction::Downstream),
            };
            let mut stop = false;
            match &frame {
                Frame::System(SystemFrame::Interrupt { epoch }) => {
                    let epoch = *epoch;
                    let dropped = rx.purge_stale(|f| f.is_stale(epoch));
                    if dropped > 0 {
                        observe(Observation::DroppedStale(dropped));
                    }
                }
                Frame::System(SystemFrame::Cancel) => stop = true,
                Frame::Control(ControlFrame::End) if dir == Direction::Downstream => stop = true,
                f if f.is_stale(scope.epoch()) => {
                    observe(Observation::DroppedStale(1));
                    continue;
                }
                _ => {}
            }
            {
                let mut ctx = Ctx {
                    out: &mut out,
                    scope: &scope,
                    rx: &rx,
                    name,
                    observer: observer.as_ref(),
                    index,
                };
                stage.handle(frame, dir, &mut ctx);
            }
            if stop && !scope.is_cancelled() {
                out.push(Out::Down(Frame::Control(ControlFrame::End)));
            }
            for o in out.drain(..) {
                match o {
                    Out::Down(f) => {
                        let Some(next) = &next else { continue };
                        if scope.is_cancelled() {
                            break;
                        }
                        if f.is_stale(scope.epoch()) {
                            observe(Observation::DroppedStale(1));
                            continue;
                        }
                        let sent = match next.try_send(f) {
                            Ok(()) => Ok(()),
                            // The slow path is boxed: its state would otherwise
                            // make every stage task of every call larger.
                            Err(crate::inbox::Closed(f)) => {
                                Box::pin(send_waiting(next, f, &scope, &observe)).await
                            }
                        };
                        if sent.is_err() {
                            tracing::warn!(stage = name, "next stage is gone; cancelling the call");
                            observe(Observation::NextStageGone);
                            scope.cancel();
                            stop = true;
                            break;
                        }
                    }
                    Out::Up(f) => {
                        if let Some(prev) = &prev {
                            let _ = prev.push(f);
                        }
                    }
                }
            }
            out.clear();
            if stop || scope.is_cancelled() {
                break;
            }
        }
        guard.armed = false;
        observe(Observation::Stopped);
    }
}

/// The slow path of a hand-off: the next inbox is full. Waits for room, but
/// drops the frame if a barge-in makes it stale meanwhile (a frame waiting
/// at a stage's door is still "queued output") and gives up when the call
/// is cancelled.
async fn send_waiting(
    next: &Sender,
    frame: Frame,
    scope: &CallScope,
    observe: &impl Fn(Observation),
) -> Result<(), crate::inbox::Closed> {
    loop {
        let changed = scope.epoch_changed();
        if frame.is_stale(scope.epoch()) {
            observe(Observation::DroppedStale(1));
            return Ok(());
        }
        tokio::select! {
            biased;
            _ = scope.call_token().cancelled() => return Ok(()),
            _ = changed => continue,
            r = next.send(frame.clone()) => return r,
        }
    }
}

struct FailGuard {
    scope: Arc<CallScope>,
    name: &'static str,
    armed: bool,
}

impl Drop for FailGuard {
    fn drop(&mut self) {
        if self.armed && !self.scope.is_cancelled() {
            tracing::error!(
                stage = self.name,
                "stage stopped abnormally; cancelling the call"
            );
            self.scope.cancel();
        }
    }
}

#[cfg(test)]
mod task_size {
    use super::*;

    /// A stage with 2,000 bytes of state of its own.
    struct Big([u8; 2000]);

    impl Stage for Big {
        fn name(&self) -> &'static str {
            "big"
        }
        fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
            self.0[0] = self.0[0].wrapping_add(1);
            ctx.pass(frame, dir);
        }
    }

    #[test]
    fn a_stage_task_holds_its_stage_once() {
        let (_tx, rx) = crate::inbox::inbox(4);
        let wiring = Wiring {
            rx,
            next: None,
            prev: None,
            scope: Arc::new(crate::scope::CallScope::new()),
            observer: None,
            index: 0,
        };
        let task = run_stage(Big([0; 2000]), wiring);
        let size = std::mem::size_of_val(&task);
        // An `async fn` would hold it twice (> 4,000 bytes): every call
        // has nine stage tasks.
        assert!(
            size < 3000,
            "a stage task of {size} bytes for a 2,000-byte stage"
        );
    }
}
