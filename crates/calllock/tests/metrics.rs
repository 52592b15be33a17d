//! `GET /metrics` of `calllock serve`: Prometheus text that a strict reader
//! of the format accepts, holding what a call did — its outcome, its
//! length, and each turn's milestones in the stage histograms — and, with
//! `serve.metrics_token`, only for the bearer of the token.

#[path = "support/prometheus.rs"]
mod prometheus;
#[path = "support/served.rs"]
mod served;

use served::*;

async fn scrape(s: &Served, token: Option<&str>) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(format!("http://{}/metrics", s.server.addr));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap()
}

#[test]
fn the_reader_refuses_what_the_format_forbids() {
    prometheus::self_test::refuses_bad_text();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_shows_in_the_metrics() {
    let s = serve_with(|_| {}).await;
    let before = prometheus::parse(&scrape(&s, None).await.text().await.unwrap()).unwrap();
    let calls_before = before
        .matching("calllock_calls_total", &[("final_state", "confirm")])
        .iter()
        .map(|x| x.value)
        .sum::<f64>();

    let (sid, _log, said) = booking_call(&s).await;
    s.record(&sid).await;
    // The call holds its place until its post-call work is done.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while s.server.live_calls() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call never left"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let r = scrape(&s, None).await;
    assert_eq!(r.status(), 200);
    let ct = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    let text = r.text().await.unwrap();
    let m = prometheus::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));

    // The call, by outcome: one more confirmed booking, ended by the agent.
    let calls = m
        .matching("calllock_calls_total", &[("final_state", "confirm")])
        .iter()
        .map(|x| x.value)
        .sum::<f64>();
    assert_eq!(calls, calls_before + 1.0, "{text}");
    assert!(
        m.value(
            "calllock_calls_total",
            &[("ended_by", "agent"), ("final_state", "confirm")]
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert!(
        m.value("calllock_call_duration_seconds_count", &[])
            .unwrap()
            >= 1.0
    );
    assert_eq!(m.value("calllock_live_calls", &[]), Some(0.0));

    // Every answered turn, in the stage histograms (at least one a line).
    let turns = |milestone: &str| {
        m.value("calllock_turn_seconds_count", &[("milestone", milestone)])
            .unwrap_or(0.0)
    };
    for milestone in [
        "stt_final",
        "tts_first_audio",
        "first_outbound",
        "first_heard",
    ] {
        assert!(
            turns(milestone) >= (said.len() - 2) as f64,
            "{milestone}: {} turns for {} caller lines\n{text}",
            turns(milestone),
            said.len()
        );
    }
    // Heard within a few seconds of the caller stopping, every time.
    let slow = m
        .value(
            "calllock_turn_seconds_bucket",
            &[("milestone", "first_heard"), ("le", "5")],
        )
        .unwrap();
    assert_eq!(slow, turns("first_heard"), "{text}");
    // The agent's audio, paced.
    assert!(m.value("calllock_player_frames_total", &[]).unwrap() > 100.0);
    assert!(m.value("calllock_player_frames_late_total", &[]).is_some());
    // What waits in the outbox (nothing configured to deliver to).
    assert_eq!(m.value("calllock_outbox_depth", &[]), Some(0.0));
    assert_eq!(
        m.value("calllock_outbox_oldest_age_seconds", &[]),
        Some(0.0)
    );
    assert_eq!(m.value("calllock_tts_breaker_open", &[]), Some(0.0));

    // Every family this server exports is described.
    for (name, _) in m.types.iter().filter(|(n, _)| n.starts_with("calllock_")) {
        assert!(
            m.help.get(name).is_some_and(|h| !h.is_empty()),
            "{name} has no HELP"
        );
    }
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metrics_token_is_required_when_set() {
    let s = serve_with(|c| c.serve.metrics_token = "s3cret-token".into()).await;
    let r = scrape(&s, None).await;
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let body = r.text().await.unwrap();
    assert!(!body.contains("calllock_"), "{body}");
    assert_eq!(scrape(&s, Some("s3cret")).await.status(), 401);
    assert_eq!(scrape(&s, Some("s3cret-token!")).await.status(), 401);
    let r = scrape(&s, Some("s3cret-token")).await;
    assert_eq!(r.status(), 200);
    prometheus::parse(&r.text().await.unwrap()).unwrap();
    // /health stays open.
    let h = reqwest::get(format!("http://{}/health", s.server.addr))
        .await
        .unwrap();
    assert_eq!(h.status(), 200);
    s.server.stop().await;
}
