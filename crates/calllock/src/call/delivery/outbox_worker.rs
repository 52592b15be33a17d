//! The outbox worker: delivers what post-call processing could not, until
//! accepted — alerts and the other deliveries as two independent lanes —
//! and tells the operator, for each waiting item, when it is really
//! attempted next and why ([`explain_waits`]), or attempts one at once
//! ([`OutboxWorker::retry_now`]). See the [module above](super) for the
//! rules.

use super::retry::{Backoff, Clock};
use agent::backend::{Backend, ToolCall};
use providers::dashboard::DashboardClient;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use store::{OutboxClaim, OutboxItem, OutboxLane};
use store::{OutboxKind, OutboxStatus};

/// What [`OutboxWorker::retry_now`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryOutcome {
    /// Attempted and accepted (the target's answer).
    Delivered(Value),
    /// Attempted and refused: why, and when the worker tries again.
    Failed {
        error: String,
        next_attempt_unix: f64,
    },
    /// Not attempted: why (waits behind another item, being attempted
    /// by a worker right now).
    Cannot(String),
    /// No such item waits (never existed, or delivered / given up since).
    NotWaiting(String),
}

/// Why a waiting item has not been delivered yet, and when it is
/// really attempted next.
#[derive(Debug, Clone, PartialEq)]
pub struct Wait {
    pub item: OutboxItem,
    /// The earliest time (Unix seconds) a worker can attempt it; at or
    /// before `now` when it is due.
    pub next_attempt_unix: f64,
    pub why: WaitReason,
}

/// The reason in a [`Wait`].
#[derive(Debug, Clone, PartialEq)]
pub enum WaitReason {
    /// Not attempted before this earlier item of its call and lane is
    /// delivered or given up.
    Behind(Box<OutboxItem>),
    /// A worker holds it (an attempt is under way) until `until`; if the
    /// worker stops, another takes it over then.
    Leased { owner: String, until: f64 },
    /// The last attempt failed; not tried again before its next attempt.
    BackingOff { attempts: i64, error: String },
    /// Due: the worker attempts it on its next pass.
    Due,
}

/// For each pending item (as [`store::Store::outbox_pending`] lists them),
/// when it is really attempted next and why not before — the same rules
/// the claim applies (lanes, per-call order, leases, backoff).
pub fn explain_waits(pending: Vec<OutboxItem>, now: f64) -> Vec<Wait> {
    use std::collections::HashMap;
    // The first pending item of each call and lane holds up the others.
    let mut heads: HashMap<(String, OutboxLane), OutboxItem> = HashMap::new();
    for it in &pending {
        let key = (it.call_id.clone(), it.kind.lane());
        match heads.get(&key) {
            Some(h) if h.seq <= it.seq => {}
            _ => {
                heads.insert(key, it.clone());
            }
        }
    }
    let own = |it: &OutboxItem| -> (f64, WaitReason) {
        match (&it.lease_owner, it.lease_until) {
            (Some(owner), Some(until)) if until >= now => (
                until.max(it.next_attempt_unix),
                WaitReason::Leased {
                    owner: owner.clone(),
                    until,
                },
            ),
            _ if it.next_attempt_unix > now => (
                it.next_attempt_unix,
                WaitReason::BackingOff {
                    attempts: it.attempts,
                    error: it.last_error.clone(),
                },
            ),
            _ => (it.next_attempt_unix.min(now), WaitReason::Due),
        }
    };
    pending
        .into_iter()
        .map(|item| {
            let head = heads
                .get(&(item.call_id.clone(), item.kind.lane()))
                .filter(|h| h.id != item.id);
            let (next, why) = match head {
                Some(h) => {
                    let (head_next, _) = own(h);
                    (
                        head_next.max(item.next_attempt_unix),
                        WaitReason::Behind(Box::new(h.clone())),
                    )
                }
                None => own(&item),
            };
            Wait {
                item,
                next_attempt_unix: next,
                why,
            }
        })
        .collect()
}

/// What one pass of the outbox worker did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainReport {
    pub claimed: usize,
    pub delivered: usize,
    pub failed: usize,
}

impl std::ops::AddAssign for DrainReport {
    fn add_assign(&mut self, r: DrainReport) {
        self.claimed += r.claimed;
        self.delivered += r.delivered;
        self.failed += r.failed;
    }
}

/// Delivers what the outbox holds, until accepted.
#[derive(Clone)]
pub struct OutboxWorker {
    pub store: store::Store,
    pub dashboard: Option<Arc<DashboardClient>>,
    pub backend: Arc<dyn Backend>,
    /// This worker's name in leases (instance + process id).
    pub worker: String,
    pub backoff: Backoff,
    pub lease_s: f64,
    pub batch: i64,
}

