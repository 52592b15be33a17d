//! Record ids: `apt_…`, `cb_…`, `lead_…` — 12 hex digits of an FNV-1a hash
//! of the record's inputs and a salt. Deterministic (a replay with a pinned
//! clock produces the same ids every run); an id already taken is skipped
//! for the next salt (checked inside the inserting transaction).

/// How many salts to try before giving up on a unique id.
pub(crate) const MAX_ID_ATTEMPTS: u32 = 8;

/// The id for `prefix` from `parts` and `salt`.
pub(crate) fn make_id(prefix: &str, parts: &[&str], salt: u32) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    feed(prefix.as_bytes());
    for p in parts {
        feed(&[0x1f]);
        feed(p.as_bytes());
    }
    feed(&salt.to_le_bytes());
    format!("{prefix}_{:012x}", h & 0xffff_ffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deterministic_and_salted() {
        let a = make_id("apt", &["+1512", "CA1"], 0);
        assert_eq!(a, make_id("apt", &["+1512", "CA1"], 0));
        assert_ne!(a, make_id("apt", &["+1512", "CA1"], 1));
        assert!(a.starts_with("apt_") && a.len() == 16);
    }
}
