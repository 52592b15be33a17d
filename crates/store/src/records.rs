//! The stored records and the queries over them (CLI, tests, post-call).

use crate::events::CallStatus;
use crate::timefmt::{normalize_phone, parse_ts, ts};
use crate::{Store, StoreError};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

/// A known caller.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Customer {
    pub phone: String,
    pub name: String,
    pub address: String,
    pub zip: String,
    pub notes: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A service visit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Appointment {
    /// `apt_…`
    pub uid: String,
    pub phone: String,
    pub customer_name: String,
    /// Local start with offset, e.g. `2026-02-24T09:00:00-06:00`.
    pub start_at: String,
    pub start_unix: i64,
    pub duration_minutes: i64,
    pub problem: String,
    pub address: String,
    /// `booked` or `cancelled`.
    pub status: String,
    /// The call that booked it.
    pub call_id: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A promised call back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Callback {
    /// `cb_…`
    pub id: String,
    pub phone: String,
    pub call_id: String,
    /// `service`, `estimate`, `billing`, `warranty` or `follow_up` (D-6).
    pub callback_type: String,
    pub reason: String,
    pub customer_name: String,
    /// `urgent` or `normal`.
    pub urgency: String,
    /// `open` or `done`.
    pub status: String,
    /// Who promised it ("" when the agent did).
    pub promised_by: String,
    pub created_at: DateTime<Utc>,
    pub due_by: DateTime<Utc>,
}

/// A high-ticket sales lead alert.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SalesLead {
    /// `lead_…`
    pub id: String,
    pub phone: String,
    pub call_id: String,
    pub reason: String,
    pub created_at: DateTime<Utc>,
}

/// A finished call: the summary columns plus the full post-call record and
/// the transcript as JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    pub call_id: String,
    pub phone: String,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub final_state: String,
    pub end_call_reason: String,
    pub booking_status: String,
    pub urgency: String,
    pub priority_color: String,
    pub revenue_tier: String,
    pub customer_name: String,
    pub problem: String,
    /// The full post-call record.
    pub record: Value,
    /// The transcript (list of entries).
    pub transcript: Value,
}

/// A call without its record and transcript (for listings).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallSummary {
    pub call_id: String,
    pub phone: String,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub final_state: String,
    pub end_call_reason: String,
    pub booking_status: String,
    pub urgency: String,
    pub priority_color: String,
    pub revenue_tier: String,
    pub customer_name: String,
    pub problem: String,
    /// `active` (live), `completed` (final record saved) or `interrupted`
    /// (its process died; the events are the record).
    pub status: CallStatus,
}

pub(crate) const CUSTOMER_COLS: &str = "phone, name, address, zip, notes, created_at, updated_at";
pub(crate) const APPOINTMENT_COLS: &str = "uid, phone, customer_name, start_at, start_unix, \
     duration_minutes, problem, address, status, call_id, created_at, updated_at";
pub(crate) const CALLBACK_COLS: &str = "id, phone, call_id, callback_type, reason, customer_name, \
     urgency, status, promised_by, created_at, due_by";
const LEAD_COLS: &str = "id, phone, call_id, reason, created_at";
pub(crate) const SUMMARY_COLS: &str =
    "call_id, phone, started_at, ended_at, final_state, end_call_reason, \
     booking_status, urgency, priority_color, revenue_tier, customer_name, problem, status";

fn time_col(row: &AnyRow, col: &'static str) -> Result<DateTime<Utc>, StoreError> {
    let s: String = row.try_get(col)?;
    parse_ts(col, &s)
}

pub(crate) fn customer_from(row: &AnyRow) -> Result<Customer, StoreError> {
    Ok(Customer {
        phone: row.try_get("phone")?,
        name: row.try_get("name")?,
        address: row.try_get("address")?,
        zip: row.try_get("zip")?,
        notes: row.try_get("notes")?,
        created_at: time_col(row, "created_at")?,
        updated_at: time_col(row, "updated_at")?,
    })
}

