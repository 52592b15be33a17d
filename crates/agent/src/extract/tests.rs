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
        "AC is blowing warm air"
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

// --- one utterance: name_in / address_in / problem_in (issue 23) ----------

fn check<T: PartialEq + std::fmt::Debug>(bad: &mut Vec<String>, what: String, got: T, want: T) {
    if got != want {
        bad.push(format!("{what}: got {got:?}, want {want:?}"));
    }
}

fn report(bad: Vec<String>) {
    assert!(bad.is_empty(), "{} failed:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn name_in_after_preambles_and_fillers() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        ("ha, okay — it's Dev Raman", true, Some("Dev Raman")),
        ("uh yeah this is Maria", false, Some("Maria")),
        ("uh yeah this is maria", false, Some("Maria")),
        ("my name's Jo Chen", false, Some("Jo Chen")),
        ("my name's jo chen", false, Some("Jo Chen")),
        ("you can put it under Sam Ortiz", false, Some("Sam Ortiz")),
        ("put it under sam ortiz please", false, Some("Sam Ortiz")),
        ("it's Raman, Dev Raman", true, Some("Dev Raman")),
        ("Raman. Dev Raman.", true, Some("Dev Raman")),
        ("Dev Raman", true, Some("Dev Raman")),
        ("it's dev", true, Some("Dev")),
        ("sure, it's Dev", true, Some("Dev")),
        (
            "Hi, my name is Angela Torres and my AC is out",
            false,
            Some("Angela Torres"),
        ),
        (
            "hey there, this is Marcus calling about my furnace",
            false,
            Some("Marcus"),
        ),
        (
            "yes hi, I'm Sarah, the heat isn't working",
            false,
            Some("Sarah"),
        ),
        ("it's dave speaking", false, Some("Dave")),
        ("Dev Raman here, my AC quit", false, Some("Dev Raman")),
        ("the name is Lucy Park", false, Some("Lucy Park")),
        ("you can call me Ken", false, Some("Ken")),
        ("first name is Omar", false, Some("Omar")),
        ("um, Bea", true, Some("Bea")),
        (
            "okay so it's under the name of Hector Ruiz",
            false,
            Some("Hector Ruiz"),
        ),
        (
            "my full name is Mary Ann Smith",
            false,
            Some("Mary Ann Smith"),
        ),
        (
            "oh sorry — yeah, it's Nguyen. Linh Nguyen.",
            true,
            Some("Linh Nguyen"),
        ),
    ] {
        check(
            &mut bad,
            format!("{said:?} asked={asked}"),
            name_in(said, asked).as_deref(),
            want,
        );
    }
    report(bad);
}

#[test]
fn name_in_drops_the_affiliation() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        ("Priya Nair, with Lakeline Pediatrics", true, "Priya Nair"),
        ("Tom from Acme Property Management", true, "Tom"),
        ("Tom from Acme Property Management", false, "Tom"),
        (
            "Hi, Tom from Acme Property Management, we have a unit down",
            false,
            "Tom",
        ),
        (
            "this is Priya Nair with Lakeline Pediatrics",
            false,
            "Priya Nair",
        ),
        (
            "my name is Carla Diaz from Hilltop Realty",
            false,
            "Carla Diaz",
        ),
        ("it's Ben Ortiz over at Westlake Dental", true, "Ben Ortiz"),
        ("Gina Wu with the Oak Hill HOA", true, "Gina Wu"),
        ("yeah it's Raj, I'm with Sunrise Apartments", true, "Raj"),
        ("I'm Luis Romero of Romero Builders", false, "Luis Romero"),
    ] {
        check(
            &mut bad,
            format!("{said:?}"),
            name_in(said, asked).as_deref(),
            Some(want),
        );
    }
    report(bad);
}

#[test]
fn name_in_keeps_ordinary_word_surnames() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        ("my name is Tom Price", false, "Tom Price"),
        ("it's Ellen Price", true, "Ellen Price"),
        ("Price. Ellen Price.", true, "Ellen Price"),
        ("this is Johnny Cash", false, "Johnny Cash"),
        ("my name's Bill", false, "Bill"),
        ("Bill Frost", true, "Bill Frost"),
        ("it's Donna Summers", true, "Donna Summers"),
        ("name is Jack Frost", false, "Jack Frost"),
        ("Bill", true, "Bill"),
        ("Summers, Kate Summers", true, "Kate Summers"),
        ("this is Rob Winter", false, "Rob Winter"),
        ("Lois Baker", true, "Lois Baker"),
    ] {
        check(
            &mut bad,
            format!("{said:?}"),
            name_in(said, asked).as_deref(),
            Some(want),
        );
    }
    report(bad);
}

