//! Finding calls for the operator: the calls list of the dashboard and
//! `/api/calls` — newest first, filtered, a page at a time.
//!
//! Pages are cut by a *cursor* (the last call's start second and id), not
//! an offset, so a page costs the same on the first day and after a year of
//! calls, and calls arriving meanwhile never shift a page.
//!
//! ## Staying fast at a year of calls
//!
//! A call's row is wide (its record and transcript: a few KB), so any
//! filter the database checks on the rows reads every row it passes over:
//! at 100,000 calls a rare filter (`status = active`, a caller's digits)
//! took most of a second. Three things keep every filter to a few
//! milliseconds, on SQLite and PostgreSQL alike:
//!
//! * **Only the filters that are set** go into the query, as plain
//!   equalities and ranges, so the planner can match them to an index.
//! * **Covering list indexes** (migration `0005_call_list_indexes.sql`):
//!   one per filterable column (status, final state, priority, number),
//!   each followed by the time order and every other filtered column, and
//!   one in time order alone. The planner walks the one that fits; each
//!   call is decided from the index, and only the page's rows are read.
//! * **Caller digits by suffix**: "numbers containing 5550042" cannot use
//!   an ordered index on the number, so `call_phone_suffixes` keeps every
//!   suffix of every number's digits (written with each saved record); the
//!   numbers containing the digits are the suffixes in one key range.
//!   Few numbers: their calls come by the number index. Many (short or
//!   common digits): walking the list in time order fills a page at once.
//!
//! [`Store::explain_search`] shows the plan a search gets; the store tests
//! check every filter uses an index.

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

/// How many `(suffix, number)` rows a caller filter may match and still be
/// answered number-first (see the module docs); more, and the digits are
/// common enough that walking the list in time order finds a page quickly.
const FEW_NUMBERS: usize = 2_000;

/// The longest suffix kept of a number (and the most of them): numbers are
/// a dozen digits; anything longer is not a phone number and is only found
/// by its first characters.
const MAX_SUFFIX: usize = 40;

/// What the caller filter compares: the number without `+ - ( ) .` and
/// spaces (as the migration's backfill strips them).
fn stripped(phone: &str) -> Vec<char> {
    phone.chars().filter(|c| !"+-(). ".contains(*c)).collect()
}

/// Every suffix of `phone`'s digits (at most [`MAX_SUFFIX`] of them, each at
/// most that long): the rows of `call_phone_suffixes` for this number.
pub(crate) fn phone_suffixes(phone: &str) -> Vec<String> {
    let chars = stripped(phone);
    (0..chars.len().min(MAX_SUFFIX))
        .map(|i| chars[i..chars.len().min(i + MAX_SUFFIX)].iter().collect())
        .collect()
}

/// Remember `phone` for the caller filter (all its suffixes), inside the
/// transaction that saves one of its calls. Nothing to do for a number
/// already known.
pub(crate) async fn remember_phone(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    phone: &str,
) -> Result<(), StoreError> {
    let suffixes = phone_suffixes(phone);
    if suffixes.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = (0..suffixes.len())
        .map(|i| format!("(${}, $1)", i + 2))
        .collect();
    let sql = format!(
        "INSERT INTO call_phone_suffixes (suffix, phone) VALUES {} ON CONFLICT DO NOTHING",
        values.join(", ")
    );
    let mut q = sqlx::query(&sql).bind(phone);
    for s in suffixes {
        q = q.bind(s);
    }
    q.execute(&mut **tx).await?;
    Ok(())
}

/// The smallest string above every string that starts with `digits` (all
/// ASCII digits): the last digit below 9 raised by one, what follows it
/// dropped; `None` when there is none ("99…").
fn digits_successor(digits: &str) -> Option<String> {
    let mut b = digits.as_bytes().to_vec();
    while let Some(last) = b.pop() {
        if last < b'9' {
            b.push(last + 1);
            return String::from_utf8(b).ok();
        }
    }
    None
}

/// A value bound to a `$n` of a search query.
#[derive(Debug, Clone)]
enum Arg {
    Text(String),
    Int(i64),
}

/// The `WHERE` of a search query, built from the filters that are set:
/// only those appear, so the planner sees plain equalities and ranges it
/// can match to an index (a `($1 = '' OR col = $1)` form hides them).
#[derive(Debug, Clone, Default)]
struct Filter {
    clauses: Vec<String>,
    args: Vec<Arg>,
}

impl Filter {
    /// Bind `a`; its placeholder.
    fn arg(&mut self, a: Arg) -> String {
        self.args.push(a);
        format!("${}", self.args.len())
    }

    fn and(&mut self, clause: String) {
        self.clauses.push(clause);
    }

