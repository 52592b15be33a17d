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

/// Install the process's log subscriber: `spec` as in [`env_filter`],
/// lines in `format` to `writer`. Returns the filter's warning, if any.
pub fn init<W>(
    spec: Option<&str>,
    transcripts: Transcripts,
    format: LogFormat,
    writer: W,
) -> Option<String>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let (filter, warning) = env_filter(spec, transcripts);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    let _ = match format {
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
        // Colour only for a person at a terminal: log collectors get
        // plain lines (a TRANSCRIPT_DUMP reader must find its JSON intact).
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
    };
    warning
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
        let (filter, _) = env_filter(spec, transcripts);
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(out.clone())
            .finish();
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
        let (filter, _) = env_filter(None, Transcripts::Withheld);
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(out.clone())
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .finish();
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

    #[test]
    fn a_bad_filter_is_reported_not_fatal() {
        let (_, warning) = env_filter(Some("info,=[bad"), Transcripts::Logged);
        assert!(warning.unwrap().contains("=[bad"));
        assert!(env_filter(Some("info"), Transcripts::Logged).1.is_none());
    }
}
