//! Driving a [`Phone`]: from the keyboard, or from a replay script (the
//! format of `calllock replay`) against a live server.
//!
//! A script's caller line with no timing is said once the agent has
//! answered and gone quiet (then `pause`); `"after": S` is said S seconds
//! after the previous caller line ended; `"at": S` at S seconds into the
//! call; `{"silence": S}` waits; `{"hangup": true}` hangs up once the
//! agent is quiet. `tool_result` lines cannot steer a live server and are
//! skipped (said on stderr).

use super::phone::{Phone, PhoneEvent, PhoneLog, Stretches};
use crate::call::driver::{ScriptItem, When};
use std::io::Write;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long the agent must be quiet before the caller takes their turn.
const QUIET: Duration = Duration::from_millis(700);
/// Longest wait for the agent to answer before the caller goes on anyway.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Follows the phone's events (and prints them when asked).
pub struct Listener {
    rx: mpsc::UnboundedReceiver<PhoneEvent>,
    print: bool,
    /// Agent words heard since the caller last spoke.
    words_since_said: usize,
    speaking: bool,
    /// Local speech: a late transcription of a stretch from before the
    /// caller spoke is no answer to the caller.
    stretches: Stretches,
    quiet_since: Instant,
    closed: bool,
    at_line_start: bool,
    /// The caller has said something.
    spoke: bool,
}

impl Listener {
    pub fn new(rx: mpsc::UnboundedReceiver<PhoneEvent>, print: bool) -> Self {
        Listener {
            rx,
            print,
            words_since_said: 0,
            speaking: false,
            stretches: Stretches::default(),
            quiet_since: Instant::now(),
            closed: false,
            at_line_start: true,
            spoke: false,
        }
    }

