//! `Pooled<T>`: an object on loan from a `Recycler`, given back when the guard is dropped.

use crate::pool::return_queue::Refused;
use crate::pool::shared::Shared;
use crate::pool::thread_pool::{LocalPool, Origin};
use crate::pool::thread_slots;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::thread;

/// An object on loan from a [`Recycler`](super::Recycler): it dereferences to `T`, and goes
/// back to the pool of the thread that handed it out when dropped (or
/// [`recycle`](Self::recycle)d), from any thread.
///
/// The guard owns the object, so it can be given back only once: a double return, the bug
/// behind netty#10986 (two threads recycling one handle), cannot be written. The object
/// leaves circulation for good with [`detach`](Self::detach).
///
/// Giving it back: the recycler's reset hook runs on the returning thread, then the object is
/// kept by the origin thread's pool — directly when returned on that thread, through its
/// bounded return queue otherwise — unless that would pass the pool's object or byte cap, or
/// the origin thread has exited; it is dropped then. Dropping a guard never blocks beyond a
/// short internal lock and never panics on its own account.
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::Recycler;
///
/// let recycler = Recycler::builder(Vec::<u8>::new).reset(|buffer| buffer.clear()).build();
/// let mut buffer = recycler.get();
/// buffer.extend_from_slice(b"abc");
/// let sent = std::thread::spawn(move || buffer.len()); // returned from another thread
/// assert_eq!(sent.join().unwrap(), 3);
///
/// let again = recycler.get(); // the same Vec, cleared
/// assert!(again.is_empty() && again.capacity() >= 3);
/// ```
pub struct Pooled<T: Send + 'static> {
    /// The object. Initialised for the guard's whole life: only the two ways of consuming the
    /// guard take it out, `Drop` (once, last) and `detach` (which never lets `Drop` run).
    /// Not an `Option<T>`: a check on every dereference cost ~12% of a pooled AppendEntries
    /// batch of 16-byte entries (see `README.md`, "`unsafe`").
    value: ManuallyDrop<T>,
    /// Where the object goes when the guard is consumed. `Some` until `Drop` or `detach`
    /// takes it: an `Option` so that `detach` can move it out of a guard whose `Drop` must not
    /// run, without another `unsafe` read.
    home: Option<Home<T>>,
}

/// Where a lent object goes back to. Either way its return is counted exactly once
/// (`recycled`, `dropped` or `detached`), which keeps the identity of
/// [`RecyclerStats`](super::RecyclerStats) true for every object handed out.
pub(crate) enum Home<T> {
    /// The pool that lent it.
    Pool(Arc<Origin<T>>),
    /// None: it was made while its thread was exiting (the thread's pools were gone) or from
    /// inside the thread's pool table. It is dropped when given back, counted as `dropped`.
    Unpooled(Arc<Shared<T>>),
}

impl<T> Home<T> {
    fn shared(&self) -> &Shared<T> {
        match self {
            Home::Pool(origin) => &origin.shared,
            Home::Unpooled(shared) => shared,
        }
    }
}

impl<T: Send + 'static> Pooled<T> {
    pub(crate) fn new(value: T, home: Home<T>) -> Self {
        Self {
            value: ManuallyDrop::new(value),
            home: Some(home),
        }
    }

    /// Gives the object back now (the same as dropping the guard, spelled out).
    pub fn recycle(self) {
        drop(self);
    }

    /// Takes the object out of circulation: it is never given back, and the pool forgets it.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::pool::Recycler;
    ///
    /// let recycler = Recycler::new(|| String::from("kept"));
    /// let mine: String = recycler.get().detach();
    /// assert_eq!(mine, "kept");
    /// assert_eq!(recycler.stats().detached, 1);
    /// ```
    pub fn detach(self) -> T {
        // `Drop` must not run: it would give the object back.
        let mut this = ManuallyDrop::new(self);
        if let Some(home) = this.home.take() {
            home.shared().count_detached();
        }
        // SAFETY: `value` is initialised (only `Drop` and this method take it out, and
        // neither has run: `Drop` never will, for `this` is never dropped), and it is taken
        // once. `home` was taken above, so forgetting `this` leaks nothing.
        unsafe { ManuallyDrop::take(&mut this.value) }
    }

    /// Whether the object will go back to a pool (`false` only for objects made while the
    /// calling thread was exiting).
    pub fn is_pooled(&self) -> bool {
        matches!(self.home, Some(Home::Pool(_)))
    }
}

/// Gives `value` back to `origin`'s pool, or drops it.
fn give_back<T: Send + 'static>(value: T, origin: Arc<Origin<T>>) {
    let shared = &origin.shared;
    if thread::panicking() || !shared.key.is_alive() {
        // No user hooks while unwinding; no pool to return to once the recycler is gone.
        shared.count_orphan_drop();
        drop(value);
        return;
    }
    let Some((value, bytes)) = shared.prepare(value) else {
        return; // the hook panicked; counted and dropped by `prepare`
    };
    let slot = shared.key.slot();
    // On the origin thread: straight onto its free list, the handle kept with the object.
    let mut item = Some((value, origin));
    let own = thread_slots::with_existing_pool(slot, |local: &mut LocalPool<T>| {
        let here = item
            .as_ref()
            .is_some_and(|(_, origin)| Arc::ptr_eq(local.origin(), origin));
        if !here {
            return None;
        }
        let (value, origin) = item.take()?;
        Some(local.put(value, bytes, origin))
    })
    .flatten();
    match own {
        Some(Ok(())) => {}
        Some(Err(refused)) => drop(refused), // over a cap: counted by `put`
        None => {
            let (value, origin) = item.take().expect("not taken on this path");
            match origin.queue.push(value, bytes) {
                Ok(()) => {}
                Err((refused, Refused::Full)) => drop(refused), // counted by the queue
                Err((refused, Refused::Closed)) => {
                    origin.shared.count_orphan_drop();
                    drop(refused);
                }
            }
        }
    }
}

impl<T: Send + 'static> Drop for Pooled<T> {
    fn drop(&mut self) {
        // SAFETY: `value` is initialised: `detach`, the only other place that takes it, never
        // lets `Drop` run. `Drop` runs once, and nothing reads `value` after this.
        let value = unsafe { ManuallyDrop::take(&mut self.value) };
        match self.home.take() {
            Some(Home::Pool(origin)) => give_back(value, origin),
            Some(Home::Unpooled(shared)) => {
                shared.count_orphan_drop();
                drop(value);
            }
            None => drop(value), // not reached: only `Drop` and `detach` take `home`
        }
    }
}

impl<T: Send + 'static> Deref for Pooled<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Send + 'static> DerefMut for Pooled<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: Send + 'static> AsRef<T> for Pooled<T> {
    fn as_ref(&self) -> &T {
        self
    }
}

impl<T: Send + 'static> AsMut<T> for Pooled<T> {
    fn as_mut(&mut self) -> &mut T {
        self
    }
}

impl<T: Send + fmt::Debug + 'static> fmt::Debug for Pooled<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pooled")
            .field("value", &*self.value)
            .field("pooled", &self.is_pooled())
            .finish()
    }
}
