//! Holding `request_budget`: when the cuts the rules chose leave a request above it, escalate before refusing.
//!
//! **Why.** The rules cut what is safe to cut, when it pays; a long session still outgrows a context window or a
//! rate limit. The seeds' first promise is that the request fits. So, when `request_budget` is set and the
//! request is above it after the rules, stale results go further, oldest first, in three steps, each only as far
//! as the budget needs:
//!
//! 1. the cuts the rules chose that wait for their turn (the payback rule, the regret bound) are made now — all
//!    of them, since the cache breaks at the oldest cut anyway and every later one rides on that break;
//! 2. a stale result still whole keeps its first and last lines ([`HEAD_LINES`], [`TAIL_LINES`]) with a marker
//!    saying how many lines were left out and how to get them back — or, when that is not shorter, becomes a
//!    one-line pointer;
//! 3. a stale result already cut becomes a pointer.
//!
//! **Where it starts.** Changing a result makes the provider write everything after it to the cache again. From
//! the oldest stale result that costs the most, and a conversation that has saved little pays for it above
//! sending everything: one escalation near the end of a session that barely outgrew its budget cost +21% on its
//! own. So the steps start at the oldest result only when the regret bound (`max_regret`) can pay for the tail
//! written again from there, as it pays for the rules' cuts; otherwise, of the results from which the stale
//! results could still bring the request down, at the one whose break writes the least again — the cached tail
//! from its message, less what the results from it on give, since the provider writes the tail as cut: the
//! latest such result, or an earlier one that breaks the cache where it breaks anyway (a result of the same
//! message, or after a cut the rules make in this request) — and go to older ones only if those do not suffice.
//! When the bound cannot pay even for that break, the break is made to count: every stale result after it goes
//! as far as the steps go (they ride on the tail written again), so that the next one comes as late as it can.
//! The budget still comes first; of the two goals after it, cost comes before recall.
//!
//! Edits (`edit_file`), excluded tools and the result the model has not answered are never touched: if the
//! request is still above the budget, the token guard refuses it ([`Compactor::check_request`]). Every step is a
//! sticky decision like any other; the third changes an earlier one, which breaks the provider's cache there —
//! the budget comes first (it also comes before the regret bound). Where the profile names a retrieval tool,
//! every marker ends with its handle.

use super::*;

/// The name escalation's cuts are reported under.
pub const BUDGET_RULE: &str = "budget";
/// The words every escalation marker holds: a result holding them is not cut again.
pub(super) const BUDGET_MARK: &str = "left out to keep the request within its token budget";
/// What escalation cuts down to, as a share of `request_budget`, when the profile's `target` is not below it.
pub const ESCALATION_SHARE: f64 = 0.9;
/// Lines a stale result keeps from its start, and from its end, in step 2.
pub const HEAD_LINES: usize = 10;
pub const TAIL_LINES: usize = 10;

