//! Main-content extraction for the aggressive level: the element whose paragraphs carry the most text with the
//! fewest links (a readability-style score), computed bottom-up without recursion.
//!
//! Paragraphs (`<p>`, `<pre>`, cells, quotes, list items, and blocks of bare text such as a `<div>` of lines
//! between `<br>`s) vote for their parent and grandparent; the best-scoring element, discounted by its link
//! density, is the candidate — unless it lies outside the part of the page the title (`<h1>`) heads, which holds
//! prose of its own: then that part is ([`under_the_title`]). It is then widened to its parent while
//! the parent adds little text and few links, to the nearest ancestor that holds twice its prose spread over two
//! or more substantial children — an article cut into sibling sections — and to the parent of a sibling of the
//! same tag and class — or a class of its own beside one the page gives few elements ([`same_kind`]) — that has
//! prose of its own (an article body continued after an inset; when that parent is the page's body, the siblings
//! themselves are the article). Paragraphs with the class of most of the chosen
//! element's own, elsewhere on the page, bring their containers in too ([`continued`]: an article cut in two
//! around an advertisement).
//!
//! Around the chosen element: its **lead** — the standfirst or teaser just before it, often after the title in
//! the article's header — is rendered before it ([`lead`]; when the walk back finds none, the prose between the
//! title and the element: [`after_the_title`]); inside it, the **edges** — labels, link lists and
//! the headings over them, before its first paragraph of prose and after its last ("Share:", "Related posts",
//! "Back to the overview") — are left out ([`edges`]). Both read structure, length, links and punctuation, never
//! words of a language. The numbers the scoring weighs its signals by are [`Weights`]; those in use are chosen by
//! `cargo xtask fit-html` (out of fold by site: see docs/html.md).

use std::collections::BTreeMap;
use std::rc::Rc;

use markup5ever_rcdom::{Handle, NodeData};

use crate::strip::{dropped, BLOCKS, HEADINGS};
use crate::{sum_text, tag, StripLevel};

mod fitted;
mod standfirst;
mod trim;
mod weights;
use standfirst::{after_the_title, lead};
use trim::edges;
pub use weights::Weights;

impl Default for Weights {
    /// The values in use: those `cargo xtask fit-html` chose (the hand-written ones until a fit beats them out of
    /// fold and on the sealed sites).
    fn default() -> Weights {
        fitted::FITTED
    }
}

struct Info {
    node: Handle,
    parent: Option<usize>,
    text: usize,
    link_text: usize,
    /// Characters of the text nodes that are direct children (text between `<br>`s of a `<div>`).
    direct_text: usize,
    score: f64,
    /// The votes of every paragraph below (how much prose the subtree holds, wherever it sits).
    prose: f64,
    children: Vec<usize>,
    /// Where its subtree ends in the pre-order list (exclusive).
    end: usize,
    /// What its subtree holds, itself included: [`H1`], [`HEADING`], [`MEDIA`], [`ITEM`], [`LINKED_HEADING`],
    /// [`TABLE`].
    holds: u8,
    /// The page marks it as the article's body (schema.org microdata: `itemprop="articleBody"`).
    marked: bool,
    /// A child of it was left out as boilerplate (a `<nav>`, a form, a box of a boilerplate class).
    lost: bool,
}

/// Does the page mark this element as the article's body?
fn marked(node: &Handle) -> bool {
    match &node.data {
        NodeData::Element { attrs, .. } => crate::attr_of(&attrs.borrow(), "itemprop")
            .is_some_and(|v| v.split_whitespace().any(|w| w == "articleBody")),
        _ => false,
    }
}

/// A title (`<h1>`).
const H1: u8 = 1;
/// A heading below the first rank.
const HEADING: u8 = 2;
/// A picture, a video, a frame.
const MEDIA: u8 = 4;
/// A list item, a table row, a term.
const ITEM: u8 = 8;
/// A heading below the first rank whose text is a link: the title of a teaser for another page.
const LINKED_HEADING: u8 = 16;
/// A table.
const TABLE: u8 = 32;

fn kind(node: &Handle) -> u8 {
    match tag(node) {
        Some("h1") => H1,
        Some("h2" | "h3" | "h4" | "h5" | "h6") => HEADING,
        Some("img" | "picture" | "figure" | "video" | "iframe") => MEDIA,
        Some("li" | "tr" | "dt") => ITEM,
        Some("table") => TABLE,
        _ => 0,
    }
}

