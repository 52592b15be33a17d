//! Tests of the LLM extraction and the heuristic extractor.

use super::*;

fn user(lines: &[&str]) -> Vec<HistoryMessage> {
    lines
        .iter()
        .map(|l| HistoryMessage {
            role: "user".into(),
            content: (*l).to_string(),
        })
        .collect()
}

fn hist(pairs: &[(&str, &str)]) -> Vec<HistoryMessage> {
    pairs
        .iter()
        .map(|(r, c)| HistoryMessage {
            role: (*r).to_string(),
            content: (*c).to_string(),
        })
        .collect()
}

// --- conformance: extract_fields (harness shape) ---------------------

/// What the `extract_fields` conformance fn computes with a fake LLM.
fn extract_fields(conversation: &[HistoryMessage], llm_result: &str, status: u16) -> String {
    match extraction_messages(conversation) {
        None => "{}".into(),
        Some(_) if status >= 400 => "{}".into(),
        Some(_) => parse_extraction(llm_result).to_json().to_string(),
    }
}

#[test]
fn ext_returns_json() {
    let conv = hist(&[(
        "user",
        "This is Jonas, my AC is blowing warm at 4210 South Lamar 78745",
    )]);
    let llm = r#"{"customer_name":"Jonas","problem_description":"AC blowing warm air","service_address":"4210 South Lamar Blvd","zip_code":"78745","preferred_time":"morning"}"#;
    let v: serde_json::Value = serde_json::from_str(&extract_fields(&conv, llm, 200)).unwrap();
    assert_eq!(v["customer_name"], "Jonas");
    assert_eq!(v["zip_code"], "78745");
    assert_eq!(extract_fields(&conv, llm, 500), "{}");
}

