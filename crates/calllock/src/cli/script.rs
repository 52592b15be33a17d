//! The replay file format: JSON lines describing a caller.
//!
//! Line shapes (blank lines and lines starting with `#` or `//` are skipped):
//! - `{"caller": "text", "at": 4.5}` — a final transcript said 4.5 s after
//!   the call started; or `"after": 0.4` — 0.4 s after the previous caller
//!   line (STT fragments); with neither, 3 s after the agent's last line
//!   finished;
//! - `{"silence": 8}` — the caller says nothing for 8 s;
//! - `{"tool_result": {"tool": "lookup_caller", "result": {...}}}` — the next
//!   call of that tool returns this instead of asking the backend;
//! - `{"hangup": true}` — the caller hangs up (once the agent is quiet).
//!
//! Every problem is reported with its line number; nothing is guessed.

use crate::call::driver::{ScriptItem, When};
use agent::state::Tool;
use serde_json::{Map, Value};

/// A problem in a script file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// 1-based line number (0 = the file as a whole).
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for ScriptError {}

fn err(line: usize, message: impl Into<String>) -> ScriptError {
    ScriptError {
        line,
        message: message.into(),
    }
}

/// Parse a script from raw bytes (the file may not be UTF-8).
pub fn parse_bytes(bytes: &[u8]) -> Result<Vec<ScriptItem>, ScriptError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(text),
        Err(e) => {
            let line = bytes[..e.valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
                + 1;
            Err(err(
                line,
                format!(
                    "not valid UTF-8 (byte offset {}); save the file as UTF-8",
                    e.valid_up_to()
                ),
            ))
        }
    }
}

/// Parse a script from text.
pub fn parse(text: &str) -> Result<Vec<ScriptItem>, ScriptError> {
    let mut items = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            err(
                n,
                format!("not a JSON object ({e}); each line must be one complete JSON object"),
            )
        })?;
        let Value::Object(obj) = value else {
            return Err(err(n, "expected a JSON object like {\"caller\": \"…\"}"));
        };
        items.push(parse_item(n, &obj)?);
    }
    Ok(items)
}

fn seconds(n: usize, obj: &Map<String, Value>, key: &str) -> Result<Option<f64>, ScriptError> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && (0.0..=86_400.0).contains(&x) => Ok(Some(x)),
            _ => Err(err(
                n,
                format!("\"{key}\" must be a number of seconds between 0 and 86400, got {v}"),
            )),
        },
    }
}

fn check_keys(n: usize, obj: &Map<String, Value>, allowed: &[&str]) -> Result<(), ScriptError> {
    for k in obj.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(err(
                n,
                format!("unknown key \"{k}\" (allowed here: {})", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

fn parse_item(n: usize, obj: &Map<String, Value>) -> Result<ScriptItem, ScriptError> {
    if let Some(text) = obj.get("caller") {
        check_keys(n, obj, &["caller", "at", "after"])?;
        let Some(text) = text.as_str() else {
            return Err(err(n, "\"caller\" must be a string"));
        };
        let at = seconds(n, obj, "at")?;
        let after = seconds(n, obj, "after")?;
        let when = match (at, after) {
            (Some(_), Some(_)) => return Err(err(n, "give either \"at\" or \"after\", not both")),
            (Some(a), None) => When::At(a),
            (None, Some(a)) => When::After(a),
            (None, None) => When::Default,
        };
        return Ok(ScriptItem::Caller {
            text: text.to_string(),
            when,
        });
    }
    if obj.contains_key("silence") {
        check_keys(n, obj, &["silence"])?;
        let s = seconds(n, obj, "silence")?.unwrap_or(0.0);
        return Ok(ScriptItem::Silence(s));
    }
    if let Some(tr) = obj.get("tool_result") {
        check_keys(n, obj, &["tool_result"])?;
        let Some(tr) = tr.as_object() else {
            return Err(err(
                n,
                "\"tool_result\" must be an object {\"tool\", \"result\"}",
            ));
        };
        check_keys(n, tr, &["tool", "result"])?;
        let name = tr.get("tool").and_then(Value::as_str).unwrap_or("");
        let tool: Tool = name.parse().map_err(|_| {
            err(
                n,
                format!(
                    "unknown tool {name:?} (one of: lookup_caller, book_service, create_callback, send_sales_lead_alert, manage_appointment)"
                ),
            )
        })?;
        if tool == Tool::EndCall {
            return Err(err(n, "end_call is not a backend tool"));
        }
        let Some(result) = tr.get("result").filter(|r| r.is_object()) else {
            return Err(err(n, "\"tool_result.result\" must be a JSON object"));
        };
        return Ok(ScriptItem::ToolResult {
            tool,
            result: result.clone(),
        });
    }
    if obj.contains_key("hangup") {
        check_keys(n, obj, &["hangup"])?;
        return Ok(ScriptItem::HangUp);
    }
    Err(err(
        n,
        "expected one of {\"caller\": …}, {\"silence\": …}, {\"tool_result\": …}, {\"hangup\": true}",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn all_line_shapes() {
        let s = parse(
            r#"
# a comment
{"caller": "my AC is broken", "at": 1.5}
{"caller": "it's blowing", "after": 0.4}
{"caller": "yes"}
{"silence": 8}
{"tool_result": {"tool": "lookup_caller", "result": {"found": true}}}
{"hangup": true}
"#,
        )
        .unwrap();
        assert_eq!(s.len(), 6);
        assert_eq!(
            s[0],
            ScriptItem::Caller {
                text: "my AC is broken".into(),
                when: When::At(1.5)
            }
        );
        assert!(matches!(
            s[1],
            ScriptItem::Caller {
                when: When::After(_),
                ..
            }
        ));
        assert!(matches!(
            s[2],
            ScriptItem::Caller {
                when: When::Default,
                ..
            }
        ));
        assert_eq!(s[3], ScriptItem::Silence(8.0));
        assert!(matches!(
            s[4],
            ScriptItem::ToolResult {
                tool: Tool::LookupCaller,
                ..
            }
        ));
        assert_eq!(s[5], ScriptItem::HangUp);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("{\"caller\": \"hi\"}\n{\"caller\": \"trunc").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("line 2"));
        let e = parse("{\"caler\": \"hi\"}").unwrap_err();
        assert!(e.message.contains("expected one of"));
        let e = parse("{\"caller\": \"hi\", \"at\": -1}").unwrap_err();
        assert!(e.message.contains("between 0"));
        let e = parse("{\"caller\": \"hi\", \"when\": 1}").unwrap_err();
        assert!(e.message.contains("unknown key"));
        let e = parse("{\"tool_result\": {\"tool\": \"nope\", \"result\": {}}}").unwrap_err();
        assert!(e.message.contains("unknown tool"));
        let e = parse("[1,2]").unwrap_err();
        assert!(e.message.contains("JSON object"));
    }

    #[test]
    fn non_utf8_is_reported() {
        let e = parse_bytes(b"{\"caller\": \"ok\"}\n{\"caller\": \"\xff\xfe\"}").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("UTF-8"));
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse_bytes(&bytes);
        }

        #[test]
        fn never_panics_on_jsonish(s in "[{}\\[\\]\":,a-z0-9 .\\-\n]{0,200}") {
            let _ = parse(&s);
        }
    }
}