/// Is a left-out element one whose label would be left behind: a block — navigation, a sidebar, a box of a
/// boilerplate class, a hidden list — not a control (a button, a checkbox beside an ingredient), a script or a
/// picture, which stand beside text without being what it labels.
fn lost_matters(node: &Handle) -> bool {
    matches!(
        tag(node),
        Some(
            "nav"
                | "aside"
                | "header"
                | "footer"
                | "div"
                | "section"
                | "ul"
                | "ol"
                | "dl"
                | "table"
                | "form"
                | "p"
        )
    )
}

/// The main content the aggressive level renders.
pub(crate) struct MainContent {
    /// In document order: the lead paragraphs that stand before the chosen element (see [`lead`]), then it.
    pub roots: Vec<Handle>,
    /// How many of `roots` are the lead (the first ones).
    pub lead: usize,
    /// Elements of the chosen one left out, in document order: the boilerplate around its prose (see [`edges`]).
    pub tail: Vec<Handle>,
}

/// The main content; `None` when no element holds enough paragraph text to be sure.
pub(crate) fn main_content(document: &Handle, w: &Weights) -> Option<MainContent> {
    // pre-order list with parents; dropped subtrees are left out
    let mut nodes: Vec<Info> = Vec::new();
    let mut stack: Vec<(Handle, Option<usize>)> = vec![(Rc::clone(document), None)];
    while let Some((node, parent)) = stack.pop() {
        if dropped(&node, StripLevel::Aggressive) {
            if let Some(p) = parent.filter(|_| lost_matters(&node)) {
                nodes[p].lost = true;
            }
            continue;
        }
        let own_text = match &node.data {
            NodeData::Text { contents } => crate::visible_chars(&contents.borrow()),
            _ => 0,
        };
        let i = nodes.len();
        nodes.push(Info {
            node: Rc::clone(&node),
            parent,
            text: own_text,
            link_text: 0,
            direct_text: 0,
            score: 0.0,
            prose: 0.0,
            children: Vec::new(),
            end: 0,
            holds: 0,
            marked: marked(&node),
            lost: false,
        });
        if let Some(p) = parent {
            nodes[p].children.push(i);
        }
        for c in node.children.borrow().iter().rev() {
            stack.push((Rc::clone(c), Some(i)));
        }
    }
    // bottom-up sums: children come after their parent in pre-order
    for i in (0..nodes.len()).rev() {
        nodes[i].end = nodes[i].children.last().map_or(i + 1, |&c| nodes[c].end);
        nodes[i].holds |= kind(&nodes[i].node);
        if let (Some(p), NodeData::Text { .. }) = (nodes[i].parent, &nodes[i].node.data) {
            nodes[p].direct_text += nodes[i].text;
        }
        if crate::is_link(&nodes[i].node) {
            nodes[i].link_text = nodes[i].text;
        }
        // (its own sums are complete here: its descendants come after it)
        let n = &nodes[i];
        if kind(&n.node) == HEADING && n.text > 0 && n.link_text * 10 >= n.text * 9 {
            nodes[i].holds |= LINKED_HEADING;
        }
        if let Some(p) = nodes[i].parent {
            nodes[p].holds |= nodes[i].holds;
            nodes[p].text += nodes[i].text;
            nodes[p].link_text += nodes[i].link_text;
        }
    }
    // each element's depth, and the share of the page's text before it (pre-order: parents first)
    let total_text = nodes.first().map_or(0, |n| n.text).max(1) as f64;
    let mut depth = vec![0u32; nodes.len()];
    let mut before = vec![0.0f64; nodes.len()];
    let mut seen = 0usize;
    for i in 0..nodes.len() {
        if let Some(p) = nodes[i].parent {
            depth[i] = depth[p] + 1;
        }
        before[i] = seen as f64 / total_text;
        if let NodeData::Text { .. } = nodes[i].node.data {
            seen += nodes[i].text;
        }
    }
    // paragraphs vote for their parent and grandparent
    for i in 0..nodes.len() {
        // paragraphs (a description list's `<dd>` is one, as a list item is: a glossary's, a dictionary's entry),
        // and blocks of bare text (a `<div>` of lines separated by `<br>`)
        let paragraph = match tag(&nodes[i].node) {
            Some("p" | "pre" | "td" | "blockquote" | "li" | "dd") => {
                nodes[i].text as f64 >= w.paragraph
            }
            Some("div" | "section" | "article" | "span") => {
                nodes[i].direct_text as f64 >= w.bare_text
            }
            _ => false,
        };
        if !paragraph {
            continue;
        }
        let commas = sum_text(&nodes[i].node, clause_commas);
        let vote =
            1.0 + commas as f64 * w.comma + (nodes[i].text as f64 / w.length).min(w.length_cap);
        // a paragraph's own link density discounts its vote for the prose of its ancestors
        let own_links = density(&nodes[i]);
        nodes[i].prose += vote * (1.0 - own_links);
        if let Some(p) = nodes[i].parent {
            nodes[p].score += vote;
            if let Some(g) = nodes[p].parent {
                nodes[g].score += vote * w.grandparent;
            }
        }
    }
    for i in (1..nodes.len()).rev() {
        if let Some(p) = nodes[i].parent {
            nodes[p].prose += nodes[i].prose;
        }
    }
    let placed = |i: usize| {
        let depth = if w.depth == 1.0 {
            1.0
        } else {
            w.depth.powf(f64::from(depth[i]) / 10.0)
        };
        let position = if w.position == 1.0 {
            1.0
        } else {
            w.position.powf(before[i])
        };
        let title = if nodes[i].holds & H1 != 0 {
            w.title
        } else {
            1.0
        };
        depth * position * title
    };
    let weighted = |n: &Info| {
        // the elements made for the main content count a quarter more, the page's own mark of the article's
        // body half as much again
        let tag_bonus = match tag(&n.node) {
            Some("article") => w.article,
            Some("main") => w.main,
            _ => 1.0,
        };
        let bonus = tag_bonus * if n.marked { w.marked } else { 1.0 };
        // (an element without text has no score: its paragraphs' votes need text)
        n.score * (1.0 - density(n)) * bonus
    };
    let best = (0..nodes.len())
        // a list is a part of an article, never its container: its items vote for the list and, by half, for
        // the element that holds it
        .filter(|&i| {
            matches!(nodes[i].node.data, NodeData::Element { .. })
                && !matches!(tag(&nodes[i].node), Some("ul" | "ol" | "li" | "dl"))
        })
        .max_by(|&a, &b| {
            (weighted(&nodes[a]) * placed(a)).total_cmp(&(weighted(&nodes[b]) * placed(b)))
        })?;
    if weighted(&nodes[best]) < w.least {
        return None;
    }
    let best = under_the_title(&nodes, best).unwrap_or(best);
    let best = holding_the_table(&nodes, best);
    // widen to the parent when the best candidate holds only part of the parent's prose
    let mut chosen = best;
    while let Some(p) = nodes[chosen].parent {
        let parent = &nodes[p];
        let density = density(parent);
        if matches!(tag(&parent.node), Some("body" | "html"))
            || parent.node.children.borrow().is_empty()
        {
            break;
        }
        if parent.text as f64 <= nodes[chosen].text as f64 * w.widen_text
            && density < w.widen_links
            && weighted(parent) >= weighted(&nodes[chosen]) * w.widen_score
        {
            chosen = p;
        } else {
            break;
        }
    }
    // an article split over sibling blocks (one section each) is held by the nearest ancestor with twice the
    // prose, spread over two or more children of substance, or over four or more sections of a paragraph or two
    // (a report in one block per paragraph, beside a gallery whose captions outweigh any one of them) — unless
    // the page marks the chosen one as the body; the walk goes on from the ancestor taken
    let mut up = nodes[chosen].parent.filter(|_| !nodes[chosen].marked);
    while let Some(a) = up {
        let ancestor = &nodes[a];
        if matches!(tag(&ancestor.node), Some("body" | "html")) || ancestor.parent.is_none() {
            break;
        }
        let density = density(ancestor);
        if ancestor.prose >= nodes[chosen].prose * w.split_prose && density < w.widen_links {
            // children with a quarter of the chosen one's prose, and those with a short section's
            let quarter = nodes[chosen].prose * w.split_share;
            let (mut substantial, mut sections) = (0, 0);
            for &c in &ancestor.children {
                substantial += usize::from(nodes[c].prose >= quarter);
                sections += usize::from(nodes[c].prose >= quarter.min(w.section_prose));
            }
            if substantial >= 2 || sections >= 4 {
                chosen = a;
                if nodes[a].marked {
                    break;
                }
            }
        }
        up = ancestor.parent;
    }
    // the article continued in a sibling of the same kind (same tag and class, as readability merges
    // siblings, or classes within the other's that the page gives few elements): looking from the chosen
    // element and through the plain wrappers above it (those that add no prose; a CMS wraps each block of an
    // article in a field, an item and a paragraph), the parent holds both —
    // or, when the siblings are sections of the page's body, they are the article, in document order
    let mut sections: Vec<usize> = Vec::new();
    {
        let signature = |i: usize| {
            (
                tag(&nodes[i].node).map(str::to_owned),
                crate::attr(&nodes[i].node, "class"),
            )
        };
        let uses = ClassUses::new(&nodes);
        let mut at = chosen;
        for _ in 0..MAX_DEPTH {
            let Some(p) = nodes[at].parent else { break };
            let mine = signature(at);
            // prose of its own: a tenth of the chosen element's, or about three paragraphs beside a long one
            let kin = |c: usize| {
                c != at
                    && nodes[c].prose >= (nodes[chosen].prose * w.kin_share).min(w.kin_prose)
                    && match same_kind(&signature(c), &mine) {
                        Kind::Same => true,
                        // one's classes all among the other's, classes the page gives few elements (not a
                        // layout grid's `col-xs-12` or `cell`), and not a box of links beside the article
                        Kind::Within(shared) => {
                            density(&nodes[c]) < w.widen_links
                                && shared
                                    .split_ascii_whitespace()
                                    .all(|t| uses.get(t) <= RARE_CLASS)
                        }
                        Kind::Other => false,
                    }
            };
            let classed = mine.1.as_deref().is_some_and(|c| !c.trim().is_empty());
            if matches!(tag(&nodes[p].node), Some("body" | "html")) {
                // the page's body is never the article: the sections themselves are
                if classed && nodes[p].children.iter().any(|&c| kin(c)) {
                    sections = (nodes[p].children.iter().copied())
                        .filter(|&c| c == at || kin(c))
                        .collect();
                }
                break;
            }
            if classed && nodes[p].children.iter().any(|&c| kin(c)) {
                chosen = p;
                break;
            }
            if nodes[p].prose > nodes[at].prose * 1.05 + 0.5 {
                break;
            }
            at = p;
        }
    }
    if sections.is_empty() {
        sections.push(chosen);
    }
    continued(&nodes, &mut sections);
    let mut blocks = lead(&nodes, sections[0]);
    if blocks.is_empty() {
        blocks = after_the_title(&nodes, sections[0]);
    }
    // (in document order, each once: a block can be boilerplate by two of the edges' tests)
    let mut tail: Vec<usize> = sections.iter().flat_map(|&s| edges(&nodes, s)).collect();
    tail.sort_unstable();
    tail.dedup();
    let lead = blocks.len();
    blocks.extend(sections);
    let handles = |v: Vec<usize>| v.into_iter().map(|i| Rc::clone(&nodes[i].node)).collect();
    Some(MainContent {
        roots: handles(blocks),
        lead,
        tail: handles(tail),
    })
}

