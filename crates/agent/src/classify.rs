//! Post-call classification: deterministic tags, priority colour and revenue
//! tier (SPEC §7.6 as amended by D-15), and the prompt / validation halves of
//! the LLM call classification (SPEC §7.7). The HTTP call itself lives with
//! the other I/O.
//!
//! D-15: every keyword test is a whole-word match (the state machine's
//! `match_any` semantics) and signal lists keep their declared order.

use crate::state::State;
use serde_json::{json, Map, Value};

use crate::keywords::contains_word;
use crate::validate::detect_high_ticket;

/// The keywords of `keywords` that occur in (lower-cased) `lower`, in
/// declared order.
fn matches_in_order(lower: &str, keywords: &[&'static str]) -> Vec<&'static str> {
    keywords
        .iter()
        .copied()
        .filter(|k| contains_word(lower, k))
        .collect()
}

// ---------------------------------------------------------------------------
// Tags

/// The nine tag categories, in output order.
pub const TAG_CATEGORIES: [&str; 9] = [
    "HAZARD",
    "URGENCY",
    "SERVICE_TYPE",
    "REVENUE",
    "RECOVERY",
    "LOGISTICS",
    "CUSTOMER",
    "NON_CUSTOMER",
    "CONTEXT",
];

type TagMap = &'static [(&'static str, &'static [&'static str])];

const HAZARD_TAGS: TagMap = &[
    ("GAS_LEAK", &["gas", "rotten egg", "sulfur", "hissing"]),
    ("CO_EVENT", &["co detector", "carbon monoxide", "co alarm"]),
    (
        "ELECTRICAL_FIRE",
        &["burning", "smoke", "sparks", "breaker"],
    ),
    (
        "ACTIVE_FLOODING",
        &["flooding", "water pouring", "burst pipe"],
    ),
    ("REFRIGERANT_LEAK", &["chemical smell", "frozen coil"]),
    ("HEALTH_RISK", &["no heat", "no ac", "freezing"]),
];

const SERVICE_TYPE_TAGS: TagMap = &[
    (
        "REPAIR_AC",
        &[
            "ac",
            "air conditioning",
            "cooling",
            "not cooling",
            "warm air",
        ],
    ),
    (
        "REPAIR_HEATING",
        &["heating", "furnace", "heat", "not heating", "no heat"],
    ),
    ("REPAIR_HEATPUMP", &["heat pump", "heatpump"]),
    ("REPAIR_THERMOSTAT", &["thermostat"]),
    ("REPAIR_DUCTWORK", &["duct", "ductwork", "vent"]),
    (
        "TUNEUP_AC",
        &["tune-up", "tuneup", "maintenance", "checkup"],
    ),
    (
        "INSTALL_REPLACEMENT",
        &["new system", "replacement", "replace", "install"],
    ),
    (
        "DIAGNOSTIC_NOISE",
        &["noise", "strange sound", "rattling", "buzzing"],
    ),
    ("DIAGNOSTIC_SMELL", &["smell", "odor"]),
    ("SECONDOPINION", &["second opinion"]),
    ("WARRANTY_CLAIM", &["warranty"]),
];

const RECOVERY_TAGS: TagMap = &[
    (
        "CALLBACK_RISK",
        &["waiting", "no one called back", "still waiting"],
    ),
    (
        "COMPLAINT_PRICE",
        &[
            "too expensive",
            "overcharged",
            "overcharging",
            "price gouging",
            "ripped off",
            "rip off",
            "rip-off",
        ],
    ),
    ("COMPLAINT_SERVICE", &["poor service", "rude"]),
    (
        "COMPLAINT_NOFIX",
        &["still broken", "didn't fix", "not fixed"],
    ),
    ("ESCALATION_REQ", &["escalate", "file a complaint"]),
    ("COMPETITOR_MENTION", &["cheaper quote", "another company"]),
];

const LOGISTICS_TAGS: TagMap = &[
    ("GATE_CODE", &["gate", "gated"]),
    ("PET_SECURE", &["dog", "cat", "pet"]),
    ("LANDLORD_AUTH", &["landlord", "owner permission"]),
    ("TENANT_COORD", &["tenant", "renter"]),
];

const NON_CUSTOMER_TAGS: TagMap = &[
    ("JOB_APPLICANT", &["hiring", "job", "apply", "position"]),
    (
        "VENDOR_SALES",
        &["vendor", "supplier", "selling", "partnership"],
    ),
    ("WRONG_NUMBER", &["wrong number"]),
    ("SPAM_TELEMARKETING", &["telemarketing", "spam"]),
    ("PARTS_SUPPLIER", &["parts supplier", "supply house"]),
    ("REALTOR_INQUIRY", &["realtor", "real estate"]),
];

const CONTEXT_TAGS: TagMap = &[
    (
        "ELDERLY_OCCUPANT",
        &["elderly", "senior", "grandma", "grandmother"],
    ),
    ("INFANT_NEWBORN", &["baby", "infant", "newborn"]),
    ("MEDICAL_NEED", &["medical", "oxygen", "health condition"]),
];

