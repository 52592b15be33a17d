use super::*;
use serde_json::json;

fn sm() -> StateMachine {
    StateMachine::default()
}

fn at(state: State) -> Session {
    Session {
        state,
        ..Session::new("+15125551234")
    }
}

#[test]
fn happy_path_reaches_booking() {
    let m = sm();
    let mut s = at(State::Welcome);
    let a = m.process(&mut s, "my AC is broken");
    assert_eq!(a.call_tool, Some(Tool::LookupCaller));
    m.apply_tool_result(&mut s, Tool::LookupCaller, &json!({"found": false}));
    assert_eq!(s.state, State::Safety);
    m.process(&mut s, "no nothing like that");
    assert_eq!(s.state, State::ServiceArea);
    m.process(&mut s, "78701");
    assert_eq!(s.state, State::Discovery);
    s.customer_name = "Jonas".into();
    s.problem_description = "AC not cooling".into();
    s.service_address = "4329 Franklin Street".into();
    m.process(&mut s, "that's it");
    assert_eq!(s.state, State::Urgency);
    m.process(&mut s, "today please");
    assert_eq!(s.state, State::PreConfirm);
    let a = m.process(&mut s, "yes");
    assert_eq!(s.state, State::Booking);
    assert_eq!(a.call_tool, Some(Tool::BookService));
    assert_eq!(a.speak, Some(Speak::FillerBookingCheck));
    m.apply_tool_result(&mut s, Tool::BookService, &json!({"booked": true}));
    assert_eq!(s.state, State::Confirm);
    assert!(m.process(&mut s, "thanks, bye").end_call);
}

#[test]
fn turn_limit_escalates_from_terminal_states() {
    let m = sm();
    let mut s = at(State::Confirm);
    s.state_turn_count = 5;
    s.agent_has_responded = true;
    let a = m.process(&mut s, "what?");
    assert_eq!(s.state, State::Callback);
    assert_eq!(a.speak, Some(Speak::TurnLimitPerState));
    assert_eq!(s.state_turn_count, 0);
}

#[test]
#[should_panic(expected = "illegal state transition")]
fn illegal_transition_is_caught() {
    let mut s = at(State::Confirm);
    transition(&mut s, State::Welcome, Why::Rule);
}

#[test]
fn the_zip_said_in_service_area_wins_over_the_one_on_file() {
    let m = sm();
    let mut s = at(State::ServiceArea);
    s.zip_code = "90210".into(); // from lookup
    m.process(&mut s, "we're at our other house, zip 78745");
    assert_eq!(s.zip_code, "78745");
    assert_eq!(s.state, State::Discovery);
}

#[test]
fn a_later_zip_correction_replaces_the_zip() {
    let m = sm();
    let mut s = at(State::ServiceArea);
    m.process(&mut s, "78701");
    assert_eq!(s.state, State::Discovery);
    m.process(&mut s, "oh sorry, my zip is actually 78745");
    assert_eq!(s.zip_code, "78745");
    // A house number in discovery is no correction.
    m.process(&mut s, "it's 12345 Oak Hollow Drive");
    assert_eq!(s.zip_code, "78745");
}

#[test]
fn a_correction_to_a_zip_outside_the_area_ends_in_a_callback() {
    let m = sm();
    let mut s = at(State::Urgency);
    s.zip_code = "78701".into();
    m.process(&mut s, "wait, I gave you the wrong zip, it's 90210");
    assert_eq!(s.zip_code, "90210");
    assert_eq!(s.state, State::Callback);
}

/// Issue 15, item 1: a hazard in the first sentence (or before the
/// safety question) is a safety exit at once.
#[test]
fn danger_before_the_safety_question_exits_at_once() {
    let m = sm();
    for (state, said) in [
        (State::Welcome, "I smell gas in my kitchen"),
        (State::Welcome, "hi, there's smoke coming out of my furnace"),
        (State::Lookup, "the carbon monoxide alarm is going off"),
        (State::NonService, "also I smell gas right now"),
        (State::FollowUp, "it's sparking again"),
        (State::ManageBooking, "and now there's a burning smell"),
    ] {
        let mut s = at(state);
        let a = m.process(&mut s, said);
        assert_eq!(s.state, State::SafetyExit, "{state:?}: {said:?}");
        assert_eq!(a.call_tool, None, "no lookup in an emergency");
    }
    // Equipment talk and denials take the usual way.
    for said in [
        "my gas furnace stopped working",
        "my AC is broken, no gas smell or anything",
    ] {
        let mut s = at(State::Welcome);
        let a = m.process(&mut s, said);
        assert_eq!(s.state, State::Lookup, "{said:?}");
        assert_eq!(a.call_tool, Some(Tool::LookupCaller));
    }
}