pub(crate) fn appointment_from(row: &AnyRow) -> Result<Appointment, StoreError> {
    Ok(Appointment {
        uid: row.try_get("uid")?,
        phone: row.try_get("phone")?,
        customer_name: row.try_get("customer_name")?,
        start_at: row.try_get("start_at")?,
        start_unix: row.try_get("start_unix")?,
        duration_minutes: row.try_get("duration_minutes")?,
        problem: row.try_get("problem")?,
        address: row.try_get("address")?,
        status: row.try_get("status")?,
        call_id: row.try_get("call_id")?,
        created_at: time_col(row, "created_at")?,
        updated_at: time_col(row, "updated_at")?,
    })
}

pub(crate) fn callback_from(row: &AnyRow) -> Result<Callback, StoreError> {
    Ok(Callback {
        id: row.try_get("id")?,
        phone: row.try_get("phone")?,
        call_id: row.try_get("call_id")?,
        callback_type: row.try_get("callback_type")?,
        reason: row.try_get("reason")?,
        customer_name: row.try_get("customer_name")?,
        urgency: row.try_get("urgency")?,
        status: row.try_get("status")?,
        promised_by: row.try_get("promised_by")?,
        created_at: time_col(row, "created_at")?,
        due_by: time_col(row, "due_by")?,
    })
}

fn lead_from(row: &AnyRow) -> Result<SalesLead, StoreError> {
    Ok(SalesLead {
        id: row.try_get("id")?,
        phone: row.try_get("phone")?,
        call_id: row.try_get("call_id")?,
        reason: row.try_get("reason")?,
        created_at: time_col(row, "created_at")?,
    })
}

pub(crate) fn summary_from(row: &AnyRow) -> Result<CallSummary, StoreError> {
    let ended: Option<String> = row.try_get("ended_at")?;
    Ok(CallSummary {
        call_id: row.try_get("call_id")?,
        phone: row.try_get("phone")?,
        started_at: time_col(row, "started_at")?,
        ended_at: ended.map(|s| parse_ts("ended_at", &s)).transpose()?,
        final_state: row.try_get("final_state")?,
        end_call_reason: row.try_get("end_call_reason")?,
        booking_status: row.try_get("booking_status")?,
        urgency: row.try_get("urgency")?,
        priority_color: row.try_get("priority_color")?,
        revenue_tier: row.try_get("revenue_tier")?,
        customer_name: row.try_get("customer_name")?,
        problem: row.try_get("problem")?,
        status: CallStatus::parse(&row.try_get::<String, _>("status")?)?,
    })
}

pub(crate) fn json_col(
    row: &AnyRow,
    col: &'static str,
    call_id: &str,
) -> Result<Value, StoreError> {
    let s: String = row.try_get(col)?;
    serde_json::from_str(&s)
        .map_err(|source| StoreError::json(format!("calls.{col} of call {call_id}"), source))
}

impl Store {
    /// The customer with this phone number (normalized), if known.
    pub async fn customer(&self, phone: &str) -> Result<Option<Customer>, StoreError> {
        let sql = format!("SELECT {CUSTOMER_COLS} FROM customers WHERE phone = $1");
        sqlx::query(&sql)
            .bind(normalize_phone(phone))
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(customer_from)
            .transpose()
    }

    /// The appointment with this uid, if any.
    pub async fn appointment(&self, uid: &str) -> Result<Option<Appointment>, StoreError> {
        let sql = format!("SELECT {APPOINTMENT_COLS} FROM appointments WHERE uid = $1");
        sqlx::query(&sql)
            .bind(uid.trim())
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(appointment_from)
            .transpose()
    }

    /// All appointments (booked and cancelled) of a phone, earliest first.
    pub async fn appointments_for(&self, phone: &str) -> Result<Vec<Appointment>, StoreError> {
        let sql = format!(
            "SELECT {APPOINTMENT_COLS} FROM appointments WHERE phone = $1 ORDER BY start_unix, uid"
        );
        sqlx::query(&sql)
            .bind(normalize_phone(phone))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(appointment_from)
            .collect()
    }

    /// All callbacks of a phone, newest first.
    pub async fn callbacks_for(&self, phone: &str) -> Result<Vec<Callback>, StoreError> {
        let sql = format!(
            "SELECT {CALLBACK_COLS} FROM callbacks WHERE phone = $1 ORDER BY created_unix DESC, id"
        );
        sqlx::query(&sql)
            .bind(normalize_phone(phone))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(callback_from)
            .collect()
    }

