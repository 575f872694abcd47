//! The Markdown writer: an explicit-stack walk over the DOM (no recursion on depth).

use std::rc::Rc;

use markup5ever_rcdom::{Handle, NodeData};

use crate::strip::{dropped, BLOCKS, HEADINGS};
use crate::{attr, descendants, resolve_url, tag, StripLevel};

/// Characters that show nothing and part no words: the soft hyphen (a hyphenation hint, written into words by
/// some sites every few letters: `Mag\u{ad}da\u{ad}le\u{ad}ner`), the zero-width space, the word joiner and a
/// stray byte-order mark. Left out of the text, they would split its words for a reader searching it and cost
/// tokens.
fn invisible(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{200b}' | '\u{2060}' | '\u{feff}')
}

/// A text without its [`invisible`] characters (borrowed when it has none, as nearly every text).
pub(crate) fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    // the UTF-8 lead bytes of those characters: most texts hold none of them and are not decoded
    if memchr::memchr3(0xc2, 0xe2, 0xef, text.as_bytes()).is_none() || !text.contains(invisible) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.chars().filter(|&c| !invisible(c)).collect())
}

/// Escape what Markdown would read as markup in plain text.
pub fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

/// [`escape_markdown`] written onto `out`: most words hold nothing to escape and are copied as they are.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    if !text
        .bytes()
        .any(|b| matches!(b, b'\\' | b'*' | b'`' | b'[' | b']' | b'_'))
    {
        out.push_str(text);
        return;
    }
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let at_edge = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_none_or(|c| !c.is_alphanumeric())
        };
        match c {
            '\\' | '*' | '`' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '_' if at_edge(i.checked_sub(1)) || at_edge(Some(i + 1)) => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
}

/// Where a word that would open a block at the start of a line — a heading's `#`, a list's `-`, `+` or `1.`, a
/// quote's `>`, a fence's `~~~`, a rule or a heading's underline (`---`, `===`) — takes the backslash that makes it
/// text (`\#`, `1\.`); `None` for any other word. (Stars, backticks and underscores are escaped wherever they
/// stand.)
fn block_mark(word: &str) -> Option<usize> {
    let digits = word.bytes().take_while(u8::is_ascii_digit).count();
    let only = |c: u8| word.bytes().all(|b| b == c);
    if (1..=9).contains(&digits) && matches!(&word[digits..], "." | ")") {
        Some(digits)
    } else if only(b'#')
        || only(b'-')
        || only(b'=')
        || word == "+"
        || word.starts_with('>')
        || word.starts_with("~~~")
    {
        Some(0)
    } else {
        None
    }
}

/// A word of text written escaped ([`push_escaped`]), and, when it opens a line (`opens_line`), with the backslash
/// that keeps a block's mark ([`block_mark`]) text.
pub(crate) fn push_word(out: &mut String, word: &str, opens_line: bool) {
    match block_mark(word).filter(|_| opens_line) {
        Some(at) => {
            push_escaped(out, &word[..at]);
            out.push('\\');
            push_escaped(out, &word[at..]);
        }
        None => push_escaped(out, word),
    }
}

struct List {
    ordered: bool,
    next: usize,
}

/// The writer's place before a link's `[`: a link that shows no text leaves nothing of what was written for it —
/// the space before it, a line's prefix, the inline markup opened before it (written with the `[`, as with a
/// word), the `[`.
struct Before {
    len: usize,
    at_line_start: bool,
    pending_space: bool,
    /// The first entry of the inline markup stack not written yet.
    unwritten: usize,
}

