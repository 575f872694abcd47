//! Pages nested too deeply for tree construction, and the tokenizer-only writer that cleans them.
//!
//! html5ever builds the tree the HTML standard describes, and the standard's tree construction checks element
//! scopes against the whole stack of open elements: each `<div>`, `<p>`, `<ul>`, … start tag walks the stack.
//! A page of 100,000 nested `<div>`s (half a megabyte) therefore costs 5·10⁹ steps — half a minute — while
//! real pages are a few dozen elements deep. [`tree_is_too_costly`] estimates that cost with one linear scan
//! over the bytes; pages above the limit are cleaned by [`render_flat`] instead: html5ever's tokenizer alone
//! (linear), with the strip level's rules applied to each element, and text written as paragraphs and
//! headings. Structure (lists, tables, links) is lost on such pages; nothing else is. The estimate also counts
//! the standard's other quadratic step: each formatting element opened (`<b>`, `<font>`, …) is compared with
//! those of the list of active formatting elements, which keeps every unclosed one with attributes of its own.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

use crate::render::{push_word, visible};
use crate::strip::{dropped_element, BLOCKS, HEADINGS};
use crate::StripLevel;

/// What the pre-scan and the flat writer need to know of a tag name (lower case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kind {
    /// The start tag makes the tree builder look for an open `<p>` through the stack of open elements.
    scope_check: bool,
    /// The element stays open until its end tag (not void, not closed implicitly by a sibling).
    nests: bool,
    /// Its content is text, not markup.
    raw: bool,
    /// A formatting element (`b`, `i`, `font`, `a`, …): the tree builder compares each one opened with those in
    /// its list of active formatting elements (the standard's "Noah's Ark" clause), attributes and all.
    formatting: bool,
    /// Its start and its end put a marker in that list, or clear it to one (`td`, `th`, `caption`, …): the
    /// comparisons reach back to the last marker only.
    marker: bool,
}

fn kind(name: &[u8]) -> Kind {
    Kind {
        scope_check: matches!(
            name,
            b"address"
                | b"article"
                | b"aside"
                | b"blockquote"
                | b"center"
                | b"details"
                | b"dialog"
                | b"dir"
                | b"div"
                | b"dl"
                | b"fieldset"
                | b"figcaption"
                | b"figure"
                | b"footer"
                | b"header"
                | b"hgroup"
                | b"main"
                | b"menu"
                | b"nav"
                | b"ol"
                | b"p"
                | b"search"
                | b"section"
                | b"summary"
                | b"ul"
                | b"h1"
                | b"h2"
                | b"h3"
                | b"h4"
                | b"h5"
                | b"h6"
                | b"pre"
                | b"listing"
                | b"form"
                | b"table"
                | b"hr"
                | b"xmp"
        ),
        nests: !matches!(
            name,
            b"area"
                | b"base"
                | b"br"
                | b"col"
                | b"embed"
                | b"hr"
                | b"img"
                | b"input"
                | b"link"
                | b"meta"
                | b"source"
                | b"track"
                | b"wbr"
                | b"param"
                | b"p"
                | b"li"
                | b"dt"
                | b"dd"
                | b"option"
                | b"optgroup"
                | b"tr"
                | b"td"
                | b"th"
                | b"thead"
                | b"tbody"
                | b"tfoot"
                | b"rb"
                | b"rt"
                | b"rp"
                | b"colgroup"
                | b"caption"
        ),
        raw: matches!(
            name,
            b"script"
                | b"style"
                | b"textarea"
                | b"title"
                | b"xmp"
                | b"iframe"
                | b"noembed"
                | b"noframes"
                | b"plaintext"
        ),
        formatting: matches!(
            name,
            b"a" | b"b"
                | b"big"
                | b"code"
                | b"em"
                | b"font"
                | b"i"
                | b"nobr"
                | b"s"
                | b"small"
                | b"strike"
                | b"strong"
                | b"tt"
                | b"u"
        ),
        marker: matches!(
            name,
            b"td" | b"th" | b"caption" | b"marquee" | b"object" | b"applet" | b"template"
        ),
    }
}

