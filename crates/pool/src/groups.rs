//! Accumulated run time per group, in a fixed table of packed atomics.
//!
//! Slot `hash(group) % slots` holds `tag << 40 | run_time_us` where `tag` is 24 other bits of
//! the hash. Adding run time is one CAS loop; a group that finds its slot taken by another
//! group takes it over and starts from its own time. Memory is bounded by the slot count and
//! old groups vanish by being overwritten: no lock, no allocation, no cleanup thread.
//!
//! A takeover can only make a group look younger than it is. The pool guards against that
//! by also counting each task's own run time and using the larger of the two, so a long task
//! never climbs back to the top level because its group's slot was reused.

use std::sync::atomic::{AtomicU64, Ordering};

const RUN_TIME_BITS: u32 = 40;
const RUN_TIME_MASK: u64 = (1 << RUN_TIME_BITS) - 1;

pub struct GroupTable {
    slots: Box<[AtomicU64]>,
}

/// Group 0 means "no group": the task is accounted on its own.
pub const NO_GROUP: u64 = 0;

fn mix(group: u64) -> u64 {
    // SplitMix64 finaliser: spreads sequential ids over slots and tags.
    let mut z = group.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl GroupTable {
    pub fn new(slots: usize) -> GroupTable {
        GroupTable {
            slots: (0..slots.max(1)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn locate(&self, group: u64) -> (&AtomicU64, u64) {
        let h = mix(group);
        let slot = &self.slots[(h % self.slots.len() as u64) as usize];
        // Tag 0 marks an empty slot, so real tags are never 0.
        let tag = ((h >> RUN_TIME_BITS) & 0xff_ffff).max(1);
        (slot, tag)
    }

    /// Adds `run_us` to the group and returns its new total (µs).
    pub fn add(&self, group: u64, run_us: u64) -> u64 {
        if group == NO_GROUP {
            return 0;
        }
        let (slot, tag) = self.locate(group);
        let mut current = slot.load(Ordering::Relaxed);
        loop {
            let total = if current >> RUN_TIME_BITS == tag {
                ((current & RUN_TIME_MASK) + run_us).min(RUN_TIME_MASK)
            } else {
                run_us.min(RUN_TIME_MASK)
            };
            match slot.compare_exchange_weak(
                current,
                tag << RUN_TIME_BITS | total,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return total,
                Err(seen) => current = seen,
            }
        }
    }

    /// The group's accumulated run time (µs), 0 for an unknown group.
    pub fn get(&self, group: u64) -> u64 {
        if group == NO_GROUP {
            return 0;
        }
        let (slot, tag) = self.locate(group);
        let v = slot.load(Ordering::Relaxed);
        if v >> RUN_TIME_BITS == tag {
            v & RUN_TIME_MASK
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_time_accumulates_per_group() {
        let t = GroupTable::new(1024);
        assert_eq!(t.add(7, 300), 300);
        assert_eq!(t.add(7, 200), 500);
        assert_eq!(t.get(7), 500);
        assert_eq!(t.get(8), 0);
        assert_eq!(t.add(NO_GROUP, 99), 0);
    }

    #[test]
    fn a_colliding_group_takes_the_slot_over_from_its_own_time() {
        let t = GroupTable::new(1);
        t.add(1, 1000);
        assert_eq!(t.add(2, 10), 10);
        assert_eq!(t.get(1), 0);
        assert_eq!(t.get(2), 10);
    }

    #[test]
    fn concurrent_adds_lose_nothing() {
        let t = std::sync::Arc::new(GroupTable::new(64));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        t.add(42, 1);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(t.get(42), 40_000);
    }
}
