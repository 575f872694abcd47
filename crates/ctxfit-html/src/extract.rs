//! Main-content extraction for the aggressive level: the element whose paragraphs carry the most text with the
//! fewest links (a readability-style score), computed bottom-up without recursion.

use std::rc::Rc;

use markup5ever_rcdom::{Handle, NodeData};

use crate::render::dropped;
use crate::{tag, StripLevel};

struct Info {
    node: Handle,
    parent: Option<usize>,
    text: usize,
    link_text: usize,
    score: f64,
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
            NodeData::Text { contents } => contents
                .borrow()
                .chars()
                .filter(|c| !c.is_whitespace())
                .count(),
            _ => 0,
        };
        let i = nodes.len();
        nodes.push(Info {
            node: Rc::clone(&node),
            parent,
            text: own_text,
            link_text: 0,
            score: 0.0,
        });
        for c in node.children.borrow().iter().rev() {
            stack.push((Rc::clone(c), Some(i)));
        }
    }
    // bottom-up sums: children come after their parent in pre-order
    for i in (0..nodes.len()).rev() {
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
        if !matches!(
            tag(&nodes[i].node),
            Some("p" | "pre" | "td" | "blockquote" | "li")
        ) || nodes[i].text < 25
        {
            continue;
        }
        let commas = count_commas(&nodes[i].node);
        let vote = 1.0 + commas as f64 + (nodes[i].text as f64 / 100.0).min(3.0);
        if let Some(p) = nodes[i].parent {
            nodes[p].score += vote;
            if let Some(g) = nodes[p].parent {
                nodes[g].score += vote / 2.0;
            }
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
    if weighted(&nodes[best]) < 5.0 {
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
    Some(Rc::clone(&nodes[chosen].node))
}

fn count_commas(node: &Handle) -> usize {
    let mut n = 0;
    let mut stack = vec![Rc::clone(node)];
    while let Some(x) = stack.pop() {
        if let NodeData::Text { contents } = &x.data {
            n += contents.borrow().matches([',', '，', '、']).count();
        }
        stack.extend(x.children.borrow().iter().cloned());
    }
    n
}