struct Writer {
    out: String,
    prefixes: Vec<String>,
    at_line_start: bool,
    pending_space: bool,
    pre: usize,
    /// The fence of each open code block: three backticks, or a run longer than any in its text.
    fences: Vec<String>,
    lists: Vec<List>,
    /// For each open `<a>`: its resolved URL, where its text starts and the writer as it was before its `[`, or
    /// `None` for a link not written.
    links: Vec<Option<(String, usize, Before)>>,
    /// Open inline markup (`**`, `*`, `` ` ``), innermost last, and whether it is written yet: markup is written
    /// with the first word inside it, so that a space before that word goes before the markup, and markup
    /// around no text at all is never written.
    inline: Vec<(&'static str, bool)>,
    /// Open code spans written (`inline` entries of backticks): inside one, Markdown reads every character as it
    /// is, so words are written without escapes.
    code: usize,
    /// For each open list item and heading: where its line started and where its marker (`- `, `## `) starts —
    /// an item or heading that writes nothing after its marker is taken back whole (a list of icon links).
    markers: Vec<Option<(usize, usize)>>,
}

impl Writer {
    fn prefix(&mut self) {
        if self.at_line_start {
            for p in &self.prefixes {
                self.out.push_str(p);
            }
            self.at_line_start = false;
        }
    }

    fn trim_trailing_spaces(&mut self) {
        while self.out.ends_with(' ') {
            self.out.pop();
        }
    }

    fn newline(&mut self) {
        self.trim_trailing_spaces();
        self.out.push('\n');
        self.at_line_start = true;
        self.pending_space = false;
    }

    /// Inside a link that is written: blocks (a card of heading and teaser wrapped in `<a>`) become spaces, since
    /// a Markdown link cannot span blank lines.
    fn in_link(&self) -> bool {
        self.links.iter().any(Option::is_some)
    }

    /// End the current line, if any.
    fn line_break(&mut self) {
        if self.in_link() {
            self.pending_space = true;
            return;
        }
        if !self.out.is_empty() && !self.at_line_start {
            self.newline();
        }
        self.pending_space = false;
    }

    /// A blank line before the next block.
    fn block(&mut self) {
        if self.out.is_empty() {
            return;
        }
        if self.in_link() {
            self.pending_space = true;
            return;
        }
        self.line_break();
        let trimmed = self.out.trim_end_matches([' ', '>']);
        if !trimmed.ends_with("\n\n") {
            self.newline();
        }
    }

    fn open(&mut self, markup: &str) {
        if self.pending_space && !self.at_line_start {
            self.out.push(' ');
        }
        self.pending_space = false;
        self.prefix();
        self.flush_inline();
        self.out.push_str(markup);
    }

    /// Write a block's marker at the start of its line, to be taken back by `unmark` if nothing follows it.
    fn mark(&mut self, marker: &str) {
        let line = self.out.len();
        self.open("");
        self.markers.push(Some((line, self.out.len())));
        self.out.push_str(marker);
    }

    /// Take back the marker of the item or heading that ends here if it shows nothing: after the marker only
    /// white space, the line breaks of its empty blocks and their quote marks were written.
    fn unmark(&mut self) {
        if let Some(Some((line, marker))) = self.markers.pop() {
            let Some(rest) = self.out.get(marker..) else {
                return;
            };
            let rest = rest
                .trim_start_matches(|c: char| matches!(c, '-' | '#' | '.') || c.is_ascii_digit());
            if rest.chars().all(|c| c.is_whitespace() || c == '>') {
                self.out.truncate(marker);
                // the pending space and the line's prefixes before the marker go with it (not inline markup)
                while self.out.len() > line && self.out.ends_with([' ', '>']) {
                    self.out.pop();
                }
                self.at_line_start = self.out.is_empty() || self.out.ends_with('\n');
                // (inside a link the marker followed a space, taken back with it)
                self.pending_space = !self.at_line_start;
            }
        }
    }

    fn close(&mut self, markup: &str) {
        self.prefix();
        self.out.push_str(markup);
    }

    /// A `<br>`: a new line, or a space inside a link.
    fn hard_break(&mut self) {
        if self.in_link() {
            self.pending_space = true;
        } else {
            self.newline();
        }
    }

