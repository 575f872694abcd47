//! Rule `excerpt`: keep of a stale result what the request does not already show, and of a long log or listing
//! the lines that say how it went.
//!
//! ## What it does
//! The result's own lines (or fields), in order, with a marker for each gap. What a result is decides which
//! cuts apply ([`kind`]); each kind of cut is a module of its own, with its parameters and an example:
//!
//! 1. [`slots`] — **shown elsewhere**: runs of lines the request already shows become a marker.
//! 2. [`log`] — **logs**: a long log keeps its head, its tail and the lines that report an outcome.
//! 3. [`listing`] — **listings**: a long search or listing keeps its first lines; `ls -l` lines their mode and
//!    name.
//! 4. [`numbers`] — **line numbers**: a numbered read loses the number column, with a line saying where it
//!    starts.
//! 5. [`json`] — **lists of records**: a long JSON list keeps its first records whole and of the others their
//!    first field.
//! 6. [`record`] — **records fetched again**: of a record answered again, the fields shown elsewhere go.
//!
//! A document (a command's JSON, diff or manual) has no outcome to keep: only the runs shown elsewhere go, and
//! `bash` cuts it to its head and tail when it is over 10,000 characters. An excerpt must save at least
//! `min_saving` (0.1) of the result's characters, or the result is left as it is.
//!
//! A result with a gap ends with how to get it back: `[excerpt of a stale result — re-read src/a.rs for the full
//! text]` (or re-run the command, or call the tool again). A result the rule would not change is left to the
//! next rule of the profile ([`Decision::Defer`]): `read-file`, `bash` and `recent` still apply seed 004's table.
//!
//! ## Why
//! An agent needs each line once, the outcome of a run, what a list's records hold and which there were, and the
//! way back to the rest. What this rule keeps is the result's own text, so it never invents anything, and what it
//! leaves out is either still in front of the model or one call away. It decides as soon as the model has
//! answered the result, so the cached prefix breaks only over that result and the answer (under `smart`'s payback
//! rule a small cut that would not yet pay for its cache write waits with this rule's cut, the rule asked again as
//! the history grows and when the cut is made).
//!
//! ## Example
//! ```toml
//! [[profiles.mine.rules]]
//! rule = "excerpt"
//! tools = ["bash", "read_file", "listing", "web_fetch"]
//! params = { min_run = 4, log_above = 2000, log_head = 10, log_tail = 20, listing_keep = 30, frames_last = 5 }
//! ```

pub mod json;
pub mod kind;
pub mod listing;
pub mod log;
pub mod numbers;
pub mod record;
pub mod slots;

use std::cell::OnceCell;

use ctxfit_model::{Block, Content, Value};
pub use ctxfit_retention::calls::main_program;
use ctxfit_retention::calls::{read_target, shell_command, ReadTarget, ShellReads};
use ctxfit_retention::{
    line_number_prefix, read_params, register_rule, split_lines, Decision, RetentionRule,
    RuleConfigError, RuleContext,
};

pub use json::keeps_records_of;
use json::RECORDS_NOTE;
pub use kind::{is_change_record, is_json_output, prints_manual, ContentKind};
use listing::NAMES_HEADER;
pub use listing::{keeps_of, long_listing_line, LongLine};
use log::frames_between;
pub use log::{library_frame, reports_outcome};
use numbers::{consecutive_numbers, NUMBERS_HEADER};
pub use record::keeps_fields_of;
use record::{record_excerpt, FIELDS_NOTE};
use slots::{gap_len, omit_lines, shown_runs, Slot};

