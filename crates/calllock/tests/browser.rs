//! The operator's dashboard in a real browser: headless Chromium (Debian's
//! `chromium` + `chromium-driver`) against a real `calllock serve`, signing
//! in as a person would, watching a call made over Twilio Media Streams
//! appear live and finish, opening its page, retrying a delivery, and
//! checking that nothing is reachable without a session and that a change
//! without the CSRF token is refused; signing out; an ended session taking
//! the open dashboard to the sign-in page; the pages at a laptop's and a
//! phone's width; the call page's first screen. Every page is saved as a screenshot
//! under `target/browser-screenshots/` (not committed) so a person can
//! look at it.
//!
//! Without Chromium the test says SKIP and why; `.ci/run` installs it, so CI
//! never skips.

#[path = "support/needs.rs"]
mod needs;
#[path = "support/served.rs"]
mod served;
#[path = "support/webdriver.rs"]
mod webdriver;

use chrono::TimeZone;
use served::*;
use std::time::Duration;
use webdriver::{until, Browser};

const PASSWORD: &str = "browser password";

/// One browser at a time: Chromium, the server and (for the phone)
/// Whisper share the machine's two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn skip(test: &str) -> bool {
    needs::skip(test, webdriver::missing())
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
    let _one = ONE_AT_A_TIME.lock().await;
    let s = serve_dashboard().await;
    let base = format!("http://{}", s.server.addr);
    let b = Browser::start(&[]).await;

    // Every page sends a visitor without a session to the sign-in form.
    for path in ["/", "/calls/CA1", "/outbox", "/status", "/phone"] {
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
    finish_booking(c).await;
    s.record(&sid).await;
    until(
        Duration::from_secs(20),
        "the row no longer live",
        || async {
            match b.all(".pill.live").await.len() {
                0 => Ok(()),
                n => Err(format!("{n} live pill(s)")),
            }
        },
    )
    .await;
    let list = b
        .wait_for_text("Technician booked", Duration::from_secs(10))
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
        assert!(
            page.contains(part),
            "{part:?} missing from the call page: {page}"
        );
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
    // The recording: the browser decodes it, and it plays.
    let played = b
        .run_async(
            "var done=arguments[0];var a=document.getElementById('recording');\
             if(!a){done('no player on the page');return}\
             a.muted=true;a.play().then(function(){setTimeout(function(){\
             done([a.duration,a.currentTime])},1500)},function(e){done('cannot play: '+e)})",
        )
        .await;
    let (duration, at) = (played[0].as_f64(), played[1].as_f64());
    assert!(
        duration.is_some_and(|d| d > 5.0) && at.is_some_and(|t| t > 0.5),
        "the recording as played by the browser (duration, position): {played}"
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
    let _one = ONE_AT_A_TIME.lock().await;
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
    sign_in(&b, &base).await;

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

    // The button (which sends the token) attempts the first one at once
    // and shows what really happened (no dashboard is configured here, so
    // the attempt fails and says when the worker tries again).
    let form = format!("form[action=\"/api/outbox/{}/retry\"]", ids[0]);
    b.click(&b.find(&format!("{form} button")).await).await;
    until(Duration::from_secs(10), "the retry's answer", || async {
        let out = b.find(&format!("{form} output")).await;
        let said = b.text(&out).await;
        match said.contains("attempted just now") {
            true => Ok(()),
            false => Err(format!("{said:?}")),
        }
    })
    .await;
    b.screenshot("outbox-retried").await;
    // What the store says: the first was attempted, the one the forged
    // request named still waits an hour.
    let first = store.outbox_item(&ids[0]).await.unwrap().expect("first");
    assert_eq!(
        first.attempts, 1,
        "the retried one was attempted: {first:?}"
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

/// Sign in through the form.
async fn sign_in(b: &Browser, base: &str) {
    b.open(&format!("{base}/login")).await;
    let field = b.find("input[name=password]").await;
    b.type_into(&field, PASSWORD).await;
    b.click_to_load(&b.find("button[type=submit]").await).await;
    assert_eq!(b.url().await, format!("{base}/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_phone_holds_a_call_from_a_microphone() {
    let test = "the_browser_phone_holds_a_call_from_a_microphone";
    if skip(test) || needs::skip(test, needs::local_speech_missing()) {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    // The microphone: a WAV file Chromium plays as its capture device —
    // a few seconds of quiet while the agent greets, the caller's line
    // (a recorded voice: "I smell gas in my kitchen and the furnace is
    // on."), then quiet.
    let line = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/speech/joe/emergency-01.wav"
    ))
    .unwrap();
    let wav = audio::wav::read_wav(&line).unwrap();
    assert_eq!((wav.sample_rate, wav.channels), (8000, 1));
    let mut mic = vec![0i16; 8000 * 6];
    mic.extend_from_slice(&wav.samples);
    mic.extend(std::iter::repeat_n(0i16, 8000 * 20));
    let dir = tempfile::tempdir().unwrap();
    let mic_path = dir.path().join("microphone.wav");
    std::fs::write(&mic_path, audio::wav::write_wav_pcm16(8000, 1, &mic)).unwrap();

    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    let s = serve_with(|c| {
        c.serve.operator_password_hash = hash;
        c.speech.local = "on".into();
        c.sim.llm_latency_s = 0.2;
    })
    .await;
    let base = format!("http://{}", s.server.addr);
    let capture = format!(
        "--use-file-for-fake-audio-capture={}%noloop",
        mic_path.display()
    );
    let b = Browser::start(&[
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        &capture,
        "--autoplay-policy=no-user-gesture-required",
    ])
    .await;
    sign_in(&b, &base).await;
    b.open(&format!("{base}/phone")).await;
    b.screenshot("phone").await;
    b.click(&b.find("#dial").await).await;
    b.wait_for_text("Status: connected", Duration::from_secs(10))
        .await;
    let link = b.find_within("#phone-call a", Duration::from_secs(5)).await;
    let sid = b.text(&link).await;
    assert!(sid.starts_with("CA") && sid.len() == 34, "{sid:?}");
    b.screenshot("phone-connected").await;
    // The agent hears the gas, sends the caller out and hangs up.
    b.wait_for_text("Status: call ended", Duration::from_secs(90))
        .await;
    b.screenshot("phone-ended").await;
    // The page played the agent's audio and echoed its marks as it did.
    let stats = b.run("return window.calllockPhone").await;
    assert!(
        stats["sent"].as_u64().unwrap_or(0) > 300,
        "mic sent: {stats}"
    );
    assert!(
        stats["media"].as_u64().unwrap_or(0) > 100,
        "played: {stats}"
    );
    assert!(stats["marks"].as_u64().unwrap_or(0) > 5, "echoed: {stats}");
    eprintln!("browser phone: {stats}");
    let r = s.record(&sid).await;
    assert_eq!(r.phone, calllock::serve::twilio_call::BROWSER_CALLER);
    assert_eq!(r.final_state, "safety_exit", "{r:#?}");
    assert_eq!(r.end_call_reason, "safety_emergency");
    let heard = user_lines(&r).join(" ").to_lowercase();
    assert!(heard.contains("gas"), "the microphone was heard: {heard:?}");
    let agent = r.transcript.to_string().to_lowercase();
    assert!(
        agent.contains("leave") || agent.contains("911"),
        "the safety script was said: {agent}"
    );
    // The call's recording holds both sides, heard back by Whisper: the
    // microphone on the left, the agent on the right.
    let recording = s
        .cfg
        .database
        .with_file_name("recordings")
        .join(format!("{sid}.wav"));
    let wav = std::fs::read(&recording).expect("the call was recorded");
    let ear = s.server.local_speech().unwrap().recogniser().unwrap();
    let said = calllock::cli::transcribe::transcribe(ear.as_ref(), &wav)
        .await
        .unwrap();
    let side = |channel: usize| -> String {
        said.iter()
            .filter(|l| l.channel == channel)
            .map(|l| l.text.to_lowercase())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (caller, agent) = (side(0), side(1));
    assert!(caller.contains("gas"), "the caller's side: {caller:?}");
    assert!(
        agent.contains("thanks for calling")
            && (agent.contains("out of the house") || agent.contains("911")),
        "the agent's side: {agent:?}"
    );
    b.quit().await;
    s.server.stop().await;
}

/// Finished calls saved straight into the database, as the post-call work
/// saves them: first Dana Fields at 9:04 PM in Austin on Wednesday,
/// November 25, 2026 (03:04 UTC on the 26th) with a technician booked for
/// Friday, November 27 at 2:00 PM; then callers with long names, long
/// problems and many tags (what makes a table too wide).
async fn seed_calls(s: &Served) {
    let at = chrono::Utc.with_ymd_and_hms(2026, 11, 26, 3, 4, 0).unwrap();
    let dana = store::CallRecord {
        call_id: "CA_evening".into(),
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
            "tags": {"SERVICE_TYPE": ["repair_ac"], "URGENCY": ["same_day"]},
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
    s.server.store().save_call(&dana).await.unwrap();
    for (i, (state, reason, color)) in [
        ("safety_exit", "safety_emergency", "red"),
        ("callback", "callback_later", "green"),
        ("discovery", "customer_hangup", "gray"),
        ("booking_failed", "callback_later", "blue"),
    ]
    .into_iter()
    .enumerate()
    {
        let started = at - chrono::Duration::hours(i as i64 + 1);
        let rec = store::CallRecord {
            call_id: format!("CA_seeded_{i}_with_a_long_call_identifier_0123456789"),
            phone: "+15125550142".into(),
            started_at: started,
            ended_at: Some(started + chrono::Duration::seconds(300)),
            final_state: state.into(),
            end_call_reason: reason.into(),
            booking_status: "not_requested".into(),
            urgency: "high".into(),
            priority_color: color.into(),
            revenue_tier: "major_repair_or_replacement_candidate".into(),
            customer_name: "Maximiliana Featherstonehaugh-Vanderberg".into(),
            problem:
                "Thermostat_display_blank_and_the_outdoor_condenser_fan_is_not_spinning_at_all"
                    .into(),
            record: serde_json::json!({
                "tags": {
                    "HAZARD": ["electrical_burning_smell_near_the_air_handler"],
                    "SERVICE_TYPE": ["repair_ac", "repair_heating", "thermostat_replacement"],
                    "REVENUE": ["system_replacement_candidate_over_fifteen_years_old"],
                },
                "session": {"service_address": "12345 Extraordinarily Long Boulevard Name Apartment 9876, Austin"},
            }),
            transcript: serde_json::json!([]),
        };
        s.server.store().save_call(&rec).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_signs_out_with_the_button_on_every_page() {
    if skip("an_owner_signs_out_with_the_button_on_every_page") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    let s = serve_dashboard().await;
    seed_calls(&s).await;
    let base = format!("http://{}", s.server.addr);
    let b = Browser::start(&[]).await;
    sign_in(&b, &base).await;
    for path in ["/", "/calls/CA_evening", "/outbox", "/status", "/phone"] {
        b.open(&format!("{base}{path}")).await;
        let button = b.find("#signout").await;
        assert_eq!(b.text(&button).await, "Sign out", "{path}");
    }
    assert!(b.cookie("calllock_session").await.is_some());
    b.open(&format!("{base}/outbox")).await;
    b.click(&b.find("#signout").await).await;
    until(Duration::from_secs(10), "the sign-in page", || async {
        let url = b.url().await;
        match url == format!("{base}/login") {
            true => Ok(()),
            false => Err(url),
        }
    })
    .await;
    b.wait_for_text("Operator password", Duration::from_secs(5))
        .await;
    b.screenshot("signed-out").await;
    // Signed out for real: the cookie is gone, and the dashboard asks to
    // sign in again.
    assert_eq!(b.cookie("calllock_session").await, None);
    b.open(&format!("{base}/")).await;
    assert_eq!(b.url().await, format!("{base}/login"));
    b.quit().await;
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_fit_a_laptop_and_a_phone_without_scrolling_sideways() {
    if skip("the_pages_fit_a_laptop_and_a_phone_without_scrolling_sideways") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    let s = serve_dashboard().await;
    seed_calls(&s).await;
    s.server
        .store()
        .outbox_enqueue(
            &store::NewOutboxItem {
                call_id: "CA_seeded_0_with_a_long_call_identifier_0123456789".into(),
                kind: store::OutboxKind::Alert,
                target_url: "http://127.0.0.1:9/alerts/a/very/long/path/that/goes/on".into(),
                payload: serde_json::json!({}),
            },
            chrono::Utc::now().timestamp() as f64 + 3600.0,
        )
        .await
        .unwrap();
    let base = format!("http://{}", s.server.addr);
    let b = Browser::start(&[]).await;
    sign_in(&b, &base).await;
    for (width, height, mobile, screen) in [(1024, 768, false, "1024"), (390, 844, true, "phone")] {
        b.set_viewport(width, height, mobile).await;
        for (path, name, needle) in [
            ("/", "calls", "Maximiliana"),
            ("/calls/CA_evening", "call", "Transcript"),
            ("/outbox", "outbox", "CA_seeded_0"),
            ("/status", "status", "version"),
        ] {
            b.open(&format!("{base}{path}")).await;
            b.wait_for_text(needle, Duration::from_secs(5)).await;
            b.screenshot(&format!("{name}-{screen}")).await;
            let (page, window) = b.page_and_window_width().await;
            assert!(
                page <= window && window == u64::from(width),
                "{path} at {width} px scrolls sideways: the page is {page} px wide \
                 in a window of {window} px"
            );
        }
    }
    b.quit().await;
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_pages_first_screen_names_the_caller_problem_address_booked_time_and_what_next() {
    let test =
        "the_call_pages_first_screen_names_the_caller_problem_address_booked_time_and_what_next";
    if skip(test) {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    let s = serve_dashboard().await;
    seed_calls(&s).await;
    let base = format!("http://{}", s.server.addr);
    let b = Browser::start(&[]).await;
    sign_in(&b, &base).await;
    for (width, height, mobile, screen) in [(1280, 800, false, "laptop"), (390, 844, true, "phone")]
    {
        b.set_viewport(width, height, mobile).await;
        b.open(&format!("{base}/calls/CA_evening")).await;
        let title = b.run("return document.title").await;
        assert_eq!(title, "Call from Dana Fields — CallLock");
        let heading = b.text(&b.find("h1").await).await;
        assert_eq!(heading, "Call from Dana Fields");
        let next = b.text(&b.find("#next").await).await;
        assert_eq!(
            next, "Technician booked for Friday, November 27 at 2:00 PM.",
            "what happens next, on Austin's clock"
        );
        let summary = b.text(&b.find("#summary").await).await;
        for part in [
            "Dana Fields, +15125559876",
            "The AC blows warm air",
            "4821 Oak Hollow Dr, Austin 78745",
            "Friday, November 27 at 2:00 PM",
            "Wed, Nov 25, 2026, 9:04 PM CST",
        ] {
            assert!(summary.contains(part), "{part:?} at the top: {summary}");
        }
        for css in ["h1", "#next", "#summary"] {
            assert!(
                b.on_first_screen(css).await,
                "{css} on the first screen at {width}×{height}"
            );
        }
        b.screenshot(&format!("call-first-screen-{screen}")).await;
    }
    b.quit().await;
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_session_sends_the_open_dashboard_to_sign_in() {
    if skip("an_ended_session_sends_the_open_dashboard_to_sign_in") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    let s = serve_dashboard().await;
    seed_calls(&s).await;
    let base = format!("http://{}", s.server.addr);
    let b = Browser::start(&[]).await;
    sign_in(&b, &base).await;
    b.wait_for_text("Dana Fields", Duration::from_secs(5)).await;
    // The list refreshes itself while the session lives.
    let cookie = format!(
        "calllock_session={}",
        b.cookie("calllock_session")
            .await
            .expect("a session cookie")
    );
    // The session ends on the server while the page is open: another
    // client holding the same cookie signs out (as a restart or the 12-hour
    // expiry would end it).
    let http = reqwest::Client::new();
    let session: serde_json::Value = http
        .get(format!("{base}/api/session"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let out = http
        .post(format!("{base}/logout"))
        .header("cookie", &cookie)
        .header("x-csrf-token", session["csrf"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 204);
    // The next refresh finds no session and takes the browser to sign in
    // (not the sign-in form inside the calls list).
    until(Duration::from_secs(15), "the sign-in page", || async {
        let url = b.url().await;
        match url == format!("{base}/login") {
            true => Ok(()),
            false => Err(url),
        }
    })
    .await;
    b.wait_for_text("Operator password", Duration::from_secs(5))
        .await;
    assert!(b.all("#live").await.is_empty(), "a page of its own");
    b.screenshot("session-ended").await;
    b.quit().await;
    s.server.stop().await;
}
