//! Loom models of the return queue: a push racing `close`, and caps under concurrent pushes.

use crate::pool::return_queue::{Refused, ReturnQueue};
use crate::sync::Arc;
use loom::thread;

#[test]
fn a_push_racing_close_is_taken_by_close_or_refused_never_stranded() {
    loom::model(|| {
        let queue = Arc::new(ReturnQueue::<u32>::new(4, usize::MAX));
        let pusher = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.push(7, 0))
        };
        let closed = queue.close();
        match pusher.join().unwrap() {
            Ok(()) => assert_eq!(closed, vec![(7, 0)]),
            Err((value, why)) => {
                assert_eq!((value, why), (7, Refused::Closed));
                assert!(closed.is_empty());
            }
        }
        // After close nothing is accepted and nothing is left behind.
        assert!(matches!(queue.push(8, 0), Err((8, Refused::Closed))));
        let mut rest = Vec::new();
        assert_eq!(
            queue.drain_with(|value, bytes| rest.push((value, bytes))),
            0
        );
    });
}

#[test]
fn concurrent_pushes_never_pass_the_object_or_byte_cap() {
    loom::model(|| {
        // Room for two objects but only 10 bytes: of two 6-byte returns exactly one fits.
        let queue = Arc::new(ReturnQueue::<u32>::new(2, 10));
        let pushers: Vec<_> = (0..2)
            .map(|i| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || queue.push(i, 6).is_ok())
            })
            .collect();
        let accepted = pushers
            .into_iter()
            .map(|pusher| pusher.join().unwrap())
            .filter(|&ok| ok)
            .count();
        assert_eq!(accepted, 1);
        assert_eq!(queue.retained(), (1, 6));
    });
}

#[test]
fn the_owner_drains_every_push_that_happened_before_its_drain() {
    loom::model(|| {
        let queue = Arc::new(ReturnQueue::<u32>::new(4, usize::MAX));
        let pusher = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.push(1, 0).is_ok())
        };
        let mut free = Vec::new();
        queue.drain_with(|value, bytes| free.push((value, bytes)));
        assert!(pusher.join().unwrap());
        // Whatever the interleaving, the object is either drained already or still queued.
        queue.drain_with(|value, bytes| free.push((value, bytes)));
        assert_eq!(free, vec![(1, 0)]);
        assert!(queue.close().is_empty());
    });
}