/// How alike two elements are by their tag and class: the same; one's classes all among the other's (a script
/// adds a class of its own to one part of an article: `sart-content` and `tinypass_handler_single
/// sart-content`), with the fewer classes; or not.
enum Kind {
    Same,
    Within(String),
    Other,
}

fn same_kind(a: &(Option<String>, Option<String>), b: &(Option<String>, Option<String>)) -> Kind {
    if a == b {
        return Kind::Same;
    }
    let within = |x: &str, y: &str| {
        x.split_ascii_whitespace()
            .all(|t| y.split_ascii_whitespace().any(|u| u == t))
    };
    // (a class attribute of more words than any page writes is no part's mark, and comparing two such word by
    // word would take their product)
    let few = |c: &str| (1..=MAX_CLASSES).contains(&c.split_ascii_whitespace().count());
    match (a.0 == b.0, &a.1, &b.1) {
        (true, Some(x), Some(y)) if few(x) && few(y) => {
            if within(x, y) {
                Kind::Within(x.clone())
            } else if within(y, x) {
                Kind::Within(y.clone())
            } else {
                Kind::Other
            }
        }
        _ => Kind::Other,
    }
}

/// A class the page gives at most this many elements names parts of one thing, not a layout's columns.
const RARE_CLASS: usize = 6;

