//! Line numbers: a numbered read whose numbers run on one by one loses the number column.
//!
//! ## What
//! A read (`cat -n`, Claude Code's `Read`: `   12→`, `12\t`) whose every line but trailing notes is numbered, one
//! by one from some first number (`consecutive_numbers`), is kept without the numbers; a first line
//! `[lines 120–380; numbers dropped, count from 120]` says how to put them back. `strip_line_numbers = false`
//! keeps them.
//!
//! ## Why
//! The numbers are a tenth of a numbered read's tokens and carry one fact: where the read starts.
//!
//! ## Example
//! ```text
//! [lines 120–124; numbers dropped, count from 120]
//! fn parse(text: &str) -> Result<Value> {
//!     let text = text.trim_start_matches('\u{feff}');
//! ```

use ctxfit_retention::{is_blank, line_number_prefix};

/// The first line of an excerpt whose line numbers were dropped starts with this.
pub(crate) const NUMBERS_HEADER: &str = "[lines ";

/// The first line number of a read whose every line but trailing notes is numbered one by one (`Some(first)`).
pub(crate) fn consecutive_numbers(lines: &[&str]) -> Option<u64> {
    let mut first = None;
    let mut numbered = 0;
    let mut unnumbered_at = None;
    let mut unnumbered = 0;
    for (i, line) in lines.iter().enumerate() {
        let p = line_number_prefix(line);
        if p == 0 {
            unnumbered += 1;
            if unnumbered * 10 > lines.len() {
                // more than a tenth of the lines: not a numbered read, whatever follows
                return None;
            }
            if !is_blank(line) {
                unnumbered_at.get_or_insert(i);
            }
            continue;
        }
        if unnumbered_at.is_some() {
            // numbered lines after text that is not: not one numbered file
            return None;
        }
        let n: u64 = line[..p]
            .trim()
            .trim_end_matches(['→', '\t'])
            .parse()
            .ok()?;
        let start = *first.get_or_insert(n.checked_sub(i as u64)?);
        if n != start + i as u64 {
            return None;
        }
        numbered += 1;
    }
    (numbered >= 5 && numbered * 10 >= lines.len() * 9)
        .then_some(first)
        .flatten()
}
