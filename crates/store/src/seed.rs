//! Demo data: a few callers that show the agent's main paths.
//!
//! Written once per database (issue 23): the first [`seed`] inserts the rows
//! and records that it did (table `demo_seed`, migration 0006); every later
//! one finds that record and writes nothing, so what calls changed (a
//! rescheduled or cancelled visit, a customer's new address, a closed
//! callback) stays. Even the first seed only inserts rows that are absent
//! (`ON CONFLICT DO NOTHING`) and never updates one: a database seeded
//! before the record existed, or a caller already filed under a demo
//! number, keeps its rows.

use crate::dialect::{begin_write, WriteLock};
use crate::timefmt::{iso_local, local_to_utc, ts};
use crate::{Store, StoreError};
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

/// The demo phone numbers and what each one demonstrates. Any other number
/// is a new caller.
pub const DEMO_CUSTOMERS: &[(&str, &str)] = &[
    (
        "+15125550100",
        "Jonas Weber, 4210 South Lamar Blvd, Austin TX 78704: returning customer with an \
         upcoming appointment in 2 days at 10:00 AM (status / cancel / reschedule)",
    ),
    (
        "+15125550101",
        "Maria Lopez, 1809 Cesar Chavez St, Austin TX 78702: open callback owed since \
         yesterday (\"AC not cooling\", promised by Mike) - a follow-up caller",
    ),
    (
        "+15125550102",
        "Priya Shah, 7300 Burnet Rd, Austin TX 78757: known customer without an \
         appointment (name, ZIP and address on file)",
    ),
    (
        "+15125550103",
        "Sam Carter, 18 N Main St, Temple TX 76501: known customer outside the service area",
    ),
];

/// (phone, name, address, zip, notes)
const CUSTOMERS: [(&str, &str, &str, &str, &str); 4] = [
    (
        "+15125550100",
        "Jonas Weber",
        "4210 South Lamar Blvd, Austin, TX 78704",
        "78704",
        "Carrier heat pump installed 2019.",
    ),
    (
        "+15125550101",
        "Maria Lopez",
        "1809 Cesar Chavez St, Austin, TX 78702",
        "78702",
        "",
    ),
    (
        "+15125550102",
        "Priya Shah",
        "7300 Burnet Rd, Austin, TX 78757",
        "78757",
        "Prefers morning visits.",
    ),
    (
        "+15125550103",
        "Sam Carter",
        "18 N Main St, Temple, TX 76501",
        "76501",
        "",
    ),
];

const JONAS_APPOINTMENT: &str = "apt_demo_jonas";
const MARIA_CALLBACK: &str = "cb_demo_maria";

impl Store {
    /// When the demo data was written into this database (Unix seconds), or
    /// `None` if it never was (see the module docs: it is written once).
    pub async fn demo_seeded_at(&self) -> Result<Option<f64>, StoreError> {
        Ok(
            sqlx::query_scalar::<_, f64>("SELECT seeded_unix FROM demo_seed WHERE id = 1")
                .fetch_optional(self.pool())
                .await?,
        )
    }
}

/// Write the demo rows into a database that never had them (times relative
/// to `now`); a no-op on a database that had them once (see the module
/// docs). Never updates an existing row.
pub(crate) async fn seed(store: &Store, tz: &Tz, now: DateTime<Utc>) -> Result<(), StoreError> {
    let now_s = ts(&now);
    // The bookings lock serializes seeds of one database (two processes
    // starting at once): the second sees the first one's record.
    let mut tx = begin_write(store, WriteLock::Bookings).await?;
    let seeded: Option<f64> = sqlx::query_scalar("SELECT seeded_unix FROM demo_seed WHERE id = 1")
        .fetch_optional(&mut *tx)
        .await?;
    if seeded.is_some() {
        tx.commit().await?;
        return Ok(());
    }
    for (phone, name, address, zip, notes) in CUSTOMERS {
        sqlx::query(
            "INSERT INTO customers (phone, name, address, zip, notes, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (phone) DO NOTHING",
        )
        .bind(phone)
        .bind(name)
        .bind(address)
        .bind(zip)
        .bind(notes)
        .bind(&now_s)
        .bind(&now_s)
        .execute(&mut *tx)
        .await?;
    }

    // Jonas: a visit in two days at 10:00 local.
    let in_two_days = now.checked_add_signed(Duration::days(2)).unwrap_or(now);
    let day = in_two_days.with_timezone(tz).date_naive();
    let start = day
        .and_hms_opt(10, 0, 0)
        .and_then(|n| local_to_utc(tz, n))
        .unwrap_or(in_two_days);
    let start_local = start.with_timezone(tz);
    sqlx::query(
        "INSERT INTO appointments (uid, phone, customer_name, start_at, start_unix, \
             duration_minutes, problem, address, status, call_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, 60, $6, $7, 'booked', 'demo_seed', $8, $9) \
         ON CONFLICT (uid) DO NOTHING",
    )
    .bind(JONAS_APPOINTMENT)
    .bind(CUSTOMERS[0].0)
    .bind(CUSTOMERS[0].1)
    .bind(iso_local(&start_local))
    .bind(start.timestamp())
    .bind("Annual AC maintenance")
    .bind(CUSTOMERS[0].2)
    .bind(&now_s)
    .bind(&now_s)
    .execute(&mut *tx)
    .await?;

    // Maria: a callback promised yesterday, still open.
    let promised = now.checked_sub_signed(Duration::days(1)).unwrap_or(now);
    sqlx::query(
        "INSERT INTO callbacks (id, phone, call_id, callback_type, reason, customer_name, \
             urgency, status, promised_by, created_at, created_unix, due_by) \
         VALUES ($1, $2, 'demo_seed', 'service', 'AC not cooling', $3, 'normal', 'open', 'Mike', \
                 $4, $5, $6) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(MARIA_CALLBACK)
    .bind(CUSTOMERS[1].0)
    .bind(CUSTOMERS[1].1)
    .bind(ts(&promised))
    .bind(promised.timestamp())
    .bind(ts(&promised
        .checked_add_signed(Duration::hours(1))
        .unwrap_or(promised)))
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO demo_seed (id, seeded_unix) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
    )
    .bind(now.timestamp() as f64)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}
