//! Pipelines: stages wired in a line, with a lifecycle that always ends.
//!
//! ```text
//! input ─▶ [stage 0] ─▶ [stage 1] ─▶ … ─▶ [stage n-1] ─▶ (tail, optional)
//!             ▲  control   ▲  control          │
//!             └────────────┴──── upstream ─────┘
//! ```
//!
//! Lifecycle: `Starting` (tasks spawned, every stage gets
//! [`SystemFrame::Start`] before anything else) → `Running` → `Draining`
//! ([`Pipeline::end`]: an `End` frame follows the data through every stage,
//! bounded by a deadline) → `Stopped`. [`Pipeline::cancel`] stops at once.
//! Dropping a pipeline cancels it: no task outlives its call.

use crate::frames::{ControlFrame, Frame, SystemFrame};
use crate::inbox::{inbox, Receiver, Sender};
use crate::observe::ObserverTx;
use crate::scope::CallScope;
use crate::stage::{run_stage, Stage, Wiring};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Data frames a stage's inbox holds before its sender waits.
pub const DEFAULT_CAPACITY: usize = 64;

type Spawner = Box<dyn FnOnce(Wiring) -> JoinHandle<()> + Send>;

/// Builds a [`Pipeline`].
pub struct PipelineBuilder {
    scope: Arc<CallScope>,
    capacity: usize,
    stages: Vec<(&'static str, Spawner)>,
    observer: Option<ObserverTx>,
    tail_capacity: Option<usize>,
}

impl Default for PipelineBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PipelineBuilder {
    /// An empty builder with a fresh [`CallScope`].
    pub fn new() -> Self {
        PipelineBuilder {
            scope: Arc::new(CallScope::new()),
            capacity: DEFAULT_CAPACITY,
            stages: Vec::new(),
            observer: None,
            tail_capacity: None,
        }
    }

    /// Use this scope (to share it with code outside the pipeline).
    pub fn scope(mut self, scope: Arc<CallScope>) -> Self {
        self.scope = scope;
        self
    }

    /// Data frames each inbox holds before its sender waits.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// Report observations to this observer.
    pub fn observer(mut self, tx: ObserverTx) -> Self {
        self.observer = Some(tx);
        self
    }

    /// Keep what the last stage pushes downstream, readable from
    /// [`Pipeline::tail`] (otherwise it is dropped).
    pub fn tail(mut self, capacity: usize) -> Self {
        self.tail_capacity = Some(capacity);
        self
    }

    /// Append a stage, run on the runtime that builds the pipeline.
    pub fn stage<S: Stage>(self, stage: S) -> Self {
        self.stage_on(stage, None)
    }

    /// Append a stage run on `runtime` (none: the one that builds the
    /// pipeline). A stage at the end of the line can run on the thread of
    /// whatever reads the tail — a server's playout thread, beside the
    /// player — so frames reach the reader without queueing again on a
    /// busy runtime. Inboxes, timers and cancellation work across
    /// runtimes; the pipeline joins and aborts the task wherever it runs,
    /// and a task that runtime drops unrun (it shut down) cancels the call.
    ///
    /// What the stage spawns ([`Ctx::spawn`](crate::Ctx::spawn)) runs there
    /// too: put only light stages on a thread that paces audio.
    pub fn stage_on<S: Stage>(mut self, stage: S, runtime: Option<tokio::runtime::Handle>) -> Self {
        let name = stage.name();
        self.stages.push((
            name,
            // Each stage runs in the span of whoever built the pipeline
            // (a served call's span: its logs name the call).
            Box::new(move |wiring| {
                let task = tracing::Instrument::in_current_span(run_stage(stage, wiring));
                match runtime {
                    Some(rt) => rt.spawn(task),
                    None => tokio::spawn(task),
                }
            }),
        ));
        self
    }

    /// Spawn the stage tasks: each on the runtime it was given
    /// ([`Self::stage_on`]), the rest on the current Tokio runtime.
    ///
    /// # Panics
    /// Outside a Tokio runtime when a stage was given none (as
    /// `tokio::spawn` does).
    pub fn build(self) -> Pipeline {
        let n = self.stages.len();
        let mut senders = Vec::with_capacity(n);
        let mut receivers = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = inbox(self.capacity);
            senders.push(tx);
            receivers.push(rx);
        }
        let (tail_tx, tail_rx) = match self.tail_capacity {
            Some(c) => {
                let (tx, rx) = inbox(c);
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let controls: Vec<_> = senders.iter().map(Sender::control_handle).collect();
        for c in &controls {
            let _ = c.push(Frame::System(SystemFrame::Start));
        }
        self.scope.set_stages(controls.clone());
        let input = senders.first().cloned().or_else(|| tail_tx.clone());
        let mut nexts: Vec<Option<Sender>> = senders.into_iter().skip(1).map(Some).collect();
        nexts.push(tail_tx);
        let mut handles = Vec::with_capacity(n);
        let mut names = Vec::with_capacity(n);
        for (index, (((name, spawn), rx), next)) in self
            .stages
            .into_iter()
            .zip(receivers)
            .zip(nexts)
            .enumerate()
        {
            let prev = index.checked_sub(1).map(|i| controls[i].clone());
            names.push(name);
            handles.push(spawn(Wiring {
                rx,
                next,
                prev,
                scope: self.scope.clone(),
                observer: self.observer.clone(),
                index,
            }));
        }
        Pipeline {
            input,
            tail: tail_rx,
            controls,
            scope: self.scope,
            handles,
            names,
            state: Lifecycle::Running,
        }
    }
}

/// Where a pipeline is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    Starting,
    Running,
    Draining,
    Stopped,
}

/// How a pipeline stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StopReport {
    /// Every stage saw `End` and stopped before the deadline.
    pub graceful: bool,
    /// Stages that had to be aborted.
    pub aborted: Vec<&'static str>,
}

