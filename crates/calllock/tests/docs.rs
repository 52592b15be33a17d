//! The repository stands alone: the documents the README relies on live in
//! `docs/` and `conformance/`; SPEC, DECISIONS and the conformance cases
//! stay byte-for-byte in sync with the team's shared copies (checked when
//! `../shared` is present, as in a development checkout and CI); the
//! project's own `docs/ARCHITECTURE.md` maps every crate and top-level
//! folder; every path the README names exists; and no file of `calllock`
//! imports a file that imports it back.

#[path = "support/imports.rs"]
mod imports;

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (copy in the repository, source in ../shared)
const COPIES: &[(&str, &str)] = &[
    ("docs/SPEC.md", "SPEC.md"),
    ("docs/DECISIONS.md", "DECISIONS.md"),
    ("conformance/cases.jsonl", "conformance/cases.jsonl"),
    ("conformance/README.md", "conformance/README.md"),
];

#[test]
fn the_document_copies_match_the_shared_sources() {
    let shared = repo().join("../shared");
    for (copy, _) in COPIES {
        assert!(
            repo().join(copy).is_file(),
            "{copy} is missing from the repository"
        );
    }
    if !shared.is_dir() {
        println!("SKIP (no ../shared next to the repository: nothing to compare the copies with)");
        return;
    }
    let mut drifted = Vec::new();
    for (copy, source) in COPIES {
        let source_path = shared.join(source);
        let Ok(want) = std::fs::read(&source_path) else {
            drifted.push(format!("{source} is missing from {}", shared.display()));
            continue;
        };
        let got = std::fs::read(repo().join(copy)).unwrap();
        if got != want {
            drifted.push(format!(
                "{copy} differs from ../shared/{source} (copy it over)"
            ));
        }
    }
    assert!(drifted.is_empty(), "{}", drifted.join("\n"));
}

/// The code map of `docs/ARCHITECTURE.md` names every crate of the
/// workspace and every top-level folder of the repository, so a newcomer
/// finds each of them there.
#[test]
fn the_code_map_names_every_crate_and_folder() {
    let map = std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    let dirs = |p: PathBuf| -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        out.sort();
        out
    };
    for krate in dirs(repo().join("crates")) {
        if !map.contains(&format!("| `{krate}` |")) {
            missing.push(format!("crate {krate} (a `| `{krate}` |` row)"));
        }
    }
    for folder in dirs(repo()) {
        let tracked = !folder.starts_with('.') && folder != "target";
        if tracked && !map.contains(&format!("`{folder}/`")) {
            missing.push(format!("folder {folder}/"));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's code map does not name: {}",
        missing.join(", ")
    );
}

/// Paths the README names: markdown link targets, and code spans that
/// start with a top-level folder of the repository.
fn named_paths(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in readme.match_indices("](") {
        let rest = &readme[i + 2..];
        if let Some(end) = rest.find(')') {
            let target = rest[..end].split('#').next().unwrap_or("");
            if !target.is_empty() && !target.contains("://") {
                out.push(target.to_string());
            }
        }
    }
    for span in readme.split('`').skip(1).step_by(2) {
        let first = span.split_whitespace().next().unwrap_or("");
        let path = first.trim_end_matches([',', '.', ':', ';', ')']);
        let top = ["crates/", "docs/", "examples/", "conformance/", ".ci/"];
        if top.iter().any(|t| path.starts_with(t))
            && !path.contains(['*', '<', '{'])
            && !path.contains("::")
        {
            out.push(path.to_string());
        }
    }
    out
}

#[test]
fn every_path_the_readme_names_exists() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        !readme.contains("../shared"),
        "the README points outside the repository (../shared)"
    );
    let paths = named_paths(&readme);
    assert!(paths.len() >= 10, "found only {paths:?}");
    let missing: Vec<&String> = paths.iter().filter(|p| !repo().join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "the README names missing paths: {missing:?}"
    );
}

#[test]
fn the_path_reader_finds_links_and_code_spans() {
    let p = named_paths(
        "see [a](docs/A.md#x), `crates/agent/src/x.rs`, [web](https://x.y) and `cargo test`",
    );
    assert_eq!(p, vec!["docs/A.md", "crates/agent/src/x.rs"]);
}

/// ARCHITECTURE.md, "no import circle": inside `calllock`, files depend on
/// one another in one direction (see `support/imports.rs` for what counts
/// as an import).
#[test]
fn no_file_of_calllock_imports_a_file_that_imports_it_back() {
    let graph = imports::Graph::of_crate(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        graph.files.len() > 50 && graph.edges.values().map(|e| e.len()).sum::<usize>() > 100,
        "the import graph was not read ({} files)",
        graph.files.len()
    );
    let mut report = String::new();
    for circle in graph.circles() {
        report.push_str("a circle:\n");
        for m in &circle {
            let into: Vec<String> = graph.edges[m]
                .iter()
                .filter(|t| circle.contains(t))
                .map(|t| graph.name(t))
                .collect();
            report.push_str(&format!(
                "  {} imports {}\n",
                graph.name(m),
                into.join(", ")
            ));
        }
    }
    assert!(report.is_empty(), "{report}");
}