    /// Open callbacks of every caller, most urgent due time first.
    pub async fn open_callbacks(&self, limit: u32) -> Result<Vec<Callback>, StoreError> {
        let sql = format!(
            "SELECT {CALLBACK_COLS} FROM callbacks WHERE status = 'open' \
             ORDER BY due_by, id LIMIT $1"
        );
        sqlx::query(&sql)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(callback_from)
            .collect()
    }

    /// Booked appointments starting at or after `from_unix`, earliest first.
    pub async fn upcoming_appointments(
        &self,
        from_unix: i64,
        limit: u32,
    ) -> Result<Vec<Appointment>, StoreError> {
        let sql = format!(
            "SELECT {APPOINTMENT_COLS} FROM appointments WHERE status = 'booked' \
             AND start_unix >= $1 ORDER BY start_unix, uid LIMIT $2"
        );
        sqlx::query(&sql)
            .bind(from_unix)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(appointment_from)
            .collect()
    }

    /// The newest sales leads of every caller.
    pub async fn recent_sales_leads(&self, limit: u32) -> Result<Vec<SalesLead>, StoreError> {
        let sql =
            format!("SELECT {LEAD_COLS} FROM sales_leads ORDER BY created_unix DESC, id LIMIT $1");
        sqlx::query(&sql)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(lead_from)
            .collect()
    }

    /// All sales leads of a phone, newest first.
    pub async fn sales_leads_for(&self, phone: &str) -> Result<Vec<SalesLead>, StoreError> {
        let sql = format!(
            "SELECT {LEAD_COLS} FROM sales_leads WHERE phone = $1 ORDER BY created_unix DESC, id"
        );
        sqlx::query(&sql)
            .bind(normalize_phone(phone))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(lead_from)
            .collect()
    }