    /// Open inline markup; inert (written as nothing) inside the same markup or inside code, where Markdown would
    /// show it as stray asterisks or backticks: `<b><strong>x</strong></b>` is `**x**`, not `****x****`.
    fn open_inline(&mut self, markup: &'static str) {
        let inert = self.code > 0 || (self.inline.iter()).any(|(open, _)| *open == markup);
        let markup = if inert { "" } else { markup };
        self.code += usize::from(markup.starts_with('`'));
        self.inline.push((markup, false));
    }

    /// The first entry of the inline markup stack not written yet.
    fn unwritten(&self) -> usize {
        self.inline
            .iter()
            .rposition(|(_, written)| *written)
            .map_or(0, |i| i + 1)
    }

    /// Write the inline markup opened since the last word.
    fn flush_inline(&mut self) {
        let from = self.unwritten();
        for (markup, written) in &mut self.inline[from..] {
            self.out.push_str(markup);
            *written = true;
        }
    }

    fn close_inline(&mut self) {
        let Some((markup, written)) = self.inline.pop() else {
            return;
        };
        self.code = self
            .code
            .saturating_sub(usize::from(markup.starts_with('`')));
        if written {
            match markup.strip_suffix(' ') {
                // a code span whose text holds backticks (`` a`b ``): the space before its closing mark
                Some(code) => {
                    self.close(" ");
                    self.close(code);
                }
                None if !markup.is_empty() => self.close(markup),
                None => {}
            }
        }
    }

    /// Is nothing written after a list item's marker (`- `, `3. `) yet?
    fn after_item_marker(&self) -> bool {
        let Some(Some((_, marker))) = self.markers.last() else {
            return false;
        };
        let after = self.out.get(*marker..).unwrap_or_default();
        after == "- "
            || after
                .strip_suffix(". ")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }

    fn text(&mut self, s: &str) {
        let s = &*visible(s);
        if self.pre > 0 {
            for (i, line) in s.split('\n').enumerate() {
                if i > 0 {
                    self.out.push('\n');
                    self.at_line_start = true;
                }
                if !line.is_empty() {
                    self.prefix();
                    self.out.push_str(line);
                }
            }
            return;
        }
        for word in s.split(|c: char| c.is_whitespace()) {
            if word.is_empty() {
                self.pending_space = true;
                continue;
            }
            if self.pending_space && !self.at_line_start && !self.out.ends_with([' ', '[', '(']) {
                self.out.push(' ');
            }
            self.pending_space = true;
            // the first word of a line, or of a list item, would start a block if it reads as a block's mark
            let first = self.at_line_start || self.after_item_marker();
            self.prefix();
            let bare = self.unwritten() == self.inline.len();
            self.flush_inline();
            if self.code > 0 {
                self.out.push_str(word);
            } else {
                push_word(&mut self.out, word, first && bare);
            }
        }
        if !s.ends_with(|c: char| c.is_whitespace()) {
            self.pending_space = false;
        }
    }
}

/// Text of a subtree for a table cell: flattened, whitespace collapsed, pipes escaped.
fn cell_text(cell: &Handle, level: StripLevel) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut stack = vec![Rc::clone(cell)];
    while let Some(node) = stack.pop() {
        if dropped(&node, level) {
            continue;
        }
        if let NodeData::Text { contents } = &node.data {
            words.extend(
                visible(&contents.borrow())
                    .split_whitespace()
                    .map(|w| escape_markdown(w).replace('|', "\\|")),
            );
        }
        stack.extend(node.children.borrow().iter().rev().cloned());
    }
    words.join(" ")
}

/// The mark of an inline code span: one backtick, or, when its text holds backticks, a run longer than any in it
/// with a space inside (`` `` a`b `` ``), as Markdown reads no escapes in code.
fn code_mark(code: &Handle) -> &'static str {
    match longest_backticks(code) {
        0 => "`",
        1 => "`` ",
        2 => "``` ",
        _ => "```` ",
    }
}

