//! `X-Twilio-Signature`: proof that a request came from Twilio.
//!
//! Twilio signs every webhook it sends, and the HTTP upgrade request that
//! opens a Media Stream, with the account's **auth token**. Nobody without
//! the token can produce the header, so a server that checks it knows the
//! request is Twilio's and was not altered on the way. The algorithm, as
//! implemented by twilio-python (`twilio/request_validator.py`) and
//! described on Twilio's "Webhooks security" page:
//!
//! 1. Start with the **full URL Twilio requested**, exactly, query string
//!    included (`https://host/twiml?x=1`).
//! 2. For a form-encoded POST, take the parameter **names in sorted byte
//!    order**; for each name append the name immediately followed by its
//!    value, with no separators (`From+15125550100To+15125550000`). A name
//!    sent several times contributes `name value` once per distinct value,
//!    values sorted (twilio-python sorts the set of values, so identical
//!    repeats count once). A GET — and the WebSocket upgrade — has no
//!    parameters: the string to sign is the URL alone.
//! 3. HMAC-SHA1 of that string with the auth token (UTF-8) as the key;
//!    the header is the standard Base64 of the 20-byte digest (28
//!    characters).
//!
//! [`expected`] computes the header; [`validate`] checks one in constant
//! time (the [`subtle`] crate), so that the time taken does not tell an
//! attacker how many leading characters of a forged signature were right.
//!
//! **Which URL.** For the voice webhook it is the public URL Twilio was
//! configured with (`https://<public host>/twiml`). For the Media Streams
//! upgrade it is the `wss://` URL of `<Stream url="…">` with no parameters;
//! behind a TLS-terminating proxy the server sees `http`, so it must rebuild
//! `wss://<public host><path>` itself — signing the `https://` form fails
//! (research note §1.9). Callers build the URL; this module only signs it.
//!
//! **The port quirk.** Twilio's signer is inconsistent about default ports
//! (twilio-python: "sig generation on back end is inconsistent"), so
//! [`validate`] accepts a signature over the URL as given, over the URL
//! with an explicit default port removed (`https://h:443/x` → `https://h/x`)
//! and over the URL with the default port added (`https://h/x` →
//! `https://h:443/x`): `:443` for `https`/`wss`, `:80` for `http`/`ws`.
//! twilio-python goes further and strips *any* port; we do not: a
//! non-default port is part of the address that was signed.
//!
//! **Form bodies.** The server must sign exactly the parameters it
//! received, so [`parse_form`] decodes an `application/x-www-form-urlencoded`
//! body into name/value pairs (blank values kept: Twilio signs `Digits=` as
//! `Digits`). JSON bodies (`bodySHA256`) are not used by voice webhooks and
//! are not handled here.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use std::collections::BTreeMap;
use subtle::{Choice, ConstantTimeEq};

