//! A sans-IO Server-Sent Events decoder (the `text/event-stream` format of
//! the WHATWG HTML standard, §9.2 "Server-sent events").
//!
//! [`SseDecoder`] takes the response body in whatever pieces the network
//! delivers ([`SseDecoder::push`]) and returns every event completed so far;
//! [`SseDecoder::finish`] is called once at the end of the body. It never
//! does I/O, never panics, and never holds more than about
//! `max_event_bytes` of one event: a larger event is an error
//! ([`SseError::EventTooLarge`]), after which the decoder yields nothing more.
//!
//! What it handles:
//! * line ends `\n`, `\r\n` and `\r` (also a `\r\n` split between pieces);
//! * `data:` lines (several lines of one event are joined with `\n`),
//!   `event:`, `id:` (ignored when it contains NUL) and `retry:` (digits
//!   only) fields, with or without a space after the colon, and field names
//!   without any colon (empty value); unknown fields are ignored;
//! * comment lines starting with `:`;
//! * a leading UTF-8 byte-order mark;
//! * UTF-8 characters split between pieces (lines are decoded only once
//!   complete; invalid UTF-8 becomes U+FFFD, as the standard says).
//!
//! One deliberate leniency: at the end of the body, [`SseDecoder::finish`]
//! dispatches an event whose closing blank line is missing (the standard
//! discards it). Some servers end with `data: [DONE]` and no blank line.

use std::fmt;

/// Default cap on the size of one event (its `data`, `event` and `id`
/// fields plus the line being read): 1 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; `None` when absent (the "message" type).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event ID seen so far in the stream (`id:` fields persist).
    pub id: Option<String>,
    /// A `retry:` reconnection time in milliseconds, if this event set one.
    pub retry: Option<u64>,
}

/// Why decoding stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event (or one line) grew past the configured limit.
    #[error("server-sent event larger than {limit} bytes")]
    EventTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// Incremental `text/event-stream` decoder; see the module docs.
pub struct SseDecoder {
    max_event_bytes: usize,
    /// Bytes of the line being read (no line terminator).
    line: Vec<u8>,
    /// The previous byte was a `\r` that ended a line: a `\n` next is part of
    /// the same line end.
    after_cr: bool,
    /// Whether the start of the stream (a possible BOM) has been passed.
    started: bool,
    /// Partial BOM bytes seen at the very start.
    bom: Vec<u8>,
    data: String,
    /// Whether any `data` field was seen in the current event.
    has_data: bool,
    event: Option<String>,
    last_id: Option<String>,
    retry: Option<u64>,
    failed: bool,
}

