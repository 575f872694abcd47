//! Old file reads left out when the provider's cache has expired.
//!
//! **Why.** A file read the agent made many requests ago is rarely used again, but cutting it breaks the cached
//! prefix at its place: everything after it is written to the cache again, which a long conversation pays for
//! above sending everything — so the regret bound keeps such cuts waiting, and they never come. A request that
//! finds the cache expired is written whole whatever changes: there, and only there, leaving old reads out costs
//! nothing, and every request after it sends less.
//!
//! **What.** At a request that finds the cache expired, each stale result of a file read (`read_file` kind) that
//! `cold_read_age` or more of the agent's turns have followed becomes a one-line pointer naming its size and the
//! way back (read the file again; the call, with the file's path, stays). Edits are never touched; a result
//! escalation or this step wrote before is final. A read is kept when it is the only place the request shows a
//! line another cut left out (a search's hits a rule left out as shown elsewhere): what a marker says is shown
//! stays shown.

use super::*;
use budget::BUDGET_MARK;

/// The name these cuts are reported under.
pub const COLD_RULE: &str = "cold-read";
/// The words every such pointer holds: a result holding them is not cut again.
pub(super) const COLD_MARK: &str = "left out when the provider's prompt cache had expired";

fn pointer(lines: usize, tokens: usize) -> String {
    format!("[an old file read of {lines} lines (~{tokens} tokens) {COLD_MARK}; read the file again to see it]")
}

impl Compactor {
    /// At a request that found the cache expired: old reads become pointers (see the module's doc).
    pub(super) fn leave_out_cold_reads(
        &mut self,
        conv: &Conversation,
        new_blocks: &mut Vec<BlockReport>,
    ) {
        let age = self.settings.cold_read_age;
        if age == 0 {
            return;
        }
        let total_assistants = *self.state.assistants_before.last().unwrap_or(&0);
        // what the profile keeps whatever its rules say stays
        let (keep_from, latest_group) = self.profile_keeps();
        let old: Vec<usize> = (0..keep_from)
            .filter(|&ri| {
                let site = &self.state.results[ri];
                site.kind == "read_file"
                    && total_assistants >= self.state.assistants_before[site.message + 1] + age
                    && latest_group != Some(self.state.assistants_before[site.message])
                    && !self.excluded(site)
                    && !self.cut_for_good(&site.key)
            })
            .collect();
        if old.is_empty() {
            return;
        }
        let relied = self.left_out_keys(conv);
        for ri in old {
            let site = self.state.results[ri].clone();
            if self.only_shower_of(conv, &site, &relied) {
                continue;
            }
            // a cut of it that waits for its turn is made first, as escalation makes it (free: the cache has
            // expired); the pointer then takes its place with the accounting of a decision replaced
            if let Some(held) = self.held.remove(&site.key) {
                self.forget_pending(ri);
                new_blocks.extend(self.commit(conv, &site, held));
            }
            if let Some(change) = self.cold_pointer(conv, &site) {
                self.replace_decision(conv, ri, &site, change, new_blocks);
            }
        }
    }

    /// The keys of the lines that the request's cuts — but escalation's and this step's, whose pointers say how to
    /// get the result back — left out of their results.
    fn left_out_keys(&self, conv: &Conversation) -> HashSet<u64> {
        let mut out = HashSet::default();
        if !self.state.shown.enabled {
            return out;
        }
        for site in &self.state.results {
            let Some(d) = self.decided.get(&site.key) else {
                continue;
            };
            if self.cut_for_good(&site.key) {
                continue;
            }
            let (Some(content), Some(result)) = (&d.content, Self::result_block(conv, site)) else {
                continue;
            };
            let mut kept = HashSet::default();
            for text in content.blocks.iter().filter_map(Block::as_text) {
                ShownIndex::each_key(text, |k| {
                    kept.insert(k);
                });
            }
            for text in result.content.blocks.iter().filter_map(Block::as_text) {
                ShownIndex::each_key(text, |k| {
                    if !kept.contains(&k) {
                        out.insert(k);
                    }
                });
            }
        }
        out
    }

    /// Whether the result is, as the request sends it now, the only place the request shows a line of `relied`.
    fn only_shower_of(
        &self,
        conv: &Conversation,
        site: &ResultSite,
        relied: &HashSet<u64>,
    ) -> bool {
        if relied.is_empty() {
            return false;
        }
        let sent = match self.decided.get(&site.key) {
            Some(d) => d.content.as_ref(),
            None => Self::result_block(conv, site).map(|r| &r.content),
        };
        let Some(sent) = sent else {
            return false;
        };
        let mut here: HashMap<u64, u32> = HashMap::default();
        for text in sent.blocks.iter().filter_map(Block::as_text) {
            ShownIndex::each_key(text, |k| *here.entry(k).or_default() += 1);
        }
        here.iter()
            .any(|(k, n)| relied.contains(k) && self.state.shown.count(*k) <= *n)
    }

    /// The pointer that stands for an old read — `None` when it is not smaller than what the request sends of
    /// it now, or when escalation or this step wrote it (in this history, or in one compacted already).
    fn cold_pointer(&self, conv: &Conversation, site: &ResultSite) -> Option<Change> {
        let result = Self::result_block(conv, site)?;
        let view = View::of(&result.content);
        let text = view.content().joined_text();
        if text.contains(BUDGET_MARK) || text.contains(COLD_MARK) || self.cut_for_good(&site.key) {
            return None;
        }
        self.replacement(
            site,
            &result.content,
            &view,
            pointer(text.lines().count(), site.tokens),
            COLD_RULE,
            Action::Pointer,
        )
    }
}
