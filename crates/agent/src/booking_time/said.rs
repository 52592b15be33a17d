//! What a caller says about when (D-14 extended): a day ("tomorrow",
//! "Friday", "next Tuesday", "this weekend", "next week", "in a couple of
//! days") and a clock time ("at 2", "3pm", "2:30", "noon", "at two thirty").
//!
//! Pure reading, no calendar arithmetic: [`super::resolve_booking_time`]
//! turns the result into a time inside business hours.

use crate::keywords::word_to_digit;
use chrono::Weekday;

/// The day the caller named, relative to today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Day {
    Tomorrow,
    /// A weekday; `next` for "next Tuesday" (the one in the following week).
    Weekday {
        day: Weekday,
        next: bool,
    },
    /// "this weekend": the coming Saturday or Sunday.
    Weekend,
    /// "next week": its first business day.
    NextWeek,
    /// "in a couple of days" (2), "in a few days" (3), "in 5 days", "in a
    /// week" (7).
    InDays(u32),
}

/// A clock time: hour 0–23 and minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub hour: u32,
    pub minute: u32,
}

/// Words of a lower-cased text: letters, digits, `:` and `'` kept inside.
fn words(lower: &str) -> Vec<&str> {
    lower
        .split(|c: char| !(c.is_alphanumeric() || c == ':' || c == '\''))
        .filter(|w| !w.is_empty())
        .collect()
}

fn number(w: &str) -> Option<u32> {
    if let Ok(n) = w.parse::<u32>() {
        return Some(n);
    }
    let n = match w {
        "a" | "an" | "one" => 1,
        "couple" => 2,
        "few" | "three" => 3,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        _ => word_to_digit(w)?.parse().ok()?,
    };
    Some(n)
}

/// The day named in `lower` (lower-cased text), if any.
pub fn day(lower: &str) -> Option<Day> {
    let w = words(lower);
    let has = |x: &str| w.contains(&x);
    for (i, word) in w.iter().enumerate() {
        if let Some((_, wd)) = super::WEEKDAYS
            .iter()
            .find(|(n, _)| word.trim_end_matches('s') == *n)
        {
            let next = i > 0 && w[i - 1] == "next";
            return Some(Day::Weekday { day: *wd, next });
        }
    }
    if has("tomorrow") {
        return Some(Day::Tomorrow);
    }
    if has("weekend") {
        return Some(Day::Weekend);
    }
    if let Some(i) = w.iter().position(|x| *x == "week") {
        if i > 0 && w[i - 1] == "next" {
            return Some(Day::NextWeek);
        }
        if i > 0 && matches!(w[i - 1], "a" | "one") {
            return Some(Day::InDays(7));
        }
    }
    // "in a couple of days", "a few days", "3 days", "couple days".
    if let Some(i) = w.iter().position(|x| *x == "days") {
        let before = &w[i.saturating_sub(3)..i];
        if let Some(n) = before.iter().rev().find_map(|x| number(x)) {
            if (1..=14).contains(&n) {
                return Some(Day::InDays(n));
            }
        }
    }
    None
}

/// The clock time named in `lower`, if any: "at 2", "2pm", "2 p.m.",
/// "2:30", "2 o'clock", "noon", "at two thirty". Without am/pm, 1–6 are
/// afternoon hours and 7–11 morning ones (how callers mean them).
pub fn clock(lower: &str) -> Option<Clock> {
    let w = words(lower);
    if w.contains(&"noon") {
        return Some(Clock {
            hour: 12,
            minute: 0,
        });
    }
    for (i, word) in w.iter().enumerate() {
        // "2pm", "11am", "2:30pm".
        let (body, suffix) = match word.strip_suffix("pm").or_else(|| word.strip_suffix("am")) {
            Some(b) if !b.is_empty() => (b, Some(word.ends_with("pm"))),
            _ => (*word, None),
        };
        let (h, m) = match body.split_once(':') {
            Some((h, m)) => (h.parse::<u32>().ok(), m.parse::<u32>().ok()),
            None => (
                number(body).filter(|_| body != "a" && body != "an"),
                Some(0),
            ),
        };
        let (Some(mut hour), Some(mut minute)) = (h, m) else {
            continue;
        };
        if !(1..=12).contains(&hour) || minute > 59 {
            continue;
        }
        let next = w.get(i + 1).copied().unwrap_or("");
        let pm = suffix.or(match next {
            "pm" | "p" => Some(true),
            "am" | "a" if i > 0 => Some(false),
            _ => None,
        });
        let cued = pm.is_some()
            || body.contains(':')
            || next == "o'clock"
            || (i > 0 && matches!(w[i - 1], "at" | "around" | "about" | "by"));
        if !cued {
            continue;
        }
        // "two thirty", "two fifteen".
        if !body.contains(':') {
            minute = match next {
                "thirty" => 30,
                "fifteen" => 15,
                "forty" | "45" => 45,
                "30" => 30,
                _ => minute,
            };
        }
        hour = match pm {
            Some(true) if hour < 12 => hour + 12,
            Some(false) if hour == 12 => 0,
            Some(_) => hour,
            None if hour <= 6 => hour + 12,
            None => hour,
        };
        return Some(Clock { hour, minute });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_as_callers_say_them() {
        use Day::*;
        for (said, want) in [
            ("tomorrow at 2", Some(Tomorrow)),
            (
                "friday at 3pm",
                Some(Weekday {
                    day: chrono::Weekday::Fri,
                    next: false,
                }),
            ),
            (
                "next tuesday at 2",
                Some(Weekday {
                    day: chrono::Weekday::Tue,
                    next: true,
                }),
            ),
            (
                "mondays are best",
                Some(Weekday {
                    day: chrono::Weekday::Mon,
                    next: false,
                }),
            ),
            ("this weekend", Some(Weekend)),
            ("sometime next week", Some(NextWeek)),
            ("in a couple of days", Some(InDays(2))),
            ("it can wait a few days", Some(InDays(3))),
            ("in 5 days", Some(InDays(5))),
            ("in a week or so", Some(InDays(7))),
            ("whenever", None),
            ("as soon as possible", None),
        ] {
            assert_eq!(day(said), want, "{said:?}");
        }
    }

    #[test]
    fn clock_times_as_callers_say_them() {
        let c = |h, m| Some(Clock { hour: h, minute: m });
        for (said, want) in [
            ("tomorrow at 2", c(14, 0)),
            ("friday at 3pm", c(15, 0)),
            ("3 pm please", c(15, 0)),
            ("at 10", c(10, 0)),
            ("10am", c(10, 0)),
            ("2:30", c(14, 30)),
            ("at two thirty", c(14, 30)),
            ("around 11 o'clock", c(11, 0)),
            ("noon", c(12, 0)),
            ("at 12", c(12, 0)),
            ("12am", c(0, 0)),
            ("in 2 days", None),
            ("a few days", None),
            ("2 units", None),
            ("whenever", None),
        ] {
            assert_eq!(clock(said), want, "{said:?}");
        }
    }

    #[test]
    fn any_text_is_read_without_panic() {
        for s in [
            "",
            ":",
            "::",
            "99:99pm",
            "at",
            "pm",
            "12:",
            ":30",
            "at 0",
            "at 13",
            "ｐｍ",
            "🙂 at 2",
        ] {
            let _ = (day(s), clock(s));
        }
    }
}