impl fmt::Debug for SseDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseDecoder")
            .field("max_event_bytes", &self.max_event_bytes)
            .field("pending_line_bytes", &self.line.len())
            .field("pending_data_bytes", &self.data.len())
            .field("failed", &self.failed)
            .finish()
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder::new()
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseDecoder {
    /// A decoder with the default 1 MiB event limit.
    pub fn new() -> Self {
        SseDecoder::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder whose events may hold at most `max_event_bytes` bytes
    /// (at least 1).
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        SseDecoder {
            max_event_bytes: max_event_bytes.max(1),
            line: Vec::new(),
            after_cr: false,
            started: false,
            bom: Vec::new(),
            data: String::new(),
            has_data: false,
            event: None,
            last_id: None,
            retry: None,
            failed: false,
        }
    }

    /// Whether the decoder stopped on an error (it then yields nothing more).
    pub fn has_failed(&self) -> bool {
        self.failed
    }

    /// Feed the next piece of the body. Returns the events completed by it,
    /// in order; an error is always the last item, and after it the decoder
    /// ignores all further input.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Result<SseEvent, SseError>> {
        let mut out = Vec::new();
        if self.failed {
            return out;
        }
        let mut rest = bytes;
        if !self.started {
            rest = self.skip_bom(rest);
            if !self.started {
                return out;
            }
        }
        while !rest.is_empty() {
            // Find the next line terminator in this piece.
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(pos) => {
                    let (head, tail) = rest.split_at(pos);
                    let term = tail.first().copied().unwrap_or(b'\n');
                    rest = tail.get(1..).unwrap_or(&[]);
                    if pos == 0 && term == b'\n' && self.after_cr && self.line.is_empty() {
                        // The `\n` of a `\r\n` whose `\r` ended the last line.
                        self.after_cr = false;
                        continue;
                    }
                    if let Err(e) = self.extend_line(head) {
                        out.push(Err(e));
                        return out;
                    }
                    self.after_cr = term == b'\r';
                    let line = std::mem::take(&mut self.line);
                    match self.process_line(&line) {
                        Ok(Some(ev)) => out.push(Ok(ev)),
                        Ok(None) => {}
                        Err(e) => {
                            out.push(Err(e));
                            return out;
                        }
                    }
                    // Reuse the allocation for the next line.
                    self.line = line;
                    self.line.clear();
                }
                None => {
                    self.after_cr = false;
                    if let Err(e) = self.extend_line(rest) {
                        out.push(Err(e));
                        return out;
                    }
                    rest = &[];
                }
            }
        }
        out
    }

    /// The body ended: an unterminated last line is processed as if it were
    /// terminated, and an event missing its closing blank line is
    /// dispatched (see the module docs). The decoder is reset afterwards
    /// (only the last event ID persists).
    pub fn finish(&mut self) -> Option<SseEvent> {
        if self.failed {
            return None;
        }
        let mut ev = None;
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            match self.process_line(&line) {
                Ok(Some(e)) => ev = Some(e),
                Ok(None) => {}
                Err(_) => return None,
            }
        }
        if ev.is_none() {
            ev = self.dispatch();
        }
        self.after_cr = false;
        self.started = false;
        self.bom.clear();
        ev
    }

    /// Skip a UTF-8 BOM at the very start of the stream, which may itself be
    /// split over pieces. Sets `started` once the start is decided.
    fn skip_bom<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        let mut i = 0;
        while self.bom.len() < BOM.len() {
            let Some(&b) = bytes.get(i) else {
                // Still undecided: wait for more bytes.
                return &[];
            };
            if BOM.get(self.bom.len()) == Some(&b) {
                self.bom.push(b);
                i += 1;
            } else {
                // Not a BOM: the held bytes were real content.
                self.started = true;
                let held = std::mem::take(&mut self.bom);
                self.line.extend_from_slice(&held);
                return bytes.get(i..).unwrap_or(&[]);
            }
        }
        self.started = true;
        self.bom.clear();
        bytes.get(i..).unwrap_or(&[])
    }

    fn event_bytes(&self) -> usize {
        self.data.len()
            + self.event.as_ref().map_or(0, String::len)
            + self.last_id.as_ref().map_or(0, String::len)
            + self.line.len()
    }

    fn fail(&mut self) -> SseError {
        self.failed = true;
        self.line = Vec::new();
        self.data = String::new();
        SseError::EventTooLarge {
            limit: self.max_event_bytes,
        }
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.event_bytes().saturating_add(bytes.len()) > self.max_event_bytes {
            return Err(self.fail());
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let retry = self.retry.take();
        if !self.has_data {
            self.data.clear();
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
            retry,
        })
    }

    fn process_line(&mut self, line: &[u8]) -> Result<Option<SseEvent>, SseError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.first() == Some(&b':') {
            return Ok(None);
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(pos) => {
                let (n, v) = line.split_at(pos);
                let v = v.get(1..).unwrap_or(&[]);
                (n, v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(&String::from_utf8_lossy(value));
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only; absurdly long values saturate.
                let ms = value.iter().fold(0u64, |acc, d| {
                    acc.saturating_mul(10)
                        .saturating_add(u64::from(d.saturating_sub(b'0')))
                });
                self.retry = Some(ms);
            }
            _ => {}
        }
        // Lossy decoding may grow the data (U+FFFD is 3 bytes for 1).
        if self.event_bytes() > self.max_event_bytes {
            return Err(self.fail());
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(dec: &mut SseDecoder, pieces: &[&[u8]]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for p in pieces {
            for r in dec.push(p) {
                out.push(r.unwrap());
            }
        }
        out.extend(dec.finish());
        out
    }

    fn data(ev: &[SseEvent]) -> Vec<&str> {
        ev.iter().map(|e| e.data.as_str()).collect()
    }

    fn ev(data: &str) -> SseEvent {
        SseEvent {
            data: data.into(),
            ..SseEvent::default()
        }
    }

    #[test]
    fn basic_lf_events() {
        let mut d = SseDecoder::new();
        let out = events(&mut d, &[b"data: one\n\ndata: two\n\n"]);
        assert_eq!(out, vec![ev("one"), ev("two")]);
    }

    #[test]
    fn crlf_and_cr_line_ends() {
        let mut d = SseDecoder::new();
        let out = events(&mut d, &[b"data: a\r\n\r\ndata: b\r\rdata: c\n\r\n"]);
        assert_eq!(data(&out), vec!["a", "b", "c"]);
    }

    #[test]
    fn crlf_split_between_pieces_is_one_line_end() {
        // "data: a\r" | "\n" | "\r\n": one event, not an extra blank line
        // between the \r and the \n.
        let mut d = SseDecoder::new();
        let out = events(&mut d, &[b"data: a\r", b"\n", b"data: b\r", b"\n\r", b"\n"]);
        assert_eq!(data(&out), vec!["a\nb"]);
        // and a lone \r then a \n-terminated blank line does dispatch
        let mut d = SseDecoder::new();
        let out = events(&mut d, &[b"data: a\r", b"\r", b"\ndata: z\n\n"]);
        assert_eq!(data(&out), vec!["a", "z"]);
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let body: &[u8] = "\u{feff}: hello\r\nevent: delta\r\ndata:{\"x\":\"é€😀\"}\r\n\
data: second\r\nid: 7\r\n\r\ndata\n\n:c\rdata:  two spaces\r\r"
            .as_bytes();
        let whole = events(&mut SseDecoder::new(), &[body]);
        assert_eq!(whole.len(), 3, "{whole:?}");
        assert_eq!(whole[0].event.as_deref(), Some("delta"));
        assert_eq!(whole[0].data, "{\"x\":\"é€😀\"}\nsecond");
        assert_eq!(whole[0].id.as_deref(), Some("7"));
        assert_eq!(whole[1].data, "");
        assert_eq!(whole[1].id.as_deref(), Some("7"), "id persists");
        assert_eq!(whole[2].data, " two spaces");
        for i in 0..=body.len() {
            for j in i..=body.len() {
                let got = events(
                    &mut SseDecoder::new(),
                    &[&body[..i], &body[i..j], &body[j..]],
                );
                assert_eq!(got, whole, "split at {i},{j}");
            }
        }
        // byte by byte
        let pieces: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(events(&mut SseDecoder::new(), &pieces), whole);
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let s = "data: 😀é\n\n".as_bytes();
        let mut d = SseDecoder::new();
        let out = events(&mut d, &[&s[..7], &s[7..9], &s[9..]]);
        assert_eq!(data(&out), vec!["😀é"]);
        // invalid UTF-8 becomes U+FFFD, no panic
        let out = events(&mut SseDecoder::new(), &[b"data: \xff\xfe ok\n\n"]);
        assert_eq!(data(&out), vec!["\u{fffd}\u{fffd} ok"]);
    }

    #[test]
    fn comments_fields_without_space_and_unknown_fields() {
        let mut d = SseDecoder::new();
        let out = events(
            &mut d,
            &[b": keep-alive\n\ndata:tight\nfoo: bar\nretry: 1500\nretry: x1\n\n"],
        );
        assert_eq!(out.len(), 1, "a comment alone dispatches nothing");
        assert_eq!(out[0].data, "tight");
        assert_eq!(out[0].retry, Some(1500));
        assert_eq!(out[0].event, None);
    }

    #[test]
    fn event_type_resets_and_empty_event_is_not_dispatched() {
        let mut d = SseDecoder::new();
        let out = events(
            &mut d,
            &[b"event: error\n\ndata: x\n\nevent: e2\ndata: y\n\n"],
        );
        // "event: error" with no data is not dispatched and does not leak
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].event, None);
        assert_eq!(out[1].event.as_deref(), Some("e2"));
    }

    #[test]
    fn multi_line_data_joined_with_newline() {
        let out = events(&mut SseDecoder::new(), &[b"data: a\ndata:\ndata: c\n\n"]);
        assert_eq!(data(&out), vec!["a\n\nc"]);
    }

    #[test]
    fn id_with_nul_is_ignored() {
        let out = events(&mut SseDecoder::new(), &[b"id: 1\n\nid: a\0b\ndata: x\n\n"]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].id.as_deref(), Some("1"));
    }

    #[test]
    fn finish_dispatches_an_unterminated_last_event() {
        let mut d = SseDecoder::new();
        assert!(d.push(b"data: [DONE]").is_empty());
        assert_eq!(d.finish(), Some(ev("[DONE]")));
        let mut d = SseDecoder::new();
        assert!(d.push(b"data: a\n").is_empty());
        assert_eq!(d.finish(), Some(ev("a")));
        let mut d = SseDecoder::new();
        assert!(d.push(b": only a comment").is_empty());
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn oversize_event_is_an_error_and_stops_the_decoder() {
        let mut d = SseDecoder::with_max_event_bytes(64);
        let mut out = d.push(b"data: small\n\n");
        assert_eq!(out.len(), 1);
        // many short data lines: the event grows past 64 bytes
        out = d.push(&b"data: 0123456789\n".repeat(8));
        assert_eq!(
            out.last(),
            Some(&Err(SseError::EventTooLarge { limit: 64 }))
        );
        assert!(d.has_failed());
        assert!(d.push(b"\ndata: more\n\n").is_empty());
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn oversize_single_line_without_terminator_is_bounded() {
        let mut d = SseDecoder::with_max_event_bytes(1024);
        let chunk = [b'a'; 100];
        let mut err = None;
        for _ in 0..100 {
            let out = d.push(&chunk);
            if let Some(Err(e)) = out.into_iter().last() {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err, Some(SseError::EventTooLarge { limit: 1024 }));
        // comment lines count too (memory stays bounded)
        let mut d = SseDecoder::with_max_event_bytes(10);
        let out = d.push(b": a very long comment line");
        assert!(matches!(out.as_slice(), [Err(_)]));
    }

    #[test]
    fn events_before_an_oversize_one_are_delivered() {
        let mut d = SseDecoder::with_max_event_bytes(16);
        let out = d.push(b"data: ok\n\ndata: this one is far too long\n\n");
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], Ok(ev("ok")));
        assert!(out[1].is_err());
    }

    #[test]
    fn bom_only_at_start_and_split() {
        let out = events(
            &mut SseDecoder::new(),
            &[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"],
        );
        assert_eq!(data(&out), vec!["x"]);
        // A partial BOM followed by other bytes is content (an unknown field).
        let out = events(&mut SseDecoder::new(), &[b"\xEFdata: x\n\ndata: y\n\n"]);
        assert_eq!(data(&out), vec!["y"]);
    }
}
