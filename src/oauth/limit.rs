//! A fixed-window counter per key: how the shell limits client registrations per address.
//!
//! It lives in one isolate, so it bounds what one address can make one isolate do (a burst of
//! registrations, each an HMAC and a JSON parse), not what the whole deployment accepts; the
//! registrations themselves are sealed, not stored, so a flood fills no storage. The map is
//! bounded: past `max_keys` addresses in one window it forgets them all and starts over.

use std::collections::HashMap;

/// How long one window lasts.
pub const WINDOW_MS: i64 = 60_000;

#[derive(Debug, Clone)]
pub struct WindowCounter {
    limit: u32,
    max_keys: usize,
    window_start: i64,
    counts: HashMap<String, u32>,
}

impl WindowCounter {
    pub fn new(limit: u32, max_keys: usize) -> WindowCounter {
        WindowCounter {
            limit,
            max_keys,
            window_start: i64::MIN,
            counts: HashMap::new(),
        }
    }

    /// Counts one request of `key` at `now`: `Ok` when it is within the limit, else the
    /// seconds until the window ends (for `Retry-After`).
    pub fn admit(&mut self, key: &str, now: i64) -> Result<(), u64> {
        if now < self.window_start || now.saturating_sub(self.window_start) >= WINDOW_MS {
            self.window_start = now;
            self.counts.clear();
        }
        if !self.counts.contains_key(key) && self.counts.len() >= self.max_keys {
            self.counts.clear();
        }
        let count = self.counts.entry(key.to_owned()).or_insert(0);
        if *count >= self.limit {
            let left_ms = WINDOW_MS - (now - self.window_start);
            return Err((left_ms.max(0) as u64).div_ceil(1000).max(1));
        }
        *count += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_gets_its_limit_per_window() {
        let mut counter = WindowCounter::new(2, 100);
        assert_eq!(counter.admit("a", 0), Ok(()));
        assert_eq!(counter.admit("a", 1_000), Ok(()));
        assert_eq!(counter.admit("a", 2_000), Err(58));
        assert_eq!(
            counter.admit("b", 2_000),
            Ok(()),
            "another address has its own count"
        );
        assert_eq!(counter.admit("a", 59_999), Err(1));
        assert_eq!(
            counter.admit("a", 60_000),
            Ok(()),
            "a new window starts over"
        );
    }

    #[test]
    fn the_map_stays_bounded() {
        let mut counter = WindowCounter::new(1, 3);
        for key in ["a", "b", "c"] {
            assert_eq!(counter.admit(key, 0), Ok(()));
        }
        assert_eq!(counter.admit("d", 0), Ok(()));
        assert!(counter.counts.len() <= 3);
    }

    #[test]
    fn a_clock_that_goes_back_starts_a_new_window() {
        let mut counter = WindowCounter::new(1, 10);
        assert_eq!(counter.admit("a", 100_000), Ok(()));
        assert_eq!(counter.admit("a", 50_000), Ok(()));
    }
}
