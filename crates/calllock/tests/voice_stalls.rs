//! A vendor that stalls never leaves the caller in silence, and a line it
//! breaks off is recorded as far as it was heard (issue 24, rows 1–3, 6,
//! 7); every call's record lasts as long as its line did: `calllock serve` with Inworld as the voice, Aura as its fallback,
//! Deepgram as the ears and an OpenAI-compatible LLM, each a loopback fake
//! speaking its real protocol, and the Twilio-speaking phone of `calllock
//! dial` as the caller. The fakes speak the offline speech codec, so the
//! phone knows which word it heard and when.

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/served.rs"]
mod served;

use calllock::dial::phone::{HeardWord, PhoneLog};
use providers::deepgram::aura_fake::{FakeAura, FakeAuraConfig};
use providers::deepgram::fake::{FakeBehaviour, FakeDeepgram};
use providers::fake::openai::{FakeMode, FakeOpenAi};
use providers::inworld::fake::{Behaviour, FakeConfig, FakeInworld};
use served::*;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The dead-air budget (issue 24): something audible within 1.5 s, and no
/// gap longer than that inside an agent turn.
const BUDGET: Duration = Duration::from_millis(1500);

/// The greeting, as the profile says it.
fn greeting() -> Vec<String> {
    agent::profile::BusinessProfile::default()
        .greeting_line()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// A call whose greeting Inworld answers with `behaviour`: what the phone
/// heard, the record, and the texts Aura was asked to say.
async fn greeted_with(behaviour: Behaviour) -> (PhoneLog, store::CallRecord, Vec<String>) {
    let deepgram = FakeDeepgram::start(FakeBehaviour::default()).await;
    let inworld = FakeInworld::start(FakeConfig {
        chars_per_second: CPS,
        ..FakeConfig::default()
    })
    .await;
    inworld.set_default(behaviour);
    let aura = FakeAura::start(FakeAuraConfig {
        chars_per_second: CPS,
        ..FakeAuraConfig::default()
    })
    .await;
    let s = serve_with(|c| {
        c.deepgram.api_key = "test-key".into();
        c.deepgram.url = deepgram.base_url();
        c.deepgram.tts_url = aura.base_url();
        c.serve.vad = "codec".into();
        c.inworld.api_key = "test-key".into();
        c.inworld.url = inworld.base_url();
    })
    .await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let opened = Instant::now();
    let sid = c.sid();
    // The greeting is over once the line has been quiet for longer than
    // the budget (a longer gap inside it fails the words check below).
    c.agent_turn_within(Duration::from_secs(20), BUDGET).await;
    let lasted = opened.elapsed();
    c.phone.as_ref().unwrap().hang_up();
    let log = c.finish().await;
    let rec = s.record(&sid).await;
    lasted_as_long_as_the_line(&rec, lasted);
    let asked = aura
        .requests()
        .iter()
        .filter_map(|r| r.text.clone())
        .collect::<Vec<_>>();
    s.server.stop().await;
    (log, rec, asked)
}

/// The words heard, a word said twice at a seam between voices once.
fn words(heard: &[HeardWord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in heard {
        if out.last() != Some(&w.word) {
            out.push(w.word.clone());
        }
    }
    out
}

/// The greeting's words as the phone heard them and as the record holds
/// them (lower case, no punctuation), and its transcript entry.
fn greeting_heard_and_recorded(
    log: &PhoneLog,
    rec: &store::CallRecord,
) -> (Vec<String>, Vec<String>, serde_json::Value) {
    let norm = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let heard = words(&log.heard).iter().map(|w| norm(w)).collect();
    let entry = rec
        .transcript
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["role"] == "agent")
        .cloned()
        .expect("the greeting is in the transcript");
    let recorded = entry["content"]
        .as_str()
        .unwrap_or("")
        .split_whitespace()
        .map(norm)
        .collect();
    (heard, recorded, entry)
}

/// The longest wait between two words the phone heard.
fn longest_gap(heard: &[HeardWord]) -> Duration {
    heard
        .windows(2)
        .map(|w| w[1].at.saturating_sub(w[0].at))
        .max()
        .unwrap_or_default()
}

/// Row 1: Inworld takes the request and never sends audio. The fallback,
/// asked once Inworld is late, says the greeting: the caller hears it
/// within the budget, not after Inworld's timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_that_never_starts_costs_the_caller_less_than_the_budget() {
    let (log, rec, aura) = greeted_with(Behaviour::Hang).await;
    let first = log.heard.first().expect("the greeting was heard");
    assert!(
        first.at <= BUDGET,
        "{:?} of silence before the greeting",
        first.at
    );
    assert_eq!(words(&log.heard), greeting(), "{:?}", log.heard);
    assert!(!aura.is_empty(), "Aura said it");
    assert!(longest_gap(&log.heard) <= BUDGET, "{:?}", log.heard);
    let said = lines(&rec.transcript);
    assert_eq!(
        said.first().map(|l| l.1.as_str()),
        Some(greeting().join(" ").as_str())
    );
}

