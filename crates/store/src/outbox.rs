//! The durable outbox of D-17: post-call deliveries (dashboard job, call
//! record, alerts) and callbacks that could not be created, kept until they
//! are delivered.
//!
//! * [`Store::outbox_enqueue`] appends an item to its call's sequence.
//! * Workers [`claim`](Store::outbox_claim_due) due items under a lease
//!   (`lease_owner`, `lease_until`): a claimed item is not claimed again
//!   until the lease expires, and two workers — in one process or in
//!   several on the same database — never get the same item from one round
//!   of claims.
//! * Items travel in two [lanes](OutboxLane): alerts (a gas leak, a sales
//!   lead: someone must act now) and everything else (the dashboard job,
//!   the call record, callbacks). Within a lane, only the lowest pending
//!   `seq` of each call is claimable, so a call's deliveries of that lane
//!   happen in order (the call record after its job, which it links to);
//!   across lanes nothing waits: an alert is never held behind a job that
//!   keeps failing. [`Store::outbox_claim_lane`] claims one lane, so a
//!   worker can run the alert lane on its own; claims over both lanes take
//!   alerts first.
//! * [`Store::outbox_claim_item`] leases one given item now, whatever its
//!   next attempt time (the operator's "retry now"), or says why it cannot
//!   be attempted: not waiting any more, leased to a worker, or behind an
//!   earlier item of its call and lane ([`OutboxClaim`]).
//! * The worker then reports [`delivered`](Store::outbox_mark_delivered)
//!   (only if the lease is still its own), [`failed`](Store::outbox_mark_failed)
//!   (with the time of the next attempt: backoff is the worker's policy), or
//!   [`dead`](Store::outbox_mark_dead) (given up: later items of the call
//!   proceed).
//!
//! Delivery is at least once: a worker that dies after delivering but before
//! reporting leaves the item to be delivered again when its lease expires.

use crate::backend::exists;
use crate::dialect::{begin_write, claim_rows_clause, WriteLock};
use crate::ids::{make_id, MAX_ID_ATTEMPTS};
use crate::{Store, StoreError};
use serde::Serialize;
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

/// What an outbox item delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutboxKind {
    /// The dashboard job.
    Job,
    /// The call record.
    Call,
    /// An alert (emergency, sales lead).
    Alert,
    /// A callback that could not be created during the call (D-4).
    Callback,
}

impl OutboxKind {
    /// The stored spelling: `job`, `call`, `alert`, `callback`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxKind::Job => "job",
            OutboxKind::Call => "call",
            OutboxKind::Alert => "alert",
            OutboxKind::Callback => "callback",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "job" => Ok(OutboxKind::Job),
            "call" => Ok(OutboxKind::Call),
            "alert" => Ok(OutboxKind::Alert),
            "callback" => Ok(OutboxKind::Callback),
            other => Err(StoreError::BadValue {
                what: "outbox.kind".into(),
                value: other.into(),
            }),
        }
    }
}

impl std::fmt::Display for OutboxKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which lane an item travels in (see the module docs): alerts are never
/// held behind the other kinds, nor the other kinds behind alerts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutboxLane {
    /// Alerts ([`OutboxKind::Alert`]).
    Alerts,
    /// The job, the call record, callbacks.
    Ordinary,
}

impl OutboxLane {
    /// The SQL condition selecting this lane's items of table alias `t`.
    fn condition(self, t: &str) -> String {
        match self {
            OutboxLane::Alerts => format!("{t}.kind = 'alert'"),
            OutboxLane::Ordinary => format!("{t}.kind <> 'alert'"),
        }
    }
}

impl OutboxKind {
    /// The lane items of this kind travel in.
    pub fn lane(self) -> OutboxLane {
        match self {
            OutboxKind::Alert => OutboxLane::Alerts,
            OutboxKind::Job | OutboxKind::Call | OutboxKind::Callback => OutboxLane::Ordinary,
        }
    }
}

/// What [`Store::outbox_claim_item`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum OutboxClaim {
    /// Leased to the caller: attempt it, then settle it.
    Claimed(Box<OutboxItem>),
    /// No such item, or it is not waiting any more (delivered or dead).
    NotWaiting(Option<Box<OutboxItem>>),
    /// Another worker holds its lease (an attempt is under way).
    Leased(Box<OutboxItem>),
    /// It waits behind this earlier pending item of its call and lane.
    Behind(Box<OutboxItem>),
}

