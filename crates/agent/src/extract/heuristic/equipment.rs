//! The equipment: AC, furnace, heat pump, …

use super::*;

pub(super) const EQUIPMENT: &[(&str, &str)] = &[
    ("heat pump", "heat pump"),
    ("mini split", "mini split"),
    ("mini-split", "mini split"),
    ("minisplit", "mini split"),
    ("ductless", "mini split"),
    ("water heater", "water heater"),
    ("air handler", "air handler"),
    ("air conditioner", "AC"),
    ("air conditioning", "AC"),
    ("central air", "AC"),
    ("a/c", "AC"),
    ("ac", "AC"),
    ("condenser", "AC"),
    ("thermostat", "thermostat"),
    ("furnace", "furnace"),
    ("boiler", "boiler"),
    ("heater", "heater"),
];

pub(super) fn find_equipment(lines: &[&str]) -> String {
    for line in lines {
        let low = normalize_lower(line);
        let mut best: Option<(usize, usize, &str)> = None;
        for (phrase, name) in EQUIPMENT {
            if let Some(p) = find_phrase(&low, phrase) {
                let better = match best {
                    None => true,
                    Some((bp, bl, _)) => p < bp || (p == bp && phrase.len() > bl),
                };
                if better {
                    best = Some((p, phrase.len(), name));
                }
            }
        }
        if let Some((_, _, name)) = best {
            return name.to_string();
        }
    }
    String::new()
}
