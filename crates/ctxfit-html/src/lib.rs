//! HTML to cleaned Markdown, for putting web pages into an LLM's context.
//!
//! A web page is 20,000–50,000+ tokens of markup, scripts, navigation and boilerplate around a few thousand tokens
//! of content. [`HtmlCleaner`] parses it with html5ever (a real, spec-compliant parser: the same tree a browser
//! builds, whatever the markup), removes what the [`StripLevel`] says, and writes the rest as Markdown —
//! headings, nested lists, GFM tables, fenced code with its language, block quotes, links resolved against the
//! page's base URL, emphasis — with [`CleanStats`] on how much smaller it got.
//!
//! The key decision is that **nothing recurses on the document's depth**: the tree is walked with an explicit
//! stack, so a page of 100,000 nested elements cleans like any other instead of overflowing the stack.
//!
//! Levels:
//! * `Minimal`: scripts, styles, SVG, images, media, templates are dropped with their content.
//! * `Moderate`: also navigation, footers, sidebars, comment sections, link lists (blocks that are mostly links
//!   with little text of their own: menus without a `<nav>`, "more stories" lists), and content hidden from
//!   readers (`hidden`, `aria-hidden="true"`, inline `display:none` / `visibility:hidden`, the CSS frameworks'
//!   `hidden`, `d-none` and `hide` classes — hidden text is a prompt-injection channel).
//! * `Aggressive`: also forms, iframes, ads, cookie banners, share/newsletter/related blocks, and main-content
//!   extraction: the subtree whose paragraphs carry the most text with the fewest links.
//!
//! ```
//! use ctxfit_html::{HtmlCleaner, StripLevel};
//!
//! let html = r#"<html><head><script>track()</script></head><body>
//!   <nav><a href="/">Home</a></nav>
//!   <article><h1>Release notes</h1><p>See <a href="/v2">version 2</a>.</p></article></body></html>"#;
//! let (markdown, stats) = HtmlCleaner::new(StripLevel::Moderate)
//!     .with_base_url("https://example.com/news/")
//!     .clean(html);
//! assert!(markdown.starts_with("# Release notes"));
//! assert!(markdown.contains("[version 2](https://example.com/v2)"));
//! assert!(!markdown.contains("track()") && !markdown.contains("Home"));
//! assert!(stats.original_size > markdown.len());
//! ```

mod charset;
mod dom;
pub mod eval;
mod explain;
mod extract;
mod flat;
mod floods;
mod links;
mod metadata;
mod render;
mod strip;

use std::rc::Rc;

pub use explain::{explain, Element, Explanation};
pub use extract::Weights;
pub use metadata::{page_metadata, PageMetadata};

use markup5ever_rcdom::{Handle, NodeData};

pub use charset::{binary_kind, charset_from_content_type, decode_html};
pub use render::escape_markdown;

/// How much of a page to strip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StripLevel {
    Minimal,
    #[default]
    Moderate,
    Aggressive,
}

impl StripLevel {
    pub fn parse(name: &str) -> Option<StripLevel> {
        match name {
            "minimal" => Some(StripLevel::Minimal),
            "moderate" => Some(StripLevel::Moderate),
            "aggressive" => Some(StripLevel::Aggressive),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StripLevel::Minimal => "minimal",
            StripLevel::Moderate => "moderate",
            StripLevel::Aggressive => "aggressive",
        }
    }
}

/// Sizes before and after, in bytes (seed 003's contract).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanStats {
    pub original_size: usize,
    pub cleaned_size: usize,
    pub reduction_percent: f64,
}

impl CleanStats {
    /// The stats of `cleaned_size` bytes made from `original_size` bytes.
    pub fn new(original_size: usize, cleaned_size: usize) -> CleanStats {
        let reduction_percent = if original_size == 0 {
            0.0
        } else {
            100.0 * original_size.saturating_sub(cleaned_size) as f64 / original_size as f64
        };
        CleanStats {
            original_size,
            cleaned_size,
            reduction_percent,
        }
    }
}