/// The most words a class attribute compared word by word may hold.
const MAX_CLASSES: usize = 32;

/// How many elements of the page carry each class, counted when first asked (most pages never ask).
struct ClassUses<'a> {
    nodes: &'a [Info],
    counts: std::cell::OnceCell<std::collections::HashMap<String, usize>>,
}

impl<'a> ClassUses<'a> {
    fn new(nodes: &'a [Info]) -> Self {
        ClassUses {
            nodes,
            counts: std::cell::OnceCell::new(),
        }
    }

    fn get(&self, class: &str) -> usize {
        let counts = self.counts.get_or_init(|| {
            let mut counts = std::collections::HashMap::new();
            for n in self.nodes {
                if let Some(c) = crate::attr(&n.node, "class") {
                    // (an element counts once for a class it names twice)
                    let mut classes: Vec<&str> = c.split_ascii_whitespace().collect();
                    classes.sort_unstable();
                    classes.dedup();
                    for t in classes {
                        *counts.entry(t.to_owned()).or_default() += 1;
                    }
                }
            }
            counts
        });
        counts.get(class).copied().unwrap_or(0)
    }
}

/// The article's paragraphs elsewhere on the page: when most of the chosen sections' paragraphs of prose share a
/// tag and a class (a CMS's `story-text__paragraph`), the containers of such paragraphs outside them — two or
/// more, or one of 200 characters — are parts of the article too (an article cut in two around an advertisement,
/// each part in a section of its own), added in document order.
fn continued(nodes: &[Info], sections: &mut Vec<usize>) {
    let class_of = |i: usize| crate::attr(&nodes[i].node, "class").filter(|c| !c.trim().is_empty());
    let is_prose_p = |i: usize| tag(&nodes[i].node) == Some("p") && nodes[i].text >= 80;
    // what the sections hold, and their ancestors (each walk up stops where another's began)
    let mut within = vec![false; nodes.len()];
    let mut above = vec![false; nodes.len()];
    for &s in sections.iter() {
        within[s..nodes[s].end].fill(true);
        let mut up = nodes[s].parent;
        while let Some(a) = up.filter(|&a| !above[a]) {
            above[a] = true;
            up = nodes[a].parent;
        }
    }
    // (ordered: a tie between two classes is broken the same way every run)
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut total = 0;
    for &s in sections.iter() {
        for i in s + 1..nodes[s].end {
            if is_prose_p(i) {
                total += 1;
                if let Some(c) = class_of(i) {
                    *counts.entry(c).or_default() += 1;
                }
            }
        }
    }
    let Some((class, n)) = counts.into_iter().max_by_key(|&(_, n)| n) else {
        return;
    };
    if n < 3 || n * 2 < total {
        return;
    }
    // the parents of the same paragraphs outside the sections, with what they hold of them
    let mut parts: std::collections::HashMap<usize, (usize, usize)> =
        std::collections::HashMap::new();
    for i in 0..nodes.len() {
        if tag(&nodes[i].node) != Some("p") || within[i] || class_of(i).as_deref() != Some(&class) {
            continue;
        }
        let Some(p) = nodes[i].parent.filter(|&p| !above[p]) else {
            continue;
        };
        let part = parts.entry(p).or_default();
        part.0 += 1;
        part.1 += nodes[i].text;
    }
    let mut parts: Vec<usize> = parts
        .into_iter()
        .filter(|&(_, (k, chars))| k >= 2 || chars >= 200)
        .map(|(p, _)| p)
        .collect();
    if parts.is_empty() {
        return;
    }
    // a part inside another is written with it (pre-order: an ancestor comes first)
    parts.sort_unstable();
    let mut outer: Vec<usize> = Vec::new();
    for p in parts {
        if !outer.last().is_some_and(|&o| is_below(nodes, p, o)) {
            outer.push(p);
        }
    }
    sections.extend(outer);
    sections.sort_unstable();
}