#[test]
fn name_in_never_a_street_day_hvac_word_or_filler() {
    let mut bad = Vec::new();
    for (said, asked) in [
        ("Dev Raman", false),
        ("it's dev", false),
        ("it's broken", true),
        ("it's Oak Street", true),
        ("Franklin Street", true),
        ("Research Blvd", true),
        ("Tuesday", true),
        ("tomorrow morning", true),
        ("the furnace", true),
        ("heat pump", true),
        ("um", true),
        ("uh, okay", true),
        ("yeah sure", true),
        ("this is ridiculous", false),
        ("this is happening again", false),
        ("this is the third time I've called", false),
        ("I'm the facilities manager", false),
        ("I'm calling about my AC", false),
        ("I'm not sure", true),
        ("I'm at 4329 Franklin Street", false),
        ("please call me back", false),
        ("can you call me tomorrow", false),
        ("it's under warranty", false),
        ("it's under the house", false),
        ("why do you need that", true),
        ("hold on", true),
        ("78701", true),
        ("512 555 0199", true),
        ("my AC is blowing warm air", true),
        ("no air is coming out", true),
        ("", true),
        ("— , .", true),
    ] {
        check(
            &mut bad,
            format!("{said:?} asked={asked}"),
            name_in(said, asked),
            None,
        );
    }
    report(bad);
}

#[test]
fn address_in_numbers_suffixes_units() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        ("10400 Research Blvd", false, "10400 Research Blvd"),
        ("10400 Research Blvd, 78759", false, "10400 Research Blvd"),
        ("fifty one twenty Oak Street", false, "5120 Oak Street"),
        (
            "twenty-two oh one Barton Hills Drive",
            false,
            "2201 Barton Hills Drive",
        ),
        (
            "twenty two oh one barton hills drive",
            false,
            "2201 Barton Hills Drive",
        ),
        (
            "yeah so the house is at 2201 Barton Hills Drive, by the park",
            false,
            "2201 Barton Hills Drive",
        ),
        (
            "it's 4500 Bluebonnet Ln apt 4",
            false,
            "4500 Bluebonnet Ln, Apt 4",
        ),
        ("88 Pecan Court, unit B", false, "88 Pecan Court, Unit B"),
        ("2 Elm Way #12", false, "2 Elm Way, #12"),
        (
            "300 Congress Ave. Suite 200",
            false,
            "300 Congress Ave, Suite 200",
        ),
        ("915 Pecan Point Trl", false, "915 Pecan Point Trl"),
        ("we're at 7 Ridge Rd in Cedar Park", false, "7 Ridge Rd"),
        ("one oh one Main St", false, "101 Main St"),
        ("twelve hundred five elm drive", false, "1205 Elm Drive"),
        (
            "the address is 4210 South Lamar Boulevard",
            false,
            "4210 South Lamar Boulevard",
        ),
        ("it's 100 1st street", false, "100 1st Street"),
        (
            "ok it's 3301 Windsor Rd apartment 2C",
            false,
            "3301 Windsor Rd, Apartment 2C",
        ),
        ("I live at 12 Lakeshore Pkwy", false, "12 Lakeshore Pkwy"),
        ("6 Crescent Heights", false, "6 Crescent Heights"),
        ("it's 4329 Franklin.", true, "4329 Franklin"),
        ("four three two nine franklin", true, "4329 Franklin"),
        ("I'm at 4210 South Lamar", false, "4210 South Lamar"),
        ("uh 512 Oakmont, apt 3", true, "512 Oakmont, Apt 3"),
        (
            "123 Oak Street, sorry, I mean 456 Elm Avenue",
            false,
            "456 Elm Avenue",
        ),
        ("it's 5120 Oak St, not 5210 Oak St", false, "5120 Oak St"),
    ] {
        check(
            &mut bad,
            format!("{said:?}"),
            address_in(said, asked).as_deref(),
            Some(want),
        );
    }
    report(bad);
}

#[test]
fn address_in_rejects_what_is_no_address() {
    let mut bad = Vec::new();
    for (said, asked) in [
        ("4329 Franklin", false),
        ("my AC is broken", true),
        ("3 tons", true),
        ("5 years", true),
        ("78701", true),
        ("it's been 3 days", true),
        ("I have one unit on Oak Street", false),
        ("zip seven eight seven zero one", true),
        ("call me at 5 tomorrow", false),
        ("it's 72 degrees in here", true),
        ("about 2 hours ago", true),
        ("Franklin Street", true),
        ("", true),
    ] {
        check(&mut bad, format!("{said:?}"), address_in(said, asked), None);
    }
    report(bad);
}

