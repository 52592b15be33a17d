//! The engine's timers on the call's runtime: at most one sleeping task
//! per kind of timer, however often the engine restarts it.
//!
//! The engine asks for a timer with [`Effect::StartTimer`] and may ask
//! again before it fires (the idle wait is restarted after every agent
//! line, the filler every turn); restarting a timer replaces it, and the
//! engine ignores an expiry that is no longer due (its contract, see
//! [`Timer`]). A sleeping task per request would keep every replaced
//! timer alive until its old time — several per live call. Instead each
//! kind keeps only its latest due time: a task that wakes before it goes
//! back to sleep until then, and only a due time earlier than the task
//! already sleeping needs a task of its own.
//!
//! [`Effect::StartTimer`]: agent::engine::Effect::StartTimer

use agent::engine::Timer;

/// What to do when a timer's task wakes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Woke {
    /// The timer is due: tell the engine.
    Fire,
    /// It was restarted for later: sleep until then (call-clock seconds).
    SleepUntil(f64),
    /// Nothing: another task carries the timer, or it already fired.
    Nothing,
}

/// The due time and sleeping task of each kind of timer.
#[derive(Debug, Default)]
pub(super) struct EngineTimers {
    slots: [Slot; 5],
}

#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    /// When the engine wants the timer to fire (its latest request).
    due: Option<f64>,
    /// When the earliest task sleeping for it wakes.
    waking: Option<f64>,
}

fn slot(timer: Timer) -> usize {
    match timer {
        Timer::Debounce => 0,
        Timer::HangupGrace => 1,
        Timer::HangupCeiling => 2,
        Timer::Idle => 3,
        Timer::Filler => 4,
    }
}

impl EngineTimers {
    /// The engine asked for `timer` at `at`: true when a task must be
    /// started to wake then (none sleeping wakes by `at`).
    pub(super) fn start(&mut self, timer: Timer, at: f64) -> bool {
        let s = &mut self.slots[slot(timer)];
        s.due = Some(at);
        if s.waking.is_some_and(|w| w <= at) {
            return false;
        }
        s.waking = Some(at);
        true
    }

    /// The task started for `timer` to wake at `woke_for` woke.
    pub(super) fn woke(&mut self, timer: Timer, woke_for: f64) -> Woke {
        let s = &mut self.slots[slot(timer)];
        if s.waking == Some(woke_for) {
            s.waking = None;
        }
        match s.due {
            None => Woke::Nothing,
            Some(due) if due <= woke_for => {
                s.due = None;
                Woke::Fire
            }
            Some(due) if s.waking.is_some_and(|w| w <= due) => Woke::Nothing,
            Some(due) => {
                s.waking = Some(due);
                Woke::SleepUntil(due)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the timers' tasks on a clock of their own: every task
    /// started, and what the engine was told when.
    #[derive(Default)]
    struct Clock {
        timers: EngineTimers,
        /// Sleeping tasks: (kind, wakes at).
        tasks: Vec<(Timer, f64)>,
        fired: Vec<(Timer, f64)>,
        started: usize,
    }

    impl Clock {
        fn start(&mut self, timer: Timer, at: f64) {
            if self.timers.start(timer, at) {
                self.tasks.push((timer, at));
                self.started += 1;
            }
        }

        /// Wake every task due by `until`, in time order.
        fn run_until(&mut self, until: f64) {
            loop {
                self.tasks.sort_by(|a, b| a.1.total_cmp(&b.1));
                let Some(&(timer, w)) = self.tasks.first().filter(|t| t.1 <= until) else {
                    return;
                };
                self.tasks.remove(0);
                match self.timers.woke(timer, w) {
                    Woke::Fire => self.fired.push((timer, w)),
                    Woke::SleepUntil(at) => {
                        self.tasks.push((timer, at));
                        self.started += 1;
                    }
                    Woke::Nothing => {}
                }
            }
        }
    }

    #[test]
    fn a_restarted_timer_fires_once_at_its_latest_time_with_one_task_asleep() {
        let mut c = Clock::default();
        // The idle wait restarted after every line, each later than the
        // one before.
        for i in 0..10 {
            c.start(Timer::Idle, 15.0 + i as f64);
            assert!(c.tasks.len() <= 1, "{:?}", c.tasks);
        }
        c.run_until(100.0);
        assert_eq!(c.fired, [(Timer::Idle, 24.0)]);
        assert!(c.started <= 2, "{} tasks started", c.started);
    }

    #[test]
    fn a_timer_restarted_for_sooner_fires_then_and_not_again() {
        let mut c = Clock::default();
        c.start(Timer::Idle, 15.0);
        // After the safety script the wait is shorter.
        c.start(Timer::Idle, 9.0);
        c.run_until(100.0);
        assert_eq!(c.fired, [(Timer::Idle, 9.0)]);
        // Sooner, later, then sooner again: the last request decides.
        let mut c = Clock::default();
        c.start(Timer::Filler, 5.0);
        c.start(Timer::Filler, 3.0);
        c.start(Timer::Filler, 4.0);
        c.run_until(100.0);
        assert_eq!(c.fired, [(Timer::Filler, 4.0)]);
    }

    #[test]
    fn a_timer_started_again_after_it_fired_fires_again() {
        let mut c = Clock::default();
        c.start(Timer::Filler, 2.0);
        c.run_until(2.0);
        c.start(Timer::Filler, 7.0);
        c.run_until(100.0);
        assert_eq!(c.fired, [(Timer::Filler, 2.0), (Timer::Filler, 7.0)]);
    }

    #[test]
    fn kinds_are_kept_apart() {
        let mut c = Clock::default();
        c.start(Timer::HangupCeiling, 10.0);
        c.start(Timer::HangupGrace, 3.0);
        c.start(Timer::Debounce, 1.0);
        c.start(Timer::Idle, 20.0);
        c.run_until(100.0);
        assert_eq!(
            c.fired,
            [
                (Timer::Debounce, 1.0),
                (Timer::HangupGrace, 3.0),
                (Timer::HangupCeiling, 10.0),
                (Timer::Idle, 20.0)
            ]
        );
    }

    #[test]
    fn every_request_is_answered_by_its_latest_time_whatever_the_order() {
        // Requests at random moments for random times: the engine is told
        // exactly once per kind for the last request still pending, at its
        // time — what a task per request would have told it, less the
        // expiries the engine ignores.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..500 {
            let mut c = Clock::default();
            let mut now = 0.0;
            let mut last: Option<f64> = None;
            let mut want = Vec::new();
            for _ in 0..(next() % 12) {
                now += (next() % 40) as f64 / 10.0;
                c.run_until(now);
                if let Some(at) = last.filter(|at| *at <= now) {
                    want.push((Timer::Idle, at));
                }
                let at = now + (next() % 100) as f64 / 10.0;
                c.start(Timer::Idle, at);
                last = Some(at);
            }
            c.run_until(f64::MAX);
            want.extend(last.map(|at| (Timer::Idle, at)));
            assert_eq!(c.fired, want);
        }
    }
}
