//! A year of calls in the database; how fast every filter of the
//! dashboard's calls page and of the calls API answers (release build):
//!
//! ```text
//! cargo bench -p calllock --bench dashboard -- [--calls 100000] [--requests 30] [--postgres]
//! ```
//!
//! Seeds a fresh database — a SQLite file, or with `--postgres` a fresh
//! PostgreSQL database on the local server (see `store::testing`; then
//! `ANALYZE`d, as autovacuum does after this many inserts) — with
//! `--calls` calls over the past year, sized like real ones: 20–40
//! transcript turns of real length, a post-call record with its job and
//! call payloads and tags (a few KB each), mixed final states and
//! priorities, callers who call again, and among them a few live calls
//! (owned by the server, so they stay live) and interrupted ones. Then it
//! starts `calllock serve` on loopback, signs in once, and times every
//! filter of `/` and `/api/calls` — the live, finished and interrupted
//! views, a final state, a priority, a caller's digits (a known number, its
//! last four digits, digits nobody has), a date window, the second page by
//! cursor, and combinations — over HTTP only (the page's layout is not this
//! bench's business). It prints p50 and p95 per filter against the goal:
//! under 20 ms each.

use calllock::config::Config;
use calllock::serve::Server;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The goal for every filter, at p95.
const GOAL: Duration = Duration::from_millis(20);

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// A small deterministic generator (xorshift), so every run seeds the
/// same year.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

const AGENT_LINES: &[&str] = &[
    "Thanks for calling ACE Cooling, this is the virtual receptionist. How can I help you today?",
    "I'm sorry to hear that. Can I get the address where the system is located?",
    "Got it. And is anyone in the home feeling unwell, or do you smell gas or smoke?",
    "Okay, thank you. What's the best name for the appointment?",
    "We have openings tomorrow morning between eight and ten, or Thursday afternoon. Which works better?",
    "You're all set for tomorrow between eight and ten. The technician will call thirty minutes ahead.",
    "Is there anything else I can help you with today?",
];
const CALLER_LINES: &[&str] = &[
    "Hi, my AC is blowing warm air and it's about eighty-five degrees in the house right now.",
    "It's 4210 South Lamar Boulevard, Austin, seven eight seven four five.",
    "No, nobody's sick and I don't smell anything, it just isn't cooling at all.",
    "Put it under Maria Gonzalez, that's G-O-N-Z-A-L-E-Z.",
    "Tomorrow morning works, the earlier the better honestly.",
    "The outdoor unit is making a buzzing noise but the fan isn't spinning.",
    "No, that's everything. Thank you so much for the help.",
];

/// A transcript of 20–40 turns, each as the recorder keeps it.
fn transcript(rng: &mut Rng, start: f64) -> Value {
    let turns = 20 + rng.below(21);
    let states = [
        "welcome",
        "discovery",
        "safety",
        "service_area",
        "booking",
        "confirm",
    ];
    let turns: Vec<Value> = (0..turns)
        .map(|t| {
            let agent = t % 2 == 0;
            json!({
                "role": if agent { "agent" } else { "user" },
                "content": if agent { rng.pick(AGENT_LINES) } else { rng.pick(CALLER_LINES) },
                "timestamp": start + 4.5 * t as f64,
                "state": states[(t as usize * states.len()) / 40],
            })
        })
        .collect();
    Value::Array(turns)
}

