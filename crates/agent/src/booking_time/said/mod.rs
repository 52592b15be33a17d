//! What a caller says about when (D-14, D-25): a day ("tomorrow", "Friday",
//! "next Tuesday", "this weekend", "next week", "the day after tomorrow",
//! "in a couple of days"), a part of the day ("morning", "afternoon",
//! "evening", "first thing") and a clock time ("at 2", "3pm", "2:30",
//! "noon", "two thirty", "half past two", "around one").
//!
//! Pure reading, no calendar arithmetic: [`super::resolve_booking_time`]
//! turns the result into a time inside business hours.
//!
//! An utterance is cut into clauses (at punctuation and at "and", "but",
//! "so", "because", "since", "though"); each clause is read on its own:
//! * a clause about the past ("it stopped this morning", "it's been out
//!   since Monday", "we noticed it Tuesday") says nothing about the visit;
//! * past and duration phrases ("two days ago", "since yesterday", "for a
//!   week now", "last night") are dropped from the others;
//! * a negated time ("not Friday", "tomorrow doesn't work", "not this
//!   week") cannot be placed ([`TimeAsk::Unclear`]); a negated hurry ("not
//!   urgent", "doesn't have to be today") is [`TimeAsk::NoRush`];
//! * numbers that are part of an address ("at 12 Oak Street", "unit 4") or
//!   count something ("around 3 years old", "2 units") are not clock times.
//!
//! Every utterance of a call is read here, so the reader is cheap for the
//! many clauses that say nothing about when: a clause without one of the
//! trigger words ([`words::TRIGGERS`]) is skipped at a glance. The word
//! tables live in `words.rs`, the phrasings callers use in `tests.rs`.

use crate::keywords::{lowercase, word_to_digit};
use chrono::Weekday;
use words::*;

mod words;

/// What the caller said about when the visit should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeAsk {
    /// As soon as possible / today / right away / emergency words (the ASAP
    /// rule of D-14).
    Asap,
    /// No rush / whenever / not urgent / it can wait / any time (routine;
    /// never today — D-25).
    NoRush,
    /// A day and/or clock time the resolver understands ("next week", "day
    /// after tomorrow around one", "Friday at 2:30", "around 3 tomorrow",
    /// "this weekend", "tomorrow afternoon", "in a couple of days", "Monday
    /// morning").
    When,
    /// Time talk the resolver cannot place ("after the holiday", "not this
    /// week", "sometime later in the month", "when my wife is home") — the
    /// agent asks one short clarifying question; never today by default.
    Unclear,
}

/// What the caller said about when, or `None` when the utterance says
/// nothing about when the visit should be (past and duration talk such as
/// "it stopped this morning" or "for a week now" does not count).
///
/// Precedence over the clauses of one utterance: a placeable time
/// ([`TimeAsk::When`]) > [`TimeAsk::Unclear`] > [`TimeAsk::Asap`] >
/// [`TimeAsk::NoRush`] ("no rush, but Friday would be nice" is `When`).
pub fn time_ask(text: &str) -> Option<TimeAsk> {
    read(text).ask
}

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
    /// "this week", "sometime this week": the next opening that is not today.
    ThisWeek,
    /// "next week": its first business day.
    NextWeek,
    /// "the day after tomorrow" (2), "in a couple of days" (2), "in a few
    /// days" (3), "in 5 days", "in a week" (7), "in two weeks" (14).
    InDays(u32),
}

/// A part of the day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// "first thing": the opening hour.
    FirstThing,
    Morning,
    Afternoon,
    /// "evening", "tomorrow night": the last start of the day.
    Evening,
}

/// A clock time: hour 0–23 and minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub hour: u32,
    pub minute: u32,
}

