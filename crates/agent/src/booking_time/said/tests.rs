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
        ("the day after tomorrow", Some(InDays(2))),
        ("day after tomorrow around one", Some(InDays(2))),
        ("in two weeks", Some(InDays(14))),
        ("sometime this week", Some(ThisWeek)),
        ("tomorrow's fine", Some(Tomorrow)),
        ("Tomorrow’s good", Some(Tomorrow)),
        ("whenever", None),
        ("as soon as possible", None),
        // Past and negated days are not wishes.
        ("it stopped working on Monday", None),
        ("since yesterday", None),
        ("not Friday", None),
        (
            "it broke on Tuesday, can you come Friday",
            Some(Weekday {
                day: chrono::Weekday::Fri,
                next: false,
            }),
        ),
        (
            "can we push Wednesday's visit to Friday afternoon?",
            Some(Weekday {
                day: chrono::Weekday::Fri,
                next: false,
            }),
        ),
        (
            "can we move the visit from Wednesday to Thursday?",
            Some(Weekday {
                day: chrono::Weekday::Thu,
                next: false,
            }),
        ),
        (
            "Thursday instead of Wednesday",
            Some(Weekday {
                day: chrono::Weekday::Thu,
                next: false,
            }),
        ),
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
        ("3 p.m. please", c(15, 0)),
        ("at 10", c(10, 0)),
        ("10am", c(10, 0)),
        ("10 a.m.", c(10, 0)),
        ("2:30", c(14, 30)),
        ("at two thirty", c(14, 30)),
        ("two thirty", c(14, 30)),
        ("two forty five", c(14, 45)),
        ("ten thirty", c(10, 30)),
        ("at 10 30", c(10, 30)),
        ("around 11 o'clock", c(11, 0)),
        ("around one", c(13, 0)),
        ("half past two", c(14, 30)),
        ("quarter past three", c(15, 15)),
        ("quarter to four", c(15, 45)),
        ("around 3ish", c(15, 0)),
        ("noon", c(12, 0)),
        ("noonish", c(12, 0)),
        ("at 12", c(12, 0)),
        ("12am", c(0, 0)),
        ("14:30", c(14, 30)),
        ("tomorrow morning around 8", c(8, 0)),
        ("tomorrow evening at 5", c(17, 0)),
        ("monday morning at 11", c(11, 0)),
        ("at 5 in the afternoon", c(17, 0)),
        ("in 2 days", None),
        ("a few days", None),
        ("2 units", None),
        ("whenever", None),
        // Addresses, ZIPs, counts and the past are not clock times.
        ("i live at 12 oak street", None),
        ("it's at 4 elm lane, austin 78701", None),
        ("unit 5", None),
        ("apartment 3", None),
        ("my zip is 78704", None),
        ("it's around 3 years old", None),
        ("about 2 hours ago", None),
        ("it stopped at 3", None),
        ("it went out around 2 this morning", None),
        ("call me at 5 1 2 5 5 5 0 1 0 0", None),
        ("I'm at 9 Stone Creek Pass", None),
        ("we're at 12 Rosewood, come at 3", c(15, 0)),
    ] {
        assert_eq!(clock(said), want, "{said:?}");
    }
}

fn check(variant: TimeAsk, phrasings: &[&str]) {
    for said in phrasings {
        assert_eq!(time_ask(said), Some(variant), "{said:?}");
    }
}

#[test]
fn asap_phrasings() {
    check(
        TimeAsk::Asap,
        &[
            "ASAP",
            "a.s.a.p. please",
            "as soon as possible",
            "as soon as you can",
            "soonest available",
            "today if you can",
            "can someone come out today",
            "right away",
            "I need someone right now",
            "it's an emergency",
            "this is urgent",
            "same day service",
            "same-day if possible",
            "what's the earliest you have",
            "first available",
            "next available is fine",
            "immediately",
            "tonight if possible",
            "the sooner the better",
            "it can't wait",
            "it stopped yesterday and I need someone today",
            "at your earliest convenience",
        ],
    );
}

