//! The thread-local table that holds each thread's pools, one slot per live recycler.
//!
//! Rust's `thread_local!` cannot be generic, so every thread has one table of type-erased
//! pools, indexed by a slot index each recycler takes for its lifetime. An entry also carries
//! the recycler's process-unique id (a reused index never hands out another recycler's pool)
//! and its `alive` flag (pools of dropped recyclers are swept when the thread next creates a
//! pool). The table is dropped when the thread exits, which releases every pool it holds.
//!
//! No user code runs while the table is borrowed: pools taken out of it (stale or swept) are
//! dropped after the borrow ends, so a `Drop` that reaches a recycler finds the table free.

use crate::sync::plain::Mutex;
use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Where a recycler's pool sits in a thread's table: plain data, copied onto the return path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotId {
    /// Index into each thread's table; handed to another recycler once its key is dropped.
    index: usize,
    /// Process-unique recycler id: tells this recycler's entry from one left at the same index.
    id: u64,
}

/// A recycler's slot, held for its lifetime. Dropping it frees the index.
#[derive(Debug)]
pub(crate) struct SlotKey {
    slot: SlotId,
    /// Cleared when the last `Recycler` handle is dropped; entries whose flag is clear are
    /// swept and returns to them refused.
    alive: Arc<AtomicBool>,
}

/// Free slot indices: the next never-used one, and those given back.
struct SlotIndices {
    next: usize,
    free: Vec<usize>,
}

static SLOT_INDICES: Mutex<SlotIndices> = Mutex::new(SlotIndices {
    next: 0,
    free: Vec::new(),
});

static NEXT_RECYCLER_ID: AtomicU64 = AtomicU64::new(1);

impl SlotKey {
    /// Takes a free slot index and a new id.
    pub(crate) fn allocate() -> Self {
        let index = {
            let mut indices = SLOT_INDICES.lock();
            match indices.free.pop() {
                Some(index) => index,
                None => {
                    indices.next += 1;
                    indices.next - 1
                }
            }
        };
        Self {
            slot: SlotId {
                index,
                id: NEXT_RECYCLER_ID.fetch_add(1, Ordering::Relaxed),
            },
            alive: Arc::new(AtomicBool::new(true)),
        }
    }

    /// The slot, to look the pool up with [`with_existing_pool`].
    pub(crate) fn slot(&self) -> SlotId {
        self.slot
    }

    /// Whether the recycler still has a handle (its pools may still take objects back).
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Marks the recycler dropped: its pools are swept and no longer take objects back.
    pub(crate) fn retire(&self) {
        self.alive.store(false, Ordering::Release);
    }
}

impl Drop for SlotKey {
    fn drop(&mut self) {
        SLOT_INDICES.lock().free.push(self.slot.index);
    }
}

/// One recycler's pool in one thread.
struct Entry {
    id: u64,
    alive: Arc<AtomicBool>,
    pool: Box<dyn Any>,
}

thread_local! {
    /// This thread's pools, indexed by `SlotKey::index`.
    static TABLE: RefCell<Vec<Option<Entry>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on this thread's pool for `key`, creating it with `create` when there is none.
/// `None` when the thread's table is being destroyed (thread exit), or already borrowed
/// (re-entry from a destructor): callers then work without the pool.
///
/// `create` and `f` must not run user code; entries replaced or swept here are dropped after
/// the table is released.
pub(crate) fn with_pool<P: Any, R>(
    key: &SlotKey,
    create: &dyn Fn() -> P,
    f: impl FnOnce(&mut P) -> R,
) -> Option<R> {
    access(key.slot, Some((create, &key.alive)), f)
}

/// Runs `f` on this thread's pool in `slot`, if the thread has one (and its table is
/// available); never creates one.
pub(crate) fn with_existing_pool<P: Any, R>(
    slot: SlotId,
    f: impl FnOnce(&mut P) -> R,
) -> Option<R> {
    access::<P, R>(slot, None, f)
}

type Create<'a, P> = (&'a dyn Fn() -> P, &'a Arc<AtomicBool>);

fn access<P: Any, R>(
    slot: SlotId,
    create: Option<Create<'_, P>>,
    f: impl FnOnce(&mut P) -> R,
) -> Option<R> {
    let mut garbage: Vec<Entry> = Vec::new();
    let result = TABLE
        .try_with(|table| {
            let mut table = table.try_borrow_mut().ok()?;
            let current = matches!(table.get(slot.index), Some(Some(entry)) if entry.id == slot.id);
            if !current {
                let (create, alive) = create?;
                if table.len() <= slot.index {
                    table.resize_with(slot.index + 1, || None);
                }
                // Slow path (first use in this thread): also sweep pools of dropped recyclers.
                for entry in table.iter_mut() {
                    if matches!(entry, Some(e) if !e.alive.load(Ordering::Acquire)) {
                        garbage.extend(entry.take());
                    }
                }
                let fresh = Entry {
                    id: slot.id,
                    alive: Arc::clone(alive),
                    pool: Box::new(create()),
                };
                garbage.extend(table[slot.index].replace(fresh));
            }
            let entry = table[slot.index].as_mut()?;
            let pool = entry.pool.downcast_mut::<P>()?;
            Some(f(pool))
        })
        .ok()
        .flatten();
    drop(garbage);
    result
}

/// Removes this thread's pool for `key`, if any (dropped after the table is released).
pub(crate) fn remove(key: &SlotKey) {
    let removed = TABLE
        .try_with(|table| {
            let mut table = table.try_borrow_mut().ok()?;
            let entry = table.get_mut(key.slot.index)?;
            if matches!(entry, Some(e) if e.id == key.slot.id) {
                entry.take()
            } else {
                None
            }
        })
        .ok()
        .flatten();
    drop(removed);
}