/// Everything said about when in one utterance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reading {
    /// The classification ([`time_ask`]).
    pub ask: Option<TimeAsk>,
    /// The first day named in a placeable clause.
    pub day: Option<Day>,
    /// The first clock time named in a placeable clause (am/pm settled).
    pub clock: Option<Clock>,
    /// The first part of the day named in a placeable clause.
    pub part: Option<Part>,
    /// Whether any clause said there is no rush (D-25: never today).
    pub no_rush: bool,
}

/// The day named in `text`, if any (past talk ignored).
#[cfg(test)]
pub fn day(text: &str) -> Option<Day> {
    read(text).day
}

/// The clock time named in `text`, if any: "at 2", "2pm", "2 p.m.", "2:30",
/// "2 o'clock", "noon", "at two thirty", "half past two". Without am/pm (or
/// "morning" / "afternoon" / "evening" / "tonight"), 1–6 are afternoon hours
/// and 7–11 morning ones (how callers mean them).
#[cfg(test)]
pub fn clock(text: &str) -> Option<Clock> {
    read(text).clock
}

// ------------------------------------------------------------------ tokens

/// The tokens of one clause.
/// One word of a clause, borrowed from the normalised text (or a fixed
/// spelling): reading time talk allocates nothing per word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct W<'a>(&'a str);

impl<'a> W<'a> {
    fn as_str(&self) -> &'a str {
        self.0
    }
}

impl std::ops::Deref for W<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.0
    }
}

impl PartialEq<str> for W<'_> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for W<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

type Clause<'a> = Vec<W<'a>>;