#[test]
fn house_number_corrections() {
    let mut bad = Vec::new();
    for (said, current, want) in [
        (
            "no wait, it's 5120, not 5210",
            "5210 Oak St",
            Some("5120 Oak St"),
        ),
        ("it's 5120 not 5210", "5210 Oak St", Some("5120 Oak St")),
        ("no, fifty one twenty", "5210 Oak St", Some("5120 Oak St")),
        ("the number is 5120", "5210 Oak St", Some("5120 Oak St")),
        ("5120", "5210 Oak St", Some("5120 Oak St")),
        (
            "actually it's 2201",
            "2210 Barton Hills Drive, Apt 4",
            Some("2201 Barton Hills Drive, Apt 4"),
        ),
        (
            "sorry, 10400",
            "10040 Research Blvd",
            Some("10400 Research Blvd"),
        ),
        ("yes that's right", "5210 Oak St", None),
        ("5210", "5210 Oak St", None),
        ("no, it's 5120 Elm Street", "5210 Oak St", None),
        ("my zip is 78701", "5210 Oak St", None),
        ("78701", "5210 Oak St", None),
        ("come at 5 pm", "5210 Oak St", None),
        ("it's been 3 days", "5210 Oak St", None),
        ("no wait, 5120", "Oak St", None),
        ("no wait, 5120", "", None),
    ] {
        check(
            &mut bad,
            format!("{said:?} / {current:?}"),
            house_number_correction(said, current).as_deref(),
            want,
        );
    }
    report(bad);
}

#[test]
fn problem_in_keeps_negation() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        ("no air's coming out", true, "No air's coming out"),
        (
            "no air is coming out of the vents",
            false,
            "No air is coming out of the vents",
        ),
        ("the heat won't turn on", false, "Heat won't turn on"),
        ("it's not blowing cold", true, "It's not blowing cold"),
        (
            "my AC, it's not blowing cold",
            false,
            "AC is not blowing cold",
        ),
        ("no, the furnace won't light", false, "Furnace won't light"),
        (
            "the thermostat isn't working",
            false,
            "Thermostat isn't working",
        ),
        (
            "there's no heat upstairs",
            false,
            "There's no heat upstairs",
        ),
        (
            "the AC runs but nothing's coming out",
            false,
            "AC runs but nothing's coming out",
        ),
        (
            "the unit doesn't turn on at all",
            false,
            "Unit doesn't turn on at all",
        ),
        ("it's not cooling", true, "It's not cooling"),
        (
            "the heat pump isn't heating the house",
            false,
            "Heat pump isn't heating the house",
        ),
        ("it won't stop running", true, "It won't stop running"),
        ("the fan's not spinning", false, "Fan's not spinning"),
        (
            "our AC is not cooling the upstairs",
            false,
            "AC is not cooling the upstairs",
        ),
        ("uh no cold air at all", true, "No cold air at all"),
    ] {
        check(
            &mut bad,
            format!("{said:?}"),
            problem_in(said, asked).as_deref(),
            Some(want),
        );
    }
    report(bad);
}

#[test]
fn problem_in_is_the_fault_not_the_request() {
    let mut bad = Vec::new();
    for (said, want) in [
        (
            "I need someone to come look at my furnace, it's making a banging noise",
            "Furnace is making a banging noise",
        ),
        (
            "can you send a tech out for my AC, it won't turn on",
            "AC won't turn on",
        ),
        (
            "I'd like someone to check the heat pump, there's ice all over it",
            "Heat pump: there's ice all over it",
        ),
        (
            "Yeah I'm having a problem with my AC, it's blowing warm air",
            "AC is blowing warm air",
        ),
        (
            "I smell gas near the furnace",
            "I smell gas near the furnace",
        ),
        (
            "there's a burning smell from the vents",
            "There's a burning smell from the vents",
        ),
        (
            "water is leaking from the unit in the attic",
            "Water is leaking from the unit in the attic",
        ),
        (
            "um so my furnace is making a loud banging noise",
            "Furnace is making a loud banging noise",
        ),
        ("hi, my name is Jo and my AC is broken", "AC is broken"),
        (
            "I'm at 12 Cold Springs Road and the heater died",
            "Heater died",
        ),
        ("I'm having an issue with my furnace", "furnace issue"),
        (
            "I'd like to schedule a tune-up",
            "I'd like to schedule a tune-up",
        ),
        ("gas furnace won't light", "Gas furnace won't light"),
        (
            "it's really hot in the house",
            "It's really hot in the house",
        ),
        (
            "the outside unit is frozen and it's making a clicking sound",
            "Outside unit is frozen and it's making a clicking sound",
        ),
        // How a recogniser (or a caller) says "stopped": "stop".
        (
            "Hi, my AC stop cooling last night.",
            "AC stop cooling last night",
        ),
        ("My AC, stop working.", "AC: stop working"),
    ] {
        let got = problem_in(said, false);
        let got = got.as_deref().map(|g| g.to_lowercase());
        check(
            &mut bad,
            format!("{said:?}"),
            got.as_deref(),
            Some(want.to_lowercase().as_str()),
        );
    }
    report(bad);
}

