//! The fake LLM of the end-to-end tests: sensible extraction (the
//! heuristic extractor over the caller lines it is sent), a fixed
//! classification, and [`LLM_LINE`] for every spoken reply — enough for a
//! whole booking call through a real OpenAI-compatible client.
#![allow(dead_code)]

use agent::session::HistoryMessage;
use providers::fake::openai::Behaviour;
use serde_json::{json, Value};

/// What the fake LLM says whenever it is asked for a spoken reply.
pub const LLM_LINE: &str = "LLM: Got it, thanks.";
/// Its scoped (terminal-state) reply.
pub const LLM_SCOPED: &str = "LLM: We'll see you then.";
/// Answer one request to the fake LLM.
pub fn llm_handler(body: &Value) -> Option<Behaviour> {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    if body["stream"] == true {
        return Some(Behaviour::Reply(LLM_LINE.into()));
    }
    let first = msgs.first().cloned().unwrap_or(Value::Null);
    let json_mode = body["response_format"]["type"] == "json_object";
    if json_mode
        && first["role"] == "system"
        && first["content"] == agent::extract::extraction_instruction().as_str()
    {
        let history: Vec<HistoryMessage> = msgs
            .iter()
            .skip(1)
            .map(|m| HistoryMessage {
                role: m["role"].as_str().unwrap_or("").into(),
                content: m["content"].as_str().unwrap_or("").into(),
            })
            .collect();
        let fields = agent::extract::heuristic_extract(&history);
        return Some(Behaviour::json(
            serde_json::to_string(&fields).expect("fields serialize"),
        ));
    }
    let is_classification = first["role"] == "user"
        && first["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("You review finished phone calls"));
    if json_mode && is_classification {
        return Some(Behaviour::json(
            json!({
                "ai_summary": "The caller's AC stopped cooling; a repair visit was booked.",
                "card_headline": "AC repair booked",
                "card_summary": "AC not cooling at 4329 Franklin Street; caller wants the earliest visit.",
                "call_type": "SERVICE",
                "call_subtype": "REPAIR_AC",
                "sentiment_score": 4
            })
            .to_string(),
        ));
    }
    Some(Behaviour::json(LLM_SCOPED))
}
