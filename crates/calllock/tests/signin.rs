//! The operator's sign-in on a real server: the password set by `calllock
//! operator password` (its hash in the database), the session cookie's
//! flags, the API through the session, CSRF on every change, sign-out, a
//! changed password ending old sessions, the limits on sign-ins (per
//! address even in parallel, per real client behind a trusted proxy, the
//! global back-off after a flood), and the outbox's "retry now".

#[path = "support/served.rs"]
mod served;

use serde_json::Value;
use served::*;

const PASSWORD: &str = "a long operator password";

struct Browser {
    base: String,
    client: reqwest::Client,
    cookie: Option<String>,
}

impl Browser {
    fn of(s: &Served) -> Browser {
        Browser {
            base: format!("http://{}", s.server.addr),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookie: None,
        }
    }

    async fn sign_in(&mut self, password: &str) -> reqwest::Response {
        self.sign_in_from(password, None).await
    }

    /// Sign in through a proxy that says the client is `forwarded_for`
    /// (the `X-Forwarded-For` header as sent).
    async fn sign_in_from(
        &mut self,
        password: &str,
        forwarded_for: Option<&str>,
    ) -> reqwest::Response {
        let mut r = self
            .client
            .post(format!("{}/login", self.base))
            .form(&[("password", password)]);
        if let Some(f) = forwarded_for {
            r = r.header("x-forwarded-for", f);
        }
        let r = r.send().await.unwrap();
        if let Some(c) = r.headers().get("set-cookie") {
            let c = c.to_str().unwrap();
            self.cookie = Some(c.split(';').next().unwrap().to_string());
        }
        r
    }

    fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut r = self.client.request(method, format!("{}{path}", self.base));
        if let Some(c) = &self.cookie {
            r = r.header("cookie", c);
        }
        r
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.req(reqwest::Method::GET, path).send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, csrf: Option<&str>) -> (u16, String) {
        let mut r = self.req(reqwest::Method::POST, path);
        if let Some(t) = csrf {
            r = r.header("x-csrf-token", t);
        }
        let r = r.send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }
}

