//! Log output of the `calllock` binary.
//!
//! `CALLLOCK_LOG` takes a `tracing` filter (`warn` by default; e.g. `info`,
//! `calllock=debug,providers=info`, `off`).
//!
//! The post-call transcript dump (SPEC §7.9: `TRANSCRIPT_DUMP|i/n|{call_sid,
//! phone, final_state, entries…}` lines on target [`TRANSCRIPT_TARGET`])
//! holds what callers said: names, addresses, phone numbers. Whether it is
//! written is decided by [`Transcripts`], never by the filter: on for the
//! commands a person runs at their own terminal (`chat`, `replay`, …), off
//! for a server (`serve`, `web`), whose logs go to a collector that should
//! not keep callers' details — the dashboard and `calllock calls show` read
//! calls back from the database. `CALLLOCK_LOG_TRANSCRIPTS=on|off` says
//! otherwise.
//!
//! `--log-format json` (env `CALLLOCK_LOG_FORMAT=json`) writes one JSON
//! object per line for a log collector; a served call's lines carry its
//! span, `{"span":{"name":"call","call_id":"CA…"}}`, whichever task wrote
//! them (the pipeline's stages, the speech vendors, post-call work).
//! Secrets (API keys, tokens, auth headers) are never logged.
//!
//! Every line is printable ([`PrintableLines`]): a control character or a
//! bidi override that came from outside (a vendor's error body, a
//! malformed message) is written out as a `\uXXXX` escape, never sent to
//! the operator's terminal or the collector as itself.

use std::io::IsTerminal;
use tracing_subscriber::filter::{Directive, EnvFilter};
use tracing_subscriber::fmt::MakeWriter;

/// How log lines are written (`--log-format`, env `CALLLOCK_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Readable lines (coloured at a terminal): for people.
    #[default]
    Text,
    /// One JSON object per line, with the call's span (`call_id`): for
    /// log collectors.
    Json,
}

/// Whether the transcript dump reaches the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transcripts {
    /// Every finished call's dump is written, whatever the filter says.
    Logged,
    /// No dump is written, whatever the filter says.
    Withheld,
}

impl Transcripts {
    /// `CALLLOCK_LOG_TRANSCRIPTS` (`on`/`off`; `value`), else `default`;
    /// with a warning when the value is neither.
    pub fn from_env(value: Option<&str>, default: Transcripts) -> (Transcripts, Option<String>) {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") => (default, None),
            Some("on" | "1" | "true" | "yes") => (Transcripts::Logged, None),
            Some("off" | "0" | "false" | "no") => (Transcripts::Withheld, None),
            Some(other) => (
                default,
                Some(format!(
                    "warning: CALLLOCK_LOG_TRANSCRIPTS={other:?} ignored (expected on or off)"
                )),
            ),
        }
    }
}

/// Install the process's log subscriber ([`subscriber`], colour when
/// stderr is a terminal). Returns the filter's warning, if any.
pub fn init<W>(
    spec: Option<&str>,
    transcripts: Transcripts,
    format: LogFormat,
    writer: W,
) -> Option<String>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    use tracing_subscriber::util::SubscriberInitExt;
    let colour = std::io::stderr().is_terminal();
    let (subscriber, warning) = subscriber(spec, transcripts, format, colour, writer);
    let _ = subscriber.try_init();
    warning
}

/// The log subscriber: `spec` as in [`env_filter`], lines in `format` to
/// `writer`, coloured when `colour` (text only). Every line passes through
/// [`PrintableLines`]; coloured text also has its fields escaped where
/// they are written (see [`PrintableLines`] for why).
pub fn subscriber<W>(
    spec: Option<&str>,
    transcripts: Transcripts,
    format: LogFormat,
    colour: bool,
    writer: W,
) -> (
    Box<dyn tracing::Subscriber + Send + Sync + 'static>,
    Option<String>,
)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let (filter, warning) = env_filter(spec, transcripts);
    let colour = colour && format == LogFormat::Text;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(PrintableLines::new(writer, colour));
    let subscriber: Box<dyn tracing::Subscriber + Send + Sync> = match format {
        LogFormat::Json => Box::new(
            builder
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .finish(),
        ),
        // Colour only for a person at a terminal: log collectors get
        // plain lines (a TRANSCRIPT_DUMP reader must find its JSON intact).
        LogFormat::Text if colour => Box::new(
            builder
                .with_ansi(true)
                .fmt_fields(escaped_fields())
                .finish(),
        ),
        LogFormat::Text => Box::new(builder.with_ansi(false).finish()),
    };
    (subscriber, warning)
}