#[test]
fn no_rush_phrasings() {
    check(
        TimeAsk::NoRush,
        &[
            "no rush",
            "No hurry at all",
            "whenever",
            "whenever works for you",
            "it's not urgent",
            "not really urgent",
            "it's not an emergency",
            "it can wait",
            "that can wait a bit",
            "any time",
            "anytime is fine",
            "any day works",
            "whatever works for you guys",
            "doesn't have to be today",
            "not today",
            "I'm flexible",
            "doesn't matter to me",
            "I'm not in a hurry",
            "when you get a chance",
            "it's been out for a week now, no rush",
            "whatever is convenient",
        ],
    );
}

#[test]
fn when_phrasings() {
    check(
        TimeAsk::When,
        &[
            "next week",
            "day after tomorrow around one",
            "Friday at 2:30",
            "around 3 tomorrow",
            "this weekend",
            "tomorrow afternoon",
            "in a couple of days",
            "Monday morning",
            "tomorrow's fine",
            "Tomorrows good",
            "at two thirty",
            "half past two",
            "noon works",
            "how about Thursday",
            "first thing tomorrow",
            "no rush, but Friday would be nice",
            "it stopped this morning, can you come tomorrow",
            "sometime next week",
            "today at 3",
            "this afternoon",
            "the day after tomorrow",
            "it's been out since Monday and tomorrow works",
            "I was hoping for Wednesday",
        ],
    );
}

#[test]
fn unclear_phrasings() {
    check(
        TimeAsk::Unclear,
        &[
            "after the holiday",
            "not this week",
            "sometime later in the month",
            "when my wife is home",
            "after work",
            "next month",
            "after Christmas",
            "not Friday",
            "tomorrow doesn't work",
            "I'm busy Monday",
            "anything but Tuesday",
            "on the 15th",
            "the fifth would be good",
            "end of the week",
            "once my husband gets back",
            "later this week",
            "no rush, not this week",
            "after New Year",
            "in a couple months",
        ],
    );
}

#[test]
fn not_about_the_visit_time() {
    for said in [
        "it stopped this morning",
        "since yesterday",
        "two days ago",
        "for a week now",
        "it's been like this for a couple of days",
        "it started making a noise last night",
        "we noticed it on Tuesday",
        "I live at 12 Oak Street",
        "4210 South Lamar Blvd, Austin TX 78704",
        "the unit is about 15 years old",
        "my number is 512 555 0100",
        "the AC is blowing warm air",
        "yes",
        "",
        "it was fine this morning",
        "we had someone out last week",
        "good morning, the AC is blowing warm air",
        "morning, my furnace is making a loud banging noise",
        "815 West 6th Street",
        "that's 901 East 31st Street unit B",
        "we're at 9 Stone Creek Pass",
        "I'll call you later",
        "can you text me when he's on the way?",
        "will the tech call before coming?",
        "when do you close today?",
    ] {
        assert_eq!(time_ask(said), None, "{said:?}");
    }
}

#[test]
fn every_phrase_has_a_trigger() {
    assert!(
        TRIGGERS.windows(2).all(|w| w[0] < w[1]),
        "TRIGGERS must be sorted, without repeats"
    );
    for list in [NO_RUSH, ASAP, ASAP_POLITE, UNCLEAR_PHRASES] {
        for phrase in list {
            assert!(
                phrase.iter().any(|w| is_trigger(w)),
                "{phrase:?} has no trigger word"
            );
        }
    }
    for list in [UNCLEAR_WORDS, ORDINALS, &["may", "march", "later"]] {
        for w in list {
            assert!(is_trigger(w), "{w} is not a trigger word");
        }
    }
    for (day, _) in super::super::WEEKDAYS {
        assert!(is_trigger(day) && is_trigger(&format!("{day}s")), "{day}");
    }
    for h in 1..=12u32 {
        let word = WORD_TO_DIGIT_WORDS
            .iter()
            .find(|w| hour_word(w) == Some(h))
            .unwrap_or_else(|| panic!("no word for {h}"));
        assert!(
            is_trigger(word) && is_trigger(&format!("{word}pm")),
            "{word}"
        );
    }
}

