//! Asking the rules about stale results, oldest first, and what a rule that waits on the history is asked again.

use super::*;

impl Compactor {
    /// What the profile keeps whatever its rules say: the results from this index on (the last
    /// `keep_last_tool_uses`), and, where `keep_latest_result_message`, the results of the newest result message —
    /// given as the count of assistant messages before it.
    pub(super) fn profile_keeps(&self) -> (usize, Option<usize>) {
        let keep_from = self
            .state
            .results
            .len()
            .saturating_sub(self.settings.keep_last_tool_uses);
        let latest_group = (self.settings.keep_latest_result_message)
            .then_some(self.state.last_result_message)
            .flatten()
            .map(|m| self.state.assistants_before[m]);
        (keep_from, latest_group)
    }

    /// Ask the rules about the pending results and make their cuts, unless the reclaim checks hold the batch
    /// back (then said in the return value).
    ///
    /// A cut the checks hold back is settled: it waits in `held`, and later requests test its timing with that
    /// replacement, asking its rule again only as the history grows ([`reask_due`]) — so a request costs what was
    /// appended since the previous one rather than everything held. When it is made, its rule is asked once more,
    /// so that it leaves out what was shown while it waited.
    pub(super) fn run_rules(
        &mut self,
        conv: &Conversation,
        new_blocks: &mut Vec<BlockReport>,
    ) -> Option<HeldBack> {
        let total_assistants = *self.state.assistants_before.last().unwrap_or(&0);
        let (keep_from, latest_group) = self.profile_keeps();
        // the cuts of this request's batch: (result, its tokens after the cut); each one's change is in `held`
        let mut tentative: Vec<(usize, usize)> = Vec::new();
        let mut estimate = self.current_tokens();
        let target = self.settings.target;
        let mut pending = std::mem::take(&mut self.state.pending);
        // the waiting results whose count is reached are asked again, in their place
        let woken = self.wake_sleepers();
        if !woken.is_empty() {
            pending.extend(woken);
            pending.sort_unstable();
            pending.dedup();
        }
        let mut still = Vec::with_capacity(pending.len());
        let mut rest = pending.into_iter();
        for ri in rest.by_ref() {
            let site = &self.state.results[ri];
            let turns_ago = total_assistants - self.state.assistants_before[site.message + 1];
            let in_latest_group = latest_group == Some(self.state.assistants_before[site.message]);
            if turns_ago == 0 || ri >= keep_from || in_latest_group {
                // too new, and so is every later result: they wait for a later request
                still.push(ri);
                break;
            }
            if let Some(&at) = self.state.waiting.get(&ri) {
                if self.relevant_results(ri) < at {
                    // not enough has arrived since it was asked to change the rule's mind
                    self.sleep(ri, at);
                    continue;
                }
            }
            let results = self.state.results.len();
            let settled = self
                .held
                .get(&site.key)
                .map(|c| (c.tokens_after, reask_due(c.asked_at, results)));
            let tokens_after = match settled {
                // a cut held back: settled, only its timing waits
                Some((tokens_after, false)) => tokens_after,
                Some((_, true)) => self.reask_held(conv, ri, turns_ago),
                None => match self.ask(conv, ri, turns_ago) {
                    Asked::Keep => {
                        self.keep_result_for_good(conv, ri);
                        continue;
                    }
                    Asked::Wait(on, after) => {
                        self.state.waiting_on.insert(ri, on);
                        let ask_again_at = self.relevant_results(ri) + after;
                        self.state.waiting.insert(ri, ask_again_at);
                        self.sleep(ri, ask_again_at);
                        continue;
                    }
                    Asked::Cut(change) => {
                        // later results see the replacement as shown, as they will once it is made (and as a
                        // second pass over the compacted history sees it): that keeps compaction idempotent.
                        // Until it is made, the original holds these lines.
                        self.state.shown.add_content(&change.content);
                        let tokens_after = change.tokens_after;
                        self.holds += 1;
                        self.held.insert(self.state.results[ri].key.clone(), change);
                        tokens_after
                    }
                },
            };
            let site = &self.state.results[ri];
            estimate = estimate.saturating_sub(site.tokens - tokens_after);
            tentative.push((ri, tokens_after));
            if target > 0 && estimate <= target {
                break;
            }
        }
        still.extend(rest);
        // the cuts made now: all of the batch, or under the payback rule its latest ones that pay back (the
        // others wait, held); `held` says why any were not
        let (start, held) = self.batch_start(&tentative, total_assistants);
        for (ri, _) in tentative.drain(..start) {
            still.push(ri);
        }
        still.sort_unstable();
        self.state.pending = still;
        for (ri, _) in tentative {
            let site = self.state.results[ri].clone();
            if self
                .held
                .get(&site.key)
                .is_some_and(|c| c.asked_at < self.state.results.len())
            {
                // settled at an earlier request: asked again now it is made, so that what was shown while it
                // waited is not sent twice
                let turns_ago = total_assistants - self.state.assistants_before[site.message + 1];
                self.reask_held(conv, ri, turns_ago);
            }
            // its lines are in the index since it was tentative
            if let Some(change) = self.held.remove(&site.key) {
                new_blocks.extend(self.commit(conv, &site, change));
            }
        }
        let marks = self.held.values().filter_map(|c| c.consulted.as_ref());
        self.state.shown.trim_log(marks.map(|c| &c.mark));
        held
    }

