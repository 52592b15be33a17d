//! What the streaming fuzz tests (`inworld_fuzz`, `openai_fuzz`) share:
//! a runner configuration and cutting a body at random points, to check
//! that a decoder gives the same items however the network splits its
//! input.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;

/// A runner configuration for `cases` cases that writes no regression
/// files (the tests run from a read-only tree too).
pub fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Up to nine cut points; [`pieces`] scales them to a body's length.
pub fn splits() -> impl Strategy<Value = Vec<Index>> {
    prop::collection::vec(any::<Index>(), 0..10)
}

/// `body` cut at `splits` (each scaled to `0..=len`, sorted): the pieces,
/// in order, concatenate to `body`; some may be empty.
pub fn pieces<'a>(body: &'a [u8], splits: &[Index]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = splits.iter().map(|i| i.index(body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for c in cuts {
        out.push(body.get(start..c).unwrap_or(&[]));
        start = c;
    }
    out.push(body.get(start..).unwrap_or(&[]));
    out
}
