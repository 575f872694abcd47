//! When a cut is made: the batches of cuts that pay back the cache they rewrite, and the commit of a sticky
//! decision.

use super::*;

impl Compactor {
    /// The regret bound: whether cutting `reclaim` tokens behind a cached `tail` costs now, under each price
    /// model, within what the conversation has earned (always, with the bound off).
    pub(super) fn affordable(&self, reclaim: usize, tail: usize) -> bool {
        self.allowance.is_none_or(|allowed| {
            let extra = Ledger::extra(write_in_reads(self.settings.cache_ttl), reclaim, tail);
            (0..extra.len()).all(|m| extra[m] <= allowed[m])
        })
    }

    /// The cached part of the request from `message` on: the provider writes it again when it changes.
    pub(super) fn cached_tail_from(&self, message: usize) -> usize {
        let cached = self.state.cached_messages;
        self.state.sent_tokens.range(message.min(cached), cached)
    }

    /// Where the cuts made this request begin in the batch (results in order), and why the ones before were
    /// held back. A batch is made whole or not at all, by `min_reclaim_tokens` and `min_reclaim_ratio` — unless
    /// the payback rule is on (`cache_write_premium`): then its latest cuts that pay back are made, with the
    /// older ones that pay for the tail they add, and the others wait for a request where they do (each request
    /// tests them again, with the cut their rule chose).
    ///
    /// Payback: cutting `reclaim` tokens from results whose first message is followed by `tail` cached tokens
    /// writes the `tail − reclaim` tokens left to the cache again instead of reading the `tail` (an extra
    /// `(1 + premium) × (tail − reclaim) − tail` cache reads), and saves `reclaim` cache reads on each request
    /// to come — or `reclaim` cache writes, `1 + premium` reads each, on a request that finds the cache expired.
    /// With `to_come = max(horizon × requests, min_horizon)` requests forecast, as many of them after a pause as
    /// were of the requests so far (`expired`), a cut pays back when
    /// `reclaim × (to_come × (1 + premium × expired / requests) + premium + 1) ≥ premium × tail`. The latest cuts
    /// that pay back are made, and older
    /// ones join them only where what they add pays for the stretch of cached tail it adds — not on the surplus
    /// of a large cut after them. (Choosing the run that pays back the most, a close variant, broke the
    /// invariant that compacting a compacted history again changes nothing; this one keeps it.)
    pub(super) fn batch_start(
        &self,
        batch: &[(usize, usize)],
        requests: usize,
    ) -> (usize, Option<HeldBack>) {
        let settings = &self.settings;
        // (the profile's premium is the five-minute cache's; a write to the one-hour cache costs 20 reads, not 12.5)
        let premium = settings.cache_write_premium * (write_in_reads(settings.cache_ttl)[0] - 1.0)
            / (WRITE_IN_READS[0] - 1.0);
        let expired = self.expired_requests;
        // what a token cut saves over the requests to come, in cache reads: a read on each, and a write's premium
        // on those that will find the cache expired, as often as the requests so far did
        let so_far = requests.max(1) as f64;
        let to_come = (settings.horizon * so_far).max(settings.min_horizon as f64);
        let saved_to_come = to_come * (1.0 + premium * expired as f64 / so_far);
        // the payback test, of a whole run or of what an older cut adds to one
        let pays = |reclaim: usize, tail: usize| {
            reclaim as f64 * (saved_to_come + premium + 1.0) >= premium * tail as f64
        };
        let check = |reclaim: usize, tail: usize| {
            if reclaim < settings.min_reclaim_tokens {
                Some(HoldReason::MinReclaimTokens)
            } else if (reclaim as f64) < settings.min_reclaim_ratio * tail as f64 {
                Some(HoldReason::MinReclaimRatio)
            } else if premium > 0.0 && !pays(reclaim, tail) {
                Some(HoldReason::CacheWritePremium)
            } else if !self.affordable(reclaim, tail) {
                Some(HoldReason::RegretBound)
            } else {
                None
            }
        };
        let reclaim_of = |&(ri, tokens_after): &(usize, usize)| {
            self.state.results[ri].tokens.saturating_sub(tokens_after)
        };
        let cached = self.state.cached_messages;
        let tail_from = |message: usize| self.cached_tail_from(message);
        let Some(first) = batch.first() else {
            return (0, None);
        };
        if premium <= 0.0 {
            let reclaim = batch.iter().map(reclaim_of).sum();
            let held = check(reclaim, tail_from(self.state.results[first.0].message));
            let start = if held.is_some() { batch.len() } else { 0 };
            let held = held.map(|reason| HeldBack {
                results: batch.len(),
                tokens: reclaim,
                reason,
            });
            return (start, held);
        }
        // the latest run of cuts that passes (the tail grown message by message going back), reaching further back
        // only where what it adds pays for the stretch of tail it adds
        let (mut start, mut reason) = (batch.len(), None);
        let (mut reclaim, mut tail) = (0, 0);
        let mut at_start = (0, 0);
        let mut tail_start = cached;
        for k in (0..batch.len()).rev() {
            reclaim += reclaim_of(&batch[k]);
            let from = self.state.results[batch[k].0].message.min(tail_start);
            tail += self.state.sent_tokens.range(from, tail_start);
            tail_start = from;
            match check(reclaim, tail) {
                None if start == batch.len() || pays(reclaim - at_start.0, tail - at_start.1) => {
                    start = k;
                    at_start = (reclaim, tail);
                }
                None => {}
                Some(r) => reason = Some(r),
            }
        }
        debug_assert_eq!(tail, tail_from(self.state.results[first.0].message));
        let held = (start > 0).then(|| HeldBack {
            results: start,
            tokens: batch[..start].iter().map(reclaim_of).sum(),
            reason: reason.unwrap_or(HoldReason::CacheWritePremium),
        });
        (start, held)
    }

