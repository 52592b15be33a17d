//! Which files of a crate import which: the file-level import graph of a
//! crate's `src/`, and its circles.
//!
//! A file *imports* another when it names an item through a path that
//! reaches that file's module: `use crate::serve::app::App` in
//! `web/page.rs` is an edge `web/page.rs → serve/app.rs`; `super::html::esc`
//! in `web/page.rs` is an edge to `web/html.rs`; a bare `html::esc` is one
//! too when `html` is a child module of the file. A path ends at the
//! deepest module that is a file (`crate::serve::http::health_report` →
//! `serve/http.rs`), so a re-export in a `mod.rs` is an edge to that
//! `mod.rs`. `mod` declarations are not imports; comments and string
//! literals (doc comments included) are skipped; `super` inside an inline
//! `mod tests { … }` is the file itself.
//!
//! A plain tokenizer, not a Rust parser: enough for the paths people write
//! in `use` items and expressions, with no dependency to build.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path inside the crate (`[]` is the crate root).
pub type ModPath = Vec<String>;

/// The crate's files by module path, and each file's imports.
pub struct Graph {
    pub files: BTreeMap<ModPath, String>,
    pub edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

impl Graph {
    /// Read every `.rs` file under `src` (the library; `main.rs` is its own
    /// crate and is left out).
    pub fn of_crate(src: &Path) -> Graph {
        let mut files = BTreeMap::new();
        let mut texts = BTreeMap::new();
        collect(src, src, &mut files, &mut texts);
        let mut edges = BTreeMap::new();
        for (module, text) in &texts {
            let mut out = BTreeSet::new();
            for (ctx, path) in paths(text, module) {
                if let Some(target) = resolve(&files, &ctx, &path) {
                    if &target != module {
                        out.insert(target);
                    }
                }
            }
            edges.insert(module.clone(), out);
        }
        Graph { files, edges }
    }

    /// The file of a module, for messages (`serve/app.rs`).
    pub fn name(&self, m: &ModPath) -> String {
        self.files.get(m).cloned().unwrap_or_else(|| m.join("/"))
    }

    /// The groups of files that import one another in a circle (strongly
    /// connected components with more than one file), each sorted.
    pub fn circles(&self) -> Vec<Vec<ModPath>> {
        let nodes: Vec<&ModPath> = self.files.keys().collect();
        let index: BTreeMap<&ModPath, usize> =
            nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        let succ: Vec<Vec<usize>> = nodes
            .iter()
            .map(|m| self.edges[*m].iter().map(|t| index[t]).collect())
            .collect();
        let mut t = Tarjan {
            succ: &succ,
            index: vec![None; nodes.len()],
            low: vec![0; nodes.len()],
            on_stack: vec![false; nodes.len()],
            stack: Vec::new(),
            next: 0,
            found: Vec::new(),
        };
        for v in 0..nodes.len() {
            if t.index[v].is_none() {
                t.visit(v);
            }
        }
        let mut circles: Vec<Vec<ModPath>> = t
            .found
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut c: Vec<ModPath> = c.into_iter().map(|i| nodes[i].clone()).collect();
                c.sort();
                c
            })
            .collect();
        circles.sort();
        circles
    }
}

/// Tarjan's strongly connected components.
struct Tarjan<'a> {
    succ: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.succ[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut c = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                c.push(w);
                if w == v {
                    break;
                }
            }
            self.found.push(c);
        }
    }
}

fn collect(
    root: &Path,
    dir: &Path,
    files: &mut BTreeMap<ModPath, String>,
    texts: &mut BTreeMap<ModPath, String>,
) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(root, &p, files, texts);
            continue;
        }
        if p.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let rel = p
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let mut module: ModPath = rel
            .trim_end_matches(".rs")
            .split('/')
            .map(String::from)
            .collect();
        match module.last().map(String::as_str) {
            Some("mod") => {
                module.pop();
            }
            Some("lib") if module.len() == 1 => module.clear(),
            Some("main") if module.len() == 1 => continue,
            _ => {}
        }
        let text = std::fs::read_to_string(&p).unwrap();
        files.insert(module.clone(), rel);
        texts.insert(module, text);
    }
}

