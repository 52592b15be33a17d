//! Load benchmark of the whole `calllock serve` stack (not in the test
//! suite): K concurrent phone calls over loopback WebSockets.
//!
//! The server is the release binary in its own process (`calllock serve`,
//! offline: the scripted responder paced like a model, the offline speech
//! codec). This process is the telephone network: K phones of `calllock
//! dial` (Twilio JSON + base64 µ-law, 20 ms frames from the caller, marks echoed at
//! playback) that say one line of a booking call every few seconds.
//! Everything a call does runs: µ-law decode, VAD, STT, turn-taking, the
//! engine, tools and journal, LLM stage, sentence aggregation, TTS,
//! resampling, paced playback with marks.
//!
//! Reported: the server's cores used (from /proc), CPU per call, RSS above
//! the idle baseline per *live* call (mid-run, when every call is live, and
//! at the end, when the first calls have ended: their post-call work and
//! the memory glibc keeps after it count there); outbound pacing jitter as the server
//! measures it (how late each frame, 40 ms by default, left against its
//! schedule, from
//! `/health?verbose=1`) and as the phones saw it (how late each message
//! arrived against a steady schedule — this includes the load generator's
//! own scheduling delays, since it shares the cores; the server sends
//! ~100 ms ahead, so lateness under that is inaudible); and the time from
//! the end of a caller line to the first agent audio.
//!
//! The load generator runs at a lower CPU priority (nice 10) than the
//! server, as the telephone network would run on other machines.
//!
//! ```sh
//! cargo bench -p calllock --bench serve_load -- --calls 1000 --seconds 30
//! ```
//!
//! With `--vendors`, the server hears and speaks through the production
//! vendors' protocols instead of in-process speech: loopback fakes of
//! Deepgram live STT (WebSocket), Inworld TTS (streaming NDJSON) and
//! Deepgram Aura run in this process (niced like the phones) and the
//! server talks to them over real sockets. The report then adds our own
//! latency per turn from the calls' stored latency records: everything but
//! the vendors' time and the endpointing/debounce waits (goal p99 < 20 ms).
//!
//! ```sh
//! cargo bench -p calllock --bench serve_load -- --vendors --calls 200 --seconds 30
//! ```
//!
//! With `--vendors` the LLM is a loopback OpenAI-compatible fake too (a
//! short reply after 0.4 s, the model's time to its first words), and two
//! flags make the vendors misbehave on a share of requests, chosen at
//! random per request (the same each run): `--tts-stall PCT` — Inworld
//! accepts the request and stalls, half of them before any audio and half
//! after the first word (the voice fallback hedges, or says the rest);
//! `--llm-hang PCT` — the LLM reads the request and never answers (half
//! with no headers, half with event-stream headers and no events: the
//! filler, the hedged retry and the scripted line cover it). The report
//! then adds the per-turn dead air as the phones heard it (goal: p99 ≤
//! 1.5 s): for each caller line, the longer of the wait for the first
//! agent audio and the longest pause inside the answer.
//!
//! ```sh
//! cargo bench -p calllock --bench serve_load -- --vendors --calls 50 --seconds 60 \
//!     --tts-stall 2 --llm-hang 2
//! ```
//!
//! To compare two builds on the same day (the machine's speed varies from
//! day to day), copy one build's `target/release/calllock` aside and pass
//! it as `-- --server PATH`: the same load runs against that binary.
//!
//! With `--instances N` (N > 1), N servers share one PostgreSQL database
//! (a fresh one on the local server) behind HAProxy run with the
//! project's `deploy/haproxy.cfg` (`scripts/setup-balancer`): the phones
//! dial the balancer, and the report gives each instance's cores, memory
//! per live call and pacing, then the totals.
//!
//! ```sh
//! cargo bench -p calllock --bench serve_load -- --instances 3 --calls 600 --seconds 30
//! ```
//!
//! `--postgres` puts a single server on a fresh PostgreSQL database too
//! (default: SQLite in a temporary folder). `--playout-threads N` sets the
//! servers' `serve.playout_threads`; `--output-frame-ms N` their
//! `serve.output_frame_ms` (agent audio per `media` message).
//!
//! To profile the server, start it yourself (under `heaptrack`, `perf`…)
//! and point the load at it: `-- --url http://127.0.0.1:8765 --pid PID`
//! (`--pid` is the process whose CPU and RSS are reported; without it they
//! are not). Its `max_calls` must allow the load. Or let the bench start
//! it under a wrapper, which also works with `--vendors` (the server's
//! configuration points at this process's fakes): `SERVE_LOAD_WRAP=
//! "heaptrack -o /tmp/serve"` runs `heaptrack -o /tmp/serve calllock
//! serve`. The reported CPU and RSS are then the wrapper's; read the
//! profile instead (`heaptrack_print --print-peaks`).
//!
//! After the run the report counts what each call wrote to its journal,
//! by kind: every event waits in its call's queue until it is written.

