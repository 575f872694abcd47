//! Parsing: html5ever building an `RcDom`, minus what the cleaner never reads.
//!
//! The tree builder hands every piece of a `<script>`'s or `<style>`'s text to the DOM, which copies it onto
//! the node's text (growing it piece by piece), and it records a message for every parse error. A page's inline
//! scripts and styles are often most of its bytes, and the cleaner drops them unread; hostile input (megabytes
//! of NUL bytes or of `<`) makes one error per character. [`Lean`] wraps `RcDom` and lets those go by as they
//! arrive: the text of `script`, `style` and `noscript`, comments, and the error messages. The tree is
//! otherwise the one `RcDom` builds — the same elements, attributes and text, where a browser would put them.

use std::borrow::Cow;
use std::rc::Rc;

use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::{local_name, parse_document, Attribute, ExpandedName, ParseOpts, QualName};
use markup5ever_rcdom::{Handle, NodeData, RcDom};

/// Parse a document into an `RcDom` without the text of scripts, styles and `<noscript>`, without comments,
/// and without the parse errors' messages.
pub(crate) fn parse(html: &str) -> RcDom {
    parse_document(Lean(RcDom::default()), ParseOpts::default()).one(StrTendril::from_slice(html))
}

/// `RcDom`, dropping on arrival what the cleaner never reads (see the module's documentation).
struct Lean(RcDom);

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

/// Whether `child` is left out of the tree: a text never read, or a comment.
fn left_out(parent: &Handle, child: &NodeOrText<Handle>) -> bool {
    match child {
        NodeOrText::AppendText(_) => unread_text(parent),
        NodeOrText::AppendNode(node) => matches!(node.data, NodeData::Comment { .. }),
    }
}

impl TreeSink for Lean {
    type Handle = Handle;
    type Output = RcDom;
    type ElemName<'a> = ExpandedName<'a>;

    fn finish(self) -> RcDom {
        self.0
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        self.0.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> ExpandedName<'a> {
        self.0.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.0.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.0.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.0.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        if !left_out(parent, &child) {
            self.0.append(parent, child);
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
        if !matches!(&child, NodeOrText::AppendNode(n) if matches!(n.data, NodeData::Comment { .. }))
        {
            self.0
                .append_based_on_parent_node(element, prev_element, child);
        }
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.0
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn mark_script_already_started(&self, node: &Handle) {
        self.0.mark_script_already_started(node);
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.0.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        Rc::ptr_eq(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.0.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        // the new node's parent is the sibling's; a comment is left out wherever it goes
        if !matches!(&new_node, NodeOrText::AppendNode(n) if matches!(n.data, NodeData::Comment { .. }))
        {
            self.0.append_before_sibling(sibling, new_node);
        }
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.0.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.0.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.0.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.0.is_mathml_annotation_xml_integration_point(handle)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &Handle) {
        self.0.maybe_clone_an_option_into_selectedcontent(option);
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

    fn plain(html: &str) -> RcDom {
        parse_document(RcDom::default(), ParseOpts::default()).one(html)
    }

    #[test]
    fn the_tree_is_rcdoms_without_script_text_comments_or_errors() {
        let html = "<html><head><title>T &amp; t</title><style>p{color:red}</style>\
            <script>if (a < b) { document.write('<p>x</p>') }</script><!-- built at 12:00 --></head>\
            <body><noscript><p>Enable JavaScript</p></noscript><table><tr><td>cell</td></tr>stray<!-- c --></table>\
            <p class=\"a\">Grüße, naïve café — 漢字<script>track()</script></p><select><option selected>o</select>\
            <template><p>kept in the template</p></template><svg><style>.s{}</style><text>chart</text></svg></body></html>";
        let lean = parse(html);
        assert!(lean.errors.borrow().is_empty());
        let expected = serialized(&plain(html))
            .replace("p{color:red}", "")
            .replace(
                "if (a &lt; b) { document.write('&lt;p&gt;x&lt;/p&gt;') }",
                "",
            )
            .replace("if (a < b) { document.write('<p>x</p>') }", "")
            .replace("&lt;p&gt;Enable JavaScript&lt;/p&gt;", "")
            .replace("<p>Enable JavaScript</p>", "")
            .replace("<!-- built at 12:00 -->", "")
            .replace("<!-- c -->", "")
            .replace("track()", "")
            // an SVG's `<style>` too (every level drops the SVG)
            .replace(".s{}", "");
        assert_eq!(serialized(&lean), expected);
        // foster-parented text is kept
        assert!(serialized(&lean).contains("stray"));
    }

    #[test]
    fn a_long_page_parses_as_rcdom_parses_it() {
        // longer than the tokenizer's buffers, with multi-byte characters everywhere
        let mut html = String::from("<html><head><title>t</title></head><body>");
        for i in 0..4000 {
            html.push_str(&format!(
                "<p class=\"c{i}\">Grüße, naïve café № {i} — 漢字</p><br>"
            ));
        }
        html.push_str("</body></html>");
        assert_eq!(serialized(&parse(&html)), serialized(&plain(&html)));

        // a megabyte of NUL bytes is a parse error per byte: none is kept
        let nul = "\0".repeat(1 << 20);
        let lean = parse(&nul);
        assert!(lean.errors.borrow().is_empty());
        assert_eq!(serialized(&lean), serialized(&plain(&nul)));
    }
}
