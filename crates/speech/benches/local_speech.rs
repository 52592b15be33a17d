//! Local speech cost (release; not in the test suite):
//!
//! ```sh
//! scripts/setup-local-speech
//! cargo bench -p speech --features whisper,flite --bench local_speech
//! ```
//!
//! 1. Whisper per caller utterance: the committed caller lines (Piper
//!    `joe`, 8 kHz µ-law as the server hears them), one at a time — wall
//!    and CPU milliseconds, real-time factor (decode time / audio length),
//!    for 1 and 2 threads per decode.
//! 2. Flite per agent sentence: the agent's lines of a booking call.
//! 3. Concurrent calls: N callers, each saying a line every `--every`
//!    seconds (staggered), share the process's recogniser as served calls
//!    do; the time from the end of a caller line to the agent's first
//!    audio is the VAD's stop time (0.5 s) + waiting for and running the
//!    decode + the voice's first audio (the scripted responder answers at
//!    once; the pipeline's own share is ~2 ms, measured by `serve_load`).
//!    Reported per N: p50/p95 of that time; the largest N whose p95 stays
//!    within 1.5 s is the answer.

use speech::flite::{Flite, FliteTts};
use speech::utterances::{to_recogniser_rate, Recogniser};
use speech::whisper::{Whisper, WhisperOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};
use voice::stages::tts::{Tts, TtsEvent};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../calllock/tests/fixtures/speech/joe"
);
const VAD_STOP: Duration = Duration::from_millis(500);

fn cpu() -> Duration {
    // SAFETY: getrusage writes into the struct we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn clips() -> Vec<(String, Vec<f32>)> {
    let mut files: Vec<_> = std::fs::read_dir(FIXTURES)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let wav = audio::wav::read_wav(&std::fs::read(&p).unwrap()).unwrap();
            let pcm: Vec<i16> = wav.samples;
            let mut ulaw = Vec::new();
            audio::mulaw::encode(&pcm, &mut ulaw);
            let mut back = Vec::new();
            audio::mulaw::decode(&ulaw, &mut back);
            // The half second of silence the VAD waits through is in the clip.
            back.extend(std::iter::repeat_n(0, 4000));
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                to_recogniser_rate(&back, 8000),
            )
        })
        .collect()
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

async fn per_utterance(model: &std::path::Path, threads: usize, clips: &[(String, Vec<f32>)]) {
    let w = Whisper::load(
        model,
        WhisperOptions {
            workers: 1,
            threads,
            queue: 4,
        },
    )
    .unwrap();
    // Warm up.
    w.transcribe(clips[0].1.clone()).await.unwrap();
    let (mut walls, mut cpus, mut rtfs) = (Vec::new(), Vec::new(), Vec::new());
    for (_, clip) in clips {
        let (t, c) = (Instant::now(), cpu());
        w.transcribe(clip.clone()).await.unwrap();
        let (wall, used) = (t.elapsed(), cpu() - c);
        let audio = Duration::from_secs_f64(clip.len() as f64 / 16_000.0);
        walls.push(wall);
        cpus.push(used);
        rtfs.push(wall.as_secs_f64() / audio.as_secs_f64());
    }
    let mean_rtf = rtfs.iter().sum::<f64>() / rtfs.len() as f64;
    println!(
        "whisper tiny.en q8_0, {threads} thread(s): {} utterances, wall p50 {:.0} ms p95 {:.0} ms, CPU p50 {:.0} ms, real-time factor {:.2} (mean)",
        clips.len(),
        pct(&mut walls, 0.5).as_secs_f64() * 1e3,
        pct(&mut walls, 0.95).as_secs_f64() * 1e3,
        pct(&mut cpus, 0.5).as_secs_f64() * 1e3,
        mean_rtf
    );
}

async fn flite_cost() -> Duration {
    let lines = [
        "Thanks for calling ACE Cooling! How can I help you today?",
        "Okay, I can help with that. Quick safety check — any gas smell, burning smell or smoke right now?",
        "Good, thanks. What's the ZIP code where you need service?",
        "Got it. Can I get your name, please?",
        "Thanks, I have everything for the visit. Is there anything else about the problem the technician should know?",
        "You're all set: Appointment confirmed for Wednesday, November 25 at 10:00 AM.",
    ];
    let tts = FliteTts::new(Flite::start().unwrap(), 8000);
    let (mut firsts, mut cpus, mut rtfs) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..3 {
        for l in lines {
            let (t, c) = (Instant::now(), cpu());
            let mut s = tts.synthesize(l);
            let mut first = None;
            let mut audio = Duration::ZERO;
            while let Some(e) = std::future::poll_fn(|cx| s.as_mut().poll_next(cx)).await {
                if let Ok(TtsEvent::Audio(a)) = e {
                    first.get_or_insert(t.elapsed());
                    audio += a.duration();
                }
            }
            if round > 0 {
                firsts.push(first.unwrap());
                cpus.push(cpu() - c);
                rtfs.push(t.elapsed().as_secs_f64() / audio.as_secs_f64());
            }
        }
    }
    let p50_first = pct(&mut firsts, 0.5);
    println!(
        "flite slt: {} sentences, first audio p50 {:.0} ms p95 {:.0} ms, CPU p50 {:.0} ms, real-time factor {:.3} (mean)",
        firsts.len(),
        p50_first.as_secs_f64() * 1e3,
        pct(&mut firsts, 0.95).as_secs_f64() * 1e3,
        pct(&mut cpus, 0.5).as_secs_f64() * 1e3,
        rtfs.iter().sum::<f64>() / rtfs.len() as f64
    );
    pct(&mut firsts, 0.95)
}

