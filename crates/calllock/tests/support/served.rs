//! What the `calllock serve` end-to-end tests share: a server on a fresh
//! database ([`serve_with`]), a Twilio-speaking caller with timing helpers
//! ([`Caller`]), and the booking call of `examples/replays/booking.jsonl`.
#![allow(dead_code)]

use calllock::config::Config;
use calllock::dial::phone::{PhoneEvent, PhoneLog, Stretches};
use calllock::dial::{place_call, Answer, DialOptions};
use calllock::serve::Server;
use providers::fake::http::{FakeHttp, FakeResponse};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

pub const CPS: f64 = 60.0;
pub const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
pub const TOKEN: &str = "test-auth-token";

pub struct Served {
    pub server: Server,
    pub cfg: Config,
    pub _dir: tempfile::TempDir,
    /// The fake LLM the server talks to, when it has one: a record's
    /// one-log check then holds the LLM's requests against the call's log.
    pub llm: Option<std::sync::Arc<providers::fake::openai::FakeOpenAi>>,
}

/// A server on a fresh SQLite database with fast speech.
pub async fn serve_with(f: impl FnOnce(&mut Config)) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config {
        database: dir.path().join("calls.db"),
        instance: "serve-test".into(),
        ..Config::default()
    };
    cfg.sim.llm_latency_s = 0.1;
    cfg.sim.speech_chars_per_s = CPS;
    cfg.outbox.poll_s = 0.2;
    // The offline speech codec, which these phones speak (local speech has
    // its own tests and turns itself on).
    cfg.speech.local = "off".into();
    f(&mut cfg);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::start(cfg.clone(), listener).await.unwrap();
    Served {
        server,
        cfg,
        _dir: dir,
        llm: None,
    }
}

impl Served {
    pub fn dial(&self, from: &str) -> DialOptions {
        DialOptions {
            url: format!("http://{}", self.server.addr),
            from: from.into(),
            to: "+15125550000".into(),
            auth_token: self
                .cfg
                .twilio
                .signed()
                .then(|| self.cfg.twilio.auth_token.clone()),
            chars_per_second: CPS,
            speech: Default::default(),
            record: None,
        }
    }

