//! Link lists for the moderate level: blocks that are mostly links — menus outside a `<nav>`, tag clouds,
//! "more stories" lists, pagers, tables of contents — found by link density, computed bottom-up without
//! recursion.
//!
//! A block (`div`, `section`, `header`, `ul`, `ol`, `dl`, `table`, `p`) is a link list when it holds
//! [`MIN_LINKS`] links or more, its link text is more than half of its text, and the text outside its links is
//! under [`MAX_OWN_TEXT`] characters: prose with links in it never qualifies, whatever it sits in.

use std::collections::HashSet;
use std::rc::Rc;

use markup5ever_rcdom::{Handle, NodeData};

use crate::strip::dropped;
use crate::{tag, StripLevel};

/// Links a block needs to be a link list.
pub(crate) const MIN_LINKS: usize = 3;
/// Characters (not counting white space) of text outside links above which a block is not a link list.
pub(crate) const MAX_OWN_TEXT: usize = 200;

const LIST_BLOCKS: &[&str] = &["div", "section", "header", "ul", "ol", "dl", "table"];

struct Counts {
    parent: Option<usize>,
    text: usize,
    link_text: usize,
    links: usize,
    in_link: bool,
}

/// The link lists below `root` (a document or an element), as node addresses (`Rc::as_ptr`), outermost and nested alike.
pub(crate) fn link_lists(root: &Handle) -> HashSet<*const markup5ever_rcdom::Node> {
    // pre-order with parents; what the moderate level drops anyway is left out
    let mut nodes: Vec<(Handle, Counts)> = Vec::new();
    let mut stack: Vec<(Handle, Option<usize>, bool)> = vec![(Rc::clone(root), None, false)];
    while let Some((node, parent, in_link)) = stack.pop() {
        if dropped(&node, StripLevel::Moderate) {
            continue;
        }
        let is_link = crate::is_link(&node);
        let text = match &node.data {
            NodeData::Text { contents } => crate::visible_chars(&contents.borrow()),
            _ => 0,
        };
        let i = nodes.len();
        let in_link = in_link || is_link;
        for c in node.children.borrow().iter() {
            stack.push((Rc::clone(c), Some(i), in_link));
        }
        nodes.push((
            node,
            Counts {
                parent,
                text,
                link_text: if in_link { text } else { 0 },
                links: usize::from(is_link),
                in_link,
            },
        ));
    }
    // children come after their parent in pre-order: sum bottom-up
    for i in (1..nodes.len()).rev() {
        let (text, link_text, links, parent) = {
            let c = &nodes[i].1;
            (c.text, c.link_text, c.links, c.parent)
        };
        if let Some(p) = parent {
            let pc = &mut nodes[p].1;
            pc.text += text;
            pc.link_text += link_text;
            pc.links += links;
        }
    }
    nodes
        .iter()
        .filter(|(node, c)| {
            !c.in_link
                && tag(node).is_some_and(|t| LIST_BLOCKS.contains(&t))
                && c.links >= MIN_LINKS
                && c.link_text * 2 > c.text
                && c.text - c.link_text < MAX_OWN_TEXT
        })
        .map(|(node, _)| Rc::as_ptr(node))
        .collect()
}
