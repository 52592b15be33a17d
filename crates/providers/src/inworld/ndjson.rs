//! Newline-delimited JSON framing (sans-IO).
//!
//! Inworld's `voice:stream` body is one JSON object per line. TCP hands
//! the body over in arbitrary pieces, so a line may arrive in several reads
//! and one read may hold several lines. [`LineSplitter`] buffers only the
//! unfinished line, yields each complete one, trims surrounding whitespace
//! (so `\r\n` line ends work) and skips blank lines. A line longer than its
//! limit is an error as soon as the limit is passed — before its end
//! arrives — so a broken or hostile server cannot make the client buffer
//! without bound. After that error the splitter yields nothing more.

/// A line was longer than the splitter's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a response line is longer than {limit} bytes")]
pub struct LineTooLong {
    /// The limit, in bytes (a line's own `\r` counts, its `\n` does not).
    pub limit: usize,
}

/// Splits a byte stream into non-blank, trimmed lines.
#[derive(Debug, Clone)]
pub struct LineSplitter {
    /// The unfinished line.
    pending: Vec<u8>,
    limit: usize,
    failed: bool,
}

fn trim(line: &[u8]) -> &[u8] {
    line.trim_ascii()
}

impl LineSplitter {
    /// A splitter refusing lines longer than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        LineSplitter {
            pending: Vec::new(),
            limit,
            failed: false,
        }
    }

    /// Whether a line was too long (nothing more comes out).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Bytes held for the unfinished line.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Feed the next bytes; returns the lines they complete, in order (an
    /// error is always last).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Result<Vec<u8>, LineTooLong>> {
        let mut out = Vec::new();
        if self.failed {
            return out;
        }
        let mut rest = bytes;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(nl);
            rest = tail.get(1..).unwrap_or_default();
            if self.pending.len() + head.len() > self.limit {
                return self.fail(out);
            }
            let line = if self.pending.is_empty() {
                trim(head).to_vec()
            } else {
                self.pending.extend_from_slice(head);
                let whole = std::mem::take(&mut self.pending);
                trim(&whole).to_vec()
            };
            if !line.is_empty() {
                out.push(Ok(line));
            }
        }
        if self.pending.len() + rest.len() > self.limit {
            return self.fail(out);
        }
        self.pending.extend_from_slice(rest);
        out
    }

    /// The body ended: the last line if it had no line end (and is not
    /// blank).
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        if self.failed {
            return None;
        }
        let whole = std::mem::take(&mut self.pending);
        let line = trim(&whole);
        (!line.is_empty()).then(|| line.to_vec())
    }

    fn fail(
        &mut self,
        mut out: Vec<Result<Vec<u8>, LineTooLong>>,
    ) -> Vec<Result<Vec<u8>, LineTooLong>> {
        self.failed = true;
        self.pending = Vec::new();
        out.push(Err(LineTooLong { limit: self.limit }));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &mut LineSplitter, pieces: &[&[u8]]) -> Vec<Result<Vec<u8>, LineTooLong>> {
        let mut out = Vec::new();
        for p in pieces {
            out.extend(s.push(p));
        }
        if let Some(l) = s.finish() {
            out.push(Ok(l));
        }
        out
    }

    #[test]
    fn lines_across_reads_crlf_and_blank_lines() {
        let mut s = LineSplitter::new(100);
        let got = all(
            &mut s,
            &[b"{\"a\"", b":1}\r\n\r\n  \n{\"b\":2}\n{\"c\"", b":3}"],
        );
        let want: Vec<Result<Vec<u8>, LineTooLong>> = vec![
            Ok(b"{\"a\":1}".to_vec()),
            Ok(b"{\"b\":2}".to_vec()),
            Ok(b"{\"c\":3}".to_vec()),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn every_split_gives_the_same_lines() {
        let body = b"one\r\ntwo\n\nthree\r\n  four  \nfive";
        let mut whole = LineSplitter::new(64);
        let want = all(&mut whole, &[body]);
        assert_eq!(want.len(), 5);
        for i in 0..=body.len() {
            for j in i..=body.len() {
                let mut s = LineSplitter::new(64);
                let got = all(&mut s, &[&body[..i], &body[i..j], &body[j..]]);
                assert_eq!(got, want, "split at {i}, {j}");
            }
        }
    }

    #[test]
    fn a_too_long_line_fails_before_its_end_and_then_nothing() {
        let mut s = LineSplitter::new(8);
        assert_eq!(s.push(b"12345678\n"), vec![Ok(b"12345678".to_vec())]);
        assert_eq!(s.push(b"1234"), vec![]);
        assert_eq!(s.push(b"56789"), vec![Err(LineTooLong { limit: 8 })]);
        assert!(s.failed());
        assert_eq!(s.pending_len(), 0);
        assert_eq!(s.push(b"ok\n"), vec![]);
        assert_eq!(s.finish(), None);
        // A long line inside one read, after a good one.
        let mut s = LineSplitter::new(4);
        let got = s.push(b"ab\nabcdefgh\ncd\n");
        assert_eq!(got, vec![Ok(b"ab".to_vec()), Err(LineTooLong { limit: 4 })]);
    }
}
