//! [`EmbeddedBackend`]: the five booking tools answered from the local
//! database, in the V2 response shapes (SPEC §6.3, D-18/D-19) — truthfully.
//!
//! Scheduling model (as a real calendar such as Cal.com books): visits last
//! [`VISIT_MINUTES`] and may start at any whole minute from the profile's
//! `open_hour` until [`VISIT_MINUTES`] before `close_hour` on business days;
//! at most `capacity` visits (technicians, default [`DEFAULT_SLOT_CAPACITY`])
//! run at any one moment. A booking (or reschedule) takes exactly the
//! requested start when it is ahead, inside business hours and has room —
//! the agent reads that time back to the caller before booking (D-14/D-25),
//! so what is read back is what is booked. Otherwise it takes the first
//! start with room after it (the next whole hour, or the moment a visit
//! ends) within [`SEARCH_DAYS`] days, and the answer says the requested time
//! could not be had (`time_changed`, `time_change_reason`, `message`); a
//! requested time more than [`MAX_AHEAD_DAYS`] ahead is refused.
//! Slot checks and inserts run in one write transaction holding the
//! bookings lock (SQLite `BEGIN IMMEDIATE`, a PostgreSQL advisory lock; see
//! the `dialect` module), so concurrent bookings — from this process or
//! another instance on the same database — cannot overfill a slot.

use crate::dialect::{begin_write, WriteLock};
use crate::ids::{make_id, MAX_ID_ATTEMPTS};
use crate::records::{appointment_from, Appointment, APPOINTMENT_COLS};
use crate::timefmt::{fmt_date, fmt_time, iso_local, normalize_phone, parse_hint, ts};
use crate::{Store, StoreError};
use agent::backend::{Backend, ToolCall};
use agent::BusinessProfile;
use async_trait::async_trait;
use chrono::{DateTime, Datelike, Duration, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use serde_json::{json, Map, Value};
use sqlx::{AnyConnection, Row};
use std::sync::Arc;

/// Visits per slot when not configured (technicians on duty).
pub const DEFAULT_SLOT_CAPACITY: u32 = 2;
/// Length of one visit (the agent's resolver keeps the last start this long
/// before closing).
pub const VISIT_MINUTES: i64 = agent::booking_time::VISIT_MINUTES as i64;
/// How far ahead a booking or reschedule looks for an open slot.
pub const SEARCH_DAYS: i64 = 14;
/// A requested time further ahead than this is refused.
pub const MAX_AHEAD_DAYS: i64 = 365;
/// Lookup reports an open callback promised within this many days.
const PROMISE_DAYS: i64 = 3;
/// The callback types of D-6.
const CALLBACK_TYPES: [&str; 5] = ["service", "estimate", "billing", "warranty", "follow_up"];

/// "Now" for the backend; replay pins it.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// The booking backend over a [`Store`].
#[derive(Clone)]
pub struct EmbeddedBackend {
    store: Store,
    profile: BusinessProfile,
    clock: Clock,
    capacity: u32,
}

impl std::fmt::Debug for EmbeddedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedBackend")
            .field("store", &self.store)
            .field("company", &self.profile.company_name)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

/// What went wrong inside a tool, before it is turned into a V2 answer.
enum Fail {
    /// A refusal to tell the caller about (bad input, no slot, not found).
    User(String),
    /// A database failure.
    Store(StoreError),
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

impl From<sqlx::Error> for Fail {
    fn from(e: sqlx::Error) -> Self {
        Fail::Store(e.into())
    }
}

impl Fail {
    fn text(self, tool: &str) -> String {
        match self {
            Fail::User(s) => s,
            Fail::Store(e) => {
                tracing::warn!(tool, error = %e, "embedded backend storage failure");
                format!("storage failure: {e}")
            }
        }
    }
}

impl Fail {
    /// The V2 failure object `{success:false, message, error}` of a tool
    /// whose result `what` could not be achieved.
    fn answer(self, tool: &str, what: &str) -> Value {
        let err = self.text(tool);
        json!({
            "success": false,
            "message": format!("{what}: {err}"),
            "error": err,
        })
    }
}

fn user(s: impl Into<String>) -> Fail {
    Fail::User(s.into())
}

/// The start a booking got, and why it is not the requested one.
struct Slot {
    start: DateTime<Tz>,
    /// `None` when it is exactly the requested start.
    moved: Option<Moved>,
}

/// Why a booking did not get the requested start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moved {
    /// Another visit takes the last room at that time.
    Taken,
    /// Outside business hours or on a closed day.
    Closed,
    /// Already past.
    Past,
}

impl Moved {
    fn as_str(self) -> &'static str {
        match self {
            Moved::Taken => "taken",
            Moved::Closed => "closed",
            Moved::Past => "past",
        }
    }

    fn said(self) -> &'static str {
        match self {
            Moved::Taken => "was taken",
            Moved::Closed => "is outside business hours",
            Moved::Past => "has already passed",
        }
    }
}