#[path = "../tests/support/balancer.rs"]
mod balancer;
#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

use calllock::dial::phone::PhoneLog;
use calllock::dial::{place_call, Answer, DialOptions};
use std::io::BufRead;
use std::time::{Duration, Instant};

/// The caller lines of `examples/replays/booking.jsonl`, without the
/// goodbye (the agent would hang up; every call stays live until the end
/// of the measurement, when the phone hangs up).
fn lines() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/replays/booking.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("examples/replays/booking.jsonl");
    calllock::cli::script::parse(&text)
        .expect("a valid script")
        .into_iter()
        .filter_map(|i| match i {
            calllock::call::driver::ScriptItem::Caller { text, .. } => Some(text),
            _ => None,
        })
        .filter(|t| !t.to_lowercase().contains("bye"))
        .collect()
}

struct Args {
    calls: usize,
    seconds: u64,
    ramp: u64,
    every: f64,
    url: Option<String>,
    pid: Option<u32>,
    vendors: bool,
    server: Option<String>,
    /// Per cent of TTS requests stalled (`--vendors` only).
    tts_stall: f64,
    /// Per cent of LLM replies hung (`--vendors` only).
    llm_hang: f64,
    /// Servers behind the balancer (1: one server, no balancer).
    instances: usize,
    /// The servers' `serve.playout_threads` (None: their default).
    playout_threads: Option<usize>,
    /// The servers' `serve.output_frame_ms` (None: their default).
    output_frame_ms: Option<u64>,
    /// One server on PostgreSQL (`--instances` always is).
    postgres: bool,
}