#[test]
fn problem_in_none_without_a_fault() {
    let mut bad = Vec::new();
    for (said, asked) in [
        ("no gas smell", true),
        ("no, nothing like that", true),
        ("I don't smell gas or anything", true),
        ("no smoke, no burning smell", true),
        ("my name is Tom Price", false),
        ("78701", true),
        ("4329 Franklin Street", true),
        ("tomorrow morning works", false),
        ("yes that's right", true),
        ("I'm not sure", false),
        ("I can't hear you", false),
        ("I won't be home until five", false),
        ("how much is a service call", false),
        ("I need someone to come look at my furnace", false),
        ("hello", true),
        ("", true),
    ] {
        check(&mut bad, format!("{said:?}"), problem_in(said, asked), None);
    }
    report(bad);
}

#[test]
fn name_in_more_phrasings() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        (
            "hi yes my name is Roberto Alvarez and I'm calling because my AC is out",
            false,
            Some("Roberto Alvarez"),
        ),
        (
            "Hi, this is Karen Price calling about the heater",
            false,
            Some("Karen Price"),
        ),
        ("yeah it's Cash, Johnny Cash", true, Some("Johnny Cash")),
        ("Frost. F-R-O-S-T.", true, Some("Frost")),
        ("My last name is Summers", false, Some("Summers")),
        ("Sure, Michael", true, Some("Michael")),
        (
            "sure thing, it's Michael Summers",
            true,
            Some("Michael Summers"),
        ),
        ("Anna speaking", false, Some("Anna")),
        ("I'm Dev, Dev Raman", false, Some("Dev Raman")),
        ("it's me, Dev", true, Some("Dev")),
        ("this is Mrs. Henderson", false, Some("Henderson")),
        ("Dr. Patel", true, Some("Patel")),
        ("Jean-Luc Picard", true, Some("Jean-Luc Picard")),
        ("O'Brien, Pat O'Brien", true, Some("Pat O'Brien")),
        (
            "my name is Bill and I'm the facilities manager at Westgate",
            false,
            Some("Bill"),
        ),
        ("Whirlpool", true, None),
        ("it's Monday", true, None),
        ("Maple Street", true, None),
        ("Good morning", true, None),
        ("can you repeat that", true, None),
        ("I'd rather not say", true, None),
        ("just a second let me grab it", true, None),
        ("this is the Johnsons", false, None),
        ("yes go ahead", true, None),
        ("this is emily", false, Some("Emily")),
        ("this is kelly", false, Some("Kelly")),
        ("this is ahmed", false, Some("Ahmed")),
        ("i'm jared", true, Some("Jared")),
        ("This is Jonas speaking", false, Some("Jonas")),
        ("It's Dev here", false, Some("Dev")),
        ("Bill here, from Acme", false, Some("Bill")),
        ("This is Cash calling", false, Some("Cash")),
        ("this is frustrating", false, None),
        ("this is complicated", false, None),
        ("i'm hoping you can just help", true, None),
        ("I'm Out of town until Monday", false, None),
        ("I'm Renting", false, None),
        ("I'm Here now", false, None),
        ("call me Tuesday", false, None),
        ("put it under my husband's name", false, None),
        ("this is the Frost residence", false, None),
        ("yes that is right now", true, None),
        ("oh shoot, I gotta run, bye", true, None),
    ] {
        check(
            &mut bad,
            format!("{said:?} asked={asked}"),
            name_in(said, asked).as_deref(),
            want,
        );
    }
    report(bad);
}

