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
///
/// It also logs, in order, every key whose being shown changes (its count going from 0 to 1 or back): a held
/// cut's rule, asked again, answers as before while no line it asked about has changed ([`ShownIndex::mark`],
/// [`ShownIndex::unchanged_since`]).
pub(super) struct ShownIndex {
    pub(super) enabled: bool,
    lines: HashMap<u64, u32>,
    /// Which index this is: a history read again gets a new one, and a mark of another means nothing here.
    id: u64,
    /// The keys whose being shown changed, from position `flips_base` of the log on.
    flips: Vec<u64>,
    flips_base: usize,
}

impl Default for ShownIndex {
    fn default() -> ShownIndex {
        ShownIndex::new(false)
    }
}

impl ShownIndex {
    /// An empty index; a disabled one stays empty (a profile that drops messages from the front).
    pub(super) fn new(enabled: bool) -> ShownIndex {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        ShownIndex {
            enabled,
            lines: HashMap::default(),
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            flips: Vec::new(),
            flips_base: 0,
        }
    }
}

/// A point in a [`ShownIndex`]'s log of changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mark {
    index: u64,
    at: usize,
}

/// What the rules consulted of the index while deciding: the key of every line they asked about, and when.
#[derive(Debug, Clone)]
pub(super) struct Consulted {
    pub(super) mark: Mark,
    /// The keys: as noted, then sorted and deduplicated by the first check, which also makes `filter`.
    keys: Vec<u64>,
    /// A bit filter of the keys (two bits each, 16 bits a key): a change since is looked up in `keys` only where
    /// it may be among them.
    filter: Vec<u64>,
    /// How many keys were noted, and their sum and exclusive or: the same three, the same keys (as far as
    /// 64-bit line keys tell lines apart at all), whose sorted list and filter are then taken over.
    count: usize,
    sum: u64,
    xor: u64,
}

impl Consulted {
    pub(super) fn new(mark: Mark, keys: Vec<u64>) -> Consulted {
        let sum = keys.iter().fold(0u64, |a, &k| a.wrapping_add(k));
        let xor = keys.iter().fold(0u64, |a, &k| a ^ k);
        Consulted {
            mark,
            count: keys.len(),
            sum,
            xor,
            keys,
            filter: Vec::new(),
        }
    }

    /// Take over `old`'s sorted keys and filter when they are of the same keys (a rule asked again about the
    /// same result consults the same lines): the sorting is done once a result.
    pub(super) fn reuse(&mut self, old: Option<Consulted>) {
        if let Some(old) = old {
            let same = (self.count, self.sum, self.xor) == (old.count, old.sum, old.xor);
            if same && self.filter.is_empty() && !old.filter.is_empty() {
                self.keys = old.keys;
                self.filter = old.filter;
            }
        }
    }

    /// The two bits of a key in a filter of `bits` bits (a power of two).
    fn bits(key: u64, bits: usize) -> (usize, usize) {
        (
            (key as usize) & (bits - 1),
            ((key >> 32) as usize) & (bits - 1),
        )
    }

    /// Whether `key` is among the keys (the filter made first).
    fn holds(&self, key: u64) -> bool {
        let (a, b) = Self::bits(key, self.filter.len() * 64);
        let set = |i: usize| self.filter[i / 64] & (1 << (i % 64)) != 0;
        set(a) && set(b) && self.keys.binary_search(&key).is_ok()
    }

    fn make_filter(&mut self) {
        if !self.filter.is_empty() {
            return;
        }
        self.keys.sort_unstable();
        self.keys.dedup();
        let words = (self.keys.len() / 4).next_power_of_two().max(1);
        self.filter = vec![0; words];
        for &k in &self.keys {
            let (a, b) = Self::bits(k, words * 64);
            self.filter[a / 64] |= 1 << (a % 64);
            self.filter[b / 64] |= 1 << (b % 64);
        }
    }
}