/// What the rule keeps; see the crate documentation.
#[derive(Debug, Clone)]
pub struct Excerpt {
    pub min_run: usize,
    pub log_above: usize,
    pub log_head: usize,
    pub log_tail: usize,
    pub listing_above: usize,
    pub listing_keep: usize,
    /// Of each traceback's frames in the agent's own code, how many of the first and of the last stay.
    pub frames_first: usize,
    pub frames_last: usize,
    /// The fewest `ls -l` lines a result must hold for their columns to go; 0 keeps them always.
    pub long_listing_min: usize,
    /// An API result that is one JSON value longer than this many characters has its lists of records cut.
    pub json_above: usize,
    /// Of a list of records, how many of the first stay whole; 0 leaves JSON results as they are.
    pub json_items: usize,
    /// Whether a record fetched again leaves out the fields shown elsewhere for the same record.
    pub record_fields: bool,
    pub strip_line_numbers: bool,
    /// The least share of the result's characters an excerpt must save to be worth breaking the cache for.
    pub min_saving: f64,
    shell: ShellReads,
}

impl Default for Excerpt {
    fn default() -> Self {
        Excerpt {
            min_run: 3,
            log_above: 300,
            log_head: 2,
            log_tail: 4,
            listing_above: 2_000,
            listing_keep: 20,
            frames_first: 1,
            frames_last: 3,
            long_listing_min: 5,
            json_above: 2_000,
            json_items: 1,
            record_fields: true,
            strip_line_numbers: true,
            min_saving: 0.1,
            shell: ShellReads::default(),
        }
    }
}

/// The last line of an excerpt with gaps starts with this.
const TRAILER: &str = "[excerpt of a stale result — ";

/// The text above the trailer of an excerpt whose trailer says `note`.
fn excerpt_body<'a>(cut: &'a str, note: &str) -> Option<&'a str> {
    let (body, last) = cut.rsplit_once('\n')?;
    (last.starts_with(TRAILER) && last.contains(note)).then_some(body)
}

/// Is each of `pieces` in `original`, one after the other?
fn found_in_order<'a>(original: &str, pieces: impl IntoIterator<Item = &'a str>) -> bool {
    let mut rest = original;
    pieces.into_iter().all(|piece| match rest.find(piece) {
        Some(at) => {
            rest = &rest[at + piece.len()..];
            true
        }
        None => false,
    })
}

/// Is this text already an excerpt this rule wrote?
pub fn is_excerpt(text: &str) -> bool {
    let last = text.rsplit('\n').next().unwrap_or("");
    let first = text.split('\n').next().unwrap_or("");
    (last.starts_with(TRAILER) && last.ends_with(']'))
        || (first.starts_with(NUMBERS_HEADER) && first.contains("; numbers dropped, count from "))
}

impl Excerpt {
    /// How to get a result back whole, for its trailer: re-read the file, re-run the command, call the tool.
    fn how_to_restore(
        &self,
        kind: ContentKind,
        ctx: &RuleContext<'_>,
        target: &OnceCell<Option<ReadTarget>>,
    ) -> String {
        let target = target.get_or_init(|| read_target(ctx.tool_name, ctx.input, &self.shell));
        match (kind, target) {
            (_, Some(target)) => format!("re-read {} for the full text", target.path),
            (
                ContentKind::Read | ContentKind::Listing | ContentKind::Log | ContentKind::Document,
                None,
            ) if shell_command(ctx.input).is_some() => {
                "re-run the command for its full output".to_owned()
            }
            _ => format!("call {} again for the full result", ctx.tool_name),
        }
    }
}

