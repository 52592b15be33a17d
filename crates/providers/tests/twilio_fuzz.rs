//! Garbage from Twilio's side of the WebSocket (issue 10): 100,000
//! generated and mutated messages through the Media Streams reader —
//! never a panic, every message either read or refused with a reason, and
//! the order rules hold (nothing is read before `start`, nothing after
//! `stop`, `start` once). proptest-driven (no nightly toolchain here, so no
//! cargo-fuzz).

use proptest::prelude::*;
use proptest::sample::select;
use providers::twilio::media_streams::{parse, Inbound, StreamReader, WireError};

const VALID: &[&str] = &[
    r#"{"event":"connected","protocol":"Call","version":"1.0.0"}"#,
    r#"{"event":"start","sequenceNumber":"1","start":{"accountSid":"ACxx","streamSid":"MZ18ad","callSid":"CA42","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{"From":"+15125550100","To":"+15125559999"}},"streamSid":"MZ18ad"}"#,
    r#"{"event":"media","sequenceNumber":"2","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"//////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////8="},"streamSid":"MZ18ad"}"#,
    r#"{"event":"mark","sequenceNumber":"3","streamSid":"MZ18ad","mark":{"name":"u1:0.20"}}"#,
    r#"{"event":"dtmf","streamSid":"MZ18ad","sequenceNumber":"4","dtmf":{"track":"inbound_track","digit":"1"}}"#,
    r#"{"event":"stop","sequenceNumber":"5","streamSid":"MZ18ad","stop":{"accountSid":"ACxx","callSid":"CA42"}}"#,
];

/// A JSON value of any shape (for wrong types in known fields).
fn any_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(|f| serde_json::json!(f)),
        "\\PC{0,40}".prop_map(serde_json::Value::from),
        // Odd base64: padding, whitespace, URL alphabet, too long.
        select(vec![
            "", "=", "====", "AAA", "A===", "_-_-", "AA AA", "////", "AAAA\n"
        ])
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map(
                select(vec![
                    "event",
                    "start",
                    "media",
                    "mark",
                    "stop",
                    "dtmf",
                    "payload",
                    "chunk",
                    "timestamp",
                    "streamSid",
                    "callSid",
                    "sequenceNumber",
                    "customParameters",
                    "mediaFormat",
                    "name",
                    "digit",
                    "x",
                ])
                .prop_map(String::from),
                inner,
                0..5
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A message object with a known or unknown event and fields of any type.
fn generated_message() -> impl Strategy<Value = String> {
    (
        select(vec![
            "connected",
            "start",
            "media",
            "mark",
            "dtmf",
            "stop",
            "clear",
            "nope",
            "",
        ]),
        any_json(),
        any_json(),
    )
        .prop_map(|(event, body, extra)| {
            let mut m = serde_json::Map::new();
            m.insert("event".into(), event.into());
            m.insert(event.to_string(), body);
            m.insert("sequenceNumber".into(), extra);
            serde_json::Value::Object(m).to_string()
        })
}

/// A valid message with bytes flipped, cut, or junk inserted.
fn mutated_message() -> impl Strategy<Value = String> {
    (
        select(VALID.to_vec()),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(msg, flips, cut, do_cut)| {
            let mut b = msg.as_bytes().to_vec();
            for (at, byte) in flips {
                let i = at.index(b.len());
                b[i] = byte;
            }
            if do_cut {
                b.truncate(cut.index(b.len() + 1));
            }
            String::from_utf8_lossy(&b).into_owned()
        })
}

fn check_one(text: &str) {
    match parse(text) {
        Ok((Inbound::Media(m), _)) => assert!(m.payload.len() <= text.len()),
        Ok(_) => {}
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_messages_never_panic(text in mutated_message()) {
        check_one(&text);
    }

    #[test]
    fn generated_messages_never_panic(text in generated_message()) {
        check_one(&text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 15_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        check_one(&text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whole streams of valid, mutated and generated messages (5,000 more
    /// messages): the order rules hold whatever arrives.
    #[test]
    fn streams_keep_their_order_rules(
        msgs in prop::collection::vec(prop_oneof![
            select(VALID.to_vec()).prop_map(String::from),
            mutated_message(),
            generated_message(),
        ], 0..10)
    ) {
        let mut r = StreamReader::new();
        let mut started = false;
        let mut stopped = false;
        for m in &msgs {
            let got = r.read(m);
            if stopped {
                prop_assert_eq!(got, Err(WireError::AfterStop));
                continue;
            }
            match got {
                Ok(Inbound::Start(_)) => {
                    prop_assert!(!started, "a second start was accepted");
                    started = true;
                }
                Ok(Inbound::Media(_) | Inbound::Mark { .. } | Inbound::Dtmf { .. }) => {
                    prop_assert!(started, "read before start");
                }
                Ok(Inbound::Stop { .. }) => stopped = true,
                Ok(_) | Err(_) => {}
            }
        }
        prop_assert_eq!(r.start().is_some(), started);
    }
}