    /// The finished record of `call_id` (post-call done), waiting for it;
    /// it, the journal and the LLM's requests must keep one log
    /// ([`Served::assert_one_log`]).
    pub async fn record(&self, call_id: &str) -> store::CallRecord {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(r) = self.server.store().get_call(call_id).await.unwrap() {
                if r.ended_at.is_some() && !r.record.is_null() {
                    self.assert_one_log(call_id, &r).await;
                    return r;
                }
            }
            assert!(Instant::now() < deadline, "no record for {call_id}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Served {
    /// One call, one log: the call's journal is a log written down (read
    /// back and written again it is the same), the record's transcript is
    /// that log's projection (plus what post-call work added), and — with
    /// a fake LLM and this the server's only call — every LLM turn request
    /// was the log's context when it was made.
    pub async fn assert_one_log(&self, call_id: &str, _rec: &store::CallRecord) {
        let store = self.server.store();
        let only_call = store.count_calls().await.unwrap() == 1;
        let bodies: Option<Vec<Value>> = self
            .llm
            .as_ref()
            .filter(|_| only_call)
            .map(|llm| llm.requests().into_iter().map(|r| r.body).collect());
        let bad = calllock::one_log::stored_call(store, call_id, bodies.as_deref()).await;
        assert!(
            bad.is_empty(),
            "{call_id} does not keep one log:\n  {}",
            bad.join("\n  ")
        );
    }
}

/// Whether `words` are just one of the agent's fillers ("One moment."),
/// however a recogniser wrote them (Whisper writes "One moment." as
/// "1 moment"): the reply is still to come.
pub fn only_a_filler(words: &[String]) -> bool {
    let plain = |s: &str| {
        s.chars()
            .filter(|c| c.is_alphanumeric() || c.is_whitespace())
            .collect::<String>()
            .to_lowercase()
            .split_whitespace()
            .map(|w| if w == "1" { "one" } else { w })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let said = plain(&words.join(" "));
    agent::prompts::FILLERS.iter().any(|f| plain(f) == said)
}

/// A caller on the line: the phone plus its events, with timing helpers.
pub struct Caller {
    pub phone: Option<calllock::dial::phone::Phone>,
    pub rx: mpsc::UnboundedReceiver<PhoneEvent>,
    /// Agent words since the caller last spoke.
    pub words: Vec<String>,
    pub speaking: bool,
    /// Local speech: words of a stretch of agent audio from before the
    /// caller last spoke belong to the turn before, however late the
    /// phone's ear hears them.
    pub stretches: Stretches,
    pub quiet_since: Instant,
    pub closed: bool,
    pub clears: usize,
}

impl Caller {
    pub async fn call(o: &DialOptions) -> Caller {
        let (tx, rx) = mpsc::unbounded_channel();
        let phone = match place_call(o, tx).await.unwrap() {
            Answer::Connected(p) => p,
            Answer::TurnedAway(t) => panic!("turned away: {t}"),
        };
        Caller {
            phone: Some(phone),
            rx,
            words: Vec::new(),
            speaking: false,
            stretches: Stretches::default(),
            quiet_since: Instant::now(),
            closed: false,
            clears: 0,
        }
    }

    pub fn sid(&self) -> String {
        self.phone.as_ref().unwrap().call_sid.clone()
    }

    pub fn take(&mut self, e: PhoneEvent) {
        match e {
            PhoneEvent::AgentWord(w) => {
                self.words.push(w);
                self.speaking = true;
            }
            PhoneEvent::AgentQuiet => {
                self.speaking = false;
                self.quiet_since = Instant::now();
            }
            PhoneEvent::Cleared => {
                self.clears += 1;
                self.speaking = false;
                self.quiet_since = Instant::now();
            }
            PhoneEvent::AgentSpeaking(n) => {
                self.stretches.started(n);
                self.speaking = true;
            }
            PhoneEvent::AgentSaid { stretch, text } => {
                if self.stretches.heard(stretch) {
                    self.words
                        .extend(text.split_whitespace().map(str::to_string));
                }
            }
            PhoneEvent::Closed => self.closed = true,
        }
    }

    pub async fn pump(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while !self.closed {
            tokio::select! {
                e = self.rx.recv() => match e { Some(e) => self.take(e), None => self.closed = true },
                _ = tokio::time::sleep_until(until) => return,
            }
        }
    }

    /// Wait until the agent said something and went quiet for 400 ms.
    pub async fn agent_turn(&mut self) -> String {
        self.agent_turn_within(Duration::from_secs(20), Duration::from_millis(400))
            .await
    }

    /// A new turn: the agent's words from here on (from the stretch
    /// playing now, if one is) are the next turn's.
    pub fn new_turn(&mut self) {
        self.words.clear();
        self.stretches.new_turn(self.speaking);
    }

    /// Wait (at most `limit`) until the agent said something and went
    /// quiet for `quiet`, and (local speech) every stretch it played has
    /// been transcribed.
    pub async fn agent_turn_within(&mut self, limit: Duration, quiet: Duration) -> String {
        let deadline = Instant::now() + limit;
        while !self.closed {
            // "One moment." alone is no turn: a caller waits for the reply.
            if !self.words.is_empty()
                && !only_a_filler(&self.words)
                && !self.speaking
                && self.stretches.all_heard()
                && self.quiet_since.elapsed() >= quiet
            {
                break;
            }
            assert!(Instant::now() < deadline, "the agent never answered");
            self.pump(Duration::from_millis(20)).await;
        }
        self.words.join(" ")
    }

    /// Wait until the agent's words since the caller spoke contain `text`
    /// and the agent is quiet again.
    pub async fn until_said(&mut self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.words.join(" ").contains(text) {
            assert!(
                !self.closed && Instant::now() < deadline,
                "never said {text:?}: {:?}",
                self.words
            );
            self.pump(Duration::from_millis(20)).await;
        }
        self.agent_turn().await;
    }

    /// Wait for the first agent word after now; returns how long it took.
    pub async fn first_word_within(&mut self, limit: Duration) -> Duration {
        let t = Instant::now();
        let n = self.words.len();
        while self.words.len() == n && !self.closed && t.elapsed() < limit {
            self.pump(Duration::from_millis(10)).await;
        }
        assert!(self.words.len() > n, "no agent word within {limit:?}");
        t.elapsed()
    }

    /// Wait (at most `limit`) until the agent said `word` (case and
    /// punctuation aside); whether it did.
    pub async fn until_word(&mut self, word: &str, limit: Duration) -> bool {
        let said = |c: &Caller| {
            c.words.iter().any(|w| {
                w.trim_matches(|ch: char| !ch.is_alphanumeric())
                    .eq_ignore_ascii_case(word)
            })
        };
        let until = Instant::now() + limit;
        while !said(self) && !self.closed && Instant::now() < until {
            self.first_word_within(until.saturating_duration_since(Instant::now()))
                .await;
        }
        said(self)
    }

    pub fn say(&mut self, text: &str) {
        self.new_turn();
        self.phone.as_ref().unwrap().say(text);
    }

    /// Play a recorded caller line (8 kHz µ-law) now.
    pub fn play(&mut self, ulaw: Vec<u8>) {
        self.new_turn();
        self.phone.as_ref().unwrap().play_ulaw(ulaw);
    }

    /// Say `text` after the agent's turn; returns the agent's turn.
    pub async fn turn(&mut self, text: &str) -> String {
        let heard = self.agent_turn().await;
        self.say(text);
        heard
    }

    pub async fn until_closed(&mut self) {
        self.until_closed_within(Duration::from_secs(30)).await
    }

    /// Wait (at most `limit`) for the call to end.
    pub async fn until_closed_within(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.closed {
            assert!(Instant::now() < deadline, "the call never ended");
            self.pump(Duration::from_millis(50)).await;
        }
    }

    pub async fn finish(mut self) -> PhoneLog {
        self.until_closed().await;
        self.phone.take().unwrap().finished().await
    }
}

/// (role, content) of the user and agent lines of a transcript.
pub fn lines(transcript: &Value) -> Vec<(String, String)> {
    transcript
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["role"] == "user" || e["role"] == "agent")
        .map(|e| {
            (
                e["role"].as_str().unwrap().to_string(),
                e["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The caller lines of `examples/replays/booking.jsonl` (the last says goodbye).
pub fn booking_lines() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/replays/booking.jsonl"
    );
    let items = calllock::cli::script::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    items
        .into_iter()
        .filter_map(|i| match i {
            calllock::call::driver::ScriptItem::Caller { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}

/// The booking of `examples/replays/booking.jsonl` from +15125559876: up
/// to "Yes, that's right" (the read-back), the booking ("one moment…",
/// then "all set"), then the goodbye. Returns the call SID, the phone's
/// log and the caller lines said.
pub async fn booking_call(s: &Served) -> (String, PhoneLog, Vec<String>) {
    let c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    let (log, said) = finish_booking(c).await;
    (sid, log, said)
}

/// Say the booking's caller lines on a call already answered, through
/// the read-back, the booking and the goodbye; the phone's log and the
/// lines said.
pub async fn finish_booking(mut c: Caller) -> (PhoneLog, Vec<String>) {
    let lines_said = booking_lines();
    let (to_confirm, bye) = (&lines_said[..8], lines_said.last().unwrap());
    for line in to_confirm {
        c.turn(line).await;
    }
    c.until_said("all set").await;
    c.turn(bye).await;
    let said = to_confirm.iter().chain([bye]).cloned().collect();
    (c.finish().await, said)
}

/// Script the fake Twilio REST API to accept the hang-up of `call_sid`;
/// returns the path it is posted to.
pub fn twilio_rest(fake: &FakeHttp, call_sid: &str) -> String {
    let path = format!("/2010-04-01/Accounts/{ACCOUNT}/Calls/{call_sid}.json");
    fake.set(
        &path,
        vec![FakeResponse::json(
            200,
            json!({"sid": call_sid, "status": "completed"}),
        )],
    );
    path
}

/// The user lines of a finished call's transcript.
pub fn user_lines(rec: &store::CallRecord) -> Vec<String> {
    lines(&rec.transcript)
        .into_iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t)
        .collect()
}

/// The record's duration is the line's: from the stream's start to the
/// last sound on it (the caller's hang-up, or the agent's last line played
/// out), within 0.2 s (its ends are rounded to 0.1 s).
pub fn lasted_as_long_as_the_line(rec: &store::CallRecord, lasted: Duration) {
    let duration = rec.record["duration_s"].as_f64().unwrap();
    let lasted = lasted.as_secs_f64();
    assert!(
        (duration - lasted).abs() <= 0.2,
        "the record says {duration} s, the line lasted {lasted:.2} s"
    );
}