fn is_seq(toks: &[W<'_>], at: usize, seq: &[&str]) -> bool {
    seq.len() + at <= toks.len() && seq.iter().zip(&toks[at..]).all(|(a, b)| *a == b.as_str())
}

fn find_seq(toks: &[W<'_>], seq: &[&str]) -> Option<usize> {
    (0..toks.len()).find(|&i| is_seq(toks, i, seq))
}

fn has(toks: &[W<'_>], w: &str) -> bool {
    toks.iter().any(|t| t == w)
}

/// One word, normalised: outer apostrophes trimmed, possessive `'s` and a
/// trailing "ish" taken off ("tomorrow's" → "tomorrow", "3ish" → "3").
fn norm_word(w: &str) -> W<'_> {
    let w = w.trim_matches('\'');
    let w = w.strip_suffix("'s").unwrap_or(w);
    let w = match w.strip_suffix("ish") {
        Some(b)
            if !b.is_empty()
                && (b == "noon"
                    || b.chars().all(|c| c.is_ascii_digit())
                    || b.ends_with(|c: char| c.is_ascii_digit())
                    || number(b).is_some()) =>
        {
            b
        }
        _ => w,
    };
    match w {
        "tomorrows" | "tmrw" | "tmr" | "tommorow" | "tommorrow" | "tomorow" => W("tomorrow"),
        "oclock" => W("o'clock"),
        "nite" => W("night"),
        _ => W(w),
    }
}

/// `text` with a `#` before every number directly followed by a
/// capitalised word that is not time talk ("at 9 Stone Creek Pass" → "at
/// #9 Stone Creek Pass"): a house number, never a clock time.
fn mark_house_numbers(text: &str) -> String {
    const TIME_CAPS: &[&str] = &[
        "i", "am", "pm", "a.m.", "p.m.", "o'clock", "oclock", "tomorrow", "today", "tonight",
        "noon", "or", "and", "on", "in", "at", "is", "ish", "sharp", "please", "works", "would",
        "should", "then", "that", "this", "next", "if", "thirty", "fifteen", "forty", "fifty",
        "twenty", "oh",
    ];
    let words: Vec<&str> = text.split(' ').collect();
    let mut out = String::with_capacity(text.len() + 4);
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let house = !w.is_empty()
            && w.bytes().all(|b| b.is_ascii_digit())
            && words.get(i + 1).is_some_and(|n| {
                let bare = n.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
                let lower = bare.to_lowercase();
                bare.starts_with(|c: char| c.is_uppercase())
                    && !TIME_CAPS.contains(&lower.as_str())
                    && is_weekday(&lower).is_none()
            });
        if house {
            out.push('#');
        }
        out.push_str(w);
    }
    out
}

/// The clauses of `text`: lower-cased, cut at punctuation and
/// conjunctions, words normalised.
fn normalized(text: &str) -> String {
    let marked = mark_house_numbers(text);
    let mut s = lowercase(&marked).into_owned();
    for (a, b) in [
        ("\u{2019}", "'"),
        ("a.s.a.p.", "asap"),
        ("a.s.a.p", "asap"),
        ("a.m.", "am"),
        ("p.m.", "pm"),
        ("a.m", "am"),
        ("p.m", "pm"),
        ("anything but", "except"),
        ("other than", "except"),
    ] {
        if s.contains(a) {
            s = s.replace(a, b);
        }
    }
    s
}

/// The clauses of `s` (see [`normalized`]): cut at punctuation and
/// conjunctions, words normalised and borrowed from `s`.
fn clauses(s: &str) -> Vec<Clause<'_>> {
    let mut out = Vec::new();
    for chunk in s.split(|c: char| {
        matches!(
            c,
            ',' | '.' | ';' | '!' | '?' | '\n' | '\u{2014}' | '\u{2013}' | '(' | ')' | '"'
        )
    }) {
        let mut cur: Clause = Vec::new();
        for raw in
            chunk.split(|c: char| !(c.is_alphanumeric() || c == ':' || c == '\'' || c == '#'))
        {
            let w = norm_word(raw);
            if w.is_empty() {
                continue;
            }
            if SPLITTERS.contains(&w.as_str()) {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if w == "since" {
                    cur.push(w);
                }
                continue;
            }
            cur.push(w);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
    }
    out
}

fn number(w: &str) -> Option<u32> {
    if let Ok(n) = w.parse::<u32>() {
        return Some(n);
    }
    let n = match w {
        "a" | "an" | "one" => 1,
        "couple" => 2,
        "few" | "three" => 3,
        "several" => 4,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        "twenty" => 20,
        _ => word_to_digit(w)?.parse().ok()?,
    };
    Some(n)
}

/// An hour as said: 1–12 in digits or words (not "a", "couple", "oh").
fn hour_word(w: &str) -> Option<u32> {
    if matches!(
        w,
        "a" | "an" | "couple" | "few" | "several" | "oh" | "o" | "zero"
    ) {
        return None;
    }
    number(w).filter(|n| (1..=12).contains(n))
}

fn is_weekday(w: &str) -> Option<Weekday> {
    super::WEEKDAYS
        .iter()
        .find(|(n, _)| w == *n || w.strip_suffix('s') == Some(n))
        .map(|(_, d)| *d)
}

// ------------------------------------------------------------------ clauses

/// Whether a clause talks about the past ("it stopped this morning").
fn is_past(toks: &[W<'_>]) -> bool {
    toks.iter().enumerate().any(|(i, t)| {
        PAST_VERBS.contains(&t.as_str())
            || (matches!(t.as_str(), "was" | "were" | "wasn't" | "weren't")
                && !toks
                    .get(i + 1)
                    .is_some_and(|n| WISH_AFTER_WAS.contains(&n.as_str())))
            || (t == "used" && toks.get(i + 1).is_some_and(|n| n == "to"))
    })
}

/// Drop past and duration phrases: "two days ago", "since yesterday",
/// "last night", "the past few days", "for a week now", "overnight".
fn drop_past_phrases(toks: &mut Clause<'_>) {
    let timeish = |w: &str| TIMEISH.contains(&w) || number(w).is_some() || is_weekday(w).is_some();
    let mut keep = vec![true; toks.len()];
    for i in 0..toks.len() {
        let w = toks[i].as_str();
        match w {
            "ago" => {
                keep[i] = false;
                let mut j = i;
                while j > 0 && i - j < 6 && timeish(&toks[j - 1]) {
                    j -= 1;
                    keep[j] = false;
                }
            }
            "since" | "yesterday" | "overnight" => {
                keep[i] = false;
                if w == "yesterday" && i >= 2 && toks[i - 1] == "before" && toks[i - 2] == "day" {
                    keep[i - 1] = false;
                    keep[i - 2] = false;
                }
                let mut j = i + 1;
                while j < toks.len() && j - i < 5 && timeish(&toks[j]) {
                    keep[j] = false;
                    j += 1;
                }
            }
            "last" | "past" | "all"
                if toks.get(i + 1).is_some_and(|n| {
                    LAST_WHAT.contains(&n.as_str())
                        || (w == "all"
                            && matches!(n.as_str(), "morning" | "afternoon" | "evening" | "along"))
                }) =>
            {
                keep[i] = false;
                let mut j = i + 1;
                while j < toks.len() && j - i < 4 && timeish(&toks[j]) {
                    keep[j] = false;
                    j += 1;
                }
            }
            "for" => {
                // "for a week now", "for two days": a unit within four words,
                // with nothing that names a wished-for day in between.
                let end = (i + 5).min(toks.len());
                let unit = (i + 1..end).find(|&j| DURATION_UNITS.contains(&toks[j].as_str()));
                if let Some(u) = unit {
                    let plain = (i + 1..u).all(|j| {
                        let t = toks[j].as_str();
                        !matches!(t, "next" | "this" | "tomorrow") && (timeish(t) || t == "good")
                    });
                    if plain {
                        for k in keep.iter_mut().take(u + 1).skip(i) {
                            *k = false;
                        }
                        if toks.get(u + 1).is_some_and(|n| n == "now") {
                            keep[u + 1] = false;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut k = keep.into_iter();
    toks.retain(|_| k.next().unwrap_or(true));
}

/// Remove every occurrence of the phrases in `list`; whether any was found.
fn take_phrases(toks: &mut Clause<'_>, list: &[&[&str]]) -> bool {
    let mut found = false;
    for seq in list {
        while let Some(i) = find_seq(toks, seq) {
            toks.drain(i..i + seq.len());
            found = true;
        }
    }
    found
}

/// Whether a clause has time talk the resolver cannot place.
fn is_unclear(toks: &[W<'_>]) -> bool {
    toks.iter().enumerate().any(|(i, t)| {
        let t = t.as_str();
        let next = toks.get(i + 1).map(W::as_str).unwrap_or("");
        UNCLEAR_WORDS.contains(&t)
            || (matches!(t, "may" | "march")
                && (next.starts_with(|c: char| c.is_ascii_digit())
                    || next == "the"
                    || ORDINALS.contains(&next)))
            || (t == "later" && matches!(next, "this" | "next" | "in" | "that"))
            || (matches!(t, "when" | "once" | "whenever")
                && SOMEONE.contains(&next)
                && toks[i..].iter().any(|w| AVAILABLE.contains(&w.as_str())))
            || (matches!(t, "after" | "before" | "until" | "til" | "till")
                && AFTER_WHAT.contains(&next))
            || (matches!(t, "after" | "before")
                && next == "the"
                && toks
                    .get(i + 2)
                    .is_some_and(|w| !w.starts_with(|c: char| c.is_ascii_digit())))
            || (is_ordinal_digits(t)
                && i > 0
                && (matches!(toks[i - 1].as_str(), "the" | "on" | "may" | "march")
                    || UNCLEAR_WORDS.contains(&toks[i - 1].as_str())
                    || next == "of"))
            || (t == "the"
                && ORDINALS.contains(&next)
                && !matches!(
                    toks.get(i + 2).map(W::as_str),
                    Some("thing" | "available" | "time" | "opening" | "slot" | "one")
                ))
    }) || UNCLEAR_PHRASES.iter().any(|p| find_seq(toks, p).is_some())
}

/// "5th", "21st", "2nd", "3rd".
fn is_ordinal_digits(t: &str) -> bool {
    ["st", "nd", "rd", "th"].iter().any(|s| {
        t.strip_suffix(s)
            .is_some_and(|d| !d.is_empty() && d.len() <= 2 && d.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The day named in a clause.
fn day_in(toks: &[W<'_>]) -> Option<Day> {
    if find_seq(toks, &["day", "after", "tomorrow"]).is_some() {
        return Some(Day::InDays(2));
    }
    // Several weekdays ("move Wednesday's visit to Friday", "from Wednesday
    // to Thursday", "Thursday instead of Wednesday"): the one it goes to.
    let days: Vec<(usize, Weekday)> = toks
        .iter()
        .enumerate()
        .filter_map(|(i, w)| is_weekday(w).map(|d| (i, d)))
        .collect();
    let before = |i: usize| if i > 0 { toks[i - 1].as_str() } else { "" };
    let pick = days
        .iter()
        .find(|(i, _)| matches!(before(*i), "to" | "for"))
        .or_else(|| {
            days.iter()
                .find(|(i, _)| !matches!(before(*i), "from" | "of"))
        })
        .or(days.first());
    if let Some((i, wd)) = pick {
        let next = before(*i) == "next";
        return Some(Day::Weekday { day: *wd, next });
    }
    if has(toks, "tomorrow") {
        return Some(Day::Tomorrow);
    }
    if has(toks, "weekend") || has(toks, "weekends") {
        return Some(Day::Weekend);
    }
    if find_seq(toks, &["in", "a", "day"]).is_some() {
        return Some(Day::InDays(1));
    }
    if let Some(i) = toks.iter().position(|x| x == "week") {
        if i > 0 && toks[i - 1] == "next" {
            return Some(Day::NextWeek);
        }
        if i > 0 && toks[i - 1] == "this" {
            return Some(Day::ThisWeek);
        }
        if i > 0 && matches!(toks[i - 1].as_str(), "a" | "one") {
            return Some(Day::InDays(7));
        }
    }
    // "in a couple of days", "a few days", "3 days", "in two weeks".
    for (unit, mul, max) in [("days", 1, 14), ("weeks", 7, 8)] {
        if let Some(i) = toks.iter().position(|x| x == unit) {
            let before = &toks[i.saturating_sub(3)..i];
            if let Some(n) = before.iter().rev().find_map(|x| number(x)) {
                if (1..=max).contains(&n) {
                    return Some(Day::InDays(n * mul));
                }
            }
        }
    }
    None
}

/// The part of the day named in a clause.
fn part_in(toks: &[W<'_>]) -> Option<Part> {
    if find_seq(toks, &["first", "thing"]).is_some() {
        return Some(Part::FirstThing);
    }
    if find_seq(toks, &["before", "noon"]).is_some()
        || find_seq(toks, &["before", "lunch"]).is_some()
    {
        return Some(Part::Morning);
    }
    if find_seq(toks, &["after", "lunch"]).is_some() {
        return Some(Part::Afternoon);
    }
    toks.iter().find_map(|t| match t.as_str() {
        "morning" | "mornings" => Some(Part::Morning),
        "afternoon" | "afternoons" => Some(Part::Afternoon),
        "evening" | "evenings" => Some(Part::Evening),
        "night"
            if toks
                .iter()
                .any(|w| w == "tomorrow" || is_weekday(w).is_some()) =>
        {
            Some(Part::Evening)
        }
        _ => None,
    })
}

/// A clock time before am/pm is settled: hour 0–23 (or 1–12 with `pm`
/// unknown), minute, and whether am/pm was said.
#[derive(Debug, Clone, Copy)]
struct RawClock {
    hour: u32,
    minute: u32,
    pm: Option<bool>,
    /// 24-hour form ("14:30"): no am/pm guess.
    h24: bool,
}

/// Minutes said after an hour word at `toks[i]`: "thirty", "30", "fifteen",
/// "forty five", "oh five", "o'clock"; the minute and the words used.
fn minutes_after(toks: &[W<'_>], i: usize) -> Option<(u32, usize)> {
    let w = toks.get(i)?.as_str();
    let unit = |j: usize| {
        toks.get(j)
            .and_then(|x| number(x))
            .filter(|n| (1..=9).contains(n) && toks[j] != "a" && toks[j] != "an")
    };
    let tens = match w {
        "o'clock" => return Some((0, 1)),
        "fifteen" => return Some((15, 1)),
        "ten" => return Some((10, 1)),
        "oh" | "o" => return unit(i + 1).map(|n| (n, 2)),
        "twenty" => 20,
        "thirty" => 30,
        "forty" | "fourty" => 40,
        "fifty" => 50,
        _ if w.len() == 2 && w.bytes().all(|b| b.is_ascii_digit()) => {
            let n: u32 = w.parse().ok()?;
            return (n <= 59).then_some((n, 1));
        }
        _ => return None,
    };
    Some(match unit(i + 1) {
        Some(n) => (tens + n, 2),
        None => (tens, 1),
    })
}

/// Whether the number at `toks[i]` (with `used` words of minutes and am/pm
/// after it) is part of an address or counts something.
fn not_a_clock(toks: &[W<'_>], i: usize, used: usize) -> bool {
    if i > 0 && NOT_CLOCK_BEFORE.contains(&toks[i - 1].as_str()) {
        return true;
    }
    let after = &toks[(i + used).min(toks.len())..];
    if after.first().is_some_and(|n| {
        COUNT_NOUNS.contains(&n.as_str())
            || (n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty())
            || hour_word(n).is_some_and(|_| {
                n.len() > 2
                    && toks
                        .get(i)
                        .is_some_and(|t| t.bytes().all(|b| b.is_ascii_digit()))
            })
    }) {
        return true;
    }
    after.iter().take(3).any(|w| is_street_word(w.as_str()))
}

/// A street type ("Drive", "Blvd") or a word of a street's name ("Oak").
fn is_street_word(w: &str) -> bool {
    crate::extract::STREET_SUFFIXES.contains(&w) || STREET_NAME_WORDS.contains(&w)
}

/// The clock time named in a clause.
fn clock_in(toks: &[W<'_>]) -> Option<RawClock> {
    if toks.iter().any(|t| ADDRESS_CLAUSE.contains(&t.as_str())) {
        return None;
    }
    for (i, word) in toks.iter().enumerate() {
        let prev = if i > 0 { toks[i - 1].as_str() } else { "" };
        let next = toks.get(i + 1).map(W::as_str).unwrap_or("");
        match word.as_str() {
            "noon" | "midday" | "lunchtime" if !matches!(prev, "before" | "after") => {
                return Some(RawClock {
                    hour: 12,
                    minute: 0,
                    pm: Some(true),
                    h24: false,
                });
            }
            "lunch" if matches!(prev, "at" | "around" | "by" | "about") => {
                return Some(RawClock {
                    hour: 12,
                    minute: 0,
                    pm: Some(true),
                    h24: false,
                });
            }
            // "half past two", "quarter past three", "quarter to four".
            "half" | "quarter" => {
                let Some(h) = toks.get(i + 2).and_then(|w| hour_word(w)) else {
                    continue;
                };
                let (hour, minute) = match (word.as_str(), next) {
                    ("half", "past" | "after") => (h, 30),
                    ("quarter", "past" | "after") => (h, 15),
                    ("quarter", "to" | "till" | "til" | "of" | "before") => {
                        (if h == 1 { 12 } else { h - 1 }, 45)
                    }
                    _ => continue,
                };
                if not_a_clock(toks, i + 2, 1)
                    && !toks
                        .get(i + 3)
                        .is_some_and(|w| matches!(w.as_str(), "am" | "pm" | "p" | "a"))
                {
                    continue;
                }
                let pm = match toks.get(i + 3).map(W::as_str) {
                    Some("pm" | "p") => Some(true),
                    Some("am") => Some(false),
                    _ => None,
                };
                return Some(RawClock {
                    hour,
                    minute,
                    pm,
                    h24: false,
                });
            }
            _ => {}
        }
        // "2pm", "11am", "2:30pm".
        let (body, suffix) = match word.strip_suffix("pm").or_else(|| word.strip_suffix("am")) {
            Some(b) if !b.is_empty() => (b, Some(word.ends_with("pm"))),
            _ => (word.as_str(), None),
        };
        let colon = body.contains(':');
        let (hour, mut minute) = match body.split_once(':') {
            Some((h, m)) => match (h.parse::<u32>(), m.parse::<u32>()) {
                (Ok(h), Ok(m)) if h <= 23 && m <= 59 && m.to_string().len() <= 2 && m < 60 => {
                    (h, m)
                }
                _ => continue,
            },
            None => match hour_word(body) {
                Some(h) => (h, 0),
                None => continue,
            },
        };
        let mut used = 1;
        if !colon {
            if let Some((m, n)) = minutes_after(toks, i + 1) {
                // "two thirty", "2 30", "three o'clock".
                minute = m;
                used += n;
            }
        }
        let after = toks.get(i + used).map(W::as_str).unwrap_or("");
        let pm = suffix.or(match after {
            "pm" | "p" => Some(true),
            "am" => Some(false),
            "a" if toks.get(i + used + 1).is_some_and(|m| m == "m") => Some(false),
            _ => None,
        });
        if pm.is_some() && suffix.is_none() {
            used += 1;
        }
        let cued = pm.is_some() || colon || used > 1 || CLOCK_CUES.contains(&prev);
        if !cued || (hour == 0 && !colon) {
            continue;
        }
        if not_a_clock(toks, i, used) {
            continue;
        }
        if pm.is_some() && !(1..=12).contains(&hour) {
            continue;
        }
        return Some(RawClock {
            hour,
            minute,
            pm,
            h24: (colon && hour > 12) || hour == 0,
        });
    }
    None
}

/// Settle am/pm: said, or implied by the part of the day, or the caller's
/// usual meaning (1–6 afternoon, 7–11 morning, 12 noon).
fn settle(c: RawClock, part: Option<Part>, evening_word: bool) -> Clock {
    if c.h24 {
        return Clock {
            hour: c.hour,
            minute: c.minute,
        };
    }
    let pm = c.pm.or(match part {
        Some(Part::Morning | Part::FirstThing) => Some(false),
        Some(Part::Afternoon | Part::Evening) => Some(true),
        None if evening_word => Some(true),
        None => None,
    });
    let hour = match pm {
        Some(true) if c.hour < 12 => c.hour + 12,
        Some(false) if c.hour == 12 => 0,
        Some(_) => c.hour,
        None if c.hour <= 6 => c.hour + 12,
        None => c.hour,
    };
    Clock {
        hour,
        minute: c.minute,
    }
}

/// How one clause reads.
#[derive(Debug, Default)]
struct ClauseReading {
    ask: Option<TimeAsk>,
    day: Option<Day>,
    clock: Option<RawClock>,
    part: Option<Part>,
    no_rush: bool,
    evening_word: bool,
}

/// Whether `word` may start time talk ([`TRIGGERS`], a digit, or an hour
/// word with "am"/"pm" run on: "twopm").
fn is_trigger(word: &str) -> bool {
    let known = |w: &str| TRIGGERS.binary_search(&w).is_ok();
    word.bytes().any(|b| b.is_ascii_digit())
        || known(word)
        || word
            .strip_suffix("pm")
            .or_else(|| word.strip_suffix("am"))
            .is_some_and(|w| !w.is_empty() && known(w))
}

fn read_clause(toks: Clause<'_>) -> ClauseReading {
    // Most clauses say nothing about when: one look at their words.
    if !toks.iter().any(|t| is_trigger(t)) {
        return ClauseReading::default();
    }
    read_time_clause(toks)
}

/// [`read_clause`] for a clause with a trigger word.
fn read_time_clause(mut toks: Clause<'_>) -> ClauseReading {
    let mut r = ClauseReading::default();
    if is_past(&toks) || ABOUT_THE_BUSINESS.iter().any(|p| is_seq(&toks, 0, p)) {
        return r;
    }
    take_phrases(&mut toks, GREETINGS);
    drop_past_phrases(&mut toks);
    if toks.is_empty() {
        return r;
    }
    r.evening_word = toks
        .iter()
        .any(|t| matches!(t.as_str(), "tonight" | "evening" | "night" | "afternoon"));
    // "at your earliest convenience", "it can't wait": wishes for soon.
    let asap_polite = take_phrases(&mut toks, ASAP_POLITE);
    let unclear = is_unclear(&toks);
    r.no_rush = take_phrases(&mut toks, NO_RUSH);
    take_phrases(&mut toks, NOT_NEGATION);
    // Negators, "no" only right before time or hurry words ("no emergency").
    let negated = toks.iter().enumerate().any(|(i, t)| {
        NEGATORS.contains(&t.as_str())
            || (t == "no"
                && toks
                    .get(i + 1)
                    .is_some_and(|n| n == "today" || n == "tomorrow" || is_weekday(n).is_some()))
    });
    let asap = asap_polite || ASAP.iter().any(|p| find_seq(&toks, p).is_some());
    r.day = day_in(&toks);
    r.clock = clock_in(&toks);
    r.part = part_in(&toks);
    let timed = r.day.is_some() || r.clock.is_some() || r.part.is_some();
    r.ask = if timed && !negated && !unclear {
        Some(TimeAsk::When)
    } else if timed || unclear {
        Some(TimeAsk::Unclear)
    } else if asap && negated {
        // "not today", "it's not an emergency", "doesn't have to be today".
        r.no_rush = true;
        Some(TimeAsk::NoRush)
    } else if asap {
        Some(TimeAsk::Asap)
    } else if r.no_rush {
        Some(TimeAsk::NoRush)
    } else {
        None
    };
    if r.ask != Some(TimeAsk::When) {
        r.day = None;
        r.clock = None;
        r.part = None;
    }
    r
}

/// Read everything said about when in `text` (any case).
pub fn read(text: &str) -> Reading {
    let mut out = Reading::default();
    let mut raw_clock = None;
    let mut evening_word = false;
    let rank = |a: TimeAsk| match a {
        TimeAsk::When => 3,
        TimeAsk::Unclear => 2,
        TimeAsk::Asap => 1,
        TimeAsk::NoRush => 0,
    };
    let norm = normalized(text);
    let mut all = clauses(&norm);
    // "morning, my AC stopped": a greeting, when more follows.
    if all.len() > 1
        && all[0].iter().all(|w| {
            matches!(
                w.as_str(),
                "hi" | "hey" | "hello" | "morning" | "afternoon" | "evening"
            )
        })
    {
        all.remove(0);
    }
    for c in all {
        let r = read_clause(c);
        out.no_rush |= r.no_rush;
        if let Some(a) = r.ask {
            if out.ask.is_none_or(|b| rank(a) > rank(b)) {
                out.ask = Some(a);
            }
        }
        out.day = out.day.or(r.day);
        out.part = out.part.or(r.part);
        if raw_clock.is_none() && r.clock.is_some() {
            raw_clock = r.clock;
            evening_word = r.evening_word;
        }
    }
    out.clock = raw_clock.map(|c| settle(c, out.part, evening_word));
    out
}

#[cfg(test)]
mod tests;
