//! Booking-time hints (SPEC §2.3 as replaced by D-14 and D-25).
//!
//! [`time_ask`] classifies what one utterance says about when the visit
//! should be ([`TimeAsk`]); [`resolve_booking_time`] turns what the caller
//! said ("ASAP", "tomorrow afternoon", "Friday at 2:30", "no rush", "next
//! week") into an ISO-8601 local start time inside business hours. That
//! time is read back to the caller and sent to the backend, which books
//! exactly that start when it is free (and says so when it had to book
//! another). All arithmetic is done in the business profile's time zone
//! (DST-correct) and business hours.

use chrono::{
    DateTime, Datelike, Duration, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, TimeZone,
    Timelike, Weekday,
};
use chrono_tz::Tz;

pub(crate) mod said;

pub use said::{time_ask, TimeAsk};

use crate::profile::BusinessProfile;

/// Length of one visit: the last start of a day is this long before
/// closing (the embedded backend books visits of this length).
pub const VISIT_MINUTES: u32 = 60;

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

    /// The last visit start of a day, in minutes after midnight (a visit
    /// ends by closing; at least the opening).
    fn last_start(self) -> u32 {
        (self.close * 60)
            .saturating_sub(VISIT_MINUTES)
            .max(self.open * 60)
    }

    /// `hour:minute` moved inside business hours: before opening → the
    /// opening, after the last start → the last start.
    fn clamp(self, hour: u32, minute: u32) -> (u32, u32) {
        let m = (hour * 60 + minute).clamp(self.open * 60, self.last_start());
        (m / 60, m % 60)
    }

    /// The hour a part of the day starts at.
    fn part_hour(self, part: Option<said::Part>) -> (u32, u32) {
        match part {
            Some(said::Part::Afternoon) => (self.afternoon(), 0),
            Some(said::Part::Evening) => (self.last_start() / 60, self.last_start() % 60),
            _ => (self.open, 0),
        }
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
    at_hm(tz, date, hour, 0)
}

