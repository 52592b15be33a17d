//! Kind `post_call_run` (conformance README §9): the whole end-of-call
//! handler — `calllock::call::delivery::PostCall` — against loopback fakes of the
//! dashboard and the V2 backend, over a fresh SQLite outbox.

use super::{check_subset, exact, session_from, R};
use agent::responder::{Responder, ResponderError, ScriptedResponder};
use agent::BusinessProfile;
use calllock::call::delivery::{Backoff, OutboxWorker, PostCall};
use calllock::call::outcome::{Ending, Outcome};
use providers::dashboard::{DashboardClient, DashboardConfig};
use providers::fake::http::{HostMap, MappedRequest};
use providers::v2::{V2Client, V2Config};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The classification the case says the LLM returns.
struct FixedClassification {
    fields: Map<String, Value>,
    scripted: ScriptedResponder,
}

#[async_trait::async_trait]
impl Responder for FixedClassification {
    async fn reply(
        &self,
        req: &agent::responder::TurnRequest,
    ) -> Result<agent::responder::ReplyStream, ResponderError> {
        self.scripted.reply(req).await
    }
    async fn scoped_reply(
        &self,
        req: &agent::responder::ScopedRequest,
    ) -> Result<String, ResponderError> {
        self.scripted.scoped_reply(req).await
    }
    async fn extract(
        &self,
        req: &agent::responder::ExtractionRequest,
    ) -> Result<agent::extract::ExtractedFields, ResponderError> {
        self.scripted.extract(req).await
    }
    async fn classify(&self, _prompt: &str) -> Result<Map<String, Value>, ResponderError> {
        Ok(self.fields.clone())
    }
    fn name(&self) -> &str {
        "fixed-classification"
    }
}

fn env<'a>(given: &'a Value, key: &str) -> &'a str {
    given["env"].get(key).and_then(Value::as_str).unwrap_or("")
}

pub fn run(case: &Value) -> R {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    rt.block_on(run_async(case))
}

