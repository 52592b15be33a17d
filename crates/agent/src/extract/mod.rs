//! Background field extraction and its firewall (SPEC §5.8).
//!
//! After a processed utterance in `service_area`, `discovery`, `urgency` or
//! `pre_confirm` the engine asks a responder to pull the caller's details out
//! of the last ten caller lines, then [`apply_extraction`] fills the session:
//! empty fields only, name and address validated, and the ZIP code never
//! (it drives routing and belongs to the deterministic service-area step).
//!
//! Two extractors produce an [`ExtractedFields`]: the LLM (prompt from
//! [`extraction_messages`], answer read by [`parse_extraction`]) and the
//! deterministic [`heuristic_extract`] used offline by the scripted responder.
//!
//! The slot finders of one caller utterance — [`name_in`], [`address_in`],
//! [`problem_in`], [`house_number_correction`] (and
//! [`crate::validate::zip_in`]) — are what the understanding of each
//! utterance reads; [`heuristic_extract`] runs the same finders over the
//! caller's lines, so both paths agree. They are pure, total and cheap
//! (about a microsecond each for a sentence: no regex, one pass over the
//! words).

use crate::responder::ChatMessage;
use crate::session::{HistoryMessage, Session};
use crate::validate::{validate_address, validate_name};
use serde::{Deserialize, Serialize};

mod heuristic;
#[cfg(test)]
mod tests;

pub(crate) use heuristic::STREET_SUFFIXES;
pub use heuristic::{
    address_in, heuristic_extract, house_number_correction, name_in, problem_in, HeuristicExtractor,
};

/// The fields extraction may report ("" = not said).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractedFields {
    #[serde(default)]
    pub customer_name: String,
    #[serde(default)]
    pub problem_description: String,
    #[serde(default)]
    pub service_address: String,
    #[serde(default)]
    pub zip_code: String,
    #[serde(default)]
    pub preferred_time: String,
    #[serde(default)]
    pub problem_duration: String,
    #[serde(default)]
    pub equipment_type: String,
}

/// The seven keys of an extraction answer, in order.
pub const EXTRACTION_KEYS: [&str; 7] = [
    "customer_name",
    "problem_description",
    "service_address",
    "zip_code",
    "preferred_time",
    "problem_duration",
    "equipment_type",
];

impl ExtractedFields {
    fn fields(&self) -> [(&'static str, &String); 7] {
        [
            ("customer_name", &self.customer_name),
            ("problem_description", &self.problem_description),
            ("service_address", &self.service_address),
            ("zip_code", &self.zip_code),
            ("preferred_time", &self.preferred_time),
            ("problem_duration", &self.problem_duration),
            ("equipment_type", &self.equipment_type),
        ]
    }

    fn field_mut(&mut self, key: &str) -> Option<&mut String> {
        Some(match key {
            "customer_name" => &mut self.customer_name,
            "problem_description" => &mut self.problem_description,
            "service_address" => &mut self.service_address,
            "zip_code" => &mut self.zip_code,
            "preferred_time" => &mut self.preferred_time,
            "problem_duration" => &mut self.problem_duration,
            "equipment_type" => &mut self.equipment_type,
            _ => return None,
        })
    }

    /// Whether nothing was extracted.
    pub fn is_empty(&self) -> bool {
        self.fields().iter().all(|(_, v)| v.is_empty())
    }

    /// The extracted-fields object: the non-empty fields only, so a failed
    /// or empty extraction is `{}` (the `extract_fields` conformance shape).
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (k, v) in self.fields() {
            if !v.is_empty() {
                m.insert(k.to_string(), serde_json::Value::String(v.clone()));
            }
        }
        serde_json::Value::Object(m)
    }
}

/// The instruction given to the extraction LLM (our words).
pub fn extraction_instruction() -> String {
    format!(
        "You read the caller's side of a phone call to a heating and cooling company and pull \
out their details. Answer with one JSON object with exactly these string keys: {}. \
Fill a key only with what the caller explicitly said; use \"\" for anything they did not say, \
and never guess. customer_name is the caller's own name only. service_address is the street \
address of the visit only: never put the caller's name, the ZIP code or anything else in it. \
problem_description is a short, plain summary of what is wrong. preferred_time is when they \
want someone to come, in their words. problem_duration is how long the problem has been going \
on. equipment_type is the kind of equipment (for example AC, furnace, heat pump).",
        EXTRACTION_KEYS.join(", ")
    )
}

/// The LLM messages for one extraction pass: the instruction plus the last
/// ten history entries. `None` when those entries hold no caller line (no
/// LLM call is made then).
pub fn extraction_messages(history: &[HistoryMessage]) -> Option<Vec<ChatMessage>> {
    let start = history.len().saturating_sub(10);
    let recent = history.get(start..).unwrap_or(&[]);
    if !recent.iter().any(|m| m.role == "user") {
        return None;
    }
    let mut out = vec![ChatMessage::system(extraction_instruction())];
    for m in recent {
        match m.role.as_str() {
            "user" => out.push(ChatMessage::user(m.content.clone())),
            "assistant" | "agent" => out.push(ChatMessage::assistant(m.content.clone())),
            _ => {}
        }
    }
    Some(out)
}

/// Read the extraction LLM's answer leniently: code fences and text around
/// the object are ignored, non-string values are ignored, garbage gives the
/// empty result.
pub fn parse_extraction(content: &str) -> ExtractedFields {
    let mut f = ExtractedFields::default();
    let obj = match serde_json::from_str::<serde_json::Value>(content.trim()) {
        Ok(v) => v,
        Err(_) => {
            let (Some(a), Some(b)) = (content.find('{'), content.rfind('}')) else {
                return f;
            };
            match content
                .get(a..=b)
                .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
            {
                Some(v) => v,
                None => return f,
            }
        }
    };
    let Some(map) = obj.as_object() else {
        return f;
    };
    for key in EXTRACTION_KEYS {
        if let (Some(serde_json::Value::String(v)), Some(slot)) = (map.get(key), f.field_mut(key)) {
            *slot = v.trim().to_string();
        }
    }
    f
}

/// Whether an extraction pass should run (SPEC §5.8 step 1).
pub fn should_extract(session: &Session) -> bool {
    session.conversation_history.len() >= 2
}

/// Apply an extraction to the session: fill empty fields only, validate name
/// and address, and never touch the ZIP code (the extraction firewall).
pub fn apply_extraction(session: &mut Session, f: &ExtractedFields) {
    fn fill(slot: &mut String, value: &str) {
        if slot.trim().is_empty() && !value.trim().is_empty() {
            *slot = value.trim().to_string();
        }
    }
    fill(&mut session.problem_description, &f.problem_description);
    fill(&mut session.preferred_time, &f.preferred_time);
    fill(&mut session.equipment_type, &f.equipment_type);
    fill(&mut session.problem_duration, &f.problem_duration);
    if session.service_address.trim().is_empty() && !f.service_address.trim().is_empty() {
        session.service_address = validate_address(&f.service_address);
    }
    if session.customer_name.trim().is_empty() && !f.customer_name.trim().is_empty() {
        session.customer_name = validate_name(&f.customer_name);
    }
    // zip_code: never written here.
}
