//! Finding calls for the operator: the calls list of the dashboard and
//! `/api/calls` — newest first, filtered, a page at a time.
//!
//! Pages are cut by a *cursor* (the last call's start second and id), not
//! an offset, so a page costs the same on the first day and after a year of
//! calls, and calls arriving meanwhile never shift a page.

use crate::records::{json_col, summary_from, CallSummary, SUMMARY_COLS};
use crate::{CallStatus, Store, StoreError};

/// Which calls, and how many.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallQuery {
    /// Only calls in this final state (`confirm`, `callback`, …).
    pub final_state: Option<String>,
    /// Only calls with this priority colour (`red`, `green`, `blue`, `gray`).
    pub priority: Option<String>,
    /// Only calls from numbers containing these digits (any punctuation
    /// in the filter is ignored).
    pub caller: Option<String>,
    /// Only calls started at or after / before these Unix seconds.
    pub since: Option<i64>,
    pub until: Option<i64>,
    /// Only live, finished or interrupted calls.
    pub status: Option<CallStatus>,
    /// The page after this cursor ([`CallPage::next`]).
    pub after: Option<Cursor>,
    /// At most this many (1–500).
    pub limit: u32,
}

/// Where a page ended: the last call's start second and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub started_unix: i64,
    pub call_id: String,
}

impl Cursor {
    /// `"<seconds>_<call id>"`, opaque to API clients.
    pub fn encode(&self) -> String {
        format!("{}_{}", self.started_unix, self.call_id)
    }

    /// The cursor `s` encodes, if it is one.
    pub fn decode(s: &str) -> Option<Cursor> {
        let (secs, id) = s.split_once('_')?;
        let started_unix = secs.parse().ok()?;
        (!id.is_empty()).then(|| Cursor {
            started_unix,
            call_id: id.to_string(),
        })
    }
}

/// One page of calls.
#[derive(Debug, Clone, PartialEq)]
pub struct CallPage {
    pub calls: Vec<CallSummary>,
    /// The cursor of the next page, when there may be one.
    pub next: Option<Cursor>,
}

/// The most calls in one page.
pub const MAX_PAGE: u32 = 500;

impl Store {
    /// The calls `q` asks for, newest first (ties by id).
    pub async fn search_calls(&self, q: &CallQuery) -> Result<CallPage, StoreError> {
        let limit = q.limit.clamp(1, MAX_PAGE);
        let digits: String = q
            .caller
            .as_deref()
            .unwrap_or("")
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        let (after_secs, after_id) = match &q.after {
            Some(c) => (c.started_unix, c.call_id.as_str()),
            None => (i64::MAX, ""),
        };
        let sql = format!(
            "SELECT {SUMMARY_COLS}, started_unix FROM calls \
             WHERE ($1 = '' OR final_state = $1) \
               AND ($2 = '' OR priority_color = $2) \
               AND ($3 = '' OR phone LIKE $4) \
               AND started_unix >= $5 AND started_unix < $6 \
               AND ($7 = '' OR status = $7) \
               AND (started_unix < $8 OR (started_unix = $8 AND call_id > $9)) \
             ORDER BY started_unix DESC, call_id \
             LIMIT $10"
        );
        let rows = sqlx::query(&sql)
            .bind(q.final_state.as_deref().unwrap_or(""))
            .bind(q.priority.as_deref().unwrap_or(""))
            .bind(digits.as_str())
            .bind(format!("%{digits}%"))
            .bind(q.since.unwrap_or(i64::MIN))
            .bind(q.until.unwrap_or(i64::MAX))
            .bind(q.status.map_or("", |s| s.as_str()))
            .bind(after_secs)
            .bind(after_id)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?;
        let mut calls = Vec::with_capacity(rows.len());
        let mut last = None;
        for row in &rows {
            let c = summary_from(row)?;
            let secs: i64 = sqlx::Row::try_get(row, "started_unix")?;
            last = Some(Cursor {
                started_unix: secs,
                call_id: c.call_id.clone(),
            });
            calls.push(c);
        }
        let next = if calls.len() == limit as usize {
            last
        } else {
            None
        };
        Ok(CallPage { calls, next })
    }

    /// The post-call records of `ids` (those that have one), by id, in one
    /// query: what a listing shows beyond the summary (tags).
    pub async fn call_records_of(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashMap<String, serde_json::Value>, StoreError> {
        let mut out = std::collections::HashMap::new();
        if ids.is_empty() {
            return Ok(out);
        }
        let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT call_id, record FROM calls WHERE call_id IN ({})",
            marks.join(", ")
        );
        let mut q = sqlx::query(&sql);
        for id in ids {
            q = q.bind(id.as_str());
        }
        for row in q.fetch_all(self.pool()).await? {
            let id: String = sqlx::Row::try_get(&row, "call_id")?;
            let record = json_col(&row, "record", &id)?;
            if !record.is_null() {
                out.insert(id, record);
            }
        }
        Ok(out)
    }
}
