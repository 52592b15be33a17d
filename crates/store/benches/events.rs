//! Event-log append latency under many concurrent calls.
//!
//! ```sh
//! cargo bench -p store --bench events                        # SQLite WAL file in a temp dir
//! cargo bench -p store --bench events -- --calls 200 --seconds 10
//! cargo bench -p store --bench events -- --pg postgres://postgres@127.0.0.1/postgres
//! ```
//!
//! Each simulated call is a tokio task that begins its call, then appends
//! an event (a realistic ~150-byte JSON payload) every 20–50 ms (uniformly
//! jittered) until the time is up. Latency is measured from the call of
//! `append_event` to its return — i.e. to the commit. Reported: p50, p90,
//! p99, p99.9, max, the share over 50 µs and over 1 ms, event count and
//! rate. `--threads` sets the runtime's worker threads (default 2, the CI
//! machine's cores).

use serde_json::json;
use std::time::{Duration, Instant};
use store::Store;

struct Opts {
    calls: usize,
    seconds: f64,
    pg: Option<String>,
    min_ms: u64,
    max_ms: u64,
    threads: usize,
}

const USAGE: &str =
    "usage: events [--calls N] [--seconds S] [--pg URL] [--min-ms MS] [--max-ms MS] [--threads N]";

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        calls: 200,
        seconds: 10.0,
        pg: None,
        min_ms: 20,
        max_ms: 50,
        threads: 2,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        let num = |name: &str, v: String| {
            v.parse::<f64>()
                .map_err(|_| format!("{name}: not a number: {v:?}"))
        };
        match a.as_str() {
            "--calls" => o.calls = num("--calls", val("--calls")?)? as usize,
            "--seconds" => o.seconds = num("--seconds", val("--seconds")?)?,
            "--pg" => o.pg = Some(val("--pg")?),
            "--min-ms" => o.min_ms = num("--min-ms", val("--min-ms")?)? as u64,
            "--max-ms" => o.max_ms = num("--max-ms", val("--max-ms")?)? as u64,
            "--threads" => o.threads = num("--threads", val("--threads")?)?.max(1.0) as usize,
            // `cargo bench` passes --bench.
            "--bench" => {}
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if o.calls == 0 || o.seconds <= 0.0 || o.min_ms > o.max_ms {
        return Err(format!("nothing to do\n{USAGE}"));
    }
    Ok(o)
}

/// xorshift64*: jitter without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64 / 1000.0
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(e) = rt.block_on(run(o)) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run(o: Opts) -> Result<(), store::StoreError> {
    let dir = std::env::temp_dir().join(format!("calllock-bench-events-{}", std::process::id()));
    let store = match &o.pg {
        Some(url) => Store::connect(url).await?,
        None => {
            let _ = std::fs::remove_dir_all(&dir);
            Store::open(&dir.join("bench.db")).await?
        }
    };
    let run_id = format!(
        "bench-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    );
    println!(
        "store {} ({}); {} calls, one event every {}-{} ms each, {} s, {} runtime threads",
        store.describe(),
        store.dialect(),
        o.calls,
        o.min_ms,
        o.max_ms,
        o.seconds,
        o.threads
    );
    // Warm up: start the writer, prepare the statement.
    store
        .append_event(&format!("{run_id}-warmup"), 0, 0.0, "warmup", &json!({}))
        .await?;

    let start = tokio::time::Instant::now();
    let end = start + Duration::from_secs_f64(o.seconds);
    let mut tasks = Vec::new();
    for c in 0..o.calls {
        let store = store.clone();
        let call_id = format!("{run_id}-{c:04}");
        let (min_ms, max_ms) = (o.min_ms, o.max_ms);
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (c as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
            let mut lat = Vec::with_capacity(1024);
            store.begin_call(&call_id, "+15125550100", 1.0e9, "bench").await?;
            // Calls do not start in lockstep.
            let mut next = start + Duration::from_millis(rng.range(0, max_ms));
            let mut seq = 0i64;
            loop {
                tokio::time::sleep_until(next).await;
                if tokio::time::Instant::now() >= end {
                    break;
                }
                seq += 1;
                let data = json!({
                    "msg_id": seq,
                    "state": "booking",
                    "text": "Sure — I can get a technician out Tuesday morning; what's the address?",
                    "epoch": seq / 3,
                });
                let t = Instant::now();
                store.append_event(&call_id, seq, 1.0e9 + seq as f64, "agent_said", &data).await?;
                lat.push(t.elapsed().as_nanos() as u64);
                next += Duration::from_millis(rng.range(min_ms, max_ms));
            }
            Ok::<_, store::StoreError>(lat)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("call task panicked")?);
    }
    let elapsed = start.elapsed().as_secs_f64();
    all.sort_unstable();
    let n = all.len();
    println!(
        "appends {n} in {elapsed:.1} s = {:.0} events/s",
        n as f64 / elapsed
    );
    println!(
        "append latency (call → committed), µs: p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
        pct(&all, 50.0),
        pct(&all, 90.0),
        pct(&all, 99.0),
        pct(&all, 99.9),
        pct(&all, 100.0)
    );
    let over = |us: u64| all.iter().filter(|&&ns| ns > us * 1000).count();
    println!(
        "over 50 µs: {} ({:.2}%), over 1 ms: {} ({:.3}%)",
        over(50),
        over(50) as f64 * 100.0 / n.max(1) as f64,
        over(1000),
        over(1000) as f64 * 100.0 / n.max(1) as f64
    );
    if o.pg.is_some() {
        // Leave the database as it was.
        sqlx::query("DELETE FROM call_events WHERE call_id LIKE $1")
            .bind(format!("{run_id}-%"))
            .execute(store.pool())
            .await?;
        sqlx::query("DELETE FROM calls WHERE call_id LIKE $1")
            .bind(format!("{run_id}-%"))
            .execute(store.pool())
            .await?;
    }
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