const R22_KEYWORDS: &[&str] = &["r-22", "r22", "freon"];

fn tags_from(lower: &str, map: TagMap) -> Vec<String> {
    map.iter()
        .filter(|(_, kws)| kws.iter().any(|k| contains_word(lower, k)))
        .map(|(tag, _)| tag.to_string())
        .collect()
}

/// RECOVERY tags: the keyword map, plus a price complaint ("the price is
/// way too high") and a request to speak to a manager or supervisor, read
/// clause by clause. The word "price" alone (a question, a surname) and a
/// job title ("I'm the office manager") tag nothing.
fn recovery_tags(lower: &str) -> Vec<String> {
    let clauses: Vec<Vec<&str>> = lower
        .split(['.', '!', '?', ';', ',', '\n'])
        .map(|c| {
            c.split(|ch: char| !(crate::keywords::is_word_char(ch) || ch == '\'' || ch == '-'))
                .filter(|w| !w.is_empty())
                .collect()
        })
        .collect();
    let price = clauses.iter().any(|c| price_complaint(c));
    let escalation = clauses.iter().any(|c| escalation_request(c));
    RECOVERY_TAGS
        .iter()
        .filter(|(tag, kws)| {
            kws.iter().any(|k| contains_word(lower, k))
                || (*tag == "COMPLAINT_PRICE" && price)
                || (*tag == "ESCALATION_REQ" && escalation)
        })
        .map(|(tag, _)| tag.to_string())
        .collect()
}

/// "price"/"prices"/"charge" with a complaint word in the same clause.
fn price_complaint(words: &[&str]) -> bool {
    const PRICE: &[&str] = &[
        "price", "prices", "pricing", "charge", "charges", "bill", "fee",
    ];
    const COMPLAINT: &[&str] = &[
        "too",
        "high",
        "crazy",
        "ridiculous",
        "outrageous",
        "gouging",
        "insane",
        "steep",
        "unfair",
        "jacked",
        "raised",
        "doubled",
        "absurd",
        "robbery",
        "overpriced",
        "expensive",
        "wrong",
    ];
    words.iter().any(|w| PRICE.contains(w)) && words.iter().any(|w| COMPLAINT.contains(w))
}

/// A request to speak to a manager or supervisor ("can I talk to your
/// manager", "get me a supervisor", "I want the person in charge"), not a
/// job title ("I'm the facilities manager", "our office manager will let
/// you in").
fn escalation_request(words: &[&str]) -> bool {
    const TITLE: &[&str] = &["manager", "supervisor", "boss", "charge"];
    const ASK: &[&str] = &[
        "speak", "talk", "get", "transfer", "connect", "put", "see", "want", "need", "reach",
        "let", "give", "through",
    ];
    const JOB: &[&str] = &[
        "office",
        "facilities",
        "facility",
        "property",
        "building",
        "general",
        "site",
        "maintenance",
        "store",
        "account",
        "project",
        "operations",
        "leasing",
        "community",
        "regional",
        "branch",
        "hr",
        "plant",
        "restaurant",
        "shop",
        "apartment",
        "complex",
        "assistant",
    ];
    const SELF: &[&str] = &["i'm", "im", "am", "as", "we're", "she's", "he's"];
    words.iter().enumerate().any(|(i, w)| {
        if !TITLE.contains(w) {
            return false;
        }
        // "in charge" only as "someone/person in charge".
        if *w == "charge" && !(i >= 2 && words[i - 1] == "in") {
            return false;
        }
        let before = &words[i.saturating_sub(6)..i];
        if i > 0 && JOB.contains(&words[i - 1]) {
            return false;
        }
        if before.iter().any(|b| SELF.contains(b)) && !before.contains(&"your") {
            return false;
        }
        before.iter().any(|b| ASK.contains(b)) || i > 0 && words[i - 1] == "your"
    })
}