/// The `X-Twilio-Signature` Twilio sends for a request to `url` carrying
/// these form parameters (`&[]` for a GET or a WebSocket upgrade).
///
/// The order of `params` does not matter; repeated names and values are
/// handled as twilio-python does (values sorted, identical ones once).
pub fn expected(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    // Names in byte order (`str`'s `Ord` is byte order, which for UTF-8 is
    // also Unicode code-point order, the order Python's `sorted` uses).
    let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, value) in params {
        by_name.entry(name).or_default().push(value);
    }
    let mut mac = match Hmac::<Sha1>::new_from_slice(auth_token.as_bytes()) {
        Ok(m) => m,
        // HMAC accepts keys of any length (long keys are hashed first), so
        // this cannot happen; an empty string never validates anything.
        Err(_) => return String::new(),
    };
    mac.update(url.as_bytes());
    for (name, mut values) in by_name {
        values.sort_unstable();
        values.dedup();
        for value in values {
            mac.update(name.as_bytes());
            mac.update(value.as_bytes());
        }
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `header` (the `X-Twilio-Signature` value) is Twilio's signature
/// of a request to `url` with these form parameters.
///
/// Accepts the default-port variants of `url` described in the module
/// docs. An empty, truncated or non-Base64 header is simply `false`; this
/// never panics. Every candidate is compared in constant time.
pub fn validate(auth_token: &str, url: &str, params: &[(String, String)], header: &str) -> bool {
    let header = header.trim();
    if header.is_empty() {
        return false;
    }
    let mut ok = Choice::from(0);
    for candidate in url_variants(url) {
        ok |= expected(auth_token, &candidate, params)
            .as_bytes()
            .ct_eq(header.as_bytes());
    }
    ok.into()
}

/// `url` as given, then (for `http`, `https`, `ws`, `wss`) the same URL
/// without its explicit default port, or with the default port added.
fn url_variants(url: &str) -> Vec<String> {
    let mut out = vec![url.to_string()];
    let Some((scheme, rest)) = url.split_once("://") else {
        return out;
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" | "wss" => "443",
        "http" | "ws" => "80",
        _ => return out,
    };
    // The authority runs to the first `/`, `?` or `#`.
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    // `user:password@` may precede the host; its colon is not a port.
    let host_start = authority.rfind('@').map_or(0, |at| at + 1);
    let (userinfo, host_port) = authority.split_at(host_start);
    // An IPv6 literal (`[::1]:443`) has colons inside its brackets.
    let colon = match host_port.rfind(']') {
        Some(bracket) => host_port[bracket..].find(':').map(|i| bracket + i),
        None => host_port.rfind(':'),
    };
    match colon {
        Some(i) if &host_port[i + 1..] == default_port => {
            out.push(format!("{scheme}://{userinfo}{}{tail}", &host_port[..i]));
        }
        // Some other (or an empty) port: signed as written.
        Some(_) => {}
        None if host_port.is_empty() => {}
        None => out.push(format!(
            "{scheme}://{userinfo}{host_port}:{default_port}{tail}"
        )),
    }
    out
}

/// Decode an `application/x-www-form-urlencoded` body (or a query string)
/// into name/value pairs, in the order they appear.
///
/// Pairs are separated by `&`; the first `=` separates name from value (a
/// pair without `=` has an empty value; empty pairs are skipped). In names
/// and values `+` is a space and `%XX` (two hex digits) is that byte; a `%`
/// not followed by two hex digits is kept literally. The decoded bytes are
/// read as UTF-8, invalid sequences replaced by U+FFFD. Never panics.
pub fn parse_form(body: &[u8]) -> Vec<(String, String)> {
    body.split(|b| *b == b'&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = match pair.iter().position(|b| *b == b'=') {
                Some(eq) => (&pair[..eq], &pair[eq + 1..]),
                None => (pair, &[][..]),
            };
            (decode_component(name), decode_component(value))
        })
        .collect()
}

