//! Post-call processing and the durable outbox (SPEC §7.1–§7.5, §7.8; D-4,
//! D-17).
//!
//! [`PostCall::handle_call_ended`] does what the reference's
//! `handle_call_ended` does — keep a promised callback (D-4), classify the
//! call (deterministic §7.6 plus the LLM's §7.7 fields when a model is
//! configured), save the record, send the job, the call and (after a safety
//! exit) the emergency alert to the dashboard, emit the transcript dump —
//! with one difference that matters to the business owner: every delivery
//! and every callback that could not be created is first written to the
//! `outbox` table, so nothing is lost when the dashboard or the backend is
//! down, or the process dies. Each delivery gets the reference's immediate
//! attempt (one retry after 2 s); whatever is still undelivered is retried
//! by an [`OutboxWorker`] with exponential backoff (capped) until accepted,
//! across restarts, in order per call, by one worker at a time (leases;
//! `SKIP LOCKED` on PostgreSQL).
//!
//! ## Alerts never wait behind a job
//!
//! An emergency alert (a gas leak) must reach the owner even while the
//! dashboard rejects the job of the same call. The outbox keeps alerts in
//! their own lane ([`store::OutboxLane`]): a call's order holds within a
//! lane only, and [`OutboxWorker::run`] drives the two lanes as two
//! independent loops, so a failing — or hanging — ordinary delivery never
//! delays an alert's next attempt.
//!
//! ## Telling the operator the truth
//!
//! [`explain_waits`] says, for each waiting item, when it will really be
//! attempted next and why not sooner (behind another item of its call,
//! backing off after failures, leased to a worker, or due now);
//! [`OutboxWorker::retry_now`] attempts one item at once and reports what
//! happened, or why it could not be attempted.
//!
//! Dashboard requests carry `X-Webhook-Secret`, the D-17
//! `X-Webhook-Signature` (HMAC-SHA256 of the body) and an `Idempotency-Key`
//! (the outbox item id), so a receiver can drop the duplicate that an
//! at-least-once retry after a crash mid-request could produce.

use crate::call::outcome::Outcome;
use crate::call::record::{self, FinishedCall};
use agent::backend::Backend;
use agent::classify::classification_prompt;
use agent::postcall::{
    booking_status, build_call_payload, build_emergency_alert, merge_classification,
};
use agent::responder::Responder;
use agent::transcript::{chunk_transcript_dump, to_plain_text, to_timestamped_dump};
use agent::State;
use providers::dashboard::DashboardClient;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

mod outbox_worker;
mod retry;
use outbox_worker::id_field;
pub use outbox_worker::{
    explain_waits, in_seconds, DrainReport, OutboxWorker, RetryOutcome, Wait, WaitReason,
};
pub use retry::{real_sleeper, system_clock, Backoff, Clock, Sleeper};

use store::{CallStatus, OutboxKind, OutboxStatus};

/// The reference's immediate retry pause (SPEC §7.8).
pub const IMMEDIATE_RETRY_PAUSE: Duration = Duration::from_secs(2);

/// Everything post-call processing talks to.
#[derive(Clone)]
pub struct PostCall {
    pub store: store::Store,
    /// `None`: dashboard delivery is not configured (the record is still
    /// saved, promised callbacks are still kept).
    pub dashboard: Option<Arc<DashboardClient>>,
    pub user_email: String,
    pub backend: Arc<dyn Backend>,
    /// What `create_callback` items are labelled with in the outbox (the V2
    /// URL, or `embedded:create_callback`).
    pub callback_target: String,
    pub responder: Arc<dyn Responder>,
    pub backoff: Backoff,
    pub clock: Clock,
    pub sleeper: Sleeper,
    /// How long an item enqueued by the immediate attempt stays reserved
    /// for it before a worker may take it over (a crash in between).
    pub reserve_s: f64,
    /// This process's name in outbox leases.
    pub worker: String,
}