/// A tag name lower-cased on the stack: its first 12 bytes, zero-padded (no listed name is longer).
fn lower_key(name: &[u8]) -> [u8; 12] {
    let mut k = [0u8; 12];
    let n = name.len().min(12);
    k[..n].copy_from_slice(&name[..n]);
    k.make_ascii_lowercase();
    k
}

/// The kind of a tag name in any case (names longer than any listed are ordinary).
fn kind_of(name: &[u8]) -> Kind {
    match name.len() {
        0..=12 => kind(&lower_key(name)[..name.len()]),
        _ => kind(b""),
    }
}

/// Scope-check steps above which the tokenizer-only writer is used: a fixed allowance (about 0.2 s of tree
/// construction) plus 64 per byte, far above any real page (of the 616 of the three page sets, the most is
/// 160,000 steps, 0.6 per byte: a tenth of the allowance is still far above, as a test checks).
fn step_limit(len: usize) -> u64 {
    30_000_000 + 64 * len as u64
}

/// Scope-check steps one comparison of two formatting elements counts for: it copies and sorts both tags'
/// attributes (about 700 instructions, where a step of a scope check takes about 20).
const FORMATTING_WEIGHT: u64 = 32;

/// Would building the tree of this page cost more than [`step_limit`]? One pass over the bytes: tags are
/// counted by name (content of `<script>`, `<style>` and the like is skipped), the stack of open elements is
/// tracked (an end tag closes the innermost open element of its name among the last [`MATCH_WINDOW`] — with
/// what is open inside it, for a block; alone, for a formatting element; not at all, for another element with
/// a block open inside it — and one that matches none is ignored, as the tree builder does), each
/// scope-checking start tag adds its depth, and so does every end tag (the tree builder walks the stack for
/// its element: 50,000 open `<span>`s and 100,000 stray `</div>`s took it 51 s); the formatting elements open
/// since the last marker are tracked too, and each formatting start tag adds, weighted, how many the tree
/// builder's list holds — all those with attributes, and of those without, at most three of a name (the clause
/// drops the earliest of four alike): 10,000 unclosed `<b id=…>`s (150 KB) took the tree builder 5 s,
/// comparing each with those before it, where 100,000 nested `<b><i>` take milliseconds.
pub(crate) fn tree_is_too_costly(html: &str) -> bool {
    costs_more_than(html, step_limit(html.len()))
}

/// [`tree_is_too_costly`] for a page's head, read for what the page says of itself on top of cleaning it: a
/// tenth of the allowance (far above any real head, or page: at most 160,000 steps), so that a page cleaned
/// just under the limit is not built a second time as long for its head.
pub(crate) fn head_is_too_costly(html: &str) -> bool {
    costs_more_than(html, step_limit(html.len()) / 10)
}

