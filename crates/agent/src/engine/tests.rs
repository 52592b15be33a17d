use super::*;

fn engine_in(state: State) -> Engine {
    let session = Session {
        state,
        ..Session::new("+15125551234")
    };
    Engine::new(session, BusinessProfile::default(), EngineConfig::default())
}

fn idle_timer(effects: &[Effect]) -> Option<f64> {
    effects.iter().find_map(|e| match e {
        Effect::StartTimer {
            timer: Timer::Idle,
            at,
        } => Some(*at),
        _ => None,
    })
}

fn spoke(effects: &[Effect], canned: Canned) -> bool {
    effects
        .iter()
        .any(|e| matches!(e, Effect::Speak { canned: c, .. } if *c == canned))
}

#[test]
fn not_heard_asks_again_unless_a_reply_is_on_its_way() {
    let mut e = engine_in(State::Discovery);
    let fx = e.handle(Input::NotHeard, 1.0);
    assert!(spoke(&fx, Canned::NotHeard), "{fx:?}");
    let last = e.transcript().last().unwrap().clone();
    assert_eq!(
        last.content.as_deref(),
        Some("Sorry, I didn't catch that. Could you say that again?")
    );
    // A tool call is running for what the caller said: no re-ask.
    let mut e = engine_in(State::Welcome);
    let fx = e.handle(
        Input::Transcript {
            text: "my AC is broken".into(),
            is_final: true,
        },
        2.0,
    );
    assert!(
        fx.iter().any(|f| matches!(f, Effect::CallTool { .. })),
        "{fx:?}"
    );
    assert!(!spoke(&e.handle(Input::NotHeard, 2.1), Canned::NotHeard));
    assert_eq!(
        Canned::from_id(&Canned::NotHeard.id()),
        Some(Canned::NotHeard)
    );
}

/// Any role enters the LLM context; only assistant messages become
/// agent lines at the capture.
#[test]
fn context_messages_of_any_role_enter_the_context() {
    let mut e = engine_in(State::Discovery);
    let before = e.llm_messages().len();
    for m in [
        ChatMessage::user("my AC is out"),
        ChatMessage::system("note from the operator"),
        ChatMessage {
            role: ChatRole::Tool,
            content: "{\"found\": false}".into(),
        },
        ChatMessage::assistant("Thanks, what's your name?"),
    ] {
        e.handle(Input::ContextMessage(m.clone()), 1.0);
        assert_eq!(e.llm_messages().last(), Some(&m));
    }
    assert_eq!(e.llm_messages().len(), before + 4);
    e.handle(Input::CaptureAgentResponses, 2.0);
    let agent: Vec<_> = e
        .transcript()
        .iter()
        .filter_map(|t| t.content.clone())
        .collect();
    assert_eq!(agent, vec!["Thanks, what's your name?".to_string()]);
}

#[test]
fn silence_gets_prompts_then_a_goodbye_and_hang_up() {
    let mut e = engine_in(State::Confirm);
    let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.0)).unwrap();
    assert_eq!(at, 10.0);
    // An early (stale) expiry does nothing.
    assert!(e.handle(Input::TimerFired(Timer::Idle), 5.0).is_empty());
    let fx = e.handle(Input::TimerFired(Timer::Idle), 10.0);
    assert!(spoke(&fx, Canned::IdlePrompt));
    // The second prompt is worded differently: never the same line
    // twice in a row.
    let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 11.0)).unwrap();
    assert!(spoke(
        &e.handle(Input::TimerFired(Timer::Idle), at),
        Canned::IdlePromptAgain
    ));
    let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 22.0)).unwrap();
    assert!(!e.session().caller_silent, "two prompts: still waiting");
    let fx = e.handle(Input::TimerFired(Timer::Idle), at);
    assert!(spoke(&fx, Canned::IdleGoodbye));
    assert!(e.end_call_pending());
    // The record will say the caller stopped answering (issue 15).
    assert!(e.session().caller_silent);
    // The goodbye is heard in full, then the call ends (D-10).
    let fx = e.handle(Input::BotStoppedSpeaking, at + 3.0);
    assert!(idle_timer(&fx).is_none());
    let fx = e.handle(Input::TimerFired(Timer::HangupGrace), at + 3.5);
    assert_eq!(fx, vec![Effect::EndCall]);
    // Canned idle lines are not agent replies for turn counting.
    assert!(!e.session().agent_has_responded);
}

