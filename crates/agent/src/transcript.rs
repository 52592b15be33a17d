//! Transcript formats (SPEC §7.9): plain text, JSON array, the timestamped
//! dump, its chunked `TRANSCRIPT_DUMP|i/n|JSON` log lines, the reader that
//! reassembles those lines and a human-readable formatter.
//!
//! Everything here is total: malformed input (missing keys, wrong types,
//! broken JSON) degrades to empty or partial output, never to a panic.

use crate::session::{Role, TranscriptEntry};
use serde_json::{json, Map, Value};

/// Prefix of the chunked transcript-dump log lines.
pub const DUMP_PREFIX: &str = "TRANSCRIPT_DUMP";
/// Default byte budget of one dump chunk (SPEC §7.9).
pub const DEFAULT_CHUNK_MAX_BYTES: usize = 3500;
/// Default gap threshold of [`format_transcript`] (seconds).
pub const DEFAULT_GAP_THRESHOLD_S: f64 = 2.0;
/// Gaps at least this long are marked `SLOW` by [`format_transcript`].
pub const SLOW_GAP_S: f64 = 5.0;

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Agent => "agent",
        Role::Tool => "tool",
        Role::Other => "other",
    }
}

/// Plain text: `Agent: …` / `Caller: …` / `[Tool: name]`, one line per entry,
/// joined by `\n`; other roles are skipped; an empty log gives "". An agent
/// line the caller cut off shows what they heard, marked.
pub fn to_plain_text(log: &[TranscriptEntry]) -> String {
    let mut lines: Vec<String> = Vec::with_capacity(log.len());
    for e in log {
        match e.role {
            Role::Agent if e.interrupted => lines.push(format!(
                "Agent: {} [cut off by the caller]",
                e.content.as_deref().unwrap_or("")
            )),
            Role::Agent => lines.push(format!("Agent: {}", e.content.as_deref().unwrap_or(""))),
            Role::User => lines.push(format!("Caller: {}", e.content.as_deref().unwrap_or(""))),
            Role::Tool => lines.push(format!(
                "[Tool: {}]",
                e.name.as_deref().unwrap_or("unknown")
            )),
            Role::Other => {}
        }
    }
    lines.join("\n")
}

/// JSON array: agent/user → `{role, content}`, tool → `{role: "tool", name,
/// result}` (result defaults to `{}`); other roles are skipped.
pub fn to_json_array(log: &[TranscriptEntry]) -> Value {
    let mut out = Vec::with_capacity(log.len());
    for e in log {
        match e.role {
            Role::Agent | Role::User => out.push(json!({
                "role": role_name(e.role),
                "content": e.content.as_deref().unwrap_or(""),
            })),
            Role::Tool => out.push(json!({
                "role": "tool",
                "name": e.name.as_deref().unwrap_or("unknown"),
                "result": e.result.clone().unwrap_or_else(|| json!({})),
            })),
            Role::Other => {}
        }
    }
    Value::Array(out)
}

/// Round to one decimal like Python's `round(x, 1)` (correctly rounded,
/// ties to even on the exact binary value).
fn round1(x: f64) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    format!("{x:.1}").parse::<f64>().unwrap_or(0.0)
}

fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// The timestamped dump `{call_sid, phone, final_state, entries}` (the
/// orchestrator adds `duration_s`). Times are relative to `start_time`, or to
/// the first timestamped entry when `start_time` ≤ 0; entries without a
/// timestamp are skipped. Each entry: `t`, `role`, `state` ("" when absent),
/// then `content` / `name` / `result` when present.
pub fn to_timestamped_dump(
    log: &[TranscriptEntry],
    start_time: f64,
    call_sid: &str,
    phone: &str,
    final_state: &str,
) -> Value {
    let base = if start_time > 0.0 {
        Some(start_time)
    } else {
        log.iter().find_map(|e| e.timestamp)
    };
    let mut entries = Vec::new();
    if let Some(base) = base {
        for e in log {
            let Some(ts) = e.timestamp else { continue };
            let mut m = Map::new();
            m.insert("t".into(), num(round1(ts - base)));
            m.insert("role".into(), Value::from(role_name(e.role)));
            m.insert(
                "state".into(),
                Value::from(e.state.clone().unwrap_or_default()),
            );
            if let Some(c) = &e.content {
                m.insert("content".into(), Value::from(c.clone()));
            }
            if let Some(n) = &e.name {
                m.insert("name".into(), Value::from(n.clone()));
            }
            if let Some(r) = &e.result {
                m.insert("result".into(), r.clone());
            }
            entries.push(Value::Object(m));
        }
    }
    json!({
        "call_sid": call_sid,
        "phone": phone,
        "final_state": final_state,
        "entries": entries,
    })
}

// ---------------------------------------------------------------------------
// Python-compatible JSON text

/// Serialize like Python's `json.dumps(value)` with default settings:
/// separators `", "` and `": "`, non-ASCII (and control / DEL) characters
/// escaped as `\uXXXX` (surrogate pairs above U+FFFF), floats in Python
/// `repr` form (`1.0`, `1e-05`, `1e+16`). Object keys come out in the map's
/// iteration order.
pub fn python_json_dumps(value: &Value) -> String {
    let mut out = String::new();
    write_py(value, &mut out);
    out
}

fn write_py(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_py_number(n, out),
        Value::String(s) => write_py_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py(v, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_str(k, out);
                out.push_str(": ");
                write_py(v, out);
            }
            out.push('}');
        }
    }
}

fn write_py_number(n: &serde_json::Number, out: &mut String) {
    if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(u) = n.as_u64() {
        out.push_str(&u.to_string());
    } else if let Some(f) = n.as_f64() {
        out.push_str(&python_float_repr(f));
    } else {
        out.push_str(&n.to_string());
    }
}

/// Python's `repr(float)`: shortest round-trip digits, positional notation
/// for decimal exponents in [-4, 16), scientific (`1e+16`, `1.5e-05`)
/// otherwise; integral values keep a trailing `.0`.
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = if digits.is_empty() {
        "0".to_string()
    } else {
        digits
    };
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if (-4..16).contains(&exp) {
        let nd = digits.len() as i32;
        if exp < 0 {
            s.push_str("0.");
            for _ in 0..(-exp - 1) {
                s.push('0');
            }
            s.push_str(&digits);
        } else if exp + 1 >= nd {
            s.push_str(&digits);
            for _ in 0..(exp + 1 - nd) {
                s.push('0');
            }
            s.push_str(".0");
        } else {
            let split = (exp + 1) as usize;
            let (int_part, frac_part) = digits.split_at(split.min(digits.len()));
            s.push_str(int_part);
            s.push('.');
            s.push_str(frac_part);
        }
    } else {
        let mut chars = digits.chars();
        if let Some(first) = chars.next() {
            s.push(first);
        }
        let rest: String = chars.collect();
        if !rest.is_empty() {
            s.push('.');
            s.push_str(&rest);
        }
        s.push('e');
        s.push(if exp < 0 { '-' } else { '+' });
        s.push_str(&format!("{:02}", exp.unsigned_abs()));
    }
    s
}

fn write_py_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

// ---------------------------------------------------------------------------
// Chunked log lines

fn dump_line(i: usize, n: usize, payload: &Value) -> String {
    format!("{DUMP_PREFIX}|{i}/{n}|{}", python_json_dumps(payload))
}