    async fn count(&self, sql: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(self.pool())
            .await?)
    }

    /// Number of customers.
    pub async fn count_customers(&self) -> Result<i64, StoreError> {
        self.count("SELECT COUNT(*) FROM customers").await
    }

    /// Number of appointments, booked and cancelled.
    pub async fn count_appointments(&self) -> Result<i64, StoreError> {
        self.count("SELECT COUNT(*) FROM appointments").await
    }

    /// Number of appointments with status `booked`.
    pub async fn count_booked_appointments(&self) -> Result<i64, StoreError> {
        self.count("SELECT COUNT(*) FROM appointments WHERE status = 'booked'")
            .await
    }

    /// Number of callbacks (open and done).
    pub async fn count_callbacks(&self) -> Result<i64, StoreError> {
        self.count("SELECT COUNT(*) FROM callbacks").await
    }

    /// Number of sales leads.
    pub async fn count_sales_leads(&self) -> Result<i64, StoreError> {
        self.count("SELECT COUNT(*) FROM sales_leads").await
    }

    /// Number of calls on record (finished, live and interrupted).
    pub async fn count_calls(&self) -> Result<i64, StoreError> {
        self.count("SELECT COUNT(*) FROM calls").await
    }

    /// Insert or replace the record of a finished call (keyed by call id)
    /// and mark the call `completed` — whether or not [`Store::begin_call`]
    /// saw it start (the call's `instance` is kept).
    pub async fn save_call(&self, c: &CallRecord) -> Result<(), StoreError> {
        self.save_call_as(c, CallStatus::Completed, true).await
    }

    /// [`Store::save_call`] with the status to keep (`completed`, or
    /// `interrupted` for a call rebuilt from its events after a crash) and
    /// whether post-call processing is done (`false` while its deliveries
    /// are still being queued: a crash then leaves it for
    /// [`Store::calls_pending_postcall`]).
    pub async fn save_call_as(
        &self,
        c: &CallRecord,
        status: CallStatus,
        postcall_done: bool,
    ) -> Result<(), StoreError> {
        let record = serde_json::to_string(&c.record)
            .map_err(|source| StoreError::json(format!("record of call {}", c.call_id), source))?;
        let transcript = serde_json::to_string(&c.transcript).map_err(|source| {
            StoreError::json(format!("transcript of call {}", c.call_id), source)
        })?;
        let phone = normalize_phone(&c.phone);
        // The record and the number's suffixes (the caller filter's lookup,
        // see `call_search`) in one transaction: a saved call is always
        // found by its number.
        let mut tx = match self.dialect() {
            crate::Dialect::Sqlite => self.pool().begin_with("BEGIN IMMEDIATE").await?,
            crate::Dialect::Postgres => self.pool().begin().await?,
        };
        crate::call_search::remember_phone(&mut tx, &phone).await?;
        sqlx::query(
            "INSERT INTO calls (call_id, phone, started_at, started_unix, ended_at, final_state, \
                 end_call_reason, booking_status, urgency, priority_color, revenue_tier, \
                 customer_name, problem, record, transcript, status, instance, postcall_done) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, \
                 $16, '', $17) \
             ON CONFLICT (call_id) DO UPDATE SET \
                 phone = excluded.phone, started_at = excluded.started_at, \
                 started_unix = excluded.started_unix, ended_at = excluded.ended_at, \
                 final_state = excluded.final_state, end_call_reason = excluded.end_call_reason, \
                 booking_status = excluded.booking_status, urgency = excluded.urgency, \
                 priority_color = excluded.priority_color, revenue_tier = excluded.revenue_tier, \
                 customer_name = excluded.customer_name, problem = excluded.problem, \
                 record = excluded.record, transcript = excluded.transcript, \
                 status = excluded.status, postcall_done = excluded.postcall_done",
        )
        .bind(&c.call_id)
        .bind(&phone)
        .bind(ts(&c.started_at))
        .bind(c.started_at.timestamp())
        .bind(c.ended_at.as_ref().map(ts))
        .bind(&c.final_state)
        .bind(&c.end_call_reason)
        .bind(&c.booking_status)
        .bind(&c.urgency)
        .bind(&c.priority_color)
        .bind(&c.revenue_tier)
        .bind(&c.customer_name)
        .bind(&c.problem)
        .bind(record)
        .bind(transcript)
        .bind(status.as_str())
        .bind(i64::from(postcall_done))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Calls whose post-call processing has not finished and whose process
    /// is gone (no heartbeat since `now_unix - lease_s`) — interrupted
    /// calls, and finished calls whose process died while queueing their
    /// deliveries — oldest first: `(call_id, status, started_unix)`. A live
    /// process finishing its own call's post-call work is left alone.
    pub async fn calls_pending_postcall(
        &self,
        now_unix: f64,
        lease_s: f64,
    ) -> Result<Vec<(String, CallStatus, f64)>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT call_id, status, started_unix FROM calls \
             WHERE status IN ('interrupted', 'completed') AND postcall_done = 0 AND {} \
             ORDER BY started_unix, call_id",
            crate::instances::OWNER_GONE
        ))
        .bind(now_unix - lease_s)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get::<String, _>("call_id")?,
                    CallStatus::parse(&r.try_get::<String, _>("status")?)?,
                    r.try_get::<i64, _>("started_unix")? as f64,
                ))
            })
            .collect()
    }

    /// Take over `call_id` for post-call processing on `instance`: `true`
    /// when this process now owns it, `false` when it needs none or another
    /// live process took it first. The call must be one of a process gone
    /// (no heartbeat within `lease_s` of `now_unix`); the update is one
    /// statement, so of several processes recovering at once exactly one
    /// wins (the others see a live owner). Should the winner die in turn,
    /// its lease runs out and the call is taken over again.
    pub async fn claim_call(
        &self,
        call_id: &str,
        instance: &str,
        now_unix: f64,
        lease_s: f64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(&format!(
            "UPDATE calls SET instance = $2 \
             WHERE call_id = $3 AND postcall_done = 0 AND {}",
            crate::instances::OWNER_GONE
        ))
        .bind(now_unix - lease_s)
        .bind(instance)
        .bind(call_id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// How many calls have `status`.
    pub async fn count_calls_with_status(&self, status: CallStatus) -> Result<i64, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT COUNT(*) FROM calls WHERE status = $1")
                .bind(status.as_str())
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// Calls started at or after `since` (all when `None`), newest first, at
    /// most `limit` — finished, live and interrupted alike (see
    /// [`CallSummary::status`]).
    pub async fn list_calls(
        &self,
        since: Option<DateTime<Utc>>,
        limit: u32,
    ) -> Result<Vec<CallSummary>, StoreError> {
        let since_unix = since.map(|t| t.timestamp() as f64);
        self.list_calls_with(since_unix, None, limit).await
    }

    /// Calls started at or after `since_unix` (unix seconds; all when
    /// `None`), only those with `status` when given, newest first, at most
    /// `limit`. Start times are kept to the second.
    pub async fn list_calls_with(
        &self,
        since_unix: Option<f64>,
        status: Option<CallStatus>,
        limit: u32,
    ) -> Result<Vec<CallSummary>, StoreError> {
        // Whole seconds on both sides: a call started at 12.7 s is "since 12.5".
        let since = since_unix.map_or(i64::MIN, |s| {
            if s.is_nan() {
                i64::MIN
            } else {
                s.floor() as i64
            }
        });
        let sql = format!(
            "SELECT {SUMMARY_COLS} FROM calls WHERE started_unix >= $1 \
               AND ($2 = '' OR status = $2) \
             ORDER BY started_unix DESC, started_at DESC, call_id LIMIT $3"
        );
        sqlx::query(&sql)
            .bind(since)
            .bind(status.map_or("", |s| s.as_str()))
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(summary_from)
            .collect()
    }

    /// Earlier calls of one phone, newest first: finished and interrupted
    /// ones, not live ones (the caller's current call is not history).
    pub async fn calls_for(&self, phone: &str, limit: u32) -> Result<Vec<CallSummary>, StoreError> {
        let sql = format!(
            "SELECT {SUMMARY_COLS} FROM calls WHERE phone = $1 AND status <> 'active' \
             ORDER BY started_unix DESC, call_id LIMIT $2"
        );
        sqlx::query(&sql)
            .bind(normalize_phone(phone))
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(summary_from)
            .collect()
    }

    /// The listing view of one call, whatever its status.
    pub async fn call_summary(&self, call_id: &str) -> Result<Option<CallSummary>, StoreError> {
        let sql = format!("SELECT {SUMMARY_COLS} FROM calls WHERE call_id = $1");
        sqlx::query(&sql)
            .bind(call_id)
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(summary_from)
            .transpose()
    }

    /// The full record of one call. A call that is live or was interrupted
    /// has no final record yet: `record` is `null`, `transcript` is `[]`
    /// and `ended_at` is `None` — its [`events`](Store::events) are the
    /// record ([`Store::call_summary`] tells the status).
    pub async fn get_call(&self, call_id: &str) -> Result<Option<CallRecord>, StoreError> {
        let sql =
            format!("SELECT {SUMMARY_COLS}, record, transcript FROM calls WHERE call_id = $1");
        let Some(row) = sqlx::query(&sql)
            .bind(call_id)
            .fetch_optional(self.pool())
            .await?
        else {
            return Ok(None);
        };
        let s = summary_from(&row)?;
        Ok(Some(CallRecord {
            record: json_col(&row, "record", &s.call_id)?,
            transcript: json_col(&row, "transcript", &s.call_id)?,
            call_id: s.call_id,
            phone: s.phone,
            started_at: s.started_at,
            ended_at: s.ended_at,
            final_state: s.final_state,
            end_call_reason: s.end_call_reason,
            booking_status: s.booking_status,
            urgency: s.urgency,
            priority_color: s.priority_color,
            revenue_tier: s.revenue_tier,
            customer_name: s.customer_name,
            problem: s.problem,
        }))
    }
}

impl CallRecord {
    /// The listing view of this record once saved (status `completed`).
    pub fn summary(&self) -> CallSummary {
        CallSummary {
            call_id: self.call_id.clone(),
            phone: self.phone.clone(),
            started_at: self.started_at,
            ended_at: self.ended_at,
            final_state: self.final_state.clone(),
            end_call_reason: self.end_call_reason.clone(),
            booking_status: self.booking_status.clone(),
            urgency: self.urgency.clone(),
            priority_color: self.priority_color.clone(),
            revenue_tier: self.revenue_tier.clone(),
            customer_name: self.customer_name.clone(),
            problem: self.problem.clone(),
            status: CallStatus::Completed,
        }
    }
}