#[test]
fn address_in_more_phrasings() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        (
            "it's 1600 Pennsylvania Avenue Northwest",
            false,
            Some("1600 Pennsylvania Avenue Northwest"),
        ),
        (
            "we're at 4802 N. Lamar Blvd",
            false,
            Some("4802 N Lamar Blvd"),
        ),
        (
            "4802 North Lamar Boulevard, Austin, Texas 78756",
            false,
            Some("4802 North Lamar Boulevard"),
        ),
        (
            "the address is one two three four five Main Street",
            false,
            Some("12345 Main Street"),
        ),
        (
            "it's a hundred and five Elm Street",
            false,
            Some("105 Elm Street"),
        ),
        ("one hundred five Elm Street", false, Some("105 Elm Street")),
        ("two thousand twenty Oak Lane", false, Some("2020 Oak Lane")),
        (
            "nineteen oh five Rio Grande Street",
            false,
            Some("1905 Rio Grande Street"),
        ),
        (
            "uh it's thirty-three oh eight Speedway",
            true,
            Some("3308 Speedway"),
        ),
        ("12B Baker Street", false, Some("12B Baker Street")),
        (
            "Apartment 4, 200 Main St",
            false,
            Some("200 Main St, Apartment 4"),
        ),
        ("200 Main St, Apt. 4B", false, Some("200 Main St, Apt 4B")),
        (
            "200 Main St unit number 12",
            false,
            Some("200 Main St, Unit 12"),
        ),
        (
            "200 Main St, building C, unit 210",
            false,
            Some("200 Main St, Building C, Unit 210"),
        ),
        (
            "the house is at 5120 Oak Street but the unit is in the backyard",
            false,
            Some("5120 Oak Street"),
        ),
        (
            "my AC at 5120 Oak Street is broken",
            false,
            Some("5120 Oak Street"),
        ),
        ("711 West 32nd Street", false, Some("711 West 32nd Street")),
        ("it's 8 Sunset Cove", false, Some("8 Sunset Cove")),
        (
            "hi this is Ruth Alvarez at 4502 Avenue H, my AC stopped cooling last night",
            false,
            Some("4502 Avenue H"),
        ),
        ("I'm on Elm Street", true, None),
        ("it's the yellow house on the corner", true, None),
        ("I've had it for 12 years", true, None),
        ("my number is 512 555 0199", true, None),
        ("5 minutes ago", true, None),
    ] {
        check(
            &mut bad,
            format!("{said:?} asked={asked}"),
            address_in(said, asked).as_deref(),
            want,
        );
    }
    for (said, current, want) in [
        ("no, it's 5102", "5120 Oak St", Some("5102 Oak St")),
        ("fifty one oh two", "5120 Oak St", Some("5102 Oak St")),
        ("I said 5120 not 5210", "5210 Oak St", Some("5120 Oak St")),
        ("the house number is 88", "86 Pecan Ct", Some("88 Pecan Ct")),
        ("it's 12 apartment 4", "14 Elm St", Some("12 Elm St")),
    ] {
        check(
            &mut bad,
            format!("{said:?} / {current:?}"),
            house_number_correction(said, current).as_deref(),
            want,
        );
    }
    report(bad);
}

