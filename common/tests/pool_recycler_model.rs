//! `Recycler` against a model: random gets, returns (own thread and another), size changes
//! and detaches never hand one object out twice, never pass a cap, and match the model's
//! reuse order, the owner's one-object credit, and the counters exactly; and every object
//! made is dropped exactly once: when the pool refuses it, when its detached value goes, or
//! when the recycler is gone.

#![cfg(not(loom))]

mod support;

use proptest::prelude::*;
use pulsar_common::pool::{Pooled, Recycler};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

/// A pooled object: an identity, a size the test chooses, a flag the reset hook clears, and
/// the log its drop writes its identity to.
#[derive(Debug)]
struct Item {
    id: u64,
    bytes: usize,
    dirty: bool,
    drops: Arc<DropLog>,
}

/// The identities of the items dropped so far, in drop order.
type DropLog = Mutex<Vec<u64>>;

impl Drop for Item {
    fn drop(&mut self) {
        self.drops.lock().unwrap().push(self.id);
    }
}

/// The identities in `log`, sorted; fails if one was dropped twice.
fn dropped_once(log: &DropLog) -> Result<Vec<u64>, TestCaseError> {
    let mut ids = log.lock().unwrap().clone();
    ids.sort_unstable();
    let twice = ids.windows(2).find(|pair| pair[0] == pair[1]);
    prop_assert!(twice.is_none(), "object {:?} dropped twice", twice);
    Ok(ids)
}

#[derive(Debug, Clone)]
enum Op {
    Get,
    /// Set the size of the outstanding object at this position (modulo their number).
    Resize(usize, usize),
    /// Give it back on the owner thread.
    ReturnHere(usize),
    /// Give it back on another thread (and wait until it has).
    ReturnElsewhere(usize),
    Detach(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Get),
        2 => (any::<usize>(), 0usize..80).prop_map(|(i, bytes)| Op::Resize(i, bytes)),
        3 => any::<usize>().prop_map(Op::ReturnHere),
        3 => any::<usize>().prop_map(Op::ReturnElsewhere),
        1 => any::<usize>().prop_map(Op::Detach),
    ]
}

/// What the recycler should do, written as plainly as possible.
#[derive(Debug, Default)]
struct Model {
    max_objects: usize,
    max_bytes: usize,
    /// The owner's free list, last returned on top.
    free: Vec<(u64, usize)>,
    /// Returned by another thread, oldest first.
    queued: Vec<(u64, usize)>,
    /// The owner's credit: the reservation (bytes) of the last object it took, kept for its
    /// next return on the owner thread.
    credit: Option<usize>,
    next_id: u64,
    hits: u64,
    misses: u64,
    recycled: u64,
    dropped: u64,
    detached: u64,
}

impl Model {
    /// What the pool holds.
    fn retained(&self) -> (usize, usize) {
        let all = self.free.iter().chain(&self.queued);
        (
            self.free.len() + self.queued.len(),
            all.map(|&(_, bytes)| bytes).sum(),
        )
    }

    /// What the caps are checked against: what the pool holds plus the owner's credit.
    fn reserved(&self) -> (usize, usize) {
        let (objects, bytes) = self.retained();
        match self.credit {
            Some(credit) => (objects + 1, bytes + credit),
            None => (objects, bytes),
        }
    }

    fn fits(&self, bytes: usize) -> bool {
        let (objects, reserved_bytes) = self.reserved();
        objects < self.max_objects && (bytes == 0 || reserved_bytes + bytes <= self.max_bytes)
    }

    /// The id `get` must return.
    fn get(&mut self) -> u64 {
        if self.free.is_empty() {
            self.free.append(&mut self.queued);
        }
        match self.free.pop() {
            Some((id, bytes)) => {
                // Its reservation becomes the credit (an older credit is given back).
                self.credit = Some(bytes);
                self.hits += 1;
                id
            }
            None => {
                // A miss gives the credit back: the object it was kept for went elsewhere.
                self.credit = None;
                self.misses += 1;
                self.next_id += 1;
                self.next_id - 1
            }
        }
    }

    fn give_back(&mut self, id: u64, bytes: usize, here: bool) {
        let fits = if here {
            match self.credit.take() {
                // The credit covers the object, and its bytes if they did not grow.
                Some(credit) if bytes <= credit => true,
                // Only the growth is reserved; on failure the credit is given back too.
                Some(_) => self.retained().1 + bytes <= self.max_bytes,
                None => self.fits(bytes),
            }
        } else {
            self.fits(bytes)
        };
        if !fits {
            self.dropped += 1;
        } else if here {
            self.free.push((id, bytes));
            self.recycled += 1;
        } else {
            self.queued.push((id, bytes));
            self.recycled += 1;
        }
    }
}