/// A title: an `<h1>` with a few characters of text (not an empty one around a logo's image).
fn is_title(n: &Info) -> bool {
    tag(&n.node) == Some("h1") && n.text >= 3
}

/// A table is a part of an article, never its container, as a list is: when its body or a row outscores the rest
/// — its cells vote as paragraphs for their row and the table's body — the element that holds the table is the
/// candidate, with the prose around it. A cell stays: an old site's layout puts its article in one; and so does a
/// table that frames the whole page (held by the `<body>`).
fn holding_the_table(nodes: &[Info], best: usize) -> usize {
    let mut at = best;
    while matches!(
        tag(&nodes[at].node),
        Some("tr" | "tbody" | "thead" | "tfoot")
    ) {
        match nodes[at].parent {
            Some(p) => at = p,
            None => return best,
        }
    }
    match (tag(&nodes[at].node), nodes[at].parent) {
        (Some("table"), Some(holder))
            if !matches!(tag(&nodes[holder].node), Some("body" | "html")) =>
        {
            holder
        }
        _ => best,
    }
}

/// The part of the page its title heads, when the scores chose an element outside it.
///
/// For each title (`<h1>`), its region is its nearest ancestor that holds at least half the prose of `best`.
/// When every title has a region short of the page's body and none of them holds `best` (nor lies within it),
/// `best` is a box elsewhere on the page whose few sentences outscored an article made of short lines — a
/// contact dialog, a reviews widget or an author box beside a recipe's steps and ingredients or a product's
/// features. The region of the most prose — the title and what it heads — is the candidate instead. A title over
/// nothing but the site's name (in a header, a logo) has no region short of the body, and changes nothing.
fn under_the_title(nodes: &[Info], best: usize) -> Option<usize> {
    let holds = |a: usize, i: usize| a <= i && i < nodes[a].end;
    let mut regions = Vec::new();
    for h in (0..nodes.len()).filter(|&i| is_title(&nodes[i])) {
        let mut up = nodes[h].parent;
        let region = loop {
            let a = up?;
            if matches!(tag(&nodes[a].node), Some("body" | "html")) {
                return None;
            }
            if nodes[a].prose >= nodes[best].prose * 0.5 {
                break a;
            }
            up = nodes[a].parent;
        };
        if holds(region, best) || holds(best, region) {
            return None;
        }
        regions.push(region);
    }
    regions
        .into_iter()
        .max_by(|&a, &b| nodes[a].prose.total_cmp(&nodes[b].prose))
}

