//! Off-script questions a caller asks in the middle of a step — the price,
//! whether the agent is a robot, brands, business hours — and the short
//! answers from the business profile.
//!
//! A question is answered and the call goes back to the step in progress:
//! it is never read as the step's answer (a price question is no billing
//! call, a question at the read-back is no correction). The LLM has the
//! same facts in its system prompt; the offline scripted responder answers
//! with [`answer`].

use crate::keywords::LowerText;
use crate::profile::BusinessProfile;

/// What the caller asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Question {
    /// "How much is a visit?", "what do you charge?"
    Price,
    /// "Are you a robot?", "am I talking to a real person?"
    Robot,
    /// "Do you service Carrier units?", "do you work on all brands?"
    Brands,
    /// "What are your hours?", "are you open on Saturday?"
    Hours,
}

const PRICE: &[&str] = &[
    "how much",
    "price",
    "prices",
    "pricing",
    "cost",
    "costs",
    "what do you charge",
    "do you charge",
    "what's the charge",
    "fee",
    "fees",
    "rates",
];
const ROBOT: &[&str] = &[
    "robot",
    "a bot",
    "chatbot",
    "are you real",
    "real person",
    "a person",
    "a human",
    "human being",
    "an ai",
    "a machine",
    "automated",
    "recording",
];
const BRANDS: &[&str] = &[
    "brand",
    "brands",
    "carrier",
    "trane",
    "lennox",
    "rheem",
    "ruud",
    "goodman",
    "york",
    "bryant",
    "daikin",
    "amana",
    "american standard",
    "mitsubishi",
    "fujitsu",
    "heil",
    "payne",
    "coleman",
    "frigidaire",
];
const HOURS: &[&str] = &[
    "your hours",
    "business hours",
    "what time do you",
    "when do you open",
    "when do you close",
    "are you open",
    "you guys open",
    "open on",
    "open today",
    "open tomorrow",
    "open on weekends",
    "work weekends",
];
/// Words that make a sentence a question without a question mark.
const ASKING: &[&str] = &[
    "how", "what", "what's", "when", "do", "does", "are", "am", "is", "can", "could", "will",
    "would",
];

/// The off-script question in `text`, if it is one (a question mark, or a
/// question word first).
pub fn off_script_question(text: &str) -> Option<Question> {
    let t = LowerText::new(text);
    let lower = t.as_str().trim();
    let first = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .find(|w| !w.is_empty())
        .unwrap_or("");
    let asking = lower.contains('?') || ASKING.contains(&first) || t.matches("i wonder");
    if !asking {
        return None;
    }
    if t.matches_any(ROBOT) {
        Some(Question::Robot)
    } else if t.matches_any(PRICE) {
        Some(Question::Price)
    } else if t.matches_any(HOURS) {
        Some(Question::Hours)
    } else if t.matches_any(BRANDS) {
        Some(Question::Brands)
    } else {
        None
    }
}

/// The short answer from the business profile.
pub fn answer(q: Question, p: &BusinessProfile) -> String {
    match q {
        Question::Price => format!(
            "A diagnostic visit is ${}, and that's credited toward the repair; the technician \
quotes any repair before starting.",
            p.diagnostic_price
        ),
        Question::Robot => format!(
            "I'm {}'s virtual receptionist — an automated assistant. I can book a technician or \
have someone from the team call you back.",
            p.company_name
        ),
        Question::Brands => "Yes — our technicians work on all major brands.".to_string(),
        Question::Hours => format!("We're open {}.", hours_said(p)),
    }
}

/// "every day from 9 AM to 6 PM", "Monday to Friday from 8 AM to 5 PM".
pub fn hours_said(p: &BusinessProfile) -> String {
    let clock = |h: u32| match h {
        0 | 24 => "midnight".to_string(),
        12 => "noon".to_string(),
        h if h < 12 => format!("{h} AM"),
        h => format!("{} PM", h - 12),
    };
    let days: Vec<String> = p
        .business_days
        .iter()
        .filter_map(|d| crate::profile::parse_weekday(d))
        .map(|d| d.to_string())
        .collect();
    let days = match days.len() {
        0 | 7 => "every day".to_string(),
        5 if !days.iter().any(|d| d == "Sat" || d == "Sun") => "Monday to Friday".to_string(),
        _ => {
            let full: Vec<&str> = days.iter().map(|d| full_day(d)).collect();
            full.join(", ")
        }
    };
    format!(
        "{days} from {} to {}",
        clock(p.open_hour),
        clock(p.close_hour)
    )
}

fn full_day(abbr: &str) -> &'static str {
    match abbr {
        "Mon" => "Monday",
        "Tue" => "Tuesday",
        "Wed" => "Wednesday",
        "Thu" => "Thursday",
        "Fri" => "Friday",
        "Sat" => "Saturday",
        _ => "Sunday",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_as_callers_ask_them() {
        use Question::*;
        for (said, want) in [
            ("how much do you charge for a service call?", Some(Price)),
            ("what's the price for a visit", Some(Price)),
            ("how much will this cost?", Some(Price)),
            ("are you a robot?", Some(Robot)),
            ("am I talking to a real person", Some(Robot)),
            ("is this an AI?", Some(Robot)),
            ("do you service Carrier units?", Some(Brands)),
            ("do you guys work on all brands", Some(Brands)),
            ("what are your hours?", Some(Hours)),
            ("are you open on Saturday?", Some(Hours)),
            // Statements are not questions.
            ("you charged me twice", None),
            ("I have a Carrier unit", None),
            ("my AC is broken", None),
            ("yes", None),
            ("", None),
        ] {
            assert_eq!(off_script_question(said), want, "{said:?}");
        }
    }

    #[test]
    fn answers_come_from_the_profile() {
        let p = BusinessProfile::default();
        assert!(answer(Question::Price, &p).contains("$89"));
        assert!(answer(Question::Robot, &p).contains("ACE Cooling"));
        assert_eq!(
            answer(Question::Hours, &p),
            "We're open every day from 9 AM to 6 PM."
        );
        let weekdays = BusinessProfile {
            business_days: ["mon", "tue", "wed", "thu", "fri"]
                .iter()
                .map(|d| d.to_string())
                .collect(),
            open_hour: 8,
            close_hour: 17,
            ..BusinessProfile::default()
        };
        assert_eq!(hours_said(&weekdays), "Monday to Friday from 8 AM to 5 PM");
    }
}