/// The caller's words of a transcript: lines of the agent or a tool are
/// dropped ("Agent: …", "[Tool: …]"), a "Caller:" prefix is removed, and
/// the caller's own name ("my name is Tom Price") is blanked, so that a
/// surname never reads as a keyword.
fn caller_text(transcript_text: &str, customer_name: &str) -> String {
    let mut out = String::with_capacity(transcript_text.len());
    let mut names: Vec<String> = Vec::new();
    let full = customer_name.trim().to_lowercase();
    if !full.is_empty() {
        names.push(full);
    }
    let mut asked_name = false;
    for line in transcript_text.lines() {
        let t = line.trim();
        let low = t.to_lowercase();
        let speaker = low.split_once(':').map(|(who, _)| who.trim());
        let (agent, text) = match speaker {
            Some("agent" | "assistant" | "ai" | "bot" | "calllock") => (true, ""),
            Some("caller" | "user" | "customer") => {
                (false, t.split_once(':').map_or("", |(_, r)| r))
            }
            _ if low.starts_with("[tool") => (true, ""),
            _ => (false, t),
        };
        if agent {
            asked_name = low.contains("name");
            continue;
        }
        let mut line_low = text.to_lowercase();
        let mut said: Vec<String> = names.clone();
        let mut words: Vec<String> = Vec::new();
        if let Some(n) = crate::extract::name_in(text, asked_name) {
            // Each word of the name, where it is written as a name
            // ("Price. Ellen Price."), in the line that gives it.
            words.extend(n.split(' ').filter(|w| w.len() > 1).map(String::from));
            said.push(n.to_lowercase());
        }
        said.sort_by_key(|n| std::cmp::Reverse(n.len()));
        for n in &said {
            line_low = blank_word(&line_low, n);
        }
        if line_low.len() == text.len() {
            for w in words.iter().filter(|w| w.is_ascii()) {
                let marks = blank_word(text, w);
                // Blank in the lower-cased line what was blanked as written.
                let mut bytes = line_low.into_bytes();
                for (k, (a, b)) in text.bytes().zip(marks.bytes()).enumerate() {
                    if a != b {
                        bytes[k] = b' ';
                    }
                }
                line_low = String::from_utf8(bytes).unwrap_or_default();
            }
        }
        asked_name = false;
        out.push_str(&line_low);
        out.push('\n');
    }
    out
}