fn args() -> Args {
    let mut a = Args {
        calls: 1000,
        seconds: 30,
        ramp: 20,
        every: 5.0,
        url: None,
        pid: None,
        vendors: false,
        server: None,
        tts_stall: 0.0,
        llm_hang: 0.0,
        instances: 1,
        playout_threads: None,
        output_frame_ms: None,
        postgres: false,
    };
    let v: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < v.len() {
        let next = v.get(i + 1).cloned().unwrap_or_default();
        match v[i].as_str() {
            "--calls" => a.calls = next.parse().expect("--calls N"),
            "--seconds" => a.seconds = next.parse().expect("--seconds S"),
            "--ramp" => a.ramp = next.parse().expect("--ramp S"),
            "--every" => a.every = next.parse().expect("--every S"),
            "--url" => a.url = Some(next),
            "--pid" => a.pid = Some(next.parse().expect("--pid PID")),
            "--server" => a.server = Some(next),
            "--tts-stall" => a.tts_stall = next.parse().expect("--tts-stall PCT"),
            "--llm-hang" => a.llm_hang = next.parse().expect("--llm-hang PCT"),
            "--instances" => a.instances = next.parse().expect("--instances N"),
            "--output-frame-ms" => {
                a.output_frame_ms = Some(next.parse().expect("--output-frame-ms N"))
            }
            "--playout-threads" => {
                a.playout_threads = Some(next.parse().expect("--playout-threads N"))
            }
            "--vendors" => {
                a.vendors = true;
                i += 1;
                continue;
            }
            "--postgres" => {
                a.postgres = true;
                i += 1;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    a
}

/// (utime + stime in seconds, RSS in KiB) of a process.
fn proc_usage(pid: u32) -> (f64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = 100.0; // USER_HZ
    let cpu = f.get(11).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    (cpu / tick, rss)
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

async fn one_call(
    o: DialOptions,
    lines: std::sync::Arc<Vec<String>>,
    every: Duration,
    stop_at: Instant,
    offset: Duration,
) -> Option<PhoneLog> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let phone = match place_call(&o, tx).await {
        Ok(Answer::Connected(p)) => p,
        Ok(Answer::TurnedAway(_)) => return None,
        Err(e) => {
            eprintln!("call failed: {e:#}");
            return None;
        }
    };
    // Drain events (words) so the channel stays small.
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    tokio::time::sleep(offset).await;
    let mut i = 0;
    while Instant::now() < stop_at {
        phone.say(&lines[i % lines.len()]);
        i += 1;
        tokio::time::sleep(every).await;
    }
    phone.hang_up();
    Some(phone.finished().await)
}

/// The server's `/health?verbose=1`.
async fn server_health(addr: &str) -> serde_json::Value {
    match reqwest::get(format!("{addr}/health?verbose=1")).await {
        Ok(r) => r.json::<serde_json::Value>().await.unwrap_or_default(),
        Err(e) => serde_json::json!({"error": e.to_string()}),
    }
}

/// The vendors' fakes, on their own niced runtime thread.
struct VendorFakes {
    deepgram: String,
    inworld: String,
    aura: String,
    openai: String,
    /// Inworld (to count the requests it stalled on purpose).
    tts_stalled: std::sync::Arc<providers::inworld::fake::FakeInworld>,
    /// LLM replies hung on purpose so far.
    llm_hung: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The fake LLM: replies after `FIRST_WORDS`, `hang` of them (0–1, at
/// random) never answered; extraction and classification as in the tests.
fn llm_handler(
    hang: f64,
    hung: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> providers::fake::openai::Handler {
    use providers::fake::openai::Behaviour;
    use std::sync::atomic::{AtomicU64, Ordering};
    const FIRST_WORDS: Duration = Duration::from_millis(400);
    let replies = AtomicU64::new(0);
    std::sync::Arc::new(move |body: &serde_json::Value| {
        if body["stream"] != true {
            return fake_llm::llm_handler(body);
        }
        let n = replies.fetch_add(1, Ordering::Relaxed);
        let draw = providers::fake::unit_draw(0x11A6, n);
        if draw < hang {
            hung.fetch_add(1, Ordering::Relaxed);
            return Some(if draw < hang / 2.0 {
                Behaviour::Hang
            } else {
                Behaviour::Stall { chunks: Vec::new() }
            });
        }
        Some(Behaviour::Delay(
            FIRST_WORDS,
            Box::new(Behaviour::Reply(fake_llm::LLM_LINE.into())),
        ))
    })
}

fn start_vendor_fakes(a: &Args) -> VendorFakes {
    use providers::deepgram::aura_fake::{FakeAura, FakeAuraConfig};
    use providers::deepgram::fake::{FakeBehaviour, FakeDeepgram};
    use providers::fake::openai::FakeOpenAi;
    use providers::inworld::fake::{FakeConfig, FakeInworld};
    let (tts_stall, llm_hang) = (a.tts_stall / 100.0, a.llm_hang / 100.0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: setpriority has no memory-safety preconditions.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("fakes' runtime");
        rt.block_on(async move {
            let dg = FakeDeepgram::start(FakeBehaviour {
                keep_audio: false,
                ..FakeBehaviour::default()
            })
            .await;
            let iw = std::sync::Arc::new(
                FakeInworld::start(FakeConfig {
                    stall_share: tts_stall,
                    stall_seed: 0x7757,
                    ..FakeConfig::default()
                })
                .await,
            );
            let aura = FakeAura::start(FakeAuraConfig::default()).await;
            let llm = FakeOpenAi::start(vec![]).await;
            let hung = std::sync::Arc::default();
            llm.set_handler(llm_handler(llm_hang, std::sync::Arc::clone(&hung)));
            let _ = tx.send(VendorFakes {
                deepgram: dg.base_url(),
                inworld: iw.base_url(),
                aura: aura.base_url(),
                openai: llm.base_url(),
                tts_stalled: iw.clone(),
                llm_hung: hung,
            });
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("vendor fakes started")
}

/// Start `calllock serve` (offline, or with the vendor fakes, in a
/// temporary directory) for `calls`.
fn start_server(
    dir: &std::path::Path,
    calls: usize,
    vendors: Option<&VendorFakes>,
    a: &Args,
    name: &str,
    db: Option<&str>,
) -> (std::process::Child, String) {
    let conf = dir.join(format!("{name}.toml"));
    let mut toml = format!("[serve]\nport = 0\nmax_calls = {}\n", calls + 100);
    if let Some(n) = a.playout_threads {
        toml.push_str(&format!("playout_threads = {n}\n"));
    }
    if let Some(ms) = a.output_frame_ms {
        toml.push_str(&format!("output_frame_ms = {ms}\n"));
    }
    if let Some(v) = vendors {
        toml.push_str(&format!(
            "vad = \"codec\"\n[deepgram]\napi_key = \"test-key\"\nurl = \"{}\"\ntts_url = \"{}\"\n\
             [inworld]\napi_key = \"test-key\"\nurl = \"{}\"\n\
             [llm]\napi_key = \"test-key\"\nbase_url = \"{}\"\n",
            v.deepgram, v.aura, v.inworld, v.openai
        ));
    }
    std::fs::write(&conf, toml).expect("config");
    let binary = a
        .server
        .as_deref()
        .unwrap_or(env!("CARGO_BIN_EXE_calllock"));
    let database = match db {
        Some(url) => url.to_string(),
        None => dir.join("calls.db").display().to_string(),
    };
    let wrap = std::env::var("SERVE_LOAD_WRAP").ok();
    let mut cmd = match wrap.as_deref() {
        Some(w) => {
            let mut words = w.split_whitespace();
            let mut c = std::process::Command::new(words.next().expect("wrapper"));
            c.args(words).arg(binary);
            c
        }
        None => std::process::Command::new(binary),
    };
    let mut child = cmd
        // The offline speech codec, which the phones here speak.
        .env("CALLLOCK_LOCAL_SPEECH", "off")
        .arg("serve")
        .env("CALLLOCK_CONFIG", &conf)
        .env("CALLLOCK_INSTANCE", name)
        .env("CALLLOCK_DATABASE", database)
        .env("CALLLOCK_LOG", "error")
        .stderr(std::process::Stdio::null())
        .env_remove("TWILIO_AUTH_TOKEN")
        .env_remove("PORT")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start calllock serve");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    while !first.starts_with("listening on ") {
        first.clear();
        if out.read_line(&mut first).expect("first line") == 0 {
            panic!("the server ended before it listened");
        }
    }
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .expect("listening line")
        .to_string();
    std::thread::spawn(move || for _ in out.lines() {});
    (child, addr)
}

/// A server under load: where it listens and, when known, its process.
struct Served {
    name: String,
    addr: String,
    pid: Option<u32>,
    child: Option<std::process::Child>,
}

/// The servers (one, or `--instances` behind the balancer), the URL the
/// phones dial, and what keeps them up.
struct Servers {
    all: Vec<Served>,
    url: String,
    _balancer: Option<balancer::Balancer>,
    /// The shared PostgreSQL database (`--instances`).
    pg: Option<store::testing::TestDb>,
}

fn start_servers(a: &Args, dir: &std::path::Path, fakes: Option<&VendorFakes>) -> Servers {
    if let Some(url) = &a.url {
        let url = url.trim_end_matches('/').to_string();
        return Servers {
            all: vec![Served {
                name: "server".into(),
                addr: url.clone(),
                pid: a.pid,
                child: None,
            }],
            url,
            _balancer: None,
            pg: None,
        };
    }
    // One server, dialled directly.
    let one = |pg: Option<store::testing::TestDb>| {
        let (child, addr) = start_server(
            dir,
            a.calls,
            fakes,
            a,
            "server",
            pg.as_ref().map(|p| p.url()),
        );
        Servers {
            all: vec![Served {
                name: "server".into(),
                pid: Some(child.id()),
                addr: addr.clone(),
                child: Some(child),
            }],
            url: addr,
            _balancer: None,
            pg,
        }
    };
    if a.instances <= 1 && !a.postgres {
        return one(None);
    }
    let pg = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(store::testing::pg_test_db_for("serve_load"))
        .expect("--instances and --postgres need PostgreSQL on this machine (see the SKIP line)");
    if a.instances <= 1 {
        return one(Some(pg));
    }
    if let Some(why) = balancer::missing() {
        panic!("--instances needs the balancer: {why}");
    }
    let all: Vec<Served> = (1..=a.instances)
        .map(|i| {
            let name = format!("load-{i}");
            let (child, addr) = start_server(dir, a.calls, fakes, a, &name, Some(pg.url()));
            Served {
                name,
                pid: Some(child.id()),
                addr,
                child: Some(child),
            }
        })
        .collect();
    let addrs: Vec<std::net::SocketAddr> = all
        .iter()
        .map(|s| {
            s.addr
                .trim_start_matches("http://")
                .parse()
                .expect("a server address")
        })
        .collect();
    let lb = balancer::Balancer::start(dir, &addrs);
    println!(
        "serve_load: {} instances on one PostgreSQL database behind HAProxy (deploy/haproxy.cfg) at {}",
        all.len(),
        lb.url
    );
    Servers {
        url: lb.url.clone(),
        all,
        _balancer: Some(lb),
        pg: Some(pg),
    }
}

fn main() {
    let a = args();
    let dir = tempfile::tempdir().expect("temp dir");
    let fakes = (a.vendors && a.url.is_none()).then(|| start_vendor_fakes(&a));
    let mut servers = start_servers(&a, dir.path(), fakes.as_ref());
    let addr = servers.url.clone();
    let proc_usage = |pid: Option<u32>| pid.map_or((0.0, 0), proc_usage);
    std::thread::sleep(Duration::from_millis(500));
    let rss0: Vec<u64> = servers.all.iter().map(|s| proc_usage(s.pid).1).collect();

    // The generator yields the cores to the server (threads made from here
    // on inherit the niceness).
    // SAFETY: setpriority has no memory-safety preconditions.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let every = Duration::from_secs_f64(a.every);
    let t0 = Instant::now();
    let settle = Duration::from_secs(a.ramp + 5);
    let stop_at = t0 + settle + Duration::from_secs(a.seconds);
    println!(
        "serve_load: {} calls ramped over {} s, measured for {} s, a caller line every {:.1} s",
        a.calls, a.ramp, a.seconds, a.every
    );
    let script = std::sync::Arc::new(lines());
    let logs = rt.block_on(async {
        let mut tasks = Vec::new();
        for k in 0..a.calls {
            let o = DialOptions {
                url: addr.clone(),
                from: format!("+1512{:07}", 5_550_000 + k),
                to: "+15125550000".into(),
                auth_token: None,
                chars_per_second: 15.0,
                speech: Default::default(),
                record: None,
            };
            let offset = Duration::from_secs_f64(a.every * (k as f64 / a.calls as f64));
            let at = t0 + Duration::from_secs_f64(a.ramp as f64 * k as f64 / a.calls as f64);
            let script = script.clone();
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep_until(at.into()).await;
                one_call(o, script, every, stop_at, offset).await
            }));
        }
        tokio::time::sleep_until((t0 + settle).into()).await;
        let cpu_a: Vec<f64> = servers.all.iter().map(|s| proc_usage(s.pid).0).collect();
        let wall_a = Instant::now();
        tokio::time::sleep(Duration::from_secs(a.seconds) / 2).await;
        let mut mid = Vec::new();
        for s in &servers.all {
            let rss = proc_usage(s.pid).1;
            let live = server_health(&s.addr).await["live_calls"].as_u64().unwrap_or(0);
            mid.push((rss, live));
        }
        tokio::time::sleep_until((stop_at - Duration::from_millis(200)).into()).await;
        let mut end = Vec::new();
        for (i, s) in servers.all.iter().enumerate() {
            let (cpu_b, rss_b) = proc_usage(s.pid);
            end.push((cpu_b - cpu_a[i], rss_b, server_health(&s.addr).await));
        }
        let wall = wall_a.elapsed().as_secs_f64();
        let mut logs = Vec::new();
        for t in tasks {
            if let Ok(Some(l)) = t.await {
                logs.push(l);
            }
        }
        let n = logs.len().max(1) as f64;
        println!("calls completed: {} of {}", logs.len(), a.calls);
        let per_call =
            |rss: u64, rss0: u64, live: u64| rss.saturating_sub(rss0) as f64 / live.max(1) as f64;
        let mut total = (0.0, 0u64, 0u64, 0u64, 0u64, 0u64);
        for (i, s) in servers.all.iter().enumerate() {
            let (cpu, rss_b, health) = &end[i];
            let (rss_mid, live_mid) = mid[i];
            let live_end = health["live_calls"].as_u64().unwrap_or(0);
            let cores = cpu / wall;
            let pacing = &health["pacing"];
            let who = if servers.all.len() > 1 {
                format!("{}: ", s.name)
            } else {
                String::new()
            };
            println!(
                "{who}server: {} live calls, {} tasks, playout threads {} carrying {}",
                health["live_calls"], health["tasks"], health["playout"]["threads"], health["playout"]["calls"]
            );
            println!(
                "{who}server: {cores:.2} cores; {:.2} % of a core per call; RSS {} MiB ({} KiB idle), \
                 {:.1} KiB per live call mid-run ({live_mid} live), {:.1} KiB at the end ({live_end} live)",
                100.0 * cores * servers.all.len() as f64 / n,
                rss_mid.max(*rss_b) / 1024,
                rss0[i],
                per_call(rss_mid, rss0[i], live_mid),
                per_call(*rss_b, rss0[i], live_end),
            );
            println!(
                "{who}server pacing over {} frames: late p50 < {} ms, p99 < {} ms, max {} ms; {} frames 20 ms late or more",
                pacing["frames"], pacing["late_p50_ms"], pacing["late_p99_ms"],
                pacing["late_max_ms"], pacing["late_20ms_or_more"]
            );
            total.0 += cores;
            total.1 += rss_mid.saturating_sub(rss0[i]);
            total.2 += live_mid;
            total.3 += pacing["frames"].as_u64().unwrap_or(0);
            total.4 += pacing["late_20ms_or_more"].as_u64().unwrap_or(0);
            total.5 = total.5.max(pacing["late_p99_ms"].as_u64().unwrap_or(0));
        }
        if servers.all.len() > 1 {
            println!(
                "all {} instances: {:.2} cores, {:.1} KiB per live call mid-run ({} live), \
                 pacing over {} frames: worst instance p99 < {} ms, {} frames 20 ms late or more",
                servers.all.len(),
                total.0,
                total.1 as f64 / total.2.max(1) as f64,
                total.2,
                total.3,
                total.5,
                total.4
            );
        }
        logs
    });
    let mut late: Vec<Duration> = logs
        .iter()
        .flat_map(|l| l.media_lateness.iter().copied())
        .collect();
    let mut reply: Vec<Duration> = logs
        .iter()
        .flat_map(|l| l.reply_latencies.iter().copied())
        .collect();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let clears: usize = logs.iter().map(|l| l.clears).sum();
    let agent_s: f64 = logs.iter().map(|l| l.agent_audio_ms as f64 / 1000.0).sum();
    println!(
        "agent audio received: {:.1} s per call on average; {} barge-in clears in all",
        agent_s / logs.len().max(1) as f64,
        clears
    );
    println!(
        "arrival lateness at the phones over {} media messages: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        late.len(),
        ms(pct(&mut late, 0.5)),
        ms(pct(&mut late, 0.99)),
        ms(pct(&mut late, 1.0))
    );
    println!(
        "end of caller speech -> first agent audio over {} turns: p50 {:.0} ms, p99 {:.0} ms \
         (includes 500 ms endpointing and the paced offline LLM)",
        reply.len(),
        ms(pct(&mut reply, 0.5)),
        ms(pct(&mut reply, 0.99))
    );
    let mut air: Vec<Duration> = logs
        .iter()
        .flat_map(|l| l.turn_dead_air.iter().copied())
        .collect();
    println!(
        "dead air per turn (in playback time: caller line end -> first agent audio, the longest \
         pause inside the answer, or a line never answered until the next) over {} turns: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (goal: p99 <= 1500 ms)",
        air.len(),
        ms(pct(&mut air, 0.5)),
        ms(pct(&mut air, 0.99)),
        ms(pct(&mut air, 1.0))
    );
    if let Some(f) = &fakes {
        println!(
            "faults: {} TTS requests stalled (--tts-stall {} %), {} LLM replies hung (--llm-hang {} %)",
            f.tts_stalled.stalled(),
            a.tts_stall,
            f.llm_hung.load(std::sync::atomic::Ordering::Relaxed),
            a.llm_hang
        );
    }
    let mut stopped = false;
    for s in servers.all.iter_mut() {
        if let Some(child) = s.child.as_mut() {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let _ = child.wait();
            stopped = true;
        }
    }
    if stopped {
        let store = rt.block_on(async {
            match &servers.pg {
                Some(pg) => pg.store().await,
                None => store::Store::open(&dir.path().join("calls.db")).await,
            }
        });
        match store {
            Ok(store) => rt.block_on(report_latency(&store)),
            Err(e) => println!("latency: cannot open the database: {e}"),
        }
    }
}

/// Our own added latency per turn, from the calls' stored latency records.
async fn report_latency(store: &store::Store) {
    let calls = store.list_calls(None, 100_000).await.unwrap_or_default();
    let mut turns = Vec::new();
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    for c in &calls {
        if let Ok(events) = store.events(&c.call_id).await {
            for e in &events {
                *kinds.entry(e.kind.clone()).or_default() += 1;
            }
            turns.extend(calllock::call::latency::from_events(&events));
        }
    }
    // What each call wrote to its journal, by kind (a busy journal is
    // memory: events wait in the call's queue until written).
    let per_call = |n: usize| n as f64 / calls.len().max(1) as f64;
    println!(
        "journal: {:.1} events per call ({})",
        per_call(kinds.values().sum()),
        kinds
            .iter()
            .map(|(k, n)| format!("{k} {:.1}", per_call(*n)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "per-turn latency over {} turns of {} calls (ms from the caller's speech end):",
        turns.len(),
        calls.len()
    );
    type Measure = fn(&calllock::call::latency::TurnLatency) -> Option<f64>;
    let rows: [(&str, Measure); 7] = [
        ("ours (total)", |t| t.ours_ms()),
        ("ours: stt final -> request", |t| t.ours_before_ms()),
        ("ours: first audio -> out", |t| t.ours_after_ms()),
        ("behind earlier agent audio", |t| {
            t.behind_earlier_audio_ms()
        }),
        ("vendor: llm first token", |t| t.llm_ms()),
        ("vendor: tts first audio", |t| t.tts_ms()),
        ("first outbound audio", |t| t.first_outbound_ms),
    ];
    // Where the tail of our own time comes from: the slowest turns whole.
    let mut worst: Vec<&calllock::call::latency::TurnLatency> =
        turns.iter().filter(|t| t.ours_ms().is_some()).collect();
    worst.sort_by(|a, b| b.ours_ms().partial_cmp(&a.ours_ms()).unwrap());
    for t in worst.iter().take(3) {
        println!(
            "  slowest turn by our own time: {}",
            serde_json::to_string(t).unwrap_or_default()
        );
    }
    for (name, measure) in rows {
        let v: Vec<f64> = turns.iter().filter_map(measure).collect();
        let p = |q| calllock::call::latency::percentile(&v, q).unwrap_or(f64::NAN);
        println!(
            "  {name:<28} p50 {:>7.1} ms  p99 {:>7.1} ms  max {:>7.1} ms  ({} turns)",
            p(50.0),
            p(99.0),
            p(100.0),
            v.len()
        );
    }
}