/// Where an outbox item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutboxStatus {
    /// Not delivered yet (possibly leased to a worker right now).
    Pending,
    /// Accepted by its target.
    Delivered,
    /// Given up.
    Dead,
}

impl OutboxStatus {
    /// The stored spelling: `pending`, `delivered`, `dead`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxStatus::Pending => "pending",
            OutboxStatus::Delivered => "delivered",
            OutboxStatus::Dead => "dead",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "pending" => Ok(OutboxStatus::Pending),
            "delivered" => Ok(OutboxStatus::Delivered),
            "dead" => Ok(OutboxStatus::Dead),
            other => Err(StoreError::BadValue {
                what: "outbox.status".into(),
                value: other.into(),
            }),
        }
    }
}

impl std::fmt::Display for OutboxStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An item to put into the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct NewOutboxItem {
    pub call_id: String,
    pub kind: OutboxKind,
    pub target_url: String,
    pub payload: Value,
}

/// An outbox item as stored (every column).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutboxItem {
    /// `ob_…`
    pub id: String,
    pub call_id: String,
    /// Order within the call, from 1.
    pub seq: i64,
    pub kind: OutboxKind,
    pub target_url: String,
    pub payload: Value,
    pub status: OutboxStatus,
    /// Failed attempts so far.
    pub attempts: i64,
    /// Not attempted before this time (unix seconds).
    pub next_attempt_unix: f64,
    /// The error of the last failed attempt ("" if none).
    pub last_error: String,
    /// The worker holding (or, once delivered, that held) the lease.
    pub lease_owner: Option<String>,
    /// The lease ends at this time (unix seconds); `None` when not leased.
    pub lease_until: Option<f64>,
    pub created_unix: f64,
    pub delivered_unix: Option<f64>,
    /// The target's answer, once delivered.
    pub response: Option<Value>,
}

const COLS: &str = "id, call_id, seq, kind, target_url, payload, status, attempts, \
     next_attempt_unix, last_error, lease_owner, lease_until, created_unix, delivered_unix, \
     response";

/// Claim condition: pending item `p` is in the same lane as item `o`.
const SAME_LANE: &str = "(CASE WHEN p.kind = 'alert' THEN 1 ELSE 0 END) \
     = (CASE WHEN o.kind = 'alert' THEN 1 ELSE 0 END)";

/// Claim order: alerts before the other kinds.
const ALERTS_FIRST: &str = "CASE WHEN o.kind = 'alert' THEN 0 ELSE 1 END";

fn item_from(row: &AnyRow) -> Result<OutboxItem, StoreError> {
    let id: String = row.try_get("id")?;
    let json = |col: &str, s: &str| {
        serde_json::from_str::<Value>(s)
            .map_err(|source| StoreError::json(format!("outbox.{col} of item {id}"), source))
    };
    let payload = json("payload", &row.try_get::<String, _>("payload")?)?;
    let response = row
        .try_get::<Option<String>, _>("response")?
        .map(|s| json("response", &s))
        .transpose()?;
    Ok(OutboxItem {
        call_id: row.try_get("call_id")?,
        seq: row.try_get("seq")?,
        kind: OutboxKind::parse(&row.try_get::<String, _>("kind")?)?,
        target_url: row.try_get("target_url")?,
        payload,
        status: OutboxStatus::parse(&row.try_get::<String, _>("status")?)?,
        attempts: row.try_get("attempts")?,
        next_attempt_unix: row.try_get("next_attempt_unix")?,
        last_error: row.try_get("last_error")?,
        lease_owner: row.try_get("lease_owner")?,
        lease_until: row.try_get("lease_until")?,
        created_unix: row.try_get("created_unix")?,
        delivered_unix: row.try_get("delivered_unix")?,
        response,
        id,
    })
}

fn encode(what: impl FnOnce() -> String, v: &Value) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|source| StoreError::json(what(), source))
}

