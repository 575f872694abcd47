//! Shown elsewhere: of a stale result, the runs of lines the request already shows become a marker; and the
//! excerpt's lines and gaps, which the other parts of the rule then thin out.
//!
//! ## What
//! A run of at least `min_run` lines (3) that the request already shows — in a message's text, a tool call's
//! input, or another result whose decision is final — becomes `[… 12 lines shown elsewhere in this
//! conversation]` (`shown_runs`). A line number (`   12→`, `12\t`) and surrounding space do not count in the
//! comparison, so a re-read after an edit keeps just the lines that changed; blank lines inside a run go with it.
//! `omit_lines` merges the lines another part of the rule drops into `[… 40 lines omitted]` gaps.
//!
//! ## Why
//! Most of what an agent is sent again on every request is text it has already seen twice: the file it read
//! before editing and read again after, the same test output run after run. Leaving out what is still in front of
//! the model loses nothing.
//!
//! ## Example
//! A file read, edited, and read again: the second read keeps the edited function and
//! `[… 212 lines shown elsewhere in this conversation]` around it.

use ctxfit_retention::{is_blank, ShownLines};

/// One line of the excerpt: a line of the result, or a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    Line(usize),
    Shown(usize),
    Omitted(usize),
}

pub(crate) fn gap_len(s: &Slot) -> usize {
    match s {
        Slot::Shown(n) | Slot::Omitted(n) => *n,
        Slot::Line(_) => 0,
    }
}

/// Merge the lines of `slots` that `keep` rejects into `Omitted` gaps (adjacent gaps of that kind join). A gap of
/// one line no longer than its marker keeps the line: the marker would cost as much and say less.
pub(crate) fn omit_lines(
    slots: Vec<Slot>,
    lines: &[&str],
    keep: impl Fn(usize, usize) -> bool,
) -> Vec<Slot> {
    let mut nth = 0;
    let dropped: Vec<bool> = slots
        .iter()
        .map(|slot| match *slot {
            Slot::Line(i) => {
                let k = keep(nth, i);
                nth += 1;
                !k
            }
            _ => false,
        })
        .collect();
    let alone = |k: usize| (k == 0 || !dropped[k - 1]) && dropped.get(k + 1).is_none_or(|d| !d);
    let mut out: Vec<Slot> = Vec::with_capacity(slots.len());
    for (k, slot) in slots.into_iter().enumerate() {
        let short = |slot: &Slot| match *slot {
            Slot::Line(i) => lines[i].chars().count() <= ONE_LINE_OMITTED.chars().count(),
            _ => false,
        };
        if !dropped[k] || (alone(k) && short(&slot)) {
            out.push(slot);
        } else if let Some(Slot::Omitted(n)) = out.last_mut() {
            *n += 1;
        } else {
            out.push(Slot::Omitted(1));
        }
    }
    out
}

/// The marker of a gap of one line.
const ONE_LINE_OMITTED: &str = "[… 1 line omitted]";

/// The lines of `lines` as slots: each run of at least `min_run` lines the request shows elsewhere (blank lines
/// inside it included) one `Shown` gap, every other line itself.
pub(crate) fn shown_runs(
    lines: &[&str],
    shown_lines: &dyn ShownLines,
    min_run: usize,
) -> Vec<Slot> {
    // (a blank line has no key, so it is never shown: `is_shown` answers for it too)
    let shown: Vec<bool> = lines.iter().map(|l| shown_lines.is_shown(l)).collect();
    let blank = |i: usize| is_blank(lines[i]);
    let mut slots = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if !shown[i] {
            slots.push(Slot::Line(i));
            i += 1;
            continue;
        }
        let (mut j, mut count, mut last_shown) = (i, 0, i);
        while j < lines.len() && (shown[j] || blank(j)) {
            if shown[j] {
                count += 1;
                last_shown = j;
            }
            j += 1;
        }
        if count >= min_run.max(1) {
            slots.push(Slot::Shown(last_shown + 1 - i));
            i = last_shown + 1;
        } else {
            slots.extend((i..j).map(Slot::Line));
            i = j;
        }
    }
    slots
}