impl OutboxWorker {
    /// Claim what is due at `now` and attempt each item once: the alert
    /// lane first, then the others.
    pub async fn drain_once(&self, now: f64) -> Result<DrainReport, store::StoreError> {
        let mut report = self.drain_lane_once(OutboxLane::Alerts, now).await?;
        report += self.drain_lane_once(OutboxLane::Ordinary, now).await?;
        Ok(report)
    }

    /// Claim what is due at `now` in `lane` and attempt each item once.
    pub async fn drain_lane_once(
        &self,
        lane: OutboxLane,
        now: f64,
    ) -> Result<DrainReport, store::StoreError> {
        let items = self
            .store
            .outbox_claim_lane(lane, &self.worker, now, self.lease_s, self.batch)
            .await?;
        let mut report = DrainReport {
            claimed: items.len(),
            ..DrainReport::default()
        };
        for item in items {
            match self.attempt_and_settle(&item, &self.worker, now).await? {
                Ok(_) => report.delivered += 1,
                Err(_) => report.failed += 1,
            }
        }
        Ok(report)
    }

    /// Attempt `item` (leased to `worker`) once and record the outcome:
    /// `Ok(answer)`, or `Err((error, next attempt time))`.
    async fn attempt_and_settle(
        &self,
        item: &OutboxItem,
        worker: &str,
        now: f64,
    ) -> Result<Result<Value, (String, f64)>, store::StoreError> {
        match self.attempt(item).await {
            Ok(answer) => {
                // Link first: the call record cannot be claimed while its
                // job is still pending, so no worker sends it without the
                // ids in between.
                if item.kind == OutboxKind::Job {
                    self.link_call_payload(&item.call_id, &answer).await;
                }
                let ours = self
                    .store
                    .outbox_mark_delivered(&item.id, worker, &answer, now)
                    .await?;
                if !ours {
                    tracing::warn!(
                        id = item.id,
                        "delivered after the lease passed to another worker"
                    );
                }
                Ok(Ok(answer))
            }
            Err(err) => {
                let next = now + self.backoff.delay_s(item.attempts + 1);
                tracing::warn!(id = item.id, call_id = item.call_id, kind = %item.kind, attempts = item.attempts + 1, error = %err, "outbox delivery failed; will retry");
                self.store
                    .outbox_mark_failed(&item.id, worker, &err, next)
                    .await?;
                Ok(Err((err, next)))
            }
        }
    }

    /// Attempt the waiting item `id` now, whatever its next attempt time
    /// (the operator's "retry now"), and say what happened. It is attempted
    /// only when no worker holds it and nothing of its call and lane is
    /// ahead of it — the order a worker keeps too.
    pub async fn retry_now(&self, id: &str, now: f64) -> Result<RetryOutcome, store::StoreError> {
        let worker = format!("{} (retry now)", self.worker);
        let item = match self
            .store
            .outbox_claim_item(id, &worker, now, self.lease_s)
            .await?
        {
            OutboxClaim::Claimed(item) => item,
            OutboxClaim::NotWaiting(None) => {
                return Ok(RetryOutcome::NotWaiting(format!("no delivery {id} waits")))
            }
            OutboxClaim::NotWaiting(Some(it)) => {
                return Ok(RetryOutcome::NotWaiting(format!(
                    "the {} of call {} is {} already",
                    it.kind, it.call_id, it.status
                )))
            }
            OutboxClaim::Leased(it) => {
                let owner = it.lease_owner.as_deref().unwrap_or("a worker");
                return Ok(RetryOutcome::Cannot(format!(
                    "{owner} is attempting it right now (its lease ends in {})",
                    in_seconds(it.lease_until.unwrap_or(now) - now)
                )));
            }
            OutboxClaim::Behind(ahead) => {
                let why = if ahead.last_error.is_empty() {
                    "not attempted yet".to_string()
                } else {
                    format!(
                        "failed {} time{}: {}",
                        ahead.attempts,
                        if ahead.attempts == 1 { "" } else { "s" },
                        ahead.last_error
                    )
                };
                return Ok(RetryOutcome::Cannot(format!(
                    "it waits behind the {} of the same call ({}; {why}), which must be delivered first — retry that one",
                    ahead.kind, ahead.id
                )));
            }
        };
        tracing::info!(id, kind = %item.kind, call_id = item.call_id, "an outbox delivery is attempted now (operator)");
        Ok(match self.attempt_and_settle(&item, &worker, now).await? {
            Ok(answer) => RetryOutcome::Delivered(answer),
            Err((error, next_attempt_unix)) => RetryOutcome::Failed {
                error,
                next_attempt_unix,
            },
        })
    }

