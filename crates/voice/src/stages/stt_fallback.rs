//! Speech to text with a fallback: when the primary recogniser (a vendor)
//! becomes unusable mid-call, the call goes on with a backup (the local
//! recogniser) instead of ending.
//!
//! ```text
//!            audio ──▶ primary (Deepgram) ──▶ transcripts
//!                          │ lost(): why + the audio it never answered
//!                          ▼
//!            audio ──▶ backup (Whisper), started on the switch; first it
//!                      hears the unanswered audio, then the live audio
//! ```
//!
//! The switch happens on the first audio frame after the primary reports
//! [`Stt::lost`]. The caller's words that the primary received but never
//! answered are handed to the backup as one utterance — but only when the
//! VAD heard the caller speak during that audio, so a refusal at the start
//! of the call does not send a second of line noise to be recognised (the
//! backup keeps such audio only as the lead-in of the next utterance). If
//! the caller is speaking at the switch, the backup's utterance stays open
//! and the VAD's stop ends it as usual. Nobody is asked to repeat anything
//! that can still be heard.

use super::stt::{Lost, Stt, Transcript, TranscriptOut};
use crate::frames::{Audio, Encoding};

/// Builds the backup recogniser, once, at the switch.
pub type MakeBackup = Box<dyn FnOnce() -> Box<dyn Stt> + Send>;

/// A call's speech to text: the primary, then the backup for the rest of
/// the call once the primary is lost.
pub struct FallbackStt {
    primary: Option<Box<dyn Stt>>,
    make_backup: Option<MakeBackup>,
    backup: Option<Box<dyn Stt>>,
    /// Who the backup is, for the log.
    backup_name: &'static str,
    out: Option<TranscriptOut>,
    /// The VAD says the caller is speaking.
    speaking: bool,
    /// Seconds of caller audio so far.
    clock: f64,
    /// When (on `clock`) the caller last stopped speaking.
    last_stop: Option<f64>,
}

impl FallbackStt {
    /// `primary` until it is lost, then the engine `make_backup` builds.
    pub fn new(primary: Box<dyn Stt>, backup_name: &'static str, make_backup: MakeBackup) -> Self {
        FallbackStt {
            primary: Some(primary),
            make_backup: Some(make_backup),
            backup: None,
            backup_name,
            out: None,
            speaking: false,
            clock: 0.0,
            last_stop: None,
        }
    }

    /// Whether the call has switched to the backup.
    pub fn switched(&self) -> bool {
        self.backup.is_some()
    }

    fn active(&mut self) -> Option<&mut Box<dyn Stt>> {
        match &mut self.backup {
            Some(b) => Some(b),
            None => self.primary.as_mut(),
        }
    }

    /// Drop the primary and start the backup with what the primary missed.
    fn switch(&mut self, lost: Lost) -> Vec<Transcript> {
        let mut said = self
            .primary
            .take()
            .map(|mut p| p.finish())
            .unwrap_or_default();
        let Some(make) = self.make_backup.take() else {
            return said;
        };
        let mut backup = make();
        if let Some(out) = &self.out {
            backup.start(out.clone());
        }
        let missed = seconds(&lost.unheard);
        // The caller spoke during the audio the primary never answered.
        let spoke = self.speaking || self.last_stop.is_some_and(|t| t > self.clock - missed);
        tracing::warn!(
            why = %lost.why,
            backup = self.backup_name,
            missed_s = format_args!("{missed:.2}"),
            replayed = spoke,
            "speech recognition lost; the call goes on with the backup recogniser"
        );
        if spoke && missed > 0.0 {
            backup.user_started_speaking();
            said.extend(backup.push_audio(&lost.unheard));
            if !self.speaking {
                backup.user_stopped_speaking();
            }
        } else {
            // Not words: the backup keeps it as the audio before the next
            // start (its pre-roll), so a first syllable is not cut.
            if missed > 0.0 {
                said.extend(backup.push_audio(&lost.unheard));
            }
            if self.speaking {
                backup.user_started_speaking();
            }
        }
        self.backup = Some(backup);
        said
    }
}

/// The length of `audio` in seconds.
fn seconds(audio: &Audio) -> f64 {
    let per_sample = match audio.encoding {
        Encoding::Pcm16 => 2.0,
        Encoding::MuLaw => 1.0,
    };
    audio.bytes.len() as f64 / per_sample / f64::from(audio.rate.max(1))
}

impl Stt for FallbackStt {
    fn start(&mut self, out: TranscriptOut) {
        if let Some(p) = &mut self.primary {
            p.start(out.clone());
        }
        self.out = Some(out);
    }

    fn push_audio(&mut self, audio: &Audio) -> Vec<Transcript> {
        self.clock += seconds(audio);
        let mut said = match self.primary.as_mut().and_then(|p| p.lost()) {
            Some(lost) => self.switch(lost),
            None => Vec::new(),
        };
        if let Some(stt) = self.active() {
            said.extend(stt.push_audio(audio));
        }
        said
    }

    fn finish(&mut self) -> Vec<Transcript> {
        self.active().map(|s| s.finish()).unwrap_or_default()
    }

    fn user_started_speaking(&mut self) {
        self.speaking = true;
        if let Some(s) = self.active() {
            s.user_started_speaking();
        }
    }

    fn user_stopped_speaking(&mut self) {
        self.speaking = false;
        self.last_stop = Some(self.clock);
        if let Some(s) = self.active() {
            s.user_stopped_speaking();
        }
    }

