//! The operator's sign-in on a real server: the password set by `calllock
//! operator password` (its hash in the database), the session cookie's
//! flags, the API through the session, CSRF on every change, sign-out, the
//! limit on failed sign-ins, and the outbox's "retry now".

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
        let r = self
            .client
            .post(format!("{}/login", self.base))
            .form(&[("password", password)])
            .send()
            .await
            .unwrap();
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

    // A change: refused without the CSRF token or with a wrong one; done
    // with it.
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
    let (status, body) = b.post(&retry, Some(&csrf)).await;
    assert_eq!(status, 200, "{body}");
    let item = s.server.store().outbox_item(&id).await.unwrap().unwrap();
    assert!(
        item.next_attempt_unix <= chrono::Utc::now().timestamp() as f64 + 1.0,
        "due now: {item:?}"
    );
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
