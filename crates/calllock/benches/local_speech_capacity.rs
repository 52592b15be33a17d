//! How many calls local speech can hear at once on this machine (not in
//! the test suite; needs `--features local-speech` and
//! `scripts/setup-local-speech`).
//!
//! Each simulated call is what `serve` builds to hear a caller: the VAD
//! stage and Whisper's utterance STT stage (`LocalSpeech::stt`), fed 20 ms
//! µ-law frames in real time. The caller says the committed booking lines
//! (`tests/fixtures/speech/joe`, the Piper voice) one after another, with
//! a few seconds of quiet line between them while the agent answers. All
//! calls share the process's one Whisper, as a server's calls do.
//!
//! Measured per utterance: the time from the VAD's stop (when the clip is
//! sent) to its words, and whether it was heard at all (an overloaded
//! recogniser answers "Sorry, I didn't catch that"). A load is served
//! when every utterance is heard within the budget (1.5 s). The bench
//! doubles the calls until a load is not served, then bisects, and prints
//! the capacity, per core, and the `speech.max_calls` to set.
//!
//! (`cargo bench -p speech --bench local_speech` measures the engines
//! alone: Whisper per clip, Flite per sentence.)
//!
//! ```sh
//! cargo bench -p calllock --features local-speech --bench local_speech_capacity
//! cargo bench -p calllock --features local-speech --bench local_speech_capacity -- --calls 4,6 --seconds 60
//! ```

#[cfg(feature = "local-speech")]
mod bench {
    use calllock::local_speech::LocalSpeech;
    use std::collections::VecDeque;
    use std::time::{Duration, Instant};
    use voice::frames::{Audio, ControlFrame, Data, Frame};
    use voice::stages::{stt::SttStage, vad::VadStage};

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/speech");

    struct Args {
        calls: Option<Vec<usize>>,
        seconds: u64,
        budget: Duration,
        answer: Duration,
    }

    fn args() -> Args {
        let mut a = Args {
            calls: None,
            seconds: 40,
            budget: Duration::from_millis(1500),
            answer: Duration::from_secs(4),
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
            match flag.as_str() {
                "--calls" => {
                    a.calls = Some(
                        value()
                            .split(',')
                            .map(|n| n.trim().parse().expect("--calls N[,N…]"))
                            .collect(),
                    )
                }
                "--seconds" => a.seconds = value().parse().expect("--seconds S"),
                "--budget-ms" => {
                    a.budget = Duration::from_millis(value().parse().expect("--budget-ms MS"))
                }
                "--answer-s" => {
                    a.answer = Duration::from_secs_f64(value().parse().expect("--answer-s S"))
                }
                "--bench" => {}
                other => panic!(
                    "unknown argument {other}; use --calls N[,N…] --seconds S --budget-ms MS --answer-s S"
                ),
            }
        }
        a
    }

