//! `LeaderHistory`: every `became_active` / `became_inactive` of several `LeaderService`s in one
//! log, in the order the callbacks ran, and the one-leader-at-a-time check over it.

use pulsar_server::leader::LeadershipListener;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// One entry of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// `became_active` of the candidate.
    Active(String),
    /// `became_inactive` of the candidate.
    Inactive(String),
    /// The test closed (or killed) the candidate: it leads no more, and whatever it would
    /// still report is ignored.
    Gone(String),
}

/// The shared log; clones append to the same one.
#[derive(Debug, Clone, Default)]
pub struct LeaderHistory {
    log: Arc<Mutex<Log>>,
}

#[derive(Debug, Default)]
struct Log {
    entries: Vec<Transition>,
    gone: BTreeSet<String>,
}

impl LeaderHistory {
    /// A listener for `candidate` that appends to this log.
    pub fn listener(&self, candidate: &str) -> HistoryListener {
        HistoryListener {
            candidate: candidate.to_owned(),
            history: self.clone(),
        }
    }

    /// Records that `candidate` is closed or killed from now on (call before closing it: its
    /// later callbacks, if any raced in, are not recorded).
    pub fn gone(&self, candidate: &str) {
        let mut log = self.log.lock().unwrap();
        log.gone.insert(candidate.to_owned());
        log.entries.push(Transition::Gone(candidate.to_owned()));
    }

    fn record(&self, transition: Transition, candidate: &str) {
        let mut log = self.log.lock().unwrap();
        if !log.gone.contains(candidate) {
            log.entries.push(transition);
        }
    }

    /// The log so far.
    pub fn entries(&self) -> Vec<Transition> {
        self.log.lock().unwrap().entries.clone()
    }

    /// How many `became_active` calls the log holds.
    pub fn activations(&self) -> usize {
        self.entries()
            .iter()
            .filter(|entry| matches!(entry, Transition::Active(_)))
            .count()
    }

    /// The candidates active at the end of the log.
    pub fn active_now(&self) -> BTreeSet<String> {
        check_one_leader_at_a_time(&self.entries()).unwrap_or_else(|overlap| panic!("{overlap}"))
    }

    /// Fails the test if two candidates were ever active at once, or a candidate became active
    /// twice without becoming inactive between (or inactive while not active).
    #[track_caller]
    pub fn assert_one_leader_at_a_time(&self) {
        if let Err(overlap) = check_one_leader_at_a_time(&self.entries()) {
            panic!("{overlap}");
        }
    }
}

/// Replays a log; the candidates active at its end, or what broke the one-leader rule.
pub fn check_one_leader_at_a_time(entries: &[Transition]) -> Result<BTreeSet<String>, String> {
    let mut active = BTreeSet::new();
    for (index, entry) in entries.iter().enumerate() {
        match entry {
            Transition::Active(candidate) => {
                if !active.insert(candidate.clone()) {
                    return Err(format!(
                        "{candidate} became active twice in a row at entry {index}: {entries:?}"
                    ));
                }
                if active.len() > 1 {
                    return Err(format!(
                        "two leaders at once at entry {index} ({active:?}): {entries:?}"
                    ));
                }
            }
            Transition::Inactive(candidate) => {
                if !active.remove(candidate) {
                    return Err(format!(
                        "{candidate} became inactive without being active at entry {index}: \
                         {entries:?}"
                    ));
                }
            }
            Transition::Gone(candidate) => {
                active.remove(candidate);
            }
        }
    }
    Ok(active)
}

/// The callbacks of one candidate, appending to the shared log.
#[derive(Debug)]
pub struct HistoryListener {
    candidate: String,
    history: LeaderHistory,
}

impl LeadershipListener for HistoryListener {
    fn became_active(&self) {
        self.history
            .record(Transition::Active(self.candidate.clone()), &self.candidate);
    }

    fn became_inactive(&self) {
        self.history.record(
            Transition::Inactive(self.candidate.clone()),
            &self.candidate,
        );
    }
}