#[test]
fn problem_in_more_phrasings() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        (
            "my AC stopped working, it's blowing hot air",
            false,
            Some("AC stopped working, it's blowing hot air"),
        ),
        (
            "the AC is blowing but it's not cold",
            false,
            Some("AC is blowing but it's not cold"),
        ),
        (
            "it's been making a weird noise for a couple days",
            true,
            Some("It's been making a weird noise for a couple days"),
        ),
        (
            "there's water all over the floor by the furnace",
            false,
            Some("There's water all over the floor by the furnace"),
        ),
        (
            "my thermostat says 85 and it won't go down",
            false,
            Some("Thermostat says 85 and it won't go down"),
        ),
        ("we have no heat", false, Some("We have no heat")),
        ("no heat", true, Some("No heat")),
        ("nothing, it's just dead", true, Some("It's just dead")),
        (
            "the outside unit is running but the inside fan isn't",
            false,
            Some("Outside unit is running but inside fan isn't"),
        ),
        (
            "my carbon monoxide detector is going off",
            false,
            Some("Carbon monoxide detector is going off"),
        ),
        (
            "I smell something burning when the heat comes on",
            false,
            Some("I smell something burning when the heat comes on"),
        ),
        (
            "yeah it's still broken, your guy didn't fix it",
            false,
            Some("It's still broken"),
        ),
        (
            "the breaker keeps tripping",
            false,
            Some("Breaker keeps tripping"),
        ),
        ("my AC is short cycling", false, Some("AC is short cycling")),
        (
            "it's so hot I can't sleep",
            false,
            Some("It's so hot I can't sleep"),
        ),
        (
            "the vents are blowing warm",
            false,
            Some("Vents are blowing warm"),
        ),
        ("the fan won't shut off", false, Some("Fan won't shut off")),
        (
            "no, no gas smell, but the furnace is clicking and won't light",
            true,
            Some("Furnace is clicking and won't light"),
        ),
        (
            "I want to get my AC serviced",
            false,
            Some("I want to get my AC serviced"),
        ),
        (
            "I smell gas in my kitchen and the furnace is on",
            false,
            Some("I smell gas in my kitchen"),
        ),
        (
            "it's burning up in here, the AC died",
            false,
            Some("It's burning up in here, AC died"),
        ),
        (
            "uh yeah um my ac its not uh cooling",
            false,
            Some("AC its not cooling"),
        ),
        (
            "the thermostat is blank and nothing turns on",
            false,
            Some("Thermostat is blank and nothing turns on"),
        ),
        (
            "I don't smell gas but I see sparks",
            false,
            Some("I see sparks"),
        ),
        ("my heater", true, None),
        ("it's the AC", true, None),
        ("I don't smell any gas or smoke", true, None),
        ("how much do you guys charge to come out?", false, None),
        ("do you work on Trane units?", false, None),
        (
            "Wednesday doesn't work anymore, can we move it?",
            false,
            None,
        ),
        ("that time isn't working for me", false, None),
        ("tomorrow doesn't work", true, None),
        ("can someone come out tomorrow", true, None),
        ("I'm calling about my appointment", false, None),
    ] {
        check(
            &mut bad,
            format!("{said:?} asked={asked}"),
            problem_in(said, asked).as_deref(),
            want,
        );
    }
    report(bad);
}

#[test]
fn problem_in_parts_and_running_faults() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        (
            "it doesn't blow cold anymore",
            false,
            "It doesn't blow cold anymore",
        ),
        (
            "there's no airflow upstairs",
            false,
            "There's no airflow upstairs",
        ),
        ("heat won't kick on", false, "Heat won't kick on"),
        ("the AC won't turn off", false, "AC won't turn off"),
        ("it never shuts off", false, "It never shuts off"),
        (
            "my house is 85 degrees and the AC is running nonstop",
            false,
            "AC is running nonstop",
        ),
        (
            "the furnace keeps clicking but no flame",
            false,
            "Furnace keeps clicking but no flame",
        ),
        ("the pilot light went out", false, "Pilot light went out"),
        (
            "the condensate line is clogged",
            false,
            "Condensate line is clogged",
        ),
        (
            "my energy bill doubled and the AC runs all day",
            false,
            "AC runs all day",
        ),
        ("not cooling", true, "Not cooling"),
        (
            "The thermostat's screen is dead",
            false,
            "Thermostat's screen is dead",
        ),
        ("my mini-split is leaking", false, "Mini-split is leaking"),
        ("hi I'm calling because my AC quit", false, "AC quit"),
        (
            "my furnace is 20 years old and it's making a weird smell",
            false,
            "Furnace is 20 years old and it's making a weird smell",
        ),
        (
            "can you come look at my AC, it's not cooling and there's ice on the line",
            false,
            "AC is not cooling and there's ice on the line",
        ),
        ("I think the capacitor is bad", false, "Capacitor is bad"),
        ("it's humid in the house", true, "It's humid in the house"),
    ] {
        check(
            &mut bad,
            format!("{said:?} asked={asked}"),
            problem_in(said, asked).as_deref(),
            Some(want),
        );
    }
    report(bad);
}