#[test]
fn ext_no_user_turns() {
    let conv = hist(&[("assistant", "hi")]);
    assert!(extraction_messages(&conv).is_none());
    assert_eq!(extract_fields(&conv, r#"{"customer_name":"X"}"#, 200), "{}");
    assert_eq!(ExtractedFields::default().to_json(), serde_json::json!({}));
}

#[test]
fn extraction_messages_last_ten() {
    let mut h = user(&["one"]);
    for i in 0..12 {
        h.push(HistoryMessage {
            role: if i % 2 == 0 { "assistant" } else { "user" }.into(),
            content: format!("line {i}"),
        });
    }
    let m = extraction_messages(&h).unwrap();
    assert_eq!(m.len(), 11);
    assert_eq!(m[0].role, crate::responder::ChatRole::System);
    for k in EXTRACTION_KEYS {
        assert!(m[0].content.contains(k));
    }
    assert_eq!(m[1].content, "line 2");
    // The last ten entries hold only assistant lines → None.
    let mut h = user(&["early"]);
    h.extend(hist(&[("assistant", "x"); 10]));
    assert!(extraction_messages(&h).is_none());
}

#[test]
fn parse_is_lenient() {
    let f = parse_extraction(
        "```json\n{\"customer_name\": \" Jonas \", \"zip_code\": 78745, \"equipment_type\": null}\n```",
    );
    assert_eq!(f.customer_name, "Jonas");
    assert_eq!(f.zip_code, "");
    assert_eq!(f.equipment_type, "");
    assert_eq!(parse_extraction("garbage"), ExtractedFields::default());
    assert_eq!(parse_extraction("[1,2]"), ExtractedFields::default());
    assert_eq!(parse_extraction("}{"), ExtractedFields::default());
    assert_eq!(parse_extraction(""), ExtractedFields::default());
    let f = parse_extraction(r#"{"problem_description":"fan issue","extra":"x"}"#);
    assert_eq!(f.problem_description, "fan issue");
}

// --- conformance: proc.extraction.* (apply step) ---------------------

fn apply(session: serde_json::Value, llm: serde_json::Value) -> Session {
    let mut s: Session = serde_json::from_value(session).unwrap();
    if should_extract(&s) {
        let f = parse_extraction(&llm.to_string());
        apply_extraction(&mut s, &f);
    }
    s
}

#[test]
fn proc_extraction_cases() {
    let two = serde_json::json!([{"role":"user","content":"a"},{"role":"assistant","content":"b"}]);
    // proc.extraction.zip_never_overwritten
    let s = apply(
        serde_json::json!({"zip_code":"78701","conversation_history":two}),
        serde_json::json!({"zip_code":"78001","problem_description":"fan issue"}),
    );
    assert_eq!(s.zip_code, "78701");
    assert_eq!(s.problem_description, "fan issue");
    // proc.extraction.zip_never_set
    let s = apply(
        serde_json::json!({"conversation_history":two}),
        serde_json::json!({"zip_code":"78701"}),
    );
    assert_eq!(s.zip_code, "");
    // proc.extraction.address_fills_empty
    let s = apply(
        serde_json::json!({"conversation_history":two}),
        serde_json::json!({"service_address":"123 Oak Street"}),
    );
    assert_eq!(s.service_address, "123 Oak Street");
    // proc.extraction.name_fills_empty / name_not_overwritten
    let s = apply(
        serde_json::json!({"conversation_history":two}),
        serde_json::json!({"customer_name":"Jonas"}),
    );
    assert_eq!(s.customer_name, "Jonas");
    let s = apply(
        serde_json::json!({"customer_name":"Jonas","conversation_history":two}),
        serde_json::json!({"customer_name":"Jon"}),
    );
    assert_eq!(s.customer_name, "Jonas");
    // proc.extraction.problem_set
    let s = apply(
        serde_json::json!({"conversation_history":two}),
        serde_json::json!({"problem_description":"AC fan is intermittent"}),
    );
    assert_eq!(s.problem_description, "AC fan is intermittent");
    // proc.extraction.validators_applied
    let s = apply(
        serde_json::json!({"conversation_history":two}),
        serde_json::json!({"customer_name":"unknown","service_address":"7801",
            "preferred_time":"ASAP","equipment_type":"heat pump","problem_duration":"2 days"}),
    );
    assert_eq!(s.customer_name, "");
    assert_eq!(s.service_address, "");
    assert_eq!(s.preferred_time, "ASAP");
    assert_eq!(s.equipment_type, "heat pump");
    assert_eq!(s.problem_duration, "2 days");
    // proc.extraction.needs_two_history_entries
    let s = apply(
        serde_json::json!({"conversation_history":[{"role":"user","content":"my AC is broken"}]}),
        serde_json::json!({"problem_description":"AC broken"}),
    );
    assert_eq!(s.problem_description, "");
}

#[test]
fn validators() {
    assert_eq!(validate_name(" Jonas "), "Jonas");
    assert_eq!(validate_name("N/A"), "");
    assert_eq!(validate_name("512-555-1234"), "");
    assert_eq!(validate_name("123456"), "123456");
    assert_eq!(validate_name("{{customer_name}}"), "");
    assert_eq!(validate_name("Bob or Jim"), "Bob or Jim");
    assert_eq!(
        validate_address("53 Eleven Izzical Road"),
        "5311 Izzical Road"
    );
    assert_eq!(validate_address("4 Two Six Elm St"), "426 Elm St");
    assert_eq!(validate_address("Five Oak Lane"), "5 Oak Lane");
    assert_eq!(validate_address("5 Oh Three Main St"), "503 Main St");
    assert_eq!(validate_address("O Street"), "O Street"); // D-13
    assert_eq!(validate_address("123 Main or 456 Oak"), "");
    assert_eq!(validate_address("7801"), "");
    assert_eq!(validate_address("one two three"), "");
    assert_eq!(validate_address("Oak"), "");
    assert_eq!(validate_address("1 Rk"), "");
    assert_eq!(validate_address("1 Elm"), "1 Elm");
    assert_eq!(validate_address("unknown"), "");
}

// --- heuristic extractor --------------------------------------------

#[test]
fn names() {
    let n = |l: &[&str]| heuristic_extract(&user(l)).customer_name;
    assert_eq!(n(&["my name is jonas"]), "Jonas");
    assert_eq!(n(&["Yeah, my name is Maria Lopez."]), "Maria Lopez");
    assert_eq!(n(&["This is Jonas"]), "Jonas");
    assert_eq!(n(&["hi this is Jonas calling about my AC"]), "Jonas");
    assert_eq!(n(&["it's dave speaking"]), "Dave");
    assert_eq!(n(&["name's Bob"]), "Bob");
    assert_eq!(n(&["Hi, I'm Sarah and my heat is out"]), "Sarah");
    assert_eq!(n(&["this is ridiculous, my AC is broken again"]), "");
    assert_eq!(n(&["this is the third time I've called"]), "");
    assert_eq!(n(&["this is urgent"]), "");
    assert_eq!(n(&["I'm having a problem with my AC"]), "");
    assert_eq!(n(&["it's broken"]), "");
    assert_eq!(n(&["my AC is broken"]), "");
    // Bare answers to "can I get your name?" (never the opening line).
    assert_eq!(n(&["my AC is broken", "Jonas."]), "Jonas");
    assert_eq!(n(&["my AC is broken", "It's Jonas Berg"]), "Jonas Berg");
    assert_eq!(n(&["my AC is broken", "yeah sure"]), "");
    assert_eq!(n(&["my AC is broken", "Tomorrow."]), "");
    assert_eq!(n(&["my AC is broken", "No."]), "");
    assert_eq!(n(&["my AC is broken", "78701"]), "");
    assert_eq!(n(&["my AC is broken", "Franklin Street"]), "");
    assert_eq!(n(&["Jonas"]), "");
}

#[test]
fn addresses() {
    let a = |l: &[&str]| heuristic_extract(&user(l)).service_address;
    assert_eq!(a(&["4329 Franklin Street"]), "4329 Franklin Street");
    assert_eq!(
        a(&["Okay it's", "four three two nine", "Franklin Street"]),
        "4329 Franklin Street"
    );
    assert_eq!(a(&["it's 123 oak st"]), "123 Oak St");
    assert_eq!(
        a(&["I'm at 4210 South Lamar Blvd, 78745"]),
        "4210 South Lamar Blvd"
    );
    assert_eq!(
        a(&["the address is forty two ten south lamar boulevard"]),
        "4210 South Lamar Boulevard"
    );
    assert_eq!(a(&["twelve hundred five elm drive"]), "1205 Elm Drive");
    assert_eq!(a(&["four two six elm st"]), "426 Elm St");
    assert_eq!(a(&["5 oh 3 Main Street please"]), "503 Main Street");
    assert_eq!(
        a(&["zip seven eight seven zero one", "Franklin Street"]),
        ""
    );
    assert_eq!(a(&["I have one unit on Oak Street"]), "");
    assert_eq!(a(&["it's been 3 days", "no way"]), "");
    assert_eq!(a(&["my AC is broken"]), "");
    assert_eq!(a(&["it's 100 1st street"]), "100 1st Street");
    // Whole-line answers without a suffix.
    assert_eq!(a(&["It's 4329 Franklin."]), "4329 Franklin");
    assert_eq!(a(&["four three two nine franklin"]), "4329 Franklin");
    assert_eq!(a(&["3 tons"]), "");
    assert_eq!(a(&["5 years"]), "");
    assert_eq!(a(&["78701"]), "");
    // A later correction wins.
    assert_eq!(
        a(&["123 Oak Street", "sorry, actually it's 456 Elm Avenue"]),
        "456 Elm Avenue"
    );
}

/// Issue 9, item 4: the address keeps what the caller said — the whole
/// street name with its suffix, and the apartment or unit.
#[test]
fn addresses_keep_suffix_and_unit() {
    let a = |l: &[&str]| heuristic_extract(&user(l)).service_address;
    for (said, want) in [
        ("1207 Oak Hollow Drive", "1207 Oak Hollow Drive"),
        ("I'm at 1207 Oak Hollow Drive", "1207 Oak Hollow Drive"),
        ("1207 Oak Hollow Dr. in Austin", "1207 Oak Hollow Dr"),
        (
            "my address is twelve oh seven oak hollow drive",
            "1207 Oak Hollow Drive",
        ),
        (
            "it's 4500 Bluebonnet Ln apt 12",
            "4500 Bluebonnet Ln, Apt 12",
        ),
        (
            "the address is 88 Pecan Court, unit B",
            "88 Pecan Court, Unit B",
        ),
        (
            "1207 Oak Hollow Drive apartment 4b, zip 78745",
            "1207 Oak Hollow Drive, Apartment 4B",
        ),
        (
            "300 Congress Avenue suite 200",
            "300 Congress Avenue, Suite 200",
        ),
        ("42 Indian Run Court", "42 Indian Run Court"),
        // As Whisper writes "forty-three twenty-nine Franklin Street".
        ("It's 43-29 Franklin Street.", "43-29 Franklin Street"),
        // As Whisper writes "four thousand three hundred twenty-nine".
        ("It's 4,329, Franklin Street.", "4329 Franklin Street"),
        ("915 Pecan Point Trail", "915 Pecan Point Trail"),
        ("7 Ridge Road", "7 Ridge Road"),
        ("2100 Hollow Ridge Road", "2100 Hollow Ridge Road"),
        ("5 Mesa Verde Circle", "5 Mesa Verde Circle"),
        (
            "118 Barton Springs Parkway unit twelve",
            "118 Barton Springs Parkway, Unit 12",
        ),
        ("2 Elm Way #5", "2 Elm Way, #5"),
        (
            "44 Stone Creek Pass apartment four b",
            "44 Stone Creek Pass, Apartment 4B",
        ),
        (
            "900 Shoal Creek Blvd and my name is Dana",
            "900 Shoal Creek Blvd",
        ),
        (
            "1207 Oak Hollow Drive Austin Texas",
            "1207 Oak Hollow Drive",
        ),
    ] {
        assert_eq!(a(&[said]), want, "{said:?}");
    }
}

#[test]
fn problems() {
    let p = |l: &[&str]| heuristic_extract(&user(l)).problem_description;
    assert_eq!(p(&["hello", "my AC is broken"]), "AC is broken");
    assert_eq!(
        p(&["Yeah I'm having a problem with my AC, it's blowing warm air"]),
        "AC, it's blowing warm air"
    );
    assert_eq!(
        p(&["um so my furnace is making a loud banging noise"]),
        "Furnace is making a loud banging noise"
    );
    assert_eq!(
        p(&["no gas smell", "the thermostat is blank"]),
        "Thermostat is blank"
    );
    assert_eq!(p(&["This is Jonas", "78701"]), "");
    assert_eq!(p(&["gas furnace won't light"]), "Gas furnace won't light");
    assert_eq!(
        p(&["it's really hot in the house"]),
        "It's really hot in the house"
    );
    assert_eq!(
        p(&["water is leaking from the unit in the attic"]),
        "Water is leaking from the unit in the attic"
    );
}

#[test]
fn times_durations_equipment() {
    let f = |l: &[&str]| heuristic_extract(&user(l));
    assert_eq!(f(&["today if possible"]).preferred_time, "today");
    assert_eq!(
        f(&["tomorrow morning works"]).preferred_time,
        "tomorrow morning"
    );
    assert_eq!(f(&["asap please"]).preferred_time, "ASAP");
    assert_eq!(
        f(&["how about next Tuesday afternoon"]).preferred_time,
        "next tuesday afternoon"
    );
    assert_eq!(f(&["whenever, no rush"]).preferred_time, "whenever");
    assert_eq!(
        f(&["it stopped working this morning and I need someone today"]).preferred_time,
        "today"
    );
    assert_eq!(f(&["no, not right now"]).preferred_time, "");
    assert_eq!(f(&["no gas smell right now"]).preferred_time, "");
    assert_eq!(f(&["nope, nothing right now"]).preferred_time, "");

    assert_eq!(
        f(&["it's been like this since yesterday"]).problem_duration,
        "since yesterday"
    );
    assert_eq!(
        f(&["it's been out for two days"]).problem_duration,
        "for two days"
    );
    assert_eq!(f(&["it's been a week"]).problem_duration, "a week");
    assert_eq!(f(&["started 3 days ago"]).problem_duration, "3 days ago");
    assert_eq!(
        f(&["it stopped working last night"]).problem_duration,
        "since last night"
    );
    assert_eq!(f(&["my AC is broken"]).problem_duration, "");

    assert_eq!(f(&["my AC is broken"]).equipment_type, "AC");
    assert_eq!(f(&["the heat pump is frozen"]).equipment_type, "heat pump");
    assert_eq!(f(&["our mini-split leaks"]).equipment_type, "mini split");
    assert_eq!(f(&["gas furnace won't light"]).equipment_type, "furnace");
    assert_eq!(
        f(&["the water heater is out"]).equipment_type,
        "water heater"
    );
    assert_eq!(f(&["the A/C's thermostat"]).equipment_type, "AC");
    assert_eq!(f(&["hello"]).equipment_type, "");
}

#[test]
fn full_call_and_no_zip() {
    let h = hist(&[
        ("user", "Hi, my AC is blowing warm air"),
        ("assistant", "Quick safety check?"),
        ("user", "no nothing like that"),
        ("user", "seven eight seven zero one"),
        ("user", "my name is Jonas Berg"),
        ("user", "Okay it's"),
        ("user", "four three two nine"),
        ("user", "Franklin Street"),
        ("user", "today please"),
    ]);
    let f = heuristic_extract(&h);
    assert_eq!(f.customer_name, "Jonas Berg");
    assert_eq!(f.problem_description, "AC is blowing warm air");
    assert_eq!(f.service_address, "4329 Franklin Street");
    assert_eq!(f.preferred_time, "today");
    assert_eq!(f.equipment_type, "AC");
    assert_eq!(f.zip_code, "");
    assert_eq!(HeuristicExtractor.extract(&h), f);
}

proptest::proptest! {
    #[test]
    fn never_panics_on_arbitrary_lines(a in "\\PC{0,200}", b in "[a-z0-9 .,'-]{0,80}") {
        let _ = heuristic_extract(&user(&[a.as_str(), b.as_str()]));
        let _ = parse_extraction(&a);
        let _ = validate_address(&b);
    }
}

#[test]
fn never_panics() {
    let big = "héllo 🙂 4329 ".repeat(800);
    let inputs: Vec<String> = vec![
        String::new(),
        " ".into(),
        "\u{0}\u{1}\u{7f}\t\r\n".into(),
        "🙂🙂🙂 my name is 🙂".into(),
        "this is".into(),
        "my name is".into(),
        "since".into(),
        "for".into(),
        "hundred hundred hundred".into(),
        "one hundred".into(),
        "twenty-".into(),
        "-".into(),
        "' ' ' ,,, ...".into(),
        "İstanbul ǅ ß ﬁ straße 12 Straße".into(),
        "1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 street".into(),
        "999999999999999999999999 Main Street".into(),
        big,
        "a".repeat(10_000),
        "one ".repeat(3000),
    ];
    for i in &inputs {
        let _ = heuristic_extract(&user(&[i.as_str()]));
        let _ = heuristic_extract(&user(&[i.as_str(), i.as_str()]));
        let _ = parse_extraction(i);
        let _ = validate_address(i);
        let _ = validate_name(i);
    }
}