/// `hay` with every whole-word occurrence of `word` replaced by spaces.
fn blank_word(hay: &str, word: &str) -> String {
    if word.is_empty() {
        return hay.to_string();
    }
    let mut out = String::with_capacity(hay.len());
    let mut rest = hay;
    while let Some(at) = rest.find(word) {
        let end = at + word.len();
        let before = rest[..at]
            .chars()
            .next_back()
            .is_some_and(crate::keywords::is_word_char);
        let after = rest[end..]
            .chars()
            .next()
            .is_some_and(crate::keywords::is_word_char);
        out.push_str(&rest[..at]);
        if before || after {
            out.push_str(&rest[at..end]);
        } else {
            out.push_str(&" ".repeat(word.len()));
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn urgency_tag(tier: &str) -> &'static str {
    match tier {
        "emergency" => "EMERGENCY_SAMEDAY",
        "urgent" => "URGENT_24HR",
        "high" => "PRIORITY_48HR",
        "low" => "FLEXIBLE",
        _ => "STANDARD",
    }
}

/// The nine-category tag map (SPEC §7.6, D-15). Matching text is the
/// lower-cased caller's words of `transcript_text` (agent lines dropped, the
/// caller's own name blanked: see [`caller_text`]) + " " +
/// `problem_description`; RECOVERY's price complaint and escalation request
/// are read clause by clause (see [`recovery_tags`]); every category
/// is present (possibly `[]`) and tags keep their declared order. HAZARD is
/// only evaluated for a `safety_exit` call (defaulting to `HEALTH_RISK`),
/// which also replaces URGENCY by `CRITICAL_EVACUATE`.
pub fn classify_tags(state: State, session: &crate::Session, transcript_text: &str) -> Value {
    let lower = format!(
        "{} {}",
        caller_text(transcript_text, &session.customer_name),
        blank_word(
            &session.problem_description.to_lowercase(),
            &session.customer_name.trim().to_lowercase()
        )
    );
    let safety = state == State::SafetyExit;

    let hazard = if safety {
        let mut h = tags_from(&lower, HAZARD_TAGS);
        if h.is_empty() {
            h.push("HEALTH_RISK".into());
        }
        h
    } else {
        Vec::new()
    };
    let urgency = if safety {
        vec!["CRITICAL_EVACUATE".to_string()]
    } else {
        vec![urgency_tag(&session.urgency_tier).to_string()]
    };
    let mut revenue = Vec::new();
    if detect_high_ticket(&session.problem_description) {
        revenue.push("HOT_LEAD".to_string());
    }
    if R22_KEYWORDS.iter().any(|k| contains_word(&lower, k)) {
        revenue.push("R22_RETROFIT".to_string());
    }
    let customer = if session.caller_known {
        "EXISTING_CUSTOMER"
    } else {
        "NEW_CUSTOMER"
    };

    json!({
        "HAZARD": hazard,
        "URGENCY": urgency,
        "SERVICE_TYPE": tags_from(&lower, SERVICE_TYPE_TAGS),
        "REVENUE": revenue,
        "RECOVERY": recovery_tags(&lower),
        "LOGISTICS": tags_from(&lower, LOGISTICS_TAGS),
        "CUSTOMER": [customer],
        "NON_CUSTOMER": tags_from(&lower, NON_CUSTOMER_TAGS),
        "CONTEXT": tags_from(&lower, CONTEXT_TAGS),
    })
}

/// The string tags of one category (missing or malformed → empty).
fn category(tags: &Value, name: &str) -> Vec<String> {
    match tags.get(name) {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Priority colour and reason (SPEC §7.6; `booking_status` is ignored):
/// HAZARD → red, RECOVERY → red, NON_CUSTOMER → gray, REVENUE → green,
/// otherwise blue.
pub fn detect_priority(tags: &Value, booking_status: &str) -> (String, String) {
    let _ = booking_status;
    let rules: [(&str, &str, &str); 4] = [
        ("HAZARD", "red", "Safety hazard"),
        ("RECOVERY", "red", "Customer concern"),
        ("NON_CUSTOMER", "gray", "Non-customer"),
        ("REVENUE", "green", "Revenue opportunity"),
    ];
    for (cat, color, label) in rules {
        let list = category(tags, cat);
        if !list.is_empty() {
            return (color.to_string(), format!("{label}: {}", list.join(", ")));
        }
    }
    (
        "blue".to_string(),
        "Standard residential service request".to_string(),
    )
}

const REPLACEMENT_SIGNALS: &[&str] = &[
    "new system",
    "new unit",
    "new ac",
    "replacement",
    "replace",
    "install",
    "installation",
    "upgrade",
];
const MAJOR_REPAIR_SIGNALS: &[&str] = &[
    "compressor",
    "heat exchanger",
    "evaporator",
    "condenser",
    "coil",
];
const MINOR_SIGNALS: &[&str] = &[
    "thermostat",
    "filter",
    "noise",
    "strange sound",
    "weird noise",
];
const MAINTENANCE_SIGNALS: &[&str] = &["tune-up", "tuneup", "maintenance", "cleaning", "checkup"];

fn tier(tier: &str, label: &str, signals: Vec<&str>, confidence: &str) -> Value {
    json!({"tier": tier, "tier_label": label, "signals": signals, "confidence": confidence})
}

/// Revenue tier `{tier, tier_label, signals, confidence}` from the problem
/// description (whole-word, signals in declared order) and the REVENUE tags
/// (SPEC §7.6, D-15).
pub fn estimate_revenue_tier(problem_description: &str, revenue_tags: &[String]) -> Value {
    if revenue_tags.iter().any(|t| t == "R22_RETROFIT") {
        return tier("replacement", "$$$$", vec!["R-22/Freon system"], "high");
    }
    let lower = problem_description.to_lowercase();
    let replacement = matches_in_order(&lower, REPLACEMENT_SIGNALS);
    if !replacement.is_empty() {
        let conf = if replacement.len() >= 2 {
            "high"
        } else {
            "medium"
        };
        return tier("replacement", "$$$$", replacement, conf);
    }
    let major = matches_in_order(&lower, MAJOR_REPAIR_SIGNALS);
    if !major.is_empty() {
        return tier("major_repair", "$$$", major, "medium");
    }
    let minor = matches_in_order(&lower, MINOR_SIGNALS);
    if !minor.is_empty() {
        return tier("minor", "$", minor, "medium");
    }
    let maintenance = matches_in_order(&lower, MAINTENANCE_SIGNALS);
    if !maintenance.is_empty() {
        return tier("minor", "$", maintenance, "medium");
    }
    if !problem_description.trim().is_empty() {
        return tier(
            "standard_repair",
            "$$",
            vec!["general repair request"],
            "low",
        );
    }
    tier("diagnostic", "$$?", Vec::new(), "low")
}

// ---------------------------------------------------------------------------
// LLM classification

/// The `call_type` values the classifier may return (SPEC §7.7).
pub use crate::keywords::CALL_TYPE_ENUM as CALL_TYPES;

/// Maximum transcript characters included in the classification prompt.
pub const PROMPT_TRANSCRIPT_MAX_CHARS: usize = 3000;

/// First `max` characters of `s` (char boundary safe).
fn first_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((idx, _)) => s.get(..idx).unwrap_or(s),
        None => s,
    }
}

/// The user prompt for the post-call classification LLM (JSON answer with
/// ai_summary, card_headline, card_summary, call_type, call_subtype,
/// sentiment_score). The transcript is cut to 3000 characters.
pub fn classification_prompt(
    customer_name: &str,
    state: State,
    booking_status: &str,
    urgency_tier: &str,
    transcript_text: &str,
) -> String {
    let name = if customer_name.trim().is_empty() {
        "Unknown"
    } else {
        customer_name
    };
    let transcript = first_chars(transcript_text, PROMPT_TRANSCRIPT_MAX_CHARS);
    format!(
        "You review finished phone calls to an HVAC service company and file them for the office.\n\
         \n\
         Call facts:\n\
         - Caller name: {name}\n\
         - Call ended in state: {state}\n\
         - Booking status: {booking_status}\n\
         - Urgency: {urgency_tier}\n\
         \n\
         Transcript:\n\
         {transcript}\n\
         \n\
         Answer with one JSON object and nothing else, with these keys:\n\
         - \"ai_summary\": what happened on the call, in 2-3 sentences.\n\
         - \"card_headline\": a 5-8 word headline for the job card.\n\
         - \"card_summary\": 2-3 sentences a technician needs before arriving.\n\
         - \"call_type\": exactly one of {types}.\n\
         - \"call_subtype\": a short code such as REPAIR_AC, or null.\n\
         - \"sentiment_score\": the caller's mood as an integer from 1 (very unhappy) to 5 (very happy).",
        types = CALL_TYPES.join(", ")
    )
}

/// Python truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().map(|f| f != 0.0).unwrap_or(true),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Python-ish `str(value)`.
fn stringify(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => crate::transcript::python_float_repr(f),
            _ => n.to_string(),
        },
        other => crate::transcript::python_json_dumps(other),
    }
}