impl RetentionRule for Excerpt {
    fn name(&self) -> &'static str {
        "excerpt"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        let texts: Option<Vec<&str>> = ctx.content.blocks.iter().map(Block::as_text).collect();
        let Some(texts) = texts.filter(|t| !t.is_empty()) else {
            // images, documents: not lines
            return Decision::Defer;
        };
        // one block (most results) read in place; several joined by line breaks
        let text: std::borrow::Cow<'_, str> = match texts.as_slice() {
            [one] => (*one).into(),
            _ => texts.join("\n").into(),
        };
        let text = text.as_ref();
        // (the call's read target, looked for once: the kind and the trailer both ask)
        let target = OnceCell::new();
        let kind = self.kind_of(ctx.tool_kind, ctx.tool_name, ctx.input, text, &target);
        if is_excerpt(text) {
            // compacted before: as final as if it had been cut here
            return Decision::Keep;
        }
        if kind == ContentKind::Other && self.json_items > 0 && text.len() > self.json_above {
            if let Some((kept, cut)) = json::records_excerpt(text, self.json_items) {
                let out = format!(
                    "{kept}\n{TRAILER}{RECORDS_NOTE}{cut} later one{s} (`{LEFT_OUT}` marks what was left \
                     out); call {tool} again for the full result]",
                    s = if cut == 1 { "" } else { "s" },
                    LEFT_OUT = json::LEFT_OUT.trim(),
                    tool = ctx.tool_name,
                );
                if (out.len() as f64) <= (1.0 - self.min_saving) * text.len() as f64 {
                    return Decision::Replace(Content::text(out));
                }
            }
        }
        if self.record_fields && matches!(kind, ContentKind::Other | ContentKind::Document) {
            if let Some(kept) = record_excerpt(text, ctx.shown) {
                let out = format!(
                    "{kept}\n{TRAILER}{FIELDS_NOTE}{}]",
                    self.how_to_restore(kind, ctx, &target)
                );
                if (out.len() as f64) <= (1.0 - self.min_saving) * text.len() as f64 {
                    return Decision::Replace(Content::text(out));
                }
            }
        }
        let lines: Vec<&str> = split_lines(text);

        // 1. runs of lines shown elsewhere
        let mut slots = shown_runs(&lines, ctx.shown, self.min_run);
        let kept_chars = |slots: &[Slot]| -> usize {
            slots
                .iter()
                .map(|s| match s {
                    Slot::Line(i) => lines[*i].len() + 1,
                    _ => 0,
                })
                .sum()
        };

        // 2. logs: head, tail and outcomes; 3. listings: the first lines
        if kind == ContentKind::Log && kept_chars(&slots) > self.log_above {
            let total = slots.iter().filter(|s| matches!(s, Slot::Line(_))).count();
            let (head, tail) = (self.log_head, self.log_tail);
            let between = frames_between(&lines, self.frames_first, self.frames_last);
            slots = omit_lines(slots, &lines, |nth, i| {
                nth < head
                    || nth + tail >= total
                    || (reports_outcome(lines[i]) && !library_frame(lines[i]) && !between[i])
            });
        } else if kind == ContentKind::Listing && kept_chars(&slots) > self.listing_above {
            let keep = self.listing_keep;
            slots = omit_lines(slots, &lines, |nth, _| nth < keep);
        }

        // 4. the number column of a numbered read
        let numbers = if self.strip_line_numbers {
            consecutive_numbers(&lines)
        } else {
            None
        };
        // 5. the columns of a long listing
        let mut names: Vec<Option<LongLine>> = vec![None; lines.len()];
        if kind != ContentKind::Read && self.long_listing_min > 0 {
            for slot in &slots {
                if let Slot::Line(i) = *slot {
                    names[i] = long_listing_line(lines[i]);
                }
            }
            if names.iter().flatten().count() < self.long_listing_min {
                names.fill(None);
            }
        }
        let long_lines = names.iter().flatten().count();
        let has_gap = long_lines > 0 || slots.iter().any(|s| gap_len(s) > 0);
        // a read is final as it is (later reads leave out what it shows); anything else is left to the next
        // rule of the profile
        let unchanged = match kind {
            ContentKind::Read => Decision::Keep,
            _ => Decision::Defer,
        };
        if !has_gap && numbers.is_none() {
            return unchanged;
        }

        let mut out = String::with_capacity(text.len() / 2);
        if let Some(first) = numbers {
            let last =
                first + lines.iter().filter(|l| line_number_prefix(l) > 0).count() as u64 - 1;
            out.push_str(&format!(
                "{NUMBERS_HEADER}{first}–{last}; numbers dropped, count from {first}]\n"
            ));
        }
        let mut named = false;
        for slot in &slots {
            match *slot {
                Slot::Line(i) => match (numbers, names[i].clone()) {
                    (_, Some((mode, name))) => {
                        if !named {
                            named = true;
                            out.push_str(&format!(
                                "{NAMES_HEADER}{long_lines} long-listing lines left out]\n"
                            ));
                        }
                        out.push_str(&lines[i][mode]);
                        out.push(' ');
                        out.push_str(&lines[i][name]);
                    }
                    (Some(_), None) => out.push_str(&lines[i][line_number_prefix(lines[i])..]),
                    (None, None) => out.push_str(lines[i]),
                },
                Slot::Shown(n) => out.push_str(&format!(
                    "[… {n} line{} shown elsewhere in this conversation]",
                    if n == 1 { "" } else { "s" }
                )),
                Slot::Omitted(n) => out.push_str(&format!(
                    "[… {n} line{} omitted]",
                    if n == 1 { "" } else { "s" }
                )),
            }
            out.push('\n');
        }
        if has_gap {
            out.push_str(&format!(
                "{TRAILER}{}]",
                self.how_to_restore(kind, ctx, &target)
            ));
        } else {
            out.pop();
        }
        if (out.len() as f64) > (1.0 - self.min_saving) * text.len() as f64 {
            return unchanged;
        }
        Decision::Replace(Content::text(out))
    }
}