/// The longest run of backticks in an element's text nodes: its code's mark must be longer.
fn longest_backticks(node: &Handle) -> usize {
    let mut longest = 0;
    for node in descendants(node) {
        if let NodeData::Text { contents } = &node.data {
            let mut run = 0;
            for c in contents.borrow().chars() {
                run = if c == '`' { run + 1 } else { 0 };
                longest = longest.max(run);
            }
        }
    }
    longest
}

/// A table that is laid out with blocks inside cells is not data: render its content as blocks.
fn is_layout_table(table: &Handle) -> bool {
    descendants(table).any(|node| {
        matches!(
            tag(&node),
            Some("table" | "p" | "div" | "ul" | "ol" | "h1" | "h2" | "h3" | "blockquote" | "pre")
        )
    })
}

fn table_rows(table: &Handle, level: StripLevel) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut stack: Vec<Handle> = table.children.borrow().iter().rev().cloned().collect();
    while let Some(node) = stack.pop() {
        match tag(&node) {
            Some("tr") => {
                let mut cells = Vec::new();
                for cell in node.children.borrow().iter() {
                    if matches!(tag(cell), Some("td" | "th")) {
                        let span = attr(cell, "colspan")
                            .and_then(|s| s.trim().parse::<usize>().ok())
                            .unwrap_or(1);
                        cells.push(cell_text(cell, level));
                        for _ in 1..span.clamp(1, 50) {
                            cells.push(String::new());
                        }
                    }
                }
                rows.push(cells);
            }
            Some("table") => {}
            _ => stack.extend(node.children.borrow().iter().rev().cloned()),
        }
    }
    rows.retain(|r| r.iter().any(|c| !c.is_empty()));
    rows
}

fn write_table(w: &mut Writer, rows: &[Vec<String>]) {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    if width == 0 {
        return;
    }
    w.block();
    for (i, row) in rows.iter().enumerate() {
        let mut line = String::from("|");
        for c in 0..width {
            line.push(' ');
            line.push_str(row.get(c).map_or("", String::as_str));
            line.push_str(" |");
        }
        w.open(&line);
        w.newline();
        if i == 0 {
            w.open(&format!("|{}", " --- |".repeat(width)));
            w.newline();
        }
    }
    w.block();
}

fn code_language(node: &Handle) -> String {
    let mut candidates = vec![Rc::clone(node)];
    candidates.extend(
        node.children
            .borrow()
            .iter()
            .filter(|c| tag(c) == Some("code"))
            .cloned(),
    );
    for c in candidates {
        if let Some(class) = attr(&c, "class") {
            for word in class.split_whitespace() {
                if let Some(lang) = word
                    .strip_prefix("language-")
                    .or_else(|| word.strip_prefix("lang-"))
                {
                    return lang.to_owned();
                }
            }
        }
    }
    String::new()
}

enum Step {
    Enter(Handle),
    Exit(Handle),
}

/// Visit `node`'s children next, first child first.
fn enter_children(stack: &mut Vec<Step>, node: &Handle) {
    stack.extend(
        node.children
            .borrow()
            .iter()
            .rev()
            .map(|c| Step::Enter(Rc::clone(c))),
    );
}

/// Longest copyright note the aggressive level leaves out of a text: a photo's credit, a site's rights line.
const CREDIT: usize = 100;

/// A text without the copyright note that ends it: from a `©` at its start, or after the end of a sentence or a
/// `|`, to its end, when that is short ("… stands in the rain. © AFP / Jeff Pachoud", "© Government/Kugler",
/// "© 2020 General Mills All Rights Reserved"); after a label of a word or two, the whole text ("(Image: © TNG
/// Collaboration)", "Textquelle: © LAOLA1.at"). A `©` inside a sentence, or before much more text, stays.
fn without_credit(text: &str) -> &str {
    let Some(at) = text.find('©') else {
        return text;
    };
    if text[at..].chars().filter(|c| !c.is_whitespace()).count() > CREDIT {
        return text;
    }
    let before = text[..at].trim_end();
    let kept = before.trim_end_matches('|').trim_end();
    // a label of a word or two before it ("(Image: © TNG Collaboration)", "Foto: © dpa"): the text is the credit
    let labelled = before.ends_with(':')
        && before.split_whitespace().count() <= 2
        && before.chars().filter(|c| c.is_alphabetic()).count() <= 12;
    if labelled {
        ""
    } else if before.is_empty() || before.ends_with('|') || kept.ends_with(['.', '!', '?']) {
        kept
    } else {
        text
    }
}

