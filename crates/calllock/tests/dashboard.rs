//! The operator's web dashboard on a real server, read as HTML: every
//! page refused without a session; the calls list with a call while it is
//! live and after it ends, filtered; the call page with its transcript,
//! states, tools, fields and latency chart; the outbox with its retry
//! button; the health page; a call's recording, both sides of it; times
//! on the business's clock; the security headers of every answer.

#[path = "support/served.rs"]
mod served;

use served::*;

const PASSWORD: &str = "dashboard password";

struct Browser {
    base: String,
    client: reqwest::Client,
    cookie: String,
}

impl Browser {
    async fn signed_in(s: &Served) -> Browser {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let base = format!("http://{}", s.server.addr);
        let r = client
            .post(format!("{base}/login"))
            .form(&[("password", PASSWORD)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303);
        let cookie = r.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        Browser {
            base,
            client,
            cookie,
        }
    }

    async fn page(&self, path: &str) -> (u16, String) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }
}

async fn serve_dashboard() -> Served {
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    serve_with(|c| c.serve.operator_password_hash = hash).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_needs_a_session() {
    let s = serve_dashboard().await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for path in [
        "/",
        "/calls/CA1",
        "/outbox",
        "/status",
        "/phone",
        "/?fragment=1",
        "/calls/CA1/recording.wav",
    ] {
        let r = client
            .get(format!("http://{}{path}", s.server.addr))
            .header("cookie", "calllock_session=forged")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303, "{path}");
        assert_eq!(r.headers()["location"], "/login", "{path}");
    }
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_shows_live_then_finished_with_its_page() {
    let s = serve_dashboard().await;
    let b = Browser::signed_in(&s).await;

    // While the call is on the line.
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    c.agent_turn().await;
    let (status, list) = b.page("/").await;
    assert_eq!(status, 200);
    assert!(list.contains(&format!("href=\"/calls/{sid}\"")), "{list}");
    assert!(list.contains("pill live"), "the call shows as live: {list}");
    assert!(
        list.contains("data-refresh=\""),
        "the list refreshes itself"
    );
    let (_, live_page) = b.page(&format!("/calls/{sid}")).await;
    assert!(
        live_page.contains("data-refresh=\""),
        "a live call's page refreshes"
    );
    assert!(live_page.contains("Thanks for calling"), "{live_page}");
    assert!(!live_page.contains("<span data-final"));

    // The rest of the booking.
    finish_booking(c).await;
    s.record(&sid).await;

    let (_, list) = b.page("/?fragment=1").await;
    assert!(!list.contains("<html"), "a fragment is just the table");
    assert!(list.contains(&sid) && !list.contains("pill live"), "{list}");
    assert!(list.contains("Technician booked"), "{list}");
    assert!(list.contains("SERVICE_TYPE"), "tags: {list}");
    // Filters.
    for (query, found) in [
        ("final_state=confirm", true),
        ("final_state=callback", false),
        ("caller=9876", true),
        ("caller=1111", false),
        ("status=completed", true),
        ("from=2000-01-01&to=2999-12-31", true),
        ("to=2000-01-01", false),
    ] {
        let (status, p) = b.page(&format!("/?{query}")).await;
        assert_eq!(status, 200, "{query}");
        assert_eq!(p.contains(&format!("/calls/{sid}")), found, "{query}");
    }
    let (status, p) = b.page("/?from=yesterday").await;
    assert_eq!(status, 400);
    assert!(p.contains("from must be a date"), "{p}");

    // The call's page.
    let (status, call) = b.page(&format!("/calls/{sid}")).await;
    assert_eq!(status, 200);
    for part in [
        "Transcript",
        "My name is Dana Fields",
        "States",
        "service_area",
        "Tools",
        "book_service",
        "Fields",
        "Dana Fields",
        "Deliveries",
        "Turn latency",
        "<svg",
        "<rect",
        "<span data-final",
    ] {
        assert!(call.contains(part), "{part} missing from the call page");
    }
    assert!(
        !call.contains("data-refresh=\""),
        "a finished call does not refresh"
    );
    let (status, _) = b.page("/calls/CA_nope").await;
    assert_eq!(status, 404);
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_and_health_pages() {
    let s = serve_dashboard().await;
    let b = Browser::signed_in(&s).await;
    let (_, empty) = b.page("/outbox").await;
    assert!(empty.contains("Nothing waits"), "{empty}");
    let id = s
        .server
        .store()
        .outbox_enqueue(
            &store::NewOutboxItem {
                call_id: "CA_waiting".into(),
                kind: store::OutboxKind::Alert,
                target_url: "http://127.0.0.1:9/alerts".into(),
                payload: serde_json::json!({}),
            },
            chrono::Utc::now().timestamp() as f64 + 600.0,
        )
        .await
        .unwrap();
    let (status, page) = b.page("/outbox").await;
    assert_eq!(status, 200);
    assert!(
        page.contains("CA_waiting") && page.contains("alert"),
        "{page}"
    );
    assert!(
        page.contains(&format!("action=\"/api/outbox/{id}/retry\"")),
        "{page}"
    );
    assert!(
        page.contains("data-csrf=\""),
        "the retry carries the CSRF token"
    );
    assert!(
        page.contains("in 59") || page.contains("in 600 s"),
        "next attempt in ~600 s: {page}"
    );

    let (status, health) = b.page("/status").await;
    assert_eq!(status, 200);
    assert!(health.contains("version") && health.contains(env!("CARGO_PKG_VERSION")));
    assert!(health.contains("vendors.speech.ears"), "{health}");
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phone_socket_needs_a_session_and_the_dashboards_origin() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Error;
    let s = serve_dashboard().await;
    let b = Browser::signed_in(&s).await;
    let url = format!("ws://{}/ws/phone", s.server.addr);
    let origin = format!("http://{}", s.server.addr);
    let status = |r: Result<_, Error>| match r {
        Ok(_) => 101,
        Err(Error::Http(resp)) => resp.status().as_u16(),
        Err(e) => panic!("{e}"),
    };
    let attempt = |cookie: String, origin: String| {
        let mut req = url.as_str().into_client_request().unwrap();
        req.headers_mut().insert("cookie", cookie.parse().unwrap());
        req.headers_mut().insert("origin", origin.parse().unwrap());
        tokio_tungstenite::connect_async(req)
    };
    let forged = "calllock_session=forged".to_string();
    assert_eq!(
        status(attempt(forged, origin.clone()).await.map(|_| ())),
        403
    );
    let elsewhere = "http://evil.example".to_string();
    assert_eq!(
        status(attempt(b.cookie.clone(), elsewhere).await.map(|_| ())),
        403
    );
    // Signed in, from the dashboard: a call's socket (closed at once).
    let (mut ws, _) = attempt(b.cookie.clone(), origin).await.unwrap();
    ws.close(None).await.unwrap();
    let (status, page) = b.page("/phone").await;
    assert_eq!(status, 200);
    assert!(page.contains("Call the agent") && page.contains("src=\"/assets/phone.js\""));
    let script = b.get("/assets/phone.js", None).await.text().await.unwrap();
    assert!(script.contains("/ws/phone"), "{script}");
    s.server.stop().await;
}

impl Browser {
    async fn get(&self, path: &str, range: Option<&str>) -> reqwest::Response {
        let mut r = self
            .client
            .get(format!("{}{path}", self.base))
            .header("cookie", &self.cookie);
        if let Some(range) = range {
            r = r.header("range", range);
        }
        r.send().await.unwrap()
    }
}

/// The speech-codec words on one side of a recording (µ-law bytes), in
/// order: a word starts where a frame begins with the codec's word mark.
fn words_on(side: &[u8]) -> Vec<String> {
    use voice::offline::codec::{decode_mulaw, Decoded, FRAME_SAMPLES_8K};
    let mut words = Vec::new();
    let mut i = 0;
    while i + FRAME_SAMPLES_8K <= side.len() {
        if side[i] == 0x80 {
            if let Decoded::Word(w) = decode_mulaw(&side[i..i + FRAME_SAMPLES_8K]) {
                words.push(w);
                i += FRAME_SAMPLES_8K;
                continue;
            }
        }
        i += 1;
    }
    words
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_call_can_be_listened_to() {
    let s = serve_dashboard().await;
    let b = Browser::signed_in(&s).await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    c.agent_turn().await;
    let (_, live) = b.page(&format!("/calls/{sid}")).await;
    assert!(
        live.contains("Recording; it can be played when the call ends"),
        "{live}"
    );
    let (_, said) = finish_booking(c).await;
    let record = s.record(&sid).await;

    // The page offers it as soon as the call is finished.
    let (_, page) = b.page(&format!("/calls/{sid}")).await;
    let src = format!("/calls/{sid}/recording.wav");
    assert!(
        page.contains(&format!(
            "<audio id=\"recording\" controls preload=\"metadata\" src=\"{src}\""
        )),
        "{page}"
    );

    let r = b.get(&src, None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "audio/wav");
    assert_eq!(r.headers()["accept-ranges"], "bytes");
    assert_eq!(r.headers()["cache-control"], "private, no-store");
    let wav = r.bytes().await.unwrap();
    let w = audio::wav::read_wav(&wav).unwrap();
    assert_eq!((w.sample_rate, w.channels), (8000, 2));
    // As long as the call, give or take the hang-up.
    let call_s = (record.ended_at.unwrap() - record.started_at).num_milliseconds() as f64 / 1000.0;
    let heard_s = w.frames() as f64 / 8000.0;
    assert!(
        heard_s > 5.0 && (heard_s - call_s).abs() < 3.0,
        "recording {heard_s:.1} s, call {call_s:.1} s"
    );
    // Left: everything the caller said; right: the agent, greeting first;
    // on one clock: the caller speaks after the greeting.
    let data = &wav[44..];
    let caller: Vec<u8> = data.iter().step_by(2).copied().collect();
    let agent: Vec<u8> = data.iter().skip(1).step_by(2).copied().collect();
    let (caller_words, agent_words) = (words_on(&caller), words_on(&agent));
    let said_words: Vec<String> = said
        .iter()
        .flat_map(|l| l.split_whitespace().map(str::to_string))
        .collect();
    assert_eq!(caller_words, said_words, "the caller's side");
    assert_eq!(
        agent_words[..3],
        ["Thanks", "for", "calling"],
        "{agent_words:?}"
    );
    assert!(
        agent_words.iter().any(|w| w.contains("set")),
        "{agent_words:?}"
    );
    let first = |side: &[u8], word: &str| {
        (0..side.len() - 160)
            .find(|&i| {
                side[i] == 0x80
                    && voice::offline::codec::decode_mulaw(&side[i..i + 160])
                        == voice::offline::codec::Decoded::Word(word.into())
            })
            .unwrap_or_else(|| panic!("{word} not found"))
    };
    assert!(
        first(&agent, "calling") < first(&caller, &said_words[0]),
        "one clock"
    );

    // Seeking: a range of it.
    let r = b.get(&src, Some("bytes=0-43")).await;
    assert_eq!(r.status(), 206);
    assert_eq!(&r.bytes().await.unwrap()[..4], b"RIFF");
    // Nothing else is served from the folder.
    for path in [
        "/calls/CA_nope/recording.wav",
        "/calls/..%2Fcalls.db/recording.wav",
    ] {
        assert_eq!(b.get(path, None).await.status(), 404, "{path}");
    }
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_recording_off_nothing_is_recorded_and_the_page_says_so() {
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    let s = serve_with(|c| {
        c.serve.operator_password_hash = hash;
        c.recording.enabled = false;
    })
    .await;
    let b = Browser::signed_in(&s).await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    c.agent_turn().await;
    c.phone.as_ref().unwrap().hang_up();
    c.finish().await;
    s.record(&sid).await;
    let (_, page) = b.page(&format!("/calls/{sid}")).await;
    assert!(page.contains("Calls are not recorded"), "{page}");
    let r = b.get(&format!("/calls/{sid}/recording.wav"), None).await;
    assert_eq!(r.status(), 404);
    assert!(!s.cfg.database.with_file_name("recordings").exists());
    s.server.stop().await;
}

/// A finished call saved straight into the database, as the post-call
/// work saves one: Dana Fields, at 9:04 PM in Austin on Wednesday,
/// November 25, 2026 (03:04 UTC on the 26th), a technician booked for
/// Friday, November 27 at 2:00 PM.
async fn seed_evening_call(s: &Served, call_id: &str) {
    use chrono::TimeZone;
    let at = chrono::Utc.with_ymd_and_hms(2026, 11, 26, 3, 4, 0).unwrap();
    let rec = store::CallRecord {
        call_id: call_id.into(),
        phone: "+15125559876".into(),
        started_at: at,
        ended_at: Some(at + chrono::Duration::seconds(95)),
        final_state: "confirm".into(),
        end_call_reason: "completed".into(),
        booking_status: "confirmed".into(),
        urgency: "medium".into(),
        priority_color: "blue".into(),
        revenue_tier: "standard_repair".into(),
        customer_name: "Dana Fields".into(),
        problem: "The AC blows warm air".into(),
        record: serde_json::json!({
            "tags": {"SERVICE_TYPE": ["repair_ac"]},
            "session": {
                "customer_name": "Dana Fields",
                "service_address": "4821 Oak Hollow Dr, Austin",
                "zip_code": "78745",
                "problem_description": "The AC blows warm air",
                "booking_confirmed": true,
                "booked_time": "2026-11-27T14:00:00-06:00",
            }
        }),
        transcript: serde_json::json!([]),
    };
    s.server.store().save_call(&rec).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_at_9_04_pm_shows_and_is_filed_under_its_own_day_in_the_business_time_zone() {
    let s = serve_dashboard().await;
    seed_evening_call(&s, "CA_evening").await;
    let b = Browser::signed_in(&s).await;

    let (status, list) = b.page("/").await;
    assert_eq!(status, 200);
    assert!(
        list.contains("Wed, Nov 25, 2026, 9:04 PM CST"),
        "the list shows Austin's time: {list}"
    );
    assert!(
        !list.contains("03:04") && !list.contains("UTC"),
        "no UTC: {list}"
    );
    // The date filter means Austin's days: the call is November 25th's.
    for (query, found) in [
        ("from=2026-11-25&to=2026-11-25", true),
        ("from=2026-11-25", true),
        ("to=2026-11-25", true),
        ("from=2026-11-26&to=2026-11-26", false),
        ("from=2026-11-26", false),
        ("to=2026-11-24", false),
    ] {
        let (status, p) = b.page(&format!("/?{query}")).await;
        assert_eq!(status, 200, "{query}");
        assert_eq!(p.contains("/calls/CA_evening"), found, "{query}: {p}");
    }

    let (status, call) = b.page("/calls/CA_evening").await;
    assert_eq!(status, 200);
    assert!(call.contains("Wed, Nov 25, 2026, 9:04 PM CST"), "{call}");
    assert!(
        call.contains("Friday, November 27 at 2:00 PM"),
        "the booked time on Austin's clock: {call}"
    );
    assert!(!call.contains("UTC"), "{call}");
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_page_opens_with_who_what_where_when_and_what_happens_next() {
    let s = serve_dashboard().await;
    seed_evening_call(&s, "CA_evening").await;
    let b = Browser::signed_in(&s).await;
    let (status, call) = b.page("/calls/CA_evening").await;
    assert_eq!(status, 200);
    assert!(
        call.contains("<title>Call from Dana Fields — CallLock</title>"),
        "the title names the caller, not the call id: {call}"
    );
    assert!(call.contains("<h1>Call from Dana Fields</h1>"), "{call}");
    // In this order, before any detail.
    let top = [
        "Technician booked for Friday, November 27 at 2:00 PM.",
        "Dana Fields, +15125559876",
        "The AC blows warm air",
        "4821 Oak Hollow Dr, Austin 78745",
        "Friday, November 27 at 2:00 PM",
        "Wed, Nov 25, 2026, 9:04 PM CST",
    ];
    let details = call.find("<h2>Details</h2>").expect("a details section");
    let mut from = 0;
    for part in top {
        let at = call[from..]
            .find(part)
            .map(|i| i + from)
            .unwrap_or_else(|| panic!("{part:?} not at the top (in order): {call}"));
        assert!(at < details, "{part:?} is above the details");
        from = at;
    }
    // The list says it in words too.
    let (_, list) = b.page("/").await;
    assert!(
        list.contains("Technician booked for Friday, November 27 at 2:00 PM"),
        "{list}"
    );
    assert!(list.contains("Standard"), "priority in words: {list}");
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emergency_and_an_owed_callback_say_what_happens_next() {
    let s = serve_dashboard().await;
    let store = s.server.store();
    let at = chrono::Utc::now() - chrono::Duration::minutes(5);
    for (id, state, reason, color) in [
        ("CA_gas", "safety_exit", "safety_emergency", "red"),
        ("CA_owed", "callback", "callback_later", "blue"),
    ] {
        let rec = store::CallRecord {
            call_id: id.into(),
            phone: "+15125550142".into(),
            started_at: at,
            ended_at: Some(at + chrono::Duration::seconds(40)),
            final_state: state.into(),
            end_call_reason: reason.into(),
            booking_status: "not_requested".into(),
            urgency: "emergency".into(),
            priority_color: color.into(),
            revenue_tier: String::new(),
            customer_name: String::new(),
            problem: "I smell gas".into(),
            record: serde_json::json!({"session": {}}),
            transcript: serde_json::json!([]),
        };
        store.save_call(&rec).await.unwrap();
    }
    store
        .outbox_enqueue(
            &store::NewOutboxItem {
                call_id: "CA_gas".into(),
                kind: store::OutboxKind::Alert,
                target_url: "http://127.0.0.1:9/alerts".into(),
                payload: serde_json::json!({}),
            },
            chrono::Utc::now().timestamp() as f64 + 3600.0,
        )
        .await
        .unwrap();
    let b = Browser::signed_in(&s).await;
    let (_, gas) = b.page("/calls/CA_gas").await;
    assert!(
        gas.contains("Emergency: caller told to leave; the alert waits to be sent"),
        "{gas}"
    );
    assert!(
        gas.contains("<h1>Call from +15125550142</h1>"),
        "no name: the number: {gas}"
    );
    let (_, owed) = b.page("/calls/CA_owed").await;
    assert!(
        owed.contains("Call back: the caller is owed a callback at +15125550142."),
        "{owed}"
    );
    let (_, list) = b.page("/").await;
    for words in [
        "Emergency: caller told to leave",
        "Call back: the caller is owed a callback",
        "Urgent",
    ] {
        assert!(list.contains(words), "{words}: {list}");
    }
    assert!(
        !list.contains(">safety_exit<") && !list.contains(">callback_later<"),
        "no raw state names in the list: {list}"
    );
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_and_api_answers_carry_security_headers_and_are_never_cached() {
    let s = serve_dashboard().await;
    seed_evening_call(&s, "CA_evening").await;
    let b = Browser::signed_in(&s).await;
    for path in [
        "/",
        "/?fragment=1",
        "/calls/CA_evening",
        "/outbox",
        "/status",
        "/phone",
        "/api/calls",
        "/api/calls/CA_evening",
        "/api/session",
        "/login",
        "/no-such-page",
    ] {
        let r = b.get(path, None).await;
        let h = r.headers();
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        let scripts = csp
            .split(';')
            .find(|d| d.trim().starts_with("script-src"))
            .unwrap_or_else(|| panic!("{path}: no script-src in {csp}"));
        assert!(
            !scripts.contains("unsafe-inline"),
            "{path}: inline scripts allowed: {csp}"
        );
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        assert_eq!(h["cache-control"], "no-store", "{path}");
        let body = r.text().await.unwrap();
        assert!(
            !body.contains("<script>"),
            "{path}: an inline script the policy would block"
        );
    }
    // The script the pages load: same origin, served as JavaScript.
    let js = b.get("/assets/dashboard.js", None).await;
    assert_eq!(js.status(), 200);
    assert!(js.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    assert!(js.text().await.unwrap().contains("/logout"));
    let (_, page) = b.page("/").await;
    assert!(page.contains("<script src=\"/assets/dashboard.js\"></script>"));
    assert!(page.contains("id=\"signout\""), "a sign-out button: {page}");
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_range_on_a_recording_is_ignored_and_the_whole_file_sent() {
    let s = serve_dashboard().await;
    seed_evening_call(&s, "CA_evening").await;
    let dir = s.cfg.database.with_file_name("recordings");
    std::fs::create_dir_all(&dir).unwrap();
    let wav: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.join("CA_evening.wav"), &wav).unwrap();
    let b = Browser::signed_in(&s).await;
    let src = "/calls/CA_evening/recording.wav";
    for (range, status, len) in [
        (None, 200, 1000),
        (Some("bytes=abc"), 200, 1000),
        (Some("bytes=5-2"), 200, 1000),
        (Some("bytes=0-1,4-5"), 200, 1000),
        (Some("items=0-10"), 200, 1000),
        (Some("bytes= 0-10"), 200, 1000),
        (Some("bytes=10-19"), 206, 10),
        (Some("bytes=-100"), 206, 100),
        (Some("bytes=990-"), 206, 10),
    ] {
        let r = b.get(src, range).await;
        assert_eq!(r.status(), status, "{range:?}");
        assert_eq!(r.headers()["cache-control"], "private, no-store");
        let body = r.bytes().await.unwrap();
        assert_eq!(body.len(), len, "{range:?}");
        if status == 200 {
            assert_eq!(&body[..], &wav[..], "{range:?}: the whole file");
        }
    }
    // A well-formed range beyond the end: 416, as before.
    let r = b.get(src, Some("bytes=5000-6000")).await;
    assert_eq!(r.status(), 416);
    s.server.stop().await;
}

/// A call stored with raw caller text (before caller lines were cleaned
/// on the way in, or a database edited by hand) shows on the dashboard
/// without its control characters, escapes or bidi overrides: the list,
/// the call page with its transcript and event log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_stored_call_shows_without_controls_or_bidi_overrides() {
    let s = serve_dashboard().await;
    let raw = "\u{1b}[2J\u{1b}[31mgas\u{7} in the \u{202E}kitchen\u{202C}\u{9b}0m\u{0}";
    let now = chrono::Utc::now();
    let rec = store::CallRecord {
        call_id: "CA_raw".into(),
        phone: "+15125550199".into(),
        started_at: now,
        ended_at: Some(now + chrono::Duration::seconds(30)),
        final_state: "safety_exit".into(),
        end_call_reason: "safety_emergency".into(),
        booking_status: String::new(),
        urgency: "emergency".into(),
        priority_color: "red".into(),
        revenue_tier: "standard_repair".into(),
        customer_name: format!("Dana{raw}"),
        problem: raw.into(),
        record: serde_json::json!({"session": {"customer_name": format!("Dana{raw}"), "problem_description": raw}}),
        transcript: serde_json::json!([
            {"t": 1.0, "state": "safety", "role": "user", "content": raw},
        ]),
    };
    s.server.store().save_call(&rec).await.unwrap();
    let t0 = now.timestamp() as f64;
    s.server
        .store()
        .append_event(
            "CA_raw",
            1,
            t0,
            "caller",
            &serde_json::json!({"text": raw, "state": "welcome"}),
        )
        .await
        .unwrap();
    let b = Browser::signed_in(&s).await;
    let unsafe_char = |c: char| {
        (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
            || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    for path in ["/", "/calls/CA_raw"] {
        let (status, page) = b.page(path).await;
        assert_eq!(status, 200, "{path}");
        assert!(page.contains("gas"), "{path} shows the words");
        let bad: Vec<char> = page.chars().filter(|c| unsafe_char(*c)).collect();
        assert!(bad.is_empty(), "{path} carries {bad:?}");
    }
}