#[test]
fn the_caller_speaking_resets_the_idle_count() {
    let mut e = engine_in(State::Confirm);
    e.handle(Input::BotStoppedSpeaking, 0.0);
    assert!(spoke(
        &e.handle(Input::TimerFired(Timer::Idle), 10.0),
        Canned::IdlePrompt
    ));
    e.handle(
        Input::Transcript {
            text: "sorry, yes, I'm here".into(),
            is_final: true,
        },
        11.0,
    );
    // The pending idle expiry from before the utterance is stale.
    assert!(e.handle(Input::TimerFired(Timer::Idle), 20.0).is_empty());
    // Counting starts again: a first prompt, a second, no goodbye.
    for (t, line) in [(30.0, Canned::IdlePrompt), (50.0, Canned::IdlePromptAgain)] {
        let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, t)).unwrap();
        assert!(spoke(&e.handle(Input::TimerFired(Timer::Idle), at), line));
    }
    assert!(!e.end_call_pending());
}

#[test]
fn never_idle_during_a_tool_call_or_buffering() {
    let mut e = engine_in(State::Welcome);
    let fx = e.handle(
        Input::Transcript {
            text: "my AC is broken".into(),
            is_final: true,
        },
        0.0,
    );
    assert!(matches!(fx.last(), Some(Effect::CallTool(_))));
    assert!(idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.1)).is_none());
    e.handle(
        Input::ToolResult {
            result: serde_json::json!({"found": false}),
        },
        0.5,
    );
    assert!(e.buffer_mode());
    assert!(idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.6)).is_none());
}

/// Issue 24 row 7: a caller who spoke while the agent's line was still
/// playing, and whose words the recogniser is slow to deliver, is never
/// asked whether they are there.
#[test]
fn never_are_you_still_there_while_words_are_being_recognised() {
    let mut e = engine_in(State::Discovery);
    e.handle(Input::CallerSpeaking, 0.0);
    // The agent's line ends after the caller started: the idle wait is
    // armed, but the caller's words are still coming.
    e.handle(Input::BotStoppedSpeaking, 0.5);
    let at = idle_timer(&e.handle(Input::CallerStopped, 2.0)).unwrap();
    assert_eq!(at, 12.0, "the wait counts from the end of the speech");
    // The earlier arming is stale now.
    assert!(e.handle(Input::TimerFired(Timer::Idle), 10.5).is_empty());
    // The words are in before the wait ends: an ordinary turn.
    let fx = e.handle(
        Input::Transcript {
            text: "my name is Dana Fields".into(),
            is_final: true,
        },
        9.0,
    );
    assert!(
        fx.iter().any(|f| matches!(f, Effect::ToLlm { .. })),
        "{fx:?}"
    );
    assert!(e.handle(Input::TimerFired(Timer::Idle), 12.0).is_empty());

    // The recogniser falls behind a whole wait: "didn't catch that",
    // once; then the ordinary idle prompts.
    let mut e = engine_in(State::Discovery);
    e.handle(Input::BotStoppedSpeaking, 0.0);
    e.handle(Input::CallerSpeaking, 1.0);
    let at = idle_timer(&e.handle(Input::CallerStopped, 3.0)).unwrap();
    let fx = e.handle(Input::TimerFired(Timer::Idle), at);
    assert!(spoke(&fx, Canned::NotHeard), "{fx:?}");
    assert!(!spoke(&fx, Canned::IdlePrompt));
    let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, at + 3.0)).unwrap();
    let fx = e.handle(Input::TimerFired(Timer::Idle), at);
    assert!(spoke(&fx, Canned::IdlePrompt), "{fx:?}");
    // The late words still count when they come.
    let fx = e.handle(
        Input::Transcript {
            text: "it's blowing warm air".into(),
            is_final: true,
        },
        at + 1.0,
    );
    assert!(
        fx.iter().any(|f| matches!(f, Effect::ToLlm { .. })),
        "{fx:?}"
    );
}