async fn run_async(case: &Value) -> R {
    let given = &case["given"];
    let session = session_from(given)?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let db = dir.path().join("outbox.db");
    let store = store::Store::open(&db)
        .await
        .map_err(|e| format!("store: {e}"))?;

    let mut hosts = HostMap::new();
    hosts.load_server(None, &given["server"])?;
    let mut local = |url: &str| -> Result<String, String> {
        if url.is_empty() {
            Ok(String::new())
        } else {
            hosts.local_url(url)
        }
    };
    let sleeps = Arc::new(Mutex::new(Vec::<f64>::new()));
    let rec = sleeps.clone();
    let sleeper: providers::dashboard::Sleeper = Arc::new(move |d: Duration| {
        rec.lock().unwrap().push(d.as_secs_f64());
        Box::pin(async {})
    });
    let dashboard = if env(given, "DASHBOARD_JOBS_URL").is_empty()
        || env(given, "DASHBOARD_WEBHOOK_SECRET").is_empty()
    {
        None
    } else {
        let cfg = DashboardConfig {
            jobs_url: local(env(given, "DASHBOARD_JOBS_URL"))?,
            calls_url: local(env(given, "DASHBOARD_CALLS_URL"))?,
            alerts_url: local(env(given, "DASHBOARD_ALERTS_URL"))?,
            webhook_secret: env(given, "DASHBOARD_WEBHOOK_SECRET").to_string(),
            user_email: env(given, "DASHBOARD_USER_EMAIL").to_string(),
            ..DashboardConfig::default()
        };
        Some(Arc::new(
            DashboardClient::new(cfg)
                .map_err(|e| e.to_string())?
                .with_sleeper(sleeper.clone()),
        ))
    };
    let v2_url = env(given, "V2_BACKEND_URL");
    let (backend, callback_target): (Arc<dyn agent::backend::Backend>, String) =
        if v2_url.is_empty() {
            (
                Arc::new(store::EmbeddedBackend::new(
                    store.clone(),
                    BusinessProfile::default(),
                )),
                "embedded:create_callback".into(),
            )
        } else {
            let base = local(v2_url)?;
            let key = env(given, "V2_API_KEY");
            let client = V2Client::new(V2Config {
                base_url: base.clone(),
                api_key: (!key.is_empty()).then(|| key.to_string()),
                ..V2Config::default()
            })
            .map_err(|e| e.to_string())?;
            (
                Arc::new(client),
                format!(
                    "{}/webhook/retell/create_callback",
                    base.trim_end_matches('/')
                ),
            )
        };
    let fields = match given.get("classification") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let responder = Arc::new(FixedClassification {
        fields,
        scripted: ScriptedResponder::new(BusinessProfile::default()),
    });
    let post = PostCall {
        store: store.clone(),
        dashboard: dashboard.clone(),
        user_email: env(given, "DASHBOARD_USER_EMAIL").to_string(),
        backend: backend.clone(),
        callback_target,
        responder,
        backoff: Backoff::default(),
        clock: calllock::call::delivery::system_clock(),
        sleeper: sleeper.clone(),
        reserve_s: 120.0,
        worker: "conformance".into(),
    };
    let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let start = session.start_time;
    let mut outcome = Outcome::of_session(session, Ending::Caller, start, now);
    let report = post.handle_call_ended(&mut outcome, false).await;

    let e = &case["expect"];
    check_requests(e, &hosts.requests(), "")?;
    check_pending(e, &store, &hosts, "").await?;
    if let Some(n) = e.get("dump_lines_min").and_then(Value::as_u64) {
        if (report.dump_lines.len() as u64) < n {
            return Err(format!(
                "dump_lines_min: expected at least {n}, got {}",
                report.dump_lines.len()
            ));
        }
    }
    // Exactly `TRANSCRIPT_DUMP|1/n|JSON` (SPEC §7.9).
    let first_dump = match report.dump_lines.first() {
        None => Value::Null,
        Some(l) => {
            let json = l
                .strip_prefix("TRANSCRIPT_DUMP|1/")
                .and_then(|r| r.split_once('|'))
                .map(|(_, j)| j)
                .ok_or_else(|| format!("dump line 1 is not TRANSCRIPT_DUMP|1/n|JSON: {l}"))?;
            serde_json::from_str::<Value>(json)
                .map_err(|e| format!("dump line 1 is not JSON after its prefix ({e}): {l}"))?
        }
    };
    if let Some(sub) = e.get("dump_first_subset") {
        check_subset("dump_first_subset", sub, &first_dump)?;
    }
    if e.get("dump_has_entries").and_then(Value::as_bool) == Some(true)
        && first_dump["entries"]
            .as_array()
            .is_none_or(|a| a.is_empty())
    {
        return Err("dump_has_entries: the first dump line has no entries".into());
    }

    if let Some(drain) = e.get("drain_outbox") {
        // A restart: a new store handle over the same file, a new worker,
        // the fake servers answering from the new script.
        drop(post);
        for (_, f) in hosts.fakes() {
            f.clear_routes();
            f.clear_requests();
        }
        hosts.load_server(None, &drain["server"])?;
        let store2 = store::Store::open(&db)
            .await
            .map_err(|e| format!("store: {e}"))?;
        let worker = OutboxWorker {
            store: store2.clone(),
            dashboard,
            backend,
            worker: "conformance-restarted".into(),
            backoff: Backoff::default(),
            lease_s: 60.0,
            batch: 50,
        };
        // Every backoff delay treated as elapsed.
        let far: calllock::call::delivery::Clock = Arc::new(move || now + 1e9);
        worker
            .drain_due(&far)
            .await
            .map_err(|e| format!("drain: {e}"))?;
        let de = &drain["expect"];
        check_requests(de, &hosts.requests(), "drain_outbox.")?;
        check_pending(de, &store2, &hosts, "drain_outbox.").await?;
    }
    Ok(())
}

fn first_body<'a>(reqs: &'a [MappedRequest], url: &str) -> Option<&'a Value> {
    reqs.iter()
        .find(|r| r.url == url)
        .map(|r| r.request.json.as_ref().unwrap_or(&Value::Null))
}