    /// Ask the rule of held cut `ri` again, without its own lines in the index (they are not shown elsewhere): a
    /// cut as small or smaller replaces the settled one, which stays otherwise (a rule that now keeps the result,
    /// or cuts less, does not undo it: what it left out is still shown elsewhere). Returns its tokens after the
    /// cut.
    pub(super) fn reask_held(&mut self, conv: &Conversation, ri: usize, turns_ago: usize) -> usize {
        let key = self.state.results[ri].key.clone();
        let Some(mut change) = self.held.remove(&key) else {
            return self.state.results[ri].tokens;
        };
        self.state.shown.remove_content(&change.content);
        let unchanged =
            (change.consulted.as_mut()).is_some_and(|c| self.state.shown.unchanged_since(c));
        if unchanged {
            // nothing the rules consulted has changed since they were asked, and nothing else they see does:
            // they would answer as they did, and would consult the same lines again
            let now = self.state.shown.mark();
            if let Some(c) = change.consulted.as_mut() {
                c.mark = now;
            }
            self.state.shown.add_content(&change.content);
        } else {
            let before = change.consulted.take();
            match self.ask(conv, ri, turns_ago) {
                Asked::Cut(fresh) if fresh.tokens_after <= change.tokens_after => change = fresh,
                // (the settled cut stays; what the rules consulted is now this answer's)
                Asked::Cut(fresh) => change.consulted = fresh.consulted,
                Asked::Keep | Asked::Wait(..) => {}
            }
            if let Some(c) = change.consulted.as_mut() {
                c.reuse(before);
            }
            self.state.shown.add_content(&change.content);
        }
        change.asked_at = self.state.results.len();
        self.holds += 1;
        let tokens_after = change.tokens_after;
        self.held.insert(key, change);
        tokens_after
    }

    /// Keep result `ri` as it is, for good ([`keep_for_good`]).
    pub(super) fn keep_result_for_good(&mut self, conv: &Conversation, ri: usize) {
        let site = &self.state.results[ri];
        if let Some(result) = Self::result_block(conv, site) {
            keep_for_good(
                &mut self.kept,
                &mut self.state.shown,
                &site.key,
                &result.content,
            );
        }
    }

