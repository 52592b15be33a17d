//! Time and phone helpers: the V2 display formats, ISO-8601 hint parsing,
//! stored-timestamp encoding, phone normalization.

use crate::StoreError;
use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};

/// "Thursday, February 26" (the V2 `date` format).
pub(crate) fn fmt_date<Tz: TimeZone>(t: &DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    t.format("%A, %B %-d").to_string()
}

/// "10:00 AM" (the V2 `time` format).
pub(crate) fn fmt_time<Tz: TimeZone>(t: &DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    t.format("%-I:%M %p").to_string()
}

/// ISO-8601 with the local offset, seconds always present:
/// `2026-02-24T09:00:00-06:00`.
pub(crate) fn iso_local<Tz: TimeZone>(t: &DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    t.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// A stored UTC timestamp (RFC 3339, `Z`, sub-seconds kept when present).
pub(crate) fn ts(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Read back a stored timestamp.
pub(crate) fn parse_ts(what: &'static str, s: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| StoreError::Timestamp {
            what,
            value: s.to_string(),
        })
}

/// Parse an ISO-8601 time hint: with an offset (`…-06:00`, `…Z`, `…-0600`),
/// or without one (local wall clock in `tz`), or a bare date (local
/// midnight; the slot search then starts at opening time). `None` if
/// unparseable.
pub(crate) fn parse_hint(s: &str, tz: &chrono_tz::Tz) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(s, f) {
            return Some(t.with_timezone(&Utc));
        }
    }
    let naive = [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
    .or_else(|| {
        NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
    })?;
    local_to_utc(tz, naive)
}

/// A local wall-clock time in `tz` as UTC; a time inside a DST gap moves
/// forward by an hour.
pub(crate) fn local_to_utc(tz: &chrono_tz::Tz, naive: NaiveDateTime) -> Option<DateTime<Utc>> {
    tz.from_local_datetime(&naive)
        .earliest()
        .or_else(|| {
            tz.from_local_datetime(&(naive + chrono::Duration::hours(1)))
                .earliest()
        })
        .map(|t| t.with_timezone(&Utc))
}

/// Normalize a phone number to E.164 where it is clearly a NANP number
/// (`(512) 555-0100` → `+15125550100`); anything else is only trimmed.
pub fn normalize_phone(raw: &str) -> String {
    let t = raw.trim();
    let digits: String = t.chars().filter(|c| c.is_ascii_digit()).collect();
    let only_phone_chars = t
        .chars()
        .all(|c| c.is_ascii_digit() || " +-().".contains(c));
    if !only_phone_chars || digits.is_empty() {
        return t.to_string();
    }
    if t.starts_with('+') {
        format!("+{digits}")
    } else if digits.len() == 10 {
        format!("+1{digits}")
    } else if digits.len() == 11 && digits.starts_with('1') {
        format!("+{digits}")
    } else {
        t.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let tz = chrono_tz::America::Chicago;
        let t = tz.with_ymd_and_hms(2026, 2, 26, 10, 0, 0).unwrap();
        assert_eq!(fmt_date(&t), "Thursday, February 26");
        assert_eq!(fmt_time(&t), "10:00 AM");
        assert_eq!(iso_local(&t), "2026-02-26T10:00:00-06:00");
        let pm = tz.with_ymd_and_hms(2026, 2, 26, 15, 45, 0).unwrap();
        assert_eq!(fmt_time(&pm), "3:45 PM");
    }

    #[test]
    fn hints() {
        let tz = chrono_tz::America::Chicago;
        let want = tz
            .with_ymd_and_hms(2026, 2, 24, 9, 0, 0)
            .unwrap()
            .with_timezone(&Utc);
        for s in [
            "2026-02-24T09:00:00-06:00",
            "2026-02-24T15:00:00Z",
            "2026-02-24T09:00:00-0600",
            "2026-02-24T09:00:00",
            "2026-02-24T09:00",
            " 2026-02-24 09:00 ",
        ] {
            assert_eq!(parse_hint(s, &tz), Some(want), "{s}");
        }
        assert!(parse_hint("2026-02-24", &tz).is_some());
        for bad in [
            "",
            "tomorrow",
            "2026-13-01T09:00:00",
            "2026-02-24T25:00",
            "💥",
        ] {
            assert_eq!(parse_hint(bad, &tz), None, "{bad}");
        }
    }

    #[test]
    fn phones() {
        assert_eq!(normalize_phone("(512) 555-0100"), "+15125550100");
        assert_eq!(normalize_phone("+1 512 555 0100"), "+15125550100");
        assert_eq!(normalize_phone("15125550100"), "+15125550100");
        assert_eq!(normalize_phone(" anonymous "), "anonymous");
        assert_eq!(normalize_phone(""), "");
    }
}
