//! What each strip level leaves out: the elements (`script` and `style` always; navigation, footers and asides from
//! `moderate`; forms, iframes, ads, cookie banners and overlays at `aggressive`), what is hidden, and the words in
//! class and id that mark boilerplate — unless an element holds an article's worth of prose. The writer
//! (`render.rs`) and the extraction (`extract.rs`) ask it.

use markup5ever_rcdom::{Handle, NodeData};

use crate::{sum_text, tag, StripLevel};

const ALWAYS_DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "img", "picture", "video", "audio", "canvas",
    "head", "object", "embed", "source", "track", "map", "area", "link", "meta", "rt", "rp",
];
const DROPPED_FROM_MODERATE: &[&str] = &["nav", "footer", "aside"];
const DROPPED_AGGRESSIVE: &[&str] = &[
    "iframe", "button", "input", "select", "textarea", "label", "dialog", "menu",
];
const MODERATE_TOKENS: &[&str] = &["sidebar", "breadcrumb", "breadcrumbs", "skip-link"];
/// Class or id words of readers' comments, dropped at the aggressive level.
const COMMENT_TOKENS: &[&str] = &["comment", "comments"];
/// Elements that stand as blocks: a blank line before and after.
pub(crate) const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "figure",
    "figcaption",
    "address",
    "details",
    "summary",
    "dl",
    "dt",
    "dd",
    "center",
    "form",
    "fieldset",
    "aside",
    "nav",
    "body",
    "html",
];
pub(crate) const HEADINGS: &[&str] = &["h1", "h2", "h3", "h4", "h5", "h6"];

/// Boilerplate class/id words, matched as whole words (`ad`, `share-bar` is not `share`).
const AGGRESSIVE_WORDS: &[&str] = &[
    "ad",
    "ads",
    "advert",
    "advertisement",
    "banner",
    "share",
    "sharing",
    "social",
    "related",
    "promo",
    "popup",
    "modal",
    "subscribe",
    "signup",
    "newsletter",
    "recommended",
    "recirculation",
];
/// Class or id words of what floats over the page.
const OVERLAY_WORDS: &[&str] = &["dialog", "modal", "popup", "overlay", "lightbox"];
/// Boilerplate markers matched inside words too (`cookie-consent`, `adsbygoogle`, `outbrain-widget`).
const AGGRESSIVE_PARTS: &[&str] = &[
    "cookie",
    "consent",
    "gdpr",
    "newsletter",
    "outbrain",
    "taboola",
    "adsbygoogle",
    "sponsor",
    "advertis",
];
/// A picture's credit or a rights line, by a part of a class or id word (`photo-credit`, `image__credit`,
/// `article-copyright`; not inside a word: `content-header__accreditation` is a standfirst's box).
const CREDIT_PARTS: &[&str] = &["credit", "copyright"];

/// An element's attribute, by name.
type Attr<'a> = &'a dyn Fn(&str) -> Option<&'a str>;

/// Class and id words of an element, lower-cased.
pub(crate) fn words(attr: Attr<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for a in ["class", "id"] {
        if let Some(v) = attr(a) {
            out.extend(v.split_whitespace().map(str::to_ascii_lowercase));
        }
    }
    out
}

pub(crate) fn hidden(attr: Attr<'_>) -> bool {
    if attr("hidden").is_some() || attr("aria-hidden").is_some_and(|v| v.trim() == "true") {
        return true;
    }
    if attr("class").is_some_and(hidden_by_class) {
        return true;
    }
    attr("style").is_some_and(|s| {
        let s: String = s
            .to_ascii_lowercase()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        s.contains("display:none") || s.contains("visibility:hidden")
    })
}

/// The CSS frameworks' classes that hide an element: `hidden` (Bootstrap 3, Tailwind), `d-none` (Bootstrap 4 and
/// 5), `hide` (Foundation, Bootstrap 2). Read mobile-first, as the frameworks are written: an element hidden at
/// the narrowest width is hidden, whatever a wider screen shows (`hidden md:block`, `d-none d-lg-block`) — a
/// desktop's sidebar or menu, or the desktop's copy of a block the phone shows in its own way. Classes that hide
/// text from the eye only (`sr-only`, `visually-hidden`) are not among them: their text is written for those who
/// read the page as text ("By", the colon between a heading's kicker and its title).
fn hidden_by_class(class: &str) -> bool {
    class.split_whitespace().any(|w| {
        ["hidden", "d-none", "hide"]
            .iter()
            .any(|h| w.eq_ignore_ascii_case(h))
    })
}

