//! Main-content extraction for the aggressive level: the element whose paragraphs carry the most text with the
//! fewest links (a readability-style score), computed bottom-up without recursion.
//!
//! Paragraphs (`<p>`, `<pre>`, cells, quotes, list items, and blocks of bare text such as a `<div>` of lines
//! between `<br>`s) vote for their parent and grandparent; the best-scoring element, discounted by its link
//! density, is the candidate — unless it lies outside the part of the page the title (`<h1>`) heads, which holds
//! prose of its own: then that part is ([`under_the_title`]). It is then widened to its parent while
//! the parent adds little text and few links, to the nearest ancestor that holds twice its prose spread over two
//! or more substantial children — an article cut into sibling sections — and to the parent of a sibling of the
//! same tag and class that has prose of its own (an article body continued after an inset; when that parent is
//! the page's body, the siblings themselves are the article). Paragraphs with the class of most of the chosen
//! element's own, elsewhere on the page, bring their containers in too ([`continued`]: an article cut in two
//! around an advertisement).
//!
//! Around the chosen element: its **lead** — the standfirst or teaser just before it, often after the title in
//! the article's header — is rendered before it ([`lead`]; when the walk back finds none, the prose between the
//! title and the element: [`after_the_title`]); inside it, the **edges** — labels, link lists and
//! the headings over them, before its first paragraph of prose and after its last ("Share:", "Related posts",
//! "Back to the overview") — are left out ([`edges`]). Both read structure, length, links and punctuation, never
//! words of a language. The scoring's constants were first tuned on the 50 pages of the corpus; the lead and the
//! edges were added against the other two sets: see `cargo xtask eval-html` and docs/html.md.

use std::collections::BTreeMap;
use std::rc::Rc;

use markup5ever_rcdom::{Handle, NodeData};