/// Issue 15, item 2: timing words the urgency question missed move the
/// call on (no loop), keeping what the caller said for the booking.
#[test]
fn urgency_understands_how_people_say_when() {
    let m = sm();
    for (said, tier, kept) in [
        ("next week", "routine", true),
        ("in a couple of days", "routine", true),
        ("it can wait a few days", "routine", true),
        ("this weekend", "routine", true),
        ("tomorrow at 2", "routine", true),
        ("Friday at 3pm", "routine", true),
        ("today at 3 if you can", "routine", true),
        ("it's urgent", "urgent", false),
        // D-25: the words are kept, so the resolver never books today.
        ("no hurry, anytime", "routine", true),
    ] {
        let mut s = at(State::Urgency);
        m.process(&mut s, said);
        assert_eq!(s.state, State::PreConfirm, "{said:?}");
        assert_eq!(s.urgency_tier, tier, "{said:?}");
        if kept {
            assert_eq!(s.preferred_time, said, "{said:?}");
        } else {
            assert_eq!(s.preferred_time, SOONEST_AVAILABLE, "{said:?}");
        }
    }
}

#[test]
fn stale_tool_result_does_not_move_state() {
    let m = sm();
    let mut s = at(State::Discovery);
    m.apply_tool_result(&mut s, Tool::BookService, &json!({"booked": true}));
    assert_eq!(s.state, State::Discovery);
    m.apply_tool_result(&mut s, Tool::LookupCaller, &json!({"found": true}));
    assert_eq!(s.state, State::Discovery);
}

#[test]
fn each_callback_promise_is_its_own() {
    // A billing caller got a callback, then turns out to be out of area:
    // the out-of-area promise needs a callback of its own.
    let m = sm();
    let mut s = at(State::ServiceArea);
    s.callback_created = true;
    s.callback_attempts = 1;
    m.process(&mut s, "my zip is 90210");
    assert_eq!(s.state, State::Callback);
    assert!(!s.callback_created);
    assert_eq!(s.callback_attempts, 0);
    // Escalation inside callback is not a new promise.
    s.callback_created = true;
    s.state_turn_count = 5;
    s.agent_has_responded = true;
    m.process(&mut s, "what?");
    assert!(s.callback_created);
}

#[test]
fn manage_reschedule_waits_for_a_time() {
    let m = sm();
    let mut s = at(State::ManageBooking);
    s.has_appointment = true;
    let a = m.process(&mut s, "I need to reschedule");
    assert_eq!(a.call_tool, None);
    let a = m.process(&mut s, "Friday afternoon works");
    assert_eq!(a.call_tool, Some(Tool::ManageAppointment));
    assert_eq!(s.manage_action, "reschedule");
    assert_eq!(s.manage_time_hint, "Friday afternoon works");
}

#[test]
fn a_read_back_neither_confirmed_nor_corrected_is_not_put_a_fourth_time() {
    let m = sm();
    let mut s = at(State::PreConfirm);
    s.customer_name = "Dev Raman".into();
    s.problem_description = "AC is broken".into();
    s.service_address = "2201 Barton Hills Drive".into();
    s.asked = Asked::ReadBack;
    s.asked_times = 1; // the read-back was said once
                       // Each answer follows the agent's line (the engine marks it).
    let answer = |s: &mut Session, text: &str| {
        s.agent_has_responded = true;
        m.process(s, text);
    };
    answer(&mut s, "um, what?");
    assert_eq!((s.state, s.asked_times), (State::PreConfirm, 2));
    answer(&mut s, "my AC is broken");
    assert_eq!((s.state, s.asked_times), (State::PreConfirm, 3));
    answer(&mut s, "my AC is broken");
    assert_eq!(s.state, State::Callback, "a fourth read-back would be put");
    assert_eq!(
        s.callback_reason,
        "Could not confirm the booking details by phone"
    );
    assert!(!s.booking_attempted, "nothing is booked unconfirmed");
}
