//! The lead of the chosen element: the standfirst or teaser just before it (or the prose between the title and
//! it), rendered before it.

use super::*;

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
pub(super) fn lead(nodes: &[Info], chosen: usize) -> Vec<usize> {
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
pub(super) fn after_the_title(nodes: &[Info], chosen: usize) -> Vec<usize> {
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