/// What post-call processing did.
#[derive(Debug, Clone)]
pub struct PostCallReport {
    pub finished: FinishedCall,
    /// `TRANSCRIPT_DUMP|i/n|JSON` lines (also logged).
    pub dump_lines: Vec<String>,
    /// Target URLs left pending in the outbox.
    pub pending: Vec<String>,
    /// The LLM classification merged into the job (empty offline).
    pub classification: Map<String, Value>,
}

impl PostCall {
    /// Post-call processing on this machine alone — the embedded backend's
    /// `store`, no dashboard, no LLM (the scripted responder): what
    /// `calllock demo` and `calllock replay` use, so their calls keep a
    /// promised callback and are recorded exactly as served calls are.
    pub fn local(
        store: store::Store,
        backend: Arc<dyn Backend>,
        cfg: &crate::config::Config,
        clock: Clock,
    ) -> PostCall {
        PostCall {
            store,
            dashboard: None,
            user_email: cfg.dashboard.user_email.clone(),
            backend,
            callback_target: "embedded:create_callback".into(),
            responder: Arc::new(agent::responder::ScriptedResponder::new(
                cfg.business.clone(),
            )),
            backoff: Backoff::default(),
            clock,
            sleeper: real_sleeper(),
            reserve_s: cfg.outbox.lease_s,
            worker: "local".into(),
        }
    }

    fn now(&self) -> f64 {
        (self.clock)()
    }

    /// Everything that happens when a call ends (see the module docs).
    /// `interrupted`: the call was rebuilt from its journal after a crash
    /// (its status stays `interrupted`). Never fails: every problem is
    /// logged and whatever could not be done waits in the outbox.
    pub async fn handle_call_ended(
        &self,
        outcome: &mut Outcome,
        interrupted: bool,
    ) -> PostCallReport {
        let call_id = outcome.session.call_sid.clone();
        let mut pending = Vec::new();

        // D-4: a promised callback that was not created is created now, or
        // waits in the outbox.
        if let Some(url) = self.keep_callback_promise(outcome).await {
            pending.push(url);
        }

        // §7.7: the LLM's classification (offline: nothing to add).
        let s = &outcome.session;
        let transcript_text = to_plain_text(&s.transcript_log);
        let classification = if transcript_text.trim().is_empty() {
            Map::new()
        } else {
            let prompt = classification_prompt(
                &s.customer_name,
                s.state,
                booking_status(s),
                &s.urgency_tier,
                &transcript_text,
            );
            self.responder.classify(&prompt).await.unwrap_or_default()
        };

        let mut fc = record::classify(outcome, &self.user_email);
        merge_classification(&mut fc.job_payload, &classification);
        if !classification.is_empty() {
            fc.classification = Some(classification.clone());
        }
        let status = if interrupted {
            CallStatus::Interrupted
        } else {
            CallStatus::Completed
        };
        if let Err(e) = record::save_as(&self.store, outcome, &fc, status, false).await {
            tracing::error!(call_id, error = %e, "cannot save the call record");
        }

        if let Some(dash) = &self.dashboard {
            pending.extend(self.deliver_to_dashboard(dash, outcome, &fc).await);
        } else {
            tracing::debug!(call_id, "dashboard delivery not configured");
        }

        // §7.9: the transcript dump as chunked log lines.
        let dump_lines = transcript_dump_lines(outcome);
        for line in &dump_lines {
            tracing::info!(target: crate::logging::TRANSCRIPT_TARGET, "{line}");
        }
        if let Err(e) = self.store.mark_postcall_done(&call_id).await {
            tracing::error!(call_id, error = %e, "cannot mark post-call processing done");
        }
        PostCallReport {
            finished: fc,
            dump_lines,
            pending,
            classification,
        }
    }

