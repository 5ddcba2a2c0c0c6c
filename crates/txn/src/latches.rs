//! Latches: a fixed table of slots (`storage.scheduler-concurrency`); a key maps to a slot
//! by hash. A command takes the slots of all its keys in ascending slot order and holds them
//! from its snapshot read to its write, so commands on common keys run one after another and
//! no two commands can wait on each other in a cycle. Unrelated keys that share a slot wait
//! needlessly; the table is large to make that rare.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Condvar, Mutex};

pub struct Latches {
    slots: Box<[Slot]>,
}

struct Slot {
    held: Mutex<bool>,
    freed: Condvar,
}

/// Held latches; dropping releases them.
pub struct Guard<'a> {
    latches: &'a Latches,
    slots: Vec<usize>,
}

/// Held latches that keep their table alive, so another thread may release them later (a
/// command whose write raftstore answers); dropping releases them.
pub struct OwnedGuard {
    latches: Arc<Latches>,
    slots: Vec<usize>,
}

impl Latches {
    pub fn new(slots: usize) -> Latches {
        Latches {
            slots: (0..slots.max(1))
                .map(|_| Slot {
                    held: Mutex::new(false),
                    freed: Condvar::new(),
                })
                .collect(),
        }
    }

    fn slot_of(&self, key: &[u8]) -> usize {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        (h.finish() % self.slots.len() as u64) as usize
    }

    /// The sorted, distinct slots of `keys`.
    pub fn slots_of<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> Vec<usize> {
        let mut slots: Vec<usize> = keys.into_iter().map(|k| self.slot_of(k)).collect();
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    /// Blocks until every slot of `keys` is held by the caller.
    pub fn acquire<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> Guard<'_> {
        let slots = self.slots_of(keys);
        for &s in &slots {
            let slot = &self.slots[s];
            let mut held = slot.held.lock().expect("latch lock poisoned");
            while *held {
                held = slot.freed.wait(held).expect("latch lock poisoned");
            }
            *held = true;
        }
        Guard {
            latches: self,
            slots,
        }
    }

    /// As [`Latches::acquire`], holding the slots in a guard that owns a handle of the table.
    pub fn acquire_owned<'k>(
        self: &Arc<Self>,
        keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> OwnedGuard {
        self.owned(self.acquire(keys))
    }

    /// As [`Latches::try_acquire`], holding the slots in a guard that owns a handle of the
    /// table.
    pub fn try_acquire_owned<'k>(
        self: &Arc<Self>,
        keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> Option<OwnedGuard> {
        Some(self.owned(self.try_acquire(keys)?))
    }

    /// `guard`'s slots, held by a guard that owns a handle of the table.
    fn owned(self: &Arc<Self>, mut guard: Guard<'_>) -> OwnedGuard {
        OwnedGuard {
            latches: self.clone(),
            slots: std::mem::take(&mut guard.slots),
        }
    }

    fn release(&self, slots: &[usize]) {
        for &s in slots {
            let slot = &self.slots[s];
            *slot.held.lock().expect("latch lock poisoned") = false;
            slot.freed.notify_one();
        }
    }

    /// Waits, slot by slot, until each slot has been free once: every command that held
    /// latches when this began has released them since. Takes no slot, so commands go on.
    pub fn wait_for_holders(&self) {
        for slot in self.slots.iter() {
            let mut held = slot.held.lock().expect("latch lock poisoned");
            if !*held {
                continue;
            }
            while *held {
                held = slot.freed.wait(held).expect("latch lock poisoned");
            }
            // The release woke one waiter, this one: pass it on to a command that waits.
            slot.freed.notify_one();
        }
    }

    /// Every slot of `keys` if none is held now; `None` (holding nothing) otherwise.
    pub fn try_acquire<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> Option<Guard<'_>> {
        let mut guard = Guard {
            latches: self,
            slots: Vec::new(),
        };
        for s in self.slots_of(keys) {
            let mut held = self.slots[s].held.lock().expect("latch lock poisoned");
            if *held {
                return None; // `guard` releases the slots taken so far.
            }
            *held = true;
            guard.slots.push(s);
        }
        Some(guard)
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.latches.release(&self.slots);
    }
}

impl Drop for OwnedGuard {
    fn drop(&mut self) {
        self.latches.release(&self.slots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn waiting_for_holders_returns_once_every_earlier_holder_released() {
        let latches = Arc::new(Latches::new(8));
        let held = latches.acquire([&b"k"[..]]);
        let released = Arc::new(AtomicUsize::new(0));
        let waiter = {
            let (latches, released) = (latches.clone(), released.clone());
            std::thread::spawn(move || {
                latches.wait_for_holders();
                released.load(Ordering::SeqCst)
            })
        };
        // A command that waits for the same slot still gets it after the release.
        let other = {
            let latches = latches.clone();
            std::thread::spawn(move || drop(latches.acquire([&b"k"[..]])))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        released.store(1, Ordering::SeqCst);
        drop(held);
        assert_eq!(waiter.join().unwrap(), 1, "it waited for the holder");
        other.join().unwrap();
    }

    #[test]
    fn commands_on_a_common_key_never_overlap() {
        let latches = Arc::new(Latches::new(64));
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (latches, inside) = (latches.clone(), inside.clone());
                std::thread::spawn(move || {
                    for i in 0..500 {
                        let own = format!("own-{t}-{i}");
                        let _g = latches.acquire([b"shared".as_slice(), own.as_bytes()]);
                        assert_eq!(
                            inside.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two holders of one latch"
                        );
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn try_acquire_takes_all_slots_or_none() {
        let l = Latches::new(1024);
        let held = l.acquire([b"b".as_slice()]);
        assert!(l.try_acquire([b"a".as_slice(), b"b"]).is_none());
        // The failed attempt released what it took: "a" is free.
        let a = l.try_acquire([b"a".as_slice()]).expect("a is free");
        drop((held, a));
        assert!(l.try_acquire([b"a".as_slice(), b"b"]).is_some());
    }

    #[test]
    fn slots_are_sorted_and_distinct() {
        let l = Latches::new(8);
        let slots = l.slots_of([b"a".as_slice(), b"b", b"a", b"c", b"d", b"e"]);
        assert!(slots.windows(2).all(|w| w[0] < w[1]));
    }
}
