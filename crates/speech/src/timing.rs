//! Word timings for voices that give none (Flite): where each word of a
//! line starts in its audio, estimated from the audio itself.
//!
//! The speech in the audio is found by its loudness (leading and trailing
//! silence are not words), then shared among the words in proportion to
//! their length in letters plus a pause after punctuation. Good to a
//! syllable or so — enough for the conversation to know which words a
//! caller heard before a barge-in.

use std::time::Duration;
use voice::accountant::WordTiming;

/// Samples quieter than this (of 32767) are silence.
const SILENCE: u16 = 600;

/// Where speech starts and ends in `samples` (indices), if anywhere.
pub fn speech_span(samples: &[i16]) -> Option<(usize, usize)> {
    let loud = |s: &i16| s.unsigned_abs() > SILENCE;
    let start = samples.iter().position(loud)?;
    let end = samples.iter().rposition(loud)? + 1;
    Some((start, end))
}

fn weight(word: &str) -> f64 {
    let letters = word.chars().filter(|c| c.is_alphanumeric()).count() as f64;
    // Digits are read as whole words ("78701" is five of them).
    let digits = word.chars().filter(char::is_ascii_digit).count() as f64;
    let pause = if word.ends_with([',', '.', '!', '?', ';', ':']) {
        3.0
    } else {
        0.0
    };
    letters.max(1.0) + digits * 3.0 + pause + 1.0
}

/// Word starts for `text` spoken as `samples` at `rate`.
pub fn estimate_words(text: &str, samples: &[i16], rate: u32) -> Vec<WordTiming> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || rate == 0 {
        return Vec::new();
    }
    let (start, end) = speech_span(samples).unwrap_or((0, samples.len()));
    let total: f64 = words.iter().map(|w| weight(w)).sum();
    let span = (end - start) as f64;
    let mut at = 0.0;
    words
        .iter()
        .map(|w| {
            let offset = start as f64 + span * at / total;
            at += weight(w);
            WordTiming {
                word: (*w).to_string(),
                start: Duration::from_secs_f64(offset / f64::from(rate)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_share_the_speech_not_the_silence() {
        // 0.5 s silence, 1 s "speech", 0.5 s silence at 1 kHz.
        let mut s = vec![0i16; 500];
        s.extend(std::iter::repeat_n(5000i16, 1000));
        s.extend(vec![0i16; 500]);
        let w = estimate_words("aaaa bbbb", &s, 1000);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].start, Duration::from_millis(500));
        assert_eq!(w[1].start, Duration::from_millis(1000));
    }

    #[test]
    fn starts_increase_and_stay_inside_the_audio() {
        let s = vec![4000i16; 16_000];
        let w = estimate_words(
            "Thanks for calling ACE Cooling, how can I help you?",
            &s,
            16_000,
        );
        assert_eq!(w.len(), 10);
        assert!(w.windows(2).all(|p| p[0].start < p[1].start));
        assert!(w.last().unwrap().start < Duration::from_secs(1));
    }

    #[test]
    fn nothing_to_time_is_no_timings() {
        assert!(estimate_words("  ", &[1, 2, 3], 8000).is_empty());
        assert_eq!(estimate_words("hi", &[], 8000).len(), 1);
        assert!(speech_span(&[0, 10, -20]).is_none());
    }
}
