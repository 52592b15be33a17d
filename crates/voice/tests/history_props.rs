//! Properties of the interruption accountant and the history projections,
//! through the public API only.

use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::select;
use voice::accountant::{Accountant, AccountantConfig, WordTiming};
use voice::history::{AgentSource, Event, EventLog, Message, MsgId, Role};

/// Words with punctuation, punctuation-only tokens and multi-byte text.
const WORDS: &[&str] = &[
    "Thanks",
    "Jonas,",
    "I",
    "can",
    "get",
    "a",
    "tech",
    "tomorrow.",
    "—",
    "-",
    "...",
    "Grüße",
    "ça",
    "va?",
    "日本語",
    "テキスト",
    "İstanbul",
    "ß",
    "$89",
    "a-b",
    "'quoted'",
];
const SEPARATORS: &[&str] = &[" ", "  ", "\n", "\t "];

fn text() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec((select(WORDS), select(SEPARATORS)), 0..12),
        any::<bool>(),
    )
        .prop_map(|(parts, padded)| {
            let mut text = String::from(if padded { " " } else { "" });
            for (word, sep) in parts {
                text.push_str(word);
                text.push_str(sep);
            }
            if !padded {
                text.truncate(text.trim_end().len());
            }
            text
        })
}

/// Which heard-text rule applies.
#[derive(Clone, Debug)]
enum Timing {
    /// Rule 1: word start offsets in ms (any order, any count).
    Words(Vec<u64>),
    /// Rule 2: total audio in ms.
    Total(u64),
    /// Rule 3: speaking rate only.
    Rate,
}

fn timing() -> impl Strategy<Value = Timing> {
    prop_oneof![
        proptest::collection::vec(0u64..5_000, 1..15).prop_map(Timing::Words),
        (0u64..8_000).prop_map(Timing::Total),
        Just(Timing::Rate),
    ]
}

fn accountant(text: &str, timing: &Timing) -> Accountant {
    let mut acc = Accountant::new(AccountantConfig::default());
    acc.queue(MsgId(1), text);
    match timing {
        Timing::Words(starts) => acc.set_word_timings(
            MsgId(1),
            starts
                .iter()
                .map(|&ms| WordTiming {
                    word: "w".into(),
                    start: Duration::from_millis(ms),
                })
                .collect(),
        ),
        Timing::Total(ms) => acc.set_total_audio(MsgId(1), Duration::from_millis(*ms)),
        Timing::Rate => {}
    }
    acc
}

fn heard_after(acc: &mut Accountant, played_ms: u64) -> String {
    assert!(acc
        .played(MsgId(1), Duration::from_millis(played_ms))
        .is_empty());
    acc.heard_text(MsgId(1)).expect("still playing")
}

/// `heard` is a trimmed prefix of `text` made of whole words, the last one
/// with a letter or digit.
fn assert_whole_word_prefix(text: &str, heard: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(heard.trim(), heard);
    if heard.is_empty() {
        return Ok(());
    }
    let body = text.trim_start();
    prop_assert!(
        body.starts_with(heard),
        "{heard:?} is not a prefix of {text:?}"
    );
    let after = &body[heard.len()..];
    prop_assert!(
        after.is_empty() || after.starts_with(char::is_whitespace),
        "{heard:?} ends inside a word of {text:?}"
    );
    let last = heard.split_whitespace().last().unwrap_or("");
    prop_assert!(last.chars().any(char::is_alphanumeric), "{heard:?}");
    Ok(())
}