/// A running pipeline. Dropping it cancels it.
pub struct Pipeline {
    input: Option<Sender>,
    tail: Option<Receiver>,
    controls: Vec<crate::inbox::ControlHandle>,
    scope: Arc<CallScope>,
    handles: Vec<JoinHandle<()>>,
    names: Vec<&'static str>,
    state: Lifecycle,
}

impl Pipeline {
    /// A builder.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder::new()
    }

    /// Where the input transport sends frames (into the first stage).
    pub fn input(&self) -> Option<&Sender> {
        self.input.as_ref()
    }

    /// What the last stage pushed downstream (when built with
    /// [`PipelineBuilder::tail`]).
    pub fn tail(&mut self) -> Option<&mut Receiver> {
        self.tail.as_mut()
    }

    /// Take the tail receiver (e.g. for the output's player).
    pub fn take_tail(&mut self) -> Option<Receiver> {
        self.tail.take()
    }

    /// The control handle of stage `index` (for frames sent to it from
    /// outside the pipeline, such as the player's upstream reports).
    pub fn stage_control(&self, index: usize) -> Option<crate::inbox::ControlHandle> {
        self.controls.get(index).cloned()
    }

    /// Number of stages.
    pub fn len(&self) -> usize {
        self.controls.len()
    }

    /// Whether the pipeline has no stages.
    pub fn is_empty(&self) -> bool {
        self.controls.is_empty()
    }

    /// The call scope shared by every stage.
    pub fn scope(&self) -> &Arc<CallScope> {
        &self.scope
    }

    /// The current lifecycle state.
    pub fn state(&self) -> Lifecycle {
        if self.state == Lifecycle::Running && self.handles.iter().all(JoinHandle::is_finished) {
            return Lifecycle::Stopped;
        }
        self.state
    }

    /// Graceful end: `End` follows the queued data through every stage.
    /// Stages still running at `deadline` are cancelled and aborted.
    pub async fn end(&mut self, deadline: Duration) -> StopReport {
        self.state = Lifecycle::Draining;
        let start = tokio::time::Instant::now();
        if let Some(input) = self.input.take() {
            let _ =
                tokio::time::timeout(deadline, input.send(Frame::Control(ControlFrame::End))).await;
        }
        let left = deadline.saturating_sub(start.elapsed());
        self.join(left).await
    }

    /// Stop now: every token is cancelled and every stage told; stages are
    /// aborted if they have not stopped within `deadline`.
    pub async fn cancel(&mut self, deadline: Duration) -> StopReport {
        self.state = Lifecycle::Draining;
        self.input = None;
        self.scope.cancel();
        let mut report = self.join(deadline).await;
        report.graceful = false;
        report
    }

    async fn join(&mut self, deadline: Duration) -> StopReport {
        let until = tokio::time::Instant::now() + deadline;
        let mut aborted = Vec::new();
        let mut graceful = true;
        for (h, name) in self.handles.iter_mut().zip(&self.names) {
            match tokio::time::timeout_at(until, &mut *h).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) if e.is_cancelled() => {
                    // Aborted, or its runtime shut down before it finished.
                    tracing::warn!(stage = name, "stage task cancelled before it stopped");
                    graceful = false;
                }
                Ok(Err(e)) => {
                    tracing::error!(stage = name, error = %e, "stage task failed");
                    graceful = false;
                }
                Err(_) => {
                    h.abort();
                    aborted.push(*name);
                    graceful = false;
                }
            }
        }
        if !graceful {
            self.scope.cancel();
        }
        // Background work of the call ends with it.
        self.scope.call_token().cancel();
        self.state = Lifecycle::Stopped;
        StopReport { graceful, aborted }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        if self.state != Lifecycle::Stopped {
            self.scope.cancel();
            for h in &self.handles {
                h.abort();
            }
        }
    }
}