/// A post-call record shaped like `record::classify`'s.
fn record(rng: &mut Rng, call_id: &str, phone: &str, name: &str, state: &str) -> Value {
    let tags = json!({
        "SERVICE_TYPE": [rng.pick(&["REPAIR_AC", "REPAIR_HEATING", "MAINTENANCE", "INSTALL_QUOTE"])],
        "URGENCY": [rng.pick(&["ROUTINE", "URGENT", "EMERGENCY"])],
        "CUSTOMER": [rng.pick(&["EXISTING", "NEW"])],
        "EQUIPMENT": ["CENTRAL_AC", "OUTDOOR_UNIT"],
    });
    json!({
        "call_id": call_id,
        "final_state": state,
        "tags": tags,
        "fields": {
            "customer_name": name,
            "phone": phone,
            "service_address": "4210 South Lamar Blvd, Austin, TX 78745",
            "zip_code": "78745",
            "problem_description": "AC blowing warm air; outdoor unit buzzing, fan not spinning",
            "preferred_time": "tomorrow morning",
            "booked_time": "2026-02-20T08:00:00-06:00",
            "urgency_tier": "routine",
        },
        "job_payload": {
            "customer_name": name,
            "customer_phone": phone,
            "customer_address": "4210 South Lamar Blvd, Austin, TX 78745",
            "service_type": "hvac",
            "urgency": "Routine",
            "issue_description": "AC blowing warm air; outdoor unit buzzing, fan not spinning. Caller reports 85 F indoors, no gas smell, nobody unwell.",
            "scheduled_at": "2026-02-20T08:00:00-06:00",
            "source": "voice_agent",
            "call_id": call_id,
            "tags": tags,
            "revenue_tier": "standard_repair",
            "priority_color": "green",
            "ai_summary": "Existing customer with a central AC not cooling; booked the first morning slot. Outdoor unit buzzing suggests a failed capacitor or contactor.",
        },
        "call_payload": {
            "call_id": call_id,
            "phone_number": phone,
            "customer_name": name,
            "direction": "inbound",
            "outcome": state,
            "duration_seconds": 140 + rng.below(200),
        },
        "latency": {"turns": 14, "p50_ms": 820.0, "p95_ms": 1340.0},
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let calls = arg("--calls", 100_000);
    let requests = arg("--requests", 30);
    let postgres = flag("--postgres");
    let dir = tempfile::tempdir().unwrap();
    let mut _pg_db = None;
    let database = if postgres {
        let Some(db) = store::testing::pg_test_db_for("bench_dashboard").await else {
            eprintln!("--postgres: no PostgreSQL reachable (see store::testing)");
            std::process::exit(2);
        };
        let url = db.url().to_string();
        _pg_db = Some(db);
        std::path::PathBuf::from(url)
    } else {
        dir.path().join("year.db")
    };
    let mut cfg = Config {
        database,
        instance: "bench-dashboard".into(),
        ..Config::default()
    };
    cfg.speech.local = "off".into();
    let password = "bench password";
    cfg.serve.operator_password_hash = calllock::operator::hash_password(password).unwrap();

    let store = calllock::wiring::open_store(&cfg).await.unwrap();
    let t = Instant::now();
    let now = chrono::Utc::now();
    let year_ago = now - chrono::Duration::days(365);
    // Final states and priorities roughly as a business sees them.
    let states: &[(&str, u64)] = &[
        ("confirm", 45),
        ("callback", 25),
        ("existing_appointment", 10),
        ("out_of_area", 8),
        ("non_service", 8),
        ("safety_exit", 4),
    ];
    let colours = ["green", "green", "blue", "gray", "red"];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Callers who call again: a number in three is a repeat caller's.
    let areas = ["512", "737", "214", "469", "832"];
    let distinct = (calls * 2 / 3).max(1) as u64;
    let number = |k: u64| {
        let area = areas[(k % areas.len() as u64) as usize];
        let rest = (k.wrapping_mul(2_654_435_761) % 9_000_000) + 1_000_000;
        format!("+1{area}{rest}")
    };
    let mut bytes = 0usize;
    // A number that called (mid-year), for the caller filter.
    let mut known = String::new();
    for i in 0..calls {
        let at = year_ago + chrono::Duration::seconds((i as i64) * 365 * 86_400 / calls as i64);
        let call_id = format!("CA{i:032x}");
        let phone = number(rng.below(distinct));
        if i == calls / 2 {
            known = phone.clone();
        }
        let name = format!("Customer {}", rng.below(50_000));
        let mut pick = rng.below(100);
        let state = states
            .iter()
            .find(|(_, w)| {
                if pick < *w {
                    true
                } else {
                    pick -= w;
                    false
                }
            })
            .map_or("confirm", |(s, _)| s);
        let rec = store::CallRecord {
            call_id: call_id.clone(),
            phone: phone.clone(),
            started_at: at,
            ended_at: Some(at + chrono::Duration::seconds(90 + rng.below(200) as i64)),
            final_state: state.into(),
            end_call_reason: "completed".into(),
            booking_status: if state == "confirm" {
                "confirmed".into()
            } else {
                String::new()
            },
            urgency: "Routine".into(),
            priority_color: colours[rng.below(colours.len() as u64) as usize].into(),
            revenue_tier: "standard_repair".into(),
            customer_name: name.clone(),
            problem: "AC blowing warm air".into(),
            record: record(&mut rng, &call_id, &phone, &name, state),
            transcript: transcript(&mut rng, at.timestamp() as f64),
        };
        if i % 1000 == 0 {
            bytes += rec.record.to_string().len() + rec.transcript.to_string().len();
        }
        // One call in 2,000 was cut off by a crash.
        let status = if i % 2000 == 1999 {
            store::CallStatus::Interrupted
        } else {
            store::CallStatus::Completed
        };
        store.save_call_as(&rec, status, true).await.unwrap();
        if (i + 1) % 20_000 == 0 {
            eprintln!(
                "  seeded {} calls ({:.0} s)",
                i + 1,
                t.elapsed().as_secs_f64()
            );
        }
    }
    // A few calls on the line now, owned by the server this bench starts
    // (the same process id), so recovery leaves them live.
    let owner = calllock::wiring::worker_name(&cfg);
    for k in 0..5u64 {
        let at = now.timestamp() as f64 - 60.0 * k as f64;
        store
            .begin_call(&format!("CA_live_{k}"), &number(k), at, &owner)
            .await
            .unwrap();
    }
    if postgres {
        // PostgreSQL plans from statistics, which autovacuum gathers within
        // a minute or so of this many inserts; gather them now rather than
        // time the planner's guesses about an empty table.
        store.analyze().await.unwrap();
    }
    store.close().await;
    println!(
        "seeded {calls} calls over a year on {} in {:.1} s (record + transcript ~{} bytes a call)",
        if postgres { "PostgreSQL" } else { "SQLite" },
        t.elapsed().as_secs_f64(),
        bytes / calls.div_ceil(1000).max(1)
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
    let cookie = r
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("signed in")
        .to_string();
    let get = |path: String| {
        let (client, cookie, base) = (client.clone(), cookie.clone(), base.clone());
        async move {
            client
                .get(format!("{base}{path}"))
                .header("cookie", cookie)
                .send()
                .await
                .unwrap()
        }
    };
    // The second page's cursor, as the first page hands it out.
    let first: Value = get("/api/calls".into()).await.json().await.unwrap();
    let cursor = first["next"].as_str().expect("a next page").to_string();
    let last4 = &known[known.len() - 4..];
    let day = |d: i64| {
        (now - chrono::Duration::days(d))
            .format("%Y-%m-%d")
            .to_string()
    };
    let (since, until) = (
        (now - chrono::Duration::days(200)).timestamp(),
        (now - chrono::Duration::days(170)).timestamp(),
    );
    let filters: Vec<(&str, String)> = vec![
        ("first page", String::new()),
        ("status=live", "status=live".into()),
        ("status=finished", "status=completed".into()),
        ("status=interrupted", "status=interrupted".into()),
        ("final_state=safety_exit", "final_state=safety_exit".into()),
        ("priority=red", "priority=red".into()),
        ("caller: a number", format!("caller={}", &known[2..])),
        ("caller: last 4 digits", format!("caller={last4}")),
        ("caller: digits nobody has", "caller=0000000".into()),
        ("caller: 1 digit", "caller=5".into()),
        ("second page (cursor)", format!("cursor={cursor}")),
        (
            "state+priority+status+cursor",
            format!("final_state=callback&priority=red&status=completed&cursor={cursor}"),
        ),
        (
            "caller+final_state",
            format!("caller={last4}&final_state=confirm"),
        ),
    ];
    let mut rows: Vec<(String, Duration, Duration, usize, u16)> = Vec::new();
    let time = |label: String, path: String| {
        let get = &get;
        async move {
            let mut times = Vec::with_capacity(requests);
            let (mut size, mut status) = (0, 0);
            for _ in 0..requests {
                let t = Instant::now();
                let r = get(path.clone()).await;
                status = r.status().as_u16();
                size = r.bytes().await.map_or(0, |b| b.len());
                times.push(t.elapsed());
            }
            times.sort();
            (
                label,
                percentile(&times, 0.5),
                percentile(&times, 0.95),
                size,
                status,
            )
        }
    };
    for (label, q) in &filters {
        let sep = if q.is_empty() { "" } else { "?" };
        rows.push(
            time(
                format!("/api/calls  {label}"),
                format!("/api/calls{sep}{q}"),
            )
            .await,
        );
    }
    rows.push(
        time(
            "/api/calls  since/until (30 days)".into(),
            format!("/api/calls?since={since}&until={until}"),
        )
        .await,
    );
    for (label, q) in &filters {
        let sep = if q.is_empty() { "" } else { "?" };
        rows.push(time(format!("/           {label}"), format!("/{sep}{q}")).await);
    }
    rows.push(
        time(
            "/           from/to (30 days)".into(),
            format!("/?from={}&to={}", day(200), day(170)),
        )
        .await,
    );
    server.stop().await;

    println!(
        "\n{:<46} {:>8} {:>8} {:>9} {:>6}  goal < {} ms",
        "filter",
        "p50 ms",
        "p95 ms",
        "bytes",
        "status",
        GOAL.as_millis()
    );
    let mut over = 0;
    for (label, p50, p95, size, status) in &rows {
        let ok = *p95 < GOAL && (200..300).contains(status);
        over += usize::from(!ok);
        println!(
            "{label:<46} {:>8.1} {:>8.1} {size:>9} {status:>6}  {}",
            p50.as_secs_f64() * 1000.0,
            p95.as_secs_f64() * 1000.0,
            if ok { "ok" } else { "OVER" }
        );
    }
    let worst = rows.iter().map(|r| r.2).max().unwrap_or_default();
    println!(
        "{} filters, {requests} requests each; worst p95 {:.1} ms: {}",
        rows.len(),
        worst.as_secs_f64() * 1000.0,
        if over == 0 {
            "every filter under 20 ms ✔".to_string()
        } else {
            format!("{over} OVER 20 ms (or failed) ✘")
        }
    );
}
