//! `Machine`: what the report says about where and when it was measured (cores, CPU model,
//! memory, OS, toolchain, date, commit).

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The measuring machine and the code measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Machine {
    /// CPU model name (`/proc/cpuinfo`), or "unknown CPU".
    pub(crate) cpu_model: String,
    /// Logical CPUs this process may use.
    pub(crate) cores: usize,
    /// Total memory in GiB, if known.
    pub(crate) memory_gib: Option<u64>,
    /// Kernel name and release.
    pub(crate) os: String,
    /// `rustc --version`.
    pub(crate) rustc: String,
    /// UTC date and time, `YYYY-MM-DD HH:MM UTC`.
    pub(crate) date: String,
    /// Short commit hash, with `+dirty` when tracked files differ from it.
    pub(crate) commit: String,
    /// 1, 5 and 15 minute load averages when the run started, if known.
    pub(crate) load_before: Option<String>,
    /// The same when the report was written.
    pub(crate) load_after: Option<String>,
    /// One core-to-core round trip of a cache line, measured before the run
    /// (`core_to_core::round_trip`); `None` on one CPU or when only re-rendering.
    pub(crate) core_to_core: Option<Duration>,
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`): other processes competing for the
/// cores make every timing noisier, so the report says how busy the machine was.
pub(crate) fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    (fields.len() == 3).then(|| fields.join(" "))
}

impl Machine {
    /// Reads everything now.
    pub(crate) fn describe(root: &Path) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let commit = command_line(root, "git", &["rev-parse", "--short=12", "HEAD"])
            .unwrap_or_else(|| "unknown commit".into());
        let dirty = command_line(
            root,
            "git",
            &["status", "--porcelain", "--untracked-files=no"],
        )
        .is_some_and(|s| !s.is_empty());
        let seconds = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Machine {
            cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown CPU".into()),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_gib: memory_gib(&meminfo),
            os: command_line(root, "uname", &["-sr"])
                .unwrap_or_else(|| std::env::consts::OS.into()),
            rustc: command_line(root, "rustc", &["--version"]).unwrap_or_else(|| "rustc".into()),
            date: utc_date(seconds),
            commit: if dirty {
                format!("{commit}+dirty")
            } else {
                commit
            },
            load_before: None,
            load_after: load_average(),
            core_to_core: None,
        }
    }

    /// One line for the report's header.
    pub(crate) fn summary(&self) -> String {
        let memory = self
            .memory_gib
            .map_or(String::new(), |gib| format!(", {gib} GiB"));
        format!(
            "{}, {} cores{memory}, {}, {}",
            self.cpu_model, self.cores, self.os, self.rustc
        )
    }

    /// As JSON for `report.json`.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "cpu_model": self.cpu_model,
            "cores": self.cores,
            "memory_gib": self.memory_gib,
            "os": self.os,
            "rustc": self.rustc,
            "date": self.date,
            "commit": self.commit,
            "load_average_before": self.load_before,
            "load_average_after": self.load_after,
            "core_to_core_round_trip_ns": self.core_to_core.map(|d| d.as_nanos() as u64),
        })
    }
}

fn command_line(root: &Path, program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program)
        .args(args)
        .current_dir(root)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

fn memory_gib(meminfo: &str) -> Option<u64> {
    let kib: u64 = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some((kib + (1 << 19)) >> 20)
}

/// `YYYY-MM-DD HH:MM UTC` for seconds since the Unix epoch (proleptic Gregorian calendar).
pub(crate) fn utc_date(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let secs = seconds % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        secs / 3_600,
        secs % 3_600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_follow_the_calendar() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13 UTC");
    }

    #[test]
    fn cpu_model_and_memory_are_read_from_proc() {
        let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: x\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(memory_gib("MemTotal:       24576000 kB\n"), Some(23));
    }
}
