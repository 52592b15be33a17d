//! The JSON API of `calllock serve` against its own OpenAPI document: each
//! route after a real call answers what the document says (checked with a
//! JSON Schema validator), its filters and pages work, a bad parameter is a
//! 400 that names it, nothing answers without the token, and randomly
//! generated requests to every route never produce a 5xx or an answer
//! outside the document.

#[path = "support/served.rs"]
mod served;

use proptest::prelude::*;
use serde_json::{json, Value};
use served::*;

const TOKEN: &str = "api-t0ken-for-tests";

/// A validator for the document's component schema `name`.
fn schema(doc: &Value, name: &str) -> jsonschema::Validator {
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": doc["components"],
        "$ref": format!("#/components/schemas/{name}"),
    });
    jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn check(doc: &Value, name: &str, body: &Value) {
    let v = schema(doc, name);
    let errors: Vec<String> = v.iter_errors(body).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}\n{body:#}");
}

struct Api {
    base: String,
    client: reqwest::Client,
}

impl Api {
    fn of(s: &Served) -> Api {
        Api {
            base: format!("http://{}", s.server.addr),
            client: reqwest::Client::new(),
        }
    }

    async fn get_as(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        let mut r = self.client.get(format!("{}{path}", self.base));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text:?}"));
        (status, body)
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.get_as(path, Some(TOKEN)).await
    }
}