/// Turns HTML into cleaned Markdown.
#[derive(Debug, Clone, Default)]
pub struct HtmlCleaner {
    level: StripLevel,
    base_url: Option<String>,
    weights: Weights,
}

/// A page parsed once, to be cleaned many times ([`HtmlCleaner::clean_parsed`]): what `cargo xtask fit-html`
/// does when it tries weights.
#[doc(hidden)]
pub struct ParsedPage(Parsed);

enum Parsed {
    /// Too deep for html5ever's tree construction: written by the tokenizer-only writer.
    Flat(String),
    Tree(markup5ever_rcdom::RcDom),
}

impl ParsedPage {
    pub fn parse(html: &str) -> ParsedPage {
        let tree = (!flat::tree_is_too_costly(html))
            .then(|| dom::parse(html))
            .flatten();
        ParsedPage(match tree {
            Some(dom) => Parsed::Tree(dom),
            None => Parsed::Flat(html.to_owned()),
        })
    }
}

impl HtmlCleaner {
    pub fn new(level: StripLevel) -> Self {
        HtmlCleaner {
            level,
            base_url: None,
            weights: Weights::default(),
        }
    }

    /// Weigh the aggressive level's signals by these instead of the fitted ones ([`Weights`]).
    pub fn with_weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    /// Resolve relative links against this URL (a `<base href>` in the page wins).
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    pub fn level(&self) -> StripLevel {
        self.level
    }

    /// Clean a page given as bytes in any encoding: decoded as a browser would ([`decode_html`]), with
    /// `content_type` the HTTP `Content-Type` header if the page came over HTTP. Sizes are of the bytes.
    pub fn clean_bytes(&self, bytes: &[u8], content_type: Option<&str>) -> (String, CleanStats) {
        let (text, _) = decode_html(bytes, content_type);
        let (markdown, _) = self.clean(&text);
        let stats = CleanStats::new(bytes.len(), markdown.len());
        (markdown, stats)
    }

    /// Clean a page.
    pub fn clean(&self, html: &str) -> (String, CleanStats) {
        // (not through `ParsedPage`, which would copy a page too deep for the tree)
        // a page whose tree would cost too much — by the estimate before, or by the elements the tree builder
        // makes — is written by the tokenizer alone
        let tree = (!flat::tree_is_too_costly(html))
            .then(|| dom::parse(html))
            .flatten();
        let markdown = match tree {
            Some(dom) => self.clean_tree(&dom),
            None => flat::render_flat(html, self.level),
        };
        let stats = CleanStats::new(html.len(), markdown.len());
        (markdown, stats)
    }

    /// Clean a page parsed before: the Markdown [`HtmlCleaner::clean`] gives.
    #[doc(hidden)]
    pub fn clean_parsed(&self, page: &ParsedPage) -> String {
        match &page.0 {
            Parsed::Flat(html) => flat::render_flat(html, self.level),
            Parsed::Tree(dom) => self.clean_tree(dom),
        }
    }

    fn clean_tree(&self, dom: &markup5ever_rcdom::RcDom) -> String {
        let base = find_base_href(&dom.document).or_else(|| self.base_url.clone());
        let main = match self.level {
            StripLevel::Aggressive => extract::main_content(&dom.document, &self.weights),
            _ => None,
        };
        let found = main.is_some();
        let (roots, tail) = match main {
            Some(m) => (m.roots, m.tail),
            None => (vec![Rc::clone(&dom.document)], Vec::new()),
        };
        // no main content stands out (a page of short blocks: a recipe, a product, a listing): nothing is outside
        // it, so the page is rendered as the moderate level renders it
        let level = match self.level {
            StripLevel::Aggressive if !found => StripLevel::Moderate,
            l => l,
        };
        // only what is rendered: the whole page, or the main content the aggressive level chose
        let mut out = String::new();
        for root in &roots {
            let mut left_out = match level {
                StripLevel::Moderate | StripLevel::Aggressive => links::link_lists(root),
                StripLevel::Minimal => Default::default(),
            };
            left_out.extend(tail.iter().map(Rc::as_ptr));
            let part = render::render(root, level, base.as_deref(), &left_out);
            if !out.is_empty() && !part.is_empty() {
                out.push('\n');
            }
            out.push_str(&part);
        }
        out
    }
}

