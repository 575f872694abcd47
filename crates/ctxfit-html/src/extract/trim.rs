//! The edges of the chosen element: what stands around its prose and is not prose — labels, link lists, teasers
//! for other pages ("cards"), and the headings over nothing else — before its first paragraph and after its last,
//! left out.

use super::*;

/// What stands around the prose of the chosen element and is not prose itself — before its first paragraph and
/// after its last: blocks dense with links, short labels that end no sentence ("Related posts", "Share:", "Back
/// to the overview", "Home", "71 comments"), teasers for other pages (a linked title over a blurb: [`cards`]),
/// and the headings over nothing else. Sentences, tables (and the blocks that hold one), code, and lists that are
/// not mostly links stay; a wrapper that is not boilerplate as a whole is looked into.
pub(super) fn edges(nodes: &[Info], chosen: usize) -> Vec<usize> {
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
        // a label: no sentence in it (unless it is one of a series of blocks of its kind side by side, each of a
        // few words or more: a part of their text), a few words ("Share now!", "Was this useful?"), or a few
        // more that announce something with a colon ("You might also like:") — or, before the first paragraph
        // and after the last, a block (not a paragraph: that is a sentence beside linked pictures) of a short
        // text over three or more links that show no text (a bar of icons: "Would you share this article?" over
        // the networks' buttons)
        let label = || {
            n.text > 0
                // a table is content wherever it stands (a test's results, each row's first cell a link), and so
                // is a block that holds one
                && n.holds & TABLE == 0
                && (density(n) >= 0.5
                    || (!middle && n.text < LINE && {
                        let text = text_of(&n.node);
                        let words = text.split_whitespace().count();
                        words < 5
                            || !(ends_a_sentence(&text, false)
                                || words >= SERIES_WORDS && one_of_a_series(nodes, i))
                            || (words < 8 && text.trim_end().ends_with([':', '：']))
                    })
                    || (!middle && t != "p" && n.text < LINE && icon_links(&n.node) >= 3))
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

/// Lines side by side that make a series: a list of entries, not labels.
const SERIES: usize = 3;

/// Characters of text (white space not counted) under which a block is a line, which may be a label, not a
/// paragraph.
const LINE: usize = 80;

/// Words a line of a series holds at least: an entry says something ("March 2013: premiere at the Aera, Vienna"),
/// where a label names ("Share", "Related posts").
const SERIES_WORDS: usize = 5;

/// Is node `i` one of [`SERIES`] or more blocks of its tag side by side (siblings, passing over white space and
/// `<br>`s), each of [`SERIES_WORDS`] words or more and under half links? Then a line among them that ends no
/// sentence is a part of the text they make — an entry of a list written as paragraphs (a CV's dates, a
/// recipe's nutrition facts, a timeline), a last line of the article's own paragraphs — not a label: labels
/// stand apart, in blocks of their own kind or of a few words. (The walk stops once the series is long enough:
/// a page of ten thousand such lines costs a few steps a line.)
fn one_of_a_series(nodes: &[Info], i: usize) -> bool {
    let Some((mut before, mut after)) = neighbours(nodes, i) else {
        return false;
    };
    let t = tag(&nodes[i].node);
    let entry = |s: usize| {
        let n = &nodes[s];
        tag(&n.node) == t
            && density(n) < 0.5
            && text_of(&n.node)
                .split_whitespace()
                .nth(SERIES_WORDS - 1)
                .is_some()
    };
    let mut series = 1;
    for side in [&mut before as &mut dyn Iterator<Item = usize>, &mut after] {
        for s in side {
            if series >= SERIES || !entry(s) {
                break;
            }
            series += 1;
        }
    }
    series >= SERIES
}

/// The siblings of node `i` that show something, passing over white space and `<br>`s: those before it, the
/// nearest first, and those after it (`None` for the document).
fn neighbours(
    nodes: &[Info],
    i: usize,
) -> Option<(
    impl Iterator<Item = usize> + '_,
    impl Iterator<Item = usize> + '_,
)> {
    // in pre-order, so sorted
    let siblings = &nodes[nodes[i].parent?].children;
    let at = siblings.binary_search(&i).ok()?;
    let shows = move |s: &usize| nodes[*s].text > 0 && tag(&nodes[*s].node) != Some("br");
    Some((
        siblings[..at].iter().rev().copied().filter(shows),
        siblings[at + 1..].iter().copied().filter(shows),
    ))
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
    // each gap is passed over by its two neighbours at most
    let Some((mut before, mut after)) = neighbours(nodes, i) else {
        return false;
    };
    let block = |s: Option<usize>| {
        s.is_none_or(|s| {
            tag(&nodes[s].node).is_some_and(|t| {
                BLOCKS.contains(&t)
                    || HEADINGS.contains(&t)
                    || matches!(t, "ul" | "ol" | "li" | "table" | "pre" | "blockquote")
            })
        })
    };
    block(before.next()) && block(after.next())
}