/// Fields written as the default text format writes them (`message`
/// bare, the rest `name=value`), each value escaped as
/// [`agent::printable::escaped`] does: so that at a terminal, where the
/// formatter's own colours pass [`PrintableLines`], a value cannot carry
/// colours of its own either.
fn escaped_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + Send + Sync + 'static
{
    use tracing_subscriber::field::MakeExt;
    tracing_subscriber::fmt::format::debug_fn(
        |w: &mut tracing_subscriber::fmt::format::Writer<'_>,
         field: &tracing::field::Field,
         value: &dyn std::fmt::Debug| {
            let text = format!("{value:?}");
            let text = agent::printable::escaped(&text);
            match field.name() {
                "message" => write!(w, "{text}"),
                name => write!(w, "{}={text}", name.trim_start_matches("r#")),
            }
        },
    )
    .delimited(" ")
}

/// The writer every log line goes through: what reaches a terminal or a
/// collector carries no control character (a line break and a tab aside)
/// and no bidi control — an ESC would start a terminal escape, a CR or a
/// backspace would rewrite what the operator reads, a bidi override would
/// show a line in another order than it was written. Each is written out
/// as a `\uXXXX` escape ([`agent::printable::escaped`]), so the line still
/// says what came in and a JSON line stays JSON.
///
/// The engine logs no caller's words; but a vendor's error body, a
/// malformed message's text or a header can carry anything, and this is
/// the one place every line passes. At a terminal (`colour`), the colour
/// sequences the formatter writes itself — SGR with colour, weight and
/// italics only — pass; every field value was escaped before that (see
/// [`subscriber`]), so those are the formatter's own.
#[derive(Clone)]
pub struct PrintableLines<M> {
    inner: M,
    colour: bool,
}

impl<M> PrintableLines<M> {
    /// Lines for `inner`, the formatter's colours kept when `colour`.
    pub fn new(inner: M, colour: bool) -> Self {
        PrintableLines { inner, colour }
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for PrintableLines<M> {
    type Writer = PrintableWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        PrintableWriter {
            inner: self.inner.make_writer(),
            colour: self.colour,
        }
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        PrintableWriter {
            inner: self.inner.make_writer_for(meta),
            colour: self.colour,
        }
    }
}

/// One line's writer of [`PrintableLines`]. The formatter writes a whole
/// line at once; bytes that are not UTF-8 become U+FFFD.
pub struct PrintableWriter<W> {
    inner: W,
    colour: bool,
}

impl<W: std::io::Write> std::io::Write for PrintableWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(buf);
        let line = printable_line(&text, self.colour);
        self.inner.write_all(line.as_bytes())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `line` as a log may carry it (see [`PrintableLines`]).
fn printable_line(line: &str, colour: bool) -> std::borrow::Cow<'_, str> {
    // One event is one line: a line break inside it (a vendor's error
    // page, a forged `TRANSCRIPT_DUMP|…` line) is written out too.
    let (body, end) = match line.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (line, ""),
    };
    if body.contains('\n') {
        let joined = body.replace('\n', "\\u000a");
        let mut out = printable_line(&joined, colour).into_owned();
        out.push_str(end);
        return out.into();
    }
    if !colour || !line.contains('\u{1b}') {
        return agent::printable::escaped(line);
    }
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        let n = match colour_sequence(rest) {
            Some(n) => {
                out.push_str(&rest[..n]);
                n
            }
            None => {
                agent::printable::push_escaped(&mut out, c);
                c.len_utf8()
            }
        };
        rest = &rest[n..];
    }
    out.into()
}

