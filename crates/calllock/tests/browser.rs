//! The operator's dashboard in a real browser: headless Chromium (Debian's
//! `chromium` + `chromium-driver`) against a real `calllock serve`, signing
//! in as a person would, watching a call made over Twilio Media Streams
//! appear live and finish, opening its page, retrying a delivery, and
//! checking that nothing is reachable without a session and that a change
//! without the CSRF token is refused. Every page is saved as a screenshot
//! under `target/browser-screenshots/` (not committed) so a person can
//! look at it.
//!
//! Without Chromium the test says SKIP and why; `.ci/run` installs it, so CI
//! never skips.

#[path = "support/served.rs"]
mod served;
#[path = "support/webdriver.rs"]
mod webdriver;

use served::*;
use std::time::Duration;
use webdriver::Browser;

const PASSWORD: &str = "browser password";

fn skip(test: &str) -> bool {
    match webdriver::missing() {
        Some(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{test} must run in CI, but {why}"
            );
            eprintln!("SKIP {test}: {why}");
            true
        }
        None => false,
    }
}

async fn serve_dashboard() -> Served {
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    serve_with(|c| c.serve.operator_password_hash = hash).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_signs_in_and_watches_a_call_live_then_reads_it() {
    if skip("an_operator_signs_in_and_watches_a_call_live_then_reads_it") {
        return;
    }
    let s = serve_dashboard().await;
    let base = format!("http://{}", s.server.addr);
    let b = Browser::start(&[]).await;

    // Every page sends a visitor without a session to the sign-in form.
    for path in ["/", "/calls/CA1", "/outbox", "/status"] {
        b.open(&format!("{base}{path}")).await;
        assert_eq!(b.url().await, format!("{base}/login"), "{path}");
    }
    b.screenshot("login").await;

    // A wrong password is refused; the right one lands on the calls list.
    let field = b.find("input[name=password]").await;
    b.type_into(&field, "not the password").await;
    b.click_to_load(&b.find("button[type=submit]").await).await;
    assert_eq!(b.url().await, format!("{base}/login"));
    let field = b.find("input[name=password]").await;
    b.type_into(&field, PASSWORD).await;
    b.click_to_load(&b.find("button[type=submit]").await).await;
    assert_eq!(b.url().await, format!("{base}/"));
    b.wait_for_text("Calls", Duration::from_secs(5)).await;

    // A call comes in while the list is open: it appears without a reload.
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    c.agent_turn().await;
    let link = format!("a[href=\"/calls/{sid}\"]");
    b.find_within(&link, Duration::from_secs(15)).await;
    let live = b.find_within(".pill.live", Duration::from_secs(15)).await;
    assert_eq!(b.text(&live).await.trim().to_lowercase(), "live");
    b.screenshot("calls-live").await;
    assert_eq!(b.url().await, format!("{base}/"), "no navigation happened");

    // The booking runs to its end; the row turns finished in place.
    let lines = booking_lines();
    for line in &lines[..8] {
        c.turn(line).await;
    }
    c.until_said("all set").await;
    c.turn(lines.last().unwrap()).await;
    c.finish().await;
    s.record(&sid).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !b.all(".pill.live").await.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the row never stopped being live"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let list = b
        .wait_for_text("booking confirmed", Duration::from_secs(10))
        .await;
    assert!(list.contains("+15125559876"), "{list}");
    b.screenshot("calls-finished").await;

    // The call's page: transcript, state timeline, latency chart.
    b.click_to_load(&b.find(&link).await).await;
    assert_eq!(b.url().await, format!("{base}/calls/{sid}"));
    let page = b.body_text().await;
    for part in [
        "Transcript",
        "My name is Dana Fields",
        "Thanks for calling",
        "States",
        "service_area",
        "Tools",
        "book_service",
        "Turn latency",
    ] {
        assert!(page.contains(part), "{part:?} missing from the call page");
    }
    // The chart is a picture with bars, drawn by the browser.
    let bars = b
        .run("return document.querySelectorAll('svg rect').length")
        .await;
    assert!(bars.as_u64().unwrap_or(0) > 0, "no bars in the chart");
    let drawn = b
        .run(
            "var s=document.querySelector('svg');var r=s.getBoundingClientRect();\
             return [r.width, r.height]",
        )
        .await;
    assert!(
        drawn[0].as_f64().unwrap_or(0.0) > 100.0 && drawn[1].as_f64().unwrap_or(0.0) > 20.0,
        "the chart takes room on the page: {drawn}"
    );
    b.screenshot("call").await;

    b.open(&format!("{base}/status")).await;
    b.wait_for_text("version", Duration::from_secs(5)).await;
    b.screenshot("status").await;
    b.quit().await;
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_retry_works_and_a_change_without_the_csrf_token_is_refused() {
    if skip("the_outbox_retry_works_and_a_change_without_the_csrf_token_is_refused") {
        return;
    }
    let s = serve_dashboard().await;
    let base = format!("http://{}", s.server.addr);
    let store = s.server.store();
    let later = chrono::Utc::now().timestamp() as f64 + 3600.0;
    let mut ids = Vec::new();
    for call in ["CA_first", "CA_second"] {
        let id = store
            .outbox_enqueue(
                &store::NewOutboxItem {
                    call_id: call.into(),
                    kind: store::OutboxKind::Alert,
                    target_url: "http://127.0.0.1:9/alerts".into(),
                    payload: serde_json::json!({}),
                },
                later,
            )
            .await
            .unwrap();
        ids.push(id);
    }
    let b = Browser::start(&[]).await;
    b.open(&format!("{base}/login")).await;
    let field = b.find("input[name=password]").await;
    b.type_into(&field, PASSWORD).await;
    b.click_to_load(&b.find("button[type=submit]").await).await;
    assert_eq!(b.url().await, format!("{base}/"));

    b.open(&format!("{base}/outbox")).await;
    let page = b.wait_for_text("CA_first", Duration::from_secs(5)).await;
    assert!(page.contains("CA_second"), "{page}");
    b.screenshot("outbox").await;

    // A forged change from the signed-in page, without the token: refused.
    let forged = b
        .run_async(&format!(
            "var done=arguments[0];fetch('/api/outbox/{}/retry',{{method:'POST',\
             credentials:'same-origin'}}).then(function(r){{done(r.status)}})",
            ids[1]
        ))
        .await;
    assert_eq!(forged.as_u64(), Some(403), "no CSRF token: refused");

    // The button (which sends the token) makes the first one due now.
    let form = format!("form[action=\"/api/outbox/{}/retry\"]", ids[0]);
    b.click(&b.find(&format!("{form} button")).await).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let out = b.find(&format!("{form} output")).await;
        let said = b.text(&out).await;
        if said.contains("retrying now") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the retry never answered: {said:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    b.screenshot("outbox-retried").await;
    // What the store says: the first is due (or already tried), the one
    // the forged request named still waits an hour.
    let first = store.outbox_item(&ids[0]).await.unwrap().expect("first");
    assert!(
        first.attempts > 0 || first.next_attempt_unix < later - 60.0,
        "the retried one was made due: {first:?}"
    );
    let second = store.outbox_item(&ids[1]).await.unwrap().expect("second");
    assert_eq!(second.attempts, 0, "the forged retry changed nothing");
    assert!(
        (second.next_attempt_unix - later).abs() < 1.0,
        "the forged retry changed nothing: {second:?}"
    );
    b.quit().await;
    s.server.stop().await;
}
