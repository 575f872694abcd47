//! Reading what was appended: new messages into the indexes, the ingestion cap on new results, and the tokens a
//! request holds.

use super::*;

impl Compactor {
    pub(super) fn ingest(&mut self, conv: &Conversation) {
        if conv.messages.len() < self.state.messages || self.state.messages == 0 {
            self.state = State {
                base_tokens: count_preamble(self.estimator.as_ref(), conv),
                assistants_before: vec![0],
                shown: ShownIndex::new(self.settings.max_conversation_messages == 0),
                ..State::default()
            };
            // the system prompt is sent with every request
            if let Some(system) = &conv.system {
                self.state.shown.add_content(system);
            }
        }
        let st = &mut self.state;
        st.index.update(conv);
        let est = self.estimator.as_ref();
        for (mi, msg) in conv.messages.iter().enumerate().skip(st.messages) {
            st.message_tokens += MESSAGE_OVERHEAD;
            st.sent_tokens.push(MESSAGE_OVERHEAD);
            let before = *st.assistants_before.last().unwrap_or(&0);
            st.assistants_before
                .push(before + usize::from(ctxfit_model::begins_response(&conv.messages, mi)));
            for (bi, block) in msg.content.blocks.iter().enumerate() {
                let tokens = count_block(est, block);
                st.message_tokens += tokens;
                st.sent_tokens.add(mi, tokens);
                match block {
                    Block::Text(t) => st.shown.add_text(&t.text),
                    // a cleared input is not final
                    Block::ToolUse(u) if !self.settings.clear_tool_inputs => {
                        st.shown.add_value(&u.input)
                    }
                    _ => {}
                }
                let Block::ToolResult(r) = block else {
                    continue;
                };
                let site = st.index.call_before(&r.tool_use_id, (mi, bi));
                let tool = site.map_or("", |c| c.name.as_str()).to_owned();
                let null = Value::Null;
                let call = site.map(|c| (c.message, c.block));
                let input = call_input(conv, call).unwrap_or(&null);
                let kind = self.kinds.kind_of(&tool, input).to_owned();
                let ri = st.results.len();
                let at = ResultRef {
                    result: (mi, bi),
                    call,
                };
                for (i, bound) in self.rules.iter().enumerate() {
                    if bound.rule.depends_on_history() && bound.handles(&kind, &tool) {
                        if let Some(group) = bound.rule.group_key(&tool, input) {
                            let key = (i, group);
                            st.sleepers.group_grew(&key);
                            st.groups.entry(key).or_default().push(at);
                        }
                    }
                }
                let seen = st.seen_ids.entry(r.tool_use_id.clone()).or_default();
                let key = (r.tool_use_id.clone(), *seen);
                *seen += 1;

                match st.by_kind.get_mut(&kind) {
                    Some(refs) => refs.push(at),
                    None => {
                        st.by_kind.insert(kind.clone(), vec![at]);
                    }
                }
                st.last_result_message = Some(mi);
                if let Some(sticky) = self.decided.get(&key) {
                    if let Some(c) = &sticky.content {
                        st.shown.add_content(c);
                    }
                    st.saved +=
                        sticky.tokens_before - sticky.tokens_after + sticky.input_tokens_saved;
                    st.sent_tokens
                        .sub(mi, sticky.tokens_before - sticky.tokens_after);
                    if let Some((cm, _)) = call {
                        st.sent_tokens.sub(cm, sticky.input_tokens_saved);
                    }
                    st.replaced
                        .entry(mi)
                        .or_default()
                        .push((bi, Replacement::Result(key.clone())));
                    st.changed.push(mi);
                    if let (true, Some((cm, cb))) = (sticky.clear_input, call) {
                        st.replaced
                            .entry(cm)
                            .or_default()
                            .push((cb, Replacement::ClearInput));
                        st.changed.push(cm);
                    }
                } else if self.kept.contains(&key) {
                    st.shown.add_content(&r.content);
                } else {
                    if let Some(change) = self.held.get(&key) {
                        st.shown.add_content(&change.content);
                    }
                    st.pending.push(ri);
                }
                st.results.push(ResultSite {
                    message: mi,
                    block: bi,
                    call,
                    key,
                    tool_use_id: r.tool_use_id.clone(),
                    tool,
                    kind,
                    tokens,
                });
            }
        }
        st.messages = conv.messages.len();
    }

    /// Tokens the provider reads from its cache when the first `messages` messages are what the previous request
    /// sent (none: nothing is cached).
    pub(super) fn read_before(&self, messages: usize) -> usize {
        if messages == 0 {
            return 0;
        }
        self.state.base_tokens + self.state.sent_tokens.prefix(messages)
    }

    /// Tokens of the request as compacted so far.
    pub(super) fn current_tokens(&self) -> usize {
        self.state.base_tokens + self.state.message_tokens - self.state.saved
    }

    pub(super) fn result_block<'c>(
        conv: &'c Conversation,
        site: &ResultSite,
    ) -> Option<&'c ctxfit_model::ToolResult> {
        match conv.block(site.message, site.block)? {
            Block::ToolResult(r) => Some(r),
            _ => None,
        }
    }

    /// The line a result cut under this profile ends with, when it has a retrieval tool.
    pub(super) fn retrieval_trailer(&self, key: &ResultKey) -> Option<String> {
        let tool = self.settings.retrieval_tool.as_deref()?;
        Some(retrieval_trailer(tool, &key.0, key.1))
    }

    pub(super) fn cap_new_results(
        &mut self,
        conv: &Conversation,
        new_blocks: &mut Vec<BlockReport>,
    ) {
        let cap = self.settings.max_tool_result_chars;
        let pending = std::mem::take(&mut self.state.pending);
        let mut still = Vec::with_capacity(pending.len());
        for ri in pending {
            let site = self.state.results[ri].clone();
            let Some(result) = Self::result_block(conv, &site) else {
                continue;
            };
            let trailer = self.retrieval_trailer(&site.key);
            let view = View::of(&result.content);
            let already_capped = match trailer.as_deref() {
                Some(t) => ends_with_marker(view.content(), &format!("{INGESTION_MARKER}{t}")),
                None => ends_with_marker(view.content(), INGESTION_MARKER),
            };
            if already_capped {
                // capped by an earlier pass over this history: as final as if capped here
                self.keep_result_for_good(conv, ri);
                continue;
            }
            let est = self.estimator.as_ref();
            let cut = truncate_content(view.content(), cap, INGESTION_MARKER)
                .map(|c| view.back(&result.content, with_trailer(c, trailer.as_deref())))
                .map(|c| (count_tool_result(est, &c), c));
            match cut {
                Some((tokens_after, cut))
                    if content_chars(&cut) < content_chars(&result.content)
                        && tokens_after <= site.tokens =>
                {
                    self.state.shown.add_content(&cut);
                    let change = Change {
                        content: cut,
                        tokens_after,
                        chars_before: content_chars(&result.content),
                        rule: "max_tool_result_chars",
                        action: Action::Replaced,
                        clear_input: false,
                        asked_at: 0,
                        consulted: None,
                    };
                    new_blocks.extend(self.commit(conv, &site, change));
                }
                // a capped result is final: compacting it again later would break the cached prefix
                _ => still.push(ri),
            }
        }
        self.state.pending = still;
    }
}
