//! Garbage from Deepgram (proptest): arbitrary text, mutated results and
//! odd field types never panic the parser or the utterance assembler; and
//! for any well-formed stream of segments — final and interim, with
//! `speech_final`, `UtteranceEnd` and `Finalize` answers anywhere, junk in
//! between — every final word comes out exactly once, in order, and no
//! utterance is empty.

use proptest::prelude::*;
use providers::deepgram::listen::{parse, results_message, utterance_end_message, Segment};
use providers::deepgram::utterances::{Heard, Utterances};
use serde_json::{json, Value};
use std::time::Duration;

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_map(|f| json!(f)),
        any::<i64>().prop_map(|i| json!(i)),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,12}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A valid message with one field replaced by anything.
fn mutated() -> impl Strategy<Value = String> {
    let fields = prop_oneof![
        Just("type"),
        Just("is_final"),
        Just("speech_final"),
        Just("from_finalize"),
        Just("start"),
        Just("duration"),
        Just("channel"),
        Just("last_word_end"),
    ];
    (any::<bool>(), fields, any_json()).prop_map(|(results, field, v)| {
        let base = if results {
            results_message(
                &Segment {
                    transcript: "my AC is out".into(),
                    is_final: true,
                    speech_final: false,
                    from_finalize: false,
                    start: 1.0,
                    duration: 1.5,
                },
                "r",
            )
        } else {
            utterance_end_message(2.5)
        };
        let mut m: Value = serde_json::from_str(&base).unwrap();
        m[field] = v;
        m.to_string()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in ".{0,300}") {
        let _ = parse(&s);
    }

    #[test]
    fn mutated_messages_never_panic_and_never_emit_empty_text(m in mutated()) {
        let mut u = Utterances::new(Duration::from_millis(400));
        if let Ok(msg) = parse(&m) {
            for h in u.on_message(&msg, 0.0) {
                if let Heard::Final(t) | Heard::Interim(t) = h {
                    prop_assert!(!t.trim().is_empty());
                }
            }
        }
        if let Some(Heard::Final(t)) = u.flush() {
            prop_assert!(!t.trim().is_empty());
        }
    }

    #[test]
    fn any_json_object_never_panics(v in any_json()) {
        let _ = parse(&v.to_string());
    }
}

/// One step of a generated stream.
#[derive(Debug, Clone)]
enum Step {
    /// A span of speech: its words, whether final, speech_final.
    Span(Vec<String>, bool, bool),
    /// Silence covered by an empty final segment.
    Silence,
    UtteranceEnd,
    /// We sent `Finalize`, and maybe it was answered (the span is final).
    Finalize(bool),
    Junk(String),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let word = "[a-z]{1,8}";
    let step = prop_oneof![
        4 => (prop::collection::vec(word, 1..4), any::<bool>(), any::<bool>())
            .prop_map(|(w, f, sf)| Step::Span(w, f, f && sf)),
        1 => Just(Step::Silence),
        1 => Just(Step::UtteranceEnd),
        1 => any::<bool>().prop_map(Step::Finalize),
        1 => ".{0,30}".prop_map(Step::Junk),
    ];
    prop::collection::vec(step, 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_final_word_comes_out_once_in_order(steps in steps()) {
        let t0 = tokio::time::Instant::now();
        let mut u = Utterances::new(Duration::from_millis(400));
        let mut t = 0.0f64;
        // Every generated word is made unique, so each can be traced.
        let mut n = 0usize;
        let mut unique = |w: &str| { n += 1; format!("{w}{n}") };
        let mut finals: Vec<String> = Vec::new();
        let mut interims: std::collections::HashSet<String> = Default::default();
        let mut got: Vec<String> = Vec::new();
        for step in steps {
            let msg = match step {
                Step::Span(words, is_final, speech_final) => {
                    let words: Vec<String> = words.iter().map(|w| unique(w)).collect();
                    if is_final {
                        finals.extend(words.iter().cloned());
                    } else {
                        interims.extend(words.iter().cloned());
                    }
                    let seg = Segment { transcript: words.join(" "), is_final, speech_final,
                        from_finalize: false, start: t, duration: 0.5 };
                    if is_final {
                        t += 0.5;
                    }
                    results_message(&seg, "r")
                }
                Step::Silence => {
                    let seg = Segment { transcript: String::new(), is_final: true, speech_final: false,
                        from_finalize: false, start: t, duration: 1.0 };
                    t += 1.0;
                    results_message(&seg, "r")
                }
                Step::UtteranceEnd => utterance_end_message(t),
                Step::Finalize(answered) => {
                    u.finalize_sent(t0);
                    if !answered {
                        if let Some(Heard::Final(text)) = u.on_deadline(t0 + Duration::from_secs(1)) {
                            prop_assert!(!text.trim().is_empty());
                            got.extend(text.split_whitespace().map(str::to_string));
                        }
                        continue;
                    }
                    let w = unique("done");
                    finals.push(w.clone());
                    let seg = Segment { transcript: w, is_final: true, speech_final: false,
                        from_finalize: true, start: t, duration: 0.2 };
                    t += 0.2;
                    results_message(&seg, "r")
                }
                Step::Junk(s) => s,
            };
            if let Ok(m) = parse(&msg) {
                for h in u.on_message(&m, 0.0) {
                    if let Heard::Final(text) = h {
                        prop_assert!(!text.trim().is_empty());
                        got.extend(text.split_whitespace().map(str::to_string));
                    }
                }
            }
        }
        if let Some(Heard::Final(text)) = u.flush() {
            got.extend(text.split_whitespace().map(str::to_string));
        }
        // Final words: each exactly once, in order. Anything else taken is
        // an interim word (a finalize that timed out, or the last flush),
        // at most once; nothing is invented.
        let final_set: std::collections::HashSet<&String> = finals.iter().collect();
        let got_finals: Vec<String> = got.iter().filter(|w| final_set.contains(w)).cloned().collect();
        prop_assert_eq!(&got_finals, &finals);
        let mut seen = std::collections::HashSet::new();
        for w in &got {
            prop_assert!(final_set.contains(w) || interims.contains(w), "invented {w}");
            prop_assert!(seen.insert(w.clone()), "{w} taken twice: {got:?}");
        }
    }
}
