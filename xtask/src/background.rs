//! A chain of steps run on a thread of its own beside the others, and stopped when the run
//! ends before it: `cargo xtask test` runs Miri this way (one core busy for minutes while the
//! other steps use the rest).
//!
//! Dropping an unjoined [`Background`] (an earlier step failed and `?` returned) kills the
//! command it is running, with the processes that command started (each step runs in a
//! process group of its own), skips the steps after it, and waits for the thread: nothing is
//! left running after `cargo xtask test` returns.

use anyhow::{bail, Context, Result};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How often a running step looks whether it must stop.
const POLL: Duration = Duration::from_millis(100);

/// Steps running on their own thread.
pub(crate) struct Background {
    thread: Option<JoinHandle<Result<()>>>,
    stop: Arc<AtomicBool>,
}

/// What the background thread runs its commands through.
pub(crate) struct Runner {
    stop: Arc<AtomicBool>,
}

impl Background {
    /// Starts `steps` on a new thread; they run their commands through the [`Runner`].
    pub(crate) fn start(steps: impl FnOnce(&Runner) -> Result<()> + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let runner = Runner {
            stop: Arc::clone(&stop),
        };
        let thread = thread::spawn(move || steps(&runner));
        Self {
            thread: Some(thread),
            stop,
        }
    }

    /// Waits for the steps to end; their outcome.
    pub(crate) fn join(mut self) -> Result<()> {
        let thread = self.thread.take().expect("joined once");
        thread
            .join()
            .map_err(|_| anyhow::anyhow!("a background step panicked"))?
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.stop.store(true, Ordering::Relaxed);
            // The running command is killed within one poll; the thread then returns.
            let _ = thread.join();
        }
    }
}

impl Runner {
    /// Runs `command` as the step `name` (like `test::step`: announced, timed, its exit status
    /// checked), in a process group of its own that is killed if the run stops meanwhile.
    pub(crate) fn step(&self, name: &str, command: &mut Command) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            bail!("`{name}` skipped: the run stopped");
        }
        let started = Instant::now();
        println!("==> xtask test: {name} (in the background)");
        let mut child = command
            .current_dir(crate::workspace_root())
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot run the `{name}` step"))?;
        let status: ExitStatus = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if self.stop.load(Ordering::Relaxed) {
                // The group's id is the child's pid (`process_group(0)`).
                // `--`: util-linux's kill reads a negative number before it as a signal.
                let killed_group = Command::new("kill")
                    .args(["-s", "KILL", "--", &format!("-{}", child.id())])
                    .status()
                    .is_ok_and(|status| status.success());
                if !killed_group {
                    // No `kill` program (procps is not on every image): at least the step's
                    // own process, so the wait below does not last the whole step.
                    eprintln!("==> xtask test: cannot kill `{name}`'s process group; killing its first process");
                    let _ = child.kill();
                }
                let _ = child.wait();
                bail!("`{name}` stopped: the run ended before it");
            }
            thread::sleep(POLL);
        };
        crate::test::step_finished(name, status, started)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether any process of group `group` is alive (not a zombie: a killed process whose
    /// parent died waits there until init reaps it), read from `/proc`.
    fn group_alive(group: &str) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // `pid (comm) state ppid pgrp ...`; `comm` may hold spaces, so split after it.
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
            fields.len() > 2 && fields[2] == group && fields[0] != "Z"
        })
    }

    #[test]
    fn steps_run_in_order_and_report_a_failure() {
        let background = Background::start(|runner| {
            runner.step("true", &mut Command::new("true"))?;
            runner.step("false", &mut Command::new("false"))?;
            runner.step("never", &mut Command::new("true"))
        });
        let error = background.join().unwrap_err().to_string();
        assert!(error.contains("`false` failed"), "{error}");
    }

    #[test]
    fn dropping_it_unjoined_kills_the_running_step_and_what_it_started() {
        let dir = std::env::temp_dir().join(format!("xtask-background-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A FIFO: the test's read waits for the shell's write, no polling.
        let pid_fifo = dir.join("pid");
        let _ = std::fs::remove_file(&pid_fifo);
        assert!(Command::new("mkfifo")
            .arg(&pid_fifo)
            .status()
            .unwrap()
            .success());
        let script = format!("echo $$ > {}; sleep 60 & sleep 60", pid_fifo.display());
        let background = Background::start(move |runner| {
            runner.step("sleeper", Command::new("sh").args(["-c", &script]))
        });
        // The shell writes its pid (its group's id) first; read it, waiting at most 10 s.
        let (sender, pid) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let _ = sender.send(std::fs::read_to_string(&pid_fifo));
        });
        let group = pid
            .recv_timeout(Duration::from_secs(10))
            .expect("the step never started")
            .unwrap()
            .trim()
            .to_owned();
        assert!(group_alive(&group));
        let dropped = Instant::now();
        drop(background);
        assert!(
            dropped.elapsed() < Duration::from_secs(5),
            "drop waited for the step"
        );
        // SIGKILL is delivered asynchronously: the killed processes may still be running
        // for a moment after `kill` returns (on a busy machine, for a few scheduler ticks).
        // Nothing signals their end to a process that is not their parent, so poll, bounded.
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(&group) {
            assert!(
                Instant::now() < deadline,
                "the step's processes outlived the run"
            );
            thread::sleep(Duration::from_millis(10));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