/// Commas that part clauses (`，` and `、` too), not those of a number (`2,3 %`, `1,000`).
fn clause_commas(text: &str) -> usize {
    let bytes = text.as_bytes();
    text.match_indices([',', '，', '、'])
        .filter(|&(i, c)| {
            c != ","
                || !(i > 0
                    && bytes[i - 1].is_ascii_digit()
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        })
        .count()
}

/// The text below a node (the node itself, when it is text).
pub(crate) fn text_of(node: &Handle) -> String {
    match &node.data {
        NodeData::Text { contents } => contents.borrow().to_string(),
        _ => {
            let mut out = String::new();
            let mut stack = vec![Rc::clone(node)];
            while let Some(n) = stack.pop() {
                if let NodeData::Text { contents } = &n.data {
                    out.push_str(&contents.borrow());
                    out.push(' ');
                }
                stack.extend(n.children.borrow().iter().rev().cloned());
            }
            out
        }
    }
}

/// Does a sentence end in this text: a letter, then a closing mark (`colon`: a colon counts)?
fn ends_a_sentence(text: &str, colon: bool) -> bool {
    sentence_end(text, colon, false)
}

/// Does a sentence end in this element's text, a link's end before its closing mark counting too (`…a <a>public
/// health emergency</a>.`: [`text_of`] joins the two text nodes with a space)? For telling prose from boxes of
/// links; a label's test stays strict ("All the results [here].", "Read the rest [here]." read as labels).
fn sentences_with_links(node: &Handle) -> bool {
    sentence_end(&text_of(node), false, true)
}

/// A closing mark right after a letter (`spaced`: white space may stand between them).
fn sentence_end(text: &str, colon: bool, spaced: bool) -> bool {
    text.char_indices().any(|(i, c)| {
        (matches!(c, '.' | '!' | '?' | '…' | '。' | '！' | '？')
            || (colon && matches!(c, ':' | '：')))
            && text[..i]
                .chars()
                .rev()
                .find(|c| !(spaced && c.is_whitespace()))
                .is_some_and(char::is_alphabetic)
    })
}

/// The share of an element's text inside links.
fn density(n: &Info) -> f64 {
    n.link_text as f64 / n.text.max(1) as f64
}

/// Is node `i` below node `a`?
fn is_below(nodes: &[Info], i: usize, a: usize) -> bool {
    a < i && i < nodes[a].end
}

/// Wrappers looked into at most, one inside the other, looking for the lead (a page may nest elements by the
/// hundred thousand: the search must not recurse that deep).
const MAX_DEPTH: usize = 8;
