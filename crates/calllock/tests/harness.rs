//! Whole CallLock voice calls in virtual time: the real pipeline, the real
//! conversation engine and embedded backend, symmetric mock vendors (see
//! `calllock::harness`). Every test ends with the invariants: no audio of
//! an old turn after a barge-in, every tool call finished or cancelled, at
//! most one agent reply per caller turn, no dead air over the budget, the
//! pipeline stopped within its deadline, the LLM context equal to the
//! projection of the event log.

use calllock::harness::{Harness, HarnessConfig, Report};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use voice::history::{Event, Speaker};
use voice::stages::turn::BargeInRules;
use voice::testkit::{LlmEnding, MockReply};

const JONAS: &str = "+15125550100";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn show(r: &Report) {
    for (t, text) in r.heard() {
        eprintln!("{t:7.2}s agent: {text}");
    }
    for (s, e) in &r.stretches {
        eprintln!("{:7.2}s-{:.2}s caller speaking", r.secs(*s), r.secs(*e));
    }
    if let Some(o) = &r.outcome {
        for l in o.log().transcript() {
            let cut = if l.interrupted { " [cut off]" } else { "" };
            eprintln!("  {:>8.2?} {:?}: {}{cut}", l.at, l.speaker, l.text);
        }
        for e in o.log().events() {
            if let Event::Note { text, .. } | Event::ToolCalled { name: text, .. } = &e.event {
                eprintln!("  {:>8.2?} note: {text}", e.at);
            }
        }
        eprintln!("final state {}", o.session().state);
    }
}

fn tool_calls(r: &Report, name: &str) -> usize {
    r.outcome()
        .log()
        .events()
        .iter()
        .filter(|e| matches!(&e.event, Event::ToolCalled { name: n, .. } if n == name))
        .count()
}