/// The local time `date` at `hour`:`minute` (DST gaps as [`at`]).
fn at_hm(tz: Tz, date: NaiveDate, hour: u32, minute: u32) -> DateTime<Tz> {
    let mut naive = date
        .and_hms_opt(hour.min(23), minute.min(59), 0)
        .unwrap_or_default();
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
    let ahead = |date: NaiveDate| at_hm(now.timezone(), date, hour, minute) > now;
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
        Some(Day::Tomorrow) | Some(Day::ThisWeek) => plus(1),
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
        // "this weekend": the coming Saturday (Sunday when that is over).
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

/// The first business day on or after `date` at `hour:minute` that is
/// later than `now` (a week of closed days: the next opening after `now`).
fn business_day_at(
    date: NaiveDate,
    hour: u32,
    minute: u32,
    now: DateTime<Tz>,
    hours: Hours,
    profile: &BusinessProfile,
) -> DateTime<Tz> {
    let tz = now.timezone();
    let mut d = date;
    for _ in 0..9 {
        let cand = at_hm(tz, d, hour, minute);
        if business_day(profile, d.weekday()) && cand > now {
            return cand;
        }
        match d.succ_opt() {
            Some(n) => d = n,
            None => break,
        }
    }
    next_opening(now, true, hours, profile)
}

/// D-14 and D-25: the booking-time hint for `preferred_time`, as
/// `YYYY-MM-DDTHH:MM:SS±HH:MM` in the profile's time zone — always a start
/// inside business hours (a visit of [`VISIT_MINUTES`] ends by closing) on a
/// business day, later than `now`. This is the time read back to the caller
/// and booked.
///
/// Past and duration talk ("it stopped this morning", "for a week now"),
/// negated times ("not Friday") and address numbers are ignored (see
/// [`said`]). Rules, first match wins:
/// 1. a clock time ("at 2:30", "around 3", "two thirty", "half past two",
///    "noon") or a day ("tomorrow", "Friday", "next Tuesday", "the day after
///    tomorrow", "this weekend", "next week", "in a couple of days"; a day
///    does not count when `urgency_tier` is urgent) → that time on that day:
///    the clock (else 14:00 for "afternoon", the last start for "evening",
///    else the opening) moved inside business hours (before opening → the
///    opening, after the last start → the last start) and kept on the named
///    day; "next week" → next Monday's (first business day's) opening;
///    "this weekend" → the coming Saturday; a clock without a day → today if
///    still ahead, else tomorrow; a closed day → the next business day at
///    the same time;
/// 2. `urgency_tier == "urgent"` or an ASAP phrase (asap / soonest / today /
///    right away / right now / as soon as / same day / emergency …) → now +
///    2 h rounded up to the hour if inside business hours (on a business
///    day), else the next opening;
/// 3. no rush ("whenever", "not urgent", "it can wait", "any time") or time
///    talk that cannot be placed ("after the holiday") → the first opening
///    that is not today (D-25: never today);
/// 4. "first thing" → the next opening;
/// 5. "morning" → the ASAP rule if it is before opening + 1 h (10:00), else
///    the next opening;
/// 6. "afternoon" → 14:00 today if before 13:00, else 14:00 tomorrow;
///    "evening" → the last start today if still ahead, else tomorrow's;
/// 7. anything else (nothing said about when) → the next opening after now.
///
/// Whenever the caller said there is no rush, a result on today moves to
/// the next business day at the same time.
pub fn resolve_booking_time(
    preferred_time: &str,
    urgency_tier: &str,
    now: DateTime<FixedOffset>,
    profile: &BusinessProfile,
) -> String {
    use said::Part;
    let tz = profile.tz();
    let hours = Hours::of(profile);
    let now = now.with_timezone(&tz);
    let today = now.date_naive();
    let tomorrow = today.succ_opt().unwrap_or(today);
    let urgent = urgency_tier.trim().eq_ignore_ascii_case("urgent");
    let r = said::read(preferred_time);

    let target = if r.clock.is_some() || (r.day.is_some() && !urgent) {
        let (hour, minute) = match r.clock {
            Some(c) => hours.clamp(c.hour, c.minute),
            None => hours.part_hour(r.part),
        };
        let date = said_date(r.day, now, hour, minute, profile);
        business_day_at(date, hour, minute, now, hours, profile)
    } else if urgent || r.ask == Some(TimeAsk::Asap) {
        asap(now, hours, profile)
    } else if matches!(r.ask, Some(TimeAsk::NoRush | TimeAsk::Unclear)) {
        let (hour, minute) = hours.part_hour(r.part);
        business_day_at(tomorrow, hour, minute, now, hours, profile)
    } else {
        match r.part {
            Some(Part::FirstThing) => next_opening(now, true, hours, profile),
            Some(Part::Morning) => {
                if now.hour() < hours.open + 1 {
                    asap(now, hours, profile)
                } else {
                    next_opening(now, true, hours, profile)
                }
            }
            Some(Part::Afternoon) => {
                let h = hours.afternoon();
                if now.hour() < h.saturating_sub(1) {
                    at(tz, today, h)
                } else {
                    at(tz, tomorrow, h)
                }
            }
            Some(Part::Evening) => {
                let (h, m) = hours.part_hour(r.part);
                business_day_at(today, h, m, now, hours, profile)
            }
            None => next_opening(now, true, hours, profile),
        }
    };
    // D-25: no rush is never today.
    let target = if r.no_rush && !urgent && target.date_naive() == today {
        business_day_at(
            tomorrow,
            target.hour(),
            target.minute(),
            now,
            hours,
            profile,
        )
    } else {
        target
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
            // Outside business hours: moved inside them on the named day
            // (D-25; "Friday at 8pm" was Saturday's opening before).
            ("tomorrow at 7", "2026-02-24T09:00:00-06:00"),
            ("Friday at 8pm", "2026-02-27T17:00:00-06:00"),
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
            // D-25 changed this D-14 case: "whenever" is routine, never
            // today (was 2026-02-23T09:00, today's opening).
            (
                "d14_default_before_opening",
                "whenever",
                "2026-02-23T07:00:00-06:00",
                "2026-02-24T09:00:00-06:00",
            ),
            // Nothing said about when: D-14's next opening (today's).
            (
                "d14_nothing_said_before_opening",
                "",
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
            resolve_booking_time("", "", now, &p),
            "2026-03-08T03:00:00-05:00"
        );
        // "whenever" is never today (D-25): the next day's opening.
        assert_eq!(
            resolve_booking_time("whenever", "", now, &p),
            "2026-03-09T02:00:00-05:00"
        );
    }

    /// D-25 (issue 23): loose times mean what people mean. Monday
    /// 2026-02-23 10:15 unless said otherwise; 9–18, seven days.
    #[test]
    fn d25_loose_times() {
        let mon = "2026-02-23T10:15:00-06:00";
        let early = "2026-02-23T07:00:00-06:00";
        let late = "2026-02-23T16:30:00-06:00";
        for (said, now, want) in [
            // "next week" → next Monday's first opening.
            ("next week", mon, "2026-03-02T09:00:00-06:00"),
            (
                "sometime next week is fine",
                mon,
                "2026-03-02T09:00:00-06:00",
            ),
            (
                "next week works",
                "2026-02-26T10:15:00-06:00",
                "2026-03-02T09:00:00-06:00",
            ),
            // "day after tomorrow" (+ "around one").
            ("the day after tomorrow", mon, "2026-02-25T09:00:00-06:00"),
            (
                "day after tomorrow around one",
                mon,
                "2026-02-25T13:00:00-06:00",
            ),
            (
                "day after tomorrow in the afternoon",
                mon,
                "2026-02-25T14:00:00-06:00",
            ),
            // No rush → routine, the next opening that is not today.
            ("no rush", mon, "2026-02-24T09:00:00-06:00"),
            ("no rush", early, "2026-02-24T09:00:00-06:00"),
            ("whenever", early, "2026-02-24T09:00:00-06:00"),
            ("it's not urgent", early, "2026-02-24T09:00:00-06:00"),
            ("it can wait", early, "2026-02-24T09:00:00-06:00"),
            ("any time", early, "2026-02-24T09:00:00-06:00"),
            ("not today", early, "2026-02-24T09:00:00-06:00"),
            (
                "no rush, around 3 is good",
                mon,
                "2026-02-24T15:00:00-06:00",
            ),
            (
                "no hurry, afternoons are best",
                mon,
                "2026-02-24T14:00:00-06:00",
            ),
            // Time talk that cannot be placed: never today either.
            ("after the holiday", early, "2026-02-24T09:00:00-06:00"),
            // "this weekend" → the coming Saturday.
            ("this weekend", mon, "2026-02-28T09:00:00-06:00"),
            ("this weekend around 11", mon, "2026-02-28T11:00:00-06:00"),
            // A clock time is kept on the named day, inside hours.
            ("around 3", mon, "2026-02-23T15:00:00-06:00"),
            ("at two thirty", mon, "2026-02-23T14:30:00-06:00"),
            ("half past two tomorrow", mon, "2026-02-24T14:30:00-06:00"),
            ("Friday at 2:30", mon, "2026-02-27T14:30:00-06:00"),
            ("around 3 tomorrow", mon, "2026-02-24T15:00:00-06:00"),
            ("tomorrow at 10:30", mon, "2026-02-24T10:30:00-06:00"),
            ("tomorrow at 2:15", mon, "2026-02-24T14:15:00-06:00"),
            ("noon tomorrow", mon, "2026-02-24T12:00:00-06:00"),
            ("tomorrow evening", mon, "2026-02-24T17:00:00-06:00"),
            ("tomorrow at 5:30", mon, "2026-02-24T17:00:00-06:00"),
            // A clock time without a day: today if still ahead, else tomorrow.
            ("at 11", mon, "2026-02-23T11:00:00-06:00"),
            ("at 10", mon, "2026-02-24T10:00:00-06:00"),
            ("around 3", late, "2026-02-24T15:00:00-06:00"),
            // "tomorrow's fine" before opening is tomorrow, not today.
            ("tomorrow's fine", early, "2026-02-24T09:00:00-06:00"),
            ("Tomorrows good", early, "2026-02-24T09:00:00-06:00"),
            // Past talk is not a wish.
            (
                "it stopped this morning, can you come tomorrow",
                mon,
                "2026-02-24T09:00:00-06:00",
            ),
            (
                "it's been out since Monday and Friday works",
                mon,
                "2026-02-27T09:00:00-06:00",
            ),
            ("not Thursday, Friday", mon, "2026-02-27T09:00:00-06:00"),
            // Address numbers are not clock times.
            (
                "I'm at 12 Oak Street, tomorrow is good",
                mon,
                "2026-02-24T09:00:00-06:00",
            ),
        ] {
            assert_eq!(run(said, now), want, "{said:?} at {now}");
        }
        // A closed day keeps the time on the next business day.
        let weekdays = weekdays_only();
        let fri = parse_now("2026-02-27T10:15:00-06:00").unwrap();
        assert_eq!(
            resolve_booking_time("Saturday at 2", "", fri, &weekdays),
            "2026-03-02T14:00:00-06:00"
        );
        assert_eq!(
            resolve_booking_time("no rush", "", fri, &weekdays),
            "2026-03-02T09:00:00-06:00"
        );
        // An urgent tier still wins over a day, not over a clock time.
        let now = parse_now(mon).unwrap();
        let p = BusinessProfile::default();
        assert_eq!(
            resolve_booking_time("tomorrow", "urgent", now, &p),
            "2026-02-23T13:00:00-06:00"
        );
        assert_eq!(
            resolve_booking_time("today at 3", "urgent", now, &p),
            "2026-02-23T15:00:00-06:00"
        );
    }

    /// Every resolved time is a start the embedded backend offers: inside
    /// business hours (a visit ends by closing), on a business day, ahead.
    #[test]
    fn resolved_times_are_inside_hours() {
        let weekdays = weekdays_only();
        let saids = [
            "",
            "ASAP",
            "whenever",
            "no rush",
            "at 8pm",
            "at 5:45",
            "tomorrow at 6:30 pm",
            "Saturday at 7am",
            "this weekend",
            "tonight",
            "tomorrow evening",
            "next week",
            "around one",
            "half past five",
            "quarter to six",
            "after the holiday",
        ];
        for now in [
            "2026-02-23T05:00:00-06:00",
            "2026-02-23T10:15:00-06:00",
            "2026-02-23T17:59:00-06:00",
            "2026-02-27T16:45:00-06:00",
            "2026-02-28T12:00:00-06:00",
        ] {
            let n = parse_now(now).unwrap();
            for said in saids {
                for p in [&BusinessProfile::default(), &weekdays] {
                    let t = parse_now(&resolve_booking_time(said, "", n, p)).unwrap();
                    let mins = t.hour() * 60 + t.minute();
                    assert!(t > n, "{said:?} at {now}: {t}");
                    assert!((9 * 60..=17 * 60).contains(&mins), "{said:?} at {now}: {t}");
                    assert!(business_day(p, t.weekday()), "{said:?} at {now}: {t}");
                }
            }
        }
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
