//! The labelled safety corpus (`safety_corpus.txt`): every answer to the
//! safety question goes through the state machine from `safety` and must
//! take its route. Any miss fails the test; the confusion table is printed
//! either way (`cargo test -p agent --test safety_corpus -- --nocapture`).

use agent::machine::StateMachine;
use agent::safety::triage;
use agent::{BusinessProfile, Session, State};

const CORPUS: &str = include_str!("safety_corpus.txt");

/// The three routes, in table order.
const ROUTES: [(&str, State); 3] = [
    ("exit", State::SafetyExit),
    ("no", State::ServiceArea),
    ("ask", State::Safety),
];

struct Case {
    line: usize,
    kind: String,
    route: usize,
    text: String,
}

fn parse(corpus: &str) -> Vec<Case> {
    let mut kind = String::new();
    let mut cases = Vec::new();
    for (n, raw) in corpus.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(k) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            kind = k.to_string();
            continue;
        }
        let (route, text) = line
            .split_once('|')
            .unwrap_or_else(|| panic!("line {}: expected `route | text`", n + 1));
        let route = ROUTES
            .iter()
            .position(|(name, _)| *name == route.trim())
            .unwrap_or_else(|| panic!("line {}: unknown route {:?}", n + 1, route.trim()));
        assert!(!kind.is_empty(), "line {}: case before any [kind]", n + 1);
        cases.push(Case {
            line: n + 1,
            kind: kind.clone(),
            route,
            text: text.trim().to_string(),
        });
    }
    cases
}

/// The route the state machine takes for `text` said in `safety`.
fn route_of(machine: &StateMachine, text: &str) -> Option<usize> {
    let mut session = Session {
        state: State::Safety,
        ..Session::new("+15125551234")
    };
    machine.process(&mut session, text);
    ROUTES.iter().position(|(_, s)| *s == session.state)
}

#[test]
fn every_safety_answer_takes_its_route() {
    let cases = parse(CORPUS);
    assert!(cases.len() >= 200, "the corpus has {} answers", cases.len());
    let machine = StateMachine::new(BusinessProfile::default());
    // confusion[expected][actual]; a fourth column for any other state.
    let mut confusion = [[0usize; 4]; 3];
    let mut misses = Vec::new();
    let mut kinds: Vec<(String, usize, usize)> = Vec::new();
    for c in &cases {
        let got = route_of(&machine, &c.text);
        confusion[c.route][got.unwrap_or(3)] += 1;
        match kinds.iter_mut().find(|(k, _, _)| *k == c.kind) {
            Some(k) => k.1 += 1,
            None => kinds.push((c.kind.clone(), 1, 0)),
        }
        if got != Some(c.route) {
            kinds.iter_mut().find(|(k, _, _)| *k == c.kind).unwrap().2 += 1;
            misses.push(format!(
                "line {} [{}] {:?}: expected {}, got {} — {:?}",
                c.line,
                c.kind,
                c.text,
                ROUTES[c.route].0,
                got.map_or("another state", |g| ROUTES[g].0),
                triage(&c.text),
            ));
        }
    }

    println!("safety corpus: {} answers", cases.len());
    println!(
        "{:>14} | {:>5} {:>5} {:>5} {:>5}",
        "expected \\ got", "exit", "no", "ask", "other"
    );
    for (e, row) in confusion.iter().enumerate() {
        println!(
            "{:>14} | {:>5} {:>5} {:>5} {:>5}",
            ROUTES[e].0, row[0], row[1], row[2], row[3]
        );
    }
    for (kind, n, missed) in &kinds {
        println!("  {kind}: {n} answers, {missed} missed");
    }
    for m in &misses {
        println!("MISS {m}");
    }
    assert!(
        misses.is_empty(),
        "{} of {} answers took the wrong route",
        misses.len(),
        cases.len()
    );
    for kind in [
        "emergency",
        "clear negation",
        "ambiguous equipment",
        "retraction",
        "mixed",
        "stt damage",
    ] {
        assert!(
            kinds.iter().any(|(k, _, _)| k == kind),
            "no [{kind}] answers"
        );
    }
}