/// `text`'s first and last lines with a marker between them, when it has enough lines to leave some out.
fn head_and_tail(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let left_out = lines.len().checked_sub(HEAD_LINES + TAIL_LINES)?;
    if left_out < 2 {
        return None;
    }
    let mut out = lines[..HEAD_LINES].join("\n");
    out.push_str(&format!(
        "\n[… {left_out} lines {BUDGET_MARK}; run the call again for them …]\n"
    ));
    out.push_str(&lines[lines.len() - TAIL_LINES..].join("\n"));
    if text.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

/// The one line that stands for a result left out.
fn pointer(lines: usize, tokens: usize) -> String {
    format!(
        "[tool result of {lines} lines (~{tokens} tokens) {BUDGET_MARK}; run the call again to see it]"
    )
}

impl Compactor {
    /// Make the request fit `request_budget`, as far as stale results allow (see the module's doc).
    pub(super) fn hold_budget(&mut self, conv: &Conversation, new_blocks: &mut Vec<BlockReport>) {
        let limit = self.settings.request_budget;
        // (what the request holds besides the conversation counts: `set_unseen_tokens`)
        if limit == 0 || self.current_tokens() + self.unseen <= limit {
            return;
        }
        // down to the profile's `target` when it is below the limit, else to a share of the limit: the cache
        // breaks once a batch, not at every request that grows past the limit
        let target = self.settings.target;
        let budget = if target > 0 && target < limit {
            target
        } else {
            (limit as f64 * ESCALATION_SHARE) as usize
        }
        .saturating_sub(self.unseen);
        let total_assistants = *self.state.assistants_before.last().unwrap_or(&0);
        let stale: Vec<usize> = (0..self.state.results.len())
            .filter(|&ri| {
                let site = &self.state.results[ri];
                total_assistants > self.state.assistants_before[site.message + 1]
                    && site.kind != "edit_file"
                    && !self.excluded(site)
            })
            .collect();
        // from the oldest stale result, when the regret bound can pay for writing the cached tail again from
        // there; else from where the tail to write again is shortest (the budget comes first, the bound second)
        let (from, unpaid) = self.escalation_start(&stale, budget, new_blocks);
        // a break the bound cannot pay for is made to count: every stale result after it goes as far as the steps
        // go (riding on the tail written again), so that the next break comes as late as it can
        let down_to = if unpaid { 0 } else { budget };
        self.escalate(conv, &stale[from..], down_to, new_blocks);
        if from == 0 || self.current_tokens() <= budget {
            return;
        }
        // the results after the start could not give enough: the oldest go as well
        self.escalate(conv, &stale, budget, new_blocks);
    }

    /// Where escalation begins among the stale results (oldest first): at the oldest when the regret bound is
    /// off or can pay for the cached tail written again from there; else, among the results from which the
    /// results could still bring the request down to `budget`, at the one whose break writes the least — the
    /// cached tail from it less what the results from it on give, since the provider writes the tail as cut —
    /// the latest of equals; and whether the bound cannot pay even for that. (Nothing is chosen that the
    /// request has not shown: what each result could give is what it sends now, less the pointer's line.)
    fn escalation_start(
        &self,
        stale: &[usize],
        budget: usize,
        new_blocks: &[BlockReport],
    ) -> (usize, bool) {
        if self.allowance.is_none() || self.state.cached_messages == 0 {
            return (0, false);
        }
        let need = self.current_tokens().saturating_sub(budget);
        let pointer_tokens = self.estimator.count_text(&pointer(1_000, 10_000));
        let could_give = |ri: usize| -> usize {
            let site = &self.state.results[ri];
            match self.decided.get(&site.key) {
                Some(_) if self.cut_for_good(&site.key) => 0,
                Some(d) => d.tokens_after.saturating_sub(pointer_tokens),
                None => site.tokens.saturating_sub(pointer_tokens),
            }
        };
        // what the results from each on could give
        let mut from_on = vec![0; stale.len() + 1];
        for k in (0..stale.len()).rev() {
            from_on[k] = from_on[k + 1] + could_give(stale[k]);
        }
        // the rules' cuts of this request already write the tail from their first message again
        let rules_break = new_blocks.iter().map(|b| b.message).min();
        let tail_from = |k: usize| {
            let first = self.state.results[stale[k]].message;
            self.cached_tail_from(rules_break.map_or(first, |b| b.min(first)))
        };
        let affordable = |k: usize| self.affordable(need, tail_from(k));
        let enough = |k: usize| from_on[k] >= need;
        // (every result before the latest that is enough is enough too: `from_on` only grows backwards)
        let writes = |k: usize| tail_from(k).saturating_sub(from_on[k]);
        match (0..stale.len()).find(|&k| affordable(k)) {
            Some(k) if enough(k) => (k, false),
            _ => match (0..stale.len()).rev().find(|&k| enough(k)) {
                Some(latest) => {
                    let k = (0..=latest)
                        .min_by_key(|&k| (writes(k), std::cmp::Reverse(k)))
                        .unwrap_or(latest);
                    (k, !affordable(k))
                }
                None => (0, false),
            },
        }
    }

    /// The three steps over `order` (results oldest first), each only as far as `budget` needs.
    fn escalate(
        &mut self,
        conv: &Conversation,
        order: &[usize],
        budget: usize,
        new_blocks: &mut Vec<BlockReport>,
    ) {
        // 1. the rules' own cuts that wait for their turn, all of them: the cache breaks at the oldest cut anyway,
        // and every later one rides on that break for free
        for &ri in order {
            let site = self.state.results[ri].clone();
            if let Some(change) = self.held.remove(&site.key) {
                self.forget_pending(ri);
                new_blocks.extend(self.commit(conv, &site, change));
            }
        }
        // 2. whole results: their first and last lines, else a pointer; 3. cut ones: a pointer
        for pointers_only in [false, true] {
            for &ri in order {
                if self.current_tokens() <= budget {
                    return;
                }
                let site = self.state.results[ri].clone();
                if self.decided.contains_key(&site.key) != pointers_only {
                    continue;
                }
                let Some(change) = self.escalated(conv, &site, pointers_only) else {
                    continue;
                };
                self.escalations += 1;
                self.replace_decision(conv, ri, &site, change, new_blocks);
            }
        }
    }

    /// Put `change` in place of what the request sends of the result `ri` now (whole, or an earlier cut), with the
    /// accounting that goes with it: the lines it shows, the sums, and the report (a result cut before is reported
    /// from what the request sent of it until now).
    pub(super) fn replace_decision(
        &mut self,
        conv: &Conversation,
        ri: usize,
        site: &ResultSite,
        change: Change,
        new_blocks: &mut Vec<BlockReport>,
    ) {
        // what the request showed of it leaves the lines shown for good; the cut's lines join them
        let shown = match self.decided.get(&site.key) {
            Some(d) => d.content.clone(),
            None if self.kept.contains(&site.key) => {
                Self::result_block(conv, site).map(|r| r.content.clone())
            }
            None => None,
        };
        if let Some(c) = &shown {
            self.state.shown.remove_content(c);
        }
        self.state.shown.add_content(&change.content);
        self.forget_pending(ri);
        let sent = self
            .decided
            .get(&site.key)
            .map(|d| (d.chars_after, d.tokens_after));
        self.undo(site);
        let mut reports = self.commit(conv, site, change);
        if let (Some((chars, tokens)), Some(r)) = (sent, reports.first_mut()) {
            r.chars_before = chars;
            r.tokens_before = tokens;
        }
        new_blocks.extend(reports);
    }

    /// The cut that escalation makes of a result: its first and last lines (unless `pointer_only`), else a
    /// pointer — `None` when neither is smaller than what the request sends of it now.
    fn escalated(
        &self,
        conv: &Conversation,
        site: &ResultSite,
        pointer_only: bool,
    ) -> Option<Change> {
        let result = Self::result_block(conv, site)?;
        let view = View::of(&result.content);
        // (its text blocks as one text, as the model reads them)
        let text = view.content().joined_text();
        // what escalation or an expired cache's cut wrote before (in a history compacted already, or in this one)
        // is final: compacting again changes nothing
        if text.contains(BUDGET_MARK)
            || text.contains(cold::COLD_MARK)
            || self
                .decided
                .get(&site.key)
                .is_some_and(|d| d.rule == cold::COLD_RULE)
        {
            return None;
        }
        let make = |body: String, action: Action| {
            self.replacement(site, &result.content, &view, body, BUDGET_RULE, action)
        };
        let whole_text = view
            .content()
            .blocks
            .iter()
            .all(|b| matches!(b, Block::Text(_)));
        let excerpt = (!pointer_only && whole_text)
            .then(|| head_and_tail(&text))
            .flatten()
            .and_then(|t| make(t, Action::Replaced));
        excerpt.or_else(|| make(pointer(text.lines().count(), site.tokens), Action::Pointer))
    }

    /// `body` in place of a result's text (its other blocks kept after it, and the retrieval handle where the
    /// profile names one), as a cut by `rule` — `None` unless it is smaller than what the request sends of the
    /// result now and never grows the original.
    pub(super) fn replacement(
        &self,
        site: &ResultSite,
        original: &Content,
        view: &View<'_>,
        body: String,
        rule: &'static str,
        action: Action,
    ) -> Option<Change> {
        let trailer = self.retrieval_trailer(&site.key);
        let sent_now = self
            .decided
            .get(&site.key)
            .map_or(site.tokens, |d| d.tokens_after);
        let chars = content_chars(original);
        let c = with_trailer(Content::text(body), trailer.as_deref());
        let c = view.back(original, c);
        let tokens = count_tool_result(self.estimator.as_ref(), &c);
        let smaller = never_grows(tokens, content_chars(&c), sent_now, chars, original);
        (tokens < sent_now && smaller).then_some(Change {
            content: c,
            tokens_after: tokens,
            chars_before: chars,
            rule,
            action,
            clear_input: false,
            asked_at: self.state.results.len(),
            consulted: None,
        })
    }

    /// Whether escalation or an expired cache's step cut the result: neither it nor the lines it left out come
    /// back.
    pub(super) fn cut_for_good(&self, key: &ResultKey) -> bool {
        self.decided
            .get(key)
            .is_some_and(|d| d.rule == BUDGET_RULE || d.rule == cold::COLD_RULE)
    }

    /// A result decided by escalation is no longer waiting to be asked.
    pub(super) fn forget_pending(&mut self, ri: usize) {
        self.state.pending.retain(|&p| p != ri);
        self.state.waiting.remove(&ri);
        self.state.waiting_on.remove(&ri);
        let key = self.state.results[ri].key.clone();
        self.kept.remove(&key);
    }

    /// Take back what an earlier decision about `site` did to the request, before a new one replaces it.
    fn undo(&mut self, site: &ResultSite) {
        let Some(old) = self.decided.remove(&site.key) else {
            return;
        };
        self.replaced -= usize::from(old.content.is_some());
        self.compacted_results -= 1;
        self.state.saved -= old.tokens_before - old.tokens_after + old.input_tokens_saved;
        (self.state.sent_tokens).add(site.message, old.tokens_before - old.tokens_after);
        if let (true, Some((cm, cb))) = (old.clear_input, site.call) {
            self.state.sent_tokens.add(cm, old.input_tokens_saved);
            if let Some(r) = self.state.replaced.get_mut(&cm) {
                r.retain(|(b, rep)| !(*b == cb && matches!(rep, Replacement::ClearInput)));
            }
            self.state.changed.push(cm);
        }
        if let Some(r) = self.state.replaced.get_mut(&site.message) {
            r.retain(|(b, rep)| !(*b == site.block && matches!(rep, Replacement::Result(_))));
        }
        self.state.changed.push(site.message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_keeps_the_first_and_last_lines_in_order() {
        let text: Vec<String> = (1..=30).map(|i| format!("line {i}")).collect();
        let got = head_and_tail(&text.join("\n")).unwrap();
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines.len(), HEAD_LINES + 1 + TAIL_LINES);
        assert_eq!(lines[..HEAD_LINES], text[..HEAD_LINES]);
        assert_eq!(lines[HEAD_LINES + 1..], text[30 - TAIL_LINES..]);
        assert!(
            lines[HEAD_LINES].contains("10 lines left out"),
            "{}",
            lines[HEAD_LINES]
        );
        // too short to leave anything worth a marker out
        let short: Vec<String> = (1..=21).map(|i| format!("line {i}")).collect();
        assert_eq!(head_and_tail(&short.join("\n")), None);
    }
}