impl Store {
    /// Put an item into the outbox: pending, due now, next in its call's
    /// sequence. Returns its id.
    pub async fn outbox_enqueue(
        &self,
        item: &NewOutboxItem,
        now: f64,
    ) -> Result<String, StoreError> {
        self.enqueue(item, now, None).await
    }

    /// Put an item into the outbox already leased to `worker` until
    /// `lease_until`: the enqueuing process attempts it at once, and no other
    /// worker touches it meanwhile; if that process dies, the lease expires
    /// and a worker takes the item over. Settle it with
    /// [`Store::outbox_mark_delivered`] / [`Store::outbox_mark_failed`].
    pub async fn outbox_enqueue_leased(
        &self,
        item: &NewOutboxItem,
        now: f64,
        worker: &str,
        lease_until: f64,
    ) -> Result<String, StoreError> {
        self.enqueue(item, now, Some((worker, lease_until))).await
    }

    async fn enqueue(
        &self,
        item: &NewOutboxItem,
        now: f64,
        lease: Option<(&str, f64)>,
    ) -> Result<String, StoreError> {
        let payload = encode(
            || format!("outbox {} payload of call {}", item.kind, item.call_id),
            &item.payload,
        )?;
        let mut tx = begin_write(self, WriteLock::OutboxCall(&item.call_id)).await?;
        let last: Option<i64> =
            sqlx::query_scalar("SELECT MAX(seq) FROM outbox WHERE call_id = $1")
                .bind(&item.call_id)
                .fetch_one(&mut *tx)
                .await?;
        let seq = last.unwrap_or(0) + 1;
        let mut id = None;
        for salt in 0..MAX_ID_ATTEMPTS {
            let c = make_id("ob", &[&item.call_id, &seq.to_string()], salt);
            if !exists(&mut tx, "outbox", "id", &c).await? {
                id = Some(c);
                break;
            }
        }
        let Some(id) = id else {
            return Err(StoreError::BadValue {
                what: "outbox.id (no free id after several salts)".into(),
                value: item.call_id.clone(),
            });
        };
        sqlx::query(
            "INSERT INTO outbox (id, call_id, seq, kind, target_url, payload, status, attempts, \
                 next_attempt_unix, last_error, created_unix, lease_owner, lease_until) \
             VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, '', $7, $8, $9)",
        )
        .bind(&id)
        .bind(&item.call_id)
        .bind(seq)
        .bind(item.kind.as_str())
        .bind(&item.target_url)
        .bind(payload)
        .bind(now)
        .bind(lease.map(|(w, _)| w.to_string()))
        .bind(lease.map(|(_, until)| until))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        tracing::debug!(%id, call_id = %item.call_id, seq, kind = %item.kind, "outbox item queued");
        Ok(id)
    }

    /// Lease up to `limit` due items to `worker` until `now + lease_s`:
    /// pending, `next_attempt_unix <= now`, not leased (or the lease
    /// expired), and the lowest pending `seq` of their call in their lane;
    /// alerts first, then oldest first. Atomic: concurrent claimers (other
    /// stores, other processes) never get the same item.
    pub async fn outbox_claim_due(
        &self,
        worker: &str,
        now: f64,
        lease_s: f64,
        limit: i64,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.claim(worker, now, lease_s, limit, None).await
    }

    /// [`Store::outbox_claim_due`] for the items of one lane only.
    pub async fn outbox_claim_lane(
        &self,
        lane: OutboxLane,
        worker: &str,
        now: f64,
        lease_s: f64,
        limit: i64,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.claim(worker, now, lease_s, limit, Some(lane)).await
    }

