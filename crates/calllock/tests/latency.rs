//! Where a turn's time goes, end to end: a booking call through the real
//! `calllock serve`, called by the Twilio-speaking phone of `calllock dial`
//! over real WebSockets (marks echoed as Twilio does), then the stored
//! record read back by the real `calllock calls show` and `calllock
//! transcript` binaries against the same database.

#[path = "support/served.rs"]
mod served;

use calllock::call::latency::{ReplyKind, TurnLatency};
use serde_json::Value;
use served::*;
use std::process::Command;

/// The `calllock` binary on `db`, never a developer's config.
fn calllock(db: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_calllock"))
        .env_remove("CALLLOCK_CONFIG")
        .env_remove("CALLLOCK_DATABASE")
        .env("HOME", std::env::temp_dir())
        .env(
            "XDG_DATA_HOME",
            std::env::temp_dir().join("calllock-test-xdg"),
        )
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("calllock runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "calllock {args:?}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Within `lo..=hi` ms.
fn within(v: Option<f64>, lo: f64, hi: f64, what: &str, t: &TurnLatency) -> f64 {
    let v = v.unwrap_or_else(|| panic!("turn {}: no {what}: {t:#?}", t.turn));
    assert!(
        (lo..=hi).contains(&v),
        "turn {}: {what} {v} ms, not in {lo}..={hi}: {t:#?}",
        t.turn
    );
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_booking_call_records_where_each_turn_went() {
    let s = serve_with(|_| {}).await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    let lines = booking_lines();
    let (to_confirm, bye) = (&lines[..8], lines.last().unwrap());
    for line in to_confirm {
        c.turn(line).await;
    }
    c.until_said("all set").await;
    c.turn(bye).await;
    let log = c.finish().await;
    assert_eq!(log.clears, 0, "no barge-in in a polite call");
    let rec = s.record(&sid).await;
    assert_eq!(rec.booking_status, "confirmed", "{:#}", rec.record);

    // The durable record: one `latency` event per answered caller turn.
    let events = s.server.store().events(&sid).await.unwrap();
    let turns = calllock::call::latency::from_events(&events);
    let said = to_confirm.len() + 1;
    eprintln!("{}", calllock::call::latency::render(&turns));
    assert_eq!(turns.len(), said, "{turns:#?}");
    let agent_events: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind == "agent")
        .map(|e| &e.data)
        .collect();
    for (i, t) in turns.iter().enumerate() {
        assert_eq!(t.turn as usize, i + 1);
        // The reply is the agent line answering the turn, as journaled.
        let reply = agent_events
            .iter()
            .find(|d| d["msg_id"] == t.msg_id)
            .unwrap_or_else(|| panic!("turn {}: no agent line {}", t.turn, t.msg_id));
        let canned = reply["source"].as_str().unwrap_or("").starts_with("Canned");
        assert_eq!(t.reply == ReplyKind::Canned, canned, "{t:#?} {reply}");
        // Codec speech: the STT's endpointing and the VAD's stop are both
        // 500 ms of silence, so the final comes with the stop (just
        // before it: the STT hears the frame that ends it first).
        within(t.stt_final_ms, -60.0, 60.0, "stt final", t);
        let request = within(t.request_ms(), -60.0, 3000.0, "request", t);
        if t.reply == ReplyKind::Llm {
            // The offline model answers after `sim.llm_latency_s`.
            within(t.llm_ms(), 95.0, 600.0, "llm first token", t);
        }
        // The offline voice's first audio comes after 150 ms.
        within(t.tts_ms(), 145.0, 700.0, "tts first audio", t);
        within(t.ours_after_ms(), 0.0, 300.0, "first audio → outbound", t);
        within(t.ours_before_ms(), 0.0, 300.0, "ours before the request", t);
        // Heard once the phone echoed a mark sent after some audio.
        within(t.phone_ms(), 1.0, 2000.0, "outbound → heard", t);
        assert!(t.heard_audio_ms.is_some_and(|ms| ms > 0), "{t:#?}");
        let stages = [
            t.stt_final_ms,
            Some(request),
            t.llm_first_token_ms.or(Some(request)),
            t.tts_request_ms,
            t.tts_first_audio_ms,
            t.first_outbound_ms,
            t.first_heard_ms,
        ];
        assert!(
            stages.windows(2).all(|w| w[0] <= w[1]),
            "stages in order: {t:#?}"
        );
    }
    // Lines long enough for the VAD (0.4 s to start) count from its stop;
    // "Yes, that's right" at 60 characters a second is not.
    let from_vad = turns
        .iter()
        .filter(|t| t.anchor == calllock::call::latency::Anchor::SpeechEnd)
        .count();
    assert!(from_vad >= said / 2, "{turns:#?}");
    // The first turn waits for the caller lookup and the post-tool
    // debounce (1.5 s), as their own stages, not as our time.
    assert!(turns[0].tool_ms > 0.0, "{:#?}", turns[0]);
    within(
        Some(turns[0].debounce_ms),
        1400.0,
        1700.0,
        "debounce",
        &turns[0],
    );
    s.server.stop().await;

    // The operator's view of the same database.
    let db = &s.cfg.database;
    let show = calllock(db, &["calls", "show", &sid]);
    assert!(show.contains("latency by turn"), "{show}");
    let rows = show
        .lines()
        .skip_while(|l| !l.starts_with("latency by turn"))
        .skip(2)
        .take_while(|l| !l.starts_with("latency summary"))
        .count();
    assert_eq!(rows, said, "{show}");
    assert!(
        show.contains(&format!(
            "latency summary over {said} turns (ms; p50 / p95)"
        )),
        "{show}"
    );
    for row in [
        "stt final",
        "first heard",
        "stt final → request",
        "post-tool debounce",
    ] {
        assert!(show.contains(row), "{row}: {show}");
    }
    println!("{show}");
    let transcript = calllock(db, &["transcript", &sid]);
    assert!(
        transcript.contains("Caller: Yes, that's right"),
        "{transcript}"
    );
    assert!(transcript.contains("latency by turn"), "{transcript}");
    let json: Value =
        serde_json::from_str(&calllock(db, &["calls", "show", &sid, "--json"])).unwrap();
    assert_eq!(
        json["latency"]["turns"].as_array().map(Vec::len),
        Some(said)
    );
    assert!(json["latency"]["summary"]["vendors/tts first audio"]["p95"].is_number());
}
