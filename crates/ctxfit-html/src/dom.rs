//! Parsing: html5ever building an `RcDom`, minus what the cleaner never reads.
//!
//! The tree builder hands every piece of a `<script>`'s or `<style>`'s text to the DOM, which copies it onto the
//! node's text (growing it piece by piece), and it records a message for every parse error. A page's inline scripts
//! and styles are often most of its bytes (39–56% of them on the three page sets beside the corpus), and the cleaner
//! drops them unread; hostile input (megabytes of NUL bytes or of `<`) makes one error per character. [`Lean`] wraps
//! `RcDom` and lets those go by as they arrive: the text of `script`, `style` and `noscript`, comments, and the error
//! messages.
//!
//! Better still, most of that text is never tokenized: [`parse`] feeds the page up to the end of each tag that
//! looks like a `<script>` or `<style>` start tag, and when the tree builder has just opened such an element
//! in raw-text mode (the sink sees it: the parser, not a guess, decides what is a tag), the text up to its end
//! tag is skipped — where that is exact: a style's text ends at the first `</style`, a script's at the first
//! `</script` unless its text holds `<!--` (the escapes of the standard's script states), and then it is fed
//! as it is. The tree is otherwise the one `RcDom` builds — the same elements, attributes and text, where a
//! browser would put them.
//!
//! The sink also counts the elements the tree builder makes: past [`element_budget`] (four per tag, and
//! [`MAX_ELEMENTS`] at most), the parse gives up and the caller writes the page with the tokenizer alone
//! (`flat.rs`).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::{local_name, ns, parse_document, Attribute, ExpandedName, ParseOpts, QualName};
use markup5ever_rcdom::{Handle, NodeData, RcDom};

/// Parse a document into an `RcDom` without the text of scripts, styles and `<noscript>`, without comments,
/// and without the parse errors' messages — or `None` when the tree builder makes far more elements than the
/// page has tags ([`element_budget`]).
pub(crate) fn parse(html: &str) -> Option<RcDom> {
    let html = &*crate::floods::defused(html);
    let mut parser = parse_document(
        Lean {
            budget: element_budget(html),
            ..Lean::default()
        },
        ParseOpts::default(),
    );
    let bytes = html.as_bytes();
    let mut fed = 0;
    while let Some((_, tag_end)) = next_raw_start(bytes, fed) {
        // up to the end of what looks like the start tag: ASCII `>`, a character boundary
        feed(&mut parser, &html[fed..tag_end])?;
        fed = tag_end;
        // the element the parser opened, which may not be the one the scan saw (a quote the scan took for an
        // attribute's can hide another start tag)
        let Some(name) = parser.tokenizer.sink.sink.take_fresh_raw() else {
            continue;
        };
        // the element is open in raw-text mode and has no text yet: its text ends at the first end tag of its
        // name, unless a script's holds `<!--`
        if let Some(end) = crate::floods::raw_end(bytes, tag_end, name) {
            let escapes =
                name == b"script" && memchr::memmem::find(&bytes[tag_end..end], b"<!--").is_some();
            if !escapes {
                fed = end;
            }
        }
    }
    feed(&mut parser, &html[fed..])?;
    Some(parser.finish())
}

/// Parse a page's head for what it says of itself: as [`parse`] (comments and error messages left out, the same
/// element budget), but with the text of its scripts kept and read (JSON-LD is in them).
pub(crate) fn parse_keeping_scripts(html: &str) -> Option<RcDom> {
    let html = &*crate::floods::defused(html);
    let mut parser = parse_document(
        Lean {
            budget: element_budget(html),
            keep_scripts: true,
            ..Lean::default()
        },
        ParseOpts::default(),
    );
    feed(&mut parser, html)?;
    Some(parser.finish())
}

/// Elements the tree builder may make of a page: four per `<` in it, and 10,000 — and [`MAX_ELEMENTS`] at most. It
/// makes one per start tag, a few it implies (`html`, `head`, `body`, `tbody`), and copies of the formatting
/// elements a misnested page left open — one per paragraph where a real page leaves a `<b>` open; 1,000 per
/// paragraph where a hostile one left 1,000 (92 KB of it made ten million elements: 11 s and 2.3 GB).
fn element_budget(html: &str) -> u64 {
    (4 * memchr::memchr_iter(b'<', html.as_bytes()).count() as u64 + 10_000).min(MAX_ELEMENTS)
}