/// The JSON object in an LLM answer: the whole text, or the body of a
/// Markdown code fence around it.
fn parse_object(content: &str) -> Option<Map<String, Value>> {
    let trimmed = content.trim();
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(trimmed) {
        return Some(m);
    }
    let inner = trimmed.strip_prefix("```")?;
    let inner = inner.strip_suffix("```")?;
    let inner = inner
        .strip_prefix("json")
        .or_else(|| inner.strip_prefix("JSON"))
        .unwrap_or(inner);
    match serde_json::from_str::<Value>(inner.trim()) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// Validate and clamp the classification LLM's answer (SPEC §7.7):
/// ai_summary / card_summary ≤ 500 chars and card_headline ≤ 100 chars (only
/// when truthy, stringified); call_type only if in [`CALL_TYPES`];
/// call_subtype stringified only if truthy; sentiment_score only if a JSON
/// number (booleans and numeric strings are dropped), truncated toward zero
/// and clamped to 1..=5. Unparseable input → empty map.
pub fn parse_classification(llm_content: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(data) = parse_object(llm_content) else {
        return out;
    };
    for (key, max) in [
        ("ai_summary", 500usize),
        ("card_headline", 100),
        ("card_summary", 500),
    ] {
        if let Some(v) = data.get(key).filter(|v| truthy(v)) {
            out.insert(key.into(), Value::from(first_chars(&stringify(v), max)));
        }
    }
    if let Some(Value::String(t)) = data.get("call_type") {
        if CALL_TYPES.contains(&t.as_str()) {
            out.insert("call_type".into(), Value::from(t.clone()));
        }
    }
    if let Some(v) = data.get("call_subtype").filter(|v| truthy(v)) {
        out.insert("call_subtype".into(), Value::from(stringify(v)));
    }
    if let Some(Value::Number(n)) = data.get("sentiment_score") {
        let score = match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.clamp(1, 5),
            (None, Some(f)) if f.is_finite() => (f.trunc().clamp(1.0, 5.0)) as i64,
            _ => {
                // u64 beyond i64 range (or non-finite): above the maximum.
                5
            }
        };
        out.insert("sentiment_score".into(), Value::from(score));
    }
    out
}

