//! Which level a worker serves next: virtual clocks weighted by the CPU share each side
//! should get when they compete.
//!
//! Two decisions, each by the earliest virtual clock among the sides that have work:
//! 1. level 0 against the lower levels together, weights `small_request_share` and
//!    `1 - small_request_share`: this is what the knob promises, whichever lower level the
//!    big work sits in;
//! 2. within the lower levels, level 1 against level 2, weights 4:1 (a group that has run
//!    5-100 ms is still interactive next to a 100 ms+ scan).
//!
//! Running a slice of `dt` advances each clock it belongs to by `dt / weight`, so over any
//! stretch where both sides stay busy their run times follow the weights. Ties go to the
//! higher level. A side that was empty banks no credit: when it gets work again its clock is
//! lifted to its busy rival's (as CFS does for a waking task).
//!
//! Clock slots: [`TOP`] (level 0), [`LOWER`] (levels 1 and 2 together), then level 1 and
//! level 2 inside the lower side. This module is pure: the pool keeps the clocks in atomics.

use crate::LEVELS;

pub const CLOCKS: usize = 4;
pub const TOP: usize = 0;
pub const LOWER: usize = 1;
/// Clock slot of level 1 and level 2 within the lower side.
const fn inner_slot(level: usize) -> usize {
    level + 1
}

/// Clock units per nanosecond of run time at weight 1.0, so small weights keep precision.
const CLOCK_SCALE: f64 = 1024.0;
/// Weights never reach zero: a side with no rival still runs.
const WEIGHT_MIN: f64 = 1e-3;
/// Level 1's part of the lower levels' time when both have work.
const LEVEL1_OF_LOWER: f64 = 0.8;

fn advance(run_ns: u64, weight: f64) -> u64 {
    (run_ns as f64 * CLOCK_SCALE / weight.max(WEIGHT_MIN)) as u64
}

/// How far each clock moves when `level` ran for `run_ns` (added to the clocks).
pub fn charge(level: usize, run_ns: u64, small_request_share: f64) -> [u64; CLOCKS] {
    let s = small_request_share.clamp(0.0, 1.0);
    let mut add = [0; CLOCKS];
    if level == 0 {
        add[TOP] = advance(run_ns, s);
    } else {
        add[LOWER] = advance(run_ns, 1.0 - s);
        let w = if level == 1 {
            LEVEL1_OF_LOWER
        } else {
            1.0 - LEVEL1_OF_LOWER
        };
        add[inner_slot(level)] = advance(run_ns, w);
    }
    add
}

/// Levels with work, in the order to serve them.
pub fn serve_order(clocks: [u64; CLOCKS], non_empty: [bool; LEVELS]) -> ([usize; LEVELS], usize) {
    let mut lower = [0usize; 2];
    let mut n_lower = 0;
    for (level, _) in non_empty
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, busy)| **busy)
    {
        lower[n_lower] = level;
        n_lower += 1;
    }
    lower[..n_lower].sort_by_key(|&l| (clocks[inner_slot(l)], l));
    let mut order = [0usize; LEVELS];
    let mut n = 0;
    let top_first = non_empty[0] && (n_lower == 0 || clocks[TOP] <= clocks[LOWER]);
    if top_first {
        order[n] = 0;
        n += 1;
    }
    for &l in &lower[..n_lower] {
        order[n] = l;
        n += 1;
    }
    if non_empty[0] && !top_first {
        order[n] = 0;
        n += 1;
    }
    (order, n)
}