fn check_requests(e: &Value, reqs: &[MappedRequest], prefix: &str) -> R {
    let urls: Vec<Value> = reqs.iter().map(|r| json!(r.url)).collect();
    if let Some(want) = e.get("called_urls") {
        if !exact(want, &Value::Array(urls.clone())) {
            return Err(format!(
                "{prefix}called_urls: expected {want}, got {urls:?}"
            ));
        }
    }
    if let Some(want) = e.get("called_urls_include").and_then(Value::as_array) {
        let mut left = urls.clone();
        for u in want {
            match left.iter().position(|x| x == u) {
                Some(i) => {
                    left.remove(i);
                }
                None => {
                    return Err(format!(
                        "{prefix}called_urls_include: {u} missing from {urls:?}"
                    ))
                }
            }
        }
    }
    let per_url = |key: &str| e.get(key).and_then(Value::as_object);
    if let Some(m) = per_url("payload_subsets") {
        for (url, sub) in m {
            let body = first_body(reqs, url)
                .ok_or_else(|| format!("{prefix}payload_subsets: no request to {url}"))?;
            check_subset(&format!("{prefix}payload_subsets[{url}]"), sub, body)?;
        }
    }
    for (key, present) in [
        ("payload_absent_keys", false),
        ("payload_present_keys", true),
    ] {
        if let Some(m) = per_url(key) {
            for (url, keys) in m {
                let body = first_body(reqs, url)
                    .ok_or_else(|| format!("{prefix}{key}: no request to {url}"))?;
                for k in keys.as_array().into_iter().flatten() {
                    let k = k.as_str().unwrap_or("");
                    if body.get(k).is_some() != present {
                        return Err(format!(
                            "{prefix}{key}[{url}]: key {k:?} {} in {body}",
                            if present { "missing" } else { "present" }
                        ));
                    }
                }
            }
        }
    }
    if let Some(m) = per_url("headers") {
        for (url, hs) in m {
            let to_url: Vec<&MappedRequest> = reqs.iter().filter(|r| &r.url == url).collect();
            if to_url.is_empty() {
                return Err(format!("{prefix}headers: no request to {url}"));
            }
            for r in to_url {
                for (name, want) in hs.as_object().into_iter().flatten() {
                    let got = r.request.header(name);
                    let ok = match want {
                        Value::Null => got.is_none(),
                        Value::String(w) => got == Some(w.as_str()),
                        _ => false,
                    };
                    if !ok {
                        return Err(format!(
                            "{prefix}headers[{url}]: {name} expected {want}, got {got:?}"
                        ));
                    }
                }
            }
        }
    }
    if let Some(m) = per_url("hmac_sha256") {
        for (url, spec) in m {
            let header = spec["header"].as_str().unwrap_or("");
            let key = spec["key"].as_str().unwrap_or("");
            let to_url: Vec<&MappedRequest> = reqs.iter().filter(|r| &r.url == url).collect();
            if to_url.is_empty() {
                return Err(format!("{prefix}hmac_sha256: no request to {url}"));
            }
            for r in to_url {
                let want = providers::dashboard::sign(key, &r.request.body);
                let got = r.request.header(header).unwrap_or("");
                let bare = want.trim_start_matches("sha256=");
                if got != want && got != bare {
                    return Err(format!(
                        "{prefix}hmac_sha256[{url}]: {header} = {got:?}, expected {want:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

async fn check_pending(e: &Value, store: &store::Store, hosts: &HostMap, prefix: &str) -> R {
    let Some(want) = e.get("outbox_pending_urls").and_then(Value::as_array) else {
        return Ok(());
    };
    let pending = store
        .outbox_pending()
        .await
        .map_err(|e| format!("outbox: {e}"))?;
    let mut got: Vec<String> = pending
        .iter()
        .map(|i| hosts.to_logical(&i.target_url))
        .collect();
    let mut want: Vec<String> = want
        .iter()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    got.sort();
    want.sort();
    if got != want {
        return Err(format!(
            "{prefix}outbox_pending_urls: expected {want:?}, got {got:?}"
        ));
    }
    Ok(())
}
