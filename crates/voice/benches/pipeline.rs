//! Pipeline benchmarks (release build, JSON lines on stdout, progress on
//! stderr). They mirror the Pipecat workloads so the two can be compared.
//!
//! ```text
//! cargo bench -p voice --bench pipeline -- hop [--frames 20000] [--stages 1,10,50]
//! cargo bench -p voice --bench pipeline -- calls [--calls 100,1000,2000,5000] [--seconds 20] [--real]
//! ```
//!
//! - `hop`: N pass-through stages between a source and a timestamping sink.
//!   Throughput: 20,000 small text frames pushed as fast as the pipeline
//!   takes them. Serial latency: one frame at a time, the next sent when the
//!   sink has the previous one; per-hop = end-to-end / (N + 1) hand-offs.
//! - `calls`: K concurrent call pipelines, each 8 stages, each fed one audio
//!   frame every 20 ms in real time (320 bytes of PCM; with `--real`, 160
//!   bytes of 8 kHz µ-law through µ-law decode → 8→16 kHz resampling → VAD
//!   → 5 pass-through stages). Reports cores used, CPU per call, RSS per call
//!   (idle and peak) and the p99 lateness of arrival at the sink.

use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use voice::frames::{Audio, Data, Frame, UtteranceText};
use voice::passthrough::PassThrough;
use voice::{Ctx, Direction, Pipeline, Stage};

mod bench_stages {
    use voice::passthrough::PassThrough;
    use voice::stages::{mulaw::MuLawDecode, resample::InputResample, vad::VadStage};
    use voice::PipelineBuilder;

    /// µ-law decode → 8→16 kHz resampling → VAD (earshot + hysteresis) →
    /// five pass-through stages: 8 stages, as in the pass-through run.
    pub fn real_chain(b: PipelineBuilder) -> PipelineBuilder {
        let vad =
            audio::vad::Vad::new(audio::vad::VadParams::default(), 16_000).expect("VAD at 16 kHz");
        let mut b = b
            .stage(MuLawDecode)
            .stage(InputResample::new(16_000))
            .stage(VadStage::new(vad));
        for _ in 0..5 {
            b = b.stage(PassThrough);
        }
        b
    }