    async fn claim(
        &self,
        worker: &str,
        now: f64,
        lease_s: f64,
        limit: i64,
        lane: Option<OutboxLane>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        if limit <= 0 {
            return Ok(Vec::new());
        }
        let until = now + lease_s;
        let lane_only = lane.map_or(String::new(), |l| format!("AND {} ", l.condition("o")));
        let mut tx = begin_write(self, WriteLock::OutboxClaim).await?;
        let sql = format!(
            "SELECT {COLS} FROM outbox o \
             WHERE o.status = 'pending' AND o.next_attempt_unix <= $1 \
               AND (o.lease_until IS NULL OR o.lease_until < $1) {lane_only}\
               AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.call_id = o.call_id \
                               AND p.status = 'pending' AND p.seq < o.seq AND {SAME_LANE}) \
             ORDER BY {ALERTS_FIRST}, o.created_unix, o.call_id, o.seq LIMIT $2{}",
            claim_rows_clause(self.dialect())
        );
        let rows = sqlx::query(&sql)
            .bind(now)
            .bind(limit)
            .fetch_all(&mut *tx)
            .await?;
        let mut items = rows.iter().map(item_from).collect::<Result<Vec<_>, _>>()?;
        for it in &mut items {
            sqlx::query("UPDATE outbox SET lease_owner = $1, lease_until = $2 WHERE id = $3")
                .bind(worker)
                .bind(until)
                .bind(&it.id)
                .execute(&mut *tx)
                .await?;
            it.lease_owner = Some(worker.to_string());
            it.lease_until = Some(until);
        }
        tx.commit().await?;
        Ok(items)
    }

    /// Lease the item `id` to `worker` until `now + lease_s` to attempt it
    /// right away, due or not — if it is still waiting, nobody else holds
    /// its lease, and no earlier item of its call and lane is pending;
    /// otherwise say which of these it is ([`OutboxClaim`]).
    pub async fn outbox_claim_item(
        &self,
        id: &str,
        worker: &str,
        now: f64,
        lease_s: f64,
    ) -> Result<OutboxClaim, StoreError> {
        let mut tx = begin_write(self, WriteLock::OutboxClaim).await?;
        let sql = format!(
            "SELECT {COLS} FROM outbox o WHERE o.id = $1{}",
            claim_rows_clause(self.dialect())
        );
        let row = sqlx::query(&sql).bind(id).fetch_optional(&mut *tx).await?;
        let Some(mut item) = row.as_ref().map(item_from).transpose()? else {
            drop(tx);
            // Not there — or (PostgreSQL) locked by a worker claiming it
            // this instant.
            return Ok(match self.outbox_item(id).await? {
                Some(it) if it.status == OutboxStatus::Pending => OutboxClaim::Leased(Box::new(it)),
                other => OutboxClaim::NotWaiting(other.map(Box::new)),
            });
        };
        if item.status != OutboxStatus::Pending {
            return Ok(OutboxClaim::NotWaiting(Some(Box::new(item))));
        }
        if item.lease_until.is_some_and(|u| u >= now) {
            return Ok(OutboxClaim::Leased(Box::new(item)));
        }
        let sql = format!(
            "SELECT {COLS} FROM outbox p WHERE p.call_id = $1 AND p.status = 'pending' \
               AND p.seq < $2 AND {} ORDER BY p.seq LIMIT 1",
            item.kind.lane().condition("p")
        );
        let ahead = sqlx::query(&sql)
            .bind(&item.call_id)
            .bind(item.seq)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(ahead) = ahead.as_ref().map(item_from).transpose()? {
            return Ok(OutboxClaim::Behind(Box::new(ahead)));
        }
        let until = now + lease_s;
        sqlx::query("UPDATE outbox SET lease_owner = $1, lease_until = $2 WHERE id = $3")
            .bind(worker)
            .bind(until)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        item.lease_owner = Some(worker.to_string());
        item.lease_until = Some(until);
        Ok(OutboxClaim::Claimed(Box::new(item)))
    }