/// No agent utterance begins while the caller is speaking.
fn assert_no_talk_over(r: &Report) {
    for id in r.ear.utterances() {
        let (start, _) = r.ear.span(id).expect("heard");
        for (s, e) in &r.stretches {
            assert!(
                !(start > *s && start < *e),
                "agent utterance {id} started at {:.2} s while the caller spoke ({:.2}-{:.2} s)",
                r.secs(start),
                r.secs(*s),
                r.secs(*e)
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_whole_booking_by_voice() {
    let h = Harness::start(HarnessConfig::default()).await;
    let greeting = h.wait_for_response().await;
    assert!(greeting.text.contains("Thanks for calling"), "{greeting:?}");
    assert!(
        greeting.at < 0.5,
        "the greeting starts at once: {greeting:?}"
    );
    for line in [
        "Hi, my AC stopped cooling last night",
        "No, nothing like that",
        "It's 78745",
        "My name is Dana Fields",
        "It's 4329 Franklin Street",
        "No, that's everything",
        "As soon as possible please",
        "Yes, that's right",
    ] {
        h.say(line).await;
        let reply = h.wait_for_response().await;
        assert!(!reply.text.is_empty());
    }
    h.say("Great, thanks, bye").await;
    let r = h.wait_for_agent_hangup(Duration::from_secs(30)).await;
    show(&r);
    r.assert_invariants();
    let s = &r.outcome().session();
    assert!(s.booking_confirmed, "booked: {:?}", s.state);
    assert_eq!(tool_calls(&r, "book_service"), 1);
    assert_no_talk_over(&r);
    // The transcript is what was heard: every agent line matches the ear.
    let heard: Vec<String> = r.heard().into_iter().map(|(_, t)| t).collect();
    let said: Vec<String> = r
        .outcome()
        .log()
        .transcript()
        .into_iter()
        .filter(|l| l.speaker == Speaker::Agent)
        .map(|l| l.text)
        .collect();
    assert_eq!(heard, said);
}

/// Barge-in: the caller cuts off a long reply. The output stops within one
/// frame after the VAD's start time, the LLM stream still running is
/// dropped at once, the transcript and the next LLM request hold only what
/// the caller heard.
#[tokio::test(start_paused = true)]
async fn barge_in_stops_the_audio_and_cancels_the_reply() {
    let long = "Okay, I can help with that. Before we go any further I need to ask you a quick safety question about your home, so please listen carefully to the next part.";
    let cfg = HarnessConfig {
        replies: Some(Arc::new(move |_req, i| {
            (i == 0).then(|| MockReply::text(long, ms(300), ms(150)))
        })),
        ..HarnessConfig::default()
    };
    let h = Harness::start(cfg).await;
    h.wait_for_response().await;
    h.say("my AC is broken").await;
    let voice_at = h.interrupt_after("I can help", "no no wait").await;
    h.wait_for_response().await;
    let r = h.hang_up().await;
    show(&r);
    r.assert_invariants();

    // The output stopped: the last frame of the cut reply started no later
    // than the VAD start time (0.4 s) plus one frame after the first voiced
    // frame of the interruption.
    let cut_id = r.heard_ids_with("I can help")[0];
    let (_, last_end) = r.ear.span(cut_id).unwrap();
    let last_start = last_end - ms(20);
    let budget = ms(400) + ms(20);
    assert!(
        last_start <= voice_at + budget,
        "stale output {:.3} s after the caller's first voiced frame",
        (last_start - voice_at).as_secs_f64()
    );
    assert_eq!(r.ear.clears.len(), 1, "one barge-in, one clear");
    // The interrupted LLM stream was dropped (not waited for) within 5 ms.
    let (clear_at, _) = r.ear.clears[0];
    let first = &r.llm_calls[0];
    let (ended, how) = first.ended.expect("ended");
    assert_eq!(how, LlmEnding::Dropped);
    assert!(
        ended >= clear_at && ended - clear_at <= ms(5),
        "dropped {:?} after the barge-in",
        ended - clear_at
    );
    // Transcript: the heard part, marked interrupted.
    let t = r.outcome().log().transcript();
    let cut = t
        .iter()
        .find(|l| l.interrupted)
        .expect("an interrupted line");
    assert!(cut.text.starts_with("Okay, I can help"), "{cut:?}");
    assert!(cut.text.len() < long.len());
    assert_eq!(cut.text, r.ear.heard_text(cut_id));
    let session_line = r
        .outcome()
        .session()
        .transcript_log
        .iter()
        .find(|e| e.interrupted)
        .expect("engine transcript marks it");
    assert_eq!(session_line.content.as_deref(), Some(cut.text.as_str()));
    // The next LLM request saw only the heard part.
    let next = &r.llm_requests()[1];
    let assistant: Vec<&str> = next
        .messages
        .iter()
        .filter(|m| m.role == agent::responder::ChatRole::Assistant)
        .map(|m| m.content.as_str())
        .collect();
    assert!(assistant.contains(&cut.text.as_str()), "{assistant:?}");
    assert!(!assistant.iter().any(|a| a.contains("listen carefully")));
}

/// Incident 5 (CA84af5e…, Jonas): the lookup answers in 653 ms while he is
/// still talking. The agent must not speak over him; one reply after the
/// last fragment, with every fragment in that one turn.
#[tokio::test(start_paused = true)]
async fn incident_talk_over_after_a_fast_lookup() {
    let cfg = HarnessConfig {
        caller_id: JONAS.into(),
        tool_latency: ms(653),
        ..HarnessConfig::default()
    };
    let h = Harness::start(cfg).await;
    h.wait_for_response().await;
    h.say_fragments(
        &[
            "Hi, this is Jonas, I'm having a problem with my",
            "air conditioning",
            "it's not cooling upstairs at all",
        ],
        ms(700),
    )
    .await;
    let reply = h.wait_for_response().await;
    assert!(reply.text.contains("Jonas"), "{reply:?}");
    let r = h.hang_up().await;
    show(&r);
    r.assert_invariants();
    assert_no_talk_over(&r);
    assert_eq!(tool_calls(&r, "lookup_caller"), 1);
    assert_eq!(r.llm_calls.len(), 1, "one reply for the three fragments");
    let last_user = r.llm_requests()[0].last_user_text().to_string();
    assert!(last_user.contains("upstairs"), "{last_user}");
    assert!(last_user.contains("air conditioning"), "{last_user}");
}

/// Incident 3 (CAd2b972…, second half): a split first utterance must not
/// trigger a second lookup.
#[tokio::test(start_paused = true)]
async fn incident_fragment_duplicates_do_not_repeat_the_lookup() {
    let h = Harness::start(HarnessConfig::default()).await;
    h.wait_for_response().await;
    h.say_fragments(&["Hi I am having a", "problem with my heater"], ms(600))
        .await;
    h.wait_for_response().await;
    let r = h.hang_up().await;
    show(&r);
    r.assert_invariants();
    assert_eq!(tool_calls(&r, "lookup_caller"), 1);
}

/// Incident 3 (CAd2b972…): 26 s of silence after welcome → lookup → safety.
/// A tool-driven state change must give the caller a reply in time.
#[tokio::test(start_paused = true)]
async fn incident_no_dead_air_after_the_lookup() {
    let h = Harness::start(HarnessConfig::default()).await;
    h.wait_for_response().await;
    h.say("my furnace is making a weird noise").await;
    let stopped = Instant::now();
    let reply = h.wait_for_response().await; // panics on dead air
    assert!(reply.text.contains("safety"), "{reply:?}");
    let waited = reply.at - h.secs(stopped);
    assert!(waited < 4.0, "waited {waited:.2} s");
    let r = h.hang_up().await;
    r.assert_invariants();
    assert_eq!(r.outcome().session().state.to_string(), "safety");
}

/// Incident 4 (CA4e393d…): the address in five fragments stays one answer;
/// no escalation to a callback.
#[tokio::test(start_paused = true)]
async fn incident_fragmented_address() {
    let h = Harness::start(HarnessConfig::default()).await;
    h.wait_for_response().await;
    for line in [
        "Hi, my AC is not cooling",
        "No, nothing like that",
        "It's 78701",
        "My name is Dana Fields",
    ] {
        h.say(line).await;
        h.wait_for_response().await;
    }
    h.say_fragments(
        &[
            "Okay it's",
            "four three two nine",
            "Franklin Street",
            "Franklin",
            "Austin Texas",
        ],
        ms(550),
    )
    .await;
    h.wait_for_response().await;
    let r = h.hang_up().await;
    show(&r);
    r.assert_invariants();
    let s = &r.outcome().session();
    assert_ne!(s.state.to_string(), "callback", "escalated mid-answer");
    assert!(
        s.service_address.contains("Franklin"),
        "{:?}",
        s.service_address
    );
    assert_no_talk_over(&r);
}

/// Incident 2 (CA1e1edab…): the call hung 7 s after goodbye. After the
/// safety script the caller gets at most one short answer (issue 23), and
/// the hang-up comes 0.5 s after the agent's last line was heard (D-10),
/// never before it finished.
#[tokio::test(start_paused = true)]
async fn incident_hang_up_right_after_the_goodbye() {
    let h = Harness::start(HarnessConfig::default()).await;
    h.wait_for_response().await;
    h.say("my heater is broken").await;
    h.wait_for_response().await;
    h.say("yes I smell gas in the kitchen").await;
    let exit = h.wait_for_response().await;
    assert!(exit.text.contains("911"), "{exit:?}");
    h.say("okay we are leaving now, should we open the windows?")
        .await;
    let r = h.wait_for_agent_hangup(Duration::from_secs(30)).await;
    show(&r);
    r.assert_invariants();
    assert_eq!(r.outcome().session().state.to_string(), "safety_exit");
    let last_audio = r.ear.frames.last().unwrap();
    let end = last_audio.at + last_audio.duration;
    let hung = r.agent_hung_up_at.unwrap();
    assert!(hung >= end, "hung up before the script finished");
    assert!(
        hung - end <= ms(600),
        "hung up {:?} after the last word",
        hung - end
    );
}

/// The idle controller: "are you still there?" after silence, never while
/// the agent speaks; goodbye and hang-up after the second unanswered one.
#[tokio::test(start_paused = true)]
async fn idle_caller_is_prompted_then_the_call_ends() {
    let h = Harness::start(HarnessConfig::default()).await;
    let greeting = h.wait_for_response().await;
    let p1 = h.wait_for_response_within(Duration::from_secs(12)).await;
    assert!(p1.at - greeting.at > 10.0, "prompted too early: {p1:?}");
    let p2 = h.wait_for_response_within(Duration::from_secs(25)).await;
    assert!(p2.at > p1.at + 10.0);
    let r = h.wait_for_agent_hangup(Duration::from_secs(30)).await;
    show(&r);
    r.assert_invariants();
    assert_eq!(r.heard().len(), 4, "greeting, two prompts, goodbye");
}

/// Mute policy: the caller cannot barge into the first greeting, but their
/// words are kept and answered.
#[tokio::test(start_paused = true)]
async fn the_greeting_cannot_be_interrupted_but_the_caller_is_heard() {
    let h = Harness::start(HarnessConfig::default()).await;
    tokio::time::sleep(ms(600)).await; // the greeting is playing
    h.say("hello my AC is broken").await;
    h.wait_for_response().await;
    let r = h.hang_up().await;
    show(&r);
    r.assert_invariants();
    assert!(r.ear.clears.is_empty(), "no barge-in during the greeting");
    assert!(r.heard()[0].1.ends_with("today?"), "greeting heard whole");
    assert_eq!(
        tool_calls(&r, "lookup_caller"),
        1,
        "the words reached the engine"
    );
}

/// Barge-in rules: with `min_words = 3`, a two-word acknowledgement does
/// not cut the agent off; a longer interruption does.
#[tokio::test(start_paused = true)]
async fn barge_in_needs_the_minimum_words() {
    let long = "Okay, I can help with that. Before we go any further I need to ask you a quick safety question about your home, so please listen carefully to the next part.";
    let cfg = HarnessConfig {
        barge_in: BargeInRules {
            min_words: 3,
            ..BargeInRules::default()
        },
        replies: Some(Arc::new(move |_req, i| {
            (i == 0).then(|| MockReply::text(long, ms(300), ms(40)))
        })),
        ..HarnessConfig::default()
    };
    let h = Harness::start(cfg).await;
    h.wait_for_response().await;
    h.say("my AC is broken").await;
    h.interrupt_after("I can help", "uh huh").await;
    tokio::time::sleep(ms(800)).await;
    assert!(
        h.ear.snapshot().clears.is_empty(),
        "two words do not interrupt"
    );
    h.interrupt_after("safety question", "wait I have a question")
        .await;
    h.wait_for_response().await;
    let r = h.hang_up().await;
    show(&r);
    r.assert_invariants();
    assert_eq!(r.ear.clears.len(), 1);
}

/// Issue 23: after the safety script a household that says it is leaving
/// hears nothing more — no "are you still there?", no second script — and
/// the call ends.
#[tokio::test(start_paused = true)]
async fn after_the_safety_script_a_goodbye_ends_the_call_without_more_words() {
    let h = Harness::start(HarnessConfig::default()).await;
    h.wait_for_response().await;
    h.say("my furnace stopped working").await;
    h.wait_for_response().await;
    h.say("actually yes, there's a gas smell by the water heater")
        .await;
    let exit = h.wait_for_response().await;
    assert!(exit.text.contains("911"), "{exit:?}");
    h.say("okay, we're going outside now, bye").await;
    let r = h.wait_for_agent_hangup(Duration::from_secs(30)).await;
    show(&r);
    r.assert_invariants();
    assert_eq!(r.outcome().session().state.to_string(), "safety_exit");
    let heard = r.heard();
    let script_at = heard
        .iter()
        .position(|(_, l)| l.contains("911"))
        .expect("the script was heard");
    assert_eq!(
        heard.len(),
        script_at + 1,
        "lines after the safety script: {:?}",
        &heard[script_at + 1..]
    );
}