/// The most elements a tree may hold, whatever the page's size: the tree costs some 300–700 bytes of memory an
/// element with its text (16 MB of `<b>x</b>`, two million elements, took 1.4 GB and 15 s), so a page of more —
/// 25 times the most of any of the 616 pages of the three sets (19,437 tags) — is written by the tokenizer alone,
/// in memory its size bounds.
pub(crate) const MAX_ELEMENTS: u64 = 500_000;

/// Hand text to the parser in pieces of 2 KiB at most, so that the parser's input buffer never holds a copy of a
/// whole large page (the DOM is the page's size already), and so that a tree builder past its element budget is
/// stopped within a piece — `None` then (the hostile page above: 0.4 s and 78 MB; pieces this small cost real
/// pages under 1% more instructions than pieces of 64 KiB).
fn feed(parser: &mut html5ever::driver::Parser<Lean>, mut text: &str) -> Option<()> {
    const PIECE: usize = 1 << 11;
    while !text.is_empty() {
        let mut end = PIECE.min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        // already text: handed over as is, without a second UTF-8 validation
        parser.process(StrTendril::from_slice(&text[..end]));
        text = &text[end..];
        let sink = &parser.tokenizer.sink.sink;
        if sink.created.get() > sink.budget {
            return None;
        }
    }
    Some(())
}

/// Where the next `<script` or `<style` start tag at or after `from` (any case) starts (its `<`) and ends (after
/// its `>`, quoted attribute values passed over). Only a proposal: the parser decides whether it is a tag, and
/// which.
fn next_raw_start(bytes: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut i = from;
    while let Some(at) = memchr::memchr(b'<', &bytes[i..]) {
        let start = i + at + 1;
        i = start;
        let Some(name) = [&b"script"[..], b"style"].into_iter().find(|name| {
            bytes
                .get(start..start + name.len())
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
                && bytes.get(start + name.len()).is_some_and(|&b| {
                    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>')
                })
        }) else {
            continue;
        };
        let (mut quote, mut after_eq) = (None, false);
        for (k, &b) in bytes.iter().enumerate().skip(start + name.len()) {
            match quote {
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None => match b {
                    b'>' => return Some((start - 1, k + 1)),
                    b'"' | b'\'' if after_eq => quote = Some(b),
                    b'=' => after_eq = true,
                    b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' => {}
                    _ => after_eq = false,
                },
            }
        }
        return None;
    }
    None
}

/// The text of every `<script type="application/ld+json">` in `html`, in order: schema.org statements about the
/// page, which many pages put in their body (the parse lets script text go, so they are found in the bytes, the
/// way [`parse`] finds the scripts it skips).
pub(crate) fn linked_data(html: &str) -> impl Iterator<Item = &str> {
    let bytes = html.as_bytes();
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some((lt, tag_end)) = next_raw_start(bytes, from) {
            let script = bytes
                .get(lt + 1..lt + 7)
                .is_some_and(|n| n.eq_ignore_ascii_case(b"script"));
            let name: &[u8] = if script { b"script" } else { b"style" };
            let Some(end) = crate::floods::raw_end(bytes, tag_end, name) else {
                from = bytes.len();
                break;
            };
            from = end;
            let tag = &bytes[lt..tag_end];
            if script && tag.windows(7).any(|w| w.eq_ignore_ascii_case(b"ld+json")) {
                // `<` and `>` are ASCII: both ends are character boundaries
                return Some(&html[tag_end..end]);
            }
        }
        None
    })
}

/// `RcDom`, dropping on arrival what the cleaner never reads (see the module's documentation).
#[derive(Default)]
struct Lean {
    dom: RcDom,
    /// The `<script>` or `<style>` element open in raw-text mode, if any.
    raw: RefCell<Option<Handle>>,
    /// It was opened since [`Lean::take_fresh_raw`] last asked, and no text has come for it yet.
    fresh: Cell<bool>,
    /// Elements made so far, and how many the page may make ([`element_budget`]).
    created: Cell<u64>,
    budget: u64,
    /// Keep the text of scripts, styles and `<noscript>` ([`parse_keeping_scripts`]).
    keep_scripts: bool,
}

