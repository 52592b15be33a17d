//! What `calllock serve` refuses or survives: Twilio signatures (valid,
//! wrong, missing, replayed on another URL, behind a trusted proxy) on the
//! webhook and the stream upgrade, garbage on a live stream, and the
//! SIGTERM path of the real binary.

use calllock::config::Config;
use calllock::serve::Server;
use futures_util::{SinkExt, StreamExt};
use providers::twilio::signature;
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "12345";

async fn serve(f: impl FnOnce(&mut Config)) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config {
        database: dir.path().join("calls.db"),
        instance: "guards".into(),
        ..Config::default()
    };
    // The phones here speak the offline codec: never local Whisper, which
    // would hear its tones as whatever it guesses (installed in CI).
    cfg.speech.local = "off".into();
    cfg.sim.llm_latency_s = 0.0;
    cfg.sim.speech_chars_per_s = 60.0;
    f(&mut cfg);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    (Server::start(cfg, listener).await.unwrap(), dir)
}

fn form() -> Vec<(String, String)> {
    [
        ("CallSid", "CA0123456789abcdef0123456789abcdef"),
        ("From", "+15125550100"),
        ("To", "+15125550000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

async fn post_twiml(url: &str, sig: Option<&str>, headers: &[(&str, &str)]) -> (u16, String) {
    let mut req = reqwest::Client::new().post(url).form(&form());
    if let Some(s) = sig {
        req = req.header("X-Twilio-Signature", s);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn upgrade(url: &str, sig: Option<&str>) -> Result<(), String> {
    let mut req = url.into_client_request().unwrap();
    if let Some(s) = sig {
        req.headers_mut()
            .insert("X-Twilio-Signature", s.parse().unwrap());
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((mut ws, _)) => {
            let _ = ws.close(None).await;
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test]
async fn webhook_and_stream_signatures() {
    let (s, _d) = serve(|c| c.twilio.auth_token = TOKEN.into()).await;
    let base = format!("http://{}", s.addr);
    let url = format!("{base}/twiml");
    let good = signature::expected(TOKEN, &url, &form());
    let (status, body) = post_twiml(&url, Some(&good), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("<Stream url=\"ws://"), "{body}");
    // Wrong token, missing header, a signature made for another URL.
    let wrong = signature::expected("not-the-token", &url, &form());
    assert_eq!(post_twiml(&url, Some(&wrong), &[]).await.0, 403);
    assert_eq!(post_twiml(&url, None, &[]).await.0, 403);
    let other = signature::expected(TOKEN, "https://evil.example/twiml", &form());
    assert_eq!(post_twiml(&url, Some(&other), &[]).await.0, 403);
    // The stream upgrade is signed over its own ws:// URL, no params.
    let ws = format!("ws://{}/ws/twilio", s.addr);
    let ws_sig = signature::expected(TOKEN, &ws, &[]);
    upgrade(&ws, Some(&ws_sig)).await.expect("signed upgrade");
    assert!(upgrade(&ws, None).await.unwrap_err().contains("403"));
    let webhook_sig_replayed = good.clone();
    assert!(upgrade(&ws, Some(&webhook_sig_replayed))
        .await
        .unwrap_err()
        .contains("403"));
    // Forwarded headers mean nothing unless the proxy is trusted.
    let public = "https://calllock.example.com/twiml";
    let proxied = signature::expected(TOKEN, public, &form());
    let fwd = [
        ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", "calllock.example.com"),
    ];
    assert_eq!(post_twiml(&url, Some(&proxied), &fwd).await.0, 403);
    s.stop().await;
}

#[tokio::test]
async fn behind_a_trusted_proxy_the_public_url_is_signed() {
    let (s, _d) = serve(|c| {
        c.twilio.auth_token = TOKEN.into();
        c.serve.trusted_proxy = true;
    })
    .await;
    let url = format!("http://{}/twiml", s.addr);
    let public = "https://calllock.example.com/twiml";
    let proxied = signature::expected(TOKEN, public, &form());
    let fwd = [
        ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", "calllock.example.com"),
    ];
    let (status, body) = post_twiml(&url, Some(&proxied), &fwd).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("wss://calllock.example.com/ws/twilio"),
        "{body}"
    );
    // The local URL's signature no longer matches what Twilio signed.
    let local = signature::expected(TOKEN, &url, &form());
    assert_eq!(post_twiml(&url, Some(&local), &fwd).await.0, 403);
    s.stop().await;
}

#[tokio::test]
async fn twiml_escapes_the_caller_id() {
    let (s, _d) = serve(|_| {}).await;
    let url = format!(
        "http://{}/twiml?From=%22%3E%3CHangup%2F%3E&To=%2B15125550000",
        s.addr
    );
    let body = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert!(!body.contains("\"><Hangup/>"), "{body}");
    assert!(body.contains("&quot;&gt;&lt;Hangup/&gt;"), "{body}");
    s.stop().await;
}

/// Generated and mutated messages on a live stream: the call goes on, and
/// ends with a record. (The parser alone is fuzzed with 100,000 messages in
/// providers' tests/twilio_fuzz.rs, proptest.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_a_live_stream_never_kills_the_call() {
    let (s, _d) = serve(|_| {}).await;
    let ws_url = format!("ws://{}/ws/twilio", s.addr);
    let (ws, _) = tokio_tungstenite::connect_async(ws_url.as_str())
        .await
        .unwrap();
    let (mut tx, mut rx) = ws.split();
    let sid = "CAfeedfacefeedfacefeedfacefeedface";
    // Media before start, then a proper start, then a duplicate start.
    let media = |payload: &str| {
        json!({"event": "media", "sequenceNumber": "3", "streamSid": "MZ1",
               "media": {"track": "inbound", "chunk": "1", "timestamp": "0", "payload": payload}})
        .to_string()
    };
    let start = json!({"event": "start", "sequenceNumber": "1", "streamSid": "MZ1",
        "start": {"streamSid": "MZ1", "accountSid": "AC1", "callSid": sid, "tracks": ["inbound"],
                  "customParameters": {"From": "+15125550999"},
                  "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}})
    .to_string();
    tx.send(Message::Text(media("/w==").into())).await.unwrap();
    tx.send(Message::Text(start.clone().into())).await.unwrap();
    tx.send(Message::Text(start.into())).await.unwrap();
    // Count the agent audio the server sends back.
    let media_out = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = media_out.clone();
    let reader = tokio::spawn(async move {
        while let Some(Ok(m)) = rx.next().await {
            if let Message::Text(t) = m {
                if t.as_str().contains("\"media\"") {
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    });
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let templates = [
        media("////"),
        json!({"event": "mark", "mark": {"name": "u9:100:1"}}).to_string(),
        json!({"event": "dtmf", "dtmf": {"digit": "5"}}).to_string(),
        json!({"event": "media", "media": {"payload": 5}}).to_string(),
        json!({"event": "nope"}).to_string(),
    ];
    let mut sent = 0usize;
    for i in 0..100_000u64 {
        let r = next();
        let msg = match r % 8 {
            0 => Message::Binary(vec![(r & 0xFF) as u8; (r % 64) as usize].into()),
            1 => Message::Text("not json {".into()),
            2 => Message::Text(media("%%%not-base64").into()),
            3 => Message::Text(json!({"event": "media", "media": {"payload": "A".repeat(((r >> 8) % 4000) as usize)}}).to_string().into()),
            4 => {
                let t = &templates[(r >> 5) as usize % templates.len()];
                let mut b = t.clone().into_bytes();
                if !b.is_empty() {
                    let at = (r >> 16) as usize % b.len();
                    b[at] = (r >> 24) as u8;
                }
                Message::Text(String::from_utf8_lossy(&b).into_owned().into())
            }
            5 => Message::Text(json!({"sequenceNumber": i, "streamSid": null}).to_string().into()),
            _ => Message::Text(templates[(r >> 3) as usize % templates.len()].clone().into()),
        };
        if tx.send(msg).await.is_err() {
            break;
        }
        sent += 1;
    }
    assert_eq!(sent, 100_000, "the server kept the socket open");
    // The call goes on: the caller speaks and the agent answers.
    let quiet = |n: &std::sync::atomic::AtomicUsize| n.load(std::sync::atomic::Ordering::Relaxed);
    let mut before = quiet(&media_out);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = quiet(&media_out);
        if now == before {
            break;
        }
        before = now;
    }
    let (speech, _) = voice::offline::codec::encode_mulaw("my AC stopped cooling last night", 60.0);
    let silence = vec![0xFFu8; 160 * 60];
    use base64::Engine as _;
    // A second of line silence first: it closes whatever the garbage's
    // loud frames left open, as a real line would between words.
    for chunk in silence[..8000]
        .chunks(160)
        .chain(speech.chunks(160))
        .chain(silence.chunks(160))
    {
        let payload = base64::engine::general_purpose::STANDARD.encode(chunk);
        tx.send(Message::Text(media(&payload).into()))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The server first reads what is left of the 100,000 messages (it may
    // be many seconds behind on a loaded two-core machine: this test runs
    // beside the others of its file, in a debug build), then the line.
    // What matters is that the call lives on, not how fast.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while quiet(&media_out) == before {
        if tokio::time::Instant::now() >= deadline {
            // Say what the call did: close the line and read its record.
            let _ = tx.close().await;
            let mut record = None;
            for _ in 0..150 {
                record = s.store().get_call(sid).await.unwrap();
                if record.as_ref().is_some_and(|r| r.ended_at.is_some()) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let what = record.map(|r| {
                format!(
                    "ended in {} ({}); transcript: {}",
                    r.final_state, r.end_call_reason, r.transcript
                )
            });
            panic!("the agent never answered after the garbage; the call: {what:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A huge frame over the size limit: the socket may close; the call ends.
    let _ = tx
        .send(Message::Text("x".repeat(2 * 1024 * 1024).into()))
        .await;
    let _ = tx.close().await;
    let _ = tokio::time::timeout(Duration::from_secs(10), reader).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(r) = s.store().get_call(sid).await.unwrap() {
            if r.ended_at.is_some() {
                assert_eq!(r.phone, "+15125550999");
                // The line after the garbage was heard as said.
                let said = r.transcript.to_string();
                assert!(said.contains("my AC stopped cooling"), "{said}");
                break;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "no record");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    s.stop().await;
}

#[tokio::test]
async fn serve_refuses_a_public_address_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("none.toml"), "").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_calllock"))
        // The offline speech codec, which the phones here speak.
        .env("CALLLOCK_LOCAL_SPEECH", "off")
        .args(["serve", "--bind", "0.0.0.0", "--port", "0"])
        .env("CALLLOCK_DATABASE", dir.path().join("x.db"))
        .env_remove("TWILIO_AUTH_TOKEN")
        .env("CALLLOCK_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-unsigned"), "{err}");
}

/// The real binary: SIGTERM with a live call drains, lets the call go on
/// for the grace period, then ends it politely with a callback and exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_a_live_call() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("calllock.toml");
    std::fs::write(
        &conf,
        "[serve]\nport = 0\nshutdown_grace_s = 1.0\n[sim]\nllm_latency_s = 0.0\nspeech_chars_per_s = 60.0\n",
    )
    .unwrap();
    let db = dir.path().join("calls.db");
    let (child, url) = spawn_serve(&conf, &db);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = calllock::dial::DialOptions {
        url,
        from: "+15125550444".into(),
        to: "+15125550000".into(),
        auth_token: None,
        chars_per_second: 60.0,
        speech: Default::default(),
        record: None,
    };
    let phone = match calllock::dial::place_call(&opts, tx).await.unwrap() {
        calllock::dial::Answer::Connected(p) => p,
        calllock::dial::Answer::TurnedAway(t) => panic!("{t}"),
    };
    let sid = phone.call_sid.clone();
    // The greeting plays; then SIGTERM.
    let mut heard = Vec::new();
    while let Some(e) = rx.recv().await {
        match e {
            calllock::dial::phone::PhoneEvent::AgentQuiet => break,
            calllock::dial::phone::PhoneEvent::AgentWord(w) => heard.push(w),
            _ => {}
        }
    }
    assert!(!heard.is_empty());
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let log = tokio::time::timeout(Duration::from_secs(20), phone.finished())
        .await
        .expect("the call ended");
    assert!(!log.caller_hung_up);
    assert!(
        log.heard_text().contains("call you back"),
        "{}",
        log.heard_text()
    );
    let mut child = child;
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    let store = store::Store::connect(db.to_str().unwrap()).await.unwrap();
    let rec = store.get_call(&sid).await.unwrap().expect("a record");
    assert_eq!(rec.final_state, "callback");
    let cbs = store.open_callbacks(10).await.unwrap();
    assert!(cbs.iter().any(|c| c.phone == "+15125550444"), "{cbs:?}");
}

/// `calllock dial --script` against a `calllock serve`, both real binaries
/// sharing one database: the agent's words print as they play, then the
/// outcome the server recorded. The server logs JSON (`--log-format json`
/// via its env): every line an object, the call's lines naming it, the
/// metrics token never written, and no caller's words or whole number.
#[test]
fn dial_drives_a_replay_script_against_a_live_server() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("calllock.toml");
    std::fs::write(
        &conf,
        "[serve]\nport = 0\nmetrics_token = \"tok-s3cret-42\"\n[sim]\nllm_latency_s = 0.0\nspeech_chars_per_s = 60.0\n",
    )
    .unwrap();
    let db = dir.path().join("calls.db");
    let script = dir.path().join("call.jsonl");
    // The caller stays on the line past the 1.5 s dead-air budget before
    // hanging up, so the answer to its last line is heard even when that
    // line came while the agent was still finishing the one before (the
    // tail of that line would otherwise pass for the answer).
    std::fs::write(
        &script,
        "{\"caller\": \"Hi, my AC stopped cooling last night\"}\n\
         {\"caller\": \"No, nothing like that\"}\n\
         {\"silence\": 2}\n\
         {\"hangup\": true}\n",
    )
    .unwrap();
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let (mut server, url) = spawn_serve_logging(
        &conf,
        &db,
        log.into(),
        &[("CALLLOCK_LOG_FORMAT", "json"), ("CALLLOCK_LOG", "info")],
    );
    // The container health check's command.
    let health = std::process::Command::new(env!("CARGO_BIN_EXE_calllock"))
        .args(["health", "--url", &url])
        .output()
        .unwrap();
    assert!(health.status.success(), "{health:?}");
    assert_eq!(String::from_utf8_lossy(&health.stdout).trim(), "ok");
    let (stdout, stderr) = dial_script(&mut server, &url, &script, &conf, &db, &[]);
    assert!(
        stdout.contains("agent:  Thanks for calling ACE Cooling"),
        "{stdout}"
    );
    assert!(stdout.contains("caller: No, nothing like that"), "{stdout}");
    assert!(stdout.contains("What's the ZIP code"), "{stdout}");
    assert!(stdout.contains("outcome: "), "{stdout}\n{stderr}");
    assert!(stdout.contains("(state service_area"), "{stdout}");

    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!log.contains("tok-s3cret-42"), "a secret in the log");
    // Issue 22: at the image's log level (`info`) a server's log holds no
    // caller's words and no whole phone number (the transcript dump is
    // withheld; numbers are shown by their last four digits).
    assert!(
        !log.contains("TRANSCRIPT_DUMP"),
        "a transcript in the log: {log}"
    );
    assert!(
        !log.contains("stopped cooling"),
        "the caller's words in the log: {log}"
    );
    assert!(
        !log.contains("5125559876"),
        "the caller's number in the log: {log}"
    );
    assert!(
        log.contains("…9876"),
        "the call's start names the caller's last digits: {log}"
    );
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let sid = stderr
        .lines()
        .find_map(|l| l.strip_prefix("connected: call "))
        .or_else(|| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix("connected: call "))
        })
        .unwrap_or_else(|| panic!("no call id in {stdout}\n{stderr}"))
        .trim();
    let of_call: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["span"]["call_id"] == sid)
        .collect();
    assert!(
        of_call
            .iter()
            .any(|l| l["fields"]["message"] == "call ended"),
        "no 'call ended' line in the call's span: {log}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l["level"].is_string() && l["timestamp"].is_string()),
        "{log}"
    );
}

/// Issue 27, point 1 (logs): a caller line with control characters, ANSI
/// escapes and bidi overrides, said to the real `calllock serve` at its
/// most talkative (`debug`, the transcript dump on), reaches neither the
/// server's log nor `dial`'s output as anything but printable text.
#[test]
fn escapes_in_a_caller_line_never_reach_the_servers_log() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("calllock.toml");
    std::fs::write(
        &conf,
        "[serve]\nport = 0\n[sim]\nllm_latency_s = 0.0\nspeech_chars_per_s = 60.0\n",
    )
    .unwrap();
    let db = dir.path().join("calls.db");
    let script = dir.path().join("call.jsonl");
    let line =
        "my \u{1b}[2J\u{1b}[31mAC \u{202E}stopped\u{202C} cooling\u{7} last\u{0} night\u{9b}1m\r";
    std::fs::write(
        &script,
        format!(
            "{}\n{{\"silence\": 2}}\n{{\"hangup\": true}}\n",
            json!({ "caller": line })
        ),
    )
    .unwrap();
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let (mut server, url) = spawn_serve_logging(
        &conf,
        &db,
        log.into(),
        &[
            ("CALLLOCK_LOG", "debug"),
            ("CALLLOCK_LOG_TRANSCRIPTS", "on"),
        ],
    );
    let (stdout, stderr) = dial_script(
        &mut server,
        &url,
        &script,
        &conf,
        &db,
        &[("CALLLOCK_LOG", "debug")],
    );
    let log = std::fs::read_to_string(&log_path).unwrap();
    // The call was heard, and its dump written: the words are in the log.
    assert!(log.contains("TRANSCRIPT_DUMP|1/"), "{log}");
    assert!(log.contains("stopped cooling"), "{log}");
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    for (what, text) in [
        ("the server's log", &log),
        ("dial's output", &stdout),
        ("dial's log", &stderr),
    ] {
        let bad: Vec<(usize, char)> = text
            .char_indices()
            .filter(|(_, c)| unsafe_char(*c))
            .take(5)
            .collect();
        assert!(bad.is_empty(), "{what} carries {bad:?}:\n{text}");
    }
}

/// `calllock dial --script` against `server` at `url` (sharing its config
/// and database, `env` set), then SIGTERM to the server; the dialer must
/// succeed. Returns its stdout and stderr.
fn dial_script(
    server: &mut std::process::Child,
    url: &str,
    script: &std::path::Path,
    conf: &std::path::Path,
    db: &std::path::Path,
    env: &[(&str, &str)],
) -> (String, String) {
    let dial = std::process::Command::new(env!("CARGO_BIN_EXE_calllock"))
        // The offline speech codec, which the phones here speak.
        .env("CALLLOCK_LOCAL_SPEECH", "off")
        // The caller waits out the agent's turn: a pause longer than any
        // the agent may leave inside one (the 1.5 s dead-air budget), so a
        // reply that follows "One moment." late on a busy machine is not
        // talked over.
        .args(["dial", "--url", url, "--pause", "1.6", "--script"])
        .arg(script)
        .env("CALLLOCK_CONFIG", conf)
        .env("CALLLOCK_DATABASE", db)
        .env_remove("TWILIO_AUTH_TOKEN")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&dial.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&dial.stderr).into_owned();
    assert!(dial.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// Start the `calllock serve` binary on config `conf` (with `port = 0`) and
/// database `db`; returns it and its `http://` URL (its first stdout line).
fn spawn_serve(conf: &std::path::Path, db: &std::path::Path) -> (std::process::Child, String) {
    spawn_serve_logging(conf, db, std::process::Stdio::null(), &[])
}

/// [`spawn_serve`] with its log (stderr) going to `log`, and `env` set.
fn spawn_serve_logging(
    conf: &std::path::Path,
    db: &std::path::Path,
    log: std::process::Stdio,
    env: &[(&str, &str)],
) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_calllock"))
        // The offline speech codec, which the phones here speak.
        .env("CALLLOCK_LOCAL_SPEECH", "off")
        .arg("serve")
        .env("CALLLOCK_CONFIG", conf)
        .env("CALLLOCK_DATABASE", db)
        .env_remove("TWILIO_AUTH_TOKEN")
        .env_remove("PORT")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    // Keep reading so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    (child, url)
}

/// A WebSocket upgrade with extra headers (as a browser page sends them).
async fn upgrade_with(url: &str, headers: &[(&str, &str)]) -> Result<(), String> {
    let mut req = url.into_client_request().unwrap();
    for (k, v) in headers {
        let name: tokio_tungstenite::tungstenite::http::HeaderName = k.parse().unwrap();
        req.headers_mut().insert(name, v.parse().unwrap());
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((mut ws, _)) => {
            let _ = ws.close(None).await;
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Issue 22, finding 4: on a server without Twilio signatures, a page on
/// another site could make the operator's browser place calls (a record,
/// dashboard deliveries). Browser requests are refused; Twilio and
/// `calllock dial` (no `Origin`, no `Sec-Fetch-Site`) still get through.
#[tokio::test]
async fn a_page_on_another_site_cannot_place_a_call() {
    let (s, _d) = serve(|_| {}).await;
    let twiml = format!("http://{}/twiml", s.addr);
    let ws = format!("ws://{}/ws/twilio", s.addr);
    for headers in [
        vec![("Origin", "https://evil.example")],
        vec![("Origin", "null")],
        vec![("Sec-Fetch-Site", "cross-site")],
        vec![("Sec-Fetch-Site", "same-site")],
    ] {
        let (status, body) = post_twiml(&twiml, None, &headers).await;
        assert_eq!(status, 403, "{headers:?}: {body}");
        assert!(!body.contains("<Stream"), "{body}");
        let refused = upgrade_with(&ws, &headers).await.unwrap_err();
        assert!(refused.contains("403"), "{headers:?}: {refused}");
    }
    // Nothing was placed: no call in the database.
    assert_eq!(s.store().count_calls().await.unwrap(), 0);
    // A request typed into the address bar, and Twilio itself, pass.
    let (status, body) = post_twiml(&twiml, None, &[("Sec-Fetch-Site", "none")]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post_twiml(&twiml, None, &[]).await;
    assert_eq!(status, 200);
    assert!(body.contains("<Stream url="), "{body}");
    upgrade_with(&ws, &[]).await.unwrap();
    s.drain();
    s.stop().await;

    // A signed server needs a signature no page can forge; a browser's
    // Origin alone does not refuse a correctly signed request.
    let (s, _d) = serve(|c| c.twilio.auth_token = TOKEN.into()).await;
    let twiml = format!("http://{}/twiml", s.addr);
    let sig = signature::expected(TOKEN, &twiml, &form());
    let (status, _) = post_twiml(&twiml, Some(&sig), &[("Origin", "https://x.example")]).await;
    assert_eq!(status, 200);
    s.drain();
    s.stop().await;
}

/// One call on a raw Media Streams socket as Twilio places it: `start`
/// with `sid`, `frames` 20 ms of silence, then `stop`; the media messages
/// the server sent back.
async fn raw_call(addr: std::net::SocketAddr, sid: &str, frames: usize) -> usize {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws/twilio"))
        .await
        .unwrap();
    let (mut tx, mut rx) = ws.split();
    let start = json!({"event": "start", "sequenceNumber": "1", "streamSid": "MZ1",
        "start": {"streamSid": "MZ1", "accountSid": "AC1", "callSid": sid, "tracks": ["inbound"],
                  "customParameters": {"From": "+15125550123"},
                  "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}});
    tx.send(Message::Text(start.to_string().into()))
        .await
        .unwrap();
    let heard = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = heard.clone();
    let reader = tokio::spawn(async move {
        while let Some(Ok(m)) = rx.next().await {
            match m {
                Message::Text(t) if t.as_str().contains("\"media\"") => {
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Message::Close(_) => break,
                _ => {}
            }
        }
    });
    let silence = base64_silence();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    for i in 0..frames {
        tick.tick().await;
        let media = json!({"event": "media", "sequenceNumber": (i + 2).to_string(), "streamSid": "MZ1",
            "media": {"track": "inbound", "chunk": (i + 1).to_string(),
                      "timestamp": (i * 20).to_string(), "payload": silence}});
        if tx
            .send(Message::Text(media.to_string().into()))
            .await
            .is_err()
        {
            break;
        }
    }
    let stop = json!({"event": "stop", "sequenceNumber": "9999", "streamSid": "MZ1",
        "stop": {"accountSid": "AC1", "callSid": sid}});
    let _ = tx.send(Message::Text(stop.to_string().into())).await;
    // The server closes the socket once the call is over.
    let _ = tokio::time::timeout(Duration::from_secs(30), reader).await;
    heard.load(std::sync::atomic::Ordering::Relaxed)
}

fn base64_silence() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode([0xFFu8; 160])
}

/// Issue 22, finding 5: a new stream whose `callSid` already has a call
/// replaced the old call's recording, rewrote its times and ran its
/// post-call work again. It is refused now: the socket is closed, the
/// earlier call — finished or still live — is left exactly as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_call_id_leaves_the_earlier_call_as_it_was() {
    let (s, d) = serve(|_| {}).await;
    let sid = "CA00000000000000000000000000000022";
    // The first call: the greeting plays to it, it hangs up after 3 s.
    let heard = raw_call(s.addr, sid, 150).await;
    assert!(heard > 0, "the first call heard the greeting");
    let first = loop {
        if let Some(r) = s.store().get_call(sid).await.unwrap() {
            if r.ended_at.is_some() && !r.record.is_null() {
                break r;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let wav = d.path().join("recordings").join(format!("{sid}.wav"));
    let wav_len = || std::fs::metadata(&wav).map(|m| m.len()).unwrap_or(0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while wav_len() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no recording at {wav:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first_len = wav_len();

    // The same callSid again: refused, nothing played, nothing changed.
    let heard = raw_call(s.addr, sid, 25).await;
    assert_eq!(heard, 0, "a refused stream hears nothing");
    // Its slot is given back once the socket is closed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while s.live_calls() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the refused stream holds a slot"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let again = s.store().get_call(sid).await.unwrap().unwrap();
    assert_eq!(again, first, "the earlier call's record is untouched");
    assert_eq!(
        wav_len(),
        first_len,
        "the earlier call's recording is untouched"
    );
    assert_eq!(s.store().count_calls().await.unwrap(), 1);

    // While a call is live, a second stream with its callSid is refused
    // and the live call goes on to its own end.
    let live_sid = "CA00000000000000000000000000000023";
    let addr = s.addr;
    let live = tokio::spawn(async move { raw_call(addr, live_sid, 150).await });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while s.store().call_summary(live_sid).await.unwrap().is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the live call never began"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(raw_call(s.addr, live_sid, 10).await, 0);
    assert!(live.await.unwrap() > 0, "the live call kept its audio");
    let rec = loop {
        if let Some(r) = s.store().get_call(live_sid).await.unwrap() {
            if r.ended_at.is_some() && !r.record.is_null() {
                break r;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(rec.phone, "+15125550123");
    assert_eq!(s.store().count_calls().await.unwrap(), 2);
    s.drain();
    s.stop().await;
}

/// Issue 22, finding 10: slow connections were held 70 s and more. A
/// client that never finishes its request's headers is cut off after
/// `serve::listen::HEADER_READ_TIMEOUT`; the server keeps answering.
#[tokio::test]
async fn a_client_that_never_finishes_its_request_is_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (s, _d) = serve(|_| {}).await;
    let mut slow = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let t0 = tokio::time::Instant::now();
    let mut buf = [0u8; 256];
    // The server answers (408) or just closes; either way the socket ends.
    let limit = calllock::serve::listen::HEADER_READ_TIMEOUT * 3;
    let ended = tokio::time::timeout(limit, async {
        loop {
            match slow.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "a slow client was held over {limit:?}");
    assert!(t0.elapsed() >= calllock::serve::listen::HEADER_READ_TIMEOUT - Duration::from_secs(1));
    let ok = reqwest::get(format!("http://{}/health", s.addr))
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    s.drain();
    s.stop().await;
}

/// Issue 22, finding 10: `/health?verbose=1` showed the database, the
/// vendors and the signature mode to anyone. Load balancers keep plain
/// `/health`; the report needs the operator (here: the metrics token, or
/// a client on the server's own machine with no proxy in between).
#[tokio::test]
async fn the_full_health_report_is_for_the_operator_only() {
    let (s, _d) = serve(|c| c.serve.metrics_token = "m-token".into()).await;
    let url = format!("http://{}/health", s.addr);
    let client = reqwest::Client::new();
    let plain = client.get(&url).send().await.unwrap();
    assert_eq!(plain.status(), 200);
    assert_eq!(plain.text().await.unwrap(), "ok");
    // Through a proxy (forwarding headers): refused, says what to do.
    let r = client
        .get(format!("{url}?verbose=1"))
        .header("X-Forwarded-For", "203.0.113.9")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let body = r.text().await.unwrap();
    assert!(body.contains("metrics token"), "{body}");
    assert!(!body.contains("calls.db"), "{body}");
    // With the metrics token: the report.
    let r = client
        .get(format!("{url}?verbose=1"))
        .header("X-Forwarded-For", "203.0.113.9")
        .bearer_auth("m-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["status"], "ok");
    // On the server's own machine, directly: the report (`calllock dial`
    // reads what the server hears from it).
    let v: serde_json::Value = client
        .get(format!("{url}?verbose=1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["status"], "ok");
    s.drain();
    s.stop().await;
}

/// A `start` for `sid` on stream `MZ1`, as Twilio sends it.
fn start_of(sid: &str) -> String {
    json!({"event": "start", "sequenceNumber": "1", "streamSid": "MZ1",
        "start": {"streamSid": "MZ1", "accountSid": "AC1", "callSid": sid, "tracks": ["inbound"],
                  "customParameters": {"From": "+15125550123"},
                  "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}})
    .to_string()
}

/// The call's finished record (waits for post-call work).
async fn finished_record(s: &Server, sid: &str) -> store::CallRecord {
    // Post-call work follows the end at once; the bound only stops a
    // broken build from hanging the suite.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(r) = s.store().get_call(sid).await.unwrap() {
            if r.ended_at.is_some() {
                return r;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no record for {sid}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Issue 27, point 4: a message over the size limit closed the socket
/// with no close code (the client saw 1005) and the call was recorded as
/// the caller's hang-up. Now the close says 1009 (RFC 6455: message too
/// big), the record says the line broke, and an unsettled call is owed a
/// callback, as after any cut the caller was not told about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_size_limit_closes_with_1009_and_the_record_says_so() {
    let (s, _d) = serve(|_| {}).await;
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws/twilio", s.addr))
        .await
        .unwrap();
    let (mut tx, mut rx) = ws.split();
    let sid = "CA1009feedfacefeedfacefeedfaceface";
    tx.send(Message::Text(start_of(sid).into())).await.unwrap();
    let big = json!({"event": "media", "streamSid": "MZ1",
        "media": {"payload": "A".repeat(providers::twilio::media_streams::MAX_MESSAGE_BYTES + 1)}});
    tx.send(Message::Text(big.to_string().into()))
        .await
        .unwrap();
    let close = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(m) = rx.next().await {
            match m {
                Ok(Message::Close(frame)) => return frame,
                Ok(_) => {}
                Err(e) => panic!("the socket broke instead of closing: {e}"),
            }
        }
        None
    })
    .await
    .expect("the server closes the socket");
    let frame = close.expect("a close frame with a code, not 1005");
    assert_eq!(u16::from(frame.code), 1009, "{frame:?}");
    let r = finished_record(&s, sid).await;
    assert_eq!(r.record["ended_by"], "line_error", "{}", r.record);
    assert_eq!(
        r.final_state, "callback",
        "an unsettled call cut off is owed a callback"
    );
    s.stop().await;
}

/// Issue 27, point 4: a `stop` naming another stream ended the current
/// call. It is ignored (and counted): the call goes on, the caller is
/// answered, and only its own `stop` ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_for_another_stream_is_ignored_and_counted() {
    let (s, _d) = serve(|_| {}).await;
    let sid = "CAf0e1f0e1f0e1f0e1f0e1f0e1f0e1f0e1";
    let (mut tx, media, reader) = answered_call(&s, sid).await;
    let before = media.load(std::sync::atomic::Ordering::Relaxed);
    let foreign = json!({"event": "stop", "sequenceNumber": "40", "streamSid": "MZ2",
        "stop": {"accountSid": "AC1", "callSid": "CAsomeoneelse"}});
    tx.send(Message::Text(foreign.to_string().into()))
        .await
        .unwrap();
    // Still this call: the caller speaks and the agent answers.
    let (speech, _) = voice::offline::codec::encode_mulaw("my AC stopped cooling last night", 60.0);
    say_and_wait_for_answer(&mut tx, &speech, &media, before).await;
    assert!(
        !reader.is_finished(),
        "the server closed the call on another stream's stop"
    );
    hang_up(&mut tx, sid).await;
    let r = finished_record(&s, sid).await;
    assert_eq!(r.record["ended_by"], "caller", "{}", r.record);
    assert!(
        r.transcript.to_string().contains("my AC stopped cooling"),
        "{}",
        r.transcript
    );
    let scraped = calllock::metrics::handle().expect("the recorder").render();
    assert!(
        scraped
            .lines()
            .any(|l| l
                .starts_with("calllock_stream_messages_ignored_total{reason=\"foreign_stream\"}")),
        "{scraped}"
    );
    let _ = tokio::time::timeout(Duration::from_secs(10), reader).await;
    s.stop().await;
}

/// A live call on a raw socket: `start`, then the greeting played out
/// over line silence. Returns the sender and the count of agent media.
async fn answered_call(
    s: &Server,
    sid: &str,
) -> (
    PhoneTx,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    tokio::task::JoinHandle<()>,
) {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws/twilio", s.addr))
        .await
        .unwrap();
    let (mut tx, mut rx) = ws.split();
    tx.send(Message::Text(start_of(sid).into())).await.unwrap();
    let media_out = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = media_out.clone();
    let reader = tokio::spawn(async move {
        while let Some(Ok(m)) = rx.next().await {
            match m {
                Message::Text(t) if t.as_str().contains("\"media\"") => {
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Message::Close(_) => break,
                _ => {}
            }
        }
    });
    let sent = |n: &std::sync::atomic::AtomicUsize| n.load(std::sync::atomic::Ordering::Relaxed);
    let mut before = sent(&media_out);
    loop {
        for _ in 0..25 {
            tx.send(Message::Text(media_of(&[0xFF; 160]).into()))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let now = sent(&media_out);
        if now == before && now > 0 {
            break;
        }
        before = now;
    }
    (tx, media_out, reader)
}

type PhoneTx = futures_util::stream::SplitSink<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    Message,
>;

/// Say `audio` (µ-law, then 1.2 s of silence) in real time, and wait for
/// the agent's answer: more agent media than `before`.
async fn say_and_wait_for_answer(
    tx: &mut PhoneTx,
    audio: &[u8],
    media: &std::sync::atomic::AtomicUsize,
    before: usize,
) {
    for chunk in audio.chunks(160).chain([0xFFu8; 160 * 60].chunks(160)) {
        tx.send(Message::Text(media_of(chunk).into()))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The answer follows within the engine's budgets; the bound only stops
    // a broken build from hanging the suite.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while media.load(std::sync::atomic::Ordering::Relaxed) == before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the agent never answered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The caller hangs up: Twilio's `stop` for `sid`.
async fn hang_up(tx: &mut PhoneTx, sid: &str) {
    let stop = json!({"event": "stop", "streamSid": "MZ1", "stop": {"callSid": sid}});
    tx.send(Message::Text(stop.to_string().into()))
        .await
        .unwrap();
}

fn media_of(chunk: &[u8]) -> String {
    use base64::Engine as _;
    json!({"event": "media", "streamSid": "MZ1", "media": {"track": "inbound",
        "payload": base64::engine::general_purpose::STANDARD.encode(chunk)}})
    .to_string()
}

/// Issue 27, point 1: random µ-law noise on the line was decoded as a
/// caller line full of control characters, moved the call on (a
/// `lookup_caller`) and was stored. Noise at several levels now yields no
/// caller line (so no tool call either): the caller's real line after it
/// is the call's only one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noise_on_the_line_is_not_words() {
    let (s, _d) = serve(|_| {}).await;
    let sid = "CAn015en015en015en015en015en015e0";
    let (mut tx, media, reader) = answered_call(&s, sid).await;
    let mut seed = 0x005E_ED0F_114E_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for level in [2u64, 16, 64, 128] {
        // Two seconds at this level: codes near silence up to full scale.
        for i in 0..100 {
            let mut frame: Vec<u8> = (0..160)
                .map(|_| {
                    let r = next();
                    (0x7F - ((r % level) as u8 & 0x7F)) | ((r >> 8) as u8 & 0x80)
                })
                .collect();
            if i % 8 == 0 {
                // Noise that happens to start like a word (one frame in
                // 256 of full-scale noise does): the mark and a length,
                // right after a dropout, so the recogniser's frames line up
                // with it.
                frame[0] = 0x80;
                frame[1] = (next() % 128) as u8;
                tx.send(Message::Text(media_of(&[0xFF; 160]).into()))
                    .await
                    .unwrap();
            }
            tx.send(Message::Text(media_of(&frame).into()))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    // Then the caller speaks: the agent answers that line, and it is the
    // call's only caller line (a noise "line" would have come first).
    let before = media.load(std::sync::atomic::Ordering::Relaxed);
    let said = "my AC stopped cooling last night";
    let (speech, _) = voice::offline::codec::encode_mulaw(said, 60.0);
    let mut audio = vec![0xFFu8; 160 * 50];
    audio.extend(speech);
    say_and_wait_for_answer(&mut tx, &audio, &media, before).await;
    hang_up(&mut tx, sid).await;
    let r = finished_record(&s, sid).await;
    let callers: Vec<&Value> = r
        .transcript
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["role"] == "user")
        .collect();
    assert_eq!(callers.len(), 1, "noise became caller lines: {callers:?}");
    assert_eq!(callers[0]["content"], said);
    let events = s.store().events(sid).await.unwrap();
    let heard: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind == "caller")
        .map(|e| &e.data)
        .collect();
    assert_eq!(heard.len(), 1, "noise moved the call on: {heard:?}");
    let _ = tokio::time::timeout(Duration::from_secs(10), reader).await;
    s.stop().await;
}

/// Issue 27, point 1: a caller line with control characters, ANSI escapes
/// and bidi overrides is kept as printable text, so the record, the
/// terminal (`calls show`, `transcript`) and the dashboard never receive
/// them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapes_in_a_caller_line_never_reach_the_record_or_the_terminal() {
    let (s, d) = serve(|_| {}).await;
    let sid = "CAe5c0e5c0e5c0e5c0e5c0e5c0e5c0e5c0";
    let (mut tx, media_out, reader) = answered_call(&s, sid).await;
    let before = media_out.load(std::sync::atomic::Ordering::Relaxed);
    let line =
        "my \u{1b}[2J\u{1b}[31mAC \u{202E}stopped\u{202C} cooling\u{7} last\u{0} night\u{9b}1m";
    let (speech, _) = voice::offline::codec::encode_mulaw(line, 60.0);
    say_and_wait_for_answer(&mut tx, &speech, &media_out, before).await;
    hang_up(&mut tx, sid).await;
    let r = finished_record(&s, sid).await;
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    let transcript = r.transcript.to_string();
    let record = r.record.to_string();
    for (what, text) in [("transcript", &transcript), ("record", &record)] {
        // JSON escapes control characters as \u00XX; read the values back.
        let v: Value = serde_json::from_str(text).unwrap();
        let mut strings = Vec::new();
        collect_strings(&v, &mut strings);
        for s in &strings {
            assert!(!s.chars().any(unsafe_char), "{what} keeps {s:?}");
        }
    }
    assert!(transcript.contains("stopped cooling"), "{transcript}");
    let events = s.store().events(sid).await.unwrap();
    for e in &events {
        let mut strings = Vec::new();
        collect_strings(&e.data, &mut strings);
        assert!(
            !strings.iter().any(|s| s.chars().any(unsafe_char)),
            "journal event {} keeps {:?}",
            e.kind,
            e.data
        );
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), reader).await;
    s.stop().await;
    // The operator's terminal.
    let db = d.path().join("calls.db");
    for args in [vec!["calls", "show", sid], vec!["transcript", sid]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_calllock"))
            .arg("--db")
            .arg(&db)
            .args(&args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(shown.contains("stopped cooling"), "{args:?}: {shown}");
        assert!(
            !shown.chars().any(unsafe_char),
            "{args:?} printed {shown:?}"
        );
    }
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k.clone());
            collect_strings(x, out)
        }),
        _ => {}
    }
}