#[test]
fn the_corpus_reader_rejects_bad_lines() {
    let ok = parse("[x]\nexit | fire\n# comment\n\nno | nope\n");
    assert_eq!(ok.len(), 2);
    assert_eq!((ok[0].route, ok[1].route), (0, 1));
    assert!(std::panic::catch_unwind(|| parse("[x]\nmaybe | fire\n")).is_err());
    assert!(std::panic::catch_unwind(|| parse("[x]\nno fire\n")).is_err());
    assert!(std::panic::catch_unwind(|| parse("exit | fire\n")).is_err());
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn corpus_texts() -> Vec<String> {
        parse(CORPUS).into_iter().map(|c| c.text).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Arbitrary text never panics and always gets an answer.
        #[test]
        fn any_text_is_judged(text in "\\PC{0,200}") {
            let t = triage(&text);
            prop_assert!(t.mentions.len() <= text.len());
        }

        /// Corpus answers with punctuation, apostrophes and fillers thrown
        /// in never panic.
        #[test]
        fn damaged_answers_are_judged(
            pick in any::<prop::sample::Index>(),
            inserts in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(vec![",", "?", ".", "'", "’", " uh ", " you know ", "-", "\n", "!!", " and ", " or ", " not "])), 0..6),
        ) {
            let texts = corpus_texts();
            let mut text = texts[pick.index(texts.len())].clone();
            for (at, ins) in inserts {
                let mut cut = at.index(text.len() + 1);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.insert_str(cut, ins);
            }
            let _ = triage(&text);
        }
    }
}

/// Generated combinations: denials joined to an assertion stay an
/// emergency; denials joined to denials stay a clear no.
mod combinations {
    use agent::safety::{safety_answer, SafetyAnswer};
    use proptest::prelude::*;
    use proptest::sample::select;

    const DENIALS: &[&str] = &[
        "no gas",
        "I don't smell gas",
        "nothing is burning",
        "no smoke or anything",
        "there's no smoke",
        "I don't see any sparks",
        "the CO alarm isn't going off",
        "we don't smell anything",
        "neither gas nor smoke",
        "no burning smell",
    ];
    const ASSERTIONS: &[&str] = &[
        "I smell gas",
        "there's smoke coming out",
        "the vent is sparking",
        "something smells like it's burning",
        "the carbon monoxide alarm is going off",
        "it smells like rotten eggs",
        "I see flames",
        "the furnace is smoking",
    ];
    const JOINERS: &[&str] = &[
        " but ", ", but ", ". ", "? ", " though ", "; ", " and ", ", and ", " — ",
    ];
    const LIST_JOINERS: &[&str] = &[", ", ". ", " and ", ", and ", "; "];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn a_denial_never_hides_an_asserted_danger(
            denial in select(DENIALS),
            assertion in select(ASSERTIONS),
            joiner in select(JOINERS),
            denial_first in any::<bool>(),
        ) {
            // "I smell gas? no gas" is the caller asking back, not telling.
            let denial_first = denial_first || joiner == "? ";
            let text = if denial_first {
                format!("{denial}{joiner}{assertion}")
            } else {
                format!("{assertion}{joiner}{denial}")
            };
            prop_assert_eq!(safety_answer(&text), SafetyAnswer::Emergency, "{:?}", text);
        }

        #[test]
        fn denials_joined_stay_a_clear_no(
            parts in prop::collection::vec(select(DENIALS), 1..4),
            joiner in select(LIST_JOINERS),
        ) {
            let text = parts.join(joiner);
            prop_assert_eq!(safety_answer(&text), SafetyAnswer::ClearNo, "{:?}", text);
        }
    }
}

/// The blind set: 150 answers written without seeing the code. The routes
/// are not fitted to it, so some misses are allowed; the floor keeps a
/// regression from passing unnoticed (147 of 150 route right today; the
/// three misses are listed: two send a family out for nothing, one stays
/// to ask; none routes a danger, or a doubt, to `service_area`).
#[test]
fn the_blind_set_stays_above_its_floor() {
    const FLOOR: usize = 146;
    let cases = parse(include_str!("safety_blind.txt"));
    assert_eq!(cases.len(), 150);
    let machine = StateMachine::new(BusinessProfile::default());
    let mut right = 0;
    for c in &cases {
        let got = route_of(&machine, &c.text);
        if got == Some(c.route) {
            right += 1;
        } else {
            println!(
                "blind miss: {:?} expected {}, got {:?}",
                c.text,
                ROUTES[c.route].0,
                got.map(|g| ROUTES[g].0)
            );
            // Never a danger routed on as safe.
            assert!(
                !(c.route == 0 && got == Some(1)),
                "a danger routed to service_area: {:?}",
                c.text
            );
        }
    }
    println!("blind set: {right} of {} routed as labelled", cases.len());
    assert!(
        right >= FLOOR,
        "blind set: {right} of {} (floor {FLOOR})",
        cases.len()
    );
}