/// The element's local name, if it is an element.
pub(crate) fn tag(node: &Handle) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

/// Every node below `node` (not `node` itself), in no particular order, with an explicit stack.
pub(crate) fn descendants(node: &Handle) -> impl Iterator<Item = Handle> {
    let mut stack: Vec<Handle> = node.children.borrow().iter().cloned().collect();
    std::iter::from_fn(move || {
        let next = stack.pop()?;
        stack.extend(next.children.borrow().iter().cloned());
        Some(next)
    })
}

/// Characters of a text that are not white space (what the extraction and link density weigh).
pub(crate) fn visible_chars(text: &str) -> usize {
    text.chars().filter(|c| !c.is_whitespace()).count()
}

/// `measure` summed over the text nodes below `node`.
pub(crate) fn sum_text(node: &Handle, measure: impl Fn(&str) -> usize) -> usize {
    descendants(node)
        .map(|n| match &n.data {
            NodeData::Text { contents } => measure(&contents.borrow()),
            _ => 0,
        })
        .sum()
}

/// An attribute's value, among an element's attributes.
pub(crate) fn attr_of<'a>(attrs: &'a [html5ever::Attribute], wanted: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|a| &*a.name.local == wanted)
        .map(|a| &*a.value)
}

/// A link: an `<a>`, unless it is a named anchor (`<a name="top">` without an `href`), which old pages often
/// leave open, so that the parser carries it over whole sections of prose. (An `<a>` with neither is a link: menus
/// made of script-driven anchors have no `href` either.)
pub(crate) fn is_link(node: &Handle) -> bool {
    match &node.data {
        NodeData::Element { name, attrs, .. } if &*name.local == "a" => {
            let attrs = attrs.borrow();
            let has = |wanted: &str| attrs.iter().any(|a| &*a.name.local == wanted);
            has("href") || !has("name")
        }
        _ => false,
    }
}

/// An attribute's value.
pub(crate) fn attr(node: &Handle, wanted: &str) -> Option<String> {
    match &node.data {
        NodeData::Element { attrs, .. } => attrs
            .borrow()
            .iter()
            .find(|a| &*a.name.local == wanted)
            .map(|a| a.value.to_string()),
        _ => None,
    }
}

fn find_base_href(document: &Handle) -> Option<String> {
    let mut stack = vec![Rc::clone(document)];
    while let Some(node) = stack.pop() {
        if tag(&node) == Some("base") {
            if let Some(href) = attr(&node, "href") {
                return Some(href);
            }
        }
        if tag(&node) == Some("body") {
            continue;
        }
        stack.extend(node.children.borrow().iter().rev().cloned());
    }
    None
}

/// Why a base that is not [`is_absolute_url`] is refused, in the words the CLI and the Python package use.
pub const NOT_AN_ABSOLUTE_URL: &str =
    "not an absolute URL (scheme://host/...): relative links cannot be resolved against it";

/// Whether `url` can serve as a base for [`resolve_url`]: absolute, `scheme://host…` (or `file:///path`, a
/// saved page's). Against anything else no relative link is resolved (they are kept as written), so a caller
/// offering a base should refuse the rest.
pub fn is_absolute_url(url: &str) -> bool {
    url.split_once("://").is_some_and(|(scheme, rest)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest.is_empty()
            && (!rest.starts_with('/') || scheme.eq_ignore_ascii_case("file"))
    })
}