    fn take(&mut self, e: PhoneEvent) {
        match e {
            PhoneEvent::AgentWord(w) => {
                self.words_since_said += 1;
                self.speaking = true;
                if self.print {
                    let mut out = std::io::stdout().lock();
                    if self.at_line_start {
                        let _ = write!(out, "agent:  ");
                        self.at_line_start = false;
                    }
                    let _ = write!(out, "{w} ");
                    let _ = out.flush();
                }
            }
            PhoneEvent::AgentSpeaking(n) => {
                self.stretches.started(n);
                self.speaking = true;
            }
            PhoneEvent::AgentSaid { stretch, text } => {
                if self.stretches.heard(stretch) {
                    self.words_since_said += text.split_whitespace().count();
                }
                if self.print && !text.is_empty() {
                    self.end_line();
                    // Heard from the server: printable only.
                    println!("agent:  {}", agent::printable::printable_text(&text));
                }
            }
            PhoneEvent::AgentQuiet => {
                self.speaking = false;
                self.quiet_since = Instant::now();
                self.end_line();
            }
            PhoneEvent::Cleared => {
                self.speaking = false;
                self.quiet_since = Instant::now();
                if self.print {
                    print!("[cut off] ");
                }
                self.end_line();
            }
            PhoneEvent::Closed => {
                self.closed = true;
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        if self.print && !self.at_line_start {
            println!();
        }
        self.at_line_start = true;
    }

    /// The caller said something.
    pub fn said(&mut self, text: &str) {
        self.words_since_said = 0;
        self.stretches.new_turn(self.speaking);
        self.spoke = true;
        self.end_line();
        if self.print {
            println!("caller: {}", agent::printable::printable_text(text));
        }
    }

    /// The caller spoke and the agent has not said a word since.
    pub fn awaiting_answer(&self) -> bool {
        self.spoke && self.words_since_said == 0
    }

    /// Take what the phone reported after the call ended (the last
    /// transcribed words of a local-speech call).
    pub fn drain(&mut self) {
        while let Ok(e) = self.rx.try_recv() {
            self.take(e);
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Handle events for `d` (or until the call closes).
    pub async fn pump(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while !self.closed {
            tokio::select! {
                e = self.rx.recv() => match e {
                    Some(e) => self.take(e),
                    None => self.closed = true,
                },
                _ = tokio::time::sleep_until(until) => return,
            }
        }
    }

    /// Wait until the agent has answered (a word since the caller spoke,
    /// when `need_answer`) and has been quiet for a moment.
    pub async fn agent_turn_over(&mut self, need_answer: bool) {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        while !self.closed && Instant::now() < deadline {
            let answered = !need_answer || self.words_since_said > 0;
            // (Local speech: what played is all transcribed, so a stretch
            // still being heard cannot turn out to be the answer later.)
            let all_heard = self.stretches.all_heard();
            if answered && all_heard && !self.speaking && self.quiet_since.elapsed() >= QUIET {
                return;
            }
            self.pump(Duration::from_millis(50)).await;
        }
    }
}

/// Play `items` on `phone`; returns when the call is over.
pub async fn run_script(
    phone: Phone,
    mut l: Listener,
    items: Vec<ScriptItem>,
    pause: Duration,
    chars_per_second: f64,
) -> PhoneLog {
    let t0 = Instant::now();
    let mut last_said_end = t0;
    for item in items {
        if l.is_closed() {
            break;
        }
        match item {
            ScriptItem::Caller { text, when } => {
                match when {
                    When::Default => {
                        l.agent_turn_over(true).await;
                        l.pump(pause).await;
                    }
                    When::After(s) => {
                        let at = last_said_end + Duration::from_secs_f64(s.max(0.0));
                        l.pump(at.saturating_duration_since(Instant::now())).await;
                    }
                    When::At(s) => {
                        let at = t0 + Duration::from_secs_f64(s.max(0.0));
                        l.pump(at.saturating_duration_since(Instant::now())).await;
                    }
                }
                if l.is_closed() {
                    break;
                }
                phone.say(&text);
                l.said(&text);
                let chars = text.chars().count() as f64 + 1.0;
                let speaking = Duration::from_secs_f64(chars / chars_per_second.max(0.1));
                last_said_end = Instant::now() + speaking;
            }
            ScriptItem::Silence(s) => l.pump(Duration::from_secs_f64(s.max(0.0))).await,
            ScriptItem::ToolResult { tool, .. } => {
                eprintln!("note: a tool_result line ({tool:?}) cannot steer a live server; skipped")
            }
            ScriptItem::HangUp => {
                // After the agent's answer to the last caller line, if any.
                l.agent_turn_over(l.awaiting_answer()).await;
                phone.hang_up();
                break;
            }
        }
    }
    // The script is over: wait for the agent to end the call.
    while !l.is_closed() {
        l.pump(Duration::from_millis(200)).await;
    }
    let log = phone.finished().await;
    l.drain();
    log
}

/// Play recorded caller lines: each once the agent has answered and gone
/// quiet (then `pause`); then wait for the agent to end the call, or hang
/// up after its answer to the last line.
pub async fn run_recordings(
    phone: Phone,
    mut l: Listener,
    clips: Vec<super::recordings::Clip>,
    pause: Duration,
) -> PhoneLog {
    for clip in clips {
        l.agent_turn_over(true).await;
        l.pump(pause).await;
        if l.is_closed() {
            break;
        }
        l.said(&format!("[{}]", clip.name));
        phone.play_ulaw(clip.ulaw);
    }
    if !l.is_closed() {
        l.agent_turn_over(true).await;
        phone.hang_up();
    }
    let log = phone.finished().await;
    l.drain();
    log
}

/// Lines typed on the keyboard are said; the end of input hangs up.
pub async fn run_interactive(
    phone: Phone,
    mut l: Listener,
    mut lines: mpsc::Receiver<Option<String>>,
) -> PhoneLog {
    loop {
        tokio::select! {
            line = lines.recv() => match line {
                Some(Some(text)) if !text.trim().is_empty() => {
                    phone.say(text.trim());
                    l.said(text.trim());
                }
                Some(Some(_)) => {}
                _ => {
                    phone.hang_up();
                    break;
                }
            },
            _ = l.pump(Duration::from_millis(100)) => {
                if l.is_closed() {
                    break;
                }
            }
        }
    }
    let log = phone.finished().await;
    l.drain();
    log
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listener fed `events`, as if the phone had sent them.
    fn listener(events: &[PhoneEvent]) -> (Listener, mpsc::UnboundedSender<PhoneEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut l = Listener::new(rx, false);
        for e in events {
            l.take(e.clone());
        }
        (l, tx)
    }

    fn said(stretch: u64, text: &str) -> PhoneEvent {
        PhoneEvent::AgentSaid {
            stretch,
            text: text.into(),
        }
    }

    #[test]
    fn a_late_transcription_of_an_earlier_stretch_is_no_answer() {
        // The greeting played; the caller spoke before the ear had it.
        let (mut l, _tx) = listener(&[PhoneEvent::AgentSpeaking(0), PhoneEvent::AgentQuiet]);
        l.said("my AC is broken");
        l.take(said(0, "Thanks for calling, how can I help?"));
        assert!(l.awaiting_answer(), "the greeting is not the answer");
        // The answer plays and is heard: now it is.
        l.take(PhoneEvent::AgentSpeaking(1));
        l.take(PhoneEvent::AgentQuiet);
        assert!(l.awaiting_answer(), "not transcribed yet");
        l.take(said(1, "Any gas smell?"));
        assert!(!l.awaiting_answer());
    }

    #[tokio::test(start_paused = true)]
    async fn the_turn_is_not_over_while_a_stretch_is_being_heard() {
        let (mut l, tx) = listener(&[
            PhoneEvent::AgentSpeaking(0),
            PhoneEvent::AgentQuiet,
            said(0, "Thanks for calling."),
            PhoneEvent::AgentSpeaking(1),
            PhoneEvent::AgentQuiet,
        ]);
        // Stretch 1 (maybe the rest of the answer) is still with the ear:
        // the turn waits for it, however long the quiet.
        let waited = tokio::spawn(async move {
            let t = Instant::now();
            l.agent_turn_over(false).await;
            t.elapsed()
        });
        tokio::time::sleep(QUIET * 5).await;
        tx.send(said(1, "How can I help?")).unwrap();
        let waited = waited.await.unwrap();
        assert!(waited >= QUIET * 5, "went on after {waited:?}");
        assert!(waited < ANSWER_TIMEOUT);
    }
}