    /// `n` bytes of a 220 Hz tone in µ-law at 8 kHz (speech-level).
    pub fn mulaw_tone(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| {
                let t = i as f64 / 8000.0;
                let s = (8000.0 * (2.0 * std::f64::consts::PI * 220.0 * t).sin()) as i16;
                audio::mulaw::encode_sample(s)
            })
            .collect()
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let cmd = args.first().map(String::as_str).unwrap_or("hop");
    let opt = |name: &str| -> Option<String> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let list = |name: &str, default: &str| -> Vec<usize> {
        opt(name)
            .unwrap_or_else(|| default.to_string())
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    };
    let workers: usize = opt("--workers").and_then(|s| s.parse().ok()).unwrap_or(2);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("runtime");
    match cmd {
        "hop" => {
            let frames = opt("--frames")
                .and_then(|s| s.parse().ok())
                .unwrap_or(20_000);
            for n in list("--stages", "1,10,50") {
                rt.block_on(async move { tokio::spawn(hop(n, frames, workers)).await })
                    .expect("bench task");
            }
        }
        "calls" => {
            let seconds: f64 = opt("--seconds")
                .and_then(|s| s.parse().ok())
                .unwrap_or(20.0);
            let real = args.iter().any(|a| a == "--real");
            for k in list("--calls", "100,1000,2000,5000") {
                rt.block_on(async move { tokio::spawn(calls(k, seconds, real, workers)).await })
                    .expect("bench task");
            }
        }
        other => {
            eprintln!("unknown benchmark {other:?}; use `hop` or `calls [--real]`");
            std::process::exit(2);
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The sink: records when each frame arrives (the frame's id carries the
/// nanoseconds at which it was sent, relative to `base`).
struct Sink {
    base: Instant,
    arrivals: Arc<Mutex<Vec<u64>>>,
    done: Arc<tokio::sync::Notify>,
    count: Arc<AtomicU64>,
}

impl Stage for Sink {
    fn name(&self) -> &'static str {
        "sink"
    }
    fn handle(&mut self, frame: Frame, _dir: Direction, _ctx: &mut Ctx<'_>) {
        if let Frame::Data(d) = &frame {
            if let Data::LlmText(t) = &d.data {
                let now = self.base.elapsed().as_nanos() as u64;
                if let Ok(mut a) = self.arrivals.lock() {
                    a.push(now.saturating_sub(t.id));
                }
                self.count.fetch_add(1, Ordering::Release);
                self.done.notify_one();
            }
        }
    }
}

async fn hop(n: usize, frames: usize, workers: usize) {
    let base = Instant::now();
    let arrivals = Arc::new(Mutex::new(Vec::with_capacity(frames)));
    let done = Arc::new(tokio::sync::Notify::new());
    let count = Arc::new(AtomicU64::new(0));
    let mut b = Pipeline::builder();
    for _ in 0..n {
        b = b.stage(PassThrough);
    }
    let mut p = b
        .stage(Sink {
            base,
            arrivals: arrivals.clone(),
            done: done.clone(),
            count: count.clone(),
        })
        .build();
    let input = p.input().expect("input").clone();
    let text: Arc<str> = Arc::from("hello");
    let frame = |base: Instant| {
        Frame::data(
            0,
            Data::LlmText(UtteranceText {
                id: base.elapsed().as_nanos() as u64,
                text: text.clone(),
            }),
        )
    };
    // Warm-up.
    for _ in 0..1000 {
        input.send(frame(base)).await.expect("send");
    }
    while count.load(Ordering::Acquire) < 1000 {
        tokio::task::yield_now().await;
    }
    arrivals.lock().expect("lock").clear();
    count.store(0, Ordering::Release);

    // Throughput: push as fast as the pipeline takes them.
    let t0 = Instant::now();
    for _ in 0..frames {
        input.send(frame(base)).await.expect("send");
    }
    while count.load(Ordering::Acquire) < frames as u64 {
        done.notified().await;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let throughput = frames as f64 / elapsed;
    arrivals.lock().expect("lock").clear();
    count.store(0, Ordering::Release);

    // Serial latency: one frame in flight at a time.
    for i in 0..frames as u64 {
        let notified = done.notified();
        input.send(frame(base)).await.expect("send");
        if count.load(Ordering::Acquire) <= i {
            notified.await;
        }
    }
    let mut lat: Vec<f64> = arrivals
        .lock()
        .expect("lock")
        .iter()
        .map(|&ns| ns as f64 / 1000.0)
        .collect();
    lat.sort_by(f64::total_cmp);
    let hops = (n + 1) as f64;
    let p50 = percentile(&lat, 0.5);
    let p99 = percentile(&lat, 0.99);
    println!(
        "{{\"bench\":\"hop\",\"stages\":{n},\"frames\":{frames},\"workers\":{workers},\"throughput_fps\":{throughput:.0},\"serial_p50_us\":{p50:.2},\"serial_p99_us\":{p99:.2},\"per_hop_p50_us\":{:.3},\"per_hop_p99_us\":{:.3}}}",
        p50 / hops,
        p99 / hops
    );
    drop(input);
    p.end(Duration::from_secs(5)).await;
}

/// Lateness sink of one call: arrival time minus the frame's scheduled time
/// (carried in the audio's first 8 bytes would cost a copy; the scheduled
/// nanoseconds ride in a side table keyed by sequence instead).
struct LateSink {
    base: Instant,
    schedule: Arc<Mutex<std::collections::VecDeque<u64>>>,
    stats: Arc<Stats>,
}

#[derive(Default)]
struct Stats {
    /// Lateness histogram in 100 µs buckets (last bucket: ≥ 100 ms).
    buckets: Vec<AtomicU64>,
    frames: AtomicU64,
}

impl Stats {
    fn new() -> Self {
        Stats {
            buckets: (0..1001).map(|_| AtomicU64::new(0)).collect(),
            frames: AtomicU64::new(0),
        }
    }
    fn record(&self, late_ns: u64) {
        let b = ((late_ns / 100_000) as usize).min(self.buckets.len() - 1);
        self.buckets[b].fetch_add(1, Ordering::Relaxed);
        self.frames.fetch_add(1, Ordering::Relaxed);
    }
    fn percentile_ms(&self, p: f64) -> f64 {
        let total: u64 = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum();
        if total == 0 {
            return f64::NAN;
        }
        let want = (total as f64 * p).ceil() as u64;
        let mut acc = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            acc += b.load(Ordering::Relaxed);
            if acc >= want {
                return (i + 1) as f64 * 0.1;
            }
        }
        100.0
    }
    fn reset(&self) {
        for b in &self.buckets {
            b.store(0, Ordering::Relaxed);
        }
        self.frames.store(0, Ordering::Relaxed);
    }
}

impl Stage for LateSink {
    fn name(&self) -> &'static str {
        "late_sink"
    }
    fn handle(&mut self, frame: Frame, _dir: Direction, _ctx: &mut Ctx<'_>) {
        if let Frame::Data(_) = frame {
            let now = self.base.elapsed().as_nanos() as u64;
            let due = self.schedule.lock().ok().and_then(|mut q| q.pop_front());
            if let Some(due) = due {
                self.stats.record(now.saturating_sub(due));
            }
        }
    }
}

fn rss_kb() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn cpu_seconds() -> f64 {
    // utime + stime of this process, in clock ticks (fields 14 and 15).
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // After the ')' the state is field 0, so utime/stime are 11 and 12.
    (ticks(11) + ticks(12)) / 100.0
}

async fn calls(k: usize, seconds: f64, real: bool, workers: usize) {
    let base = Instant::now();
    let stats = Arc::new(Stats::new());
    let ticks = Arc::new(Stats::new());
    let (rss_before, _) = rss_kb();
    let mut pipelines = Vec::with_capacity(k);
    let mut feeds = Vec::with_capacity(k);
    for _ in 0..k {
        let schedule = Arc::new(Mutex::new(std::collections::VecDeque::with_capacity(4)));
        let mut b = Pipeline::builder().capacity(16);
        b = if real {
            bench_stages::real_chain(b)
        } else {
            let mut b = b;
            for _ in 0..8 {
                b = b.stage(PassThrough);
            }
            b
        };
        let p = b
            .stage(LateSink {
                base,
                schedule: schedule.clone(),
                stats: stats.clone(),
            })
            .build();
        feeds.push((p.input().expect("input").clone(), schedule));
        pipelines.push(p);
    }
    // Let every stage task start and settle.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (rss_idle, _) = rss_kb();
    let idle_kb = (rss_idle.saturating_sub(rss_before)) as f64 / k as f64;
    eprintln!("calls={k} real={real}: {idle_kb:.1} KB per idle call; feeding for {seconds} s");

    let frame_bytes = if real { 160 } else { 320 };
    let payload = Bytes::from(vec![0x55u8; frame_bytes]);
    let payload = if real {
        // A loud-ish tone in µ-law so VAD and resampler do real work.
        Bytes::from(bench_stages::mulaw_tone(frame_bytes))
    } else {
        payload
    };
    let stop_at = tokio::time::Instant::now() + Duration::from_secs_f64(seconds + 1.0);
    // Calls are spread evenly over the 20 ms period, as real calls are: one
    // feeder per 1 ms slot feeds the calls of its slot (the input side of a
    // real server is socket readers, not one timer per call; 20 timers keep
    // the measurement about the pipelines, not the timer wheel).
    const SLOTS: usize = 20;
    let mut groups: Vec<Vec<_>> = (0..SLOTS).map(|_| Vec::new()).collect();
    for (i, feed) in feeds.into_iter().enumerate() {
        groups[i % SLOTS].push(feed);
    }
    let mut feeders = Vec::with_capacity(SLOTS);
    for (slot, group) in groups.into_iter().enumerate() {
        let payload = payload.clone();
        let ticks = ticks.clone();
        let offset = Duration::from_millis(slot as u64);
        feeders.push(tokio::spawn(async move {
            let start = tokio::time::Instant::now() + offset;
            let mut tick = tokio::time::interval_at(start, Duration::from_millis(20));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            loop {
                let due = tick.tick().await;
                if due >= stop_at {
                    break;
                }
                let due_ns = due.into_std().saturating_duration_since(base).as_nanos() as u64;
                ticks.record((base.elapsed().as_nanos() as u64).saturating_sub(due_ns));
                for (input, schedule) in &group {
                    if let Ok(mut q) = schedule.lock() {
                        q.push_back(due_ns);
                    }
                    let audio = if real {
                        Audio::mulaw(payload.clone(), 8000)
                    } else {
                        Audio::pcm16(payload.clone(), 8000)
                    };
                    if input.send(Frame::input_audio(audio)).await.is_err() {
                        return;
                    }
                }
            }
        }));
    }
    // Skip the first second (start-up), then measure.
    tokio::time::sleep(Duration::from_secs(1)).await;
    stats.reset();
    ticks.reset();
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let (_, hwm) = rss_kb();
    let frames = stats.frames.load(Ordering::Relaxed);
    let expected = (k as f64 * wall * 50.0) as u64;
    let p50 = stats.percentile_ms(0.5);
    let p99 = stats.percentile_ms(0.99);
    let cores = cpu / wall;
    println!(
        "{{\"bench\":\"calls\",\"real\":{real},\"calls\":{k},\"stages\":8,\"workers\":{workers},\"seconds\":{wall:.1},\"frames\":{frames},\"frames_expected\":{expected},\"cores_used\":{cores:.3},\"cpu_per_call_pct\":{:.4},\"rss_idle_kb_per_call\":{idle_kb:.1},\"rss_peak_kb_per_call\":{:.1},\"lateness_p50_ms\":{p50:.1},\"lateness_p99_ms\":{p99:.1},\"timer_lateness_p99_ms\":{:.1}}}",
        cores * 100.0 / k as f64,
        (hwm.saturating_sub(rss_before)) as f64 / k as f64,
        ticks.percentile_ms(0.99),
    );
    for f in feeders {
        f.abort();
    }
    for mut p in pipelines {
        p.cancel(Duration::from_millis(100)).await;
    }
}