/// Would building the tree of this page cost more than `limit` scope-check steps ([`tree_is_too_costly`])?
fn costs_more_than(html: &str, limit: u64) -> bool {
    let bytes = html.as_bytes();
    let mut steps = 0u64;
    // the open elements: name, lower case (the first 12 bytes of longer ones), and whether it is a block the
    // tree builder's "any other end tag" stops at
    let mut open: Vec<([u8; 12], bool)> = Vec::new();
    let mut formatting = Formatting::default();
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'<', &bytes[i..]) {
        i += at + 1;
        let closing = bytes.get(i) == Some(&b'/');
        let start = if closing { i + 1 } else { i };
        let len = bytes[start..]
            .iter()
            .position(|b| !b.is_ascii_alphanumeric())
            .unwrap_or(bytes.len() - start);
        if len == 0 || !bytes[start].is_ascii_alphabetic() {
            continue;
        }
        let name = &bytes[start..start + len];
        let kind = kind_of(name);
        i = start + len;
        if closing {
            steps += open.len() as u64;
            if steps > limit {
                return true;
            }
            let k = lower_key(name);
            let window = open.len().saturating_sub(MATCH_WINDOW);
            let found = open[window..]
                .iter()
                .rposition(|o| o.0 == k)
                .map(|at| window + at);
            match found {
                // a formatting element leaves the blocks opened inside it open (the adoption agency moves them)
                Some(at) if kind.formatting => {
                    open.remove(at);
                }
                // a block's end tag closes what is open inside it
                Some(at) if kind.scope_check => open.truncate(at),
                // any other end tag closes its element unless a block opened since stands in the way
                Some(at) if !open[at + 1..].iter().any(|o| o.1) => open.truncate(at),
                _ => {}
            }
            if kind.formatting {
                formatting.close(name);
            }
            if kind.marker {
                formatting = Formatting::default();
            }
            continue;
        }
        if kind.marker {
            formatting = Formatting::default();
        }
        if kind.scope_check || kind.formatting {
            if kind.scope_check {
                steps += open.len() as u64;
            }
            if kind.formatting {
                steps += FORMATTING_WEIGHT * formatting.listed();
                let bare = bytes[i..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_none_or(|&b| b == b'>' || b == b'/');
                formatting.open(name, bare);
            }
            if steps > limit {
                return true;
            }
        }
        if kind.raw {
            // skip to the matching end tag
            match find_end_tag(bytes, i, name) {
                Some(end) => i = end,
                None => return false,
            }
            continue;
        }
        let self_closing = memchr::memchr(b'>', &bytes[i..])
            .is_some_and(|end| end > 0 && bytes[i + end - 1] == b'/');
        if kind.nests && !self_closing {
            open.push((lower_key(name), kind.scope_check));
        }
    }
    false
}

/// The formatting elements open since the last marker, as the pre-scan counts them: per name, those without
/// attributes (alike: the list keeps three of them at most), and all those with attributes together.
#[derive(Default)]
struct Formatting {
    bare: [u64; 14],
    with_attributes: u64,
}

/// The formatting elements' names, in the order of [`Formatting::bare`].
const FORMATTING_NAMES: [&[u8]; 14] = [
    b"a", b"b", b"big", b"code", b"em", b"font", b"i", b"nobr", b"s", b"small", b"strike",
    b"strong", b"tt", b"u",
];

impl Formatting {
    fn slot(name: &[u8]) -> Option<usize> {
        FORMATTING_NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
    }

    /// How many entries the tree builder's list holds.
    fn listed(&self) -> u64 {
        self.with_attributes + self.bare.iter().map(|&n| n.min(3)).sum::<u64>()
    }

    fn open(&mut self, name: &[u8], bare: bool) {
        match Self::slot(name) {
            Some(k) if bare => self.bare[k] += 1,
            _ => self.with_attributes += 1,
        }
    }

    /// An end tag of `name`: one of its name less (one without attributes, if any is open).
    fn close(&mut self, name: &[u8]) {
        match Self::slot(name) {
            Some(k) if self.bare[k] > 0 => self.bare[k] -= 1,
            _ => self.with_attributes = self.with_attributes.saturating_sub(1),
        }
    }
}

/// Where `</name` (any case) starts at or after `from`.
fn find_end_tag(bytes: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut i = from;
    while let Some(at) = memchr::memchr(b'<', &bytes[i..]) {
        let lt = i + at;
        let rest = &bytes[lt + 1..];
        if rest.first() == Some(&b'/')
            && rest.len() > name.len()
            && rest[1..=name.len()].eq_ignore_ascii_case(name)
        {
            return Some(lt);
        }
        i = lt + 1;
    }
    None
}

/// How many open elements the writer remembers: an end tag is matched against the innermost ones only, so a
/// page of unclosed tags costs linear time.
const MATCH_WINDOW: usize = 64;

struct Flat {
    level: StripLevel,
    out: String,
    /// Open elements, innermost last: (name, whether it started a dropped region).
    open: Vec<(String, bool)>,
    /// How many open elements are dropped regions; text is written only when this is 0.
    dropping: usize,
    pending_space: bool,
    /// Inside a raw-text element whose text is not content (`<script>`, `<style>`, …).
    in_raw: bool,
}

