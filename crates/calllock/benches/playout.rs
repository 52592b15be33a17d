//! Playout capacity per thread (not in the test suite): how many calls one
//! playout thread paces with frames on time, measured on its own, so the
//! design's scaling can be read on any machine (`serve.playout_threads` ×
//! this figure is what the playout can carry; the rest of a call runs on
//! the other cores).
//!
//! What runs on the playout thread is exactly what runs there in `calllock
//! serve`: each call's resample and output stages (the telephone's last
//! two, which hand the voice's audio to the player), its player
//! ([`voice::stages::output::Player`], paced
//! frames of `serve.output_frame_ms` — 40 ms by default, as the server —
//! with the server's 100 ms lead), its [`TwilioSink`] (PCM16 →
//! µ-law → base64 JSON `media` messages, a `mark` every 200 ms) and its
//! socket writer ([`write_loop`], a real axum WebSocket on loopback). The
//! agent's audio is fed to each player as a voice would (queued ahead,
//! waiting while the player's queue is full) from the main runtime; a
//! niced runtime of phones reads every message. Each step runs K calls
//! for a while and reports the pacing the players measured (how late
//! frames left against their schedule, as `/health` reports it) and how
//! busy the playout thread was (its CPU time from /proc).
//!
//! ```sh
//! cargo bench -p calllock --bench playout -- --calls 500,1000,2000,3000 --seconds 10
//! ```
//!
//! `--output-frame-ms N` sets the agent audio per `media` message (20 to
//! 100, whole 20 ms frames), for comparing message sizes on one build.
//!
//! The capacity is the largest K whose pacing p99 stays under 20 ms (in
//! the bucket bounded by 20 ms or a lower one); the thread's busy share
//! says how close it was.

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::routing::get;
use calllock::serve::playout::{self, Playout};
use calllock::serve::twilio_call::write_loop;
use calllock::serve::twilio_sink::TwilioSink;
use futures_util::StreamExt;
use providers::twilio::marks::MarkLedger;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use voice::floor::Floor;
use voice::frames::{Audio, Data, Frame};
use voice::pacing::PacingStats;
use voice::scope::CallScope;
use voice::stages::output::Player;
use voice::telephone::speaker_stages;
use voice::Pipeline;

struct Args {
    calls: Vec<usize>,
    seconds: u64,
    /// Agent audio per `media` message (ms), as `serve.output_frame_ms`.
    frame_ms: u64,
}

fn args() -> Args {
    let mut a = Args {
        calls: vec![500, 1000, 1500, 2000, 3000],
        seconds: 10,
        frame_ms: calllock::config::ServeSection::default().output_frame_ms,
    };
    let v: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < v.len() {
        let next = v.get(i + 1).cloned().unwrap_or_default();
        match v[i].as_str() {
            "--calls" => {
                a.calls = next
                    .split(',')
                    .map(|n| n.trim().parse().expect("--calls N[,N…]"))
                    .collect()
            }
            "--seconds" => a.seconds = next.parse().expect("--seconds S"),
            "--output-frame-ms" => a.frame_ms = next.parse().expect("--output-frame-ms N"),
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    a
}

/// What a step shares with the server side of its calls.
struct Step {
    pool: &'static Playout,
    pacing: Arc<PacingStats>,
    /// Cancelled when the step ends: every call stops.
    scope: Arc<CallScope>,
    frame_ms: u64,
}

/// The server side of one call: the player, sink and writer on the
/// playout, the agent's audio fed from here.
async fn call(socket: axum::extract::ws::WebSocket, step: Arc<Step>) {
    let (ws_tx, mut ws_rx) = socket.split();
    let lane = step.pool.assign();
    let (out_tx, out_rx) = futures_channel::mpsc::unbounded();
    let writer = lane.handle().spawn(write_loop(ws_tx, out_rx));
    let ledger = Arc::new(Mutex::new(MarkLedger::new(200)));
    let sink = TwilioSink::new(out_tx, "MZbench".into(), ledger).with_frame(step.frame_ms);
    // The telephone's last two stages, on the playout as the server puts
    // them, feed the player.
    let mut stages = speaker_stages(Pipeline::builder(), Some(lane.handle())).build();
    let tx = stages.input().expect("the resample stage").clone();
    let player = Player::new(
        sink,
        stages.take_tail().expect("built with a tail"),
        stages
            .stage_control(stages.len() - 1)
            .expect("the output stage, the last"),
        stages.scope().clone(),
        Arc::new(Floor::default()),
    )
    .with_lead(Duration::from_millis(100))
    .with_pacing(step.pacing.clone());
    let player = lane.handle().spawn(player.run());
    // The voice: one long utterance, in 100 ms chunks, queued ahead (as
    // the TTS stage hands them on, from the main runtime).
    let feed = tokio::spawn(async move {
        let chunk = Audio::pcm16(vec![0x10u8; 8000 * 2 / 10], 8000);
        loop {
            let f = Frame::data(
                0,
                Data::OutputAudio {
                    id: 1,
                    audio: chunk.clone(),
                },
            );
            if tx.send(f).await.is_err() {
                break;
            }
        }
    });
    // The phone's side: read (and drop) whatever it sends, until it closes
    // or the step ends.
    tokio::select! {
        _ = step.scope.call_token().cancelled() => {}
        _ = async { while let Some(Ok(_)) = ws_rx.next().await {} } => {}
    }
    feed.abort();
    stages.cancel(Duration::from_secs(5)).await;
    let _ = player.await;
    let _ = writer.await;
    drop(lane);
}

/// The playout thread's CPU time so far (seconds), from /proc.
fn playout_cpu() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim().starts_with("calllock-playou") {
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            let f: Vec<&str> = after.split_whitespace().collect();
            let ticks = f.get(11).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0)
                + f.get(12).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
            return ticks / 100.0;
        }
    }
    0.0
}