use crate::render::{dropped, BLOCKS, HEADINGS};
use crate::{sum_text, tag, StripLevel};

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
pub(crate) fn main_content(document: &Handle) -> Option<MainContent> {
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
    // paragraphs vote for their parent and grandparent
    for i in 0..nodes.len() {
        // paragraphs, and blocks of bare text (a `<div>` of lines separated by `<br>`)
        let paragraph = match tag(&nodes[i].node) {
            Some("p" | "pre" | "td" | "blockquote" | "li") => nodes[i].text >= 25,
            Some("div" | "section" | "article" | "span") => nodes[i].direct_text >= 100,
            _ => false,
        };
        if !paragraph {
            continue;
        }
        let commas = sum_text(&nodes[i].node, clause_commas);
        let vote = 1.0 + commas as f64 + (nodes[i].text as f64 / 100.0).min(3.0);
        // a paragraph's own link density discounts its vote for the prose of its ancestors
        let own_links = density(&nodes[i]);
        nodes[i].prose += vote * (1.0 - own_links);
        if let Some(p) = nodes[i].parent {
            nodes[p].score += vote;
            if let Some(g) = nodes[p].parent {
                nodes[g].score += vote / 2.0;
            }
        }
    }
    for i in (1..nodes.len()).rev() {
        if let Some(p) = nodes[i].parent {
            nodes[p].prose += nodes[i].prose;
        }
    }
    let weighted = |n: &Info| {
        // the elements made for the main content count a quarter more, the page's own mark of the article's
        // body half as much again
        let tag_bonus = match tag(&n.node) {
            Some("article" | "main") => 1.25,
            _ => 1.0,
        };
        let bonus = tag_bonus * if n.marked { 1.5 } else { 1.0 };
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
        .max_by(|&a, &b| weighted(&nodes[a]).total_cmp(&weighted(&nodes[b])))?;
    if weighted(&nodes[best]) < 2.0 {
        return None;
    }
    let best = under_the_title(&nodes, best).unwrap_or(best);
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
        if parent.text as f64 <= nodes[chosen].text as f64 * 1.6
            && density < 0.25
            && weighted(parent) >= weighted(&nodes[chosen]) * 0.6
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
        if ancestor.prose >= nodes[chosen].prose * 2.0 && density < 0.25 {
            // children with a quarter of the chosen one's prose, and those with a short section's
            let quarter = nodes[chosen].prose * 0.25;
            let (mut substantial, mut sections) = (0, 0);
            for &c in &ancestor.children {
                substantial += usize::from(nodes[c].prose >= quarter);
                sections += usize::from(nodes[c].prose >= quarter.min(SECTION_PROSE));
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
    // siblings): looking from the chosen element and through the plain wrappers above it (those that add no
    // prose; a CMS wraps each block of an article in a field, an item and a paragraph), the parent holds both —
    // or, when the siblings are sections of the page's body, they are the article, in document order
    let mut sections: Vec<usize> = Vec::new();
    {
        let signature = |i: usize| {
            (
                tag(&nodes[i].node).map(str::to_owned),
                crate::attr(&nodes[i].node, "class"),
            )
        };
        let mut at = chosen;
        for _ in 0..MAX_DEPTH {
            let Some(p) = nodes[at].parent else { break };
            let mine = signature(at);
            // prose of its own: a tenth of the chosen element's, or about three paragraphs beside a long one
            let kin = |c: usize| {
                c != at
                    && nodes[c].prose >= (nodes[chosen].prose * 0.1).min(KIN_PROSE)
                    && signature(c) == mine
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

/// What stands around the prose of the chosen element and is not prose itself — before its first paragraph and
/// after its last: blocks dense with links, short labels that end no sentence ("Related posts", "Share:", "Back
/// to the overview", "Home", "71 comments"), teasers for other pages (a linked title over a blurb: [`cards`]),
/// and the headings over nothing else. Sentences, tables (and the blocks that hold one), code, and lists that are
/// not mostly links stay; a wrapper that is not boilerplate as a whole is looked into.
fn edges(nodes: &[Info], chosen: usize) -> Vec<usize> {
    let end = nodes[chosen].end;
    // teasers for other pages (a card: a linked heading over a blurb) are no paragraphs of the article, and
    // before its first paragraph and after its last they go as boxes of links do — unless they are most of the
    // chosen element's text and the rest is short: a page of teasers (a section's front page, over an
    // introduction) is its cards, an article of a few pages' length followed by thirty teasers is not
    let in_card = cards(nodes, chosen);
    let card_text: usize = (chosen + 1..end)
        .filter(|&i| {
            in_card[i - chosen]
                && !nodes[i]
                    .parent
                    .is_some_and(|p| p > chosen && in_card[p - chosen])
        })
        .map(|i| nodes[i].text)
        .sum();
    let card = |i: usize| {
        in_card[i - chosen]
            && (card_text * 2 <= nodes[chosen].text
                || nodes[chosen].text - card_text >= ARTICLE_BESIDE_CARDS)
    };
    let prose = |i: usize| {
        let n = &nodes[i];
        if card(i) {
            return false;
        }
        let paragraph = match (&n.node.data, tag(&n.node)) {
            (NodeData::Text { .. }, _) => true,
            (_, Some("p" | "pre" | "blockquote" | "li" | "td" | "dd")) => true,
            (_, Some("div" | "section" | "article")) => n.direct_text >= 80,
            _ => false,
        };
        paragraph && n.text >= 80 && density(n) < 0.3 && ends_a_sentence(&text_of(&n.node), false)
    };
    let Some(first) = (chosen + 1..end).find(|&i| prose(i)) else {
        return Vec::new();
    };
    let last = (first..end).rev().find(|&i| prose(i)).unwrap_or(first);
    let after_last = nodes[last].end;
    let mut out = boilerplate(nodes, chosen + 1, first, end, false, Some(first), &card);
    // between them: boxes of links, with the headings over them
    out.extend(boilerplate(
        nodes,
        first,
        after_last,
        after_last,
        true,
        Some(last),
        &card,
    ));
    // between them: a short paragraph or block that is a label and a link ("Read more: …", "See also: …", a box
    // of "Explore further" over one link)
    out.extend((first..after_last).filter(|&i| {
        let n = &nodes[i];
        let own = n.text.saturating_sub(n.link_text);
        matches!(tag(&n.node), Some("p" | "div" | "section" | "aside"))
            && n.text < 200
            && density(n) >= 0.6
            && (3..30).contains(&own)
    }));
    out.extend(boilerplate(nodes, after_last, end, end, false, None, &card));
    out
}

/// Text of its own (characters, white space not counted) that makes the chosen element an article however many
/// teaser cards follow it: a few paragraphs.
const ARTICLE_BESIDE_CARDS: usize = 2_000;

/// Longest text beside its linked title that a teaser card holds: a blurb of a sentence or two.
const CARD_BLURB: usize = 300;

/// Is node `i` a teaser for another page: a block whose heading is a link (a title linking to the page it
/// teases), with at most a blurb of text beside it ("Related", "Read next", a magazine's other stories) — or a
/// block with a heading, a link and an excerpt of the other page cut off with an ellipsis (a title over the
/// first lines of an article and a "read on" link: the whole card is the link)? `last_text` is the last text
/// node of `i`'s subtree outside the links in it.
fn card_shaped(nodes: &[Info], i: usize, last_text: Option<usize>) -> bool {
    let n = &nodes[i];
    let own = n.text.saturating_sub(n.link_text);
    matches!(
        tag(&n.node),
        Some("div" | "article" | "section" | "li" | "aside")
    ) && ((n.holds & LINKED_HEADING != 0 && own <= CARD_BLURB)
        || (n.holds & HEADING != 0
            && n.link_text > 0
            && own <= 2 * CARD_BLURB
            && last_text.is_some_and(|k| cut_off(&nodes[k]))))
}

/// Does a text node end with an ellipsis: an excerpt cut off?
fn cut_off(text: &Info) -> bool {
    match &text.node.data {
        NodeData::Text { contents } => {
            let text = contents.borrow();
            let text = text.trim_end();
            text.ends_with('…') || text.ends_with("...")
        }
        _ => false,
    }
}

/// Which of the nodes `chosen..end` are in a teaser card (`[k - chosen]`): the card-shaped blocks and what they
/// hold.
fn cards(nodes: &[Info], chosen: usize) -> Vec<bool> {
    let end = nodes[chosen].end;
    // the last text node of each subtree outside the links in it, bottom-up: one pass, whatever the nesting
    let mut last_text: Vec<Option<usize>> = vec![None; end - chosen];
    for i in (chosen + 1..end).rev() {
        last_text[i - chosen] = match nodes[i].node.data {
            NodeData::Text { .. } => (nodes[i].text > 0).then_some(i),
            _ => nodes[i]
                .children
                .iter()
                .rev()
                .filter(|&&c| !crate::is_link(&nodes[c].node))
                .find_map(|&c| last_text[c - chosen]),
        };
    }
    let mut inside = vec![false; end - chosen];
    for i in chosen + 1..end {
        let parent = nodes[i].parent.filter(|&p| p > chosen);
        inside[i - chosen] = parent.is_some_and(|p| inside[p - chosen])
            || card_shaped(nodes, i, last_text[i - chosen]);
    }
    inside
}

/// The share of an element's text inside links.
fn density(n: &Info) -> f64 {
    n.link_text as f64 / n.text.max(1) as f64
}

/// The boilerplate blocks among the nodes `from..to` in pre-order (inside a subtree ending at `end`); the
/// ancestors of `keep` (a paragraph of prose) are looked into, never judged. Before the first paragraph and after
/// the last, labels and links go, and the headings over nothing else (a heading right over a kept one of a lower
/// rank heads subsections, not nothing); between them (`middle`), boxes of links
/// and the headings over them, and the short labels whose box lost what they labelled (a table of contents'
/// title over its navigation, an advertisement's label over its box).
fn boilerplate(
    nodes: &[Info],
    from: usize,
    to: usize,
    end: usize,
    middle: bool,
    keep: Option<usize>,
    card: &dyn Fn(usize) -> bool,
) -> Vec<usize> {
    let skip = |at: usize| nodes[at].end.min(end);
    // between paragraphs too: the label left behind by what it labelled (the title of a table of contents whose
    // list, a navigation, is gone)
    let orphan = |at: usize| {
        let n = &nodes[at];
        n.lost && n.text < 40 && {
            // (the text left: what was left out is not in the list)
            let text: String = (at..n.end)
                .filter_map(|k| match &nodes[k].node.data {
                    NodeData::Text { contents } => Some(format!("{} ", contents.borrow())),
                    _ => None,
                })
                .collect();
            text.split_whitespace().count() < 5 && !ends_a_sentence(&text, true)
        }
    };
    // the blocks, in order: (index, heading, boilerplate)
    let mut blocks: Vec<(usize, bool, bool)> = Vec::new();
    let mut i = from;
    while i < to {
        let n = &nodes[i];
        if keep.is_some_and(|k| is_below(nodes, k, i)) {
            i += 1;
            continue;
        }
        let Some(t) = tag(&n.node) else {
            if n.text > 0 {
                blocks.push((i, false, false));
            }
            i += 1;
            continue;
        };
        // a label: no sentence in it, a few words ("Share now!", "Was this useful?"), or a few more that announce
        // something with a colon ("You might also like:") — or, before the first paragraph and after the last,
        // a block (not a paragraph: that is a sentence beside linked pictures) of a short text over three or more
        // links that show no text (a bar of icons: "Would you share this article?" over the networks' buttons)
        let label = || {
            n.text > 0
                // a table is content wherever it stands (a test's results, each row's first cell a link), and so
                // is a block that holds one
                && n.holds & TABLE == 0
                && (density(n) >= 0.5
                    || (!middle && n.text < 80 && {
                        let text = text_of(&n.node);
                        let words = text.split_whitespace().count();
                        words < 5
                            || !ends_a_sentence(&text, false)
                            || (words < 8 && text.trim_end().ends_with([':', '：']))
                    })
                    || (!middle && t != "p" && n.text < 80 && icon_links(&n.node) >= 3))
        };
        match t {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => blocks.push((i, true, false)),
            "table" | "pre" | "code" => blocks.push((i, false, false)),
            "ul" | "ol" | "dl" => blocks.push((i, false, n.text > 0 && density(n) >= 0.5)),
            "p" | "blockquote" | "figure" | "figcaption" | "address" | "li" | "dd" | "dt" => {
                // between the paragraphs, a paragraph of sentences is prose however many of its words are links
                // ("The haze led to [canceled flights], [closed schools] and a [public health emergency].")
                let prose = || {
                    middle
                        && t == "p"
                        && n.text.saturating_sub(n.link_text) >= 30
                        && sentences_with_links(&n.node)
                };
                blocks.push((i, false, (label() && !prose()) || (!middle && card(i))))
            }
            "div" | "section" | "article" | "aside" | "header" | "footer" | "nav" | "form"
            | "center" | "details" | "fieldset" => {
                if label() || (!middle && card(i)) || (middle && orphan(i)) {
                    blocks.push((i, false, true));
                } else {
                    // not boilerplate as a whole: look into it
                    i += 1;
                    continue;
                }
            }
            // inline content: part of the prose around it — unless, after the last paragraph, a link or a
            // wrapper of text stands alone between blocks (a byline's link, a `<time>`, "back to the list"):
            // then it is judged as a block is (a formula, code or a quotation is content wherever it stands)
            _ => {
                if n.text > 0 {
                    let wrapper = matches!(
                        t,
                        "a" | "span" | "time" | "b" | "strong" | "em" | "i" | "small" | "font"
                    );
                    let alone = wrapper && !middle && keep.is_none() && stands_alone(nodes, i);
                    blocks.push((i, false, alone && label()));
                }
            }
        }
        i = skip(i);
    }
    // a heading goes too when what follows it, up to the next heading, all goes (and something does); the
    // headings before the first paragraph stay: the title and the first section's
    let mut out = Vec::new();
    // (from the last block back: whether a heading heads kept subsections is known when it is reached)
    let mut gone = vec![false; blocks.len()];
    let rank = |i: usize| tag(&nodes[i].node).and_then(|t| t.strip_prefix('h')?.parse::<u8>().ok());
    for (k, &(at, heading, goes)) in blocks.iter().enumerate().rev() {
        if !heading {
            // between paragraphs, a box of links (two or more), and what goes with its heading (below)
            let links = || {
                crate::descendants(&nodes[at].node)
                    .filter(crate::is_link)
                    .take(2)
                    .count()
            };
            if goes && (!middle || links() >= 2 || orphan(at)) {
                out.push(at);
                gone[k] = true;
            }
            continue;
        }
        let under: Vec<_> = blocks[k + 1..].iter().take_while(|b| !b.1).collect();
        let all = under.iter().all(|b| b.2);
        // a heading right over a kept heading of a lower rank heads a section of subsections (`<h2>` over
        // `<h3>`), not nothing
        let subsections = under.is_empty()
            && blocks
                .get(k + 1)
                .is_some_and(|&(next, _, _)| rank(next) > rank(at))
            && !gone[k + 1];
        if middle && all && !under.is_empty() {
            out.push(at);
            out.extend(under.iter().map(|b| b.0));
            gone[k] = true;
        } else if to == end && all && !subsections {
            out.push(at);
            gone[k] = true;
        }
    }
    out
}

/// Links below `node` that show no text (icons: a bar of "share on …" buttons), counted up to three.
fn icon_links(node: &Handle) -> usize {
    crate::descendants(node)
        .filter(|d| crate::is_link(d) && crate::sum_text(d, crate::visible_chars) == 0)
        .take(3)
        .count()
}

/// Does node `i` stand apart from the text around it: is each sibling next to it (passing over white space and
/// `<br>`s) a block, or none?
fn stands_alone(nodes: &[Info], i: usize) -> bool {
    let Some(parent) = nodes[i].parent else {
        return false;
    };
    // in pre-order, so sorted; each gap is passed over by its two neighbours at most
    let siblings = &nodes[parent].children;
    let Ok(at) = siblings.binary_search(&i) else {
        return false;
    };
    let gap = |&&s: &&usize| nodes[s].text == 0 || tag(&nodes[s].node) == Some("br");
    let block = |s: Option<&usize>| {
        s.is_none_or(|&s| {
            tag(&nodes[s].node).is_some_and(|t| {
                BLOCKS.contains(&t)
                    || HEADINGS.contains(&t)
                    || matches!(t, "ul" | "ol" | "li" | "table" | "pre" | "blockquote")
            })
        })
    };
    block(siblings[..at].iter().rev().find(|s| !gap(s)))
        && block(siblings[at + 1..].iter().find(|s| !gap(s)))
}

/// Is node `i` below node `a`?
fn is_below(nodes: &[Info], i: usize, a: usize) -> bool {
    a < i && i < nodes[a].end
}

/// Wrappers looked into at most, one inside the other, looking for the lead (a page may nest elements by the
/// hundred thousand: the search must not recurse that deep).
const MAX_DEPTH: usize = 8;

/// The prose (paragraphs' votes: about three each) that makes a sibling of the same kind a part of the article
/// however long the chosen part is.
const KIN_PROSE: f64 = 10.0;

/// The prose of a short section of an article: a paragraph of two or three sentences.
const SECTION_PROSE: f64 = 5.0;

/// Blocks of the lead kept at most, and their characters at most.
const LEAD_BLOCKS: usize = 3;
const LEAD_CHARS: usize = 1_500;

/// The lead of the chosen element: the blocks of prose just before it — a teaser or standfirst above the body,
/// often a sibling of the body's element or of one of its two nearest ancestors — in document order.
///
/// Walking back from the chosen element (then from its parent, then its grandparent), a block of prose (40+
/// characters, few links, a sentence's punctuation, short beside the article) is kept; a short block (a date, a
/// byline, a caption, an empty wrapper) is passed over; the walk stops at a heading of the first rank (the
/// article's title: what precedes it is the page's, not the article's), at a block dense with links (navigation,
/// breadcrumbs), at a block of prose too long to be a lead (another article), or when the lead is full.
fn lead(nodes: &[Info], chosen: usize) -> Vec<usize> {
    let mut lead = Lead {
        nodes,
        chosen,
        out: Vec::new(),
        chars: 0,
    };
    let mut at = chosen;
    'levels: for _ in 0..4 {
        let Some(p) = nodes[at].parent else { break };
        if matches!(tag(&nodes[p].node), Some("body" | "html")) || nodes[p].parent.is_none() {
            break;
        }
        let before: Vec<usize> = nodes[p]
            .children
            .iter()
            .copied()
            .take_while(|&c| c != at)
            .collect();
        for &s in before.iter().rev() {
            match lead.visit(s, 0) {
                Judged::Take | Judged::Pass => {}
                Judged::Stop => break 'levels,
                Judged::Title => {
                    // the title's block: what follows the title in it is the lead's beginning
                    lead.after_title(s, 0);
                    break 'levels;
                }
            }
            if lead.full() {
                break 'levels;
            }
        }
        at = p;
    }
    finish(lead.out)
}

/// What [`lead`] makes of a block.
enum Judged {
    /// Prose: part of the lead.
    Take,
    /// Not prose, and no end to the lead either: a date, a byline, a caption, a picture, a heading, a list.
    Pass,
    /// The end of the lead: links, or more prose than a lead.
    Stop,
    /// The article's title, or a block that holds it.
    Title,
}

struct Lead<'a> {
    nodes: &'a [Info],
    chosen: usize,
    out: Vec<usize>,
    chars: usize,
}

impl Lead<'_> {
    fn full(&self) -> bool {
        self.out.len() >= LEAD_BLOCKS
    }

    /// Judge a block; a wrapper that is no lead itself but holds more than one kind of thing (a title, a
    /// picture, the lead) is looked into, from its end.
    fn visit(&mut self, s: usize, depth: usize) -> Judged {
        let judged = self.judge(s);
        let n = &self.nodes[s];
        let wrapper = matches!(
            tag(&n.node),
            Some("div" | "header" | "section" | "hgroup" | "span")
        );
        if !matches!(judged, Judged::Pass) || !wrapper || n.text < 40 || depth >= MAX_DEPTH {
            return judged;
        }
        for &c in n.children.iter().rev() {
            match self.visit(c, depth + 1) {
                Judged::Stop => return Judged::Stop,
                Judged::Title => {
                    self.after_title(c, depth + 1);
                    return Judged::Stop;
                }
                Judged::Take | Judged::Pass => {}
            }
            if self.full() {
                return Judged::Stop;
            }
        }
        Judged::Pass
    }

    fn judge(&mut self, s: usize) -> Judged {
        let n = &self.nodes[s];
        if !matches!(n.node.data, NodeData::Element { .. }) {
            return if n.text >= 40 {
                Judged::Stop
            } else {
                Judged::Pass
            };
        }
        let t = tag(&n.node).unwrap_or("");
        if n.holds & H1 != 0 {
            return Judged::Title;
        }
        // what its descendants hold (not itself)
        let inside = n
            .children
            .iter()
            .fold(0, |acc, &c| acc | self.nodes[c].holds);
        if n.text < 40 {
            return Judged::Pass;
        }
        let density = density(n);
        if density >= 0.5 {
            return Judged::Stop;
        }
        let sentence = ends_a_sentence(&text_of(&n.node), false);
        // a standfirst set as a heading is a sentence of some length
        let heading = matches!(t, "h2" | "h3" | "h4" | "h5" | "h6");
        let aside = (heading && (n.text < 80 || !sentence))
            || matches!(t, "figure" | "figcaption" | "ul" | "ol" | "dl" | "table")
            || inside & (HEADING | MEDIA | ITEM) != 0;
        if aside {
            return Judged::Pass;
        }
        if n.text > LEAD_CHARS
            || n.text * 2 > self.nodes[self.chosen].text
            || self.chars + n.text > LEAD_CHARS
        {
            return Judged::Stop;
        }
        if density < 0.25 && sentence {
            self.out.push(s);
            self.chars += n.text;
            Judged::Take
        } else {
            Judged::Pass
        }
    }

    /// The blocks after the title inside the block `s` that holds it, the title's own wrapper first: up to the
    /// first that ends the lead. Returns whether the lead ended.
    fn after_title(&mut self, s: usize, depth: usize) -> bool {
        let kids = &self.nodes[s].children;
        let Some(k) = kids.iter().position(|&c| self.nodes[c].holds & H1 != 0) else {
            return true;
        };
        if depth >= MAX_DEPTH {
            return true;
        }
        if tag(&self.nodes[kids[k]].node) != Some("h1") && self.after_title(kids[k], depth + 1) {
            return true;
        }
        for &c in &kids[k + 1..] {
            if matches!(self.visit(c, depth + 1), Judged::Stop | Judged::Title) || self.full() {
                return true;
            }
        }
        false
    }
}

/// When the walk back from the chosen element finds no lead (a link, a byline or a share bar ended it first):
/// the blocks of prose between the page's title and the chosen element, when both are in the same part of the
/// page (their nearest common ancestor is not the body) and little stands between them — a standfirst set
/// apart from the body by a byline, a date and a picture. A block is taken as [`lead`] takes one, and only when
/// it ends as a sentence ends (a byline's `C.` or an e-mail address's dot is no sentence); pictures, captions,
/// lists, tables, dates and addresses are passed over. Of several titles (`<h1>`) before the chosen element, the
/// nearest of the last three with such blocks after it.
fn after_the_title(nodes: &[Info], chosen: usize) -> Vec<usize> {
    // (a page may hold more than one: a CMS's leftover widget, a section's label)
    (0..chosen)
        .rev()
        .filter(|&i| is_title(&nodes[i]) && nodes[i].end <= chosen)
        .take(3)
        .map(|title| after(nodes, chosen, title))
        .find(|blocks| !blocks.is_empty())
        .unwrap_or_default()
}

/// The blocks of prose between `title` and the chosen element (see [`after_the_title`]).
fn after(nodes: &[Info], chosen: usize, title: usize) -> Vec<usize> {
    let mut common = nodes[title].parent;
    while let Some(a) = common.filter(|&a| nodes[a].end <= chosen) {
        common = nodes[a].parent;
    }
    if common.is_none_or(|a| matches!(tag(&nodes[a].node), Some("body" | "html"))) {
        return Vec::new();
    }
    let between: usize = (nodes[title].end..chosen)
        .filter(|&i| matches!(nodes[i].node.data, NodeData::Text { .. }))
        .map(|i| nodes[i].text)
        .sum();
    if between > 2 * LEAD_CHARS || between * 2 > nodes[chosen].text {
        return Vec::new();
    }
    let (mut out, mut chars) = (Vec::new(), 0);
    let mut i = nodes[title].end;
    while i < chosen && out.len() < LEAD_BLOCKS {
        let n = &nodes[i];
        let t = tag(&n.node).unwrap_or("");
        if matches!(
            t,
            "figure" | "figcaption" | "ul" | "ol" | "dl" | "table" | "time" | "address"
        ) {
            i = n.end;
            continue;
        }
        let block = matches!(
            t,
            "p" | "div"
                | "section"
                | "header"
                | "span"
                | "blockquote"
                | "strong"
                | "em"
                | "b"
                | "h2"
                | "h3"
                | "h4"
                | "h5"
                | "h6"
        );
        // an ancestor of the chosen element is looked into, never taken
        if block && n.end <= chosen && n.text >= 40 && density(n) < 0.25 {
            let inside = n.children.iter().fold(0, |acc, &c| acc | nodes[c].holds);
            let text = text_of(&n.node);
            if inside & (H1 | HEADING | MEDIA | ITEM) == 0 && ends_as_a_sentence(&text) {
                if chars + n.text > LEAD_CHARS {
                    break;
                }
                chars += n.text;
                out.push(i);
                i = n.end;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Does the text end as a sentence ends: a letter, then a closing mark, then at most quotes and brackets?
fn ends_as_a_sentence(text: &str) -> bool {
    let t = text
        .trim_end()
        .trim_end_matches(['"', '\'', '”', '“', '»', '«', ')', '’', ' ']);
    t.ends_with(['.', '!', '?', '…', '。', '！', '？'])
        && t[..t.len() - t.chars().next_back().map_or(0, char::len_utf8)]
            .chars()
            .next_back()
            .is_some_and(char::is_alphabetic)
}

/// Indices in document order (the nodes are in pre-order).
fn finish(mut blocks: Vec<usize>) -> Vec<usize> {
    blocks.sort_unstable();
    blocks
}