    fn lost(&mut self) -> Option<Lost> {
        // Only the backup can lose the call's ears now.
        self.backup.as_mut().and_then(|b| b.lost())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What an engine was told, in order.
    type Log = Arc<Mutex<Vec<String>>>;

    struct Engine {
        name: &'static str,
        log: Log,
        lose_after: Option<usize>,
        frames: usize,
    }

    impl Engine {
        fn boxed(name: &'static str, log: &Log, lose_after: Option<usize>) -> Box<dyn Stt> {
            Box::new(Engine {
                name,
                log: log.clone(),
                lose_after,
                frames: 0,
            })
        }
        fn note(&self, what: String) {
            self.log
                .lock()
                .unwrap()
                .push(format!("{} {what}", self.name));
        }
    }

    impl Stt for Engine {
        fn start(&mut self, _out: TranscriptOut) {
            self.note("start".into());
        }
        fn push_audio(&mut self, audio: &Audio) -> Vec<Transcript> {
            self.frames += 1;
            self.note(format!("audio {}", audio.bytes.len()));
            Vec::new()
        }
        fn finish(&mut self) -> Vec<Transcript> {
            self.note("finish".into());
            Vec::new()
        }
        fn user_started_speaking(&mut self) {
            self.note("started".into());
        }
        fn user_stopped_speaking(&mut self) {
            self.note("stopped".into());
        }
        fn lost(&mut self) -> Option<Lost> {
            let lose = self.lose_after == Some(self.frames);
            lose.then(|| {
                self.lose_after = None;
                Lost {
                    why: "refused".into(),
                    // 0.5 s at 8 kHz µ-law.
                    unheard: Audio::mulaw(vec![0u8; 4000], 8000),
                }
            })
        }
    }

    /// 20 ms of 8 kHz PCM16.
    fn frame() -> Audio {
        Audio::pcm16(vec![0u8; 320], 8000)
    }

    fn fallback(log: &Log, lose_after: usize) -> FallbackStt {
        let backup_log = log.clone();
        FallbackStt::new(
            Engine::boxed("primary", log, Some(lose_after)),
            "backup",
            Box::new(move || Engine::boxed("backup", &backup_log, None)),
        )
    }

    fn taken(log: &Log) -> Vec<String> {
        std::mem::take(&mut *log.lock().unwrap())
    }

    fn started(log: &Log, lose_after: usize) -> FallbackStt {
        let mut stt = fallback(log, lose_after);
        let (tx, _rx) = crate::inbox::inbox(8);
        stt.start(TranscriptOut::new(tx));
        assert_eq!(taken(log), ["primary start"]);
        stt
    }

    #[test]
    fn a_lost_primary_hands_the_rest_of_the_call_to_the_backup() {
        let log = Log::default();
        let mut stt = started(&log, 2);
        stt.push_audio(&frame());
        stt.push_audio(&frame());
        assert!(!stt.switched());
        assert_eq!(taken(&log), ["primary audio 320", "primary audio 320"]);
        // Lost with no speech in the last 0.5 s: the missed audio is only
        // the lead-in of what comes next (no utterance of its own).
        stt.push_audio(&frame());
        assert!(stt.switched());
        assert_eq!(
            taken(&log),
            [
                "primary finish",
                "backup start",
                "backup audio 4000",
                "backup audio 320"
            ]
        );
        stt.user_started_speaking();
        stt.push_audio(&frame());
        stt.user_stopped_speaking();
        stt.finish();
        assert_eq!(
            taken(&log),
            [
                "backup started",
                "backup audio 320",
                "backup stopped",
                "backup finish"
            ]
        );
    }

    #[test]
    fn words_the_primary_never_answered_are_heard_by_the_backup() {
        let log = Log::default();
        let mut stt = started(&log, 30);
        // The caller speaks for 0.4 s and stops; the primary never answers.
        for i in 0..30 {
            if i == 5 {
                stt.user_started_speaking();
            }
            if i == 25 {
                stt.user_stopped_speaking();
            }
            stt.push_audio(&frame());
        }
        taken(&log);
        stt.push_audio(&frame());
        assert_eq!(
            taken(&log),
            [
                "primary finish",
                "backup start",
                "backup started",
                "backup audio 4000",
                "backup stopped",
                "backup audio 320"
            ]
        );
    }

    #[test]
    fn speech_before_the_missed_audio_is_not_heard_again() {
        let log = Log::default();
        let mut stt = started(&log, 60);
        // The caller spoke and stopped at 0.4 s; the primary is lost at
        // 1.2 s with 0.5 s unanswered — quiet since the stop.
        for i in 0..60 {
            if i == 5 {
                stt.user_started_speaking();
            }
            if i == 20 {
                stt.user_stopped_speaking();
            }
            stt.push_audio(&frame());
        }
        taken(&log);
        stt.push_audio(&frame());
        assert_eq!(
            taken(&log),
            [
                "primary finish",
                "backup start",
                "backup audio 4000",
                "backup audio 320"
            ]
        );
    }

    #[test]
    fn a_caller_speaking_at_the_switch_is_heard_to_the_end_of_the_line() {
        let log = Log::default();
        let mut stt = started(&log, 3);
        stt.push_audio(&frame());
        stt.user_started_speaking();
        stt.push_audio(&frame());
        stt.push_audio(&frame());
        taken(&log);
        stt.push_audio(&frame());
        // The utterance stays open: the VAD's stop ends it.
        assert_eq!(
            taken(&log),
            [
                "primary finish",
                "backup start",
                "backup started",
                "backup audio 4000",
                "backup audio 320"
            ]
        );
        stt.user_stopped_speaking();
        assert_eq!(taken(&log), ["backup stopped"]);
    }
}