    /// The count of results that could change a waiting result's decision, as recorded when it was asked.
    pub(super) fn relevant_results(&self, ri: usize) -> usize {
        match self.state.waiting_on.get(&ri) {
            Some(WaitingOn::Group(rule, key)) => self
                .state
                .groups
                .get(&(*rule, key.clone()))
                .map_or(0, Vec::len),
            Some(WaitingOn::Kinds(kinds)) => {
                self.count_results_of(&self.state.results[ri].kind, kinds)
            }
            _ => self.state.results.len(),
        }
    }

    pub(super) fn count_results_of(&self, own: &str, kinds: &[&str]) -> usize {
        let len = |k: &str| self.state.by_kind.get(k).map_or(0, Vec::len);
        len(own)
            + kinds
                .iter()
                .filter(|k| **k != own)
                .map(|k| len(k))
                .sum::<usize>()
    }

    /// Record a sticky decision (its lines are already in the shown index); returns what to report.
    pub(super) fn commit(
        &mut self,
        conv: &Conversation,
        site: &ResultSite,
        change: Change,
    ) -> Vec<BlockReport> {
        let Change {
            content,
            tokens_after,
            chars_before,
            rule,
            action,
            clear_input,
            ..
        } = change;
        let est = self.estimator.as_ref();
        let tokens_before = site.tokens;
        let mut reports = Vec::new();
        let mut input_tokens_saved = 0;
        let mut cleared_at = None;
        if clear_input {
            // (a call whose input the wire format requires whole keeps it)
            let free = |cm: usize| ctxfit_model::responses::call_input_is_free(&conv.messages[cm]);
            if let Some((cm, cb)) = site.call.filter(|&(cm, _)| free(cm)) {
                if let Some(Block::ToolUse(u)) = conv.block(cm, cb) {
                    let mut cleared = u.clone();
                    cleared.set_input(Value::Object(Default::default()));
                    let b = count_block(est, &Block::ToolUse(u.clone()));
                    let a = count_block(est, &Block::ToolUse(cleared));
                    input_tokens_saved = b.saturating_sub(a);
                    cleared_at = Some((cm, cb, b, a));
                }
            }
        }
        let sticky = Sticky {
            chars_before,
            chars_after: content_chars(&content),
            content: Some(content),
            clear_input: cleared_at.is_some(),
            rule: rule.to_owned(),
            tokens_before,
            tokens_after,
            input_tokens_saved,
        };
        self.state.saved += tokens_before - tokens_after + input_tokens_saved;
        (self.state.sent_tokens).sub(site.message, tokens_before - tokens_after);
        if let Some((cm, ..)) = cleared_at {
            self.state.sent_tokens.sub(cm, input_tokens_saved);
        }
        self.state
            .replaced
            .entry(site.message)
            .or_default()
            .push((site.block, Replacement::Result(site.key.clone())));
        self.state.changed.push(site.message);
        if let Some((message, block, ..)) = cleared_at {
            self.state
                .replaced
                .entry(message)
                .or_default()
                .push((block, Replacement::ClearInput));
            self.state.changed.push(message);
        }
        reports.push(BlockReport {
            message: site.message,
            block: site.block,
            tool_use_id: site.tool_use_id.clone(),
            tool: site.tool.clone(),
            rule: sticky.rule.clone(),
            action,
            chars_before: sticky.chars_before,
            chars_after: sticky.chars_after,
            tokens_before,
            tokens_after,
        });
        if let Some((message, block, b, a)) = cleared_at {
            reports.push(BlockReport {
                message,
                block,
                tool_use_id: site.tool_use_id.clone(),
                tool: site.tool.clone(),
                rule: sticky.rule.clone(),
                action: Action::InputCleared,
                chars_before: 0,
                chars_after: 0,
                tokens_before: b,
                tokens_after: a,
            });
        }
        self.replaced += usize::from(sticky.content.is_some());
        if let Some(old) = self.decided.insert(site.key.clone(), sticky) {
            self.replaced -= usize::from(old.content.is_some());
        }
        self.compacted_results += 1;
        reports
    }
}
