//! Whole CallLock voice calls in virtual time: the real pipeline, the real
//! conversation engine and embedded backend, symmetric mock vendors.

use calllock::harness::{Harness, HarnessConfig};
use std::time::Duration;

fn print_report(r: &calllock::harness::Report) {
    for (t, text) in r.heard() {
        eprintln!("{t:7.2}s agent: {text}");
    }
    for (s, e) in &r.stretches {
        eprintln!("{:7.2}s-{:.2}s caller speaking", r.secs(*s), r.secs(*e));
    }
    if let Some(o) = &r.outcome {
        for l in o.log.transcript() {
            eprintln!(
                "  {:?} {:?} {}{}",
                l.at,
                l.speaker,
                l.text,
                if l.interrupted { " [cut]" } else { "" }
            );
        }
        eprintln!("final state {}", o.session.state);
    }
}

#[tokio::test(start_paused = true)]
async fn greeting_then_a_problem() {
    let h = Harness::start(HarnessConfig::default()).await;
    let greeting = h.wait_for_response().await;
    eprintln!("greeting at {:.2}: {}", greeting.at, greeting.text);
    h.say("my AC is broken").await;
    let r1 = h.wait_for_response().await;
    eprintln!("reply at {:.2}: {}", r1.at, r1.text);
    let report = h.hang_up().await;
    print_report(&report);
    report.assert_invariants();
}