    /// The filters of `q` other than the caller's digits. `indexed`:
    /// written so an index can serve them; otherwise each column is an
    /// expression (`final_state || ''`, `started_unix + 0`), which no
    /// index serves — for the queries of a few numbers' calls, where the
    /// number index must be the one walked (a planner that walked the
    /// final-state index instead would pass over half the calls).
    fn of(q: &CallQuery, indexed: bool) -> Filter {
        let mut f = Filter::default();
        let text = |col: &str| {
            if indexed {
                col.to_string()
            } else {
                format!("({col} || '')")
            }
        };
        let started = if indexed {
            "started_unix"
        } else {
            "(started_unix + 0)"
        };
        let set = |v: &Option<String>| v.as_deref().filter(|s| !s.is_empty()).map(str::to_string);
        if let Some(v) = set(&q.final_state) {
            let p = f.arg(Arg::Text(v));
            f.and(format!("{} = {p}", text("final_state")));
        }
        if let Some(v) = set(&q.priority) {
            let p = f.arg(Arg::Text(v));
            f.and(format!("{} = {p}", text("priority_color")));
        }
        if let Some(s) = q.status {
            let p = f.arg(Arg::Text(s.as_str().into()));
            f.and(format!("{} = {p}", text("status")));
        }
        if let Some(v) = q.since {
            let p = f.arg(Arg::Int(v));
            f.and(format!("{started} >= {p}"));
        }
        if let Some(v) = q.until {
            let p = f.arg(Arg::Int(v));
            f.and(format!("{started} < {p}"));
        }
        if let Some(c) = &q.after {
            let s = f.arg(Arg::Int(c.started_unix));
            let id = f.arg(Arg::Text(c.call_id.clone()));
            // The first half is implied by the second; spelled out, it is
            // a range the time index can start from.
            f.and(format!(
                "{started} <= {s} AND ({started} < {s} OR call_id > {id})"
            ));
        }
        f
    }
}

/// The digits of the caller filter (punctuation ignored).
fn caller_digits(q: &CallQuery) -> String {
    q.caller
        .as_deref()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .collect()
}

/// The query of one page of calls matching `f`, newest first.
fn search_sql(f: &Filter, limit: u32) -> String {
    let wh = if f.clauses.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", f.clauses.join(" AND "))
    };
    format!(
        "SELECT {SUMMARY_COLS}, started_unix FROM calls{wh} \
         ORDER BY started_unix DESC, call_id LIMIT {limit}"
    )
}

/// Where the caller filter's digits are found.
enum Numbers {
    /// In these numbers (few enough to look their calls up one by one).
    Few(Vec<String>),
    /// In many numbers: cheaper to walk the list and check each.
    Many,
}

/// `sql` with the filter's arguments bound, in order.
fn with_args<'q>(
    sql: &'q str,
    f: &'q Filter,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    let mut query = sqlx::query(sql);
    for a in &f.args {
        query = match a {
            Arg::Text(s) => query.bind(s.as_str()),
            Arg::Int(i) => query.bind(*i),
        };
    }
    query
}

impl Store {
    /// The calls `q` asks for, newest first (ties by id).
    ///
    /// Each filter that is set becomes one condition; every list index
    /// (migration 0005) holds every column a condition reads, so whichever
    /// the planner picks decides each call from the index and reads only
    /// the rows of the page. The caller's digits are looked up first in
    /// `call_phone_suffixes`: when few numbers contain them, the page is
    /// their calls (by the number index), plus any live call whose number
    /// contains them (a live call's number is remembered only when its
    /// record is saved); when many do, the list is walked in time order
    /// and each number checked — a page fills quickly then.
    pub async fn search_calls(&self, q: &CallQuery) -> Result<CallPage, StoreError> {
        let limit = q.limit.clamp(1, MAX_PAGE);
        let mut rows: Vec<(CallSummary, i64)> = Vec::new();
        for f in self.search_plan(q).await? {
            for r in self.search_rows(&f, limit).await? {
                if !rows.iter().any(|(c, _)| c.call_id == r.0.call_id) {
                    rows.push(r);
                }
            }
        }
        // Several queries (see `search_plan`): one page of them together.
        rows.sort_by(|(a, sa), (b, sb)| sb.cmp(sa).then_with(|| a.call_id.cmp(&b.call_id)));
        rows.truncate(limit as usize);
        let next = if rows.len() == limit as usize {
            rows.last().map(|(c, secs)| Cursor {
                started_unix: *secs,
                call_id: c.call_id.clone(),
            })
        } else {
            None
        };
        Ok(CallPage {
            calls: rows.into_iter().map(|(c, _)| c).collect(),
            next,
        })
    }