impl Lean {
    /// The name (`script` or `style`) of the element opened in raw-text mode since the last call, if one was
    /// and no text came for it.
    fn take_fresh_raw(&self) -> Option<&'static [u8]> {
        if !self.fresh.replace(false) {
            return None;
        }
        let raw = self.raw.borrow();
        match &raw.as_ref()?.data {
            NodeData::Element { name, .. } if name.local == local_name!("script") => {
                Some(b"script")
            }
            NodeData::Element { .. } => Some(b"style"),
            _ => None,
        }
    }

    /// Note an element being put in the tree: a script or style of HTML's namespace is in raw-text mode.
    fn inserting(&self, child: &NodeOrText<Handle>) {
        if let NodeOrText::AppendNode(node) = child {
            if let NodeData::Element { name, .. } = &node.data {
                if name.ns == ns!(html)
                    && matches!(name.local, local_name!("script") | local_name!("style"))
                {
                    *self.raw.borrow_mut() = Some(Rc::clone(node));
                    self.fresh.set(true);
                }
            }
        }
    }

    /// Note text arriving under `parent`.
    fn text_for(&self, parent: &Handle, child: &NodeOrText<Handle>) {
        if matches!(child, NodeOrText::AppendText(_))
            && self
                .raw
                .borrow()
                .as_ref()
                .is_some_and(|r| Rc::ptr_eq(r, parent))
        {
            self.fresh.set(false);
        }
    }
}

/// Whether text appended under `parent` is never read: the raw text of elements every level drops.
fn unread_text(parent: &Handle) -> bool {
    match &parent.data {
        NodeData::Element { name, .. } => matches!(
            name.local,
            local_name!("script") | local_name!("style") | local_name!("noscript")
        ),
        _ => false,
    }
}

/// Whether `child` is a comment (left out wherever it goes).
fn is_comment(child: &NodeOrText<Handle>) -> bool {
    matches!(child, NodeOrText::AppendNode(n) if matches!(n.data, NodeData::Comment { .. }))
}

/// Whether `child` is left out of the tree: a text never read, or a comment.
fn left_out(parent: &Handle, child: &NodeOrText<Handle>) -> bool {
    match child {
        NodeOrText::AppendText(_) => unread_text(parent),
        NodeOrText::AppendNode(_) => is_comment(child),
    }
}

impl TreeSink for Lean {
    type Handle = Handle;
    type Output = RcDom;
    type ElemName<'a> = ExpandedName<'a>;

