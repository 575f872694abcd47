//! Records fetched again: of a record an API answers with again, the fields the request already shows for it.
//!
//! ## What
//! An API result or a command's JSON that is one object on one line — a record, as function-calling tools return
//! one (`json.dumps(reservation)`) — leaves out the fields that the request shows for good in a record with the
//! same first field (`"reservation_id": "JG7FMM"`: the record's key), byte for byte. Each run of them longer
//! than its marker becomes `[… 4 fields shown elsewhere in this conversation for this record]`; the fields that
//! changed stay. `record_fields = false` leaves records whole. (A pretty-printed record is compared line by line
//! by [`crate::slots`].)
//!
//! ## Why
//! It is what leaving out lines shown elsewhere does for a re-read file, for a record whose one line is too long
//! to compare whole: the reservation as an earlier lookup showed it, before the update that answered with all of
//! it again.
//!
//! ## Example
//! ```text
//! {"reservation_id": "JG7FMM", [… 9 fields shown elsewhere in this conversation for this record], "flights": [...]}
//! ```

use ctxfit_retention::{record_member_line, record_members, ShownLines};

use crate::{excerpt_body, found_in_order};

/// A record fetched again (the seventh kind of cut): of a result that is a JSON object on one line, the members
/// after the first (which names the record) that the request shows for good in a record with the same first
/// member — the reservation before its update, the profile read before —, each run of them longer than its marker
/// becoming `[… 3 fields shown elsewhere in this conversation for this record]`. `None` when nothing is left out.
pub(crate) fn record_excerpt(text: &str, shown: &dyn ShownLines) -> Option<String> {
    let members = record_members(text)?;
    let first = &text[members[0].clone()];
    let is_shown: Vec<bool> = (members.iter().enumerate())
        .map(|(k, m)| k > 0 && shown.is_shown(&record_member_line(first, &text[m.clone()])))
        .collect();
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..members[0].end]);
    let (mut k, mut cut) = (1, false);
    while k < members.len() {
        out.push_str(&text[members[k - 1].end..members[k].start]);
        let run = is_shown[k..].iter().take_while(|&&s| s).count();
        if run == 0 {
            out.push_str(&text[members[k].clone()]);
            k += 1;
            continue;
        }
        let span = &text[members[k].start..members[k + run - 1].end];
        let marker = format!(
            "{FIELDS_OPEN}{run} field{}{FIELDS_CLOSE}",
            if run == 1 { "" } else { "s" }
        );
        if span.len() > marker.len() {
            out.push_str(&marker);
            cut = true;
        } else {
            out.push_str(span);
        }
        k += run;
    }
    out.push_str(&text[members[members.len() - 1].end..]);
    cut.then_some(out)
}

/// A run of a record's fields shown elsewhere: `[… 3 fields shown elsewhere in this conversation for this record]`.
const FIELDS_OPEN: &str = "[… ";
const FIELDS_CLOSE: &str = " shown elsewhere in this conversation for this record]";

/// The trailer of an excerpt of a record fetched again says this.
pub(crate) const FIELDS_NOTE: &str = "of a record fetched again; ";

/// Is `cut` an excerpt of a record fetched again this rule wrote (`None` if not), and is it then the original's
/// own text, in order, with markers where fields were left out (`Some(true)`)?
pub fn keeps_fields_of(original: &str, cut: &str) -> Option<bool> {
    let body = excerpt_body(cut, FIELDS_NOTE)?;
    let mut pieces = Vec::new();
    let mut rest = body;
    while let Some(close) = rest.find(FIELDS_CLOSE) {
        let open = rest[..close].rfind(FIELDS_OPEN)?;
        pieces.push(&rest[..open]);
        rest = &rest[close + FIELDS_CLOSE.len()..];
    }
    pieces.push(rest);
    Some(found_in_order(original, pieces))
}