async fn serve_api() -> Served {
    serve_with(|c| c.serve.api_token = TOKEN.into()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_answers_without_the_token() {
    let off = serve_with(|_| {}).await;
    let api = Api::of(&off);
    let (status, body) = api.get_as("/api/calls", Some("anything")).await;
    assert_eq!(status, 401);
    assert!(
        body["error"].as_str().unwrap().contains("api_token"),
        "{body}"
    );

    let s = serve_api().await;
    let api = Api::of(&s);
    for path in [
        "/api/calls",
        "/api/calls/CA1",
        "/api/calls/CA1/events",
        "/api/outbox",
        "/api/openapi.json",
    ] {
        for token in [None, Some("wrong"), Some(&TOKEN[1..])] {
            let (status, body) = api.get_as(path, token).await;
            assert_eq!(status, 401, "{path} {token:?}");
            assert!(body["error"].is_string(), "{body}");
        }
    }
    off.server.stop().await;
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_per_the_document_after_a_call() {
    let s = serve_api().await;
    let api = Api::of(&s);
    let (status, doc) = api.get("/api/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    // Every component schema compiles as JSON Schema 2020-12.
    for name in doc["components"]["schemas"].as_object().unwrap().keys() {
        schema(&doc, name);
    }

    let (sid, _log, _said) = booking_call(&s).await;
    s.record(&sid).await;

    // The list, and each filter.
    let (status, page) = api.get("/api/calls").await;
    assert_eq!(status, 200);
    check(&doc, "CallPage", &page);
    let first = &page["calls"][0];
    assert_eq!(first["call_id"], sid.as_str());
    assert_eq!(first["final_state"], "confirm");
    assert_eq!(first["status"], "completed");
    assert!(first["duration_s"].as_f64().unwrap() > 5.0, "{first}");
    let ids = |p: &Value| -> Vec<String> {
        p["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["call_id"].as_str().unwrap().to_string())
            .collect()
    };
    for (query, found) in [
        ("final_state=confirm", true),
        ("final_state=callback", false),
        ("caller=555-9876", true),
        ("caller=0000000", false),
        ("status=completed", true),
        ("status=live", false),
        ("since=0&until=99999999999", true),
        ("until=1", false),
    ] {
        let (status, p) = api.get(&format!("/api/calls?{query}")).await;
        assert_eq!(status, 200, "{query}: {p}");
        check(&doc, "CallPage", &p);
        assert_eq!(ids(&p).contains(&sid), found, "{query}: {p}");
    }
    let priority = first["priority"].as_str().unwrap();
    let (_, p) = api.get(&format!("/api/calls?priority={priority}")).await;
    assert!(ids(&p).contains(&sid));

    // Bad parameters: a 400 naming them.
    for (query, named) in [
        ("limit=0", "limit"),
        ("limit=ten", "limit"),
        ("since=yesterday", "since"),
        ("status=ringing", "status"),
        ("cursor=nope", "cursor"),
        ("final_sate=confirm", "final_sate"),
    ] {
        let (status, body) = api.get(&format!("/api/calls?{query}")).await;
        assert_eq!(status, 400, "{query}");
        check(&doc, "Error", &body);
        assert!(
            body["error"].as_str().unwrap().contains(named),
            "{query}: {body}"
        );
    }

    // One call, its events, and a call that is not there.
    let (status, call) = api.get(&format!("/api/calls/{sid}")).await;
    assert_eq!(status, 200);
    check(&doc, "CallDetail", &call);
    assert_eq!(call["customer_name"], "Dana Fields");
    assert!(call["record"].is_object());
    assert!(call["transcript"].as_array().unwrap().len() > 10);
    let (status, events) = api.get(&format!("/api/calls/{sid}/events")).await;
    assert_eq!(status, 200);
    check(&doc, "EventLog", &events);
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"agent") && kinds.contains(&"latency"),
        "{kinds:?}"
    );
    // Missing calls, and paths no route has: `/api/calls/..` reaches the
    // server as `/api/` (the client resolves the dots), `/api/calls/.` as
    // `/api/calls/`; each is a documented JSON 404, never an empty body.
    for path in [
        "/api/calls/CA_missing",
        "/api/calls/CA_missing/events",
        "/api",
        "/api/",
        "/api/calls/..",
        "/api/calls/.",
        "/api/nothing/here",
    ] {
        let (status, body) = api.get(path).await;
        assert_eq!(status, 404, "{path}");
        check(&doc, "Error", &body);
    }

    let (status, outbox) = api.get("/api/outbox").await;
    assert_eq!(status, 200);
    check(&doc, "Outbox", &outbox);

    // Retry now: attempted at once (nothing listens at the target, so it
    // fails and says when the worker tries again), per the document; an
    // item that does not wait is a documented 404.
    let store = s.server.store();
    let later = chrono::Utc::now().timestamp() as f64 + 3600.0;
    let id = store
        .outbox_enqueue(
            &store::NewOutboxItem {
                call_id: "CA_retry".into(),
                kind: store::OutboxKind::Alert,
                target_url: "http://127.0.0.1:9/alerts".into(),
                payload: serde_json::json!({}),
            },
            later,
        )
        .await
        .unwrap();
    let retry = |id: String| {
        api.client
            .post(format!("{}/api/outbox/{id}/retry", api.base))
            .bearer_auth(TOKEN)
            .send()
    };
    let r = retry(id.clone()).await.unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    check(&doc, "Retried", &answer);
    assert_eq!(answer["outcome"], "failed", "{answer}");
    assert!(answer["message"]
        .as_str()
        .unwrap()
        .contains("attempted just now"));
    assert_eq!(store.outbox_item(&id).await.unwrap().unwrap().attempts, 1);
    let r = retry("ob_missing".into()).await.unwrap();
    assert_eq!(r.status(), 404);
    check(&doc, "Error", &r.json().await.unwrap());
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_follow_the_cursor_to_the_end() {
    let s = serve_api().await;
    // Five finished calls a minute apart, straight into the database.
    let start = chrono::Utc::now() - chrono::Duration::hours(1);
    for i in 0..5 {
        let at = start + chrono::Duration::minutes(i);
        let rec = store::CallRecord {
            call_id: format!("CA_page_{i}"),
            phone: "+15125550111".into(),
            started_at: at,
            ended_at: Some(at + chrono::Duration::seconds(60)),
            final_state: "callback".into(),
            end_call_reason: "completed".into(),
            booking_status: String::new(),
            urgency: "Routine".into(),
            priority_color: "green".into(),
            revenue_tier: "standard_repair".into(),
            customer_name: String::new(),
            problem: String::new(),
            record: json!({}),
            transcript: json!([]),
        };
        s.server.store().save_call(&rec).await.unwrap();
    }
    let api = Api::of(&s);
    let mut seen = Vec::new();
    let mut path = "/api/calls?limit=2".to_string();
    loop {
        let (status, p) = api.get(&path).await;
        assert_eq!(status, 200, "{p}");
        seen.extend(
            p["calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["call_id"].as_str().unwrap().to_string()),
        );
        match p["next"].as_str() {
            Some(c) => path = format!("/api/calls?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(
        seen,
        [
            "CA_page_4",
            "CA_page_3",
            "CA_page_2",
            "CA_page_1",
            "CA_page_0"
        ]
    );
    s.server.stop().await;
}

/// Query strings of every shape: known and unknown names, good and bad
/// values, odd characters (percent-encoded).
fn query() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("final_state".to_string()),
        Just("priority".to_string()),
        Just("caller".to_string()),
        Just("since".to_string()),
        Just("until".to_string()),
        Just("status".to_string()),
        Just("cursor".to_string()),
        Just("limit".to_string()),
        "[a-z_]{1,12}",
    ];
    let value = prop_oneof![
        "-?[0-9]{1,20}",
        "[a-z_]{0,12}",
        Just("live".to_string()),
        Just("1771862400_CA1".to_string()),
        "\\PC{0,16}",
    ];
    prop::collection::vec((name, value), 0..5).prop_map(|pairs| {
        pairs
            .iter()
            .map(|(k, v)| {
                let enc: String = v
                    .bytes()
                    .map(|b| {
                        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                            (b as char).to_string()
                        } else {
                            format!("%{b:02X}")
                        }
                    })
                    .collect();
                format!("{k}={enc}")
            })
            .collect::<Vec<_>>()
            .join("&")
    })
}

#[test]
fn random_requests_never_fail_the_server_or_the_document() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (s, doc) = rt.block_on(async {
        let s = serve_api().await;
        let (_, doc) = Api::of(&s).get("/api/openapi.json").await;
        (s, doc)
    });
    let api = Api::of(&s);
    let documented = |route: &str, status: u16| -> &'static str {
        match (route, status) {
            (_, 400 | 401 | 404 | 503) => "Error",
            ("calls", 200) => "CallPage",
            ("call", 200) => "CallDetail",
            ("events", 200) => "EventLog",
            ("outbox", 200) => "Outbox",
            _ => panic!("{route} answered {status}, which is not documented"),
        }
    };
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 300,
        ..ProptestConfig::default()
    });
    let id = "[A-Za-z0-9_%.-]{1,24}";
    runner
        .run(&(0..4usize, query(), id), |(route, q, id)| {
            let (name, path) = match route {
                0 => ("calls", format!("/api/calls?{q}")),
                1 => ("call", format!("/api/calls/{id}?{q}")),
                2 => ("events", format!("/api/calls/{id}/events?{q}")),
                _ => ("outbox", format!("/api/outbox?{q}")),
            };
            let (status, body) = rt.block_on(api.get(&path));
            prop_assert!(status < 500, "{path} answered {status}: {body}");
            let v = schema(&doc, documented(name, status));
            let errors: Vec<String> = v.iter_errors(&body).map(|e| e.to_string()).collect();
            prop_assert!(errors.is_empty(), "{path} ({status}): {errors:?} {body}");
            Ok(())
        })
        .unwrap();
    rt.block_on(s.server.stop());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_names_the_csrf_header_retry_needs_and_the_cursor_format() {
    let s = serve_api().await;
    let api = Api::of(&s);
    let (status, doc) = api.get("/api/openapi.json").await;
    assert_eq!(status, 200);

    // Retry with a session cookie needs the session's CSRF token.
    let retry = &doc["paths"]["/api/outbox/{id}/retry"]["post"];
    let header = retry["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["in"] == "header")
        .unwrap_or_else(|| panic!("no header parameter: {retry:#}"));
    assert_eq!(header["name"], "X-CSRF-Token");
    assert!(
        header["description"]
            .as_str()
            .unwrap()
            .contains("/api/session"),
        "says where the token comes from: {header}"
    );

    // A cursor is not any string: `<Unix seconds>_<call id>`.
    let cursor = doc["paths"]["/api/calls"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "cursor")
        .unwrap()["schema"]
        .clone();
    assert_eq!(cursor["pattern"], "^-?[0-9]+_.+$");
    let v = jsonschema::validator_for(&cursor).unwrap();
    for good in ["1771862400_CA1", "-5_x"] {
        assert!(v.is_valid(&json!(good)), "{good}");
    }
    for bad in ["nope", "abc_CA1", "12_", ""] {
        assert!(!v.is_valid(&json!(bad)), "{bad}");
    }
    // A page's `next` is checked against the same pattern.
    let page = schema(&doc, "CallPage");
    assert!(!page.is_valid(&json!({"calls": [], "next": "nope"})));
    assert!(page.is_valid(&json!({"calls": [], "next": "1771862400_CA1"})));
    assert!(page.is_valid(&json!({"calls": [], "next": null})));
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_answers_are_never_cached_and_carry_the_security_headers() {
    let s = serve_api().await;
    let client = reqwest::Client::new();
    for (path, token) in [
        ("/api/calls", Some(TOKEN)),
        ("/api/outbox", Some(TOKEN)),
        ("/api/openapi.json", Some(TOKEN)),
        ("/api/calls/CA_missing", Some(TOKEN)),
        ("/api/calls", None),
    ] {
        let mut r = client.get(format!("http://{}{path}", s.server.addr));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        let r = r.send().await.unwrap();
        let h = r.headers();
        assert_eq!(h["cache-control"], "no-store", "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        assert!(
            h["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("frame-ancestors 'none'"),
            "{path}"
        );
    }
    s.server.stop().await;
}