    /// What the profile's rules decide about pending result `ri`, `turns_ago` requests after it arrived.
    pub(super) fn ask(&self, conv: &Conversation, ri: usize, turns_ago: usize) -> Asked {
        let site = &self.state.results[ri];
        let Some(result) = Self::result_block(conv, site) else {
            return Asked::Keep;
        };
        let null = Value::Null;
        let trailer = self.retrieval_trailer(&site.key);
        // what the rules see: the output itself when the tool wrapped it in JSON
        let view = View::of(&result.content);
        let already_cut = trailer
            .as_deref()
            .is_some_and(|t| ends_with_marker(view.content(), t))
            || (self.settings.request_budget > 0
                && view
                    .content()
                    .blocks
                    .iter()
                    .filter_map(Block::as_text)
                    .any(|t| t.contains(budget::BUDGET_MARK)));
        if self.excluded(site) || already_cut {
            // (already cut: by an earlier pass over this history, as final as if cut here)
            return Asked::Keep;
        }
        let content = view.content();
        let chars = content_chars(&result.content);
        // (the output inside a wrapper is counted apart; a plain result is what it views)
        let view_chars = match &view {
            View::Plain(_) => chars,
            View::Wrapped(_, output) => content_chars(output),
        };
        let by_kind = ByKind(&self.state.by_kind);
        // where the rule that decides, and every rule that deferred before it, depend on the history only
        // through the shown lines they ask about, those are noted, so that a cut held back is not asked again
        // while none of them changes
        let noting = Noting {
            index: &self.state.shown,
            keys: Default::default(),
        };
        let ctx = RuleContext {
            tool_name: &site.tool,
            tool_kind: &site.kind,
            tool_use_id: &site.tool_use_id,
            input: call_input(conv, site.call).unwrap_or(&null),
            content,
            is_error: result.is_error == Some(true),
            message_index: site.message,
            block_index: site.block,
            turns_ago,
            chars: view_chars,
            tokens: site.tokens,
            newer_results: self.state.results.len() - ri - 1,
            same_tool: SameTool::new(by_kind.results_of(&site.kind), conv),
            group: SameTool::new(&[], conv),
            conversation: conv,
            results: &by_kind,
            shown: &noting,
        };
        // the first rule that handles the tool and does not defer decides
        let mut decided_by = None;
        let mut steady = true;
        for (i, bound) in self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.handles(&site.kind, &site.tool))
        {
            let group = bound
                .rule
                .group_key(&site.tool, ctx.input)
                .and_then(|key| self.state.groups.get(&(i, key)))
                .map_or(&[][..], Vec::as_slice);
            let ctx = RuleContext {
                group: SameTool::new(group, conv),
                ..ctx
            };
            match bound.rule.decide(&ctx) {
                Decision::Defer => {
                    steady &= !bound.rule.defer_depends_on_history();
                    continue;
                }
                decision => {
                    // (a keep the rule says is final is a history-independent rule's keep)
                    let waits = bound.rule.depends_on_history()
                        && !(decision == Decision::Keep && bound.rule.keep_is_final(&ctx));
                    steady &= !waits;
                    let after = match decision {
                        Decision::Keep if waits => bound.rule.reconsider_after(&ctx).max(1),
                        _ => 1,
                    };
                    decided_by = Some((i, bound, decision, after, waits));
                    break;
                }
            }
        }
        let Some((rule_index, bound, decision, reconsider_after, waits)) = decided_by else {
            return Asked::Keep;
        };
        // a stand-in refused for being larger than the result would be refused again: the rule's stand-in
        // for a result does not shrink as the history grows, and asking on every request is quadratic
        let kept_by_the_rule = matches!(decision, Decision::Keep | Decision::Defer);
        let replacement = match decision {
            Decision::Keep | Decision::Defer => None,
            Decision::Replace(c) => Some((c, Action::Replaced)),
            Decision::Pointer(text) => Some((Content::text(text), Action::Pointer)),
        }
        // with a retrieval tool, how to get the original back through it; in the tool's JSON wrapper if
        // it had one
        .map(|(c, action)| {
            let c = with_trailer(c, trailer.as_deref());
            (view.back(&result.content, c), action)
        })
        .map(|(c, action)| (count_tool_result(self.estimator.as_ref(), &c), c, action))
        // a block never grows: a larger "replacement" keeps the original
        .filter(|(tokens, c, _)| {
            never_grows(
                *tokens,
                content_chars(c),
                site.tokens,
                chars,
                &result.content,
            )
        });
        let Some((tokens_after, content, action)) = replacement else {
            if waits && kept_by_the_rule {
                let on = match bound.rule.group_key(&site.tool, ctx.input) {
                    Some(key) => WaitingOn::Group(rule_index, key),
                    None => match bound.rule.reconsider_on_kinds() {
                        Some(kinds) => WaitingOn::Kinds(kinds),
                        None => WaitingOn::Any,
                    },
                };
                return Asked::Wait(on, reconsider_after);
            }
            return Asked::Keep;
        };
        Asked::Cut(Change {
            content,
            tokens_after,
            chars_before: chars,
            rule: bound.rule.name(),
            action,
            clear_input: self.settings.clear_tool_inputs,
            asked_at: self.state.results.len(),
            consulted: steady
                .then(|| Consulted::new(self.state.shown.mark(), noting.keys.into_inner())),
        })
    }
}