/// The index as a rule sees it, noting the key of each line the rule asks about.
pub(super) struct Noting<'a> {
    pub(super) index: &'a ShownIndex,
    pub(super) keys: std::cell::RefCell<Vec<u64>>,
}

impl ShownLines for Noting<'_> {
    fn is_shown(&self, line: &str) -> bool {
        let Some(k) = line_key(line) else {
            return false;
        };
        self.keys.borrow_mut().push(k);
        self.index.shows(k)
    }
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
        let (lines, flips) = (&mut self.lines, &mut self.flips);
        Self::each_key(text, |k| {
            let n = lines.entry(k).or_default();
            if *n == 0 {
                flips.push(k);
            }
            *n += 1;
        });
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
        let (lines, flips) = (&mut self.lines, &mut self.flips);
        for text in content.blocks.iter().filter_map(Block::as_text) {
            Self::each_key(text, |k| {
                if let Some(n) = lines.get_mut(&k) {
                    if *n == 1 {
                        flips.push(k);
                    }
                    *n = n.saturating_sub(1);
                }
            });
        }
    }

    /// How many times the request shows the line of this key (0 when the index is off).
    pub(super) fn count(&self, key: u64) -> u32 {
        self.lines.get(&key).copied().unwrap_or(0)
    }

    /// Is the line of this key shown?
    pub(super) fn shows(&self, key: u64) -> bool {
        self.lines.get(&key).is_some_and(|n| *n > 0)
    }

    /// Where the log of changes stands now.
    pub(super) fn mark(&self) -> Mark {
        Mark {
            index: self.id,
            at: self.flips_base + self.flips.len(),
        }
    }

    /// Whether each of `asked.keys` is shown now as it was at `asked.mark` (an even count of changes since):
    /// `false` also when that cannot be told cheaply — a mark of another index, or of a part of the log let go, or
    /// more than 32 changes since per key: looking through them would cost about what asking the rule again
    /// costs (some 300 instructions per line for `excerpt`). On cc-entire's held cuts, 8 per key asks again
    /// three times in four, 32 (this) 44 in 100, 128 31 in 100 for 0.5% fewer instructions in all.
    pub(super) fn unchanged_since(&self, asked: &mut Consulted) -> bool {
        let Mark { index, at } = asked.mark;
        if index != self.id || at < self.flips_base {
            return false;
        }
        let since = &self.flips[at - self.flips_base..];
        if since.is_empty() || asked.count == 0 {
            return true;
        }
        if since.len() > 32 * asked.count + 64 {
            return false;
        }
        asked.make_filter();
        // the consulted keys changed an odd number of times since
        let mut odd: HashSet<u64> = HashSet::default();
        for &k in since.iter().filter(|&&k| asked.holds(k)) {
            if !odd.remove(&k) {
                odd.insert(k);
            }
        }
        odd.is_empty()
    }

    /// Where the part of the log still kept begins.
    #[cfg(test)]
    fn logged_from(&self) -> usize {
        self.flips_base
    }

    /// Keep the log bounded: past 65,536 changes, let go of what comes before the oldest of `marks` (those of
    /// the cuts still held), and of all of it past 262,144 — a mark let go of is answered "changed", and the rule
    /// is asked again.
    pub(super) fn trim_log<'m>(&mut self, marks: impl Iterator<Item = &'m Mark>) {
        if self.flips.len() <= 1 << 16 {
            return;
        }
        let oldest = marks.filter(|m| m.index == self.id).map(|m| m.at).min();
        let mut n = oldest
            .unwrap_or(usize::MAX)
            .saturating_sub(self.flips_base)
            .min(self.flips.len());
        if self.flips.len() - n > 1 << 18 {
            n = self.flips.len();
        }
        self.flips.drain(..n);
        self.flips_base += n;
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
        line_key(line).is_some_and(|k| self.shows(k))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn consulted(index: &ShownIndex, lines: &[&str]) -> Consulted {
        Consulted::new(
            index.mark(),
            lines.iter().filter_map(|l| line_key(l)).collect(),
        )
    }

    #[test]
    fn a_rule_s_lines_unchanged_are_told_from_changed_ones() {
        let mut index = ShownIndex::new(true);
        index.add_text("fn main() {}\nlet x = 1;");
        let mut asked = consulted(&index, &["let x = 1;", "let y = 2;"]);
        assert!(index.unchanged_since(&mut asked), "nothing happened");

        // other lines come and go, a consulted line shown once more (still shown): unchanged
        index.add_text("unrelated\nlet x = 1;");
        index.remove_content(&Content::text("unrelated"));
        assert!(index.unchanged_since(&mut asked));

        // a consulted line shown for the first time: changed — and unchanged again once it is gone
        index.add_text("   7→ let y = 2;");
        assert!(!index.unchanged_since(&mut asked));
        index.remove_content(&Content::text("let y = 2;"));
        assert!(index.unchanged_since(&mut asked));

        // a consulted line no longer shown anywhere: changed
        index.remove_content(&Content::text("let x = 1;\nlet x = 1;"));
        assert!(!index.unchanged_since(&mut asked));
    }

    #[test]
    fn many_lines_are_looked_up_through_the_filter_without_a_miss() {
        let mut index = ShownIndex::new(true);
        let read: Vec<String> = (0..1000).map(|i| format!("let v{i} = {i};")).collect();
        let lines: Vec<&str> = read.iter().map(String::as_str).collect();
        let mut asked = consulted(&index, &lines);
        // 3,000 other lines shown since: none of them consulted
        index.add_text(
            &(0..3000)
                .map(|i| format!("other {i}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        assert!(index.unchanged_since(&mut asked));
        // any one consulted line shown now is seen, whichever it is
        for probe in [0, 1, 499, 998, 999] {
            let mut again = consulted(&ShownIndex::new(true), &lines);
            again.mark = asked.mark;
            index.add_text(&read[probe]);
            assert!(!index.unchanged_since(&mut again), "{probe}");
            index.remove_content(&Content::text(read[probe].clone()));
        }
    }

    #[test]
    fn the_same_lines_consulted_again_reuse_the_sorted_keys() {
        let mut index = ShownIndex::new(true);
        let mut first = consulted(&index, &["a", "b", "c"]);
        index.add_text("x");
        assert!(index.unchanged_since(&mut first));
        let mut again = consulted(&index, &["c", "a", "b"]);
        again.reuse(Some(first.clone()));
        assert_eq!(
            (again.keys.clone(), again.filter.clone()),
            (first.keys.clone(), first.filter.clone())
        );
        let mut other = consulted(&index, &["a", "b", "d"]);
        other.reuse(Some(first));
        assert!(other.filter.is_empty(), "other lines: nothing taken over");
        index.add_text("d");
        assert!(!index.unchanged_since(&mut other));
        assert!(index.unchanged_since(&mut again));
    }

    #[test]
    fn a_mark_of_another_index_or_of_a_forgotten_log_is_changed() {
        let mut index = ShownIndex::new(true);
        let mut asked = consulted(&index, &["a"]);
        assert!(!ShownIndex::new(true).unchanged_since(&mut asked));

        // past 65,536 changes with no mark kept the log is let go of, and the mark with it
        for i in 0..70_000 {
            index.add_text(&format!("line {i}"));
        }
        index.trim_log(std::iter::empty());
        assert!(index.logged_from() > asked.mark.at);
        assert!(!index.unchanged_since(&mut asked));

        // a mark still held keeps its part of the log
        let mut kept = consulted(&index, &["a"]);
        for i in 0..70_000 {
            index.add_text(&format!("more {i}"));
        }
        index.trim_log([&kept.mark].into_iter());
        assert_eq!(index.logged_from(), kept.mark.at);
        // (more changes since than asking again would cost: told as changed)
        assert!(!index.unchanged_since(&mut kept));
    }
}