/// Does a subtree hold an article's worth of prose — three paragraphs or more, of 1,000 characters or more?
/// Some sites wrap the whole page in one `<form>`, or put a word like `paywall` or `share` on the article's
/// container: such an element is kept whatever its class says. With `bare_text`, a block of 100 characters of
/// text of its own is a paragraph too (a forum's posts, lines between `<br>`s); without, only a `<p>` is.
fn holds_prose(node: &Handle, bare_text: bool) -> bool {
    let mut stack: Vec<Handle> = node.children.borrow().iter().cloned().collect();
    let (mut paragraphs, mut chars) = (0, 0);
    while let Some(n) = stack.pop() {
        if tag(&n) == Some("p") {
            paragraphs += 1;
            chars += sum_text(&n, str::len);
            if paragraphs >= 3 && chars >= 1000 {
                return true;
            }
            continue;
        }
        if bare_text && matches!(tag(&n), Some("div" | "section" | "article" | "td")) {
            let own: usize = n
                .children
                .borrow()
                .iter()
                .map(|c| match &c.data {
                    NodeData::Text { contents } => crate::visible_chars(&contents.borrow()),
                    _ => 0,
                })
                .sum();
            if own >= 100 {
                paragraphs += 1;
                chars += own;
                if paragraphs >= 3 && chars >= 1000 {
                    return true;
                }
            }
        }
        stack.extend(n.children.borrow().iter().cloned());
    }
    false
}

/// Is this element (and everything in it) removed at `level`?
pub(crate) fn dropped(node: &Handle, level: StripLevel) -> bool {
    let NodeData::Element { name, attrs, .. } = &node.data else {
        return false;
    };
    let attrs = attrs.borrow();
    dropped_element(
        &name.local,
        &|wanted| crate::attr_of(&attrs, wanted),
        level,
        &|bare_text| holds_prose(node, bare_text),
    )
}

/// Is an element with this tag and these attributes removed at `level`? `holds_prose` is asked of an `<aside>`
/// (from the moderate level on: paragraphs only, as a sidebar's widgets are blocks of text), and at the
/// aggressive level of a `<form>` or an element with a boilerplate class word (blocks of bare text count: an
/// ASP.NET page wraps the whole page, a forum's posts too, in one `<form>`): one that wraps an article's worth of
/// prose is kept.
pub(crate) fn dropped_element(
    t: &str,
    attr: Attr<'_>,
    level: StripLevel,
    holds_prose: &dyn Fn(bool) -> bool,
) -> bool {
    if ALWAYS_DROPPED.contains(&t) {
        return true;
    }
    if level == StripLevel::Minimal {
        return false;
    }
    if hidden(attr) {
        return true;
    }
    // an element in the role of a navigation, a sidebar, the site's header or its footer (ARIA's landmarks:
    // `<div id="secondary" class="widget-area" role="complementary">`) is one — but the page's structure never
    // (a role attribute may list fallbacks: the first one is the role)
    let t = match attr("role").and_then(|r| r.split_whitespace().next()) {
        _ if matches!(t, "html" | "body" | "main" | "article") => t,
        Some("navigation" | "banner") => "nav",
        Some("complementary") => "aside",
        Some("contentinfo") => "footer",
        _ => t,
    };
    // an `<aside>` that holds an article's worth of prose is where some sites put the article
    if DROPPED_FROM_MODERATE.contains(&t) && !(t == "aside" && holds_prose(false)) {
        return true;
    }
    // class words on the page's structure describe its state (`cookies-not-set`, `has-sidebar`), not boilerplate
    if matches!(t, "html" | "body" | "main" | "article") {
        return false;
    }
    let words = words(attr);
    if words.iter().any(|w| MODERATE_TOKENS.contains(&w.as_str())) {
        return true;
    }
    // readers' comments are the page's content, not the article: gone at the aggressive level, however much
    // prose they hold
    if level == StripLevel::Aggressive && words.iter().any(|w| COMMENT_TOKENS.contains(&w.as_str()))
    {
        return true;
    }
    // what floats over the page (a dialog, a modal, a pop-up) is never the article, however much it says
    let overlay = || {
        matches!(attr("role"), Some("dialog" | "alertdialog"))
            || attr("aria-modal").is_some_and(|v| v.trim() == "true")
            || words.iter().any(|w| OVERLAY_WORDS.contains(&w.as_str()))
    };
    level == StripLevel::Aggressive
        && (DROPPED_AGGRESSIVE.contains(&t)
            || overlay()
            || ((t == "form"
                || words.iter().any(|w| {
                    AGGRESSIVE_WORDS.contains(&w.as_str())
                        || AGGRESSIVE_PARTS.iter().any(|p| w.contains(p))
                        || w.split(|c: char| !c.is_ascii_alphanumeric())
                            .any(|part| CREDIT_PARTS.contains(&part))
                }))
                && !holds_prose(true)))
}