    fn finish(self) -> RcDom {
        self.dom
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        self.dom.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> ExpandedName<'a> {
        self.dom.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.created.set(self.created.get() + 1);
        self.dom.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.dom.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.dom.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        self.inserting(&child);
        self.text_for(parent, &child);
        let kept_text = self.keep_scripts && matches!(child, NodeOrText::AppendText(_));
        if kept_text || !left_out(parent, &child) {
            self.dom.append(parent, child);
        }
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        // a text or comment here is foster-parented content, never the raw text of a script: kept as RcDom
        // keeps it, except for comments
        self.inserting(&child);
        if !is_comment(&child) {
            self.dom
                .append_based_on_parent_node(element, prev_element, child);
        }
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.dom
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn pop(&self, node: &Handle) {
        let mut raw = self.raw.borrow_mut();
        if raw.as_ref().is_some_and(|r| Rc::ptr_eq(r, node)) {
            *raw = None;
            self.fresh.set(false);
        }
    }

    fn mark_script_already_started(&self, node: &Handle) {
        self.dom.mark_script_already_started(node);
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.dom.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        Rc::ptr_eq(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.dom.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        // the new node's parent is the sibling's; a comment is left out wherever it goes
        self.inserting(&new_node);
        if !is_comment(&new_node) {
            self.dom.append_before_sibling(sibling, new_node);
        }
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.dom.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.dom.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.dom.is_mathml_annotation_xml_integration_point(handle)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &Handle) {
        self.dom.maybe_clone_an_option_into_selectedcontent(option);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree as markup, with `RcDom`'s serializer.
    fn serialized(dom: &RcDom) -> String {
        let mut out = Vec::new();
        let handle: markup5ever_rcdom::SerializableHandle = dom.document.clone().into();
        html5ever::serialize(&mut out, &handle, Default::default()).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// `RcDom`'s own tree, then without what [`Lean`] leaves out: comments, and the text of scripts, styles
    /// and `<noscript>`.
    fn expected(html: &str) -> String {
        let dom = parse_document(RcDom::default(), ParseOpts::default()).one(html);
        let mut stack = vec![Rc::clone(&dom.document)];
        while let Some(node) = stack.pop() {
            let unread = unread_text(&node);
            node.children.borrow_mut().retain(|c| match &c.data {
                NodeData::Comment { .. } => false,
                NodeData::Text { .. } => !unread,
                _ => true,
            });
            stack.extend(node.children.borrow().iter().cloned());
            if let NodeData::Element {
                template_contents, ..
            } = &node.data
            {
                stack.extend(template_contents.borrow().iter().cloned());
            }
        }
        serialized(&dom)
    }

    #[test]
    fn the_tree_is_rcdoms_without_script_text_comments_or_errors() {
        let html = "<html><head><title>T &amp; t</title><style>p{color:red}</style>\
            <script>if (a < b) { document.write('<p>x</p>') }</script><!-- built at 12:00 --></head>\
            <body><noscript><p>Enable JavaScript</p></noscript><table><tr><td>cell</td></tr>stray<!-- c --></table>\
            <p class=\"a\">Grüße, naïve café — 漢字<script>track()</script></p><select><option selected>o</select>\
            <template><p>kept in the template</p></template><svg><style>.s{}</style><text>chart</text></svg></body></html>";
        let lean = parse(html).unwrap();
        assert!(lean.errors.borrow().is_empty());
        assert_eq!(serialized(&lean), expected(html));
        for gone in [
            "color:red",
            "document.write",
            "Enable JavaScript",
            "built at",
            "track()",
        ] {
            assert!(!serialized(&lean).contains(gone), "{gone}");
        }
        // foster-parented text is kept
        assert!(serialized(&lean).contains("stray"));
    }

    #[test]
    fn skipping_raw_text_builds_the_tree_the_parser_builds() {
        // what only looks like a script or style start tag, end tags that are not, and the script states'
        // escapes: the parser decides, and the tree is RcDom's in every case
        let cases = [
            "<p>a<SCRIPT type=x>var s = '</scripts>'; x = 1 </script >b</p>",
            "<script data-x=\"a>b\" src='c>d'>var t = 1;</script><p>after</p>",
            "<script><!--<script>var i = '</script>';</script>still script</script><p>after</p>",
            "<script>var u = '<!--';</script><p>after</p>",
            "<!-- <script> --><p>commented</p></script><p>after</p>",
            "<p title=\"<script>\">attribute</p><textarea><script>typed</script></textarea><p>after</p>",
            "<title><style>t</style></title><p>after</p>",
            "<svg><style>.s{}</style><script>x</script><text>chart</text></svg><p>after</p>",
            "<math><style>m</style></math><p>after</p>",
            "<table><tr><td>c</td></tr><script>in table</script><style>t{}</style></table><p>after</p>",
            "<template><script>in template</script><style>s{}</style></template><p>after</p>",
            "<select><style>in select</style><script>s</script><option>o</select><p>after</p>",
            "<noscript><style>ns{}</style><p>no</p></noscript><p>after</p>",
            "<p>before</p><script>never closed <p>text",
            "<p>before</p><style>never closed",
            "<p>before</p><script",
            "<p>before</p><script/><p>after</p>",
            "<script>\r\n</script\r\n><style>\0</style\t><p>after</p>",
            "<sCrIpT>a</ScRiPt><StYlE>b</sTyLe><p>after</p>",
            // the scan takes a quote for an attribute's and sees a style where the parser opens a script
            "<script =\"x><StYlE media=\"a>b\"><style ='></SCRIPT >'<script a='>'></script></p></style\t>",
        ];
        for html in cases {
            assert_eq!(serialized(&parse(html).unwrap()), expected(html), "{html}");
        }
    }

    #[test]
    fn documents_made_of_the_tricky_pieces_parse_as_rcdom_parses_them() {
        // 10,000 documents of up to 40 pieces each, drawn from what moves the tokenizer between its states:
        // raw-text start and end tags in any case, comments and their look-alikes inside scripts, quotes and
        // `>` in attributes, foreign content, tables, templates, text
        const PIECES: &[&str] = &[
            "<script>",
            "<SCRIPT type=\"x\">",
            "<script a='>'>",
            "<script/>",
            "<script",
            "</script>",
            "</SCRIPT >",
            "</script/>",
            "</scripts>",
            "<style>",
            "<StYlE media=\"a>b\">",
            "</style>",
            "</style\t>",
            "<!--",
            "-->",
            "<!-",
            "<",
            ">",
            "\"",
            "'",
            "=",
            "<p>",
            "</p>",
            "<div class=\"a\">",
            "</div>",
            "<textarea>",
            "</textarea>",
            "<title>",
            "</title>",
            "<svg>",
            "</svg>",
            "<math>",
            "</math>",
            "<table>",
            "<tr><td>",
            "</table>",
            "<template>",
            "</template>",
            "<noscript>",
            "</noscript>",
            "<select>",
            "<iframe>",
            "</iframe>",
            "text ",
            "var a = b < c;",
            "\r\n",
            "\0",
            "é",
            "漢字",
            "<![CDATA[",
            "]]>",
            "<plaintext>",
            // an `=` where no attribute value can start: the scan takes the quote for one, the parser not
            "<script =\"x>",
            "<style ='>",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |bound: usize| {
            // xorshift64*: deterministic, no dependency
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            (seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % bound
        };
        for _ in 0..10_000 {
            let len = 1 + next(40);
            let html: String = (0..len).map(|_| PIECES[next(PIECES.len())]).collect();
            assert_eq!(
                serialized(&parse(&html).unwrap()),
                expected(&html),
                "{html:?}"
            );
        }
    }

    #[test]
    fn real_pages_parse_as_rcdom_parses_them() {
        // the corpus's ScrapingHub and Readability.js pages: 118 pages, 22 MB, their scripts and styles skipped
        let corpus = ctxfit_testkit::corpus_or_skip!();
        let mut pages = 0;
        for set in ["html", "html-readability"] {
            for entry in std::fs::read_dir(corpus.join(set).join("pages")).unwrap() {
                let path = entry.unwrap().path();
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(
                    &mut flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()),
                    &mut bytes,
                )
                .unwrap();
                let html = crate::decode_html(&bytes, None).0;
                assert_eq!(
                    serialized(&parse(&html).unwrap()),
                    expected(&html),
                    "{}",
                    path.display()
                );
                pages += 1;
            }
        }
        assert!(pages >= 100, "{pages} pages");
    }

    #[test]
    fn a_long_page_parses_as_rcdom_parses_it() {
        // longer than the tokenizer's buffers, with multi-byte characters everywhere
        let mut html = String::from("<html><head><title>t</title></head><body>");
        for i in 0..4000 {
            html.push_str(&format!(
                "<p class=\"c{i}\">Grüße, naïve café № {i} — 漢字</p><br><script>f({i})</script>"
            ));
        }
        html.push_str("</body></html>");
        assert_eq!(serialized(&parse(&html).unwrap()), expected(&html));

        // a megabyte of NUL bytes is a parse error per byte: none is kept
        let nul = "\0".repeat(1 << 20);
        let lean = parse(&nul).unwrap();
        assert!(lean.errors.borrow().is_empty());
        assert_eq!(serialized(&lean), expected(&nul));
    }

    #[test]
    fn the_tree_holds_at_most_max_elements_whatever_the_pages_size() {
        // four per tag and 10,000 on a real page's scale
        assert_eq!(
            element_budget(&"<p>x</p>".repeat(1_000)),
            4 * 2_000 + 10_000
        );
        // and no more than the cap on a page of millions of tags: the tokenizer alone writes it
        assert_eq!(element_budget(&"<b>x</b>".repeat(1_000_000)), MAX_ELEMENTS);
    }
}
