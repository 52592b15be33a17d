//! TwiML documents CallLock answers the voice webhook with.
//!
//! When a call arrives Twilio POSTs to the number's voice webhook and runs
//! the XML document ("TwiML") it gets back (research note §1.1):
//!
//! - [`connect_stream`]: `<Connect><Stream url="wss://…">` — a
//!   **bidirectional** Media Stream (`<Start><Stream>` would only let us
//!   listen). Twilio does not go on to the next verb while the socket is
//!   open, and with nothing after `</Connect>` the call ends when our server
//!   closes the socket. Twilio forbids a query string in the stream URL, so
//!   per-call data (caller ID, called number) travels as `<Parameter name=
//!   value=>` children, which arrive in the stream's
//!   `start.customParameters`.
//! - [`say_and_hang_up`]: a line spoken by Twilio's own TTS, then
//!   `<Hangup/>` (a call turned away, e.g. when the server is at capacity).
//!
//! **Escaping.** Every interpolated value — URL, parameter names and
//! values, the spoken line — goes through [`escape`]: `&` `<` `>` `"` `'`
//! become `&amp;` `&lt;` `&gt;` `&quot;` `&apos;`, so the same function is
//! safe in attribute values and in text. Control characters other than
//! tab, newline and carriage return, and the non-characters U+FFFE/U+FFFF,
//! are **dropped**: XML 1.0 forbids C0 controls and U+FFFE/U+FFFF outright
//! (even escaped as `&#1;` the document would be ill-formed and Twilio would
//! reject the whole call), and discourages DEL and the C1 controls; none
//! of them belongs in a caller ID or a spoken line. Caller IDs are attacker-controlled: a `From` of
//! `"/><Hangup/>` stays inside its `value="…"` (the reference implementation
//! interpolated it unescaped, `calllock-spec.md` §8.1).

/// XML-escape `s` for an attribute value (quoted with `"` or `'`) or for
/// element text; drops the characters XML 1.0 cannot represent.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            // C0, DEL and C1 controls; U+FFFE and U+FFFF.
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// The XML declaration every document starts with.
pub const XML_DECLARATION: &str = r#"<?xml version="1.0" encoding="UTF-8"?>"#;

/// `<Response><Connect><Stream url="stream_url"><Parameter name=".."
/// value=".."/>…</Stream></Connect></Response>`, parameters in the given
/// order, everything escaped. `stream_url` should be an absolute `wss://`
/// URL without a query string (Twilio's rule; not checked here).
pub fn connect_stream(stream_url: &str, params: &[(&str, &str)]) -> String {
    let mut out = format!(
        "{XML_DECLARATION}<Response><Connect><Stream url=\"{}\">",
        escape(stream_url)
    );
    for (name, value) in params {
        out.push_str("<Parameter name=\"");
        out.push_str(&escape(name));
        out.push_str("\" value=\"");
        out.push_str(&escape(value));
        out.push_str("\"/>");
    }
    out.push_str("</Stream></Connect></Response>");
    out
}