    /// The caller's side of one call: every booking line, each followed
    /// by `answer` of quiet line (a faint hiss), as 20 ms µ-law frames.
    fn script(answer: Duration) -> Vec<Vec<u8>> {
        let manifest = std::fs::read_to_string(format!("{FIXTURES}/lines.tsv")).unwrap();
        let mut ulaw = Vec::new();
        let mut seed = 0x2545_f491_u32;
        let mut hiss = |n: usize, out: &mut Vec<u8>| {
            let pcm: Vec<i16> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    (seed % 121) as i16 - 60
                })
                .collect();
            audio::mulaw::encode(&pcm, out);
        };
        for l in manifest.lines().filter(|l| l.starts_with("booking\t")) {
            let file = l.split('\t').nth(1).unwrap();
            let path = format!("{FIXTURES}/joe/booking-{file}.wav");
            let wav = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            ulaw.extend(calllock::dial::recordings::wav_to_ulaw(&wav).unwrap());
            hiss((answer.as_secs_f64() * 8000.0) as usize, &mut ulaw);
        }
        ulaw.chunks(160).map(<[u8]>::to_vec).collect()
    }

    /// What one load did.
    #[derive(Default)]
    struct Load {
        /// Seconds from each utterance's VAD stop to its words.
        waits: Vec<f64>,
        not_heard: usize,
    }

    impl Load {
        fn served(&self, budget: Duration) -> bool {
            self.not_heard == 0
                && !self.waits.is_empty()
                && self.waits.iter().all(|w| *w <= budget.as_secs_f64())
        }

        fn quantile(&self, q: f64) -> f64 {
            let mut w = self.waits.clone();
            w.sort_by(f64::total_cmp);
            w.get(((w.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(0.0)
        }
    }

    /// One call for `secs`, starting `offset` into its script: the waits
    /// of its utterances and how many went unheard.
    async fn call(local: &LocalSpeech, frames: &[Vec<u8>], offset: usize, secs: u64) -> Load {
        let vad = audio::vad::Vad::new(audio::vad::VadParams::telephone(), 8000).unwrap();
        let mut p = voice::Pipeline::builder()
            .stage(VadStage::new(vad))
            .stage(SttStage::new(local.stt().expect("local speech is on")))
            .tail(256)
            .build();
        let tx = p.input().unwrap().clone();
        let mut tail = p.take_tail().unwrap();
        let feed = async move {
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for f in frames.iter().cycle().skip(offset).take(secs as usize * 50) {
                tick.tick().await;
                if tx
                    .send(Frame::input_audio(Audio::mulaw(f.clone(), 8000)))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        };
        let collect = async move {
            let mut load = Load::default();
            let mut stops: VecDeque<Instant> = VecDeque::new();
            while let Some(f) = tail.recv().await {
                match f {
                    Frame::Control(ControlFrame::UserStoppedSpeaking) => {
                        stops.push_back(Instant::now())
                    }
                    Frame::Data(d) => {
                        let heard = match d.data {
                            Data::Transcript { is_final, .. } if is_final => true,
                            Data::NotHeard => false,
                            _ => continue,
                        };
                        let Some(at) = stops.pop_front() else {
                            continue;
                        };
                        if heard {
                            load.waits.push(at.elapsed().as_secs_f64());
                        } else {
                            load.not_heard += 1;
                        }
                    }
                    Frame::Control(ControlFrame::End) => break,
                    _ => {}
                }
            }
            load
        };
        let collector = tokio::spawn(collect);
        feed.await;
        // The last clip's words, then the end.
        let _ = tokio::time::timeout(Duration::from_secs(30), async {
            p.end(Duration::from_secs(30)).await
        })
        .await;
        collector.await.unwrap_or_default()
    }

    /// `n` calls at once, starts spread over the first five seconds.
    async fn load(
        local: &'static LocalSpeech,
        frames: &'static [Vec<u8>],
        n: usize,
        secs: u64,
    ) -> Load {
        let mut tasks = Vec::new();
        for i in 0..n {
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis((i * 5000 / n.max(1)) as u64)).await;
                // Each call at another place in the script, as callers are.
                call(local, frames, (i * 211) % frames.len(), secs).await
            }));
        }
        let mut all = Load::default();
        for t in tasks {
            let l = t.await.unwrap();
            all.waits.extend(l.waits);
            all.not_heard += l.not_heard;
        }
        all
    }

    fn report(n: usize, l: &Load, budget: Duration) {
        println!(
            "{n:>3} calls: {} utterances heard, {} not heard; VAD stop -> words p50 {:.2} s, p95 {:.2} s, max {:.2} s — {}",
            l.waits.len(),
            l.not_heard,
            l.quantile(0.5),
            l.quantile(0.95),
            l.quantile(1.0),
            if l.served(budget) { "served" } else { "NOT served" }
        );
    }

    pub async fn main() {
        let a = args();
        let mut cfg = calllock::config::Config::default();
        cfg.speech.local = "on".into();
        let local: &'static LocalSpeech = match LocalSpeech::start(&cfg) {
            Ok(l) if l.is_on() => Box::leak(Box::new(l)),
            Ok(l) => panic!("local speech is not available: {}", l.describe()),
            Err(e) => panic!("local speech cannot start: {e:#} (scripts/setup-local-speech)"),
        };
        let frames: &'static [Vec<u8>] = Box::leak(script(a.answer).into_boxed_slice());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        println!(
            "local_speech_capacity: {cores} cores; Whisper {} worker(s) × {} thread(s); each call says the booking lines with {:.1} s of quiet between them, for {} s; budget {:.1} s from the VAD's stop to the words",
            cfg.speech.whisper_workers_or_default(),
            cfg.speech.whisper_threads_or_default(),
            a.answer.as_secs_f64(),
            a.seconds,
            a.budget.as_secs_f64()
        );
        let (seconds, budget) = (a.seconds, a.budget);
        let run = |n: usize| async move {
            let l = load(local, frames, n, seconds).await;
            report(n, &l, budget);
            l.served(budget)
        };
        if let Some(list) = &a.calls {
            for &n in list {
                run(n).await;
            }
            return;
        }
        // Double until a load is not served, then bisect.
        let (mut ok, mut bad) = (0usize, 0usize);
        let mut n = 1;
        while bad == 0 {
            if run(n).await {
                ok = n;
                n *= 2;
            } else {
                bad = n;
            }
        }
        while bad - ok > 1 {
            let mid = (ok + bad) / 2;
            if run(mid).await {
                ok = mid;
            } else {
                bad = mid;
            }
        }
        println!(
            "capacity: {ok} calls at once ({:.1} per core on {cores} cores), every utterance heard within {:.1} s; set speech.max_calls = {ok} on this machine",
            ok as f64 / cores as f64,
            a.budget.as_secs_f64()
        );
    }
}

#[cfg(feature = "local-speech")]
fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench::main());
}

#[cfg(not(feature = "local-speech"))]
fn main() {
    eprintln!(
        "local_speech_capacity needs local speech: cargo bench -p calllock --features local-speech --bench local_speech_capacity (after scripts/setup-local-speech)"
    );
}