    /// D-4: a call that ended in a state that promised a callback, without
    /// one created, gets it now: queued in the outbox, then tried once at
    /// once (the outbox worker retries). Returns the outbox target when
    /// the callback is left pending.
    pub async fn keep_callback_promise(&self, outcome: &mut Outcome) -> Option<String> {
        let s = &mut outcome.session;
        if !s.state.promises_callback() || s.callback_created {
            return None;
        }
        let call = agent::backend::callback_request(s);
        let item = store::NewOutboxItem {
            call_id: s.call_sid.clone(),
            kind: OutboxKind::Callback,
            target_url: self.callback_target.clone(),
            payload: serde_json::to_value(&call).unwrap_or(Value::Null),
        };
        let id = match self.enqueue(&item).await {
            Enqueued::Fresh(id) => Some(id),
            Enqueued::Untracked => None,
            // A re-run after a crash: the first run queued it already; the
            // outbox worker owns it now.
            Enqueued::Existing(it) => {
                return (it.status == OutboxStatus::Pending).then(|| it.target_url.clone());
            }
        };
        let result = self.backend.call(&call).await;
        let ok = record::apply_callback_result(outcome, &result);
        self.settle(id.as_deref(), ok, &result, "callback not created")
            .await;
        (!ok).then(|| self.callback_target.clone())
    }

    /// Write an item to the outbox, leased to this process for the
    /// immediate attempt — unless a previous run (before a crash) already
    /// queued this kind of item for this call.
    async fn enqueue(&self, item: &store::NewOutboxItem) -> Enqueued {
        let now = self.now();
        match self.store.outbox_for_call(&item.call_id).await {
            Ok(items) => {
                if let Some(it) = items.into_iter().find(|i| i.kind == item.kind) {
                    return Enqueued::Existing(Box::new(it));
                }
            }
            Err(e) => tracing::warn!(call_id = item.call_id, error = %e, "cannot read the outbox"),
        }
        match self
            .store
            .outbox_enqueue_leased(item, now, &self.worker, now + self.reserve_s)
            .await
        {
            Ok(id) => Enqueued::Fresh(id),
            Err(e) => {
                // Still attempt the delivery; it just is not durable.
                tracing::error!(call_id = item.call_id, kind = %item.kind, error = %e, "cannot write to the outbox");
                Enqueued::Untracked
            }
        }
    }

    /// Record the immediate attempt's outcome on the outbox item.
    async fn settle(&self, id: Option<&str>, ok: bool, response: &Value, what: &str) {
        let Some(id) = id else { return };
        let now = self.now();
        let r = if ok {
            self.store
                .outbox_mark_delivered(id, &self.worker, response, now)
                .await
        } else {
            let err = response
                .get("error")
                .or_else(|| response.get("message"))
                .and_then(Value::as_str)
                .unwrap_or(what)
                .to_string();
            self.store
                .outbox_mark_failed(id, &self.worker, &err, now + self.backoff.delay_s(1))
                .await
        };
        match r {
            Ok(true) => {}
            Ok(false) => tracing::warn!(id, "the outbox item was taken over before it was settled"),
            Err(e) => tracing::error!(id, error = %e, "cannot update the outbox"),
        }
    }

    /// §7.1 steps 2–5. Returns the URLs left pending.
    async fn deliver_to_dashboard(
        &self,
        dash: &DashboardClient,
        outcome: &Outcome,
        fc: &FinishedCall,
    ) -> Vec<String> {
        let s = &outcome.session;
        let mut pending = Vec::new();
        let cfg = dash.config();
        let job = fc.job_payload.clone();
        let job_answer = self
            .deliver_now(dash, &s.call_sid, OutboxKind::Job, &cfg.jobs_url, job)
            .await;
        let (lead_id, job_id) = match &job_answer {
            Ok(v) => (id_field(v, "lead_id"), id_field(v, "job_id")),
            Err(url) => {
                pending.push(url.clone());
                (None, None)
            }
        };
        let call = build_call_payload(
            s.state,
            s,
            outcome.end_time,
            &self.user_email,
            lead_id.as_deref(),
            job_id.as_deref(),
            record::utc(self.now()),
        );
        if let Err(url) = self
            .deliver_now(dash, &s.call_sid, OutboxKind::Call, &cfg.calls_url, call)
            .await
        {
            pending.push(url);
        }
        if s.state == State::SafetyExit && !cfg.alerts_url.is_empty() {
            let alert = build_emergency_alert(s, record::utc(self.now()), &self.user_email);
            if let Err(url) = self
                .deliver_now(dash, &s.call_sid, OutboxKind::Alert, &cfg.alerts_url, alert)
                .await
            {
                pending.push(url);
            }
        }
        pending
    }