/// Lines of the generated corpus (examples/replays/generated).
#[test]
fn generated_corpus_lines() {
    let mut bad = Vec::new();
    for (said, asked, want) in [
        (
            "hi, it's Dana Fields over on 7315 Manchaca Road, the heat pump is iced over",
            false,
            Some("Dana Fields"),
        ),
        (
            "we're at 10701 Lakewood Drive, the zip is 78750",
            true,
            None,
        ),
        (
            "it's Priya Raman, at 2808 Hemphill Park",
            true,
            Some("Priya Raman"),
        ),
        ("close — it's 5120, not 5102", true, None),
        ("change it to Wednesday please", true, None),
        (
            "it's 9 Stone Creek Pass — and actually use the name Grace Okafor",
            false,
            Some("Grace Okafor"),
        ),
        (
            "actually put it under my wife's name, Mei Lin",
            false,
            Some("Mei Lin"),
        ),
        ("correction, Priya Raman", true, Some("Priya Raman")),
        (
            "first name Jordan, last name Miles",
            false,
            Some("Jordan Miles"),
        ),
        ("oh sorry, Marcus Bell", true, Some("Marcus Bell")),
        ("the account should be Ana Diaz", false, Some("Ana Diaz")),
        (
            "use my partner's name, Dana Fields",
            false,
            Some("Dana Fields"),
        ),
        ("hmm, put Kim Nguyen on it", false, Some("Kim Nguyen")),
        ("change the name to Ana Diaz", false, Some("Ana Diaz")),
        ("put it on my card", false, None),
        ("put the AC on cool", false, None),
        ("make it Tuesday", false, None),
        ("make it quick", false, None),
        ("my wife's name is on the account, Linda Park", false, None),
    ] {
        check(
            &mut bad,
            format!("name {said:?} asked={asked}"),
            name_in(said, asked).as_deref(),
            want,
        );
    }
    for (said, want) in [
        (
            "hi, it's Dana Fields over on 7315 Manchaca Road, the heat pump is iced over",
            Some("7315 Manchaca Road"),
        ),
        (
            "it's Priya Raman, at 2808 Hemphill Park",
            Some("2808 Hemphill Park"),
        ),
        (
            "no, we're fine — it's 2808 Hemphill Park by the way",
            Some("2808 Hemphill Park"),
        ),
        ("78744 — 5120 Burleson Road", Some("5120 Burleson Road")),
        ("78751 — 4112 Avenue D", Some("4112 Avenue D")),
        (
            "our place is 2808 Hemphill Park",
            Some("2808 Hemphill Park"),
        ),
        ("4, 3, 2, 9 Franklin Street", Some("4329 Franklin Street")),
    ] {
        check(
            &mut bad,
            format!("address {said:?}"),
            address_in(said, false).as_deref(),
            want,
        );
    }
    check(
        &mut bad,
        "problem fix".into(),
        problem_in(
            "Tom Becker. and hmm, more accurately the heat pump is iced over",
            false,
        )
        .as_deref(),
        Some("Heat pump is iced over"),
    );
    report(bad);
}

#[test]
fn both_paths_agree() {
    // The history extractor uses the one-utterance finders.
    let h = hist(&[
        (
            "assistant",
            "Thanks for calling. What can I help you with today?",
        ),
        (
            "user",
            "I need someone to come look at my furnace, it's making a banging noise",
        ),
        ("assistant", "Can I get your name?"),
        ("user", "ha, okay — it's Dev Raman"),
        ("assistant", "What's the service address?"),
        ("user", "fifty one twenty Oak Street apt 4"),
    ]);
    let f = heuristic_extract(&h);
    assert_eq!(f.customer_name, "Dev Raman");
    assert_eq!(f.service_address, "5120 Oak Street, Apt 4");
    assert_eq!(f.problem_description, "Furnace is making a banging noise");
    assert_eq!(
        Some(f.customer_name.as_str()),
        name_in("ha, okay — it's Dev Raman", true).as_deref()
    );
    // Not asked for the name: "it's dev" is no name.
    let h = hist(&[
        ("assistant", "What's going on with the system?"),
        ("user", "it's dev, it's been out since Monday"),
    ]);
    assert_eq!(heuristic_extract(&h).customer_name, "");
}

/// For one question and its answer, the history extractor and the
/// one-utterance finders say the same.
#[test]
fn history_and_utterance_finders_agree() {
    let mut bad = Vec::new();
    let questions = [
        ("Can I get your name?", "name"),
        ("What's the address where you need service?", "address"),
        ("What's going on with your system?", "problem"),
        ("Anything else I should know?", "none"),
    ];
    let answers = [
        "ha, okay — it's Dev Raman",
        "Priya Nair, with Lakeline Pediatrics",
        "it's 4329 Franklin.",
        "fifty one twenty Oak Street apt 4",
        "I need someone to come look at my furnace, it's making a banging noise",
        "no air's coming out",
        "it's really hot in here",
        "this is Maria and the heat won't turn on",
        "Tom from Acme Property Management",
        "yeah so the house is at 2201 Barton Hills Drive, by the park",
        "no gas smell",
        "Bill Frost",
    ];
    for (q, kind) in questions {
        for a in answers {
            let f = heuristic_extract(&hist(&[("assistant", q), ("user", a)]));
            let name = name_in(a, kind == "name").unwrap_or_default();
            let address = address_in(a, kind == "address").unwrap_or_default();
            // The first caller line answers "how can I help?" too.
            let problem = problem_in(a, true).unwrap_or_default();
            check(&mut bad, format!("name {q:?} {a:?}"), f.customer_name, name);
            check(
                &mut bad,
                format!("address {q:?} {a:?}"),
                f.service_address,
                address,
            );
            check(
                &mut bad,
                format!("problem {q:?} {a:?}"),
                f.problem_description,
                problem,
            );
        }
    }
    report(bad);
}

