//! Whole calls in real speech, with no keys: `calllock serve` hears with
//! Whisper and speaks with Flite (local speech), and the caller is the
//! Twilio-speaking phone of `calllock dial` playing recorded caller lines
//! (the committed fixtures, rendered once by Piper's `joe` voice) over a
//! real Media Streams socket. The phone transcribes the agent's audio with
//! Whisper, so each test checks what the agent *said*, not just what it
//! meant to say, and the outcome in the database.
//!
//! Needs `--features local-speech` and `scripts/setup-local-speech`;
//! without them each test says SKIP and why (and fails under CI, which
//! must test the real stack).

#[path = "support/needs.rs"]
mod needs;
#[path = "support/served.rs"]
mod served;

/// SKIP with the reason, or fail under CI.
fn skip_unless_installed(test: &str) -> bool {
    needs::skip(test, needs::local_speech_missing())
}

#[cfg(feature = "local-speech")]
mod real {
    use super::served::*;
    use calllock::dial::phone::PhoneSpeech;
    use std::time::Duration;

    /// A fixture caller line (8 kHz µ-law WAV) as µ-law bytes.
    pub fn clip(voice: &str, name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/fixtures/speech/{voice}/{name}.wav",
            env!("CARGO_MANIFEST_DIR")
        );
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        calllock::dial::recordings::wav_to_ulaw(&bytes).unwrap()
    }

    /// One real-speech call at a time: they share the machine's two cores
    /// with Whisper, and the barge-in test measures time.
    pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// A server hearing and speaking with local speech.
    pub async fn serve_local() -> Served {
        serve_with(|c| {
            c.speech.local = "on".into();
            // The pace of a model; the scripted responder answers at once.
            c.sim.llm_latency_s = 0.2;
        })
        .await
    }

    /// A phone with local speech of its own, recording both sides.
    ///
    /// Its ear is a Whisper of its own (one worker, one thread): the
    /// caller's understanding must not queue behind the server's, nor the
    /// server's behind the caller's, or a loaded machine would measure
    /// the test rig. A caller who understands slowly answers late, as a
    /// person would; the agent's idle wait is a budget for that.
    pub async fn call(s: &Served, from: &str) -> Caller {
        assert!(
            s.server.local_speech().is_some(),
            "the server uses local speech"
        );
        let mut ear = calllock::config::Config::default();
        ear.speech.local = "on".into();
        ear.speech.whisper_threads = 1;
        let mut o = s.dial(from);
        o.speech = PhoneSpeech::Local(
            calllock::local_speech::LocalSpeech::start(&ear).expect("the phone's local speech"),
        );
        // Keep the recording in the phone's log (the file is `dial`'s).
        o.record = Some("unused.wav".into());
        Caller::call(&o).await
    }

    impl Caller {
        /// Play a recorded line once the agent's turn is over.
        pub async fn play_after_turn(&mut self, ulaw: Vec<u8>) -> String {
            let heard = self.agent_turn_long().await;
            self.play(ulaw);
            heard
        }

        /// Like `agent_turn`, with room for Whisper on two cores.
        pub async fn agent_turn_long(&mut self) -> String {
            self.agent_turn_within(Duration::from_secs(45), Duration::from_millis(700))
                .await
        }

        /// Wait for the call to end (the agent hangs up).
        pub async fn until_closed_long(&mut self) {
            self.until_closed_within(Duration::from_secs(60)).await
        }
    }

    /// Lower-case words without punctuation, for lenient matching.
    pub fn norm(s: &str) -> String {
        s.to_lowercase()
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c == ' ' {
                    c
                } else {
                    ' '
                }
            })
            .collect::<String>()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Joe's first line ("my AC stopped cooling last night") as Whisper
    /// may hear it through the phone's 8 kHz µ-law: "stopped" sometimes
    /// comes out "stop" or "stops". The meaning is what the record needs.
    pub fn heard_stopped_cooling(normed: &str) -> bool {
        normed.contains("stop") && normed.contains("cooling")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_booking_call_in_real_speech() {
    if skip_unless_installed("a_booking_call_in_real_speech") {
        return;
    }
    #[cfg(feature = "local-speech")]
    {
        use real::*;
        let _one = ONE_AT_A_TIME.lock().await;
        let started = tokio::time::Instant::now();
        let s = serve_local().await;
        let mut c = call(&s, "+15125559876").await;
        let sid = c.sid();
        let mut turns = Vec::new();
        for i in 1..=8 {
            turns.push(
                c.play_after_turn(clip("joe", &format!("booking-{i:02}")))
                    .await,
            );
        }
        // The read-back was confirmed: the booking, then "all set".
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(45);
        while !norm(&c.words.join(" ")).contains("all set") {
            assert!(
                tokio::time::Instant::now() < deadline && !c.closed,
                "never said all set: {:?} (turns so far {turns:#?})",
                c.words
            );
            c.pump(std::time::Duration::from_millis(50)).await;
        }
        turns.push(c.play_after_turn(clip("joe", "booking-09")).await);
        c.until_closed_long().await;
        let log = c.phone.take().unwrap().finished().await;

        // What the agent said, as the caller heard it (Whisper on the
        // agent's audio).
        let greeting = norm(&turns[0]);
        assert!(
            greeting.contains("cooling"),
            "greeting heard as {greeting:?}"
        );
        // (Whisper hears Flite's "gas smell" at 8 kHz as "dust melt" at
        // times; "safety check" and "burning" come through.)
        let safety = norm(&turns[1]);
        assert!(
            safety.contains("safety") || safety.contains("burning"),
            "the safety question heard as {:?}",
            turns[1]
        );

        // The outcome, from the database.
        let r = s.record(&sid).await;
        eprintln!(
            "call over and recorded after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        eprintln!("agent turns as heard: {turns:#?}");
        eprintln!("transcript: {:#?}", served::lines(&r.transcript));
        assert_eq!(r.final_state, "confirm", "{r:#?}");
        assert_eq!(r.booking_status, "confirmed");
        assert!(
            norm(&r.customer_name).contains("dana"),
            "name heard as {:?}",
            r.customer_name
        );
        let record = r.record.to_string();
        assert!(record.contains("78745"), "the ZIP code: {record}");
        assert!(record.contains("Franklin Street"), "the address: {record}");

        // The recording: both sides intelligible when transcribed back
        // (as `calllock transcribe` does it: utterance by utterance), the
        // first 30 s of it.
        let wav = log.recording.as_ref().expect("recorded").to_wav();
        let w = audio::wav::read_wav(&wav).unwrap();
        assert_eq!((w.sample_rate, w.channels), (8000, 2));
        let head = &w.samples[..w.samples.len().min(30 * 8000 * 2)];
        let head = audio::wav::write_wav_pcm16(8000, 2, head);
        let ear = s.server.local_speech().unwrap().recogniser().unwrap();
        let said = calllock::cli::transcribe::transcribe(ear.as_ref(), &head)
            .await
            .unwrap();
        let side = |channel: usize| -> Vec<String> {
            said.iter()
                .filter(|l| l.channel == channel)
                .map(|l| norm(&l.text))
                .collect()
        };
        let (caller, agent) = (side(0), side(1));
        // (Flite's "ACE Cooling" comes back as "Ace Coolin'" or "A.
        // Spilling" at times; the rest of the greeting is plain.)
        assert!(
            agent
                .first()
                .is_some_and(|g| g.contains("thanks for calling") && g.contains("help")),
            "agent side: {agent:?}"
        );
        assert!(
            agent.iter().any(|l| l.contains("safety")),
            "agent side: {agent:?}"
        );
        assert!(
            caller.first().is_some_and(|l| heard_stopped_cooling(l)),
            "caller side: {caller:?}"
        );
        let starts: Vec<f64> = said.iter().map(|l| l.start).collect();
        assert!(starts.windows(2).all(|p| p[0] <= p[1]), "{said:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_who_smells_gas_is_sent_out_of_the_house() {
    if skip_unless_installed("a_caller_who_smells_gas_is_sent_out_of_the_house") {
        return;
    }
    #[cfg(feature = "local-speech")]
    {
        use real::*;
        let _one = ONE_AT_A_TIME.lock().await;
        let started = tokio::time::Instant::now();
        let s = serve_local().await;
        let mut c = call(&s, "+15125550123").await;
        let sid = c.sid();
        c.play_after_turn(clip("joe", "emergency-01")).await;
        // The caller hears the safety script, then does what it says:
        // hangs up and leaves (waiting out the idle prompts instead takes
        // most of a minute).
        c.agent_turn_long().await;
        let said = norm(&c.words.join(" "));
        c.phone.as_ref().unwrap().hang_up();
        c.until_closed_long().await;
        let log = c.phone.take().unwrap().finished().await;
        let all = norm(&log.heard_text());
        assert!(
            all.contains("leave") || all.contains("911") || all.contains("nine one one"),
            "the safety script heard as {said:?} / {all:?}"
        );
        let r = s.record(&sid).await;
        eprintln!(
            "call over and recorded after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        assert_eq!(r.final_state, "safety_exit", "{r:#?}");
        assert_eq!(r.end_call_reason, "safety_emergency");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_out_of_area_caller_is_told_and_promised_a_callback() {
    if skip_unless_installed("an_out_of_area_caller_is_told_and_promised_a_callback") {
        return;
    }
    #[cfg(feature = "local-speech")]
    {
        use real::*;
        let _one = ONE_AT_A_TIME.lock().await;
        let started = tokio::time::Instant::now();
        let s = serve_local().await;
        let mut c = call(&s, "+15125550124").await;
        let sid = c.sid();
        // The first line recorded (Piper's voice); the rest typed, as in
        // `calllock dial`: spoken into the line by the local voice (Flite).
        let mut turns = vec![c.play_after_turn(clip("joe", "out_of_area-01")).await];
        for line in ["No.", "Nine oh two one oh.", "Okay, thanks."] {
            turns.push(c.agent_turn_long().await);
            c.say(line);
        }
        c.until_closed_long().await;
        let log = c.phone.take().unwrap().finished().await;
        let all = norm(&log.heard_text());
        assert!(
            all.contains("area") || all.contains("call you back") || all.contains("callback"),
            "the agent's words: {all:?}"
        );
        let r = s.record(&sid).await;
        eprintln!(
            "call over and recorded after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        assert_eq!(r.final_state, "callback", "{r:#?} turns {turns:#?}");
        let record = r.record.to_string();
        assert!(record.contains("90210"), "the typed ZIP as heard: {record}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_talking_over_the_agent_stops_it_at_once() {
    if skip_unless_installed("a_caller_talking_over_the_agent_stops_it_at_once") {
        return;
    }
    #[cfg(feature = "local-speech")]
    {
        use real::*;
        use std::time::Duration;
        use tokio::time::Instant;
        let _one = ONE_AT_A_TIME.lock().await;
        let started = Instant::now();
        let s = serve_local().await;
        let mut c = call(&s, "+15125550125").await;
        let sid = c.sid();
        // Greeting (barge-in is muted for it), then the first problem.
        c.play_after_turn(clip("joe", "booking-01")).await;
        // The agent starts its answer (the safety question): talk over it
        // half a second in.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !c.speaking {
            assert!(Instant::now() < deadline, "the agent never answered");
            c.pump(Duration::from_millis(5)).await;
        }
        c.pump(Duration::from_millis(500)).await;
        let over = clip("joe", "barge_in-01");
        let mut pcm = Vec::new();
        audio::mulaw::decode(&over, &mut pcm);
        let lead = speech::timing::speech_span(&pcm).map_or(0, |(a, _)| a);
        let t_play = Instant::now();
        let clears_before = c.clears;
        c.phone.as_ref().unwrap().play_ulaw(over);
        let deadline = Instant::now() + Duration::from_secs(5);
        while c.clears == clears_before {
            assert!(Instant::now() < deadline, "the agent was never interrupted");
            match c.rx.recv().await {
                Some(e) => c.take(e),
                None => panic!("the call closed"),
            }
        }
        let speech_sent = t_play + Duration::from_secs_f64(lead as f64 / 8000.0);
        let stopped_after = Instant::now().saturating_duration_since(speech_sent);
        // One 20 ms frame plus the VAD's start time (0.4 s), plus room for
        // a loaded two-core machine running Whisper.
        assert!(
            stopped_after <= Duration::from_millis(400 + 20 + 300),
            "stopped {stopped_after:?} after the caller started speaking"
        );
        // Then the caller's words are heard and answered.
        // (The phone transcribes the cut-off line after the clear: its
        // words may still arrive; the answer starts with new audio.)
        let deadline = Instant::now() + Duration::from_secs(30);
        while !c.speaking {
            assert!(Instant::now() < deadline, "no answer to the barge-in");
            c.pump(Duration::from_millis(20)).await;
        }
        c.new_turn();
        c.agent_turn_long().await;
        c.phone.as_ref().unwrap().hang_up();
        c.until_closed_long().await;
        let log = c.phone.take().unwrap().finished().await;
        assert_eq!(log.clears, 1, "exactly one clear");
        let r = s.record(&sid).await;
        eprintln!(
            "call over and recorded after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let lines = served::lines(&r.transcript);
        // The interrupted agent line holds only what was played.
        let full_safety = "Quick safety check — any gas smell, burning smell or smoke right now?";
        let interrupted = lines
            .iter()
            .filter(|(role, _)| role == "agent")
            .nth(1)
            .map(|(_, t)| t.clone())
            .unwrap_or_default();
        assert!(
            !interrupted.is_empty()
                && interrupted.split_whitespace().count() < full_safety.split_whitespace().count(),
            "the interrupted line as recorded: {interrupted:?} (in full: {full_safety:?})"
        );
        let caller_said: Vec<&String> = lines
            .iter()
            .filter(|(role, _)| role == "user")
            .map(|(_, t)| t)
            .collect();
        assert!(
            caller_said.iter().any(|t| norm(t).contains("heater")),
            "the barge-in heard as {caller_said:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_deepgram_goes_silent_goes_on_with_whisper() {
    if skip_unless_installed("a_call_whose_deepgram_goes_silent_goes_on_with_whisper") {
        return;
    }
    #[cfg(feature = "local-speech")]
    {
        use providers::deepgram::aura_fake::{AuraBehaviour, FakeAura, FakeAuraConfig};
        use providers::deepgram::fake::{FakeBehaviour, FakeDeepgram};
        use real::*;
        use served::serve_with;
        let _one = ONE_AT_A_TIME.lock().await;
        let started = tokio::time::Instant::now();
        // Deepgram hears the audio and never answers; its voice (Aura)
        // fails at once, so the agent speaks with Flite.
        let deepgram = FakeDeepgram::start(FakeBehaviour {
            silent: true,
            ..FakeBehaviour::default()
        })
        .await;
        let aura = FakeAura::start(FakeAuraConfig::default()).await;
        aura.set_behaviour(AuraBehaviour::Status(500, "{\"err_msg\":\"down\"}".into()));
        let s = serve_with(|c| {
            c.speech.local = "on".into();
            c.sim.llm_latency_s = 0.2;
            c.deepgram.api_key = "test-key".into();
            c.deepgram.url = deepgram.base_url();
            c.deepgram.tts_url = aura.base_url();
        })
        .await;
        assert!(
            s.server.speech_summary().contains("deepgram → whisper"),
            "{}",
            s.server.speech_summary()
        );
        let mut c = call(&s, "+15125550126").await;
        let sid = c.sid();
        // Line 1: Deepgram stalls twice (the watchdog reopens it, then
        // gives up on those words): the caller is asked again.
        c.play_after_turn(clip("joe", "booking-01")).await;
        let asked = c.agent_turn_long().await;
        assert!(
            norm(&asked).contains("again") || norm(&asked).contains("catch"),
            "asked to repeat, heard as {asked:?}"
        );
        // Line 1 again: the third stall loses Deepgram for the call, and
        // Whisper hears that very line (no second "say that again").
        c.play(clip("joe", "booking-01"));
        let answer = c.agent_turn_long().await;
        let answer = norm(&answer);
        assert!(
            answer.contains("safety") || answer.contains("burning") || answer.contains("smoke"),
            "the safety question after the problem, heard as {answer:?}"
        );
        // And on: the next line is Whisper's alone.
        c.play_after_turn(clip("joe", "booking-02")).await;
        let next = c.agent_turn_long().await;
        c.phone.as_ref().unwrap().hang_up();
        c.until_closed_long().await;
        c.phone.take().unwrap().finished().await;
        let r = s.record(&sid).await;
        eprintln!(
            "call over and recorded after {:.1} s; last turn heard as {next:?}",
            started.elapsed().as_secs_f64()
        );
        assert_eq!(deepgram.log().connections, 3, "reopened twice, then let go");
        let lines = served::lines(&r.transcript);
        let caller: Vec<String> = lines
            .iter()
            .filter(|(role, _)| role == "user")
            .map(|(_, t)| norm(t))
            .collect();
        assert!(
            caller.iter().any(|t| heard_stopped_cooling(t)),
            "the problem in the record: {caller:?}"
        );
        assert!(
            !lines.iter().any(|(_, t)| t.contains("trouble hearing you")),
            "no apology-and-callback ending: {lines:?}"
        );
    }
}

/// Whisper hears `speech.max_calls` calls at once: a caller beyond them
/// hears the busy line and is owed a callback (as beyond
/// `serve.max_calls`), and the server's health says how many it takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_what_whisper_can_hear_a_caller_gets_the_busy_line_and_a_callback() {
    if skip_unless_installed(
        "beyond_what_whisper_can_hear_a_caller_gets_the_busy_line_and_a_callback",
    ) {
        return;
    }
    #[cfg(feature = "local-speech")]
    {
        use calllock::dial::{place_call, Answer};
        use real::*;
        let _one = ONE_AT_A_TIME.lock().await;
        let s = served::serve_with(|c| {
            c.speech.local = "on".into();
            c.speech.max_calls = 1;
            c.sim.llm_latency_s = 0.2;
        })
        .await;
        // serve.max_calls stays at its default (1,000): Whisper's one
        // call is the limit.
        let mut first = call(&s, "+15125550131").await;
        first.agent_turn_long().await;
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        match place_call(&s.dial("+15125550232"), tx).await.unwrap() {
            Answer::TurnedAway(text) => assert!(text.contains("call you back"), "{text}"),
            Answer::Connected(_) => panic!("a second call was admitted beyond Whisper's one"),
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let cbs = s.server.store().open_callbacks(10).await.unwrap();
            if cbs.iter().any(|c| c.phone == "+15125550232") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no callback: {cbs:?}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        first.phone.as_ref().unwrap().hang_up();
        first.finish().await;
        s.server.stop().await;
    }
}