/// Every word the rules look at (the tables and the words written in
/// the code), a few spellings and common filler.
fn vocabulary() -> Vec<&'static str> {
    let lists: [&[&str]; 21] = [
        SPLITTERS,
        PAST_VERBS,
        WISH_AFTER_WAS,
        TIMEISH,
        DURATION_UNITS,
        LAST_WHAT,
        NEGATORS,
        UNCLEAR_WORDS,
        SOMEONE,
        AVAILABLE,
        AFTER_WHAT,
        ORDINALS,
        NOT_CLOCK_BEFORE,
        STREET_NAME_WORDS,
        crate::extract::STREET_SUFFIXES,
        ADDRESS_CLAUSE,
        COUNT_NOUNS,
        CLOCK_CUES,
        TRIGGERS,
        WORD_TO_DIGIT_WORDS,
        &[
            "ago",
            "since",
            "yesterday",
            "overnight",
            "last",
            "past",
            "all",
            "for",
            "now",
            "good",
            "was",
            "were",
            "used",
            "to",
            "the",
            "of",
            "half",
            "quarter",
            "after",
            "am",
            "pm",
            "p",
            "a",
            "m",
            "o'clock",
            "oh",
            "o",
            "in",
            "next",
            "this",
            "from",
            "thing",
            "before",
            "hi",
            "hey",
            "hello",
            "along",
            "no",
            "is",
            "it",
            "my",
            "you",
            "me",
            "can",
            "could",
            "would",
            "please",
            "that",
            "works",
            "fine",
            "ok",
            "sure",
            "what",
            "do",
            "does",
            "your",
            "hours",
            "close",
            "open",
            "get",
            "have",
            "an",
            "guys",
            "you're",
            "are",
            "big",
            "real",
            "particular",
            "any",
            "whatever",
            "need",
            "hurry",
            "don't",
            "doesn't",
            "not",
            "know",
            "why",
            "if",
            "sure",
            "low",
            "non",
            "nothing",
            "isn't",
            "same",
            "right",
            "straight",
            "within",
            "as",
            "quickly",
            "new",
            "labor",
            "memorial",
            "out",
            "of",
            "end",
            "middle",
            "thirty",
            "forty",
            "fifty",
            "twenty",
            "sharp",
            "ish",
            "lunch",
            "noon",
            "midday",
            "when",
        ],
    ];
    let mut all: Vec<&str> = lists.iter().flat_map(|l| l.iter().copied()).collect();
    for list in [
        NO_RUSH,
        ASAP,
        ASAP_POLITE,
        NOT_NEGATION,
        UNCLEAR_PHRASES,
        ABOUT_THE_BUSINESS,
        GREETINGS,
    ] {
        all.extend(list.iter().flat_map(|p| p.iter().copied()));
    }
    all.sort_unstable();
    all.dedup();
    all
}

const WORD_TO_DIGIT_WORDS: &[&str] = &[
    "zero",
    "oh",
    "o",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// The gate in [`read_clause`] loses nothing: a clause of words that
/// are not triggers reads as nothing with every rule applied.
#[test]
fn a_clause_without_a_trigger_says_nothing() {
    let quiet: Vec<&str> = vocabulary()
        .into_iter()
        .filter(|w| !is_trigger(w))
        .collect();
    let check = |clause: &[&str]| {
        let r = read_time_clause(clause.iter().map(|w| W(w)).collect());
        assert!(
            r.ask.is_none()
                && !r.no_rush
                && r.day.is_none()
                && r.clock.is_none()
                && r.part.is_none(),
            "{clause:?} reads as {r:?} without a trigger word"
        );
    };
    // Every phrase of the tables with its trigger words taken out.
    for list in [
        NO_RUSH,
        ASAP,
        ASAP_POLITE,
        UNCLEAR_PHRASES,
        NOT_NEGATION,
        GREETINGS,
    ] {
        for phrase in list {
            let rest: Vec<&str> = phrase.iter().copied().filter(|w| !is_trigger(w)).collect();
            check(&rest);
            for w in &quiet {
                let mut with: Vec<&str> = vec![w];
                with.extend(&rest);
                check(&with);
                let mut with = rest.clone();
                with.push(w);
                check(&with);
            }
        }
    }
    // Random clauses of quiet words (xorshift: reproducible).
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..200_000 {
        let n = 1 + (next() % 8) as usize;
        let clause: Vec<&str> = (0..n)
            .map(|_| quiet[(next() % quiet.len() as u64) as usize])
            .collect();
        check(&clause);
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
        "half past",
        "quarter to",
        "ago",
        "since",
        "for",
        "the",
        "oh",
        "two oh",
        "at 1:2345",
        "'s",
        "ish",
    ] {
        let _ = (day(s), clock(s), time_ask(s));
    }
}
