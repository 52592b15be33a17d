//! When to try a delivery again: the clock the outbox reads, the sleep
//! tests replace, and the backoff between attempts.

use std::sync::Arc;

/// Seconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> f64 + Send + Sync>;

/// A sleep that tests can replace (records the durations, returns at once).
pub use providers::dashboard::Sleeper;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| chrono::Utc::now().timestamp_millis() as f64 / 1000.0)
}

/// A real sleep.
pub fn real_sleeper() -> Sleeper {
    providers::dashboard::tokio_sleeper()
}

/// Retry delays of the outbox: `base · 2^(attempts − 1)`, at most `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub base_s: f64,
    pub max_s: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base_s: 5.0,
            max_s: 300.0,
        }
    }
}

impl Backoff {
    /// The wait after the `attempts`-th failed attempt (≥ 1).
    pub fn delay_s(&self, attempts: i64) -> f64 {
        let exp = attempts.clamp(1, 40) - 1;
        (self.base_s * 2f64.powi(exp as i32)).min(self.max_s)
    }
}
