//! Hazard words: which words name a danger, and when a hazard word only
//! names equipment ("gas furnace", "fires up", "burning up in here").

use super::words::*;

/// What a hazard word at a position is.
pub(super) enum Hazard {
    /// Danger; `len` words long.
    Danger { len: usize },
    /// Gas named without a smell or leak cue ("no gas", "the gas").
    BareGas,
    /// An equipment phrase ("gas furnace", "fires up").
    Equipment,
}

/// The hazard starting at `w[i]`, if any.
pub(super) fn hazard_at(w: &[&str], i: usize) -> Option<Hazard> {
    let word = w[i];
    let prev = i.checked_sub(1).map(|p| w[p]);
    let next = w.get(i + 1).copied();
    let near = |list: &[&str], radius: usize| {
        let lo = i.saturating_sub(radius);
        let hi = (i + radius + 1).min(w.len());
        (lo..hi).any(|j| j != i && in_list(list, w[j]))
    };

    if in_list(GAS_WORDS, word) {
        let equipment = next.is_some_and(|n| in_list(GAS_EQUIPMENT, n));
        if near(LEAK_CUES, CUE_WINDOW) {
            return Some(Hazard::Danger { len: 1 });
        }
        if equipment {
            return Some(Hazard::Equipment);
        }
        if near(SMELL_CUES, CUE_WINDOW) {
            return Some(Hazard::Danger { len: 1 });
        }
        return Some(Hazard::BareGas);
    }
    if word == "rotten" && next.is_some_and(|n| n.starts_with("egg")) {
        return Some(Hazard::Danger { len: 2 });
    }
    let alarm = |len: usize| {
        // "our CO detector is quiet": a device named, not going off.
        let calm = w
            .iter()
            .skip(i + len)
            .take(3)
            .any(|x| in_list(CALM_WORDS, x));
        Some(if calm {
            Hazard::Equipment
        } else {
            Hazard::Danger { len }
        })
    };
    if word == "carbon" && next == Some("monoxide") {
        let device = w.get(i + 2).is_some_and(|n| in_list(ALARM_DEVICES, n));
        return alarm(if device { 3 } else { 2 });
    }
    if word == "co" && next.is_some_and(|n| in_list(ALARM_DEVICES, n) || n == "poisoning") {
        return alarm(2);
    }
    if word == "c" && next == Some("o") && w.get(i + 2).is_some_and(|n| in_list(ALARM_DEVICES, n)) {
        return alarm(3);
    }
    if in_list(BURN_SMELL_WORDS, word) {
        // "an electrical smell", "smells like melting plastic".
        let cue_after = next.is_some_and(|n| in_list(SMELL_CUES, n));
        let cue_before = w[i.saturating_sub(3)..i]
            .iter()
            .any(|x| in_list(SMELL_CUES, x));
        return (cue_after || cue_before).then_some(Hazard::Danger { len: 1 });
    }
    if !in_list(DANGER_WORDS, word) {
        return None;
    }
    let particle_next = next.is_some_and(|n| in_list(VERB_PARTICLES, n));
    let equipment = match word {
        // "it won't fire", "fires up then shuts off" ("on" after "fire" is
        // the verb far more often than a place).
        "fire" | "fires" => {
            (particle_next && next != Some("out"))
                || prev.is_some_and(|p| in_list(FIRE_VERB_BEFORE, p))
        }
        "flame" | "flames" => prev.is_some_and(|p| matches!(p, "pilot" | "burner" | "blue")),
        // "burning up in here" (heat), "the motor burned out".
        "burning" | "burnt" | "burned" | "burn" => {
            next.is_some_and(|n| matches!(n, "up" | "out" | "hot"))
        }
        "smoking" | "smoke" if next == Some("hot") => true,
        "smoke" if next.is_some_and(|n| in_list(ALARM_DEVICES, n)) => {
            if w.iter().any(|x| in_list(BATTERY_WORDS, x)) {
                return Some(Hazard::Equipment);
            }
            return alarm(2);
        }
        _ => false,
    };
    Some(if equipment {
        Hazard::Equipment
    } else {
        Hazard::Danger { len: 1 }
    })
}