    /// The item was delivered: record it with the target's `response`, if
    /// `worker` still holds its lease (`false` otherwise: another worker
    /// took it over, or it is no longer pending).
    pub async fn outbox_mark_delivered(
        &self,
        id: &str,
        worker: &str,
        response: &Value,
        now: f64,
    ) -> Result<bool, StoreError> {
        let response = encode(|| format!("outbox response of item {id}"), response)?;
        let done = sqlx::query(
            "UPDATE outbox SET status = 'delivered', delivered_unix = $1, response = $2, \
                 lease_until = NULL \
             WHERE id = $3 AND status = 'pending' AND lease_owner = $4",
        )
        .bind(now)
        .bind(response)
        .bind(id)
        .bind(worker)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// The attempt failed: count it, keep `error`, release the lease and
    /// make the item due again at `next_attempt_unix`. `false` if `worker`
    /// no longer holds the lease (nothing changed).
    pub async fn outbox_mark_failed(
        &self,
        id: &str,
        worker: &str,
        error: &str,
        next_attempt_unix: f64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE outbox SET attempts = attempts + 1, last_error = $1, \
                 next_attempt_unix = $2, lease_owner = NULL, lease_until = NULL \
             WHERE id = $3 AND status = 'pending' AND lease_owner = $4",
        )
        .bind(error)
        .bind(next_attempt_unix)
        .bind(id)
        .bind(worker)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Give up on the item (the attempt that failed with `error` counts):
    /// status `dead`, lease released; the call's later items proceed.
    /// `false` if `worker` no longer holds the lease.
    pub async fn outbox_mark_dead(
        &self,
        id: &str,
        worker: &str,
        error: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE outbox SET status = 'dead', attempts = attempts + 1, last_error = $1, \
                 lease_owner = NULL, lease_until = NULL \
             WHERE id = $2 AND status = 'pending' AND lease_owner = $3",
        )
        .bind(error)
        .bind(id)
        .bind(worker)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Replace the payload of a pending item (e.g. a retry that must carry
    /// more). `false` if there is no such pending item.
    pub async fn outbox_update_payload(
        &self,
        id: &str,
        payload: &Value,
    ) -> Result<bool, StoreError> {
        let payload = encode(|| format!("outbox payload of item {id}"), payload)?;
        let done =
            sqlx::query("UPDATE outbox SET payload = $1 WHERE id = $2 AND status = 'pending'")
                .bind(payload)
                .bind(id)
                .execute(self.pool())
                .await?;
        Ok(done.rows_affected() > 0)
    }

    /// One item.
    pub async fn outbox_item(&self, id: &str) -> Result<Option<OutboxItem>, StoreError> {
        let sql = format!("SELECT {COLS} FROM outbox WHERE id = $1");
        sqlx::query(&sql)
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(item_from)
            .transpose()
    }

    /// Every pending item (leased or not), oldest first.
    pub async fn outbox_pending(&self) -> Result<Vec<OutboxItem>, StoreError> {
        let sql = format!(
            "SELECT {COLS} FROM outbox WHERE status = 'pending' \
             ORDER BY created_unix, call_id, seq"
        );
        self.outbox_query(&sql, None).await
    }

    /// How many items wait to be delivered, and when the oldest of them
    /// was created (Unix seconds) — for the operator's metrics.
    pub async fn outbox_waiting(&self) -> Result<(u64, Option<f64>), StoreError> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n, MIN(created_unix) AS oldest FROM outbox WHERE status = 'pending'",
        )
        .fetch_one(self.pool())
        .await?;
        let n: i64 = row.try_get("n")?;
        let oldest: Option<f64> = row.try_get("oldest")?;
        Ok((u64::try_from(n).unwrap_or(0), oldest))
    }

    /// Make a pending item due now (the operator's "retry now"); false
    /// when there is no such pending item.
    pub async fn outbox_retry_now(&self, id: &str, now_unix: f64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE outbox SET next_attempt_unix = $2 WHERE id = $1 AND status = 'pending'",
        )
        .bind(id)
        .bind(now_unix)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The newest `limit` items, whatever their status (for a listing).
    pub async fn outbox_all(&self, limit: u32) -> Result<Vec<OutboxItem>, StoreError> {
        let sql = format!(
            "SELECT {COLS} FROM outbox ORDER BY created_unix DESC, call_id, seq DESC LIMIT $1"
        );
        sqlx::query(&sql)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(item_from)
            .collect()
    }

    /// The items of one call, in sequence.
    pub async fn outbox_for_call(&self, call_id: &str) -> Result<Vec<OutboxItem>, StoreError> {
        let sql = format!("SELECT {COLS} FROM outbox WHERE call_id = $1 ORDER BY seq");
        self.outbox_query(&sql, Some(call_id)).await
    }

    async fn outbox_query(
        &self,
        sql: &str,
        arg: Option<&str>,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let mut q = sqlx::query(sql);
        if let Some(a) = arg {
            q = q.bind(a);
        }
        q.fetch_all(self.pool())
            .await?
            .iter()
            .map(item_from)
            .collect()
    }
}