    /// The queries that answer `q` (each a page; their union, newest
    /// first, is the answer): one, or — the caller's digits found in few
    /// numbers — the calls of those numbers and the live calls whose
    /// number contains the digits.
    async fn search_plan(&self, q: &CallQuery) -> Result<Vec<Filter>, StoreError> {
        let digits = caller_digits(q);
        if digits.is_empty() {
            return Ok(vec![Filter::of(q, true)]);
        }
        let like = |mut f: Filter| {
            let p = f.arg(Arg::Text(format!("%{digits}%")));
            f.and(format!("phone LIKE {p}"));
            f
        };
        Ok(match self.numbers_containing(&digits).await? {
            Numbers::Many => vec![like(Filter::of(q, true))],
            Numbers::Few(numbers) => {
                // The numbers (or the live calls) are the selective part:
                // only they may lead the planner to an index.
                let base = Filter::of(q, false);
                let mut plan = Vec::new();
                if !numbers.is_empty() {
                    let mut f = base.clone();
                    let marks: Vec<String> =
                        numbers.into_iter().map(|n| f.arg(Arg::Text(n))).collect();
                    f.and(format!("phone IN ({})", marks.join(", ")));
                    plan.push(f);
                }
                let mut live = base;
                live.and("status = 'active'".into());
                plan.push(like(live));
                plan
            }
        })
    }

    /// One page of calls matching `f`, newest first, with their start
    /// seconds.
    async fn search_rows(
        &self,
        f: &Filter,
        limit: u32,
    ) -> Result<Vec<(CallSummary, i64)>, StoreError> {
        let sql = search_sql(f, limit);
        let mut out = Vec::new();
        for row in with_args(&sql, f).fetch_all(self.pool()).await? {
            let c = summary_from(&row)?;
            let secs: i64 = sqlx::Row::try_get(&row, "started_unix")?;
            out.push((c, secs));
        }
        Ok(out)
    }

    /// The numbers whose digits contain `digits`, if there are few.
    async fn numbers_containing(&self, digits: &str) -> Result<Numbers, StoreError> {
        let probe: String = digits.chars().take(MAX_SUFFIX).collect();
        // A range of digit strings only (no punctuation bound), so that it
        // means the same under any collation; "99…" has no upper bound, and
        // what the range lets through that does not start with the digits
        // is dropped below.
        let upper = digits_successor(&probe);
        let range = if upper.is_some() {
            "suffix >= $1 AND suffix < $2"
        } else {
            "suffix >= $1"
        };
        fn bound<'q>(
            sql: &'q str,
            probe: &'q str,
            upper: Option<&'q str>,
        ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
            let query = sqlx::query(sql).bind(probe);
            match upper {
                Some(u) => query.bind(u),
                None => query,
            }
        }
        let bind = |sql| bound(sql, &probe, upper.as_deref());
        // Count first (in the index, at most one more than "few"), so that
        // common digits cost no rows fetched. In key order: a walk of the
        // index that stops at the limit, whatever the statistics say.
        let count = format!(
            "SELECT COUNT(*) AS n FROM (SELECT 1 FROM call_phone_suffixes WHERE {range} \
             ORDER BY suffix LIMIT {}) c",
            FEW_NUMBERS + 1
        );
        let n: i64 = sqlx::Row::try_get(&bind(&count).fetch_one(self.pool()).await?, "n")?;
        if n > FEW_NUMBERS as i64 {
            return Ok(Numbers::Many);
        }
        let sql = format!("SELECT suffix, phone FROM call_phone_suffixes WHERE {range}");
        let rows = bind(&sql).fetch_all(self.pool()).await?;
        let mut numbers = Vec::new();
        for row in &rows {
            let suffix: String = sqlx::Row::try_get(row, "suffix")?;
            if suffix.starts_with(probe.as_str()) {
                numbers.push(sqlx::Row::try_get::<String, _>(row, "phone")?);
            }
        }
        numbers.sort();
        numbers.dedup();
        Ok(Numbers::Few(numbers))
    }

    /// Refresh the planner's statistics of the calls tables (PostgreSQL
    /// `ANALYZE`; nothing on SQLite, whose planner these queries do not
    /// need statistics for). PostgreSQL's autovacuum does this by itself a
    /// while after many writes; a bulk load (a bench, an import) that is
    /// queried at once calls it so the planner does not guess from an
    /// empty table.
    pub async fn analyze(&self) -> Result<(), StoreError> {
        if self.dialect() == crate::Dialect::Postgres {
            sqlx::query("ANALYZE calls").execute(self.pool()).await?;
            sqlx::query("ANALYZE call_phone_suffixes")
                .execute(self.pool())
                .await?;
        }
        Ok(())
    }

    /// How the database runs the search `q` (SQLite `EXPLAIN QUERY PLAN`
    /// or PostgreSQL `EXPLAIN`), one line per step of each query the
    /// search makes — for tests, and for checking an index is used.
    pub async fn explain_search(&self, q: &CallQuery) -> Result<Vec<String>, StoreError> {
        let (prefix, col) = match self.dialect() {
            crate::Dialect::Sqlite => ("EXPLAIN QUERY PLAN ", "detail"),
            crate::Dialect::Postgres => ("EXPLAIN ", "QUERY PLAN"),
        };
        let mut out = Vec::new();
        for f in self.search_plan(q).await? {
            let sql = format!("{prefix}{}", search_sql(&f, q.limit.clamp(1, MAX_PAGE)));
            for row in with_args(&sql, &f).fetch_all(self.pool()).await? {
                out.push(sqlx::Row::try_get::<String, _>(&row, col)?);
            }
        }
        Ok(out)
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
