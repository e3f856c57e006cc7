//! Which CPUs this process may run on, and pinning the calling thread to one of them: with
//! `MICROBENCH_BURNERS=pinned` the CPU burners pin themselves one per core, so that every
//! core is busy all the time (see [`crate::burners`]).
//!
//! Linux only (`sched_getaffinity` / `sched_setaffinity`); elsewhere nothing is pinned.

/// The CPUs the calling thread may run on, in increasing order; empty where that cannot be
/// read.
pub fn allowed_cpus() -> Vec<usize> {
    imp::allowed_cpus()
}

/// Pins the calling thread to `cpu`; whether it was pinned.
pub fn pin_current_thread(cpu: usize) -> bool {
    imp::pin_current_thread(cpu)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::mem;

    pub(super) fn allowed_cpus() -> Vec<usize> {
        // SAFETY: `cpu_set_t` is a plain bit array; all zeroes is a valid (empty) set.
        let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
        // SAFETY: `set` is a valid, writable `cpu_set_t` of the size passed; the call writes
        // only to it (pid 0: the calling thread).
        let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `cpu` is below `CPU_SETSIZE`, the set's size in bits.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect()
    }

    pub(super) fn pin_current_thread(cpu: usize) -> bool {
        if cpu >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: as in `allowed_cpus`.
        let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
        // SAFETY: `cpu` is below `CPU_SETSIZE` (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: `set` is a valid `cpu_set_t` of the size passed; the call only reads it
        // (pid 0: the calling thread).
        unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn allowed_cpus() -> Vec<usize> {
        Vec::new()
    }

    pub(super) fn pin_current_thread(_cpu: usize) -> bool {
        false
    }
}