/// The parameters: the rule's fields, and `shell_patterns` (regexes of shell reads).
#[derive(serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Params {
    min_run: usize,
    log_above: usize,
    log_head: usize,
    log_tail: usize,
    listing_above: usize,
    listing_keep: usize,
    frames_first: usize,
    frames_last: usize,
    long_listing_min: usize,
    json_above: usize,
    json_items: usize,
    record_fields: bool,
    strip_line_numbers: bool,
    min_saving: f64,
    shell_patterns: Option<Vec<String>>,
}

impl Default for Params {
    fn default() -> Self {
        let r = Excerpt::default();
        Params {
            min_run: r.min_run,
            log_above: r.log_above,
            log_head: r.log_head,
            log_tail: r.log_tail,
            listing_above: r.listing_above,
            listing_keep: r.listing_keep,
            frames_first: r.frames_first,
            frames_last: r.frames_last,
            long_listing_min: r.long_listing_min,
            json_above: r.json_above,
            json_items: r.json_items,
            record_fields: r.record_fields,
            strip_line_numbers: r.strip_line_numbers,
            min_saving: r.min_saving,
            shell_patterns: None,
        }
    }
}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    let p: Params = read_params("excerpt", params)?;
    if !(0.0..1.0).contains(&p.min_saving) {
        return Err(RuleConfigError::new(
            "excerpt",
            "`min_saving` must be a number from 0 to below 1",
        ));
    }
    let shell = match &p.shell_patterns {
        Some(patterns) => {
            let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
            ShellReads::new(&patterns).map_err(|e| RuleConfigError::new("excerpt", e))?
        }
        None => ShellReads::default(),
    };
    Ok(Box::new(Excerpt {
        min_run: p.min_run,
        log_above: p.log_above,
        log_head: p.log_head,
        log_tail: p.log_tail,
        listing_above: p.listing_above,
        listing_keep: p.listing_keep,
        frames_first: p.frames_first,
        frames_last: p.frames_last,
        long_listing_min: p.long_listing_min,
        json_above: p.json_above,
        json_items: p.json_items,
        record_fields: p.record_fields,
        strip_line_numbers: p.strip_line_numbers,
        min_saving: p.min_saving,
        shell,
    }))
}

register_rule!(
    name: "excerpt",
    tools: &["*"],
    summary: "leave out runs of lines shown elsewhere; logs keep head, tail and outcomes; listings their first lines; `ls -l` lines their mode and name; long JSON lists of records their first items and the others' first field; a record fetched again the fields that changed; drop read line numbers",
    factory: build,
);