/// `calllock operator password` (the real binary) on the server's database.
fn set_password(s: &Served, password: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_calllock"))
        .args(["operator", "password"])
        .env("CALLLOCK_DATABASE", &s.cfg.database)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_signs_in_uses_the_api_and_signs_out() {
    let s = serve_with(|_| {}).await;
    let mut b = Browser::of(&s);

    // No password yet: the form says what to run; nothing signs in.
    let form = b
        .req(reqwest::Method::GET, "/login")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(form.contains("calllock operator password"), "{form}");
    assert_eq!(b.sign_in("anything at all").await.status(), 503);

    let out = set_password(&s, "short");
    assert!(!out.status.success(), "a short password is refused");
    let out = set_password(&s, PASSWORD);
    assert!(out.status.success(), "{out:?}");
    let hash = s
        .server
        .store()
        .operator_password_hash()
        .await
        .unwrap()
        .unwrap();
    assert!(hash.starts_with("$argon2id$") && !hash.contains(PASSWORD));

    // Every page is refused without a session.
    for path in [
        "/api/calls",
        "/api/outbox",
        "/api/session",
        "/api/openapi.json",
    ] {
        assert_eq!(b.get(path).await.0, 401, "{path}");
    }

    // A wrong password: the form again, no cookie.
    let r = b.sign_in("not the password").await;
    assert_eq!(r.status(), 401);
    assert!(r.headers().get("set-cookie").is_none());

    // The right one: a session cookie, HttpOnly and SameSite=Strict (not
    // Secure over plain HTTP), and a redirect to the dashboard.
    let r = b.sign_in(PASSWORD).await;
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/");
    let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(set.starts_with("calllock_session="), "{set}");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(flag), "{flag}: {set}");
    }
    assert!(!set.contains("Secure"), "{set}");

    let (status, session) = b.get("/api/session").await;
    assert_eq!(status, 200);
    let csrf = session["csrf"].as_str().unwrap().to_string();
    assert_eq!(csrf.len(), 64);
    assert_eq!(b.get("/api/calls").await.0, 200);

    // A change: refused without the CSRF token or with a wrong one.
    let id = s
        .server
        .store()
        .outbox_enqueue(
            &store::NewOutboxItem {
                call_id: "CA_retry".into(),
                kind: store::OutboxKind::Job,
                target_url: "http://127.0.0.1:9/jobs".into(),
                payload: serde_json::json!({}),
            },
            chrono::Utc::now().timestamp() as f64 + 3600.0,
        )
        .await
        .unwrap();
    let retry = format!("/api/outbox/{id}/retry");
    assert_eq!(b.post(&retry, None).await.0, 403);
    assert_eq!(b.post(&retry, Some("0".repeat(64).as_str())).await.0, 403);
    // Done with it: attempted at once (and failed here: no dashboard is
    // configured), the answer says so.
    let (status, body) = b.post(&retry, Some(&csrf)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("attempted just now"), "{body}");
    let item = s.server.store().outbox_item(&id).await.unwrap().unwrap();
    assert_eq!(item.attempts, 1, "{item:?}");
    assert_eq!(
        b.post("/api/outbox/ob_nope/retry", Some(&csrf)).await.0,
        404
    );

    // Signing out needs the token too; then the cookie is worthless.
    assert_eq!(b.post("/logout", None).await.0, 403);
    assert_eq!(b.post("/logout", Some(&csrf)).await.0, 204);
    assert_eq!(b.get("/api/calls").await.0, 401);
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_sign_ins_are_limited_per_address() {
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    let s = serve_with(|c| c.serve.operator_password_hash = hash).await;
    let mut b = Browser::of(&s);
    for _ in 0..calllock::operator::FAILURES_PER_MINUTE {
        assert_eq!(b.sign_in("wrong password!").await.status(), 401);
    }
    // Refused now, even with the right password.
    assert_eq!(b.sign_in(PASSWORD).await.status(), 429);
    assert!(b.cookie.is_none());
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_an_https_proxy_the_cookie_is_secure() {
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    let s = serve_with(|c| {
        c.serve.operator_password_hash = hash;
        c.serve.public_url = "https://calllock.example.com".into();
        c.serve.api_token = "api-token-x".into();
    })
    .await;
    let mut b = Browser::of(&s);
    let r = b.sign_in(PASSWORD).await;
    assert_eq!(r.status(), 303);
    assert!(r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("; Secure"));
    // An API token is not ambient: a change needs no CSRF token with it
    // (404 here: nothing waits), and it has no session.
    let api = |m: reqwest::Method, path: &str| {
        b.client
            .request(m, format!("{}{path}", b.base))
            .bearer_auth("api-token-x")
    };
    let r = api(reqwest::Method::POST, "/api/outbox/ob_nope/retry")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = api(reqwest::Method::GET, "/api/session")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    s.server.stop().await;
}

/// `n` wrong passwords posted at once, `forwarded_for(i)` saying who sent
/// the `i`th (through a proxy); the statuses, in order.
async fn at_once(
    s: &Served,
    n: usize,
    forwarded_for: impl Fn(usize) -> Option<String>,
) -> Vec<u16> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let url = format!("http://{}/login", s.server.addr);
    // Every request is sent before any answer is awaited.
    let pending: Vec<_> = (0..n)
        .map(|i| {
            let mut r = client
                .post(&url)
                .form(&[("password", format!("wrong guess {i}"))]);
            if let Some(f) = forwarded_for(i) {
                r = r.header("x-forwarded-for", f);
            }
            tokio::spawn(r.send())
        })
        .collect();
    let mut statuses = Vec::new();
    for p in pending {
        statuses.push(p.await.unwrap().unwrap().status().as_u16());
    }
    statuses
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guesses_from_one_address_are_limited_even_in_parallel() {
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    let s = serve_with(|c| c.serve.operator_password_hash = hash).await;
    let statuses = at_once(&s, 40, |_| None).await;
    // Only five passwords were checked; the rest were refused before.
    let limit = calllock::operator::FAILURES_PER_MINUTE;
    assert_eq!(count(&statuses, 401), limit, "{statuses:?}");
    assert_eq!(count(&statuses, 429), 40 - limit, "{statuses:?}");
    let mut b = Browser::of(&s);
    let r = b.sign_in(PASSWORD).await;
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    assert!(r.text().await.unwrap().contains("Too many failed sign-ins"));
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_behind_a_trusted_proxy_cannot_lock_out_another() {
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    let s = serve_with(|c| {
        c.serve.operator_password_hash = hash;
        c.serve.trusted_proxy = true;
    })
    .await;
    let (attacker, owner) = ("198.51.100.7", "203.0.113.9");
    let mut b = Browser::of(&s);
    for _ in 0..calllock::operator::FAILURES_PER_MINUTE {
        let r = b.sign_in_from("wrong password!", Some(attacker)).await;
        assert_eq!(r.status(), 401);
    }
    assert_eq!(
        b.sign_in_from("wrong password!", Some(attacker))
            .await
            .status(),
        429
    );
    // Naming the owner first changes nothing: the proxy appended the
    // address that really connected, and only that one counts.
    let spoofed = format!("{owner}, {attacker}");
    assert_eq!(
        b.sign_in_from("wrong password!", Some(&spoofed))
            .await
            .status(),
        429
    );
    // The owner, behind the same proxy, signs in; so does anyone who
    // reached the proxy without a forwarded address.
    let r = b.sign_in_from(PASSWORD, Some(owner)).await;
    assert_eq!(r.status(), 303);
    assert_eq!(Browser::of(&s).sign_in(PASSWORD).await.status(), 303);
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_trusted_proxy_a_forwarded_address_changes_nothing() {
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    let s = serve_with(|c| c.serve.operator_password_hash = hash).await;
    let mut b = Browser::of(&s);
    for i in 0..calllock::operator::FAILURES_PER_MINUTE {
        let r = b
            .sign_in_from("wrong password!", Some(&format!("192.0.2.{i}")))
            .await;
        assert_eq!(r.status(), 401);
    }
    let r = b.sign_in_from(PASSWORD, Some("192.0.2.200")).await;
    assert_eq!(
        r.status(),
        429,
        "a new X-Forwarded-For per guess does not dodge the limit"
    );
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_can_sign_in_after_a_flood() {
    use calllock::operator::SignInLimits;
    use std::time::Duration;
    // In production a window is a minute: the owner waits at most that.
    assert!(SignInLimits::default().window <= Duration::from_secs(60));
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    let s = serve_with(|c| {
        c.serve.operator_password_hash = hash;
        c.serve.trusted_proxy = true;
        // A short window, so the test need not wait a minute, and a
        // global limit the flood reaches at once.
        c.serve.sign_in_window_s = 2.0;
        c.serve.sign_in_attempts_global = 10;
    })
    .await;
    let limits = SignInLimits::of(&s.cfg.serve);
    // 200 wrong passwords at once behind the proxy: most from addresses of
    // their own, every fourth from the proxy itself (no forwarded
    // address: the address the owner shares).
    let started = tokio::time::Instant::now();
    let statuses = at_once(&s, 200, |i| {
        (i % 4 != 0).then(|| format!("10.{}.{}.1", i / 250, i % 250))
    })
    .await;
    let ended = tokio::time::Instant::now();
    assert!(
        statuses.iter().all(|s| [401, 429, 503].contains(s)),
        "{statuses:?}"
    );
    assert!(
        count(&statuses, 429) > 0,
        "the back-off held the flood back: {statuses:?}"
    );
    // The global back-off: at most `global` guesses checked per window.
    let windows = (ended - started).as_secs_f64() / limits.window.as_secs_f64();
    let bound = (limits.global as f64 * (windows.floor() + 1.0)) as usize;
    assert!(
        count(&statuses, 401) <= bound,
        "{} checked: {statuses:?}",
        count(&statuses, 401)
    );
    // One window after the flood ended every counted attempt is over: the
    // owner, through the proxy like the flood, is let in at once.
    tokio::time::sleep_until(ended + limits.window).await;
    let mut owner = Browser::of(&s);
    let r = owner.sign_in(PASSWORD).await;
    let status = r.status();
    let page = r.text().await.unwrap_or_default();
    assert_eq!(status, 303, "{page}");
    assert_eq!(owner.get("/api/session").await.0, 200);
    s.server.stop().await;
}

/// Finding 3 when the flood does not end: a few addresses guessing slowly
/// keep the global back-off full for as long as they like. The owner's
/// browser, known from an earlier sign-in (its `calllock_device` cookie),
/// still signs in; a browser never seen waits; a forged cookie is nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owners_browser_signs_in_while_a_flood_goes_on() {
    let hash = calllock::operator::hash_password(PASSWORD).unwrap();
    let s = serve_with(|c| {
        c.serve.operator_password_hash = hash;
        c.serve.trusted_proxy = true;
        // A long window: the flood outlasts the whole test.
        c.serve.sign_in_window_s = 600.0;
        c.serve.sign_in_attempts_global = 10;
    })
    .await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let url = format!("http://{}/login", s.server.addr);
    let sign_in = |cookie: Option<String>| {
        let mut r = client
            .post(&url)
            .header("x-forwarded-for", "203.0.113.50")
            .form(&[("password", PASSWORD)]);
        if let Some(c) = cookie {
            r = r.header("cookie", c);
        }
        r.send()
    };
    // Yesterday: the owner signed in from this browser.
    let r = sign_in(None).await.unwrap();
    assert_eq!(r.status(), 303);
    let device = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|c| c.starts_with("calllock_device="))
        .expect("a known-device cookie");
    assert!(
        device.contains("Path=/login") && device.contains("HttpOnly"),
        "{device}"
    );
    let device = device.split(';').next().unwrap().to_string();

    // Today: guesses from many addresses fill the global count.
    let statuses = at_once(&s, 40, |i| Some(format!("10.9.{i}.1"))).await;
    assert!(count(&statuses, 429) > 0, "{statuses:?}");
    // A browser never seen, right password: paused like everyone.
    let r = sign_in(None).await.unwrap();
    assert_eq!(r.status(), 429);
    assert!(r.text().await.unwrap().contains("paused for everyone"));
    // A forged known-device cookie changes nothing.
    let forged = format!("calllock_device={}.{}", "a".repeat(64), "b".repeat(64));
    assert_eq!(sign_in(Some(forged)).await.unwrap().status(), 429);
    // The owner's browser: in.
    let r = sign_in(Some(device)).await.unwrap();
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_password_ends_old_sessions() {
    let s = serve_with(|_| {}).await;
    assert!(set_password(&s, PASSWORD).status.success());
    let mut before = Browser::of(&s);
    assert_eq!(before.sign_in(PASSWORD).await.status(), 303);
    assert_eq!(before.get("/api/calls").await.0, 200);

    // The owner changes the password with the CLI (another process, on
    // the database) while the server runs.
    const NEW: &str = "another long password";
    let out = set_password(&s, NEW);
    assert!(out.status.success(), "{out:?}");
    // The server re-reads the password in force at most every
    // PASSWORD_CONFIRM_EVERY; the slack only bounds a database read.
    let every = calllock::operator::PASSWORD_CONFIRM_EVERY;
    let deadline = tokio::time::Instant::now() + every * 2 + std::time::Duration::from_secs(10);
    while before.get("/api/calls").await.0 != 401 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session of the old password still works"
        );
        tokio::time::sleep(every / 10).await;
    }
    // For good: the old session stays over, the old password is wrong,
    // the new one signs in.
    assert_eq!(before.get("/api/session").await.0, 401);
    let mut after = Browser::of(&s);
    assert_eq!(after.sign_in(PASSWORD).await.status(), 401);
    assert_eq!(after.sign_in(NEW).await.status(), 303);
    assert_eq!(after.get("/api/calls").await.0, 200);
    s.server.stop().await;
}
