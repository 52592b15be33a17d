//! A strict reader of Prometheus' text exposition format (version 0.0.4),
//! written from the format's description, to check what `/metrics` serves:
//! every line a comment, a `# HELP`/`# TYPE`, or a sample; names and label
//! names well formed; label values properly escaped; values numbers; every
//! sample's family typed once, before its samples; histograms with
//! cumulative buckets ending in `+Inf` equal to `_count`.

use std::collections::{BTreeMap, HashMap};

/// One sample: name, labels (sorted), value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A parsed exposition.
#[derive(Debug, Default)]
pub struct Exposition {
    pub types: HashMap<String, String>,
    pub help: HashMap<String, String>,
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// The value of `name` with exactly these labels.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels == want)
            .map(|s| s.value)
    }

    /// Samples of `name` whose labels include these.
    pub fn matching(&self, name: &str, labels: &[(&str, &str)]) -> Vec<&Sample> {
        self.samples
            .iter()
            .filter(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect()
    }
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == ':')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
}

fn is_label_name(s: &str) -> bool {
    is_name(s) && !s.contains(':')
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse::<f64>().map_err(|_| format!("not a value: {s:?}")),
    }
}

/// The family a sample belongs to (histogram and summary suffixes off).
fn family<'a>(name: &'a str, types: &HashMap<String, String>) -> &'a str {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if matches!(
                types.get(base).map(String::as_str),
                Some("histogram" | "summary")
            ) {
                return base;
            }
        }
    }
    name
}

/// Parse `text`, or say which line is wrong and why.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let mut e = Exposition::default();
    let mut seen_samples: std::collections::HashSet<String> = Default::default();
    for (n, line) in text.lines().enumerate() {
        let at = |why: String| format!("line {}: {why}: {line:?}", n + 1);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let rest = rest.trim_start();
            let mut parts = rest.splitn(3, ' ');
            match parts.next() {
                Some("TYPE") => {
                    let name = parts
                        .next()
                        .ok_or_else(|| at("TYPE without a name".into()))?;
                    let kind = parts.next().unwrap_or("");
                    if !is_name(name) {
                        return Err(at("bad metric name".into()));
                    }
                    if !matches!(
                        kind,
                        "counter" | "gauge" | "histogram" | "summary" | "untyped"
                    ) {
                        return Err(at(format!("unknown type {kind:?}")));
                    }
                    if seen_samples.contains(name) {
                        return Err(at("TYPE after the family's samples".into()));
                    }
                    if e.types.insert(name.into(), kind.into()).is_some() {
                        return Err(at("TYPE given twice".into()));
                    }
                }
                Some("HELP") => {
                    let name = parts
                        .next()
                        .ok_or_else(|| at("HELP without a name".into()))?;
                    if !is_name(name) {
                        return Err(at("bad metric name".into()));
                    }
                    if e.help
                        .insert(name.into(), parts.next().unwrap_or("").into())
                        .is_some()
                    {
                        return Err(at("HELP given twice".into()));
                    }
                }
                _ => {} // a plain comment
            }
            continue;
        }
        // name{labels} value [timestamp]
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => return Err(at("a sample without a value".into())),
        };
        if !is_name(name) {
            return Err(at("bad metric name".into()));
        }
        let mut labels = BTreeMap::new();
        let rest = if let Some(body) = rest.strip_prefix('{') {
            let mut chars = body.char_indices().peekable();
            let end;
            loop {
                while chars.peek().is_some_and(|(_, c)| *c == ',' || *c == ' ') {
                    chars.next();
                }
                if let Some((i, '}')) = chars.peek().copied() {
                    end = i;
                    break;
                }
                let mut key = String::new();
                loop {
                    match chars.next() {
                        Some((_, '=')) => break,
                        Some((_, c)) => key.push(c),
                        None => return Err(at("unterminated labels".into())),
                    }
                }
                if !is_label_name(&key) {
                    return Err(at(format!("bad label name {key:?}")));
                }
                if !matches!(chars.next(), Some((_, '"'))) {
                    return Err(at("label value not quoted".into()));
                }
                let mut value = String::new();
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, '\\')) => value.push('\\'),
                            Some((_, '"')) => value.push('"'),
                            Some((_, 'n')) => value.push('\n'),
                            _ => return Err(at("bad escape in a label value".into())),
                        },
                        Some((_, '\n')) | None => {
                            return Err(at("unterminated label value".into()))
                        }
                        Some((_, c)) => value.push(c),
                    }
                }
                if labels.insert(key.clone(), value).is_some() {
                    return Err(at(format!("label {key} twice")));
                }
                match chars.peek() {
                    Some((_, ',')) | Some((_, '}')) => {}
                    _ => return Err(at("labels not separated by commas".into())),
                }
            }
            &body[end + 1..]
        } else {
            rest
        };
        let mut fields = rest.split_whitespace();
        let value = parse_value(fields.next().ok_or_else(|| at("no value".into()))?).map_err(at)?;
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().map_err(|_| at("bad timestamp".into()))?;
        }
        if fields.next().is_some() {
            return Err(at("extra fields".into()));
        }
        let fam = family(name, &e.types).to_string();
        if !e.types.contains_key(&fam) {
            return Err(at(format!("no TYPE for {fam}")));
        }
        seen_samples.insert(fam);
        e.samples.push(Sample {
            name: name.into(),
            labels,
            value,
        });
    }
    check_histograms(&e)?;
    Ok(e)
}