/// The most visits of `busy` (start, minutes) running at one moment in
/// `[s, e)`.
fn peak(busy: &[(i64, i64)], s: i64, e: i64) -> usize {
    let end = |(a, d): (i64, i64)| a.saturating_add(d.saturating_mul(60));
    let over: Vec<(i64, i64)> = busy
        .iter()
        .copied()
        .filter(|v| v.0 < e && end(*v) > s)
        .collect();
    std::iter::once(s)
        .chain(over.iter().map(|v| v.0).filter(|a| *a > s))
        .map(|p| over.iter().filter(|v| v.0 <= p && end(**v) > p).count())
        .max()
        .unwrap_or(0)
}

/// The fields a booking or reschedule answer adds about the requested
/// time: `requested_time`, `time_changed`, and when it changed
/// `time_change_reason` (taken / closed / past) and `message` ("Tuesday,
/// February 24 at 10:30 AM was taken; booked Tuesday, February 24 at 11:00
/// AM instead."; a reschedule says "the appointment is moved to").
fn requested_fields(out: &mut Value, requested: &DateTime<Tz>, slot: &Slot, done: &str) {
    out["requested_time"] = json!(iso_local(requested));
    out["time_changed"] = json!(slot.moved.is_some());
    if let Some(why) = slot.moved {
        out["time_change_reason"] = json!(why.as_str());
        out["message"] = json!(format!(
            "{} at {} {}; {done} {} at {} instead.",
            fmt_date(requested),
            fmt_time(requested),
            why.said(),
            fmt_date(&slot.start),
            fmt_time(&slot.start)
        ));
    }
}

/// Whether a phone number has anything to dial.
fn has_digit(phone: &str) -> bool {
    phone.bytes().any(|b| b.is_ascii_digit())
}

/// The 5-digit ZIP in an address (the last one), if any.
fn zip_from(address: &str) -> Option<String> {
    address
        .split(|c: char| !c.is_ascii_digit())
        .rfind(|t| t.len() == 5)
        .map(str::to_string)
}

impl EmbeddedBackend {
    /// A backend using the system clock and [`DEFAULT_SLOT_CAPACITY`].
    pub fn new(store: Store, profile: BusinessProfile) -> Self {
        Self::with_clock(store, profile, Arc::new(Utc::now))
    }

    /// A backend whose "now" comes from `clock` (replay, tests).
    pub fn with_clock(store: Store, profile: BusinessProfile, clock: Clock) -> Self {
        EmbeddedBackend {
            store,
            profile,
            clock,
            capacity: DEFAULT_SLOT_CAPACITY,
        }
    }