/// Row 2: Inworld says the first three words of the line, then stalls
/// with the connection open. The fallback says the rest: the caller hears
/// every word (the word at the seam, whose end was not proven, may come
/// twice), with no gap over the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_that_stalls_mid_line_has_the_rest_said_by_the_fallback() {
    let (log, rec, aura) = greeted_with(Behaviour::StallAfter(3)).await;
    assert_eq!(words(&log.heard), greeting(), "{:?}", log.heard);
    assert!(longest_gap(&log.heard) <= BUDGET, "{:?}", log.heard);
    // Aura was asked for the rest, from the third word (the first two were
    // heard whole), not for the whole line.
    let rest = greeting()[2..].join(" ");
    assert_eq!(aura, vec![rest]);
    let said = lines(&rec.transcript);
    assert_eq!(
        said.first().map(|l| l.1.as_str()),
        Some(greeting().join(" ").as_str())
    );
}

/// Row 6: Inworld says three words of each sentence, then reports an error
/// (D-23: the line ends; no fallback after first audio). The record holds
/// the line only as far as the caller heard it, marked as cut — never the
/// words that were not said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_the_voice_breaks_off_is_recorded_as_far_as_it_was_heard() {
    let (log, rec, aura) = greeted_with(Behaviour::ErrorAfter(3)).await;
    let (heard, recorded, greeting_entry) = greeting_heard_and_recorded(&log, &rec);
    assert!(aura.is_empty(), "no fallback after first audio: {aura:?}");
    assert!(
        !heard.is_empty() && heard.len() < greeting().len(),
        "part of the greeting was said: {heard:?}"
    );
    assert_eq!(recorded, heard, "{greeting_entry}");
    assert_eq!(greeting_entry["interrupted"], true, "{greeting_entry}");
}

/// Row 3: the LLM takes every request and never answers. Each caller turn
/// hears a filler within the budget after the end of the turn (the
/// configured endpointing), never the same one twice in a row, then the
/// scripted line once the first-token budget has passed — three times:
/// then the LLM's breaker is open and the scripted line comes at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_llm_gets_a_filler_within_the_budget_then_the_scripted_line() {
    let deepgram = FakeDeepgram::start(FakeBehaviour::default()).await;
    let inworld = FakeInworld::start(FakeConfig {
        chars_per_second: CPS,
        ..FakeConfig::default()
    })
    .await;
    let llm = FakeOpenAi::start(vec![]).await;
    llm.set_handler(Arc::new(fake_llm::llm_handler));
    let mut endpointing = Duration::ZERO;
    let s = serve_with(|c| {
        c.deepgram.api_key = "test-key".into();
        c.deepgram.url = deepgram.base_url();
        c.serve.vad = "codec".into();
        c.inworld.api_key = "test-key".into();
        c.inworld.url = inworld.base_url();
        c.llm.base_url = llm.base_url();
        c.llm.api_key = "test".into();
        endpointing = Duration::from_millis(u64::from(c.deepgram.endpointing_ms));
    })
    .await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let opened = Instant::now();
    let sid = c.sid();
    c.agent_turn().await;
    llm.set_mode(FakeMode::Hang);
    let mut fillers = Vec::new();
    for line in [
        "Hi, my AC stopped cooling last night",
        "No, nothing like that",
        "78701",
    ] {
        c.say(line);
        let speaking = Duration::from_secs_f64((line.len() as f64 + 1.0) / CPS);
        tokio::time::sleep(speaking).await;
        let waited = c.first_word_within(Duration::from_secs(10)).await;
        assert!(
            waited <= endpointing + BUDGET,
            "{waited:?} of silence after {line:?}"
        );
        // The filler, then (after the first-token budget) the scripted
        // line: a turn with a pause, not over once the filler ends.
        let heard = c
            .agent_turn_within(Duration::from_secs(20), Duration::from_secs(3))
            .await;
        let filler = agent::prompts::FILLERS
            .iter()
            .find(|f| heard.starts_with(*f))
            .unwrap_or_else(|| panic!("no filler first: {heard:?}"));
        assert!(
            heard.len() > filler.len() + 5,
            "the reply followed: {heard:?}"
        );
        fillers.push(*filler);
    }
    assert_ne!(fillers[0], fillers[1], "the same filler twice in a row");
    assert_ne!(fillers[1], fillers[2], "the same filler twice in a row");
    // Three replies in a row failed: the LLM's breaker is open, and the
    // next turn hears the scripted line at once — no filler, no wait.
    c.say("My name is Dana Fields");
    let heard = c.agent_turn_within(Duration::from_secs(20), BUDGET).await;
    assert!(
        !agent::prompts::FILLERS.iter().any(|f| heard.starts_with(f)),
        "the open breaker still cost a wait: {heard:?}"
    );
    let lasted = opened.elapsed();
    c.phone.as_ref().unwrap().hang_up();
    c.finish().await;
    lasted_as_long_as_the_line(&s.record(&sid).await, lasted);
    s.server.stop().await;
}