proptest! {
    #[test]
    fn heard_text_is_a_whole_word_prefix(
        text in text(),
        timing in timing(),
        played in 0u64..10_000,
    ) {
        let mut acc = accountant(&text, &timing);
        let heard = heard_after(&mut acc, played);
        assert_whole_word_prefix(&text, &heard)?;
        let outcomes = acc.interrupt();
        prop_assert_eq!(outcomes.len(), 1);
        prop_assert_eq!(Event::from(outcomes[0].clone()), Event::Interrupted {
            msg_id: MsgId(1),
            heard_text: heard,
        });
    }

    #[test]
    fn heard_text_is_monotone_in_played_duration(
        text in text(),
        timing in timing(),
        mut played in proptest::collection::vec(0u64..10_000, 1..6),
    ) {
        played.sort_unstable();
        let mut acc = accountant(&text, &timing);
        let mut before = String::new();
        for ms in played {
            let heard = heard_after(&mut acc, ms);
            prop_assert!(heard.starts_with(&before), "{before:?} then {heard:?} at {ms} ms");
            before = heard;
        }
    }

    /// What the accountant reports, the history's text fallback finds again:
    /// the same utterance, the same heard text.
    #[test]
    fn text_fallback_recovers_the_accountants_heard_text(
        text in text(),
        timing in timing(),
        played in 0u64..10_000,
    ) {
        let mut log = EventLog::new();
        let say = |log: &mut EventLog, text: &str| {
            let msg_id = log.next_msg_id();
            log.append(Duration::ZERO, Event::AgentSaid {
                msg_id,
                text: text.into(),
                source: AgentSource::Llm,
            });
            msg_id
        };
        let earlier = say(&mut log, &text);
        log.append(Duration::ZERO, Event::SpeechFinished { msg_id: earlier });
        let target = say(&mut log, &text);

        let mut acc = accountant(&text, &timing);
        let heard = heard_after(&mut acc, played);
        prop_assert_eq!(log.interrupt_by_text(Duration::from_secs(1), &heard), Some(target));
        prop_assert_eq!(&log.events().last().unwrap().event, &Event::Interrupted {
            msg_id: target,
            heard_text: heard,
        });
        prop_assert!(log.unfinished_utterances().is_empty());
    }

    /// The LLM projection against a direct model: each exchange is a caller
    /// line and a reply whose ending (appended after everything else, in
    /// reverse) is finished (`Some(None)`), interrupted after `k` words
    /// (`Some(Some(k))`) or missing (`None`).
    #[test]
    fn llm_projection_matches_a_model(
        fates in proptest::collection::vec(prop_oneof![
            Just(None),
            Just(Some(None)),
            (0usize..4).prop_map(|k| Some(Some(k))),
        ], 0..8),
    ) {
        let first_words = |text: &str, k: usize| text.split(' ').take(k).collect::<Vec<_>>().join(" ");
        let mut log = EventLog::new();
        let mut replies = Vec::new();
        let mut expected = Vec::new();
        for (i, fate) in fates.iter().enumerate() {
            let at = Duration::from_secs(i as u64);
            let said = format!("caller {i}");
            let reply = format!("reply number {i} here");
            log.append(at, Event::CallerSaid { text: said.clone() });
            log.append(at, Event::LlmAsked { text: said.clone() });
            let msg_id = log.next_msg_id();
            log.append(at, Event::AgentSaid { msg_id, text: reply.clone(), source: AgentSource::Llm });
            log.append(at, Event::Captured { msg_id });
            expected.push(Message { role: Role::User, content: said });
            let heard = match fate {
                Some(Some(k)) => first_words(&reply, *k),
                _ => reply.clone(),
            };
            if !heard.is_empty() {
                expected.push(Message { role: Role::Assistant, content: heard });
            }
            replies.push((msg_id, reply));
        }
        let at = Duration::from_secs(100);
        for (fate, (msg_id, reply)) in fates.iter().zip(&replies).rev() {
            match fate {
                None => {}
                Some(None) => {
                    log.append(at, Event::SpeechFinished { msg_id: *msg_id });
                }
                Some(Some(k)) => {
                    let heard_text = first_words(reply, *k);
                    log.append(at, Event::Interrupted { msg_id: *msg_id, heard_text });
                }
            }
        }
        let open: Vec<MsgId> = fates
            .iter()
            .zip(&replies)
            .filter(|(fate, _)| fate.is_none())
            .map(|(_, (msg_id, _))| *msg_id)
            .collect();
        prop_assert_eq!(log.llm_messages(), expected);
        // The transcript: every caller line, and every reply but those cut
        // off before their first word.
        let unheard = fates.iter().filter(|f| matches!(f, Some(Some(0)))).count();
        prop_assert_eq!(log.transcript().len(), 2 * fates.len() - unheard);
        prop_assert_eq!(log.unfinished_utterances(), open);
    }
}