/// Resolve `href` against `base` (absolute URLs are kept; `//host`, `/path`, `path` and `?q`/`#f` resolved).
pub fn resolve_url(base: Option<&str>, href: &str) -> String {
    let href = href.trim();
    let Some(base) = base else {
        return href.to_owned();
    };
    let has_scheme = |s: &str| {
        s.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
    };
    if has_scheme(href) {
        return href.to_owned();
    }
    let (scheme, rest) = match base.split_once("://") {
        Some(parts) => parts,
        None => return href.to_owned(),
    };
    if let Some(net) = href.strip_prefix("//") {
        return format!("{scheme}://{net}");
    }
    let host_end = rest.find('/').unwrap_or(rest.len());
    let origin = format!("{scheme}://{}", &rest[..host_end]);
    let path = &rest[host_end..];
    let path = path.split(['?', '#']).next().unwrap_or("");
    if href.starts_with('/') {
        return format!("{origin}{href}");
    }
    if href.starts_with('#') || href.starts_with('?') {
        return format!("{origin}{path}{href}");
    }
    let dir = match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "/",
    };
    // normalise ./ and ../
    let mut segments: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    let mut parts = href.split('/').peekable();
    let mut tail = Vec::new();
    while let Some(p) = parts.next() {
        match p {
            "." => {}
            ".." => {
                segments.pop();
            }
            other => {
                tail.push(other);
                tail.extend(parts.by_ref());
            }
        }
    }
    segments.extend(tail);
    format!("{origin}/{}", segments.join("/"))
}

/// Split Markdown into chunks of at most `max_tokens` (by `count`), on heading and paragraph boundaries; a
/// paragraph longer than the limit is cut between words (a single word longer than the limit stays whole).
pub fn chunk_markdown(
    markdown: &str,
    max_tokens: usize,
    count: &dyn Fn(&str) -> usize,
) -> Vec<String> {
    let max_tokens = max_tokens.max(1);
    let mut pieces: Vec<String> = Vec::new();
    for para in markdown.split("\n\n").filter(|p| !p.trim().is_empty()) {
        if count(para) <= max_tokens {
            pieces.push(para.to_owned());
            continue;
        }
        // the longest run of words that fits, found by galloping then binary search over word boundaries
        // (counts grow as text is appended): counting costs O(n log n) for a long paragraph, not O(n²)
        let mut bounds = vec![0];
        bounds.extend(para.split_inclusive([' ', '\n']).scan(0, |end, w| {
            *end += w.len();
            Some(*end)
        }));
        let mut start = 0;
        while start + 1 < bounds.len() {
            let fits = |end: usize| count(&para[bounds[start]..bounds[end]]) <= max_tokens;
            let last = bounds.len() - 1;
            // lo: known to fit (or the single first word, which must be taken); hi: the search's upper end
            let (mut lo, mut step) = (start + 1, 1);
            let mut hi = loop {
                let probe = (lo + step).min(last);
                if probe == lo {
                    break lo;
                }
                if !fits(probe) {
                    break probe - 1;
                }
                lo = probe;
                step *= 2;
            };
            hi = hi.max(lo);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if fits(mid) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            let piece = &para[bounds[start]..bounds[lo]];
            if !piece.trim().is_empty() {
                pieces.push(piece.to_owned());
            }
            start = lo;
        }
    }
    let mut chunks: Vec<String> = Vec::new();
    let mut current = String::new();
    for piece in pieces {
        let starts_section = piece.starts_with('#');
        let joined = if current.is_empty() {
            piece.clone()
        } else {
            format!("{current}\n\n{piece}")
        };
        if !current.is_empty()
            && (count(&joined) > max_tokens || (starts_section && count(&current) * 2 > max_tokens))
        {
            chunks.push(std::mem::take(&mut current));
            current = piece;
        } else {
            current = joined;
        }
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}