/// The post-call LLM classification outcome (SPEC §7.7): `{}` when no LLM
/// is configured, the transcript is blank, or the LLM call failed
/// (`llm_content` = `None`); otherwise the validated fields of its answer.
pub fn classification_from_llm(
    llm_configured: bool,
    transcript_text: &str,
    llm_content: Option<&str>,
) -> Map<String, Value> {
    if !llm_configured || transcript_text.trim().is_empty() {
        return Map::new();
    }
    llm_content.map(parse_classification).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Session;

    fn sess(v: Value) -> Session {
        serde_json::from_value(v).unwrap()
    }

    fn subset(actual: &Value, expected: &Value) {
        for (k, v) in expected.as_object().unwrap() {
            assert_eq!(actual.get(k), Some(v), "key {k} in {actual}");
        }
    }

    fn tags(state: State, session: Value, text: &str) -> Value {
        classify_tags(state, &sess(session), text)
    }

    #[test]
    fn whole_word_matcher() {
        assert!(contains_word("my ac is out", "ac"));
        assert!(!contains_word("please call me back", "ac"));
        assert!(!contains_word("vacant", "ac"));
        assert!(contains_word("a tune-up please", "tune-up"));
        assert!(contains_word("ac.", "ac"));
        assert!(!contains_word("installed", "install"));
        assert!(contains_word("é ac é", "ac"));
        assert!(!contains_word("éacé", "ac"));
        assert!(!contains_word("", "ac"));
        assert!(detect_high_ticket("I want a new AC system"));
        assert!(!detect_high_ticket("new unit is broken"));
    }

    #[test]
    fn cls_tags_hazards() {
        let t = tags(State::SafetyExit, json!({}), "I smell gas in my house");
        subset(
            &t,
            &json!({"HAZARD": ["GAS_LEAK"], "URGENCY": ["CRITICAL_EVACUATE"]}),
        );
        let t = tags(State::SafetyExit, json!({}), "my CO detector is going off");
        subset(&t, &json!({"HAZARD": ["CO_EVENT"]}));
        let t = tags(State::SafetyExit, json!({}), "please help");
        subset(&t, &json!({"HAZARD": ["HEALTH_RISK"]}));
        let t = tags(State::Callback, json!({}), "I smell gas");
        subset(&t, &json!({"HAZARD": [], "URGENCY": ["STANDARD"]}));
    }

    #[test]
    fn cls_tags_nine_categories() {
        assert_eq!(
            tags(State::Welcome, json!({}), ""),
            json!({"HAZARD": [], "URGENCY": ["STANDARD"], "SERVICE_TYPE": [], "REVENUE": [], "RECOVERY": [],
                "LOGISTICS": [], "CUSTOMER": ["NEW_CUSTOMER"], "NON_CUSTOMER": [], "CONTEXT": []})
        );
    }

    #[test]
    fn cls_tags_simple_categories() {
        subset(
            &tags(State::Welcome, json!({"urgency_tier": "emergency"}), ""),
            &json!({"URGENCY": ["EMERGENCY_SAMEDAY"]}),
        );
        subset(
            &tags(
                State::Welcome,
                json!({"problem_description": "I want a new AC system"}),
                "",
            ),
            &json!({"REVENUE": ["HOT_LEAD"]}),
        );
        subset(
            &tags(State::Welcome, json!({"caller_known": true}), ""),
            &json!({"CUSTOMER": ["EXISTING_CUSTOMER"]}),
        );
        subset(
            &tags(
                State::Welcome,
                json!({"problem_description": "my AC is broken and not cooling"}),
                "",
            ),
            &json!({"SERVICE_TYPE": ["REPAIR_AC"]}),
        );
        subset(
            &tags(
                State::Confirm,
                json!({"booking_confirmed": true, "problem_description": "heating not working"}),
                "",
            ),
            &json!({"SERVICE_TYPE": ["REPAIR_HEATING"]}),
        );
        subset(
            &tags(
                State::Confirm,
                json!({"problem_description": "needs freon"}),
                "",
            ),
            &json!({"REVENUE": ["R22_RETROFIT"]}),
        );
    }

    #[test]
    fn cls_tags_d15_whole_words() {
        subset(
            &tags(State::Callback, json!({}), "Caller: please call me back"),
            &json!({"SERVICE_TYPE": []}),
        );
        subset(
            &tags(
                State::Callback,
                json!({}),
                "Caller: I called about the location of the vacant house",
            ),
            &json!({"SERVICE_TYPE": [], "LOGISTICS": []}),
        );
    }

    #[test]
    fn cls_tags_multi_category() {
        subset(
            &tags(State::Confirm, json!({}), "Caller: still waiting, no one called back. The dog is out, gate code 1234, my grandma has a medical condition"),
            &json!({"RECOVERY": ["CALLBACK_RISK"], "LOGISTICS": ["GATE_CODE", "PET_SECURE"], "CONTEXT": ["ELDERLY_OCCUPANT", "MEDICAL_NEED"]}),
        );
    }

    fn recovery(session: Value, text: &str) -> Value {
        tags(State::Confirm, session, text)["RECOVERY"].clone()
    }

    #[test]
    fn a_name_never_tags_a_price_complaint() {
        for (session, text) in [
            (
                json!({"customer_name": "Tom Price"}),
                "Caller: my name is Tom Price",
            ),
            (json!({}), "Caller: my name is Tom Price and my AC is out"),
            (
                json!({}),
                "Agent: Can I get your name?\nCaller: Price. Ellen Price.",
            ),
            (json!({}), "Caller: it's under Price"),
            (
                json!({"customer_name": "Ellen Price"}),
                "Caller: Ellen Price, P-R-I-C-E",
            ),
            (
                json!({}),
                "Caller: this is Bill Price from Acme Property Management",
            ),
            (json!({}), "Caller: what's the price of a tune-up?"),
            (json!({}), "Caller: can you give me a price for a new unit"),
            (
                json!({}),
                "Agent: the price is 89 dollars, too high for some\nCaller: ok",
            ),
        ] {
            assert_eq!(recovery(session, text), json!([]), "{text:?}");
        }
        for text in [
            "Caller: the price is way too high",
            "Caller: your prices are ridiculous",
            "Caller: I was overcharged last time",
            "Caller: my name is Tom Price and that price was outrageous",
            "Caller: it's too expensive",
        ] {
            assert_eq!(
                recovery(json!({"customer_name": "Tom Price"}), text),
                json!(["COMPLAINT_PRICE"]),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_job_title_never_tags_escalation() {
        for text in [
            "Caller: I'm the facilities manager for the building",
            "Caller: hi, this is Dana, office manager at Lakeline Pediatrics",
            "Caller: our property manager said to call you",
            "Caller: I am the manager here",
            "Caller: I work as a store manager, the AC is out",
            "Caller: my supervisor asked me to call",
            "Caller: speak to you soon",
            "Agent: I can have a manager call you\nCaller: ok thanks",
            "Caller: I need to speak to a technician",
        ] {
            assert_eq!(recovery(json!({}), text), json!([]), "{text:?}");
        }
        for text in [
            "Caller: I want to speak to a manager",
            "Caller: can I talk to your supervisor",
            "Caller: get me your manager right now",
            "Caller: put me through to the person in charge",
            "Caller: I'm the office manager and I want to speak to a supervisor",
            "Caller: let me talk to your boss",
            "Caller: I want to escalate this",
        ] {
            assert_eq!(
                recovery(json!({}), text),
                json!(["ESCALATION_REQ"]),
                "{text:?}"
            );
        }
    }

    #[test]
    fn only_the_callers_lines_are_tagged() {
        let t = tags(
            State::Confirm,
            json!({}),
            "Agent: any gas smell, burning smell or smoke? Is a dog or a gate in the way?\nCaller: no, nothing like that",
        );
        subset(&t, &json!({"LOGISTICS": [], "SERVICE_TYPE": []}));
        let t = tags(
            State::Confirm,
            json!({}),
            "Agent: okay\nCaller: the gate code is 1234 and the dog is out",
        );
        subset(&t, &json!({"LOGISTICS": ["GATE_CODE", "PET_SECURE"]}));
    }

    fn prio(t: Value) -> (String, String) {
        detect_priority(&t, "confirmed")
    }

    #[test]
    fn cls_priority() {
        let p = |c: &str, r: &str| (c.to_string(), r.to_string());
        assert_eq!(
            prio(
                json!({"HAZARD": ["GAS_LEAK"], "RECOVERY": [], "REVENUE": [], "NON_CUSTOMER": []})
            ),
            p("red", "Safety hazard: GAS_LEAK")
        );
        assert_eq!(
            prio(
                json!({"HAZARD": ["GAS_LEAK", "CO_EVENT"], "RECOVERY": ["CALLBACK_RISK"], "REVENUE": ["HOT_LEAD"], "NON_CUSTOMER": ["SPAM_TELEMARKETING"]})
            ),
            p("red", "Safety hazard: GAS_LEAK, CO_EVENT")
        );
        assert_eq!(
            prio(
                json!({"HAZARD": [], "RECOVERY": ["CALLBACK_RISK", "ESCALATION_REQ"], "REVENUE": [], "NON_CUSTOMER": ["WRONG_NUMBER"]})
            ),
            p("red", "Customer concern: CALLBACK_RISK, ESCALATION_REQ")
        );
        assert_eq!(
            prio(json!({"HAZARD": [], "RECOVERY": [], "REVENUE": [], "NON_CUSTOMER": ["VENDOR_SALES"]})).0,
            "gray"
        );
        assert_eq!(
            prio(json!({"REVENUE": ["HOT_LEAD", "R22_RETROFIT"]})),
            p("green", "Revenue opportunity: HOT_LEAD, R22_RETROFIT")
        );
        assert_eq!(
            prio(json!({})),
            p("blue", "Standard residential service request")
        );
        assert_eq!(prio(json!(null)).0, "blue");
        assert_eq!(prio(json!({"HAZARD": "GAS"})).0, "blue");
    }

    fn rev(text: &str, tags: &[&str]) -> Value {
        let tags: Vec<String> = tags.iter().map(|s| s.to_string()).collect();
        estimate_revenue_tier(text, &tags)
    }

    #[test]
    fn cls_revenue() {
        subset(
            &rev("I want a new AC system installed", &[]),
            &json!({"tier": "replacement", "tier_label": "$$$$"}),
        );
        subset(
            &rev("compressor is dead", &[]),
            &json!({"tier": "major_repair", "tier_label": "$$$"}),
        );
        subset(
            &rev("AC is broken not cooling", &[]),
            &json!({"tier": "standard_repair", "tier_label": "$$"}),
        );
        subset(
            &rev("", &[]),
            &json!({"tier": "diagnostic", "tier_label": "$$?"}),
        );
        subset(
            &rev("compressor failed", &[]),
            &json!({"signals": ["compressor"]}),
        );
        assert_eq!(
            rev("new system replacement", &[]),
            json!({"tier": "replacement", "tier_label": "$$$$", "signals": ["new system", "replacement"], "confidence": "high"})
        );
        assert_eq!(
            rev("please install it", &[]),
            json!({"tier": "replacement", "tier_label": "$$$$", "signals": ["install"], "confidence": "medium"})
        );
        assert_eq!(
            rev("frozen coil and bad condenser", &[]),
            json!({"tier": "major_repair", "tier_label": "$$$", "signals": ["condenser", "coil"], "confidence": "medium"})
        );
        assert_eq!(
            rev("weird noise from the unit", &[]),
            json!({"tier": "minor", "tier_label": "$", "signals": ["noise", "weird noise"], "confidence": "medium"})
        );
        assert_eq!(
            rev("anything", &["R22_RETROFIT"]),
            json!({"tier": "replacement", "tier_label": "$$$$", "signals": ["R-22/Freon system"], "confidence": "high"})
        );
        assert_eq!(
            rev("the filter is dirty and the thermostat is blank", &[]),
            json!({"tier": "minor", "tier_label": "$", "signals": ["thermostat", "filter"], "confidence": "medium"})
        );
        assert_eq!(
            rev("the condenser coil and the compressor", &[]),
            json!({"tier": "major_repair", "tier_label": "$$$", "signals": ["compressor", "condenser", "coil"], "confidence": "medium"})
        );
        assert_eq!(
            rev("upgrade and install a new system", &[]),
            json!({"tier": "replacement", "tier_label": "$$$$", "signals": ["new system", "install", "upgrade"], "confidence": "high"})
        );
        assert_eq!(
            rev("my AC was installed last year and is broken", &[]),
            json!({"tier": "standard_repair", "tier_label": "$$", "signals": ["general repair request"], "confidence": "low"})
        );
        subset(
            &rev("annual tune-up", &[]),
            &json!({"tier": "minor", "signals": ["tune-up"]}),
        );
        subset(&rev("   ", &[]), &json!({"tier": "diagnostic"}));
    }

    #[test]
    fn cls_llm_returns_fields() {
        let out = parse_classification(
            r#"{"ai_summary": "Customer called about AC not cooling.", "card_headline": "AC Not Blowing Cold", "card_summary": "Jonas called about AC unit not blowing cold air.", "call_type": "SERVICE", "call_subtype": "REPAIR_AC", "sentiment_score": 4}"#,
        );
        assert_eq!(
            Value::Object(out),
            json!({"ai_summary": "Customer called about AC not cooling.", "card_headline": "AC Not Blowing Cold",
                "card_summary": "Jonas called about AC unit not blowing cold air.", "call_type": "SERVICE",
                "call_subtype": "REPAIR_AC", "sentiment_score": 4})
        );
    }

    #[test]
    fn cls_llm_clamp_high_and_invalid() {
        let out = parse_classification(
            r#"{"ai_summary": "Test.", "card_headline": "Test", "card_summary": "Test.", "call_type": "SERVICE", "call_subtype": null, "sentiment_score": 7}"#,
        );
        assert_eq!(
            Value::Object(out),
            json!({"ai_summary": "Test.", "card_headline": "Test", "card_summary": "Test.", "call_type": "SERVICE", "sentiment_score": 5})
        );
        assert!(parse_classification("not json").is_empty());
        assert!(parse_classification("[1, 2]").is_empty());
        assert!(parse_classification("").is_empty());
        assert!(parse_classification("{}").is_empty());
    }

    #[test]
    fn cls_llm_clamping_rules() {
        let content = json!({
            "ai_summary": "x".repeat(600),
            "card_headline": "h".repeat(150),
            "card_summary": "x".repeat(600),
            "call_type": "REPAIR",
            "call_subtype": 12,
            "sentiment_score": 0.4,
        })
        .to_string();
        let out = parse_classification(&content);
        assert_eq!(
            Value::Object(out),
            json!({"ai_summary": "x".repeat(500), "card_headline": "h".repeat(100),
                "card_summary": "x".repeat(500), "call_subtype": "12", "sentiment_score": 1})
        );
    }

    #[test]
    fn llm_sentiment_edge_cases() {
        let s = |raw: &str| parse_classification(&format!("{{\"sentiment_score\": {raw}}}"));
        assert_eq!(s("\"4\"").get("sentiment_score"), None);
        assert_eq!(s("true").get("sentiment_score"), None);
        assert_eq!(s("-3.7")["sentiment_score"], json!(1));
        assert_eq!(s("4.9")["sentiment_score"], json!(4));
        assert_eq!(s("1e300")["sentiment_score"], json!(5));
        assert_eq!(s("18446744073709551615")["sentiment_score"], json!(5));
        let fenced = "```json\n{\"call_type\": \"ESTIMATE\"}\n```";
        assert_eq!(parse_classification(fenced)["call_type"], json!("ESTIMATE"));
        let multibyte = json!({"card_headline": "é".repeat(150)}).to_string();
        assert_eq!(
            parse_classification(&multibyte)["card_headline"],
            json!("é".repeat(100))
        );
    }

    #[test]
    fn prompt_truncates_on_char_boundary() {
        let transcript = "é".repeat(3500);
        let p = classification_prompt("", State::Confirm, "confirmed", "routine", &transcript);
        assert!(p.contains("Unknown"));
        assert!(p.contains("confirm"));
        assert!(p.contains(&"é".repeat(3000)));
        assert!(!p.contains(&"é".repeat(3001)));
        for t in CALL_TYPES {
            assert!(p.contains(t));
        }
    }
}