impl Flat {
    fn block(&mut self) {
        while self.out.ends_with(' ') {
            self.out.pop();
        }
        if !self.out.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push_str(if self.out.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            });
        }
        self.pending_space = false;
    }

    fn text(&mut self, s: &str) {
        if self.dropping > 0 || self.in_raw {
            return;
        }
        for word in visible(s).split(char::is_whitespace) {
            if word.is_empty() {
                self.pending_space = true;
                continue;
            }
            if self.pending_space && !self.out.is_empty() && !self.out.ends_with([' ', '\n']) {
                self.out.push(' ');
            }
            self.pending_space = true;
            let opens_line = self.out.is_empty() || self.out.ends_with('\n');
            push_word(&mut self.out, word, opens_line);
        }
        if !s.ends_with(char::is_whitespace) {
            self.pending_space = false;
        }
    }

    fn start(&mut self, tag: &Tag) -> TokenSinkResult<()> {
        let name: &str = &tag.name;
        let attr = |wanted: &str| crate::attr_of(&tag.attrs, wanted);
        // `<head>` is often left open (the parser closes it at `<body>`); what is in it is dropped tag by tag
        // without a tree, what holds prose cannot be told: forms and boilerplate classes are kept, asides not
        let drop = name != "head" && dropped_element(name, &attr, self.level, &|_| name != "aside");
        let kind = kind(name.as_bytes());
        if kind.raw {
            // the content of a raw-text element is text, not tags: it is content only if kept (a textarea)
            self.in_raw = drop || matches!(name, "script" | "style" | "title" | "iframe");
        }
        let nests = !tag.self_closing && kind.nests;
        if drop && nests {
            self.dropping += 1;
        }
        if nests {
            self.open.push((name.to_owned(), drop && nests));
        }
        if self.dropping == 0 {
            if let Some(level) = HEADINGS.iter().position(|h| *h == name) {
                self.block();
                self.out.push_str(&"#".repeat(level + 1));
                self.out.push(' ');
            } else if BLOCKS.contains(&name)
                || matches!(
                    name,
                    "li" | "tr" | "br" | "ul" | "ol" | "table" | "pre" | "blockquote"
                )
            {
                self.block();
            }
        }
        match name {
            "script" => TokenSinkResult::RawData(RawKind::ScriptData),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" => {
                TokenSinkResult::RawData(RawKind::Rawtext)
            }
            "title" | "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
            "plaintext" => TokenSinkResult::Plaintext,
            _ => TokenSinkResult::Continue,
        }
    }

    fn end(&mut self, name: &str) {
        if kind(name.as_bytes()).raw {
            self.in_raw = false;
        }
        let window = self.open.len().saturating_sub(MATCH_WINDOW);
        if let Some(at) = self.open[window..].iter().rposition(|(n, _)| n == name) {
            for (_, dropped) in self.open.drain(window + at..) {
                if dropped {
                    self.dropping -= 1;
                }
            }
        }
        if self.dropping == 0 && (BLOCKS.contains(&name) || HEADINGS.contains(&name)) {
            self.block();
        }
    }
}

struct FlatSink(RefCell<Flat>);

impl TokenSink for FlatSink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut flat = self.0.borrow_mut();
        match token {
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag => return flat.start(&tag),
                TagKind::EndTag => flat.end(&tag.name),
            },
            Token::CharacterTokens(text) => flat.text(&text),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// Clean a page with the tokenizer only: text in document order as paragraphs and headings, with the level's
