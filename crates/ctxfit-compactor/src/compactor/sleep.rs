//! Results a history-dependent rule keeps until enough new results arrive ([`WaitingOn`]), out of `pending` while
//! they wait: a request looks only at those whose count can have grown since.
//!
//! Why: seed 004's rule keeps a file's read until the file is read again, so in a session of many files every
//! read waits — and a request that looked at every waiting result cost the length of the history (a session of
//! 20,000 reads of distinct files took 30 s to replay). Now a read waits in its file's group, looked at again
//! only when a result joins that group; a result waiting on every result, when the count it waits for is reached;
//! one waiting on kinds of results, when enough results of any kind have arrived for its count to be reached.
//! What the rules decide, and when, is unchanged: a waiting result is asked again at the first request at which its
//! count is reached, as before.

use std::collections::BTreeMap;

use super::*;

/// The waiting results, by what wakes them. An entry whose result no longer waits for that count (decided by
/// escalation since, or waiting again for another) is dropped when it wakes.
#[derive(Default)]
pub(super) struct Sleepers {
    /// `WaitingOn::Any`: by the count of all results at which each wakes.
    any: BTreeMap<usize, Vec<usize>>,
    /// `WaitingOn::Group`: per group, (the count of its results at which each wakes, the result).
    groups: HashMap<(usize, String), Vec<(usize, usize)>>,
    /// Groups with sleepers that gained a result since the last request.
    grown: HashSet<(usize, String)>,
    /// `WaitingOn::Kinds`: by the least count of all results at which each could wake (its count grows by one
    /// result at most per result), looked at again then.
    kinds: BTreeMap<usize, Vec<usize>>,
}

impl Sleepers {
    /// A result joined this group: its sleepers, if any, are looked at by the next request.
    pub(super) fn group_grew(&mut self, key: &(usize, String)) {
        if self.groups.contains_key(key) && !self.grown.contains(key) {
            self.grown.insert(key.clone());
        }
    }
}

impl Compactor {
    /// Put waiting result `ri`, to be asked again once its relevant results number `at`, to sleep.
    pub(super) fn sleep(&mut self, ri: usize, at: usize) {
        match self.state.waiting_on.get(&ri) {
            Some(WaitingOn::Group(rule, key)) => {
                let key = (*rule, key.clone());
                self.state
                    .sleepers
                    .groups
                    .entry(key)
                    .or_default()
                    .push((at, ri));
            }
            Some(WaitingOn::Kinds(_)) => {
                let missing = at.saturating_sub(self.relevant_results(ri)).max(1);
                let earliest = self.state.results.len() + missing;
                self.state
                    .sleepers
                    .kinds
                    .entry(earliest)
                    .or_default()
                    .push(ri);
            }
            _ => self.state.sleepers.any.entry(at).or_default().push(ri),
        }
    }

    /// The waiting results whose count is reached, to be asked again by this request (in no order).
    pub(super) fn wake_sleepers(&mut self) -> Vec<usize> {
        let total = self.state.results.len();
        let waits_for = |state: &State, ri: usize, at: usize| state.waiting.get(&ri) == Some(&at);
        let mut woken = Vec::new();
        let sleepers = &mut self.state.sleepers;
        let later = sleepers.any.split_off(&(total + 1));
        let due = std::mem::replace(&mut sleepers.any, later);
        for (at, results) in due {
            woken.extend(
                results
                    .into_iter()
                    .filter(|&ri| waits_for(&self.state, ri, at)),
            );
        }
        let grown: Vec<(usize, String)> = self.state.sleepers.grown.drain().collect();
        for key in grown {
            let count = self.state.groups.get(&key).map_or(0, Vec::len);
            let Some(list) = self.state.sleepers.groups.get_mut(&key) else {
                continue;
            };
            let (due, still): (Vec<_>, Vec<_>) = list.drain(..).partition(|&(at, _)| at <= count);
            if still.is_empty() {
                self.state.sleepers.groups.remove(&key);
            } else {
                *list = still;
            }
            woken.extend(
                due.into_iter()
                    .filter(|&(at, ri)| waits_for(&self.state, ri, at))
                    .map(|(_, ri)| ri),
            );
        }
        let later = self.state.sleepers.kinds.split_off(&(total + 1));
        let due = std::mem::replace(&mut self.state.sleepers.kinds, later);
        for ri in due.into_values().flatten() {
            let Some(&at) = self.state.waiting.get(&ri) else {
                continue;
            };
            if self.relevant_results(ri) >= at {
                woken.push(ri);
            } else {
                self.sleep(ri, at);
            }
        }
        woken
    }
}
