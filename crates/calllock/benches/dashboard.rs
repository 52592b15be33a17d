//! A year of calls in the database; how fast the dashboard's calls page
//! and the calls API answer (release build):
//!
//! ```text
//! cargo bench -p calllock --bench dashboard -- [--calls 100000] [--requests 50]
//! ```
//!
//! Seeds a fresh SQLite database with `--calls` finished calls over the
//! past year (mixed final states, priorities and callers), starts
//! `calllock serve` on loopback, signs in, then times each page: the first
//! page of calls, and filtered ones. Goal: under 100 ms at p95.

use calllock::config::Config;
use calllock::serve::Server;
use serde_json::json;
use std::time::{Duration, Instant};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let calls = arg("--calls", 100_000);
    let requests = arg("--requests", 50);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config {
        database: dir.path().join("year.db"),
        instance: "bench-dashboard".into(),
        ..Config::default()
    };
    cfg.speech.local = "off".into();
    let password = "bench password";
    cfg.serve.operator_password_hash = calllock::operator::hash_password(password).unwrap();

    let store = store::Store::open(&cfg.database).await.unwrap();
    let t = Instant::now();
    let year_ago = chrono::Utc::now() - chrono::Duration::days(365);
    let states = [
        "confirm",
        "callback",
        "safety_exit",
        "confirm",
        "out_of_area",
    ];
    let colours = ["green", "blue", "red", "gray", "green"];
    for i in 0..calls {
        let at = year_ago + chrono::Duration::seconds((i as i64) * 365 * 86_400 / calls as i64);
        let rec = store::CallRecord {
            call_id: format!("CA{i:032x}"),
            phone: format!("+1512555{:04}", i % 10_000),
            started_at: at,
            ended_at: Some(at + chrono::Duration::seconds(90 + (i % 200) as i64)),
            final_state: states[i % states.len()].into(),
            end_call_reason: "completed".into(),
            booking_status: if i % 5 == 0 {
                "confirmed".into()
            } else {
                String::new()
            },
            urgency: "Routine".into(),
            priority_color: colours[(i / 3) % colours.len()].into(),
            revenue_tier: "standard_repair".into(),
            customer_name: format!("Customer {i}"),
            problem: "AC blowing warm air".into(),
            record: json!({"tags": {"SERVICE_TYPE": ["REPAIR_AC"], "URGENCY": ["ROUTINE"]}}),
            transcript: json!([{"role": "agent", "content": "Thanks for calling!"}]),
        };
        store.save_call(&rec).await.unwrap();
        if (i + 1) % 20_000 == 0 {
            eprintln!(
                "  seeded {} calls ({:.0} s)",
                i + 1,
                t.elapsed().as_secs_f64()
            );
        }
    }
    store.close().await;
    println!(
        "seeded {calls} calls over a year in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::start(cfg, listener).await.unwrap();
    let base = format!("http://{}", server.addr);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client
        .post(format!("{base}/login"))
        .form(&[("password", password)])
        .send()
        .await
        .unwrap();
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let mut worst = Duration::ZERO;
    for path in [
        "/",
        "/?fragment=1",
        "/?final_state=callback",
        "/?priority=red&status=completed",
        "/?caller=5550042",
        "/?from=2026-01-01&to=2026-03-31",
        "/api/calls",
        "/api/calls?final_state=safety_exit&limit=100",
    ] {
        let mut times = Vec::with_capacity(requests);
        let mut bytes = 0;
        for _ in 0..requests {
            let t = Instant::now();
            let r = client
                .get(format!("{base}{path}"))
                .header("cookie", &cookie)
                .bearer_auth("")
                .send()
                .await
                .unwrap();
            assert!(
                r.status().is_success() || path.starts_with("/api"),
                "{path}: {}",
                r.status()
            );
            bytes = r.bytes().await.unwrap().len();
            times.push(t.elapsed());
        }
        times.sort();
        let (p50, p95) = (percentile(&times, 0.5), percentile(&times, 0.95));
        worst = worst.max(p95);
        println!(
            "{path:<48} p50 {:>6.1} ms  p95 {:>6.1} ms  ({bytes} bytes)",
            p50.as_secs_f64() * 1000.0,
            p95.as_secs_f64() * 1000.0
        );
    }
    println!(
        "worst p95 {:.1} ms: {}",
        worst.as_secs_f64() * 1000.0,
        if worst < Duration::from_millis(100) {
            "under 100 ms ✔"
        } else {
            "OVER 100 ms ✘"
        }
    );
    server.stop().await;
}