/// One name or value of a form: `+` → space, `%XX` → byte.
fn decode_component(s: &[u8]) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' => out.push(b' '),
            b'%' => match (
                s.get(i + 1).copied().and_then(hex),
                s.get(i + 2).copied().and_then(hex),
            ) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The worked example of Twilio's "Webhooks security" page: auth token
    /// `12345`, this URL and these five parameters sign to this value. We
    /// recomputed it independently once with Python's standard library:
    ///
    /// ```text
    /// s = url + "CallSidCA1234567890ABCDE" + "Caller+12349013030" + …
    /// base64.b64encode(hmac.new(b"12345", s.encode(), hashlib.sha1).digest())
    /// ```
    const DOC_TOKEN: &str = "12345";
    const DOC_URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
    const DOC_SIGNATURE: &str = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";

    fn doc_params() -> Vec<(String, String)> {
        p(&[
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ])
    }

    #[test]
    fn twilios_documented_example() {
        assert_eq!(expected(DOC_TOKEN, DOC_URL, &doc_params()), DOC_SIGNATURE);
        assert!(validate(DOC_TOKEN, DOC_URL, &doc_params(), DOC_SIGNATURE));
    }

    /// A Media Streams upgrade: the `wss://` URL, no parameters. Computed
    /// once with Python: `base64.b64encode(hmac.new(b"12345",
    /// b"wss://calllock.example/ws/twilio", hashlib.sha1).digest())`.
    #[test]
    fn a_websocket_upgrade_signs_the_wss_url_alone() {
        let url = "wss://calllock.example/ws/twilio";
        let sig = "t51mETWMSwfSyUmh5LAaoxr6N8M=";
        assert_eq!(expected(DOC_TOKEN, url, &[]), sig);
        assert!(validate(DOC_TOKEN, url, &[], sig));
        // The same path over https (what a proxy shows the server) fails.
        assert!(!validate(
            DOC_TOKEN,
            "https://calllock.example/ws/twilio",
            &[],
            sig
        ));
    }

    /// Repeated names and values, and a non-ASCII value, computed once with
    /// Python the way twilio-python does (`for n in sorted(set(names)): for v
    /// in sorted(set(values of n)): s += n + v`) over `A=2, A=1, A=2, B=é,
    /// a=x` and `https://calllock.example/twiml`, token `12345`.
    #[test]
    fn repeated_values_sorted_and_deduplicated_like_twilio_python() {
        let url = "https://calllock.example/twiml";
        let params = p(&[("A", "2"), ("A", "1"), ("A", "2"), ("B", "é"), ("a", "x")]);
        assert_eq!(
            expected(DOC_TOKEN, url, &params),
            "OXnwkjHS338Y37MBG8oZ4x/0+R4="
        );
        let deduplicated = p(&[("a", "x"), ("B", "é"), ("A", "1"), ("A", "2")]);
        assert_eq!(
            expected(DOC_TOKEN, url, &params),
            expected(DOC_TOKEN, url, &deduplicated)
        );
    }

    #[test]
    fn reordered_parameters_still_match() {
        let mut params = doc_params();
        params.reverse();
        assert!(validate(DOC_TOKEN, DOC_URL, &params, DOC_SIGNATURE));
    }

    #[test]
    fn a_wrong_token_fails() {
        assert!(!validate("12346", DOC_URL, &doc_params(), DOC_SIGNATURE));
        assert!(!validate("", DOC_URL, &doc_params(), DOC_SIGNATURE));
    }

    #[test]
    fn a_wrong_url_fails() {
        for url in [
            "https://mycompany.com/myapp.php?foo=1&bar=3",
            "https://mycompany.com/myapp.php?bar=2&foo=1",
            "https://mycompany.com/myapp.php",
            "http://mycompany.com/myapp.php?foo=1&bar=2",
            "https://evil.example/myapp.php?foo=1&bar=2",
            "https://mycompany.com/myapp.php/?foo=1&bar=2",
        ] {
            assert!(
                !validate(DOC_TOKEN, url, &doc_params(), DOC_SIGNATURE),
                "{url}"
            );
        }
    }

    #[test]
    fn a_missing_extra_or_changed_parameter_fails() {
        let params = doc_params();
        assert!(!validate(DOC_TOKEN, DOC_URL, &params[1..], DOC_SIGNATURE));
        let mut extra = params.clone();
        extra.push(("CallStatus".into(), "ringing".into()));
        assert!(!validate(DOC_TOKEN, DOC_URL, &extra, DOC_SIGNATURE));
        // Even an extra blank parameter: Twilio signs the name.
        let mut blank = params.clone();
        blank.push(("SpeechResult".into(), String::new()));
        assert!(!validate(DOC_TOKEN, DOC_URL, &blank, DOC_SIGNATURE));
        let mut changed = params.clone();
        changed[2].1 = "9999".into();
        assert!(!validate(DOC_TOKEN, DOC_URL, &changed, DOC_SIGNATURE));
        // A second, different value for a name is a different request.
        let mut second = params;
        second.push(("Digits".into(), "5".into()));
        assert!(!validate(DOC_TOKEN, DOC_URL, &second, DOC_SIGNATURE));
    }

    #[test]
    fn garbage_headers_fail() {
        let truncated = &DOC_SIGNATURE[..DOC_SIGNATURE.len() - 1];
        let longer = format!("{DOC_SIGNATURE}=");
        let lower = DOC_SIGNATURE.to_lowercase();
        for header in [
            "",
            "   ",
            "%%%",
            "not base64 at all",
            truncated,
            longer.as_str(),
            lower.as_str(),
            "\u{0}",
            "é",
        ] {
            assert!(
                !validate(DOC_TOKEN, DOC_URL, &doc_params(), header),
                "{header:?}"
            );
        }
        // Surrounding whitespace (a sloppy proxy) is tolerated.
        let padded = format!(" {DOC_SIGNATURE} ");
        assert!(validate(DOC_TOKEN, DOC_URL, &doc_params(), &padded));
    }

    #[test]
    fn the_default_port_removed() {
        for (signed, received) in [
            ("https://x.example/twiml", "https://x.example:443/twiml"),
            ("wss://x.example/ws/twilio", "wss://x.example:443/ws/twilio"),
            ("http://127.0.0.1/twiml", "http://127.0.0.1:80/twiml"),
            ("ws://127.0.0.1/ws/twilio", "ws://127.0.0.1:80/ws/twilio"),
            ("https://x.example?a=1", "https://x.example:443?a=1"),
            ("https://u:pw@x.example/t", "https://u:pw@x.example:443/t"),
            ("https://[::1]/twiml", "https://[::1]:443/twiml"),
        ] {
            let sig = expected("tok", signed, &doc_params());
            assert!(validate("tok", received, &doc_params(), &sig), "{received}");
        }
    }

    #[test]
    fn the_default_port_added() {
        for (signed, received) in [
            ("https://x.example:443/twiml", "https://x.example/twiml"),
            ("wss://x.example:443/ws/twilio", "wss://x.example/ws/twilio"),
            ("http://127.0.0.1:80/twiml", "http://127.0.0.1/twiml"),
            ("ws://127.0.0.1:80/ws/twilio", "ws://127.0.0.1/ws/twilio"),
            ("https://u:pw@x.example:443/t", "https://u:pw@x.example/t"),
            ("https://[::1]:443/twiml", "https://[::1]/twiml"),
        ] {
            let sig = expected("tok", signed, &[]);
            assert!(validate("tok", received, &[], &sig), "{received}");
        }
    }

    #[test]
    fn other_ports_are_part_of_the_url() {
        let sig = expected("tok", "http://127.0.0.1:8765/twiml", &[]);
        assert!(validate("tok", "http://127.0.0.1:8765/twiml", &[], &sig));
        assert!(!validate("tok", "http://127.0.0.1/twiml", &[], &sig));
        assert!(!validate("tok", "http://127.0.0.1:80/twiml", &[], &sig));
        // The wrong default for the scheme is not a default.
        let sig = expected("tok", "https://x.example:80/twiml", &[]);
        assert!(!validate("tok", "https://x.example/twiml", &[], &sig));
        let sig = expected("tok", "wss://x.example/ws", &[]);
        assert!(!validate("tok", "wss://x.example:80/ws", &[], &sig));
    }

    #[test]
    fn url_variants_of_odd_urls() {
        assert_eq!(url_variants("not a url"), vec!["not a url"]);
        assert_eq!(url_variants("ftp://x/y"), vec!["ftp://x/y"]);
        assert_eq!(url_variants("https://"), vec!["https://"]);
        assert_eq!(url_variants("https://x:"), vec!["https://x:"]);
        assert_eq!(
            url_variants("HTTPS://x#f"),
            vec!["HTTPS://x#f", "HTTPS://x:443#f"]
        );
        // A colon in the path is not a port.
        assert_eq!(
            url_variants("https://x/a:443"),
            vec!["https://x/a:443", "https://x:443/a:443"]
        );
    }

    #[test]
    fn forms() {
        assert_eq!(
            parse_form(b"From=%2B1512+555&To=&x&&bad=%zz%4&eq=a=b"),
            p(&[
                ("From", "+1512 555"),
                ("To", ""),
                ("x", ""),
                ("bad", "%zz%4"),
                ("eq", "a=b"),
            ])
        );
        assert_eq!(parse_form(b""), p(&[]));
        assert_eq!(parse_form(b"&&"), p(&[]));
        assert_eq!(parse_form(b"a=%"), p(&[("a", "%")]));
        assert_eq!(parse_form(b"a=%4"), p(&[("a", "%4")]));
        assert_eq!(parse_form(b"a=%41"), p(&[("a", "A")]));
        assert_eq!(parse_form(b"a=%4a%4A"), p(&[("a", "JJ")]));
        assert_eq!(parse_form(b"%3D=%26"), p(&[("=", "&")]));
        assert_eq!(parse_form(b"n=%C3%A9"), p(&[("n", "é")]));
        assert_eq!(parse_form(b"n=%FF"), p(&[("n", "\u{FFFD}")]));
        assert_eq!(parse_form(b"n=%2B%2b+"), p(&[("n", "++ ")]));
    }

    /// A Twilio form body, parsed and signed, matches the documented
    /// example (the server's path: raw body → parse_form → validate).
    #[test]
    fn the_documented_example_from_its_raw_body() {
        let body = b"To=%2B18005551212&CallSid=CA1234567890ABCDE&Digits=1234\
                     &From=%2B12349013030&Caller=%2B12349013030";
        assert!(validate(
            DOC_TOKEN,
            DOC_URL,
            &parse_form(body),
            DOC_SIGNATURE
        ));
    }

    fn any_params() -> impl Strategy<Value = Vec<(String, String)>> {
        proptest::collection::vec((".{0,12}", ".{0,12}"), 0..8)
    }

    proptest! {
        #[test]
        fn never_panics(
            token in ".{0,40}",
            url in ".{0,80}",
            header in ".{0,40}",
            body in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let params = parse_form(&body);
            let _ = expected(&token, &url, &params);
            let _ = validate(&token, &url, &params, &header);
        }

        #[test]
        fn what_is_signed_validates_and_any_other_header_does_not(
            token in ".{0,40}",
            url in ".{0,80}",
            params in any_params(),
            at in 0usize..28,
        ) {
            let sig = expected(&token, &url, &params);
            prop_assert_eq!(sig.len(), 28);
            prop_assert!(validate(&token, &url, &params, &sig));
            let mut shuffled = params.clone();
            shuffled.reverse();
            prop_assert!(validate(&token, &url, &shuffled, &sig));
            // Change one character to another Base64 character.
            let mut forged = sig.clone().into_bytes();
            forged[at] = if forged[at] == b'A' { b'B' } else { b'A' };
            let forged = String::from_utf8(forged).unwrap();
            prop_assert!(!validate(&token, &url, &params, &forged));
        }

        #[test]
        fn the_port_quirk_for_any_host_and_path(
            scheme in prop::sample::select(vec!["https", "wss", "http", "ws"]),
            host in "[a-z0-9.-]{1,20}",
            path in "(/[a-zA-Z0-9._~:@-]{0,10}){0,3}(\\?[a-z=&]{0,10})?",
        ) {
            let port = match scheme { "https" | "wss" => "443", _ => "80" };
            let bare = format!("{scheme}://{host}{path}");
            let with_port = format!("{scheme}://{host}:{port}{path}");
            prop_assert!(validate("t", &bare, &[], &expected("t", &with_port, &[])));
            prop_assert!(validate("t", &with_port, &[], &expected("t", &bare, &[])));
        }

        #[test]
        fn form_encoding_round_trips(params in any_params()) {
            // Encode the way a browser or Twilio would: every byte outside
            // the unreserved set as %XX, space as '+'.
            let enc = |s: &str| {
                s.bytes().map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
                    b' ' => "+".to_string(),
                    _ => format!("%{b:02X}"),
                }).collect::<String>()
            };
            let body = params.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&");
            prop_assert_eq!(parse_form(body.as_bytes()), params);
        }
    }
}