/// Row 7: Deepgram hears the caller and never sends a word back (a
/// stalled recogniser). The caller, who has just spoken, is asked to say
/// it again — never "are you still there?" — within the idle wait, which
/// counts from the end of their speech.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_whose_words_never_come_back_is_asked_again_not_if_they_are_there() {
    let deepgram = FakeDeepgram::start(FakeBehaviour {
        silent: true,
        ..FakeBehaviour::default()
    })
    .await;
    let mut idle = Duration::ZERO;
    let s = serve_with(|c| {
        c.deepgram.api_key = "test-key".into();
        c.deepgram.url = deepgram.base_url();
        c.serve.vad = "codec".into();
        idle = Duration::from_secs_f64(c.engine.idle_prompt_s);
    })
    .await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let opened = Instant::now();
    let sid = c.sid();
    c.agent_turn().await;
    let line = "Hi, my AC stopped cooling last night";
    c.say(line);
    let speaking = Duration::from_secs_f64((line.len() as f64 + 1.0) / CPS);
    let heard = c
        .agent_turn_within(speaking + idle + Duration::from_secs(10), BUDGET)
        .await;
    let not_heard = agent::prompts::Canned::NotHeard.text(&s.cfg.business);
    assert_eq!(heard.trim(), not_heard, "what the caller heard instead");
    assert!(!heard.contains("still there"), "{heard:?}");
    let lasted = opened.elapsed();
    c.phone.as_ref().unwrap().hang_up();
    c.finish().await;
    let rec = s.record(&sid).await;
    lasted_as_long_as_the_line(&rec, lasted);
    let said = lines(&rec.transcript);
    assert!(
        said.iter().all(|(_, t)| !t.contains("still there")),
        "{said:?}"
    );
    s.server.stop().await;
}

/// A caller who hangs up in the middle of the greeting heard part of it:
/// the record holds that part — as the phone's mark echoes prove it played
/// — marked as cut, never the whole line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_hanging_up_mid_line_has_only_what_played_in_the_record() {
    let s = serve_with(|_| {}).await;
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    let sid = c.sid();
    // Hang up once four words have come.
    for _ in 0..4 {
        c.first_word_within(Duration::from_secs(20)).await;
    }
    c.phone.as_ref().unwrap().hang_up();
    let log = c.finish().await;
    let rec = s.record(&sid).await;
    let (heard, recorded, entry) = greeting_heard_and_recorded(&log, &rec);
    assert!(
        heard.len() < greeting().len(),
        "hung up mid-line: {heard:?}"
    );
    // The phone counts a word when its audio arrives; the record, when an
    // echo proves it played. Audio goes serve.output_lead_ms ahead and a
    // mark every twilio.mark_interval_ms, so the words the record leaves
    // out are at most that much audio (and the word it falls in).
    assert!(
        !recorded.is_empty() && heard.starts_with(&recorded),
        "heard {heard:?}, recorded {entry}"
    );
    let unproven = heard[recorded.len()..].join(" ");
    let precision = (s.cfg.serve.output_lead_ms + s.cfg.twilio.mark_interval_ms) as f64 / 1000.0;
    let longest = greeting().iter().map(|w| w.len() + 1).max().unwrap() as f64;
    assert!(
        (unproven.len() as f64) <= CPS * precision + longest,
        "{unproven:?} was heard but not recorded: {entry}"
    );
    assert_eq!(entry["interrupted"], true, "{entry}");
    s.server.stop().await;
}

/// A caller who hangs up the moment the greeting's last audio arrives —
/// before its end has played — never heard its end: the agent sends audio
/// a little ahead of playback, so its last frame going out proves nothing.
/// The record holds the greeting as far as the echoes prove, marked as
/// cut, never whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_hanging_up_before_the_line_has_played_out_is_not_said_to_have_heard_it_all() {
    let s = serve_with(|_| {}).await;
    // How long the greeting is: a caller who hears it whole.
    let mut c = Caller::call(&s.dial("+15125559876")).await;
    c.agent_turn().await;
    c.phone.as_ref().unwrap().hang_up();
    let whole = c.finish().await.agent_audio_ms;
    assert!(whole > 0, "the greeting was heard");
    // The next caller hangs up as the greeting's last frame arrives.
    let c = Caller::call(&s.dial("+15125550142")).await;
    let sid = c.sid();
    c.phone.as_ref().unwrap().hang_up_on_agent_audio(whole);
    let log = c.finish().await;
    assert!(log.caller_hung_up);
    assert_eq!(log.agent_audio_ms, whole, "all of the greeting arrived");
    let rec = s.record(&sid).await;
    let (heard, recorded, entry) = greeting_heard_and_recorded(&log, &rec);
    assert!(
        heard.starts_with(&recorded),
        "heard {heard:?}, recorded {entry}"
    );
    assert_eq!(entry["interrupted"], true, "its end never played: {entry}");
    s.server.stop().await;
}