/// The file a path reaches, seen from module `ctx`.
fn resolve(files: &BTreeMap<ModPath, String>, ctx: &ModPath, path: &[String]) -> Option<ModPath> {
    let (mut base, rest): (ModPath, &[String]) = match path.first().map(String::as_str)? {
        "crate" => (Vec::new(), &path[1..]),
        "super" | "self" => {
            let mut base = ctx.clone();
            let mut i = 0;
            while let Some(seg) = path.get(i) {
                match seg.as_str() {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                i += 1;
            }
            (base, &path[i..])
        }
        first => {
            let mut child = ctx.clone();
            child.push(first.to_string());
            if !files.contains_key(&child) {
                return None;
            }
            (ctx.clone(), path)
        }
    };
    for seg in rest {
        if seg == "self" {
            continue;
        }
        base.push(seg.clone());
        if !files.contains_key(&base) {
            base.pop();
            break;
        }
    }
    // An inline module (`mod tests`) is part of its file.
    while !base.is_empty() && !files.contains_key(&base) {
        base.pop();
    }
    Some(base)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Open,
    Close,
    Comma,
    Semi,
    Star,
    Other,
}

/// The tokens of a file, without comments, literals or lifetimes.
fn tokens(src: &str) -> Vec<Tok> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&b, i + 1);
            out.push(Tok::Other);
        } else if (c == 'r' || c == 'b') && raw_or_byte_string_start(&b, i).is_some() {
            let (hashes, quote_at) = raw_or_byte_string_start(&b, i).unwrap();
            i = match hashes {
                Some(n) => skip_raw(&b, quote_at + 1, n),
                None => skip_string(&b, quote_at + 1),
            };
            out.push(Tok::Other);
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            if b.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                    i += 1;
                }
            }
            out.push(Tok::Other);
        } else if c.is_alphabetic() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            let word: String = b[s..i].iter().collect();
            out.push(Tok::Ident(word.trim_start_matches("r#").to_string()));
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push(Tok::Sep);
            i += 2;
        } else {
            out.push(match c {
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                ';' => Tok::Semi,
                '*' => Tok::Star,
                _ => Tok::Other,
            });
            i += 1;
        }
    }
    out
}

/// At `i`: `r"`, `r#…"`, `b"`, `br"`, `br#…"`: (the raw string's hashes,
/// the opening quote's index).
fn raw_or_byte_string_start(b: &[char], i: usize) -> Option<(Option<usize>, usize)> {
    if i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if b[j] == 'b' {
        j += 1;
        if b.get(j) == Some(&'"') {
            return Some((None, j));
        }
    }
    if b.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while b.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (b.get(j) == Some(&'"')).then_some((Some(hashes), j))
}

