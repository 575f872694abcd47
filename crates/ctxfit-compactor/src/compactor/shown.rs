//! The lines a request shows, indexed for the rules that leave out what is shown elsewhere, and the per-kind
//! result lists as the rules see them.

use super::*;

/// The compactor's per-kind result lists, as the rules see them.
pub(super) struct ByKind<'a>(pub(super) &'a HashMap<String, Vec<ResultRef>>);

impl ResultIndex for ByKind<'_> {
    fn results_of(&self, kind: &str) -> &[ResultRef] {
        self.0.get(kind).map_or(&[], Vec::as_slice)
    }
}

/// Every line that is final in the request (the system prompt, message text, tool-call inputs, decided results,
/// and the replacements of cuts held back, whose lines the original holds until the cut is made), counted by
/// key: what rules see as [`ShownLines`]. Nothing final leaves the request but under a request budget, so lines
/// leave the index only while a held cut's rule is asked again (it must not see its own lines as shown
/// elsewhere) and when the budget cuts further what was final (`budget.rs`) — and when the profile drops messages
/// from the front, the index stays empty.
#[derive(Default)]
pub(super) struct ShownIndex {
    pub(super) enabled: bool,
    pub(super) lines: HashMap<u64, u32>,
}

impl ShownIndex {
    /// Call `f` with the key of each line of `text` as the model reads it (the output inside a tool's JSON
    /// wrapper, [`WrappedOutput`]) — and, when it is a record on one line, of each of its members after the first
    /// ([`record_member_line`]).
    pub(super) fn each_key(text: &str, mut f: impl FnMut(u64)) {
        let wrapped = WrappedOutput::parse(text);
        let text = wrapped.as_ref().map_or(text, |w| w.output());
        // (a blank line has no key: splitting at `\n` alone finds the same keys as `lines()`)
        ctxfit_retention::each_line(text)
            .filter_map(line_key)
            .for_each(&mut f);
        if let Some(members) = record_members(text) {
            let first = &text[members[0].clone()];
            for m in &members[1..] {
                if let Some(k) = line_key(&record_member_line(first, &text[m.clone()])) {
                    f(k);
                }
            }
        }
    }

    pub(super) fn add_text(&mut self, text: &str) {
        if !self.enabled {
            return;
        }
        Self::each_key(text, |k| *self.lines.entry(k).or_default() += 1);
    }

    pub(super) fn add_content(&mut self, content: &Content) {
        for text in content.blocks.iter().filter_map(Block::as_text) {
            self.add_text(text);
        }
    }

    /// Undo `add_content` (a held cut asked again).
    pub(super) fn remove_content(&mut self, content: &Content) {
        if !self.enabled {
            return;
        }
        for text in content.blocks.iter().filter_map(Block::as_text) {
            Self::each_key(text, |k| {
                if let Some(n) = self.lines.get_mut(&k) {
                    *n = n.saturating_sub(1);
                }
            });
        }
    }

    pub(super) fn add_value(&mut self, value: &Value) {
        match value {
            Value::String(s) => self.add_text(s),
            Value::Array(a) => a.iter().for_each(|v| self.add_value(v)),
            Value::Object(m) => m.values().for_each(|v| self.add_value(v)),
            _ => {}
        }
    }
}

impl ShownLines for ShownIndex {
    fn is_shown(&self, line: &str) -> bool {
        line_key(line).is_some_and(|k| self.lines.get(&k).is_some_and(|n| *n > 0))
    }
}

/// Keep a result as it is for good: never asked about again, and its lines are shown from now on.
pub(super) fn keep_for_good(
    kept: &mut HashSet<ResultKey>,
    shown: &mut ShownIndex,
    key: &ResultKey,
    content: &Content,
) {
    kept.insert(key.clone());
    shown.add_content(content);
}