/// elements dropped.
pub(crate) fn render_flat(html: &str, level: StripLevel) -> String {
    let html = &*crate::floods::defused(html);
    let sink = FlatSink(RefCell::new(Flat {
        level,
        out: String::new(),
        open: Vec::new(),
        dropping: 0,
        pending_space: false,
        in_raw: false,
    }));
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    let mut out = tokenizer.sink.0.into_inner().out;
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn deep_nesting_is_flagged_and_real_pages_are_not() {
        let deep = format!("{}x{}", "<div>".repeat(100_000), "</div>".repeat(100_000));
        assert!(tree_is_too_costly(&deep));
        // the same number of elements side by side, or spans (no scope checks), are cheap
        assert!(!tree_is_too_costly(&"<div>x</div>".repeat(100_000)));
        assert!(!tree_is_too_costly(
            &"<p>unclosed paragraph ".repeat(100_000)
        ));
        // a script full of tags does not count
        let script = format!("<script>{}</script>", "<div>".repeat(100_000));
        assert!(!tree_is_too_costly(&script));
        // formatting elements left open, each with its own attributes: the tree builder compares each with all
        // before it (10,000 took it 5 s); alike ones it keeps three of, and a table cell starts a new list
        let unlike: String = (0..10_000).map(|i| format!("<b id={i}>")).collect();
        assert!(tree_is_too_costly(&format!("{unlike}<p>x")));
        assert!(!tree_is_too_costly(&"<b><i>".repeat(100_000)));
        assert!(!tree_is_too_costly(&"<b class=x>x</b> ".repeat(100_000)));
        // end tags walk the stack too: stray ones over a deep stack, and ones that close nothing because the
        // tree builder leaves the blocks opened inside an element open (a `<b>`, a `<span>` around `<div>`s)
        let spans = "<span>".repeat(50_000);
        assert!(tree_is_too_costly(&format!(
            "{spans}{}",
            "</div>".repeat(100_000)
        )));
        assert!(tree_is_too_costly(&format!(
            "{}{}",
            "<div>".repeat(5_000),
            "</p>".repeat(100_000)
        )));
        for inline in ["b", "span"] {
            let block = format!("<{inline}>{}</{inline}>", "<div>".repeat(50));
            assert!(tree_is_too_costly(&block.repeat(20_000)), "{inline}");
        }
        // while elements closed as they should be, or closed by their block, cost nothing
        assert!(!tree_is_too_costly(
            &"<div><span><b>x</b> y</span></div>".repeat(100_000)
        ));
        assert!(!tree_is_too_costly(
            &"<div><span><i>unclosed</div>".repeat(100_000)
        ));
        let cells: String = (0..20_000)
            .map(|i| format!("<td><font face=f{i}>x"))
            .collect();
        assert!(!tree_is_too_costly(&format!("<table><tr>{cells}</table>")));

        // every page of the three sets, even under the head's tenth of the allowance
        let corpus = ctxfit_testkit::corpus_or_skip!();
        let mut pages = 0;
        for set in ["html", "html-readability", "html-trafilatura"] {
            for entry in std::fs::read_dir(corpus.join(set).join("pages")).unwrap() {
                let path = entry.unwrap().path();
                let mut bytes = Vec::new();
                flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
                    .read_to_end(&mut bytes)
                    .unwrap();
                let html = String::from_utf8_lossy(&bytes);
                assert!(!head_is_too_costly(&html), "{}", path.display());
                pages += 1;
            }
        }
        assert_eq!(pages, 616);
    }

    #[test]
    fn the_flat_writer_applies_the_level() {
        let html = r#"<head><title>T</title><style>.x{}</style></head><body><nav>MENU</nav>
            <h2>Heading</h2><p>First *para*</p><div hidden>HIDDEN <b>deeper</b></div>
            <script>if (a < b) { LEAK }</script><p>Second</p><textarea>typed</textarea>"#;
        assert_eq!(
            render_flat(html, StripLevel::Moderate),
            "## Heading\n\nFirst \\*para\\*\n\nSecond\n\ntyped\n"
        );
        assert_eq!(
            render_flat(html, StripLevel::Minimal),
            "MENU\n\n## Heading\n\nFirst \\*para\\*\n\nHIDDEN deeper\n\nSecond\n\ntyped\n"
        );
        // as the tree's writer: text that would read as a block's mark at a line's start is escaped
        let marks =
            "<p>1. Not a list</p><h2>2. A heading</h2><p># Not a heading, - nor 3. a list</p>";
        assert_eq!(
            render_flat(marks, StripLevel::Minimal),
            "1\\. Not a list\n\n## 2. A heading\n\n\\# Not a heading, - nor 3. a list\n"
        );
    }
}