/// A sound with no words (the recogniser says so with an empty final
/// result) restarts the idle wait; silence between results does not.
#[test]
fn a_cough_restarts_the_idle_wait_and_empty_results_alone_do_not() {
    let mut e = engine_in(State::Discovery);
    assert_eq!(
        idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.0)),
        Some(10.0)
    );
    let empty = || Input::Transcript {
        text: String::new(),
        is_final: true,
    };
    // A vendor's empty result in silence: the wait goes on.
    assert!(idle_timer(&e.handle(empty(), 4.0)).is_none());
    assert!(spoke(
        &e.handle(Input::TimerFired(Timer::Idle), 10.0),
        Canned::IdlePrompt
    ));
    e.handle(Input::BotStoppedSpeaking, 12.0);
    e.handle(Input::CallerSpeaking, 13.0);
    e.handle(Input::CallerStopped, 13.5);
    assert_eq!(idle_timer(&e.handle(empty(), 14.0)), Some(24.0));
    assert!(spoke(
        &e.handle(Input::TimerFired(Timer::Idle), 24.0),
        Canned::IdlePromptAgain
    ));
}

/// A recogniser several utterances behind (Whisper under load): the
/// first stretch's words come and are answered while the second's are
/// still owed — the wait after the answer ends in "didn't catch that",
/// not "are you still there?". An interim result of speech that already
/// stopped does not make the caller "speaking" again.
#[test]
fn words_still_owed_after_an_answer_are_never_taken_for_silence() {
    let mut e = engine_in(State::Discovery);
    e.handle(Input::CallerSpeaking, 0.0);
    e.handle(Input::CallerStopped, 1.0);
    e.handle(Input::CallerSpeaking, 1.5);
    e.handle(Input::CallerStopped, 2.5);
    let final_ = |text: &str| Input::Transcript {
        text: text.into(),
        is_final: true,
    };
    let fx = e.handle(final_("my name is"), 4.0);
    assert!(fx.iter().any(|f| matches!(f, Effect::ToLlm { .. })));
    e.handle(Input::ContextMessage(ChatMessage::assistant("Okay.")), 4.5);
    e.handle(Input::CaptureAgentResponses, 4.5);
    let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 6.0)).unwrap();
    let fx = e.handle(Input::TimerFired(Timer::Idle), at);
    assert!(spoke(&fx, Canned::NotHeard), "{fx:?}");
    assert!(!spoke(&fx, Canned::IdlePrompt));

    // The second stretch's words came: nothing is owed; a late interim
    // result of that speech changes nothing; silence is silence.
    let mut e = engine_in(State::Discovery);
    e.handle(Input::CallerSpeaking, 0.0);
    e.handle(Input::CallerStopped, 1.0);
    e.handle(Input::CallerSpeaking, 1.5);
    e.handle(Input::CallerStopped, 2.5);
    e.handle(final_(""), 3.0);
    e.handle(Input::CallerWords, 3.1);
    e.handle(final_("it's blowing warm air"), 3.5);
    e.handle(Input::ContextMessage(ChatMessage::assistant("Okay.")), 4.0);
    e.handle(Input::CaptureAgentResponses, 4.0);
    let at = idle_timer(&e.handle(Input::BotStoppedSpeaking, 6.0)).unwrap();
    let fx = e.handle(Input::TimerFired(Timer::Idle), at);
    assert!(spoke(&fx, Canned::IdlePrompt), "{fx:?}");
}

fn filler_timer(effects: &[Effect]) -> Option<f64> {
    effects.iter().find_map(|e| match e {
        Effect::StartTimer {
            timer: Timer::Filler,
            at,
        } => Some(*at),
        _ => None,
    })
}