/// Split a dump into log lines `TRANSCRIPT_DUMP|i/n|JSON` (1-based).
///
/// Line 1 carries the header fields and its entries, later lines only
/// `{"entries": […]}`. Entries are packed greedily and never split: the size
/// starts at the byte length of the header with empty entries (later chunks:
/// of `{"entries": []}`), each entry costs its JSON byte length + 2, and a
/// non-empty chunk is closed before an entry that would exceed `max_bytes`.
/// Sizes use the Python-compatible serialization of [`python_json_dumps`],
/// which is also the emitted text. A non-object dump counts as an empty one.
pub fn chunk_transcript_dump(dump: &Value, max_bytes: usize) -> Vec<String> {
    let mut header = Map::new();
    let mut entries: &[Value] = &[];
    if let Value::Object(m) = dump {
        for (k, v) in m {
            if k == "entries" {
                if let Value::Array(a) = v {
                    entries = a;
                }
            } else {
                header.insert(k.clone(), v.clone());
            }
        }
    }
    let with_entries = |h: &Map<String, Value>, es: Vec<Value>| {
        let mut m = h.clone();
        m.insert("entries".into(), Value::Array(es));
        Value::Object(m)
    };

    if entries.is_empty() {
        return vec![dump_line(1, 1, &with_entries(&header, Vec::new()))];
    }

    let empty_later = python_json_dumps(&json!({"entries": []})).len();
    let mut chunks: Vec<Vec<Value>> = Vec::new();
    let mut current: Vec<Value> = Vec::new();
    let mut size = python_json_dumps(&with_entries(&header, Vec::new())).len();
    for e in entries {
        let cost = python_json_dumps(e).len() + 2;
        if !current.is_empty() && size + cost > max_bytes {
            chunks.push(std::mem::take(&mut current));
            size = empty_later;
        }
        current.push(e.clone());
        size += cost;
    }
    chunks.push(current);

    let n = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, es)| {
            let payload = if i == 0 {
                with_entries(&header, es)
            } else {
                json!({ "entries": es })
            };
            dump_line(i + 1, n, &payload)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Reader

/// Split one log line into (chunk index, JSON text) if it holds a dump chunk.
fn split_dump_line(line: &str) -> Option<(u64, &str)> {
    let marker = format!("{DUMP_PREFIX}|");
    let pos = line.find(&marker)?;
    let rest = line.get(pos + marker.len()..)?;
    let (numbering, json_text) = rest.split_once('|')?;
    let (i, _n) = numbering.split_once('/')?;
    let i = i.trim().parse::<u64>().ok()?;
    Some((i, json_text))
}

struct Group {
    head: Map<String, Value>,
    later: Vec<(u64, Vec<Value>)>,
}

impl Group {
    fn finish(self) -> Value {
        let mut head = self.head;
        let mut later = self.later;
        later.sort_by_key(|(i, _)| *i);
        if !later.is_empty() {
            let mut entries = match head.remove("entries") {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            };
            for (_, es) in later {
                entries.extend(es);
            }
            head.insert("entries".into(), Value::Array(entries));
        }
        Value::Object(head)
    }
}

/// Reassemble dumps from raw log lines (the `call_transcript` CLI reader).
///
/// `TRANSCRIPT_DUMP|i/n|JSON` may appear anywhere in a line. Chunk 1 starts
/// a new dump (skipped, with its later chunks, when its JSON is not an
/// object); later chunks' entries are appended in chunk order. With
/// `call_sid`, only dumps of that call are returned.
pub fn parse_transcript_dump_lines(lines: &[String], call_sid: Option<&str>) -> Vec<Value> {
    let mut done: Vec<Value> = Vec::new();
    let mut current: Option<Group> = None;
    for line in lines {
        let Some((i, text)) = split_dump_line(line) else {
            continue;
        };
        if i == 1 {
            if let Some(g) = current.take() {
                done.push(g.finish());
            }
            if let Ok(Value::Object(head)) = serde_json::from_str::<Value>(text.trim()) {
                current = Some(Group {
                    head,
                    later: Vec::new(),
                });
            }
        } else if let Some(g) = current.as_mut() {
            if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text.trim()) {
                if let Some(Value::Array(es)) = m.get("entries") {
                    g.later.push((i, es.clone()));
                }
            }
        }
    }
    if let Some(g) = current.take() {
        done.push(g.finish());
    }
    match call_sid {
        Some(sid) => done
            .into_iter()
            .filter(|d| d.get("call_sid").and_then(Value::as_str) == Some(sid))
            .collect(),
        None => done,
    }
}