/// A thread that drops whatever it is sent, and says when it has.
struct Elsewhere {
    send: Option<mpsc::Sender<Pooled<Item>>>,
    done: mpsc::Receiver<()>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Elsewhere {
    fn new() -> Self {
        let (send, receive) = mpsc::channel::<Pooled<Item>>();
        let (ack, done) = mpsc::channel();
        let thread = thread::spawn(move || {
            for item in receive {
                drop(item);
                ack.send(()).unwrap();
            }
        });
        Self {
            send: Some(send),
            done,
            thread: Some(thread),
        }
    }

    fn give_back(&self, item: Pooled<Item>) {
        self.send.as_ref().unwrap().send(item).unwrap();
        self.done.recv().unwrap();
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        drop(self.send.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

proptest! {
    #![proptest_config(support::proptest_config())]

    #[test]
    fn the_recycler_behaves_like_its_model(
        max_objects in 0usize..6,
        max_bytes in prop_oneof![Just(usize::MAX), 0usize..200],
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        let next_id = Arc::new(AtomicU64::new(0));
        let ids = Arc::clone(&next_id);
        let drops = Arc::new(DropLog::default());
        let log = Arc::clone(&drops);
        let recycler = Recycler::builder(move || Item {
            id: ids.fetch_add(1, Ordering::SeqCst),
            bytes: 0,
            dirty: false,
            drops: Arc::clone(&log),
        })
        .max_objects_per_thread(max_objects)
        .max_retained_bytes_per_thread(max_bytes)
        .retained_bytes(|item| item.bytes)
        .reset(|item| item.dirty = false)
        .build();
        let elsewhere = Elsewhere::new();
        let mut model = Model { max_objects, max_bytes, ..Model::default() };
        let mut out: Vec<Pooled<Item>> = Vec::new();

        for op in ops {
            match op {
                Op::Get => {
                    let mut item = recycler.get();
                    let expected = model.get();
                    prop_assert_eq!(item.id, expected);
                    prop_assert!(
                        out.iter().all(|other| other.id != item.id),
                        "object {} handed out twice", item.id
                    );
                    prop_assert!(!item.dirty, "reset hook did not run before reuse");
                    item.dirty = true;
                    out.push(item);
                }
                Op::Resize(i, bytes) if !out.is_empty() => {
                    let n = out.len();
                    out[i % n].bytes = bytes;
                }
                Op::ReturnHere(i) if !out.is_empty() => {
                    let item = out.swap_remove(i % out.len());
                    model.give_back(item.id, item.bytes, true);
                    drop(item);
                }
                Op::ReturnElsewhere(i) if !out.is_empty() => {
                    let item = out.swap_remove(i % out.len());
                    model.give_back(item.id, item.bytes, false);
                    elsewhere.give_back(item);
                }
                Op::Detach(i) if !out.is_empty() => {
                    let item: Item = out.swap_remove(i % out.len()).detach();
                    model.detached += 1;
                    prop_assert!(out.iter().all(|other| other.id != item.id));
                }
                _ => {}
            }

            let pool = recycler.thread_stats();
            let (objects, bytes) = model.retained();
            prop_assert_eq!((pool.size, pool.retained_bytes), (objects, bytes));
            prop_assert_eq!(pool.queued, model.queued.len());
            prop_assert!(pool.size <= max_objects);
            prop_assert!(pool.retained_bytes <= max_bytes);
            let stats = recycler.stats();
            prop_assert_eq!(
                (stats.hits, stats.misses, stats.recycled, stats.dropped, stats.detached),
                (model.hits, model.misses, model.recycled, model.dropped, model.detached)
            );
            // Refused objects are dropped by the pool, detached ones by this test at once.
            let dropped = dropped_once(&drops)?;
            prop_assert_eq!(dropped.len() as u64, model.dropped + model.detached);
        }
        prop_assert_eq!(next_id.load(Ordering::SeqCst), model.next_id);

        // The rest go back to the pool, which the recycler's drop releases on this thread.
        drop(out);
        drop(elsewhere);
        drop(recycler);
        let made: Vec<u64> = (0..model.next_id).collect();
        prop_assert_eq!(dropped_once(&drops)?, made, "every object made is dropped once");
    }
}