/// An engine at the problem question with this configuration.
fn discovery_with_filler(config: EngineConfig) -> Engine<StateMachine> {
    let session = Session {
        state: State::Discovery,
        ..Session::new("+15125551234")
    };
    Engine::new(session, BusinessProfile::default(), config)
}

/// The recogniser's final words.
fn final_words(text: &str) -> Input {
    Input::Transcript {
        text: text.into(),
        is_final: true,
    }
}

/// Issue 24: a late reply is preceded by a filler, never the same one
/// twice in a row; a reply that has begun gets none.
#[test]
fn a_late_reply_gets_a_filler_and_a_prompt_one_does_not() {
    let config = EngineConfig {
        filler_after_s: 1.0,
        ..EngineConfig::default()
    };
    let mut e = discovery_with_filler(config);
    let said = final_words;
    let mut fillers = Vec::new();
    for (i, line) in ["my name is Dana Fields", "it's blowing warm air", "yes"]
        .iter()
        .enumerate()
    {
        let t = 10.0 * i as f64;
        let fx = e.handle(said(line), t);
        let at = filler_timer(&fx).unwrap_or_else(|| panic!("{fx:?}"));
        assert_eq!(at, t + 1.0);
        if i == 1 {
            // The LLM's first words came in time: no filler.
            e.handle(Input::ReplyStarted, t + 0.6);
            assert!(e.handle(Input::TimerFired(Timer::Filler), at).is_empty());
        } else {
            let fx = e.handle(Input::TimerFired(Timer::Filler), at);
            let Some(Effect::Speak { canned, text, .. }) = fx.first() else {
                panic!("{fx:?}");
            };
            assert!(matches!(canned, Canned::Filler(_)));
            fillers.push(text.clone());
        }
        e.handle(
            Input::ContextMessage(ChatMessage::assistant("Okay.")),
            t + 2.0,
        );
        e.handle(Input::CaptureAgentResponses, t + 2.0);
    }
    assert_eq!(fillers.len(), 2);
    assert_ne!(
        fillers[0], fillers[1],
        "never the same filler twice in a row"
    );
    // Post-tool buffering is silence too: the filler comes during it,
    // and the wait for the reply counts again from the flush.
    let session = Session::new("+15125551234");
    let mut e = Engine::new(session, BusinessProfile::default(), config);
    let fx = e.handle(said("my AC is broken"), 0.0);
    assert!(
        fx.iter().any(|f| matches!(f, Effect::CallTool(_))),
        "{fx:?}"
    );
    e.handle(
        Input::ToolResult {
            result: serde_json::json!({"found": false}),
        },
        0.2,
    );
    assert!(e.buffer_mode());
    let fx = e.handle(Input::TimerFired(Timer::Filler), 1.0);
    assert!(
        fx.iter().any(|f| matches!(
            f,
            Effect::Speak {
                canned: Canned::Filler(_),
                ..
            }
        )),
        "{fx:?}"
    );
    let fx = e.handle(Input::TimerFired(Timer::Debounce), 1.7);
    assert!(
        fx.iter().any(|f| matches!(f, Effect::ToLlm { .. })),
        "{fx:?}"
    );
    assert_eq!(filler_timer(&fx), Some(2.7), "{fx:?}");
    // Off by default (text chats and simulations).
    let mut e = engine_in(State::Discovery);
    assert!(filler_timer(&e.handle(said("my name is Dana Fields"), 0.0)).is_none());
}

/// Issue 24: the filler's wait counts from when the caller stopped
/// speaking, not from when the recogniser gave their words; words that
/// came back later than the wait get the filler at once.
/// The LLM's reply ("Okay.") is in: the turn has its answer.
fn agent_answered(e: &mut Engine, at: f64) {
    e.handle(Input::ContextMessage(ChatMessage::assistant("Okay.")), at);
    e.handle(Input::CaptureAgentResponses, at);
}