    /// Enqueue, then the reference's attempt + one retry after 2 s. Ok =
    /// the dashboard's answer; Err = the URL, left pending.
    async fn deliver_now(
        &self,
        dash: &DashboardClient,
        call_id: &str,
        kind: OutboxKind,
        url: &str,
        payload: Value,
    ) -> Result<Value, String> {
        let item = store::NewOutboxItem {
            call_id: call_id.to_string(),
            kind,
            target_url: url.to_string(),
            payload: payload.clone(),
        };
        let id = match self.enqueue(&item).await {
            Enqueued::Fresh(id) => Some(id),
            Enqueued::Untracked => None,
            Enqueued::Existing(it) => {
                return match (it.status, it.response) {
                    (OutboxStatus::Delivered, r) => Ok(r.unwrap_or(Value::Null)),
                    _ => Err(it.target_url),
                };
            }
        };
        let body = serde_json::to_vec(&payload).unwrap_or_default();
        let mut last_err = String::new();
        for attempt in 0..2 {
            if attempt > 0 {
                (self.sleeper)(IMMEDIATE_RETRY_PAUSE).await;
            }
            match dash.post_once(url, &body, id.as_deref()).await {
                Ok(answer) => {
                    self.settle(id.as_deref(), true, &answer, "").await;
                    return Ok(answer);
                }
                Err(e) => {
                    last_err = e.to_string();
                    tracing::warn!(call_id, kind = %kind, url, error = %last_err, attempt = attempt + 1, "dashboard delivery failed");
                }
            }
        }
        self.settle(id.as_deref(), false, &json!({ "error": last_err }), "")
            .await;
        Err(url.to_string())
    }
}

/// What [`PostCall::enqueue`] did.
enum Enqueued {
    /// Queued now, leased to us.
    Fresh(String),
    /// Already queued by an earlier run for this call.
    Existing(Box<store::OutboxItem>),
    /// The outbox could not be written (the attempt still happens).
    Untracked,
}

/// The §7.9 timestamped dump of a call, with `duration_s`.
pub fn transcript_dump(outcome: &Outcome) -> Value {
    let s = &outcome.session;
    let mut dump = to_timestamped_dump(
        &s.transcript_log,
        outcome.start_time,
        &s.call_sid,
        &s.phone_number,
        s.state.as_str(),
    );
    let duration = if outcome.start_time > 0.0 {
        ((outcome.end_time - outcome.start_time) * 10.0).round() / 10.0
    } else {
        0.0
    };
    dump["duration_s"] = json!(duration);
    dump
}

/// The §7.9 dump of a finished call as `TRANSCRIPT_DUMP|i/n|JSON` lines
/// (at most 3,500 bytes of JSON each; the first carries call_sid, phone and
/// final_state).
pub fn transcript_dump_lines(outcome: &Outcome) -> Vec<String> {
    chunk_transcript_dump(&transcript_dump(outcome), 3500)
}

