//! Booking-time hints (SPEC §2.3 as replaced by D-14).
//!
//! [`resolve_booking_time`] turns what the caller said ("ASAP", "tomorrow
//! afternoon", "Friday", "whenever") into an ISO-8601 local time that the
//! backend uses as a hint; the calendar picks the real slot. All arithmetic
//! is done in the business profile's time zone (DST-correct) and business
//! hours.

use chrono::{
    DateTime, Datelike, Duration, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, TimeZone,
    Timelike, Weekday,
};
use chrono_tz::Tz;

pub(crate) mod said;

use crate::keywords::LowerText;
use crate::profile::BusinessProfile;

/// Phrases that ask for the soonest visit (D-14).
const ASAP_PHRASES: &[&str] = &[
    "asap",
    "soonest",
    "today",
    "right away",
    "right now",
    "as soon as",
    "same day",
];

const WEEKDAYS: &[(&str, Weekday)] = &[
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
    ("sunday", Weekday::Sun),
];

/// Preferred afternoon start hour.
const AFTERNOON_HOUR: u32 = 14;

/// Parse an ISO-8601 / RFC 3339 timestamp with offset
/// (`2026-02-23T10:15:00-06:00`, `…Z`, fractional seconds, or a space
/// instead of `T`).
pub fn parse_now(iso: &str) -> Option<DateTime<FixedOffset>> {
    let s = iso.trim();
    DateTime::parse_from_rfc3339(s)
        .ok()
        .or_else(|| DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f%z").ok())
        .or_else(|| DateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f%z").ok())
        .or_else(|| DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M%z").ok())
}

/// Business hours of a profile, sanitised so that `open < close <= 24`.
#[derive(Debug, Clone, Copy)]
struct Hours {
    open: u32,
    close: u32,
}

impl Hours {
    fn of(profile: &BusinessProfile) -> Self {
        let open = profile.open_hour.min(23);
        let close = profile.close_hour.clamp(open + 1, 24);
        Hours { open, close }
    }

    fn afternoon(self) -> u32 {
        AFTERNOON_HOUR.clamp(self.open, self.close - 1)
    }
}

/// Whether `day` is a business day (a profile without any valid business
/// day counts as open every day).
fn business_day(profile: &BusinessProfile, day: Weekday) -> bool {
    profile.is_business_day(day) || !WEEKDAYS.iter().any(|(_, d)| profile.is_business_day(*d))
}

/// The local time `date` at `hour`:00 (a time skipped by a DST change moves
/// forward to the first existing hour).
fn at(tz: Tz, date: NaiveDate, hour: u32) -> DateTime<Tz> {
    let mut naive = date.and_hms_opt(hour.min(23), 0, 0).unwrap_or_default();
    for _ in 0..4 {
        match tz.from_local_datetime(&naive) {
            LocalResult::Single(t) => return t,
            LocalResult::Ambiguous(a, _) => return a,
            LocalResult::None => naive += Duration::hours(1),
        }
    }
    tz.from_utc_datetime(&naive)
}

/// The first business-day opening (open hour) at or after `t` (strictly
/// after if `strict`).
fn next_opening(
    t: DateTime<Tz>,
    strict: bool,
    hours: Hours,
    profile: &BusinessProfile,
) -> DateTime<Tz> {
    let tz = t.timezone();
    let mut date = t.date_naive();
    for _ in 0..9 {
        let cand = at(tz, date, hours.open);
        let later = if strict { cand > t } else { cand >= t };
        if later && business_day(profile, date.weekday()) {
            return cand;
        }
        match date.succ_opt() {
            Some(d) => date = d,
            None => break,
        }
    }
    at(tz, t.date_naive(), hours.open)
}

/// D-14 ASAP rule: now + 2 h rounded up to the hour if that is inside
/// business hours on a business day, else the next opening.
fn asap(now: DateTime<Tz>, hours: Hours, profile: &BusinessProfile) -> DateTime<Tz> {
    let tz = now.timezone();
    let plus: NaiveDateTime = (now + Duration::hours(2)).naive_local();
    let mut hour_start = plus
        .with_minute(0)
        .and_then(|d| d.with_second(0))
        .and_then(|d| d.with_nanosecond(0))
        .unwrap_or(plus);
    if hour_start != plus {
        hour_start += Duration::hours(1);
    }
    let target = at(tz, hour_start.date(), hour_start.hour());
    let h = target.hour();
    if h >= hours.open && h < hours.close && business_day(profile, target.weekday()) {
        target
    } else {
        next_opening(target, false, hours, profile)
    }
}

/// A booking-time hint as said to the caller: `2026-02-24T14:00:00-06:00` →
/// "Tuesday, February 24 at 2 PM" ("at 2:30 PM", "at noon"); anything
/// unreadable as given.
pub fn say_time(iso: &str) -> String {
    let Some(t) = parse_now(iso) else {
        return iso.to_string();
    };
    let (h, m) = (t.hour(), t.minute());
    let clock = match (h, m) {
        (12, 0) => "noon".to_string(),
        (0, 0) => "midnight".to_string(),
        _ => {
            let h12 = if h % 12 == 0 { 12 } else { h % 12 };
            let ampm = if h < 12 { "AM" } else { "PM" };
            if m == 0 {
                format!("{h12} {ampm}")
            } else {
                format!("{h12}:{m:02} {ampm}")
            }
        }
    };
    format!("{} at {clock}", t.format("%A, %B %-d"))
}

/// When the office can call back, as said to the caller: "within the hour"
/// during business hours on a business day with at least an hour left;
/// otherwise the next opening ("tomorrow morning at 9", "on Monday at 9").
/// A promise the business hours cannot keep is never made.
pub fn callback_window(now: DateTime<FixedOffset>, profile: &BusinessProfile) -> String {
    let tz = profile.tz();
    let hours = Hours::of(profile);
    let now = now.with_timezone(&tz);
    let open_now = business_day(profile, now.weekday())
        && now.hour() >= hours.open
        && now.hour() + 1 < hours.close;
    if open_now {
        return "within the hour".to_string();
    }
    let next = next_opening(now, true, hours, profile);
    let hour = match next.hour() {
        0 => "midnight".to_string(),
        12 => "noon".to_string(),
        h if h < 12 => format!("{h} in the morning"),
        h => format!("{} in the afternoon", h - 12),
    };
    let days = (next.date_naive() - now.date_naive()).num_days();
    match days {
        0 => format!("when we open today at {hour}"),
        1 => format!("when we open tomorrow at {hour}"),
        _ => format!("when we open on {} at {hour}", next.format("%A")),
    }
}

/// The date of what the caller said: `day` as named (no day: today if
/// `hour:minute` is still ahead, else tomorrow).
fn said_date(
    day: Option<said::Day>,
    now: DateTime<Tz>,
    hour: u32,
    minute: u32,
    profile: &BusinessProfile,
) -> NaiveDate {
    use said::Day;
    let today = now.date_naive();
    let ahead = |date: NaiveDate| {
        at(now.timezone(), date, hour) + Duration::minutes(i64::from(minute)) > now
    };
    let plus = |n: u32| today + Duration::days(i64::from(n));
    let from_monday = today.weekday().num_days_from_monday();
    match day {
        None => {
            if ahead(today) {
                today
            } else {
                plus(1)
            }
        }
        Some(Day::Tomorrow) => plus(1),
        Some(Day::Weekday { day, next: false }) => {
            let n = (7 + day.num_days_from_monday() - from_monday) % 7;
            if ahead(plus(n)) {
                plus(n)
            } else {
                plus(n + 7)
            }
        }
        // "next Tuesday": the Tuesday of the following week.
        Some(Day::Weekday { day, next: true }) => {
            plus(7 - from_monday + day.num_days_from_monday())
        }
        Some(Day::Weekend) => (0..8)
            .map(plus)
            .find(|d| matches!(d.weekday(), Weekday::Sat | Weekday::Sun) && ahead(*d))
            .unwrap_or(plus(1)),
        Some(Day::NextWeek) => {
            let monday = plus(7 - from_monday);
            (0..7)
                .map(|k| monday + Duration::days(k))
                .find(|d| business_day(profile, d.weekday()))
                .unwrap_or(monday)
        }
        Some(Day::InDays(n)) => plus(n),
    }
}

/// D-14: the booking-time hint for `preferred_time`, as
/// `YYYY-MM-DDTHH:MM:SS±HH:MM` in the profile's time zone.
///
/// Rules, first match wins (`t` = trimmed, lower-cased text, whole words):
/// 1. `urgency_tier == "urgent"` or `t` has asap / soonest / today / right
///    away / right now / as soon as / same day → now + 2 h rounded up to the
///    hour if inside business hours (on a business day), else the next
///    opening;
/// 2. "tomorrow" → tomorrow at opening (14:00 with "afternoon");
/// 3. a weekday name → its next occurrence (today if that time is still
///    ahead) at opening (14:00 with "afternoon");
/// 4. "morning" → the ASAP rule if it is before opening + 1 h (10:00), else
///    the next opening;
/// 5. "afternoon" → 14:00 today if before 13:00, else 14:00 tomorrow;
/// 6. anything else → the next opening after now.
pub fn resolve_booking_time(
    preferred_time: &str,
    urgency_tier: &str,
    now: DateTime<FixedOffset>,
    profile: &BusinessProfile,
) -> String {
    let tz = profile.tz();
    let hours = Hours::of(profile);
    let now = now.with_timezone(&tz);
    let t = LowerText::new(preferred_time.trim());
    let today = now.date_naive();
    let tomorrow = today.succ_opt().unwrap_or(today);
    let afternoon = t.matches("afternoon");
    let day_hour = if afternoon {
        hours.afternoon()
    } else {
        hours.open
    };

    let said_day = said::day(t.as_str());
    let said_clock = said::clock(t.as_str());
    let target = if said_clock.is_some()
        || (said_day.is_some() && !urgency_tier.trim().eq_ignore_ascii_case("urgent"))
    {
        // An explicit clock time or day (D-14 extended): that time, or the
        // first opening after it when it falls outside business hours.
        let (hour, minute) = said_clock.map_or((day_hour, 0), |c| (c.hour, c.minute));
        let date = said_date(said_day, now, hour, minute, profile);
        let cand = at(tz, date, hour) + Duration::minutes(i64::from(minute));
        let open = business_day(profile, cand.weekday())
            && cand.hour() >= hours.open
            && cand.hour() < hours.close;
        if open && cand > now {
            cand
        } else {
            next_opening(cand.max(now), false, hours, profile)
        }
    } else if urgency_tier.trim().eq_ignore_ascii_case("urgent") || t.matches_any(ASAP_PHRASES) {
        asap(now, hours, profile)
    } else if t.matches("morning") {
        if now.hour() < hours.open + 1 {
            asap(now, hours, profile)
        } else {
            next_opening(now, true, hours, profile)
        }
    } else if afternoon {
        let h = hours.afternoon();
        if now.hour() < h.saturating_sub(1) {
            at(tz, today, h)
        } else {
            at(tz, tomorrow, h)
        }
    } else {
        next_opening(now, true, hours, profile)
    };
    target.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default profile open Monday to Friday only.
    fn weekdays_only() -> BusinessProfile {
        BusinessProfile {
            business_days: ["mon", "tue", "wed", "thu", "fri"]
                .iter()
                .map(|d| d.to_string())
                .collect(),
            ..BusinessProfile::default()
        }
    }

    fn run(pt: &str, now: &str) -> String {
        resolve_booking_time(pt, "", parse_now(now).unwrap(), &BusinessProfile::default())
    }

    /// Issue 15, item 2: explicit clock times, relative days, weekends and
    /// "next <weekday>" book what the caller said (or the first opening
    /// after it when it is outside business hours). Monday 10:15.
    #[test]
    fn the_times_callers_name_are_booked() {
        let p = BusinessProfile::default(); // 9–18, seven days
        let now = parse_now("2026-02-23T10:15:00-06:00").unwrap();
        let r = |said: &str| resolve_booking_time(said, "", now, &p);
        for (said, want) in [
            ("tomorrow at 2", "2026-02-24T14:00:00-06:00"),
            ("Friday at 3pm", "2026-02-27T15:00:00-06:00"),
            ("next Tuesday at 2", "2026-03-03T14:00:00-06:00"),
            ("Tuesday at 2", "2026-02-24T14:00:00-06:00"),
            ("today at 3", "2026-02-23T15:00:00-06:00"),
            ("at 2:30", "2026-02-23T14:30:00-06:00"),
            ("9am", "2026-02-24T09:00:00-06:00"),
            ("next week", "2026-03-02T09:00:00-06:00"),
            ("this weekend", "2026-02-28T09:00:00-06:00"),
            ("in a couple of days", "2026-02-25T09:00:00-06:00"),
            ("it can wait a few days", "2026-02-26T09:00:00-06:00"),
            ("next Monday afternoon", "2026-03-02T14:00:00-06:00"),
            // Outside business hours: the first opening after it.
            ("tomorrow at 7", "2026-02-24T09:00:00-06:00"),
            ("Friday at 8pm", "2026-02-28T09:00:00-06:00"),
        ] {
            assert_eq!(r(said), want, "{said:?}");
        }
        let weekdays = weekdays_only();
        // A weekend visit for a weekday business: Monday's opening.
        assert_eq!(
            resolve_booking_time("this weekend", "", now, &weekdays),
            "2026-03-02T09:00:00-06:00"
        );
    }

    #[test]
    fn booking_times_are_said_plainly() {
        assert_eq!(
            say_time("2026-02-24T14:00:00-06:00"),
            "Tuesday, February 24 at 2 PM"
        );
        assert_eq!(
            say_time("2026-02-24T09:30:00-06:00"),
            "Tuesday, February 24 at 9:30 AM"
        );
        assert_eq!(
            say_time("2026-02-24T12:00:00-06:00"),
            "Tuesday, February 24 at noon"
        );
        assert_eq!(say_time("soon"), "soon");
    }

    #[test]
    fn callback_promises_keep_to_business_hours() {
        let p = BusinessProfile::default(); // 9–18, seven days, Chicago
        let w = |iso: &str| callback_window(parse_now(iso).unwrap(), &p);
        assert_eq!(w("2026-02-23T10:15:00-06:00"), "within the hour");
        assert_eq!(w("2026-02-23T16:59:00-06:00"), "within the hour");
        assert_eq!(
            w("2026-02-23T17:30:00-06:00"),
            "when we open tomorrow at 9 in the morning"
        );
        assert_eq!(
            w("2026-02-23T22:00:00-06:00"),
            "when we open tomorrow at 9 in the morning"
        );
        assert_eq!(
            w("2026-02-23T06:00:00-06:00"),
            "when we open today at 9 in the morning"
        );
        let weekdays = weekdays_only();
        // Friday evening → Monday.
        assert_eq!(
            callback_window(parse_now("2026-02-27T19:00:00-06:00").unwrap(), &weekdays),
            "when we open on Monday at 9 in the morning"
        );
    }

    #[test]
    fn conformance_resolve_booking_time() {
        let cases: &[(&str, &str, &str, &str)] = &[
            // (id, preferred_time, now, expected)
            (
                "today_2h_rounded_up",
                "today",
                "2026-02-23T09:30:00-06:00",
                "2026-02-23T12:00:00-06:00",
            ),
            (
                "test_soonest_same_as_asap",
                "soonest",
                "2026-02-23T10:15:00-06:00",
                "2026-02-23T13:00:00-06:00",
            ),
            (
                "test_right_away_same_as_asap",
                "right away",
                "2026-02-23T10:15:00-06:00",
                "2026-02-23T13:00:00-06:00",
            ),
            (
                "test_same_day_treated_as_asap",
                "same day",
                "2026-02-23T10:15:00-06:00",
                "2026-02-23T13:00:00-06:00",
            ),
            (
                "test_morning_treated_as_asap",
                "morning",
                "2026-02-23T08:00:00-06:00",
                "2026-02-23T10:00:00-06:00",
            ),
            (
                "test_late_evening_asap_goes_next_morning",
                "ASAP",
                "2026-02-23T19:00:00-06:00",
                "2026-02-24T09:00:00-06:00",
            ),
            (
                "test_tomorrow_morning_returns_9am",
                "tomorrow morning",
                "2026-02-23T15:00:00-06:00",
                "2026-02-24T09:00:00-06:00",
            ),
            (
                "test_this_afternoon_before_2pm",
                "this afternoon",
                "2026-02-23T10:00:00-06:00",
                "2026-02-23T14:00:00-06:00",
            ),
            (
                "test_this_afternoon_after_2pm_goes_tomorrow",
                "this afternoon",
                "2026-02-23T15:00:00-06:00",
                "2026-02-24T14:00:00-06:00",
            ),
            (
                "test_whenever_returns_next_day_9am",
                "whenever",
                "2026-02-23T10:00:00-06:00",
                "2026-02-24T09:00:00-06:00",
            ),
            (
                "derived_1",
                "soonest available",
                "2026-02-23T10:00:00-06:00",
                "2026-02-23T12:00:00-06:00",
            ),
            (
                "derived_2",
                "morning",
                "2026-02-23T15:00:00-06:00",
                "2026-02-24T09:00:00-06:00",
            ),
            (
                "derived_4",
                "ASAP",
                "2026-02-23T15:59:00-06:00",
                "2026-02-24T09:00:00-06:00",
            ),
            (
                "derived_6",
                "  ASAP  ",
                "2026-02-23T10:00:00-06:00",
                "2026-02-23T12:00:00-06:00",
            ),
            (
                "derived_7",
                "asap please",
                "2026-02-23T10:00:00-06:00",
                "2026-02-23T12:00:00-06:00",
            ),
            (
                "derived_11",
                "ASAP",
                "2026-02-23T23:30:00-06:00",
                "2026-02-24T09:00:00-06:00",
            ),
            (
                "derived_12",
                "tomorrow",
                "2026-03-07T10:00:00-06:00",
                "2026-03-08T09:00:00-05:00",
            ),
            (
                "d14_afternoon_before_1pm",
                "this afternoon",
                "2026-02-23T12:59:00-06:00",
                "2026-02-23T14:00:00-06:00",
            ),
            (
                "d14_weekday_afternoon",
                "Friday afternoon",
                "2026-02-23T10:00:00-06:00",
                "2026-02-27T14:00:00-06:00",
            ),
            (
                "d14_saturday_morning",
                "Saturday morning",
                "2026-02-23T10:00:00-06:00",
                "2026-02-28T09:00:00-06:00",
            ),
            (
                "d14_asap_before_opening",
                "as soon as possible",
                "2026-02-23T07:00:00-06:00",
                "2026-02-23T09:00:00-06:00",
            ),
            (
                "d14_asap_very_early",
                "ASAP",
                "2026-02-23T05:00:00-06:00",
                "2026-02-23T09:00:00-06:00",
            ),
            (
                "d14_today_late_afternoon",
                "today",
                "2026-02-23T17:30:00-06:00",
                "2026-02-24T09:00:00-06:00",
            ),
            (
                "d14_morning_early",
                "morning",
                "2026-02-23T06:00:00-06:00",
                "2026-02-23T09:00:00-06:00",
            ),
            (
                "d14_morning_at_ten",
                "morning",
                "2026-02-23T10:00:00-06:00",
                "2026-02-24T09:00:00-06:00",
            ),
            (
                "d14_default_before_opening",
                "whenever",
                "2026-02-23T07:00:00-06:00",
                "2026-02-23T09:00:00-06:00",
            ),
            // proc.d8.reschedule_sends_resolved_time
            (
                "proc.d8",
                "can I reschedule to Friday morning?",
                "2026-02-23T10:00:00-06:00",
                "2026-02-27T09:00:00-06:00",
            ),
        ];
        for (id, pt, now, want) in cases {
            assert_eq!(run(pt, now), *want, "{id}");
        }
    }

    #[test]
    fn conformance_urgent_tier_and_profiles() {
        let p = BusinessProfile::default();
        let now = parse_now("2026-02-23T10:15:00-06:00").unwrap();
        // val.booking_time.d14_urgent_tier_soonest_available
        assert_eq!(
            resolve_booking_time("soonest available", "urgent", now, &p),
            "2026-02-23T13:00:00-06:00"
        );
        // val.booking_time.d14_urgent_tier_empty_text
        assert_eq!(
            resolve_booking_time("", "urgent", now, &p),
            "2026-02-23T13:00:00-06:00"
        );
        // proc.d14.urgent_late_afternoon_booking_hint
        assert_eq!(
            resolve_booking_time(
                "soonest available",
                "urgent",
                parse_now("2026-02-23T16:30:00-06:00").unwrap(),
                &p
            ),
            "2026-02-24T09:00:00-06:00"
        );
        // val.booking_time.d14_profile_timezone
        let denver = BusinessProfile {
            timezone: "America/Denver".into(),
            ..BusinessProfile::default()
        };
        assert_eq!(
            resolve_booking_time(
                "ASAP",
                "",
                parse_now("2026-02-23T10:15:00-07:00").unwrap(),
                &denver
            ),
            "2026-02-23T13:00:00-07:00"
        );
        // val.booking_time.d14_profile_closing_hour
        let ny = BusinessProfile {
            timezone: "America/New_York".into(),
            open_hour: 8,
            close_hour: 17,
            ..BusinessProfile::default()
        };
        assert_eq!(
            resolve_booking_time(
                "ASAP",
                "",
                parse_now("2026-02-23T14:30:00-05:00").unwrap(),
                &ny
            ),
            "2026-02-24T08:00:00-05:00"
        );
    }

    #[test]
    fn business_days_are_skipped_for_openings() {
        let weekdays = weekdays_only();
        // Friday 2026-02-27 19:00: ASAP and "whenever" go to Monday 09:00.
        let fri = parse_now("2026-02-27T19:00:00-06:00").unwrap();
        assert_eq!(
            resolve_booking_time("ASAP", "", fri, &weekdays),
            "2026-03-02T09:00:00-06:00"
        );
        assert_eq!(
            resolve_booking_time("whenever", "", fri, &weekdays),
            "2026-03-02T09:00:00-06:00"
        );
        // Saturday 10:00: ASAP is not on a business day either.
        let sat = parse_now("2026-02-28T10:00:00-06:00").unwrap();
        assert_eq!(
            resolve_booking_time("asap", "", sat, &weekdays),
            "2026-03-02T09:00:00-06:00"
        );
        // No valid business day at all: every day counts.
        let none = BusinessProfile {
            business_days: vec!["funday".into()],
            ..BusinessProfile::default()
        };
        assert_eq!(
            resolve_booking_time("whenever", "", sat, &none),
            "2026-03-01T09:00:00-06:00"
        );
    }

    #[test]
    fn weekday_and_tomorrow_variants() {
        // Monday 10:00: "Monday" is next week's Monday; "Monday afternoon"
        // is still today.
        assert_eq!(
            run("monday", "2026-02-23T10:00:00-06:00"),
            "2026-03-02T09:00:00-06:00"
        );
        assert_eq!(
            run("monday afternoon", "2026-02-23T10:00:00-06:00"),
            "2026-02-23T14:00:00-06:00"
        );
        assert_eq!(
            run("tomorrow afternoon", "2026-02-23T10:00:00-06:00"),
            "2026-02-24T14:00:00-06:00"
        );
        assert_eq!(
            run("Thursday or Friday", "2026-02-23T10:00:00-06:00"),
            "2026-02-26T09:00:00-06:00"
        );
        // Other offset in `now` is converted to the profile's zone.
        assert_eq!(
            run("ASAP", "2026-02-23T16:15:00+00:00"),
            "2026-02-23T13:00:00-06:00"
        );
    }

    #[test]
    fn odd_profiles_and_inputs_never_panic() {
        let now = parse_now("2026-03-08T01:30:00-06:00").unwrap();
        let odd = BusinessProfile {
            timezone: "Mars/Olympus".into(),
            open_hour: 2,
            close_hour: 0,
            business_days: vec![],
            ..BusinessProfile::default()
        };
        let big = "tomorrow 🔥 afternoon \u{0} ".repeat(500);
        for pt in [
            "",
            "ASAP",
            "morning",
            "afternoon",
            "friday",
            big.as_str(),
            "\u{7f}",
        ] {
            for tier in ["", "urgent", "URGENT", "routine"] {
                let s = resolve_booking_time(pt, tier, now, &odd);
                assert_eq!(s.len(), 25, "{s}");
                let s = resolve_booking_time(pt, tier, now, &BusinessProfile::default());
                assert!(parse_now(&s).is_some(), "{s}");
            }
        }
        // 02:00 on the spring-forward day does not exist in Chicago.
        let p = BusinessProfile {
            open_hour: 2,
            ..BusinessProfile::default()
        };
        assert_eq!(
            resolve_booking_time("whenever", "", now, &p),
            "2026-03-08T03:00:00-05:00"
        );
    }

    #[test]
    fn parse_now_formats() {
        assert!(parse_now("2026-02-23T10:15:00-06:00").is_some());
        assert!(parse_now("2026-02-23T10:15:00Z").is_some());
        assert!(parse_now("2026-02-23T10:15:00.123-06:00").is_some());
        assert!(parse_now("2026-02-23 10:15:00-06:00").is_some());
        assert!(parse_now("yesterday").is_none());
        assert!(parse_now("").is_none());
    }
}
