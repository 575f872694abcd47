//! Why a page came out of the aggressive level as it did: the elements its main-content extraction chose, the
//! lead it put before them and the blocks it left out of them ([`explain`]; `ctxfit html FILE --explain`).

use markup5ever_rcdom::Handle;

use crate::{attr, extract, flat, tag};

/// Characters of an element's text shown in its description.
const EXCERPT: usize = 60;

/// An element of the page, as a reader finds it again in the page's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// Its tag name (`div`, `article`, `p`).
    pub tag: String,
    pub id: Option<String>,
    pub class: Option<String>,
    /// Characters of text in it (white space aside), left-out parts included.
    pub chars: usize,
    /// The start of its text, white space collapsed: its first words up to 60 characters, then `…` if there is
    /// more.
    pub start: String,
}

impl Element {
    fn of(node: &Handle) -> Element {
        let text = extract::text_of(node);
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut start = String::new();
        let mut length = 0;
        for w in &words {
            let space = usize::from(!start.is_empty());
            length += space + w.chars().count();
            if length > EXCERPT {
                start.push('…');
                break;
            }
            if space == 1 {
                start.push(' ');
            }
            start.push_str(w);
        }
        let nonempty = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
        Element {
            tag: tag(node).unwrap_or("#text").to_owned(),
            id: nonempty(attr(node, "id")),
            class: nonempty(attr(node, "class")),
            chars: words.iter().map(|w| w.chars().count()).sum(),
            start,
        }
    }

    /// A CSS-like selector of it: `div#main.entry-content`, the class words joined by dots.
    pub fn selector(&self) -> String {
        let mut out = self.tag.clone();
        if let Some(id) = &self.id {
            out.push('#');
            out.push_str(id.trim());
        }
        if let Some(class) = &self.class {
            for word in class.split_whitespace() {
                out.push('.');
                out.push_str(word);
            }
        }
        out
    }
}

impl std::fmt::Display for Element {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} characters)", self.selector(), self.chars)?;
        if !self.start.is_empty() {
            write!(f, ": \"{}\"", self.start)?;
        }
        Ok(())
    }
}

/// What the aggressive level's extraction did with a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Explanation {
    /// It found the article.
    Article {
        /// The lead written before the article (a standfirst above its body), in document order.
        lead: Vec<Element>,
        /// The article's element — or its parts, when it is cut in two or in sections of the page — in document
        /// order.
        article: Vec<Element>,
        /// Blocks inside the article left out: labels, link boxes, teasers and headings at its edges, boxes of
        /// links between its paragraphs, in document order.
        left_out: Vec<Element>,
    },
    /// No element holds enough prose to be sure (a recipe, a product, a listing): the page is written as the
    /// moderate level writes it.
    NoArticle,
    /// The page's tree would take too long or too many elements to build (it nests too deep, or leaves thousands
    /// of formatting elements open for the tree builder to compare and copy): it is written by the tokenizer
    /// alone, as the moderate level would write it, with no extraction.
    TooDeep,
}

/// Explain what the aggressive level extracts from a page (given as text: see [`crate::decode_html`] for bytes).
/// It runs the same extraction as [`crate::HtmlCleaner::clean`], so what it names is what the Markdown holds:
/// the lead and the article's elements, less what `left_out` names (and, inside them, what every aggressive clean
/// drops: scripts, forms, ads, link lists).
pub fn explain(html: &str) -> Explanation {
    let tree = (!flat::tree_is_too_costly(html))
        .then(|| crate::dom::parse(html))
        .flatten();
    let Some(dom) = tree else {
        return Explanation::TooDeep;
    };
    let Some(main) = extract::main_content(&dom.document, &extract::Weights::default()) else {
        return Explanation::NoArticle;
    };
    let (lead, article) = main.roots.split_at(main.lead.min(main.roots.len()));
    let elements = |nodes: &[Handle]| nodes.iter().map(Element::of).collect();
    Explanation::Article {
        lead: elements(lead),
        article: elements(article),
        left_out: elements(&main.tail),
    }
}