/// Take over the calls of processes that are gone (no heartbeat within
/// `lease_s`, see [`crate::instance`]): every call they left `active` is
/// marked `interrupted`, rebuilt from its journal and put through post-call
/// processing, as is any call of theirs whose post-call processing did not
/// finish. The calls of live processes are never touched, and of several
/// processes recovering at once each call goes to one
/// ([`store::Store::claim_call`]). A call the stop cut off mid-way (its
/// journal has no end) is owed a callback unless it was settled
/// ([`agent::engine::cut_off_by_the_server`]), as when a server ends a
/// call itself. Returns the ids processed.
pub async fn recover(post: &PostCall, lease_s: f64) -> Result<Vec<String>, store::StoreError> {
    let now = (post.clock)();
    post.store.mark_orphans_interrupted(now, lease_s).await?;
    let mut ids = Vec::new();
    for (id, status, started) in post.store.calls_pending_postcall(now, lease_s).await? {
        if !post
            .store
            .claim_call(&id, &post.worker, now, lease_s)
            .await?
        {
            continue; // another process took it over first
        }
        let events = post.store.events(&id).await?;
        let started = if started > 0.0 {
            started
        } else {
            events.first().map(|e| e.at_unix).unwrap_or(0.0)
        };
        let mut outcome = crate::call::journal::rebuild(&id, &events, started);
        let interrupted = status == CallStatus::Interrupted;
        if outcome.ended_by == crate::call::outcome::Ending::Interrupted {
            if let Some(from) = agent::engine::cut_off_by_the_server(&mut outcome.session) {
                tracing::warn!(
                    call_id = id,
                    state = from.as_str(),
                    "the call was cut off mid-way: a callback is owed"
                );
            }
        }
        tracing::warn!(
            call_id = id,
            events = events.len(),
            interrupted,
            "finishing post-call processing of a call a stop left unfinished"
        );
        post.handle_call_ended(&mut outcome, interrupted).await;
        ids.push(id);
    }
    Ok(ids)
}

/// [`recover`] every `lease_s` until `stop` says so: calls of processes
/// that die while this one runs are taken over once their lease is out.
pub async fn keep_recovering(
    post: PostCall,
    lease_s: f64,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let every = std::time::Duration::from_secs_f64(lease_s.max(0.5));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
        match recover(&post, lease_s).await {
            Ok(ids) if !ids.is_empty() => {
                tracing::warn!(calls = ?ids, "took over calls of a process that is gone")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "recovery pass failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let b = Backoff {
            base_s: 5.0,
            max_s: 300.0,
        };
        let d: Vec<f64> = (1..=8).map(|a| b.delay_s(a)).collect();
        assert_eq!(d, vec![5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0]);
        assert_eq!(b.delay_s(0), 5.0);
        assert_eq!(b.delay_s(i64::MAX), 300.0);
    }

    /// SPEC §7.9: `TRANSCRIPT_DUMP|i/n|JSON`, one prefix per line, the
    /// header in chunk 1 (even with an empty phone), every entry once.
    #[test]
    fn dump_lines_carry_one_prefix_and_the_header_first() {
        use agent::session::TranscriptEntry;
        use agent::State;
        let mut session = agent::Session::new("");
        session.call_sid = "CA123".into();
        session.state = State::Confirm;
        for i in 0..60 {
            let line = format!("caller line {i} with some words to make the chunks fill up");
            session.transcript_log.push(TranscriptEntry::user(
                line,
                100.0 + i as f64,
                State::Discovery,
            ));
        }
        let outcome =
            Outcome::of_session(session, crate::call::outcome::Ending::Caller, 100.0, 200.0);
        let lines = transcript_dump_lines(&outcome);
        assert!(lines.len() > 1, "60 entries take several chunks");
        let n = lines.len();
        let mut entries = 0;
        for (i, line) in lines.iter().enumerate() {
            let rest = line
                .strip_prefix(&format!("TRANSCRIPT_DUMP|{}/{n}|", i + 1))
                .unwrap_or_else(|| panic!("line {i}: {line}"));
            assert!(!rest.contains("TRANSCRIPT_DUMP"), "one prefix: {line}");
            assert!(rest.len() <= 3500 + 200, "{}", rest.len());
            let v: Value = serde_json::from_str(rest).expect("JSON after the prefix");
            if i == 0 {
                assert_eq!(v["call_sid"], "CA123");
                assert_eq!(v["phone"], "");
                assert_eq!(v["final_state"], "confirm");
                assert_eq!(v["duration_s"], 100.0);
            } else {
                assert!(v.get("call_sid").is_none());
            }
            entries += v["entries"].as_array().unwrap().len();
        }
        assert_eq!(entries, 60);
        let back = agent::transcript::parse_transcript_dump_lines(&lines, Some("CA123"));
        assert_eq!(back.len(), 1);
        assert_eq!(back[0]["entries"].as_array().unwrap().len(), 60);
    }
}