#[test]
fn one_utterance_finders_never_panic() {
    let big = "héllo 🙂 4329 not oh ".repeat(800);
    for s in [
        "",
        " ",
        "'",
        "’",
        "#",
        "# #",
        "—",
        "no",
        "not",
        "it's",
        "under",
        "fifty",
        "twenty-",
        "oh oh oh",
        "1 2 3 4 5 6 7 8 9 0 1 2 3 street",
        "999999999999999999999 Main St",
        "İstanbul ǅ ß ﬁ straße 12 Straße",
        big.as_str(),
    ] {
        let _ = name_in(s, true);
        let _ = name_in(s, false);
        let _ = address_in(s, true);
        let _ = address_in(s, false);
        let _ = problem_in(s, true);
        let _ = problem_in(s, false);
        let _ = house_number_correction(s, "5210 Oak St");
        let _ = house_number_correction("5120", s);
        let _ = crate::validate::zip_in(s);
    }
}

proptest::proptest! {
    #[test]
    fn one_utterance_finders_total(a in "\\PC{0,120}", b in "[a-z0-9 .,'#-]{0,60}") {
        for s in [a.as_str(), b.as_str()] {
            let _ = name_in(s, true);
            let _ = address_in(s, true);
            let _ = problem_in(s, true);
            let _ = house_number_correction(s, "5210 Oak St");
            let _ = crate::validate::zip_in(s);
        }
    }
}

/// Timing of the one-utterance finders (run with an optimised agent:
/// `cargo test -p agent --lib --config 'profile.dev.package.agent.opt-level=3'
/// slot_finder_timing -- --ignored --nocapture`).
#[test]
#[ignore]
fn slot_finder_timing() {
    let said = [
        "ha, okay — it's Dev Raman",
        "yeah so the house is at 2201 Barton Hills Drive, by the park",
        "I need someone to come look at my furnace, it's making a banging noise and it smells a little like something is burning",
        "no air's coming out",
        "fifty one twenty Oak Street apt 4, zip seven eight seven four five",
        "uh yeah hi, so my AC stopped working last night and it's like ninety degrees in the house, can you send someone out today",
        "Priya Nair, with Lakeline Pediatrics",
        "no wait, it's 5120, not 5210",
    ];
    type Finder = Box<dyn Fn(&str) -> bool>;
    let finders: Vec<(&str, Finder)> = vec![
        ("tokenize", Box::new(|s| !heuristic::tokenize(s).is_empty())),
        ("name_in", Box::new(|s| name_in(s, true).is_some())),
        ("address_in", Box::new(|s| address_in(s, true).is_some())),
        ("problem_in", Box::new(|s| problem_in(s, true).is_some())),
        ("zip_in", Box::new(|s| crate::validate::zip_in(s).is_some())),
        (
            "house_number_correction",
            Box::new(|s| house_number_correction(s, "5210 Oak St").is_some()),
        ),
    ];
    for (what, f) in &finders {
        let mut times: Vec<u128> = Vec::new();
        for _ in 0..2000 {
            for s in said {
                let t = std::time::Instant::now();
                std::hint::black_box(f(std::hint::black_box(s)));
                times.push(t.elapsed().as_nanos());
            }
        }
        let mut worst = (0, "");
        for (k, s) in said.iter().enumerate() {
            let mut mine: Vec<u128> = times.iter().skip(k).step_by(said.len()).copied().collect();
            mine.sort_unstable();
            let med = mine[mine.len() / 2];
            if med > worst.0 {
                worst = (med, s);
            }
        }
        times.sort_unstable();
        let p = |q: f64| times[((times.len() as f64 - 1.0) * q) as usize];
        println!(
            "{what}: p50 {} ns, p99 {} ns; slowest median {} ns for {:?}",
            p(0.5),
            p(0.99),
            worst.0,
            worst.1
        );
    }
}
