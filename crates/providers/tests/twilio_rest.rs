//! The Twilio REST hang-up against a loopback fake of Twilio's API
//! (`providers::fake::http::FakeHttp`): the exact request on the wire, and
//! every kind of answer (or none).

use base64::Engine as _;
use providers::fake::http::{FakeHttp, FakeResponse};
use providers::twilio::rest::{HangUp, TwilioRest, TwilioRestConfig, TwilioRestError};
use serde_json::json;
use std::time::{Duration, Instant};

const AC: &str = "AC0123456789abcdef0123456789abcdef";
const CA: &str = "CAfedcba9876543210fedcba9876543210";
const TOKEN: &str = "secret-token";

fn client_with(base: String, timeout: Duration) -> TwilioRest {
    TwilioRest::new(TwilioRestConfig {
        api_base_url: base,
        account_sid: AC.into(),
        auth_token: TOKEN.into(),
        timeout,
    })
    .unwrap()
}

fn client(base: String) -> TwilioRest {
    client_with(base, Duration::from_secs(5))
}

fn path() -> String {
    format!("/2010-04-01/Accounts/{AC}/Calls/{CA}.json")
}

/// A fake that answers the call resource with `responses`.
fn fake_answering(responses: Vec<FakeResponse>) -> FakeHttp {
    let fake = FakeHttp::start();
    fake.set(&path(), responses);
    fake
}

#[tokio::test]
async fn hang_up_posts_status_completed_with_basic_auth() {
    let fake = fake_answering(vec![FakeResponse::json(
        200,
        json!({"sid": CA, "account_sid": AC, "status": "completed"}),
    )]);
    let r = client(fake.url()).hang_up(CA).await.unwrap();
    assert_eq!(r, HangUp::Completed);
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    let q = &reqs[0];
    assert_eq!(q.method, "POST");
    assert_eq!(
        q.path,
        "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls/\
         CAfedcba9876543210fedcba9876543210.json"
    );
    assert_eq!(q.body_text(), "Status=completed");
    assert_eq!(
        q.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    // Basic base64("AC…:secret-token"), written out independently.
    let want = base64::engine::general_purpose::STANDARD
        .encode(b"AC0123456789abcdef0123456789abcdef:secret-token");
    assert_eq!(
        q.header("authorization"),
        Some(format!("Basic {want}").as_str())
    );
}

#[tokio::test]
async fn any_2xx_is_completed_and_a_trailing_slash_in_the_base_is_ignored() {
    let fake = fake_answering(vec![FakeResponse::status(204)]);
    let c = client(format!("{}/", fake.url()));
    assert_eq!(c.hang_up(CA).await.unwrap(), HangUp::Completed);
    assert_eq!(fake.requests()[0].path, path());
}

#[tokio::test]
async fn an_ended_call_is_not_an_error() {
    let fake = fake_answering(vec![
        FakeResponse::json(
            404,
            json!({
                "code": 20404,
                "message": "The requested resource /2010-04-01/Accounts/AC…/Calls/CA….json was not found",
                "more_info": "https://www.twilio.com/docs/errors/20404",
                "status": 404
            }),
        ),
        // Any 404, even without Twilio's body.
        FakeResponse::status(404),
    ]);
    let c = client(fake.url());
    assert_eq!(c.hang_up(CA).await.unwrap(), HangUp::AlreadyEnded);
    assert_eq!(c.hang_up(CA).await.unwrap(), HangUp::AlreadyEnded);
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn a_server_error_carries_twilios_code_and_message() {
    let fake = fake_answering(vec![FakeResponse::json(
        500,
        json!({"code": 20500, "message": "Internal Server Error", "status": 500}),
    )]);
    let e = client(fake.url()).hang_up(CA).await.unwrap_err();
    assert_eq!(
        e,
        TwilioRestError::Status {
            status: 500,
            code: Some(20500),
            message: "Internal Server Error".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "Twilio answered 500 (error 20500): Internal Server Error"
    );
    // One request: no retry.
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn errors_say_what_twilio_said() {
    let fake = fake_answering(vec![FakeResponse::json(
        401,
        json!({"code": 20003, "message": "Authenticate", "status": 401}),
    )]);
    let e = client(fake.url()).hang_up(CA).await.unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("401") && text.contains("20003") && text.contains("Authenticate"),
        "{text}"
    );
    assert!(!text.contains(TOKEN), "{text}");
    // A body that is not Twilio's JSON: an excerpt of it.
    fake.set(&path(), vec![FakeResponse::text(503, "upstream boom")]);
    let e = client(fake.url()).hang_up(CA).await.unwrap_err();
    assert_eq!(
        e,
        TwilioRestError::Status {
            status: 503,
            code: None,
            message: "upstream boom".into(),
        }
    );
}

#[tokio::test]
async fn a_redirect_is_an_answer_not_followed() {
    let fake = fake_answering(vec![FakeResponse::status(302)]);
    let e = client(fake.url()).hang_up(CA).await.unwrap_err();
    assert!(
        matches!(e, TwilioRestError::Status { status: 302, .. }),
        "{e}"
    );
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn a_server_that_is_down_is_an_error_not_a_panic() {
    let fake = FakeHttp::start();
    let url = fake.url();
    drop(fake);
    let e = client(url).hang_up(CA).await.unwrap_err();
    assert!(matches!(e, TwilioRestError::Network(_)), "{e}");
    assert!(e.to_string().contains("did not answer"), "{e}");
}

#[tokio::test]
async fn a_dropped_connection_is_a_network_error() {
    let fake = fake_answering(vec![FakeResponse::NetworkError]);
    let e = client(fake.url()).hang_up(CA).await.unwrap_err();
    assert!(matches!(e, TwilioRestError::Network(_)), "{e}");
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let fake = fake_answering(vec![FakeResponse::delay(
        Duration::from_secs(3),
        FakeResponse::status(200),
    )]);
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let e = client_with(fake.url(), timeout)
        .hang_up(CA)
        .await
        .unwrap_err();
    assert_eq!(e, TwilioRestError::Timeout(timeout));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_bad_call_sid_sends_nothing() {
    let fake = fake_answering(vec![FakeResponse::status(200)]);
    let c = client(fake.url());
    for bad in [
        "",
        "CA../../Accounts",
        "CAfedcba9876543210fedcba98765432/0",
        "CAfedcba9876543210fedcba9876543210?x=1",
        "CAfedcba9876543210fedcba987654321g",
        "cafedcba9876543210fedcba9876543210",
        "ACfedcba9876543210fedcba9876543210",
        "CAfedcba9876543210fedcba98765432é",
    ] {
        let e = c.hang_up(bad).await.unwrap_err();
        assert!(matches!(e, TwilioRestError::BadSid { .. }), "{bad:?}: {e}");
        assert!(e.to_string().contains("call SID"), "{e}");
    }
    assert_eq!(fake.request_count(), 0);
}
