//! Main-content extraction for the aggressive level: the element whose paragraphs carry the most text with the
//! fewest links (a readability-style score), computed bottom-up without recursion.
//!
//! Paragraphs (`<p>`, `<pre>`, cells, quotes, list items, and blocks of bare text such as a `<div>` of lines
//! between `<br>`s) vote for their parent and grandparent; the best-scoring element, discounted by its link
//! density, is the candidate. It is then widened to its parent while the parent adds little text and few links,
//! to the nearest ancestor that holds twice its prose spread over two or more substantial children — an
//! article cut into sibling sections — and to the parent of a sibling of the same tag and class that has prose
//! of its own (an article body continued after an inset). The constants were tuned on the 50 pages of the corpus (there is no
//! held-out set): see `cargo xtask eval-html`.

use std::rc::Rc;

use markup5ever_rcdom::{Handle, NodeData};

use crate::render::dropped;
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
}

/// The main-content element, or `None` when no element holds enough paragraph text to be sure.
pub(crate) fn main_content(document: &Handle) -> Option<Handle> {
    // pre-order list with parents; dropped subtrees are left out
    let mut nodes: Vec<Info> = Vec::new();
    let mut stack: Vec<(Handle, Option<usize>)> = vec![(Rc::clone(document), None)];
    while let Some((node, parent)) = stack.pop() {
        if dropped(&node, StripLevel::Aggressive) {
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
        if let (Some(p), NodeData::Text { .. }) = (nodes[i].parent, &nodes[i].node.data) {
            nodes[p].direct_text += nodes[i].text;
        }
        if tag(&nodes[i].node) == Some("a") {
            nodes[i].link_text = nodes[i].text;
        }
        if let Some(p) = nodes[i].parent {
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
        let commas = sum_text(&nodes[i].node, |t| t.matches([',', '，', '、']).count());
        let vote = 1.0 + commas as f64 + (nodes[i].text as f64 / 100.0).min(3.0);
        // a paragraph's own link density discounts its vote for the prose of its ancestors
        let own_links = nodes[i].link_text as f64 / nodes[i].text.max(1) as f64;
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
        let density = if n.text == 0 {
            1.0
        } else {
            n.link_text as f64 / n.text as f64
        };
        let bonus = match tag(&n.node) {
            Some("article" | "main") => 1.25,
            _ => 1.0,
        };
        n.score * (1.0 - density) * bonus
    };
    let best = (0..nodes.len())
        .filter(|&i| matches!(nodes[i].node.data, NodeData::Element { .. }))
        .max_by(|&a, &b| weighted(&nodes[a]).total_cmp(&weighted(&nodes[b])))?;
    if weighted(&nodes[best]) < 2.0 {
        return None;
    }
    // widen to the parent when the best candidate holds only part of the parent's prose
    let mut chosen = best;
    while let Some(p) = nodes[chosen].parent {
        let parent = &nodes[p];
        let density = parent.link_text as f64 / parent.text.max(1) as f64;
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
    // prose, spread over two or more children of substance
    let mut up = nodes[chosen].parent;
    while let Some(a) = up {
        let ancestor = &nodes[a];
        if matches!(tag(&ancestor.node), Some("body" | "html")) || ancestor.parent.is_none() {
            break;
        }
        let density = ancestor.link_text as f64 / ancestor.text.max(1) as f64;
        if ancestor.prose >= nodes[chosen].prose * 2.0 && density < 0.25 {
            let substantial = ancestor
                .children
                .iter()
                .filter(|&&c| nodes[c].prose >= nodes[chosen].prose * 0.25)
                .take(2)
                .count();
            if substantial >= 2 {
                chosen = a;
                break;
            }
        }
        up = ancestor.parent;
    }
    // the article continued in a sibling of the same kind (same tag and class, as readability merges
    // siblings): looking from the chosen element and through one plain wrapper above it, the parent holds both
    {
        let signature = |i: usize| {
            (
                tag(&nodes[i].node).map(str::to_owned),
                crate::attr(&nodes[i].node, "class"),
            )
        };
        let mut at = chosen;
        for _ in 0..2 {
            let Some(p) = nodes[at].parent else { break };
            if matches!(tag(&nodes[p].node), Some("body" | "html")) {
                break;
            }
            let mine = signature(at);
            if mine.1.as_deref().is_some_and(|c| !c.trim().is_empty())
                && nodes[p].children.iter().any(|&c| {
                    c != at && nodes[c].prose >= nodes[chosen].prose * 0.1 && signature(c) == mine
                })
            {
                chosen = p;
                break;
            }
            if nodes[p].prose > nodes[at].prose * 1.05 + 0.5 {
                break;
            }
            at = p;
        }
    }
    Some(Rc::clone(&nodes[chosen].node))
}