    /// Keep draining until nothing is due (`now` from `clock`); returns the
    /// totals. Used by `calllock outbox deliver` and after recovery.
    pub async fn drain_due(&self, clock: &Clock) -> Result<DrainReport, store::StoreError> {
        let mut report = self.drain_lane_due(OutboxLane::Alerts, clock).await?;
        report += self.drain_lane_due(OutboxLane::Ordinary, clock).await?;
        Ok(report)
    }

    /// [`OutboxWorker::drain_due`] for one lane.
    pub async fn drain_lane_due(
        &self,
        lane: OutboxLane,
        clock: &Clock,
    ) -> Result<DrainReport, store::StoreError> {
        let mut total = DrainReport::default();
        loop {
            let r = self.drain_lane_once(lane, clock()).await?;
            total += r;
            if r.claimed == 0 || r.delivered == 0 {
                return Ok(total);
            }
        }
    }

    /// Run until `stop` is set, polling every `poll`: the alert lane and
    /// the others as two independent loops (see the module docs).
    pub async fn run(self, clock: Clock, poll: Duration, stop: tokio::sync::watch::Receiver<bool>) {
        tokio::join!(
            self.run_lane(OutboxLane::Alerts, &clock, poll, stop.clone()),
            self.run_lane(OutboxLane::Ordinary, &clock, poll, stop),
        );
    }

    async fn run_lane(
        &self,
        lane: OutboxLane,
        clock: &Clock,
        poll: Duration,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        loop {
            if let Err(e) = self.drain_lane_due(lane, clock).await {
                tracing::warn!(error = %e, ?lane, "outbox pass failed");
            }
            tokio::select! {
                _ = tokio::time::sleep(poll) => {}
                _ = stop.changed() => return,
            }
            if *stop.borrow() {
                return;
            }
        }
    }

    async fn attempt(&self, item: &store::OutboxItem) -> Result<Value, String> {
        match item.kind {
            OutboxKind::Callback => {
                let call: ToolCall = serde_json::from_value(item.payload.clone())
                    .map_err(|e| format!("stored callback request is unreadable: {e}"))?;
                let answer = self.backend.call(&call).await;
                if agent::tools::call_succeeded(&answer) {
                    Ok(answer)
                } else {
                    Err(answer
                        .get("error")
                        .or_else(|| answer.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or("callback not created")
                        .to_string())
                }
            }
            _ => {
                let Some(dash) = &self.dashboard else {
                    return Err("the dashboard is not configured".into());
                };
                let body = serde_json::to_vec(&item.payload).unwrap_or_default();
                dash.post_once(&item.target_url, &body, Some(&item.id))
                    .await
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// A job accepted late: give its ids to the call record still waiting.
    async fn link_call_payload(&self, call_id: &str, job_answer: &Value) {
        let (lead, job) = (
            id_field(job_answer, "lead_id"),
            id_field(job_answer, "job_id"),
        );
        if lead.is_none() && job.is_none() {
            return;
        }
        let Ok(items) = self.store.outbox_for_call(call_id).await else {
            return;
        };
        for it in items
            .into_iter()
            .filter(|i| i.kind == OutboxKind::Call && i.status == OutboxStatus::Pending)
        {
            let mut p = it.payload.clone();
            if let Some(o) = p.as_object_mut() {
                if let Some(l) = &lead {
                    o.entry("lead_id").or_insert_with(|| json!(l));
                }
                if let Some(j) = &job {
                    o.entry("job_id").or_insert_with(|| json!(j));
                }
            }
            if p != it.payload {
                if let Err(e) = self.store.outbox_update_payload(&it.id, &p).await {
                    tracing::warn!(id = it.id, error = %e, "cannot link the call record to its job");
                }
            }
        }
    }
}

/// `seconds` from now as a person reads it: "42 s", "600 s (10 min)",
/// "7200 s (2 h)" — relative, so no time zone is involved.
pub fn in_seconds(seconds: f64) -> String {
    let s = if seconds.is_finite() {
        seconds.max(0.0).round()
    } else {
        0.0
    };
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7_200.0 {
        format!("{s:.0} s ({:.0} min)", (s / 60.0).round())
    } else {
        format!("{s:.0} s ({:.0} h)", (s / 3_600.0).round())
    }
}

/// An id the dashboard answered with (a string, or a number).
pub(super) fn id_field(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