/// One concurrency run.
struct Load {
    workers: usize,
    threads: usize,
    calls: usize,
    every: Duration,
    seconds: u64,
}

async fn concurrent(
    model: &std::path::Path,
    load: Load,
    clips: Arc<Vec<(String, Vec<f32>)>>,
    voice_first: Duration,
) -> (Duration, Duration, usize, usize) {
    let Load {
        workers,
        threads,
        calls,
        every,
        seconds,
    } = load;
    let w = Whisper::load(
        model,
        WhisperOptions {
            workers,
            threads,
            queue: 64,
        },
    )
    .unwrap();
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for k in 0..calls {
        let (w, clips) = (w.clone(), clips.clone());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(every.mul_f64(k as f64 / calls as f64)).await;
            let mut out = Vec::new();
            let mut busy = 0;
            let mut i = k;
            while Instant::now() < until {
                let (_, clip) = &clips[i % clips.len()];
                i += 1;
                let t = Instant::now();
                match w.recognise(clip.clone()) {
                    Ok(rx) => {
                        let _ = rx.await;
                        out.push(t.elapsed());
                    }
                    Err(_) => busy += 1,
                }
                tokio::time::sleep(every.saturating_sub(t.elapsed())).await;
            }
            (out, busy)
        }));
    }
    let mut all = Vec::new();
    let mut busy = 0;
    for t in tasks {
        let (o, b) = t.await.unwrap();
        all.extend(o);
        busy += b;
    }
    // The clip already holds the VAD's half second of silence, so the
    // decode starts when the VAD says "stopped".
    let mut reply: Vec<Duration> = all.iter().map(|d| *d + VAD_STOP + voice_first).collect();
    let n = reply.len();
    (pct(&mut reply, 0.5), pct(&mut reply, 0.95), n, busy)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let model = std::env::var("CALLLOCK_WHISPER_MODEL")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| speech::install::default_whisper_model());
    if !model.is_file() {
        eprintln!(
            "no Whisper model at {} — run scripts/setup-local-speech",
            model.display()
        );
        std::process::exit(2);
    }
    let clips = clips();
    let audio: f64 = clips
        .iter()
        .map(|c| c.1.len() as f64 / 16_000.0)
        .sum::<f64>()
        / clips.len() as f64;
    println!(
        "local_speech: {} caller lines (mean {:.1} s with the VAD's 0.5 s tail), model {}",
        clips.len(),
        audio,
        model.display()
    );
    per_utterance(&model, 1, &clips).await;
    per_utterance(&model, 2, &clips).await;
    let voice_first = flite_cost().await;
    let clips = Arc::new(clips);
    let every = Duration::from_secs(8);
    println!("concurrent calls, a caller line every {} s each, 30 s: end of caller speech -> first agent audio (VAD stop 0.5 s + decode + Flite first audio)", every.as_secs());
    let mut best = None;
    let runs: [((usize, usize), &[usize]); 2] =
        [((1, 2), &[1, 2, 4, 6, 8, 10, 12]), ((2, 1), &[2])];
    for ((workers, threads), counts) in runs {
        for &calls in counts {
            let load = Load {
                workers,
                threads,
                calls,
                every,
                seconds: 30,
            };
            let (p50, p95, n, busy) = concurrent(&model, load, clips.clone(), voice_first).await;
            let ok = p95 <= Duration::from_millis(1500) && busy == 0;
            println!(
                "  {workers} worker(s) x {threads} thread(s), {calls} calls: {n} turns, p50 {:.0} ms, p95 {:.0} ms, {busy} not heard (queue full) {}",
                p50.as_secs_f64() * 1e3,
                p95.as_secs_f64() * 1e3,
                if ok { "ok" } else { "over 1.5 s" }
            );
            if ok && best.is_none_or(|(c, _, _)| calls > c) {
                best = Some((calls, workers, threads));
            }
        }
    }
    match best {
        Some((c, w, t)) => println!("2 cores sustain {c} concurrent local-speech calls with first agent audio within 1.5 s at p95 ({w} worker(s) x {t} thread(s))"),
        None => println!("no configuration kept first agent audio within 1.5 s at p95"),
    }
}