fn skip_string(b: &[char], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

fn skip_raw(b: &[char], mut i: usize, hashes: usize) -> usize {
    while i < b.len() {
        if b[i] == '"' && (1..=hashes).all(|k| b.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// Every path of two or more segments in `src` (file of module `file`),
/// with the module it is written in (inline modules included); `use`
/// trees expanded.
fn paths(src: &str, file: &ModPath) -> Vec<(ModPath, Vec<String>)> {
    let toks = tokens(src);
    let mut out = Vec::new();
    // Inline modules: (name, brace depth at which it closes).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let ctx = |inline: &Vec<(String, usize)>| {
        let mut c = file.clone();
        c.extend(inline.iter().map(|(n, _)| n.clone()));
        c
    };
    while i < toks.len() {
        match &toks[i] {
            Tok::Ident(w) if w == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Open)) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    depth += 1;
                    inline.push((name.clone(), depth));
                    i += 3;
                    continue;
                }
                i += 1;
            }
            Tok::Ident(w) if w == "use" => {
                let here = ctx(&inline);
                let mut j = i + 1;
                let mut trees = Vec::new();
                use_tree(&toks, &mut j, Vec::new(), &mut trees);
                out.extend(trees.into_iter().map(|p| (here.clone(), p)));
                i = j;
            }
            Tok::Ident(first) if i == 0 || toks[i - 1] != Tok::Sep => {
                let mut path = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j) == Some(&Tok::Sep) {
                    match toks.get(j + 1) {
                        Some(Tok::Ident(seg)) => {
                            path.push(seg.clone());
                            j += 2;
                        }
                        _ => break,
                    }
                }
                if path.len() > 1 {
                    out.push((ctx(&inline), path));
                }
                i = j.max(i + 1);
            }
            Tok::Open => {
                depth += 1;
                i += 1;
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// One use tree at `*j`: `a::b`, `a::{b, c::d}`, `a::*`, `a as b`.
fn use_tree(toks: &[Tok], j: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    if toks.get(*j) == Some(&Tok::Sep) {
        *j += 1; // a leading `::`
    }
    loop {
        match toks.get(*j) {
            Some(Tok::Ident(seg)) if seg != "as" => {
                prefix.push(seg.clone());
                *j += 1;
            }
            Some(Tok::Open) => {
                *j += 1;
                while !matches!(toks.get(*j), Some(Tok::Close) | None) {
                    use_tree(toks, j, prefix.clone(), out);
                    match toks.get(*j) {
                        Some(Tok::Comma) => *j += 1,
                        Some(Tok::Close) => {}
                        _ => return,
                    }
                }
                *j += 1;
                return;
            }
            Some(Tok::Star) => {
                *j += 1;
                break;
            }
            _ => break,
        }
        if toks.get(*j) == Some(&Tok::Sep) {
            *j += 1;
        } else {
            break;
        }
    }
    // `as name`
    if toks.get(*j) == Some(&Tok::Ident("as".into())) {
        *j += 2;
    }
    if !prefix.is_empty() {
        out.push(prefix);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<String> {
        s.split("::").map(String::from).collect()
    }

    #[test]
    fn use_trees_comments_and_strings() {
        let src = r##"
            use crate::a::{b::C, d, e::{self, F as G}};
            use super::*;
            // crate::not::this
            /* crate::nor::this */
            let s = "crate::nor::that"; let r = r#"crate::no"#; let c = '"';
            fn f<'a>(x: &'a str) { crate::z::call(); }
            mod tests { use super::x; }
        "##;
        let file: ModPath = vec!["m".into()];
        let got: Vec<_> = paths(src, &file).into_iter().collect();
        let just: Vec<Vec<String>> = got.iter().map(|(_, p)| p.clone()).collect();
        assert!(just.contains(&p("crate::a::b::C")));
        assert!(just.contains(&p("crate::a::d")));
        assert!(just.contains(&p("crate::a::e::self")));
        assert!(just.contains(&p("crate::a::e::F")));
        assert!(just.contains(&p("super")));
        assert!(just.contains(&p("crate::z::call")));
        assert!(!just.iter().any(|x| x.contains(&"not".to_string())
            || x.contains(&"nor".to_string())
            || x.contains(&"no".to_string())));
        let inner = got.iter().find(|(_, p)| p == &self::p("super::x")).unwrap();
        assert_eq!(inner.0, vec!["m".to_string(), "tests".into()]);
    }

    #[test]
    fn paths_end_at_the_deepest_file() {
        let files: BTreeMap<ModPath, String> = [
            (vec![], "lib.rs"),
            (vec!["serve".into()], "serve/mod.rs"),
            (vec!["serve".into(), "app".into()], "serve/app.rs"),
            (vec!["web".into()], "web/mod.rs"),
        ]
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect();
        let web: ModPath = vec!["web".into()];
        let serve_app: ModPath = vec!["serve".into(), "app".into()];
        assert_eq!(
            resolve(&files, &web, &p("crate::serve::app::App")),
            Some(serve_app.clone())
        );
        assert_eq!(
            resolve(&files, &web, &p("crate::serve::App")),
            Some(vec!["serve".into()])
        );
        assert_eq!(
            resolve(&files, &serve_app, &p("super::super::web::x")),
            Some(web.clone())
        );
        // An outside crate, and a local item: not a file of ours.
        assert_eq!(resolve(&files, &web, &p("tokio::spawn")), None);
        // `super` in an inline `mod tests` of serve/app.rs is the file.
        let tests: ModPath = vec!["serve".into(), "app".into(), "tests".into()];
        assert_eq!(resolve(&files, &tests, &p("super::App")), Some(serve_app));
    }
}