// ---------------------------------------------------------------------------
// Human-readable formatter

fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => python_json_dumps(other),
    }
}

fn one_line(s: &str) -> String {
    s.split(['\n', '\r']).collect::<Vec<_>>().join(" ")
}

fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((idx, _)) => format!("{}…", s.get(..idx).unwrap_or(s)),
        None => s.to_string(),
    }
}

fn secs(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|x| x.is_finite())
}

/// Human-readable transcript of a dump: a header line, one line per entry
/// (`[  12.3s] Caller: …  (state)`), a gap line starting with `┆` before
/// every entry that follows the previous one by at least `gap_threshold_s`
/// seconds (marked `SLOW` when the gap is also at least 5 s), and a closing
/// `Call ended …` line.
pub fn format_transcript(dump: &Value, gap_threshold_s: f64) -> String {
    let field = |k: &str| dump.get(k);
    let call_sid = text_of(field("call_sid"));
    let phone = text_of(field("phone"));
    let final_state = text_of(field("final_state"));
    let duration = secs(field("duration_s"));
    let entries: &[Value] = match field("entries") {
        Some(Value::Array(a)) => a,
        _ => &[],
    };

    let mut lines: Vec<String> = Vec::new();
    let mut head = format!(
        "Call {} | phone {} | {} entries",
        if call_sid.is_empty() { "?" } else { &call_sid },
        if phone.is_empty() { "?" } else { &phone },
        entries.len()
    );
    if let Some(d) = duration {
        head.push_str(&format!(" | {d:.1}s"));
    }
    lines.push(head);

    let mut prev_t: Option<f64> = None;
    for e in entries {
        let t = secs(e.get("t"));
        if let (Some(p), Some(now)) = (prev_t, t) {
            let gap = now - p;
            if gap >= gap_threshold_s {
                let mut g = format!("          ┆ +{gap:.1}s");
                if gap >= SLOW_GAP_S {
                    g.push_str("  SLOW");
                }
                lines.push(g);
            }
        }
        if t.is_some() {
            prev_t = t;
        }
        let stamp = match t {
            Some(t) => format!("[{t:>6.1}s]"),
            None => "[     ?s]".to_string(),
        };
        let role = text_of(e.get("role"));
        let body = match role.as_str() {
            "agent" => format!("Agent: {}", text_of(e.get("content"))),
            "user" => format!("Caller: {}", text_of(e.get("content"))),
            "tool" => {
                let name = text_of(e.get("name"));
                match e.get("result") {
                    Some(r) if !r.is_null() => format!(
                        "[Tool: {name}] {}",
                        truncate_chars(&python_json_dumps(r), 200)
                    ),
                    _ => format!("[Tool: {name}]"),
                }
            }
            other => format!(
                "{}: {}",
                if other.is_empty() { "?" } else { other },
                text_of(e.get("content"))
            ),
        };
        let state = text_of(e.get("state"));
        let mut line = format!("{stamp} {}", one_line(&body));
        if !state.is_empty() {
            line.push_str(&format!("  ({})", one_line(&state)));
        }
        lines.push(line);
    }

    let mut tail = String::from("Call ended");
    if !final_state.is_empty() {
        tail.push_str(&format!(" in state {}", one_line(&final_state)));
    }
    if let Some(d) = duration {
        tail.push_str(&format!(" after {d:.1}s"));
    }
    lines.push(tail);
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(v: Value) -> Vec<TranscriptEntry> {
        serde_json::from_value(v).unwrap()
    }

    fn lines_of(v: Value) -> Vec<String> {
        serde_json::from_value(v).unwrap()
    }

    /// Split a produced line into (prefix, numbering, payload).
    fn parts(line: &str) -> (String, String, Value) {
        let mut it = line.splitn(3, '|');
        let p = it.next().unwrap().to_string();
        let n = it.next().unwrap().to_string();
        let j = serde_json::from_str(it.next().unwrap()).unwrap();
        (p, n, j)
    }

    #[test]
    fn tr_plain_basic() {
        let l = log(json!([
            {"role": "agent", "content": "Thanks for calling ACE Cooling.", "timestamp": 1000.0, "state": "welcome"},
            {"role": "user", "content": "My AC is broken.", "timestamp": 1002.0, "state": "welcome"},
            {"role": "agent", "content": "Let me look into that.", "timestamp": 1004.0, "state": "welcome"}
        ]));
        assert_eq!(
            to_plain_text(&l),
            "Agent: Thanks for calling ACE Cooling.\nCaller: My AC is broken.\nAgent: Let me look into that."
        );
    }

    #[test]
    fn tr_plain_tools_and_empty() {
        let l = log(json!([
            {"role": "agent", "content": "Pulling that up now.", "timestamp": 1000.0, "state": "lookup"},
            {"role": "tool", "name": "lookup_caller", "result": {"found": true}, "timestamp": 1001.0, "state": "lookup"},
            {"role": "agent", "content": "I found your account.", "timestamp": 1002.0, "state": "lookup"}
        ]));
        assert_eq!(
            to_plain_text(&l),
            "Agent: Pulling that up now.\n[Tool: lookup_caller]\nAgent: I found your account."
        );
        assert_eq!(to_plain_text(&[]), "");
    }

    #[test]
    fn tr_json_tools_and_empty() {
        let l = log(json!([
            {"role": "tool", "name": "book_service", "result": {"booked": true}, "timestamp": 1000.0, "state": "booking"}
        ]));
        assert_eq!(
            to_json_array(&l),
            json!([{"role": "tool", "name": "book_service", "result": {"booked": true}}])
        );
        assert_eq!(to_json_array(&[]), json!([]));
    }

    #[test]
    fn tr_dump_happy() {
        let l = log(json!([
            {"role": "agent", "content": "Hello.", "timestamp": 1000.0, "state": "welcome"},
            {"role": "user", "content": "Hi.", "timestamp": 1002.3, "state": "welcome"},
            {"role": "tool", "name": "lookup_caller", "result": {"found": true}, "timestamp": 1005.2, "state": "lookup"},
            {"role": "agent", "content": "Found your account.", "timestamp": 1008.9, "state": "safety"}
        ]));
        assert_eq!(
            to_timestamped_dump(&l, 1000.0, "CA_test", "+15125551234", "done"),
            json!({"call_sid": "CA_test", "phone": "+15125551234", "final_state": "done", "entries": [
                {"t": 0.0, "role": "agent", "state": "welcome", "content": "Hello."},
                {"t": 2.3, "role": "user", "state": "welcome", "content": "Hi."},
                {"t": 5.2, "role": "tool", "state": "lookup", "name": "lookup_caller", "result": {"found": true}},
                {"t": 8.9, "role": "agent", "state": "safety", "content": "Found your account."}
            ]})
        );
    }

    #[test]
    fn tr_dump_empty_zero_start_relative() {
        assert_eq!(
            to_timestamped_dump(&[], 1000.0, "CA_empty", "+15125551234", "welcome"),
            json!({"call_sid": "CA_empty", "phone": "+15125551234", "final_state": "welcome", "entries": []})
        );
        let l = log(json!([
            {"role": "agent", "content": "Hello.", "timestamp": 5000.0, "state": "welcome"},
            {"role": "user", "content": "Hi.", "timestamp": 5003.0, "state": "welcome"}
        ]));
        assert_eq!(
            to_timestamped_dump(&l, 0.0, "CA_nostart", "+1", "done"),
            json!({"call_sid": "CA_nostart", "phone": "+1", "final_state": "done", "entries": [
                {"t": 0.0, "role": "agent", "state": "welcome", "content": "Hello."},
                {"t": 3.0, "role": "user", "state": "welcome", "content": "Hi."}
            ]})
        );
        let l = log(
            json!([{"role": "user", "content": "Hi.", "timestamp": 1739900000.0, "state": "welcome"}]),
        );
        assert_eq!(
            to_timestamped_dump(&l, 1739900000.0, "CA_abs", "+1", "done")["entries"],
            json!([{"t": 0.0, "role": "user", "state": "welcome", "content": "Hi."}])
        );
    }

    #[test]
    fn dump_skips_untimed_entries() {
        let l = log(json!([
            {"role": "agent", "content": "no time"},
            {"role": "user", "content": "Hi.", "timestamp": 7.0}
        ]));
        assert_eq!(
            to_timestamped_dump(&l, 0.0, "c", "p", "s")["entries"],
            json!([{"t": 0.0, "role": "user", "state": "", "content": "Hi."}])
        );
    }

    #[test]
    fn python_json_matches_python() {
        let v = json!({"a": [1, 2.5, "é😀\u{7f}\"\\\n"], "b": null, "c": true, "d": 1e16, "e": 0.00001, "f": 123456789.0, "g": -0.0001});
        assert_eq!(
            python_json_dumps(&v),
            r#"{"a": [1, 2.5, "\u00e9\ud83d\ude00\u007f\"\\\n"], "b": null, "c": true, "d": 1e+16, "e": 1e-05, "f": 123456789.0, "g": -0.0001}"#
        );
        assert_eq!(python_float_repr(1.5e-7), "1.5e-07");
        assert_eq!(python_float_repr(1234.5), "1234.5");
        assert_eq!(python_float_repr(1e15), "1000000000000000.0");
        assert_eq!(python_float_repr(2.5e300), "2.5e+300");
    }

    #[test]
    fn post_chunk_single() {
        let dump = json!({"call_sid": "CA_test", "phone": "+15125551234", "final_state": "done",
            "entries": [{"t": 0.0, "role": "agent", "state": "welcome", "content": "Hello."}]});
        let out = chunk_transcript_dump(&dump, 3500);
        assert_eq!(out.len(), 1);
        let (p, n, mut payload) = parts(&out[0]);
        assert_eq!(p, "TRANSCRIPT_DUMP");
        assert_eq!(n, "1/1");
        let entries = payload.as_object_mut().unwrap().remove("entries").unwrap();
        assert_eq!(entries.as_array().unwrap().len(), 1);
        assert_eq!(
            payload,
            json!({"call_sid": "CA_test", "phone": "+15125551234", "final_state": "done"})
        );
    }

    #[test]
    fn post_chunk_multiple() {
        let entries: Vec<Value> = (0..50)
            .map(|i| {
                json!({"t": i as f64, "role": "user", "state": "discovery",
                    "content": format!("Message number {i} with some padding text to take up space.")})
            })
            .collect();
        let dump = json!({"call_sid": "CA_big", "phone": "+15125551234", "final_state": "done", "entries": entries});
        let out = chunk_transcript_dump(&dump, 1000);
        let per: Vec<usize> = out
            .iter()
            .map(|l| parts(l).2["entries"].as_array().unwrap().len())
            .collect();
        assert_eq!(per, vec![7, 7, 7, 7, 7, 7, 7, 1]);
        let numbering: Vec<String> = out.iter().map(|l| parts(l).1).collect();
        assert_eq!(numbering[0], "1/8");
        assert_eq!(numbering[7], "8/8");
        for l in &out[1..] {
            let keys: Vec<String> = parts(l).2.as_object().unwrap().keys().cloned().collect();
            assert_eq!(keys, vec!["entries".to_string()]);
        }
        // Round trip through the reader.
        let back = parse_transcript_dump_lines(&out, None);
        assert_eq!(back, vec![dump]);
    }

    #[test]
    fn post_chunk_empty() {
        let dump = json!({"call_sid": "CA_e", "phone": "+1", "final_state": "welcome", "duration_s": 0, "entries": []});
        let out = chunk_transcript_dump(&dump, 3500);
        assert_eq!(out.len(), 1);
        let (p, n, payload) = parts(&out[0]);
        assert_eq!((p.as_str(), n.as_str()), ("TRANSCRIPT_DUMP", "1/1"));
        assert_eq!(payload, dump);
    }

    #[test]
    fn post_chunk_oversized_entry_alone() {
        let dump = json!({"call_sid": "CA_o", "phone": "+1", "final_state": "done", "entries": [
            {"t": 0.0, "role": "user", "state": "welcome", "content": "Y".repeat(600)},
            {"t": 1.0, "role": "user", "state": "welcome", "content": "short"}
        ]});
        let out = chunk_transcript_dump(&dump, 300);
        let per: Vec<(String, usize)> = out
            .iter()
            .map(|l| {
                let (_, n, p) = parts(l);
                (n, p["entries"].as_array().unwrap().len())
            })
            .collect();
        assert_eq!(per, vec![("1/2".into(), 1), ("2/2".into(), 1)]);
    }

    #[test]
    fn chunk_tolerates_garbage() {
        assert_eq!(chunk_transcript_dump(&json!(42), 3500).len(), 1);
        assert_eq!(chunk_transcript_dump(&json!({"entries": "x"}), 0).len(), 1);
        assert_eq!(
            chunk_transcript_dump(&json!({"entries": [1, 2, 3]}), 0).len(),
            3
        );
    }

    #[test]
    fn tr_cli_single_chunk_and_reassembly() {
        let lines = lines_of(json!([
            "TRANSCRIPT_DUMP|1/1|{\"call_sid\": \"CA_test\", \"phone\": \"+15125551234\", \"final_state\": \"done\", \"duration_s\": 52.1, \"entries\": [{\"t\": 0.0, \"role\": \"agent\", \"state\": \"welcome\", \"content\": \"Hello.\"}, {\"t\": 2.3, \"role\": \"user\", \"state\": \"welcome\", \"content\": \"Hi.\"}]}"
        ]));
        assert_eq!(
            parse_transcript_dump_lines(&lines, None),
            vec![
                json!({"call_sid": "CA_test", "phone": "+15125551234", "final_state": "done", "duration_s": 52.1, "entries": [
                {"t": 0.0, "role": "agent", "state": "welcome", "content": "Hello."},
                {"t": 2.3, "role": "user", "state": "welcome", "content": "Hi."}]})
            ]
        );
        let lines = lines_of(json!([
            "2026-02-20 10:00:00 | INFO | calllock.post_call | TRANSCRIPT_DUMP|1/2|{\"call_sid\": \"CA_multi\", \"phone\": \"+1\", \"final_state\": \"done\", \"duration_s\": 10.0, \"entries\": [{\"t\": 0.0, \"role\": \"agent\", \"state\": \"welcome\", \"content\": \"A\"}]}",
            "TRANSCRIPT_DUMP|2/2|{\"entries\": [{\"t\": 5.0, \"role\": \"user\", \"state\": \"discovery\", \"content\": \"B\"}]}"
        ]));
        assert_eq!(
            parse_transcript_dump_lines(&lines, None),
            vec![
                json!({"call_sid": "CA_multi", "phone": "+1", "final_state": "done", "duration_s": 10.0, "entries": [
                {"t": 0.0, "role": "agent", "state": "welcome", "content": "A"},
                {"t": 5.0, "role": "user", "state": "discovery", "content": "B"}]})
            ]
        );
    }

    #[test]
    fn tr_cli_filter_and_no_lines() {
        let lines = lines_of(json!([
            "TRANSCRIPT_DUMP|1/1|{\"call_sid\": \"CA_first\", \"phone\": \"+1\", \"final_state\": \"done\", \"duration_s\": 5, \"entries\": []}",
            "TRANSCRIPT_DUMP|1/1|{\"call_sid\": \"CA_second\", \"phone\": \"+1\", \"final_state\": \"done\", \"duration_s\": 5, \"entries\": []}"
        ]));
        assert_eq!(
            parse_transcript_dump_lines(&lines, Some("CA_first")),
            vec![
                json!({"call_sid": "CA_first", "phone": "+1", "final_state": "done", "duration_s": 5, "entries": []})
            ]
        );
        assert_eq!(parse_transcript_dump_lines(&lines, None).len(), 2);
        let junk = lines_of(json!(["some random log line", "another line"]));
        assert!(parse_transcript_dump_lines(&junk, None).is_empty());
    }

    #[test]
    fn reader_tolerates_garbage() {
        let lines = lines_of(json!([
            "TRANSCRIPT_DUMP|",
            "TRANSCRIPT_DUMP|x/y|{}",
            "TRANSCRIPT_DUMP|1/2|not json",
            "TRANSCRIPT_DUMP|2/2|{\"entries\": [1]}",
            "TRANSCRIPT_DUMP|1/2|[1,2]",
            "TRANSCRIPT_DUMP|1/3|{\"call_sid\": \"ok\", \"entries\": 5}",
            "TRANSCRIPT_DUMP|3/3|{\"entries\": [3]}",
            "TRANSCRIPT_DUMP|2/3|{\"entries\": [2]}",
            "TRANSCRIPT_DUMP|2/3|garbage",
            "é TRANSCRIPT_DUMP|1/1|{\"call_sid\": \"é\"}"
        ]));
        let out = parse_transcript_dump_lines(&lines, None);
        assert_eq!(
            out,
            vec![
                json!({"call_sid": "ok", "entries": [2, 3]}),
                json!({"call_sid": "é"})
            ]
        );
    }

    fn gap_dump(t2: f64) -> Value {
        json!({"call_sid": "CA_gap", "phone": "+1", "final_state": "done", "duration_s": 10.0, "entries": [
            {"t": 0.0, "role": "agent", "state": "welcome", "content": "Hello."},
            {"t": t2, "role": "user", "state": "welcome", "content": "Hi."}]})
    }

    fn gap_lines(s: &str) -> usize {
        s.split('\n')
            .filter(|l| l.trim().starts_with('\u{2506}'))
            .count()
    }

    #[test]
    fn tr_cli_format_gap() {
        let s = format_transcript(&gap_dump(3.5), 2.0);
        for needle in ["+3.5s", "Agent: Hello.", "Caller: Hi.", "CA_gap"] {
            assert!(s.contains(needle), "{needle} in {s}");
        }
        assert!(!s.contains("SLOW"));
        assert_eq!(gap_lines(&s), 1);
    }

    #[test]
    fn tr_cli_format_slow() {
        let s = format_transcript(&gap_dump(30.0), 2.0);
        assert!(s.contains("SLOW") && s.contains("Call ended"), "{s}");
    }

    #[test]
    fn tr_cli_format_threshold() {
        let s = format_transcript(&gap_dump(2.5), 3.0);
        assert_eq!(gap_lines(&s), 0);
        assert_eq!(s.split('\n').count(), 4);
    }

    #[test]
    fn format_tolerates_garbage() {
        for v in [
            json!(null),
            json!([1, 2]),
            json!({"entries": [1, {"t": "x"}, {"role": 5, "t": 1e308}, {"role": "tool", "t": -1e308, "result": {"k": "é"}}]}),
        ] {
            let s = format_transcript(&v, f64::NAN);
            assert!(s.contains("Call ended"));
        }
    }
}