/// The length of the colour sequence `s` starts with, if it starts with
/// one: `ESC [ p ; … m` whose parameters only set colour (30–39, 90–97),
/// weight or italics (1–3, 22, 23), or reset (0) — what the formatter
/// writes. Anything else (clearing the screen, moving the cursor, hiding
/// text, a window title) is not one.
fn colour_sequence(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\u{1b}[")?;
    let end = body.find('m').filter(|&end| end <= 16)?;
    let allowed = body[..end].split(';').all(|p| {
        matches!(
            p.parse::<u8>(),
            Ok(0..=3 | 22 | 23 | 30..=37 | 39 | 90..=97)
        )
    });
    allowed.then_some(2 + end + 1)
}

/// The `tracing` target of the transcript dump lines.
pub const TRANSCRIPT_TARGET: &str = "calllock::transcript";

/// The filter for `spec` (the value of `CALLLOCK_LOG`, `None` when unset)
/// with the transcript dump on or off as `transcripts` says, and a warning
/// to print when `spec` could not be read whole.
pub fn env_filter(spec: Option<&str>, transcripts: Transcripts) -> (EnvFilter, Option<String>) {
    let mut filter = EnvFilter::new("warn");
    let mut bad = Vec::new();
    for part in spec.unwrap_or("warn").split(',').map(str::trim) {
        if part.is_empty() || part.starts_with(TRANSCRIPT_TARGET) {
            // Ours below wins over anything said about the dump.
            continue;
        }
        match part.parse::<Directive>() {
            Ok(d) => filter = filter.add_directive(d),
            Err(_) => bad.push(part.to_string()),
        }
    }
    let level = match transcripts {
        Transcripts::Logged => "info",
        Transcripts::Withheld => "off",
    };
    let dump: Directive = format!("{TRANSCRIPT_TARGET}={level}")
        .parse()
        .expect("a valid directive");
    let warning = (!bad.is_empty()).then(|| {
        format!(
            "warning: CALLLOCK_LOG: ignored {} (expected e.g. `info` or `calllock=debug,providers=warn`)",
            bad.join(", ")
        )
    });
    (filter.add_directive(dump), warning)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    /// What reaches the log under `spec`, transcripts logged.
    fn logged(spec: Option<&str>) -> String {
        logged_with(spec, Transcripts::Logged)
    }

    fn logged_with(spec: Option<&str>, transcripts: Transcripts) -> String {
        let out = Captured::default();
        let (subscriber, _) = subscriber(spec, transcripts, LogFormat::Text, false, out.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "calllock::transcript", "TRANSCRIPT_DUMP|1/1|{{}}");
            tracing::info!(target: "calllock::call::delivery", "an info line");
            tracing::warn!(target: "calllock::call::delivery", "a warning");
        });
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn the_dump_is_written_whatever_the_filter_says() {
        for spec in [
            None,
            Some("off"),
            Some("error"),
            Some("warn"),
            Some("calllock=off"),
            Some("calllock::transcript=off"),
            Some("off,calllock::transcript=error"),
            Some("not a filter!!"),
        ] {
            let log = logged(spec);
            assert!(log.contains("TRANSCRIPT_DUMP|1/1|"), "{spec:?}: {log:?}");
        }
    }

    #[test]
    fn a_servers_log_holds_no_transcript_whatever_the_filter_says() {
        for spec in [
            None,
            Some("info"),
            Some("trace"),
            Some("calllock::transcript=info"),
            Some("calllock=debug"),
        ] {
            let log = logged_with(spec, Transcripts::Withheld);
            assert!(!log.contains("TRANSCRIPT_DUMP"), "{spec:?}: {log:?}");
        }
        // The rest still follows the filter.
        assert!(logged_with(Some("info"), Transcripts::Withheld).contains("an info line"));
    }

    #[test]
    fn calllock_log_transcripts_says_on_or_off() {
        use Transcripts::*;
        assert_eq!(Transcripts::from_env(None, Withheld), (Withheld, None));
        assert_eq!(Transcripts::from_env(Some("on"), Withheld), (Logged, None));
        assert_eq!(
            Transcripts::from_env(Some(" OFF "), Logged),
            (Withheld, None)
        );
        let (t, warning) = Transcripts::from_env(Some("maybe"), Withheld);
        assert_eq!(t, Withheld);
        assert!(warning.unwrap().contains("maybe"));
    }

    #[test]
    fn the_rest_follows_the_filter() {
        let log = logged(None);
        assert!(
            log.contains("a warning") && !log.contains("an info line"),
            "{log}"
        );
        let log = logged(Some("off"));
        assert!(!log.contains("a warning"), "{log}");
        let log = logged(Some("info"));
        assert!(log.contains("an info line"), "{log}");
    }

    #[test]
    fn json_lines_carry_the_calls_span() {
        let out = Captured::default();
        // The default filter (`warn`): the call's span must still exist.
        let (subscriber, _) = subscriber(
            None,
            Transcripts::Withheld,
            LogFormat::Json,
            false,
            out.clone(),
        );
        tracing::subscriber::with_default(subscriber, || {
            // As `serve::twilio_call` makes it.
            let span = tracing::error_span!("call", call_id = "CA123");
            let _in = span.enter();
            tracing::warn!(dropped = 3, "caller audio frames dropped");
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(line["level"], "WARN", "{line}");
        assert_eq!(line["fields"]["message"], "caller audio frames dropped");
        assert_eq!(line["fields"]["dropped"], 3);
        assert_eq!(line["span"]["name"], "call");
        assert_eq!(line["span"]["call_id"], "CA123");
    }

    /// Text from outside, as a vendor's error or a malformed message may
    /// carry it: an escape that clears the screen, colours, a bell, a
    /// carriage return, a NUL, an 8-bit CSI, a bidi override and a line
    /// separator.
    const RAW: &str =
        "\u{1b}[2J\u{1b}[31mgas\u{7}\r in the \u{202E}kitchen\u{202C}\u{9b}0m\u{0}\u{2028}!";

    /// Every line `format` writes (colour or not) for events and a span
    /// carrying [`RAW`] in every way a field can.
    fn logged_raw(format: LogFormat, colour: bool) -> String {
        let out = Captured::default();
        let (subscriber, _) = subscriber(
            Some("info"),
            Transcripts::Logged,
            format,
            colour,
            out.clone(),
        );
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::error_span!("call", call_id = RAW);
            let _in = span.enter();
            tracing::warn!(said = RAW, "vendor error: {RAW}");
            tracing::warn!(said = %RAW, debug = ?RAW, "second");
            tracing::error!(
                error = &std::io::Error::other(RAW) as &dyn std::error::Error,
                "third"
            );
        });
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    fn unsafe_char(c: char) -> bool {
        (c.is_control() && c != '\n' && c != '\t')
            || agent::printable::is_bidi_control(c)
            || matches!(c, '\u{2028}' | '\u{2029}')
    }

    /// Issue 27, point 1 (logs): nothing from outside reaches a log line
    /// as a control character, an escape or a bidi override, in either
    /// format; what came in is still readable, escaped.
    #[test]
    fn a_log_line_carries_no_control_escape_or_bidi_override() {
        let text = logged_raw(LogFormat::Text, false);
        assert_eq!(text.lines().count(), 3, "{text:?}");
        assert!(!text.chars().any(unsafe_char), "{text:?}");
        assert!(text.contains("\\u001b[2J"), "{text}");
        assert!(text.contains("\\u202ekitchen"), "{text}");

        let json = logged_raw(LogFormat::Json, false);
        assert!(!json.chars().any(unsafe_char), "{json:?}");
        let lines: Vec<serde_json::Value> = json
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
            .collect();
        assert_eq!(lines.len(), 3);
        // A collector reads back exactly what came in.
        assert_eq!(lines[0]["fields"]["said"], RAW, "{json}");
        assert_eq!(lines[0]["span"]["call_id"], RAW, "{json}");
    }

    /// At a terminal the formatter's colours stay; colours, or anything
    /// else, from outside do not.
    #[test]
    fn at_a_terminal_only_the_formatters_own_colours_pass() {
        let text = logged_raw(LogFormat::Text, true);
        assert_eq!(text.lines().count(), 3, "{text:?}");
        assert!(text.contains('\u{1b}'), "no colour at all: {text:?}");
        // Every ESC left starts a colour sequence, and none is RAW's red.
        let mut rest = text.as_str();
        while let Some(at) = rest.find('\u{1b}') {
            let n = colour_sequence(&rest[at..])
                .unwrap_or_else(|| panic!("a bare escape: {:?}", &rest[at..]));
            rest = &rest[at + n..];
        }
        assert!(!text.contains("\u{1b}[31mgas"), "{text:?}");
        assert!(!text.contains("\u{1b}[2J"), "{text:?}");
        let others = |c: char| unsafe_char(c) && c != '\u{1b}';
        assert!(!text.chars().any(others), "{text:?}");
        assert!(text.contains("\\u001b[31mgas"), "{text}");
    }

    #[test]
    fn colour_sequences_are_colour_only() {
        for ok in [
            "\u{1b}[0m",
            "\u{1b}[2m",
            "\u{1b}[1;31m",
            "\u{1b}[97mx",
            "\u{1b}[3m",
        ] {
            assert!(colour_sequence(ok).is_some(), "{ok:?}");
        }
        for bad in [
            "\u{1b}[2J",
            "\u{1b}[8m",
            "\u{1b}[5m",
            "\u{1b}[m",
            "\u{1b}[31;8m",
            "\u{1b}]0;title\u{7}",
            "\u{1b}[38;5;1m",
            "\u{1b}[1A",
            "\u{1b}",
            "\u{1b}[31",
        ] {
            assert!(colour_sequence(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_bad_filter_is_reported_not_fatal() {
        let (_, warning) = env_filter(Some("info,=[bad"), Transcripts::Logged);
        assert!(warning.unwrap().contains("=[bad"));
        assert!(env_filter(Some("info"), Transcripts::Logged).1.is_none());
    }
}