/// `<Response><Say>text</Say><Hangup/></Response>`, the text escaped.
pub fn say_and_hang_up(text: &str) -> String {
    format!(
        "{XML_DECLARATION}<Response><Say>{}</Say><Hangup/></Response>",
        escape(text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stream_with_parameters() {
        let x = connect_stream(
            "wss://a.example/ws/twilio",
            &[("From", "+15125550100"), ("To", "+15125550000")],
        );
        assert_eq!(
            x,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Connect><Stream \
             url=\"wss://a.example/ws/twilio\"><Parameter name=\"From\" value=\"+15125550100\"/>\
             <Parameter name=\"To\" value=\"+15125550000\"/></Stream></Connect></Response>"
        );
    }

    #[test]
    fn a_stream_without_parameters() {
        assert_eq!(
            connect_stream("wss://a.example/ws/twilio", &[]),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Connect>\
             <Stream url=\"wss://a.example/ws/twilio\"></Stream></Connect></Response>"
        );
    }

    #[test]
    fn a_caller_id_injection_stays_inside_its_attribute() {
        let x = connect_stream(
            "wss://a/ws",
            &[
                ("From", "\"><Hangup/>"),
                ("To", "'/><Redirect>x</Redirect>"),
            ],
        );
        assert_eq!(
            x,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Connect><Stream url=\"wss://a/ws\">\
             <Parameter name=\"From\" value=\"&quot;&gt;&lt;Hangup/&gt;\"/>\
             <Parameter name=\"To\" value=\"&apos;/&gt;&lt;Redirect&gt;x&lt;/Redirect&gt;\"/>\
             </Stream></Connect></Response>"
        );
        assert!(!x.contains("<Hangup/>") && !x.contains("<Redirect>"), "{x}");
    }

    #[test]
    fn the_url_and_names_are_escaped_too() {
        let x = connect_stream("wss://a/ws\"x=<&", &[("n\"<", "v")]);
        assert!(x.contains("url=\"wss://a/ws&quot;x=&lt;&amp;\""), "{x}");
        assert!(x.contains("name=\"n&quot;&lt;\""), "{x}");
    }

    #[test]
    fn control_characters_are_dropped() {
        assert_eq!(
            escape("a\u{0}b\u{1}c\u{1b}d\u{7f}e\u{85}f\u{FFFE}\u{FFFF}g"),
            "abcdefg"
        );
        assert_eq!(escape("tab\tnl\ncr\r"), "tab\tnl\ncr\r");
        assert_eq!(escape("café ☎ 日本"), "café ☎ 日本");
    }

    #[test]
    fn say_then_hang_up() {
        assert_eq!(
            say_and_hang_up("Tom & Jerry <3 \"quoted\" it's"),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Say>Tom &amp; Jerry &lt;3 \
             &quot;quoted&quot; it&apos;s</Say><Hangup/></Response>"
        );
        let s = say_and_hang_up("</Say><Dial>+15550000000</Dial><Say>");
        assert!(!s.contains("<Dial>"), "{s}");
    }

    /// Written independently of `escape`: outside XML 1.0's `Char`
    /// production (Rust strings hold no surrogates), or DEL/C1.
    fn not_xml(c: char) -> bool {
        !matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{7E}' | '\u{A0}'..='\u{FFFD}' | '\u{10000}'..)
    }

    proptest! {
        /// Whatever the input, the escaped text has no markup character, no
        /// character XML 1.0 forbids, every `&` starts one of our five
        /// entities, and unescaping gives back the input minus the dropped
        /// characters.
        #[test]
        fn escaped_text_is_inert(s in any::<String>()) {
            let e = escape(&s);
            prop_assert!(!e.contains(['<', '>', '"', '\'']));
            prop_assert!(!e.chars().any(not_xml));
            let entities = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"];
            for (i, _) in e.match_indices('&') {
                prop_assert!(entities.iter().any(|ent| e[i..].starts_with(ent)), "{}", e);
            }
            let unescaped = e
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&");
            let kept: String = s
                .chars()
                .filter(|c| !not_xml(*c))
                .collect();
            prop_assert_eq!(unescaped, kept);
        }

        /// The document keeps its shape: exactly one `<Parameter` per
        /// parameter and the fixed skeleton, whatever the values.
        #[test]
        fn documents_keep_their_shape(values in proptest::collection::vec(any::<String>(), 0..5)) {
            let params: Vec<(&str, &str)> = values.iter().map(|v| ("From", v.as_str())).collect();
            let x = connect_stream("wss://a/ws", &params);
            prop_assert_eq!(x.matches('<').count(), 1 + 3 + params.len() + 3);
            prop_assert_eq!(x.matches("<Parameter ").count(), params.len());
            prop_assert!(x.ends_with("</Stream></Connect></Response>"));
        }
    }
}