/// A sample's labels other than `le`, in order.
type LabelSet = Vec<(String, String)>;

/// Buckets cumulative (non-decreasing by `le`), ending in `+Inf` equal to
/// `_count`, for every label set of every histogram.
fn check_histograms(e: &Exposition) -> Result<(), String> {
    for (name, kind) in &e.types {
        if kind != "histogram" {
            continue;
        }
        let bucket = format!("{name}_bucket");
        let mut series: BTreeMap<LabelSet, Vec<(f64, f64)>> = BTreeMap::new();
        for s in e.samples.iter().filter(|s| s.name == bucket) {
            let le = s
                .labels
                .get("le")
                .ok_or_else(|| format!("{bucket} without le"))?;
            let le = parse_value(le)?;
            let key: Vec<(String, String)> = s
                .labels
                .iter()
                .filter(|(k, _)| *k != "le")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            series.entry(key).or_default().push((le, s.value));
        }
        for (key, mut buckets) in series {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            if !buckets.windows(2).all(|w| w[0].1 <= w[1].1) {
                return Err(format!("{name}{key:?}: buckets not cumulative"));
            }
            let last = buckets.last().copied().unwrap_or((0.0, 0.0));
            if last.0 != f64::INFINITY {
                return Err(format!("{name}{key:?}: no +Inf bucket"));
            }
            let labels: Vec<(&str, &str)> =
                key.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let count = e
                .value(&format!("{name}_count"), &labels)
                .ok_or_else(|| format!("{name}{key:?}: no _count"))?;
            if count != last.1 {
                return Err(format!("{name}{key:?}: +Inf {} != count {count}", last.1));
            }
        }
    }
    Ok(())
}

#[allow(dead_code)]
pub mod self_test {
    /// The reader refuses what the format forbids (run by the metrics test).
    pub fn refuses_bad_text() {
        use super::parse;
        assert!(parse("# TYPE a counter\na 1\n").is_ok());
        assert!(parse("a 1\n").is_err(), "no TYPE");
        assert!(
            parse("# TYPE a counter\na{b=\"x} 1\n").is_err(),
            "unterminated"
        );
        assert!(parse("# TYPE a counter\na{b=x} 1\n").is_err(), "unquoted");
        assert!(
            parse("# TYPE a counter\na{b=\"x\" c=\"y\"} 1\n").is_err(),
            "no comma"
        );
        assert!(parse("# TYPE a counter\na one\n").is_err(), "value");
        assert!(parse("# TYPE 1a counter\n").is_err(), "name");
        assert!(
            parse("# TYPE a counter\n# TYPE a gauge\n").is_err(),
            "twice"
        );
        let h = "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n";
        assert!(parse(h).is_err(), "not cumulative");
        let h = "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n";
        assert!(parse(h).is_err(), "+Inf != count");
        let ok = "# HELP h A \"help\"\n# TYPE h histogram\nh_bucket{m=\"a\\\"b\",le=\"1\"} 1\nh_bucket{m=\"a\\\"b\",le=\"+Inf\"} 2\nh_sum{m=\"a\\\"b\"} 1.5\nh_count{m=\"a\\\"b\"} 2\n";
        let e = parse(ok).unwrap();
        assert_eq!(e.value("h_count", &[("m", "a\"b")]), Some(2.0));
    }
}