/// Markdown of `root` at `level`; the elements of `also_dropped` (by address) are left out with their content, and
/// at the aggressive level a text's ending copyright note ([`without_credit`]).
pub(crate) fn render(
    root: &Handle,
    level: StripLevel,
    base: Option<&str>,
    also_dropped: &std::collections::HashSet<*const markup5ever_rcdom::Node>,
) -> String {
    let mut w = Writer {
        out: String::new(),
        prefixes: Vec::new(),
        at_line_start: true,
        pending_space: false,
        pre: 0,
        fences: Vec::new(),
        lists: Vec::new(),
        links: Vec::new(),
        inline: Vec::new(),
        code: 0,
        markers: Vec::new(),
    };
    let mut stack = vec![Step::Enter(Rc::clone(root))];
    while let Some(step) = stack.pop() {
        match step {
            Step::Enter(node) => {
                match &node.data {
                    NodeData::Text { contents } => {
                        let text = contents.borrow();
                        w.text(match level {
                            StripLevel::Aggressive => without_credit(&text),
                            _ => &text,
                        });
                        continue;
                    }
                    NodeData::Element { .. } => {}
                    NodeData::Document => {
                        enter_children(&mut stack, &node);
                        continue;
                    }
                    _ => continue,
                }
                // the root is what the caller asked for (the main content): never dropped itself
                if !Rc::ptr_eq(&node, root)
                    && (dropped(&node, level) || also_dropped.contains(&Rc::as_ptr(&node)))
                {
                    continue;
                }
                let t = tag(&node).unwrap_or("");
                let mut descend = true;
                match t {
                    t if HEADINGS.contains(&t) && !w.in_link() => {
                        w.block();
                        let n = t[1..].parse::<usize>().unwrap_or(1);
                        w.mark(&format!("{} ", "#".repeat(n)));
                    }
                    t if HEADINGS.contains(&t) => w.markers.push(None),
                    t if BLOCKS.contains(&t) => w.block(),
                    "br" => w.hard_break(),
                    "hr" => {
                        w.block();
                        w.open("---");
                        w.block();
                    }
                    "ul" | "ol" => {
                        if w.lists.is_empty() {
                            w.block();
                        } else {
                            w.line_break();
                        }
                        let start = attr(&node, "start")
                            .and_then(|s| s.trim().parse().ok())
                            .unwrap_or(1);
                        w.lists.push(List {
                            ordered: t == "ol",
                            next: start,
                        });
                    }
                    "li" => {
                        w.line_break();
                        let marker = match w.lists.last_mut() {
                            Some(l) if l.ordered => {
                                l.next += 1;
                                format!("{}. ", l.next - 1)
                            }
                            _ => "- ".to_owned(),
                        };
                        w.mark(&marker);
                        w.prefixes.push(" ".repeat(marker.len()));
                    }
                    "blockquote" => {
                        w.block();
                        w.prefixes.push("> ".to_owned());
                    }
                    "pre" => {
                        w.block();
                        let lang = code_language(&node);
                        // (an outer block's fence is written already: a block inside one is not searched again)
                        let longest = if w.pre == 0 {
                            longest_backticks(&node)
                        } else {
                            0
                        };
                        let fence = "`".repeat(longest.max(2) + 1);
                        w.open(&format!("{fence}{lang}"));
                        w.fences.push(fence);
                        w.newline();
                        w.pre += 1;
                    }
                    // (inside code, code is inert: its text is not searched again)
                    "code" | "kbd" | "samp" if w.pre == 0 && w.code > 0 => w.open_inline("`"),
                    "code" | "kbd" | "samp" if w.pre == 0 => w.open_inline(code_mark(&node)),
                    "strong" | "b" if w.pre == 0 => w.open_inline("**"),
                    "em" | "i" if w.pre == 0 => w.open_inline("*"),
                    "a" => {
                        let href = attr(&node, "href").unwrap_or_default();
                        if href.trim().is_empty() || names_no_page(&href) {
                            w.links.push(None);
                        } else {
                            let before = Before {
                                len: w.out.len(),
                                at_line_start: w.at_line_start,
                                pending_space: w.pending_space,
                                unwritten: w.unwritten(),
                            };
                            w.open("[");
                            let start = w.out.len();
                            w.links
                                .push(Some((resolve_url(base, &href), start, before)));
                        }
                    }
                    "table" => {
                        if !is_layout_table(&node) {
                            let rows = table_rows(&node, level);
                            write_table(&mut w, &rows);
                            descend = false;
                        } else {
                            w.block();
                        }
                    }
                    "tr" | "td" | "th" => w.line_break(),
                    _ => {}
                }
                if descend {
                    stack.push(Step::Exit(Rc::clone(&node)));
                    enter_children(&mut stack, &node);
                }
            }
            Step::Exit(node) => match tag(&node).unwrap_or("") {
                t if HEADINGS.contains(&t) => {
                    w.unmark();
                    w.block();
                }
                t if BLOCKS.contains(&t) || t == "table" => w.block(),
                "ul" | "ol" => {
                    w.lists.pop();
                    if w.lists.is_empty() {
                        w.block();
                    } else {
                        w.line_break();
                    }
                }
                "li" => {
                    w.prefixes.pop();
                    w.unmark();
                    w.line_break();
                }
                "blockquote" => {
                    w.prefixes.pop();
                    w.block();
                }
                "pre" => {
                    w.pre = w.pre.saturating_sub(1);
                    w.line_break();
                    let fence = w.fences.pop().unwrap_or_else(|| "```".to_owned());
                    w.open(&fence);
                    w.block();
                }
                "code" | "kbd" | "samp" | "strong" | "b" | "em" | "i" if w.pre == 0 => {
                    w.close_inline()
                }
                "a" => {
                    if let Some(Some((url, start, before))) = w.links.pop() {
                        if w.out.len() == start {
                            // no link text: take back what was written for it (the markup stack is as it was
                            // at the `[`: what opened inside the link has closed)
                            w.out.truncate(before.len);
                            w.at_line_start = before.at_line_start;
                            // (a space pending before the link, or inside it: `<a> </a>near`)
                            w.pending_space |= before.pending_space;
                            if let Some(taken_back) = w.inline.get_mut(before.unwritten..) {
                                for (_, written) in taken_back {
                                    *written = false;
                                }
                            }
                        } else {
                            w.close(&format!("]({url})"));
                        }
                    }
                }
                _ => {}
            },
        }
    }
    let mut out = String::with_capacity(w.out.len());
    let mut blank = 0;
    for line in w.out.lines() {
        let line = line.trim_end();
        if line.is_empty() || line.chars().all(|c| c == '>' || c == ' ') {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// Does a link's address run a script or hold its content inline instead of naming a page (`javascript:`,
/// `vbscript:`, `data:`)? Read as browsers read an address: past leading spaces and control characters, with tabs
/// and line breaks left out wherever they stand, the scheme case aside (`" JaVa\tScript:…"` is one). Such a link
/// is written as its text: a reader cannot fetch it, and a `data:` address can be a whole document of base64.
fn names_no_page(href: &str) -> bool {
    let mut scheme = String::new();
    for c in href.trim_start_matches(|c: char| c <= ' ').chars() {
        match c {
            '\t' | '\n' | '\r' => {}
            ':' => return matches!(scheme.as_str(), "javascript" | "vbscript" | "data"),
            _ if scheme.len() >= 10 => return false,
            c => scheme.push(c.to_ascii_lowercase()),
        }
    }
    // no scheme: a relative address (`data`, a page of that name)
    false
}