#[test]
fn the_filler_counts_from_the_end_of_the_callers_speech() {
    let mut e = discovery_with_filler(EngineConfig {
        filler_after_s: 0.7,
        ..EngineConfig::default()
    });
    let said = final_words;
    e.handle(Input::CallerSpeaking, 0.0);
    e.handle(Input::CallerStopped, 2.0);
    let fx = e.handle(said("my name is Dana Fields"), 2.3);
    assert_eq!(filler_timer(&fx), Some(2.7), "{fx:?}");
    agent_answered(&mut e, 3.0);
    e.handle(Input::BotStoppedSpeaking, 4.0);
    // A slow recogniser: the words come 1.5 s after the speech ended.
    e.handle(Input::CallerSpeaking, 5.0);
    e.handle(Input::CallerStopped, 6.0);
    let fx = e.handle(said("it's blowing warm air"), 7.5);
    let at = 7.5 + FILLER_AT_THE_SOONEST_S;
    assert_eq!(filler_timer(&fx), Some(at), "{fx:?}");
    let fx = e.handle(Input::TimerFired(Timer::Filler), at);
    assert!(
        matches!(
            fx.first(),
            Some(Effect::Speak {
                canned: Canned::Filler(_),
                ..
            })
        ),
        "{fx:?}"
    );
    agent_answered(&mut e, 8.0);
    // The agent is still heard after the caller stopped (an earlier
    // line playing out): the wait counts from its last audio.
    e.handle(Input::CallerSpeaking, 10.0);
    e.handle(Input::CallerStopped, 11.0);
    e.handle(Input::BotSpeaking, 11.5);
    let fx = e.handle(said("yes"), 11.6);
    assert_eq!(filler_timer(&fx), Some(11.5 + 0.7), "{fx:?}");
}