/// The clocks to start from when `level` gets work after being empty (values to `max` in).
///
/// The waking side is placed `credit_ns` of its own run time behind its busy rival, so a
/// burst of new work runs up to that long before the rival's next turn, instead of one task
/// per rival slice; the credit is bounded, so long-run shares still follow the weights.
pub fn catch_up(
    clocks: [u64; CLOCKS],
    non_empty: [bool; LEVELS],
    level: usize,
    credit_ns: u64,
    small_request_share: f64,
) -> [u64; CLOCKS] {
    let s = small_request_share.clamp(0.0, 1.0);
    let place = |own: u64, rival: u64, weight: f64| {
        own.max(rival.saturating_sub(advance(credit_ns, weight)))
    };
    let mut lifted = clocks;
    let lower_busy = non_empty[1..].iter().any(|&b| b);
    if level == 0 {
        if lower_busy {
            lifted[TOP] = place(clocks[TOP], clocks[LOWER], s);
        }
        return lifted;
    }
    let other = if level == 1 { 2 } else { 1 };
    if non_empty[other] {
        let w = if level == 1 {
            LEVEL1_OF_LOWER
        } else {
            1.0 - LEVEL1_OF_LOWER
        };
        lifted[inner_slot(level)] = place(clocks[inner_slot(level)], clocks[inner_slot(other)], w);
    } else if non_empty[0] {
        // The lower side as a whole wakes up against a busy level 0.
        lifted[LOWER] = place(clocks[LOWER], clocks[TOP], 1.0 - s);
    }
    lifted
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the policy with the given levels always busy and fixed slice lengths; returns the
    /// share of run time each level got.
    fn simulate(
        share: f64,
        slice_ns: [u64; LEVELS],
        busy: [bool; LEVELS],
        steps: usize,
    ) -> [f64; LEVELS] {
        let mut clocks = [0u64; CLOCKS];
        let mut ran = [0u64; LEVELS];
        for _ in 0..steps {
            let (order, n) = serve_order(clocks, busy);
            assert!(n > 0);
            let l = order[0];
            for (c, add) in clocks.iter_mut().zip(charge(l, slice_ns[l], share)) {
                *c += add;
            }
            ran[l] += slice_ns[l];
        }
        let total: u64 = ran.iter().sum();
        ran.map(|r| r as f64 / total as f64)
    }

    const SLICES: [u64; LEVELS] = [35_000, 1_000_000, 1_000_000];

    #[test]
    fn level_zero_gets_the_share_against_either_lower_level_or_both() {
        for share in [0.2, 0.5, 0.8, 0.95] {
            for busy in [[true, false, true], [true, true, false], [true, true, true]] {
                let got = simulate(share, SLICES, busy, 200_000);
                assert!(
                    (got[0] - share).abs() < 0.01,
                    "share {share}, busy {busy:?}: level 0 got {}",
                    got[0]
                );
            }
        }
    }

    #[test]
    fn a_lone_level_gets_everything_whatever_its_weight() {
        assert_eq!(simulate(0.8, SLICES, [false, false, true], 1000)[2], 1.0);
        assert_eq!(simulate(0.0, SLICES, [true, false, false], 1000)[0], 1.0);
        assert_eq!(simulate(1.0, SLICES, [false, true, false], 1000)[1], 1.0);
    }

    #[test]
    fn level_one_gets_four_fifths_of_the_lower_time() {
        let got = simulate(0.8, SLICES, [false, true, true], 100_000);
        assert!((got[1] - 0.8).abs() < 0.01, "{got:?}");
    }

    #[test]
    fn ties_go_to_the_top_level() {
        let (order, n) = serve_order([10, 10, 0, 0], [true, true, true]);
        assert_eq!(&order[..n], &[0, 1, 2]);
        let (order, n) = serve_order([11, 10, 5, 3], [true, true, true]);
        assert_eq!(&order[..n], &[2, 1, 0]);
    }

    #[test]
    fn a_waking_level_banks_no_credit_beyond_its_allowance() {
        // Level 0 was idle at clock 3 while the lower side ran far ahead: it starts one credit
        // (1 µs at weight 0.5) behind the lower side, not at 3.
        let credit = advance(1000, 0.5);
        let far = 10 * credit;
        assert_eq!(
            catch_up([3, far, 0, 0], [false, false, true], 0, 1000, 0.5)[TOP],
            far - credit
        );
        assert_eq!(
            catch_up([far + 5, far, 0, 0], [false, false, true], 0, 1000, 0.5)[TOP],
            far + 5
        );
        assert_eq!(
            catch_up([3, far, 0, 0], [false, false, false], 0, 1000, 0.5)[TOP],
            3
        );
        // Level 1 wakes next to a busy level 2; the lower side wakes next to a busy level 0.
        assert_eq!(
            catch_up([0, 0, 4, 40_000], [false, false, true], 1, 0, 0.5)[2],
            40_000
        );
        assert_eq!(
            catch_up([70_000, 9, 0, 0], [true, false, false], 2, 0, 0.5)[LOWER],
            70_000
        );
    }

    #[test]
    fn a_burst_within_the_credit_runs_before_the_next_big_slice() {
        // Level 0 alternates between bursts of 20 tasks and silence while level 2 is always
        // busy. With a credit of one big slice, a burst runs before the next big slice.
        let share = 0.8;
        let mut clocks = [0u64; CLOCKS];
        let (mut ran_small, mut ran_big) = (0u64, 0u64);
        for _ in 0..1000 {
            for _ in 0..3 {
                for (c, add) in clocks.iter_mut().zip(charge(2, 1_000_000, share)) {
                    *c += add;
                }
                ran_big += 1_000_000;
            }
            clocks = catch_up(clocks, [false, false, true], 0, 1_000_000, share);
            let mut left = 20;
            let mut interrupted = false;
            while left > 0 {
                let (order, _) = serve_order(clocks, [true, false, true]);
                let l = order[0];
                let ns = if l == 0 {
                    left -= 1;
                    35_000
                } else {
                    interrupted = true;
                    1_000_000
                };
                for (c, add) in clocks.iter_mut().zip(charge(l, ns, share)) {
                    *c += add;
                }
                if l == 0 {
                    ran_small += ns
                } else {
                    ran_big += ns
                }
            }
            assert!(!interrupted, "a 700 µs burst fits in the credit");
        }
        assert_eq!((ran_small, ran_big), (1000 * 20 * 35_000, 3000 * 1_000_000));
    }
}