    /// Set the visits per slot (0 means nothing can be booked).
    pub fn with_capacity(mut self, capacity: u32) -> Self {
        self.capacity = capacity;
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn profile(&self) -> &BusinessProfile {
        &self.profile
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The backend's current time.
    pub fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    fn tz(&self) -> Tz {
        self.profile.tz()
    }

    /// The search start for a requested time: never before now, never more
    /// than [`MAX_AHEAD_DAYS`] ahead.
    fn earliest_for(&self, hint: DateTime<Utc>, now: DateTime<Utc>) -> Result<DateTime<Utc>, Fail> {
        let limit = now.timestamp().saturating_add(MAX_AHEAD_DAYS * 86_400);
        if hint.timestamp() > limit {
            return Err(user(format!(
                "the requested time {} is more than {MAX_AHEAD_DAYS} days ahead",
                iso_local(&hint.with_timezone(&self.tz()))
            )));
        }
        Ok(hint.max(now))
    }

    /// Whole-hour visit starts at or after `earliest` and before `earliest +
    /// SEARCH_DAYS`, in order (where a booking moves on to when the
    /// requested start cannot be had).
    fn candidate_slots(&self, earliest: DateTime<Utc>) -> Vec<DateTime<Tz>> {
        let tz = self.tz();
        let Some(horizon) = earliest.checked_add_signed(Duration::days(SEARCH_DAYS)) else {
            return Vec::new();
        };
        let first_day = earliest.with_timezone(&tz).date_naive();
        let mut out = Vec::new();
        for offset in 0..=SEARCH_DAYS + 1 {
            let Some(day) = first_day.checked_add_signed(Duration::days(offset)) else {
                break;
            };
            if !self.profile.is_business_day(day.weekday()) {
                continue;
            }
            for hour in self.profile.open_hour..self.profile.close_hour.min(24) {
                let Some(naive) = day.and_hms_opt(hour, 0, 0) else {
                    continue;
                };
                // A slot inside a DST gap does not exist.
                let Some(start) = tz.from_local_datetime(&naive).earliest() else {
                    continue;
                };
                let utc = start.with_timezone(&Utc);
                if utc >= earliest && utc < horizon {
                    out.push(start);
                }
            }
        }
        out
    }

    /// Whether a visit may start at `t`: a business day, at or after
    /// opening, ending by closing.
    fn offered(&self, t: &DateTime<Tz>) -> bool {
        let open = i64::from(self.profile.open_hour) * 60;
        let close = i64::from(self.profile.close_hour.min(24)) * 60;
        let m = i64::from(t.hour() * 60 + t.minute());
        self.profile.is_business_day(t.weekday()) && m >= open && m + VISIT_MINUTES <= close
    }

    /// The start for a visit requested at `requested` (read inside the
    /// caller's transaction; appointment `exclude_uid` not counted): exactly
    /// `requested` (rounded up to the whole minute) when it is ahead of
    /// `now`, offered and has room; else the first start with room after it
    /// (and after `now`): a whole hour, or the moment a booked visit ends.
    async fn find_slot(
        &self,
        conn: &mut AnyConnection,
        requested: DateTime<Utc>,
        now: DateTime<Utc>,
        exclude_uid: &str,
    ) -> Result<Option<Slot>, Fail> {
        let tz = self.tz();
        let requested = round_up_to_minute(requested).with_timezone(&tz);
        let earliest = requested.with_timezone(&Utc).max(now);
        let grid = self.candidate_slots(earliest);
        let horizon = earliest.timestamp().saturating_add(SEARCH_DAYS * 86_400);
        let lo = earliest.timestamp();
        let hi = horizon
            .max(requested.timestamp())
            .saturating_add(VISIT_MINUTES * 60);
        let busy: Vec<(i64, i64)> = sqlx::query(
            "SELECT start_unix, duration_minutes FROM appointments \
             WHERE status = 'booked' AND uid <> $1 AND start_unix < $2 \
               AND start_unix + duration_minutes * 60 > $3",
        )
        .bind(exclude_uid)
        .bind(hi)
        .bind(lo)
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<_, sqlx::Error>>()?;
        let cap = usize::try_from(self.capacity).unwrap_or(usize::MAX);
        let room = |t: &DateTime<Tz>| {
            let s = t.timestamp();
            peak(&busy, s, s.saturating_add(VISIT_MINUTES * 60)) < cap
        };
        let ahead = requested.with_timezone(&Utc) > now;
        let moved = if !ahead {
            Moved::Past
        } else if !self.offered(&requested) {
            Moved::Closed
        } else if room(&requested) {
            return Ok(Some(Slot {
                start: requested,
                moved: None,
            }));
        } else {
            Moved::Taken
        };
        // The next starts: whole hours, and the ends of booked visits.
        let mut starts: Vec<DateTime<Tz>> = grid;
        for (a, d) in &busy {
            let end = a.saturating_add(d.saturating_mul(60));
            if end > earliest.timestamp() && end < horizon {
                if let Some(t) = tz.timestamp_opt(end, 0).single() {
                    if self.offered(&t) {
                        starts.push(t);
                    }
                }
            }
        }
        starts.sort();
        starts.dedup();
        Ok(starts
            .into_iter()
            .filter(|t| *t > requested || !ahead)
            .find(|t| room(t))
            .map(|start| Slot {
                start,
                moved: Some(moved),
            }))
    }

    /// The next booked appointment of `phone` that has not ended yet.
    async fn upcoming(&self, phone: &str) -> Result<Option<Appointment>, StoreError> {
        let sql = format!(
            "SELECT {APPOINTMENT_COLS} FROM appointments \
             WHERE phone = $1 AND status = 'booked' AND start_unix + duration_minutes * 60 > $2 \
             ORDER BY start_unix, uid LIMIT 1"
        );
        sqlx::query(&sql)
            .bind(phone)
            .bind(self.now().timestamp())
            .fetch_optional(self.store.pool())
            .await?
            .as_ref()
            .map(appointment_from)
            .transpose()
    }

    /// Display date and time of an appointment in the profile's zone.
    fn when(&self, a: &Appointment) -> (String, String, String) {
        let tz = self.tz();
        match tz.timestamp_opt(a.start_unix, 0).single() {
            Some(t) => (fmt_date(&t), fmt_time(&t), iso_local(&t)),
            None => (a.start_at.clone(), String::new(), a.start_at.clone()),
        }
    }

    // ---------------------------------------------------------------- lookup

    async fn lookup_inner(&self, phone: &str) -> Result<Value, Fail> {
        let phone = normalize_phone(phone);
        if phone.is_empty() {
            return Ok(json!({
                "found": false,
                "message": "No caller phone number; proceeding without history.",
            }));
        }
        let Some(c) = self.store.customer(&phone).await? else {
            return Ok(json!({
                "found": false,
                "message": "No customer record for this number; this is a new caller.",
            }));
        };
        let now = self.now();
        let tz = self.tz();
        let mut out = Map::new();
        let mut msg = Vec::new();
        out.insert("found".into(), json!(true));
        if c.name.trim().is_empty() {
            msg.push("Returning caller (name not on file).".to_string());
        } else {
            out.insert("customerName".into(), json!(c.name));
            msg.push(format!("Returning customer {}.", c.name));
        }
        let zip = if c.zip.is_empty() {
            zip_from(&c.address)
        } else {
            Some(c.zip.clone())
        };
        if let Some(zip) = zip {
            out.insert("zipCode".into(), json!(zip));
        }
        if !c.address.trim().is_empty() {
            out.insert("address".into(), json!(c.address));
        }
        let notes: Vec<&str> = c
            .notes
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        out.insert("operatorNotes".into(), json!(notes));

        if let Some(a) = self.upcoming(&phone).await? {
            let (date, time, _) = self.when(&a);
            msg.push(format!("Upcoming appointment on {date} at {time}."));
            let mut ap = json!({"date": date, "time": time, "uid": a.uid});
            if !a.problem.is_empty() {
                ap["issue"] = json!(a.problem);
            }
            out.insert("upcomingAppointment".into(), ap);
        }

        let since = now.timestamp().saturating_sub(PROMISE_DAYS * 86_400);
        let promise = sqlx::query(
            "SELECT created_unix, reason, promised_by FROM callbacks \
             WHERE phone = $1 AND status = 'open' AND created_unix >= $2 \
             ORDER BY created_unix DESC, id LIMIT 1",
        )
        .bind(&phone)
        .bind(since)
        .fetch_optional(self.store.pool())
        .await?;
        if let Some(row) = promise {
            let created: i64 = row.try_get("created_unix")?;
            let reason: String = row.try_get("reason")?;
            let by: String = row.try_get("promised_by")?;
            let date = tz
                .timestamp_opt(created, 0)
                .single()
                .map(|t| fmt_date(&t))
                .unwrap_or_default();
            let mut p = json!({ "date": date });
            let mut line = format!("A callback promised on {date}");
            if !by.is_empty() {
                p["promisedBy"] = json!(by);
                line.push_str(&format!(" by {by}"));
            }
            if !reason.is_empty() {
                p["issue"] = json!(reason);
                line.push_str(&format!(" about \"{reason}\""));
            }
            line.push_str(" is still open.");
            msg.push(line);
            out.insert("callbackPromise".into(), p);
        }

        let recent: Vec<Value> = self
            .store
            .calls_for(&phone, 5)
            .await?
            .iter()
            .map(|c| {
                let t = c.started_at.with_timezone(&tz);
                let mut v = json!({ "date": fmt_date(&t) });
                if !c.problem.is_empty() {
                    v["issue"] = json!(c.problem);
                }
                let outcome = if c.end_call_reason.is_empty() {
                    &c.booking_status
                } else {
                    &c.end_call_reason
                };
                if !outcome.is_empty() {
                    v["outcome"] = json!(outcome);
                }
                v
            })
            .collect();
        if !recent.is_empty() {
            msg.push(format!("{} earlier call(s) on record.", recent.len()));
        }
        out.insert("recentCalls".into(), json!(recent));

        let sql = format!(
            "SELECT {APPOINTMENT_COLS} FROM appointments WHERE phone = $1 \
               AND (status <> 'booked' OR start_unix + duration_minutes * 60 <= $2) \
             ORDER BY start_unix DESC, uid LIMIT 5"
        );
        let past: Vec<Value> = sqlx::query(&sql)
            .bind(&phone)
            .bind(now.timestamp())
            .fetch_all(self.store.pool())
            .await?
            .iter()
            .map(appointment_from)
            .collect::<Result<Vec<_>, _>>()?
            .iter()
            .map(|a| {
                let (date, _, _) = self.when(a);
                let status = if a.status == "booked" {
                    "completed"
                } else {
                    a.status.as_str()
                };
                let mut v = json!({"date": date, "status": status});
                if !a.problem.is_empty() {
                    v["issue"] = json!(a.problem);
                }
                v
            })
            .collect();
        out.insert("pastAppointments".into(), json!(past));
        out.insert("message".into(), json!(msg.join(" ")));
        Ok(Value::Object(out))
    }

    // --------------------------------------------------------------- booking

    async fn book_inner(&self, call: &ToolCall) -> Result<Value, Fail> {
        let ToolCall::BookService {
            customer_name,
            problem,
            address,
            preferred_time,
            phone,
            call_id,
        } = call
        else {
            return Err(user("book_service called with the wrong arguments"));
        };
        let phone = normalize_phone(phone);
        let name = customer_name.trim();
        let address = address.trim();
        if !has_digit(&phone) {
            return Err(user("the caller's phone number is required to book"));
        }
        if name.is_empty() {
            return Err(user("the customer's name is required to book"));
        }
        if address.is_empty() {
            return Err(user("the service address is required to book"));
        }
        let tz = self.tz();
        let hint = parse_hint(preferred_time, &tz).ok_or_else(|| {
            user(format!(
                "cannot read the requested time {preferred_time:?} (expected ISO-8601)"
            ))
        })?;
        let now = self.now();
        let earliest = self.earliest_for(hint, now)?;

        let mut tx = begin_write(&self.store, WriteLock::Bookings).await?;
        let Some(found) = self.find_slot(&mut tx, hint, now, "").await? else {
            return Err(user(format!(
                "no open appointment slot in the {SEARCH_DAYS} days from {}",
                iso_local(&earliest.with_timezone(&tz))
            )));
        };
        let slot = found.start;
        upsert_customer(&mut tx, &phone, name, address, &now).await?;
        let start_iso = iso_local(&slot);
        let now_s = ts(&now);
        let mut uid = None;
        for salt in 0..MAX_ID_ATTEMPTS {
            let id = make_id("apt", &[&phone, call_id, &start_iso, &now_s], salt);
            if !exists(&mut tx, "appointments", "uid", &id).await? {
                uid = Some(id);
                break;
            }
        }
        let uid = uid.ok_or_else(|| user("could not allocate an appointment id"))?;
        sqlx::query(
            "INSERT INTO appointments (uid, phone, customer_name, start_at, start_unix, \
                 duration_minutes, problem, address, status, call_id, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'booked', $9, $10, $11)",
        )
        .bind(&uid)
        .bind(&phone)
        .bind(name)
        .bind(&start_iso)
        .bind(slot.timestamp())
        .bind(VISIT_MINUTES)
        .bind(problem.trim())
        .bind(address)
        .bind(call_id)
        .bind(&now_s)
        .bind(&now_s)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        tracing::info!(%uid, phone = %crate::phone_for_logs(&phone), start = %start_iso, "appointment booked");

        let mut out = json!({
            "success": true,
            "booked": true,
            "booking_confirmed": true,
            "appointmentId": uid,
            "confirmationMessage": format!(
                "Appointment confirmed for {} at {}", fmt_date(&slot), fmt_time(&slot)
            ),
            "appointment_time": start_iso,
        });
        requested_fields(
            &mut out,
            &round_up_to_minute(hint).with_timezone(&tz),
            &found,
            "booked",
        );
        Ok(out)
    }

    // -------------------------------------------------------------- callback

    async fn callback_inner(&self, call: &ToolCall) -> Result<Value, Fail> {
        let ToolCall::CreateCallback {
            phone,
            callback_type,
            reason,
            customer_name,
            urgency,
            call_id,
        } = call
        else {
            return Err(user("create_callback called with the wrong arguments"));
        };
        let phone = normalize_phone(phone);
        if !has_digit(&phone) {
            return Err(user("the caller's phone number is required for a callback"));
        }
        let kind = callback_type.trim().to_ascii_lowercase();
        let kind = if CALLBACK_TYPES.contains(&kind.as_str()) {
            kind
        } else {
            "service".to_string()
        };
        let urgent = matches!(
            urgency.trim().to_ascii_lowercase().as_str(),
            "urgent" | "emergency" | "high"
        );
        let urgency = if urgent { "urgent" } else { "normal" };
        let reason = match reason.trim() {
            "" => "Customer requested callback",
            r => r,
        };
        let name = customer_name.trim();
        let now = self.now();
        let window = if urgent { 30 } else { 60 };
        let due = now
            .checked_add_signed(Duration::minutes(window))
            .unwrap_or(now);
        let company = &self.profile.company_name;

        let mut tx = begin_write(&self.store, WriteLock::Bookings).await?;
        // One open callback per call and type: a retry answers with it.
        if !call_id.trim().is_empty() {
            let existing: Option<String> = sqlx::query_scalar(
                "SELECT id FROM callbacks WHERE call_id = $1 AND phone = $2 \
                   AND callback_type = $3 AND status = 'open' ORDER BY id LIMIT 1",
            )
            .bind(call_id)
            .bind(&phone)
            .bind(&kind)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(id) = existing {
                tx.commit().await?;
                return Ok(json!({
                    "success": true,
                    "callback_id": id,
                    "message": format!("A callback for this call is already scheduled; {company} will call {phone} back."),
                }));
            }
        }
        let now_s = ts(&now);
        let mut id = None;
        for salt in 0..MAX_ID_ATTEMPTS {
            let c = make_id("cb", &[&phone, call_id, &kind, &now_s], salt);
            if !exists(&mut tx, "callbacks", "id", &c).await? {
                id = Some(c);
                break;
            }
        }
        let id = id.ok_or_else(|| user("could not allocate a callback id"))?;
        sqlx::query(
            "INSERT INTO callbacks (id, phone, call_id, callback_type, reason, customer_name, \
                 urgency, status, promised_by, created_at, created_unix, due_by) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'open', '', $8, $9, $10)",
        )
        .bind(&id)
        .bind(&phone)
        .bind(call_id)
        .bind(&kind)
        .bind(reason)
        .bind(name)
        .bind(urgency)
        .bind(&now_s)
        .bind(now.timestamp())
        .bind(ts(&due))
        .execute(&mut *tx)
        .await?;
        if !name.is_empty() {
            upsert_customer(&mut tx, &phone, name, "", &now).await?;
        }
        tx.commit().await?;
        tracing::info!(%id, phone = %crate::phone_for_logs(&phone), urgency, "callback created");
        Ok(json!({
            "success": true,
            "callback_id": id,
            "message": format!(
                "Callback scheduled: someone from {company} will call {phone} back within {window} minutes."
            ),
        }))
    }

    // ------------------------------------------------------------ sales lead

    async fn lead_inner(&self, call: &ToolCall) -> Result<Value, Fail> {
        let ToolCall::SendSalesLeadAlert {
            phone,
            reason,
            call_id,
        } = call
        else {
            return Err(user(
                "send_sales_lead_alert called with the wrong arguments",
            ));
        };
        let phone = normalize_phone(phone);
        let reason = match reason.trim() {
            "" => "Sales lead",
            r => r,
        };
        let now = self.now();
        let now_s = ts(&now);
        let mut tx = begin_write(&self.store, WriteLock::Bookings).await?;
        // D-5: one alert per call.
        if !call_id.trim().is_empty() {
            let existing: Option<String> = sqlx::query_scalar(
                "SELECT id FROM sales_leads WHERE call_id = $1 ORDER BY id LIMIT 1",
            )
            .bind(call_id)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(id) = existing {
                tx.commit().await?;
                return Ok(json!({
                    "success": true,
                    "alertId": id,
                    "message": "The sales team was already alerted for this call.",
                }));
            }
        }
        let mut id = None;
        for salt in 0..MAX_ID_ATTEMPTS {
            let c = make_id("lead", &[&phone, call_id, reason, &now_s], salt);
            if !exists(&mut tx, "sales_leads", "id", &c).await? {
                id = Some(c);
                break;
            }
        }
        let id = id.ok_or_else(|| user("could not allocate a lead id"))?;
        sqlx::query(
            "INSERT INTO sales_leads (id, phone, call_id, reason, created_at, created_unix) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&id)
        .bind(&phone)
        .bind(call_id)
        .bind(reason)
        .bind(&now_s)
        .bind(now.timestamp())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        tracing::info!(%id, phone = %crate::phone_for_logs(&phone), "sales lead recorded");
        Ok(json!({
            "success": true,
            "alertId": id,
            "message": format!("Sales team alerted: {reason}"),
        }))
    }

    // ------------------------------------------------------------ management

    async fn manage_inner(&self, call: &ToolCall) -> Result<Value, Fail> {
        let ToolCall::ManageAppointment {
            action,
            phone,
            booking_uid,
            reason,
            new_time,
            call_id,
        } = call
        else {
            return Err(user("manage_appointment called with the wrong arguments"));
        };
        let action = action.trim().to_ascii_lowercase();
        match action.as_str() {
            "status" | "cancel" | "reschedule" => {}
            "" => return Err(user("no action given (cancel, reschedule or status)")),
            other => {
                return Err(user(format!(
                    "unknown action {other:?} (cancel, reschedule or status)"
                )))
            }
        }
        let phone = normalize_phone(phone);
        let uid = booking_uid.trim();
        let appt = if uid.is_empty() {
            if phone.is_empty() {
                None
            } else {
                self.upcoming(&phone).await?
            }
        } else {
            // Only the caller's own appointment can be managed.
            self.store
                .appointment(uid)
                .await?
                .filter(|a| phone.is_empty() || a.phone == phone)
        };
        let Some(a) = appt else {
            return Err(user(if uid.is_empty() {
                "no upcoming appointment found for this phone number".to_string()
            } else {
                format!("no appointment {uid} found for this caller")
            }));
        };
        let (date, time, _) = self.when(&a);
        let now = self.now();
        let ended = a
            .start_unix
            .saturating_add(a.duration_minutes.saturating_mul(60))
            <= now.timestamp();

        match action.as_str() {
            "status" => {
                let message = if a.status == "cancelled" {
                    format!("The appointment on {date} at {time} was cancelled.")
                } else if ended {
                    format!("The appointment on {date} at {time} has already taken place.")
                } else {
                    format!("The appointment is booked for {date} at {time}.")
                };
                Ok(json!({
                    "success": true,
                    "action_taken": "status",
                    "message": message,
                    "date": date,
                    "time": time,
                    "uid": a.uid,
                    "status": a.status,
                }))
            }
            "cancel" => {
                if a.status == "cancelled" {
                    return Ok(json!({
                        "success": true,
                        "action_taken": "cancel",
                        "message": format!("The appointment on {date} at {time} was already cancelled."),
                    }));
                }
                if ended {
                    return Err(user(format!(
                        "the appointment on {date} at {time} has already taken place"
                    )));
                }
                sqlx::query(
                    "UPDATE appointments SET status = 'cancelled', updated_at = $1 WHERE uid = $2",
                )
                .bind(ts(&now))
                .bind(&a.uid)
                .execute(self.store.pool())
                .await?;
                tracing::info!(uid = %a.uid, %call_id, reason = %reason, "appointment cancelled");
                Ok(json!({
                    "success": true,
                    "action_taken": "cancel",
                    "message": format!("The appointment on {date} at {time} is cancelled."),
                }))
            }
            _ => {
                if a.status == "cancelled" {
                    return Err(user(format!(
                        "the appointment on {date} at {time} was cancelled and cannot be rescheduled"
                    )));
                }
                if ended {
                    return Err(user(format!(
                        "the appointment on {date} at {time} has already taken place"
                    )));
                }
                if new_time.trim().is_empty() {
                    return Err(user("a new time is required to reschedule"));
                }
                let tz = self.tz();
                let hint = parse_hint(new_time, &tz).ok_or_else(|| {
                    user(format!(
                        "cannot read the new time {new_time:?} (expected ISO-8601)"
                    ))
                })?;
                let earliest = self.earliest_for(hint, now)?;
                let mut tx = begin_write(&self.store, WriteLock::Bookings).await?;
                // Re-read inside the transaction: it may have changed meanwhile.
                let still_booked: Option<String> = sqlx::query_scalar(
                    "SELECT status FROM appointments WHERE uid = $1 AND status = 'booked'",
                )
                .bind(&a.uid)
                .fetch_optional(&mut *tx)
                .await?;
                if still_booked.is_none() {
                    return Err(user("the appointment was cancelled meanwhile"));
                }
                let Some(found) = self.find_slot(&mut tx, hint, now, &a.uid).await? else {
                    return Err(user(format!(
                        "no open appointment slot in the {SEARCH_DAYS} days from {}",
                        iso_local(&earliest.with_timezone(&tz))
                    )));
                };
                let slot = found.start;
                let start_iso = iso_local(&slot);
                sqlx::query(
                    "UPDATE appointments SET start_at = $1, start_unix = $2, updated_at = $3 \
                     WHERE uid = $4",
                )
                .bind(&start_iso)
                .bind(slot.timestamp())
                .bind(ts(&now))
                .bind(&a.uid)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                tracing::info!(uid = %a.uid, start = %start_iso, "appointment rescheduled");
                let (nd, nt) = (fmt_date(&slot), fmt_time(&slot));
                let mut out = json!({
                    "success": true,
                    "action_taken": "reschedule",
                    "new_date": nd,
                    "new_time": nt,
                    "appointment_time": start_iso,
                    "uid": a.uid,
                    "message": format!("The appointment is moved to {nd} at {nt}."),
                });
                requested_fields(
                    &mut out,
                    &round_up_to_minute(hint).with_timezone(&tz),
                    &found,
                    "the appointment is moved to",
                );
                Ok(out)
            }
        }
    }

    /// Load (idempotently) the demo customers of [`crate::DEMO_CUSTOMERS`];
    /// times are relative to `now`, so re-seeding refreshes them.
    pub async fn seed_demo(&self, now: DateTime<Utc>) -> Result<(), StoreError> {
        crate::seed::seed(&self.store, &self.tz(), now).await
    }
}

/// `t` with seconds and below taken off, one minute later if there were any.
fn round_up_to_minute(t: DateTime<Utc>) -> DateTime<Utc> {
    let whole = t
        .with_second(0)
        .and_then(|x| x.with_nanosecond(0))
        .unwrap_or(t);
    if whole < t {
        whole + Duration::minutes(1)
    } else {
        whole
    }
}

/// Whether `table.col = value` exists.
pub(crate) async fn exists(
    conn: &mut AnyConnection,
    table: &str,
    col: &str,
    value: &str,
) -> Result<bool, sqlx::Error> {
    let sql = format!("SELECT COUNT(*) FROM {table} WHERE {col} = $1");
    let n: i64 = sqlx::query_scalar(&sql)
        .bind(value)
        .fetch_one(&mut *conn)
        .await?;
    Ok(n > 0)
}

/// Insert a customer or update the given non-empty fields (name, address;
/// the ZIP follows the address).
pub(crate) async fn upsert_customer(
    conn: &mut AnyConnection,
    phone: &str,
    name: &str,
    address: &str,
    now: &DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let zip = zip_from(address).unwrap_or_default();
    let now = ts(now);
    sqlx::query(
        "INSERT INTO customers (phone, name, address, zip, notes, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, '', $5, $6) \
         ON CONFLICT (phone) DO UPDATE SET \
             name = CASE WHEN excluded.name <> '' THEN excluded.name ELSE customers.name END, \
             address = CASE WHEN excluded.address <> '' THEN excluded.address \
                            ELSE customers.address END, \
             zip = CASE WHEN excluded.address <> '' THEN excluded.zip ELSE customers.zip END, \
             updated_at = excluded.updated_at",
    )
    .bind(phone)
    .bind(name)
    .bind(address)
    .bind(zip)
    .bind(&now)
    .bind(&now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

#[async_trait]
impl Backend for EmbeddedBackend {
    async fn lookup_caller(&self, phone: &str, call_id: &str) -> Value {
        match self.lookup_inner(phone).await {
            Ok(v) => v,
            Err(e) => {
                let err = e.text("lookup_caller");
                tracing::debug!(%call_id, %err, "lookup failed");
                json!({
                    "found": false,
                    "message": format!("Lookup failed ({err}); proceeding without history."),
                })
            }
        }
    }

    async fn book_service(&self, call: &ToolCall) -> Value {
        self.book_inner(call).await.unwrap_or_else(|e| {
            json!({
                "success": false,
                "booked": false,
                "booking_confirmed": false,
                "error": e.text("book_service"),
            })
        })
    }

    async fn create_callback(&self, call: &ToolCall) -> Value {
        self.callback_inner(call)
            .await
            .unwrap_or_else(|e| e.answer("create_callback", "The callback could not be created"))
    }

    async fn send_sales_lead_alert(&self, call: &ToolCall) -> Value {
        self.lead_inner(call).await.unwrap_or_else(|e| {
            e.answer("send_sales_lead_alert", "The sales alert could not be sent")
        })
    }

    /// Failures carry no `action_taken`: the agent clears `has_appointment`
    /// on `action_taken == "cancel"` even without success (SPEC §4.4).
    async fn manage_appointment(&self, call: &ToolCall) -> Value {
        self.manage_inner(call).await.unwrap_or_else(|e| {
            e.answer("manage_appointment", "The appointment could not be changed")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zips() {
        assert_eq!(
            zip_from("4210 South Lamar Blvd, Austin TX 78704").as_deref(),
            Some("78704")
        );
        assert_eq!(zip_from("12 Main St").as_deref(), None);
        assert_eq!(zip_from("").as_deref(), None);
    }
}