#[test]
fn idle_can_be_switched_off() {
    let config = EngineConfig {
        idle_prompt_s: 0.0,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(Session::new("+1512"), BusinessProfile::default(), config);
    assert!(idle_timer(&e.handle(Input::BotStoppedSpeaking, 0.0)).is_none());
}

#[test]
fn the_server_ending_a_call_promises_a_callback_unless_one_is_settled() {
    let mut e = engine_in(State::Discovery);
    let fx = e.handle(
        Input::ServerEnding(ServerEnd::ShuttingDown { politely: true }),
        5.0,
    );
    assert!(
        fx.contains(&Effect::StateChanged {
            from: State::Discovery,
            to: State::Callback
        }),
        "{fx:?}"
    );
    assert!(
        spoke(&fx, Canned::ShuttingDown { settled: false }),
        "{fx:?}"
    );
    assert_eq!(fx.last(), Some(&Effect::EndCall));
    assert_eq!(e.session().state, State::Callback);
    assert_eq!(e.session().callback_type, "service");
    assert!(e.is_ended());
    let said = e.transcript().last().unwrap().clone();
    assert!(
        said.content
            .as_deref()
            .unwrap()
            .contains("will call you back"),
        "{said:?}"
    );
    // Nothing of it was heard: no line in the transcript.
    let text = said.content.clone().unwrap();
    let msg_id = fx
        .iter()
        .find_map(|f| match f {
            Effect::Speak { msg_id, .. } => Some(*msg_id),
            _ => None,
        })
        .unwrap();
    e.handle(
        Input::AgentInterrupted {
            msg_id,
            heard: String::new(),
        },
        6.0,
    );
    assert!(e
        .transcript()
        .iter()
        .all(|l| l.content.as_deref() != Some(text.as_str())));

    // A booked call keeps its state and promises nothing new.
    let mut e = engine_in(State::Confirm);
    e.session_mut().booking_confirmed = true;
    let fx = e.handle(Input::ServerEnding(ServerEnd::SpeechLost), 5.0);
    assert!(!fx.iter().any(|f| matches!(f, Effect::StateChanged { .. })));
    assert!(spoke(&fx, Canned::SpeechLost { settled: true }), "{fx:?}");
    assert_eq!(e.session().state, State::Confirm);

    // Cut at once: the callback, no line.
    let mut e = engine_in(State::Discovery);
    let fx = e.handle(
        Input::ServerEnding(ServerEnd::ShuttingDown { politely: false }),
        5.0,
    );
    assert!(
        !fx.iter().any(|f| matches!(f, Effect::Speak { .. })),
        "{fx:?}"
    );
    assert_eq!(e.session().state, State::Callback);

    // Cut off by a server that died: decided after the fact, same rule.
    let mut s = Session::new("+15125551234");
    s.state = State::Discovery;
    assert_eq!(cut_off_by_the_server(&mut s), Some(State::Discovery));
    assert_eq!(
        (s.state, s.callback_type.as_str()),
        (State::Callback, "service")
    );
    assert_eq!(cut_off_by_the_server(&mut s), None, "owed once");
    let mut booked = Session::new("+15125551234");
    booked.state = State::Confirm;
    booked.booking_confirmed = true;
    assert_eq!(cut_off_by_the_server(&mut booked), None);
    assert_eq!(booked.state, State::Confirm);
    let away = turned_away(
        &BusinessProfile::default(),
        "+15125551234".into(),
        "CA1-busy".into(),
        1.0,
    );
    assert_eq!(away.state, State::Callback);
    assert_eq!(away.callback_type, "service");
    assert!(away.transcript_log[0]
        .content
        .as_deref()
        .unwrap()
        .contains("lines are busy"));
    for c in [
        Canned::LinesBusy,
        Canned::ShuttingDown { settled: false },
        Canned::ShuttingDown { settled: true },
        Canned::SpeechLost { settled: false },
        Canned::SpeechLost { settled: true },
    ] {
        assert_eq!(Canned::from_id(&c.id()), Some(c));
    }
}

/// A caller who goes on after the goodbye ("thanks" — then "yeah,
/// schedule it") is not cut off by the hang-up the goodbye asked for: the
/// call goes on, and the old hang-up's timers are stale. (Found by the
/// guided-calls property test: the call ended in the middle of the gas
/// question.)
#[test]
fn a_caller_who_goes_on_after_the_goodbye_is_not_cut_off() {
    let mut e = engine_in(State::FollowUp);
    let said = |e: &mut Engine, text: &str, at: f64| {
        e.handle(
            Input::Transcript {
                text: text.into(),
                is_final: true,
            },
            at,
        )
    };
    let fx = said(&mut e, "thanks", 1.0);
    // The callback the follow-up caller is owed, then the goodbye.
    assert!(
        fx.iter().any(|f| matches!(f, Effect::CallTool(_))),
        "{fx:?}"
    );
    e.handle(
        Input::ToolResult {
            result: serde_json::json!({"success": true, "callback_id": "cb_1"}),
        },
        1.2,
    );
    assert!(e.end_call_pending(), "the goodbye asks for the hang-up");
    said(&mut e, "yeah schedule it", 2.0);
    assert!(!e.end_call_pending(), "the call is the caller's again");
    assert_ne!(e.state(), State::FollowUp, "the call moved on");
    for timer in [Timer::HangupCeiling, Timer::HangupGrace] {
        let fx = e.handle(Input::TimerFired(timer), 30.0);
        assert!(!fx.contains(&Effect::EndCall), "{timer:?}: {fx:?}");
    }
    assert!(!e.is_ended());
}

#[test]
fn the_sessions_transcript_is_written_when_the_call_finishes() {
    let heard = || {
        let mut e = engine_in(State::Discovery);
        e.handle(
            Input::Transcript {
                text: "my furnace is making a banging noise".into(),
                is_final: true,
            },
            1.0,
        );
        e.handle(Input::NotHeard, 2.0);
        e
    };
    let mut e = heard();
    // While the call runs, the log is the one record of what was said.
    assert!(e.session().transcript_log.is_empty());
    let so_far = e.transcript();
    assert_eq!(
        so_far[0].content.as_deref(),
        Some("my furnace is making a banging noise")
    );
    assert!(so_far.len() >= 2, "{so_far:?}");
    // A session handed over has it written.
    assert_eq!(heard().into_session().transcript_log, so_far);

    e.handle(Input::CallFinished, 3.0);
    assert_eq!(e.session().transcript_log, e.transcript());
    // What is recorded after the end changes it too.
    e.handle(
        Input::Transcript {
            text: "hello?".into(),
            is_final: true,
        },
        4.0,
    );
    let written = &e.session().transcript_log;
    assert_eq!(written, &e.transcript());
    assert_eq!(written.last().unwrap().content.as_deref(), Some("hello?"));
}

#[test]
fn a_line_cut_off_before_its_first_word_is_no_reply_but_the_one_before_still_is() {
    let speak_id = |fx: &[Effect]| {
        fx.iter()
            .find_map(|f| match f {
                Effect::Speak { msg_id, .. } => Some(*msg_id),
                _ => None,
            })
            .expect("a line spoken")
    };
    let mut e = engine_in(State::Discovery);
    let first = speak_id(&e.handle(Input::NotHeard, 1.0));
    let second = speak_id(&e.handle(Input::NotHeard, 2.0));
    e.session_mut().agent_has_responded = true;
    // The second line was cut before a word: the first still answered.
    e.handle(
        Input::AgentInterrupted {
            msg_id: second,
            heard: String::new(),
        },
        2.5,
    );
    assert!(e.session().agent_has_responded);
    // The first too: no agent line since the caller last spoke.
    e.handle(
        Input::AgentInterrupted {
            msg_id: first,
            heard: String::new(),
        },
        3.0,
    );
    assert!(!e.session().agent_has_responded);
}

/// After the terminal script, each thing the caller says gets a short
/// follow-up; when that would be the line the agent just said, the
/// caller hears a goodbye instead — never the same line twice in a row.
#[test]
fn a_terminal_follow_up_is_never_the_same_line_twice_in_a_row() {
    let mut e = engine_in(State::Callback);
    e.session_mut().callback_phone = "+15125550199".into();
    // One caller turn, the LLM's reply when asked for one: what was said.
    let turn = |e: &mut Engine, text: &str, at: f64| -> Vec<Effect> {
        let mut fx = e.handle(
            Input::Transcript {
                text: text.into(),
                is_final: true,
            },
            at,
        );
        let mut i = 0;
        while i < fx.len() {
            let answer = match &fx[i] {
                Effect::ToLlm { reply, .. } => Some(Input::LlmReplied {
                    msg_id: *reply,
                    text: "Sure.".into(),
                }),
                Effect::CallTool(_) => Some(Input::ToolResult {
                    result: serde_json::json!({"success": true, "callback_id": "cb_1"}),
                }),
                // The responder's one scoped reply: none (it timed out).
                Effect::AskScopedReply { .. } => Some(Input::ScopedReply { text: None }),
                _ => None,
            };
            if let Some(answer) = answer {
                let more = e.handle(answer, at + 0.1);
                fx.extend(more);
            }
            i += 1;
        }
        fx
    };
    let lines: Vec<String> = ["okay", "okay thanks", "alright", "sure"]
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let fx = turn(&mut e, text, 1.0 + i as f64);
            let said: Vec<&String> = fx
                .iter()
                .filter_map(|f| match f {
                    Effect::Speak {
                        canned: Canned::Terminal(State::Callback),
                        text,
                        ..
                    } => Some(text),
                    _ => None,
                })
                .collect();
            assert_eq!(said.len(), 1, "{text:?}: {fx:?}");
            said[0].clone()
        })
        .collect();
    let company = &BusinessProfile::default().company_name;
    // The script once, then the follow-up with the number given.
    assert!(lines[0].contains("call you back"), "{lines:#?}");
    assert!(lines[1].contains("512-555-0199"), "{lines:#?}");
    // The same follow-up again would repeat the last line: a goodbye.
    assert_eq!(lines[2], format!("Thanks for calling {company} — goodbye."));
    // After the goodbye the follow-up is new again.
    assert_eq!(lines[3], lines[1]);
    for pair in lines.windows(2) {
        assert_ne!(pair[0], pair[1], "{lines:#?}");
    }
}