fn main() {
    let a = args();
    // The playout thread first, at the process's priority (as `serve`
    // starts it); everything else behind it.
    let pool = playout::start(1);
    playout::run_behind_playout();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // The phones on a runtime of their own, further behind.
    let (phones_tx, phones_rx) = std::sync::mpsc::channel::<tokio::runtime::Handle>();
    std::thread::spawn(move || {
        // SAFETY: setpriority has no memory-safety preconditions.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("phones' runtime");
        phones_tx.send(rt.handle().clone()).unwrap();
        rt.block_on(std::future::pending::<()>());
    });
    let phones = phones_rx.recv().unwrap();
    println!(
        "playout: one playout thread; per step K calls of continuous agent audio for {} s, {} ms per media message",
        a.seconds,
        calllock::serve::twilio_sink::output_frame(a.frame_ms).as_millis()
    );
    let mut capacity = 0;
    for &k in &a.calls {
        let step = Arc::new(Step {
            pool,
            pacing: Arc::default(),
            scope: Arc::new(CallScope::new()),
            frame_ms: a.frame_ms,
        });
        let (addr, server) = rt.block_on(async {
            let app = axum::Router::new()
                .route(
                    "/ws",
                    get(
                        |ws: WebSocketUpgrade, State(step): State<Arc<Step>>| async move {
                            ws.on_upgrade(move |socket| call(socket, step))
                        },
                    ),
                )
                .with_state(step.clone());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            (
                addr,
                tokio::spawn(async move { axum::serve(listener, app).await }),
            )
        });
        // Connect the phones, a few at a time.
        let connected = phones.block_on(async move {
            let mut sockets = Vec::new();
            for _ in 0..k {
                let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
                    .await
                    .expect("connect a phone");
                sockets.push(ws);
            }
            sockets
        });
        let readers: Vec<_> = connected
            .into_iter()
            .map(|mut ws| {
                phones.spawn(async move {
                    let mut n = 0u64;
                    while let Some(Ok(_)) = ws.next().await {
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        // Settle, then measure from fresh counters.
        std::thread::sleep(Duration::from_secs(2));
        step.pacing.reset();
        let cpu0 = playout_cpu();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs(a.seconds));
        let busy = (playout_cpu() - cpu0) / t0.elapsed().as_secs_f64();
        let after = step.pacing.summary();
        let frames = after.frames;
        println!(
            "{k:>6} calls: {frames} frames ({:.0}/s); late p50 < {} ms, p99 < {} ms, max {:.1} ms; \
             {} frames 20 ms late or more; playout thread busy {:.0} %",
            frames as f64 / t0.elapsed().as_secs_f64(),
            after.p50_ms,
            after.p99_ms,
            after.max_ms,
            after.late_20ms,
            100.0 * busy
        );
        // `p99_ms` is its bucket's upper bound: 20 means "< 20 ms".
        if after.p99_ms <= 20 {
            capacity = capacity.max(k);
        }
        // End the step: every player stops, every socket closes.
        step.scope.cancel();
        server.abort();
        for r in readers {
            r.abort();
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    println!(
        "capacity: {capacity} calls per playout thread with pacing p99 < 20 ms \
         (of the steps run; the busy share tells how far above it could go)"
    );
}
