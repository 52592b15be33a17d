//! The caller's mouth: sends one 20 ms frame of caller audio every 20 ms —
//! speech when something was said, silence otherwise — like a phone line.

use crate::frames::{Audio, Frame};
use crate::inbox::Sender;
use crate::offline::codec::{encode, silence, to_bytes};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

struct Shared {
    queue: VecDeque<Vec<i16>>,
    /// When the first voiced frame of the current speech was sent.
    voiced_at: Vec<Instant>,
    /// Time the last voiced frame was sent.
    last_voiced: Option<Instant>,
    /// Each stretch of speech: first voiced frame sent, end of the last.
    stretches: Vec<(Instant, Instant)>,
    hung_up: bool,
}

/// The caller's side of the line.
#[derive(Clone)]
pub struct Mouth {
    shared: Arc<Mutex<Shared>>,
    drained: Arc<Notify>,
    rate: u32,
    chars_per_second: f64,
}

impl Mouth {
    /// Start sending frames into `input` (a task; stops at hang-up or when
    /// the pipeline closes).
    pub fn start(input: Sender, rate: u32, chars_per_second: f64) -> Self {
        let shared = Arc::new(Mutex::new(Shared {
            queue: VecDeque::new(),
            voiced_at: Vec::new(),
            last_voiced: None,
            stretches: Vec::new(),
            hung_up: false,
        }));
        let drained = Arc::new(Notify::new());
        let mouth = Mouth {
            shared: shared.clone(),
            drained: drained.clone(),
            rate,
            chars_per_second,
        };
        let quiet = to_bytes(&silence(rate));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            let mut was_speaking = false;
            loop {
                tick.tick().await;
                let (frame, hung_up, empty) = {
                    let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
                    let f = s.queue.pop_front();
                    if f.is_some() {
                        let now = Instant::now();
                        let end = now + Duration::from_millis(20);
                        if !was_speaking {
                            s.voiced_at.push(now);
                            s.stretches.push((now, end));
                        } else if let Some(last) = s.stretches.last_mut() {
                            last.1 = end;
                        }
                        s.last_voiced = Some(now);
                    }
                    (f, s.hung_up, s.queue.is_empty())
                };
                if hung_up {
                    break;
                }
                was_speaking = frame.is_some() && !empty;
                let bytes = match &frame {
                    Some(f) => to_bytes(f),
                    None => quiet.clone(),
                };
                if empty {
                    drained.notify_waiters();
                }
                if input
                    .send(Frame::input_audio(Audio::pcm16(bytes, rate)))
                    .await
                    .is_err()
                {
                    break;
                }
            }
            drained.notify_waiters();
        });
        mouth
    }

    /// Queue `text` as speech (starts at the next frame).
    pub fn speak(&self, text: &str) {
        let (samples, _) = encode(text, self.rate, self.chars_per_second);
        let per = (self.rate as usize / 50).max(4);
        let mut s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        for f in samples.chunks(per) {
            s.queue.push_back(f.to_vec());
        }
    }

    /// Wait until everything queued has been sent.
    pub async fn finished(&self) {
        loop {
            let n = self.drained.notified();
            {
                let s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
                if s.queue.is_empty() || s.hung_up {
                    return;
                }
            }
            n.await;
        }
    }

    /// When each stretch of speech began (first voiced frame sent).
    pub fn speech_starts(&self) -> Vec<Instant> {
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .voiced_at
            .clone()
    }

    /// Every stretch of speech (first voiced frame, end of the last one).
    pub fn stretches(&self) -> Vec<(Instant, Instant)> {
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stretches
            .clone()
    }

    /// When the last voiced frame was sent.
    pub fn last_voiced(&self) -> Option<Instant> {
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last_voiced
    }

    /// Stop sending (the caller hung up).
    pub fn hang_up(&self) {
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .hung_up = true;
    }
}
