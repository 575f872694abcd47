//! What a page says about itself: title, canonical URL, publication date and author.
//!
//! Read from the document head, where pages state them for search engines and social previews: Open Graph and
//! Twitter `<meta>` tags, `<link rel="canonical">`, schema.org JSON-LD (`headline`, `datePublished`,
//! `author`), `itemprop` microdata, Dublin Core, Parse.ly and plain `<meta name="author">`, and the `<title>`
//! element; and, for what the head does not say, the JSON-LD scripts in the body, where many pages put them
//! (a CDATA section around a script's JSON is passed over). A title stated in JSON-LD wins over the meta tags,
//! which win over `<title>`, each as written (a site name after a separator included: cutting it loses more real
//! titles than it fixes). Only what the page states: nothing is guessed from the text.

use std::rc::Rc;

use markup5ever_rcdom::{Handle, NodeData};

use crate::{attr, descendants, resolve_url, tag};

/// What a page states about itself; `None` where it does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageMetadata {
    pub title: Option<String>,
    pub canonical_url: Option<String>,
    /// As the page writes it (ISO 8601 for most: `2024-05-01T09:30:00Z`).
    pub published: Option<String>,
    pub author: Option<String>,
}

/// The head of a page is all that is read: up to `</head>`, or the first 256 KiB when there is none.
const HEAD_LIMIT: usize = 256 << 10;

/// The metadata of a page; `base_url` resolves a relative canonical link (a `<base href>` wins).
pub fn page_metadata(html: &str, base_url: Option<&str>) -> PageMetadata {
    let end = find_head_end(html).unwrap_or(html.len().min(HEAD_LIMIT));
    let mut end = end.min(html.len());
    while !html.is_char_boundary(end) {
        end -= 1;
    }
    let end = within_cost(html, end);
    // (a head whose tree builder makes far more elements than it has tags says nothing of itself: the JSON-LD
    // after it is still read)
    let mut m = match crate::dom::parse_keeping_scripts(&html[..end]) {
        Some(dom) => from_document(&dom.document, base_url),
        None => PageMetadata::default(),
    };
    // JSON-LD after the head (many pages put it in their body): for what the head does not say
    if m.title.is_none() || m.published.is_none() || m.author.is_none() {
        let mut ld = LinkedData::default();
        for text in crate::dom::linked_data(&html[end..]) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(unwrapped(text)) {
                ld.read(&v, 0);
            }
        }
        m.title = m.title.or(ld.headline.filter(|t| !t.is_empty()));
        m.published = m.published.or(ld.published);
        m.author = m.author.or(ld.author);
    }
    m
}

/// The end of the longest part of `html[..end]` whose tree is not too costly to build for a head
/// ([`head_is_too_costly`]: html5ever's tree construction is quadratic in the depth of some nestings, and a page
/// without `</head>` may open 50,000 `<div>`s in its first 256 KiB). The metadata tags sit at the top: what is cut
/// is the deep part.
///
/// [`head_is_too_costly`]: crate::flat::head_is_too_costly
fn within_cost(html: &str, end: usize) -> usize {
    if !crate::flat::head_is_too_costly(&html[..end]) {
        return end;
    }
    // `good` is a part cheap enough (the empty one is), `bad` one too costly
    let (mut good, mut bad) = (0, end);
    while bad - good > 1 {
        let mut mid = good + (bad - good) / 2;
        while !html.is_char_boundary(mid) {
            mid -= 1;
        }
        if mid <= good {
            break;
        }
        if crate::flat::head_is_too_costly(&html[..mid]) {
            bad = mid;
        } else {
            good = mid;
        }
    }
    good
}

fn find_head_end(html: &str) -> Option<usize> {
    let window = &html.as_bytes()[..html.len().min(4 * HEAD_LIMIT)];
    window
        .windows(7)
        .position(|w| w.eq_ignore_ascii_case(b"</head>"))
        .map(|i| i + 7)
}

fn from_document(document: &Handle, base_url: Option<&str>) -> PageMetadata {
    let mut meta: Vec<(String, String)> = Vec::new();
    let mut title_element = None;
    let mut canonical = None;
    let mut base_href = None;
    let mut ld = LinkedData::default();
    for node in descendants(document) {
        match tag(&node) {
            Some("meta") => {
                // `property` may name several (`property="og:title dc:title"`)
                let keys = ["property", "name", "itemprop"]
                    .iter()
                    .find_map(|k| attr(&node, k))
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if let Some(content) = attr(&node, "content") {
                    for key in keys.split_whitespace() {
                        meta.push((key.to_owned(), content.clone()));
                    }
                }
            }
            Some("title") if title_element.is_none() => {
                title_element = Some(text_of(&node)).filter(|t| !t.is_empty())
            }
            Some("link") => {
                let rel = attr(&node, "rel").unwrap_or_default().to_ascii_lowercase();
                if rel.split_whitespace().any(|r| r == "canonical") && canonical.is_none() {
                    canonical = attr(&node, "href");
                }
            }
            Some("base") if base_href.is_none() => base_href = attr(&node, "href"),
            Some("script")
                if attr(&node, "type")
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json")) =>
            {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(unwrapped(&text_of(&node)))
                {
                    ld.read(&v, 0);
                }
            }
            _ => {}
        }
    }
    let first = |keys: &[&str]| {
        keys.iter().find_map(|k| {
            meta.iter()
                .find(|(key, v)| key == k && !v.trim().is_empty())
                .map(|(_, v)| clean(v))
        })
    };
    let title = ld
        .headline
        .clone()
        .or_else(|| {
            first(&[
                "og:title",
                "dc:title",
                "dc.title",
                "dcterm:title",
                "twitter:title",
                "parsely-title",
                "sailthru.title",
            ])
        })
        .or(title_element)
        .filter(|t| !t.is_empty());
    let base = base_href.as_deref().or(base_url);
    let canonical_url = canonical
        .or_else(|| first(&["og:url"]))
        .filter(|u| !u.trim().is_empty())
        .map(|u| resolve_url(base, &u));
    let published = first(&[
        "article:published_time",
        "datepublished",
        "og:published_time",
        "pubdate",
        "publishdate",
        "date",
        "dc.date.issued",
        "dc.date",
        "dcterms.created",
        "sailthru.date",
    ])
    .or(ld.published.clone());
    let author = first(&[
        "author",
        "article:author",
        "dc.creator",
        "byl",
        "sailthru.author",
    ])
    .filter(|a| !a.starts_with("http"))
    .or(ld.author.clone());
    PageMetadata {
        title,
        canonical_url,
        published,
        author,
    }
}

/// A script's JSON without the CDATA section some pages wrap it in (`<![CDATA[ … ]]>`, behind `//` or inside
/// `/* */` for the browsers that read it as script).
fn unwrapped(script: &str) -> &str {
    let mut s = script.trim();
    for open in ["//<![CDATA[", "/*<![CDATA[*/", "<![CDATA["] {
        if let Some(rest) = s.strip_prefix(open) {
            s = rest;
            for close in ["//]]>", "/*]]>*/", "]]>"] {
                if let Some(rest) = s.trim_end().strip_suffix(close) {
                    return rest;
                }
            }
            return s;
        }
    }
    s
}

/// What schema.org JSON-LD says, first statement wins.
#[derive(Default)]
struct LinkedData {
    headline: Option<String>,
    published: Option<String>,
    author: Option<String>,
}

impl LinkedData {
    fn read(&mut self, v: &serde_json::Value, depth: usize) {
        use serde_json::Value;
        if depth > 4 {
            return;
        }
        match v {
            Value::Array(items) => items.iter().for_each(|i| self.read(i, depth + 1)),
            Value::Object(m) => {
                let text = |key: &str| m.get(key).and_then(Value::as_str).map(clean);
                if self.headline.is_none() {
                    self.headline = text("headline");
                }
                if self.published.is_none() {
                    self.published = text("datePublished");
                }
                if self.author.is_none() {
                    self.author = m.get("author").and_then(author_name);
                }
                if let Some(graph) = m.get("@graph") {
                    self.read(graph, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// A JSON-LD author: a name, a Person (`name`), or a list of them (joined with commas).
fn author_name(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::String(s) if !s.trim().is_empty() && !s.starts_with("http") => Some(clean(s)),
        Value::Object(m) => m
            .get("name")
            .and_then(Value::as_str)
            .map(clean)
            .filter(|n| !n.is_empty()),
        Value::Array(items) => {
            let names: Vec<String> = items.iter().filter_map(author_name).collect();
            (!names.is_empty()).then(|| names.join(", "))
        }
        _ => None,
    }
}

/// The text of an element, whitespace collapsed.
fn text_of(node: &Handle) -> String {
    let mut out = String::new();
    let mut stack = vec![Rc::clone(node)];
    while let Some(n) = stack.pop() {
        if let NodeData::Text { contents } = &n.data {
            out.push_str(&contents.borrow());
        }
        stack.extend(n.children.borrow().iter().rev().cloned());
    }
    clean(&out)
}

fn clean(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_page_states_about_itself() {
        let page = r#"<html><head>
            <title>Why the build broke | The Engineering Blog</title>
            <link rel="canonical" href="/posts/build">
            <meta name="author" content="Ada Lovelace">
            <meta property="article:published_time" content="2024-05-01T09:30:00Z">
            </head><body><h1>Other</h1></body></html>"#;
        let m = page_metadata(page, Some("https://blog.example.com/feed/"));
        assert_eq!(
            m.title.as_deref(),
            Some("Why the build broke | The Engineering Blog")
        );
        assert_eq!(
            m.canonical_url.as_deref(),
            Some("https://blog.example.com/posts/build")
        );
        assert_eq!(m.published.as_deref(), Some("2024-05-01T09:30:00Z"));
        assert_eq!(m.author.as_deref(), Some("Ada Lovelace"));
    }

    #[test]
    fn open_graph_and_json_ld_are_read_and_nothing_is_guessed() {
        let page = r#"<head><meta property="og:title" content="  The  Real Title ">
            <script type="application/ld+json">{"@context":"https://schema.org","@graph":[{"@type":"NewsArticle",
              "datePublished":"2023-01-02","author":[{"@type":"Person","name":"A. Author"},{"name":"B. Writer"}]}]}</script>
            <meta property="article:author" content="https://facebook.com/someone"></head><p>text</p>"#;
        let m = page_metadata(page, None);
        assert_eq!(m.title.as_deref(), Some("The Real Title"));
        assert_eq!(m.published.as_deref(), Some("2023-01-02"));
        assert_eq!(m.author.as_deref(), Some("A. Author, B. Writer"));
        assert_eq!(m.canonical_url, None);
        assert_eq!(
            page_metadata("<p>no head at all</p>", None),
            PageMetadata::default()
        );
    }

    #[test]
    fn json_ld_in_the_body_says_what_the_head_does_not() {
        // the head states a title; JSON-LD in the body (in a CDATA section, as some pages write it) states the
        // date and author, and a headline that does not replace the head's title; a second statement and an
        // empty author name are passed over
        let page = r#"<html><head><title>Head title</title></head><body><p>text</p>
            <script>var s = "</p>";</script><style>p { color: red }</style>
            <script type="application/LD+JSON">//<![CDATA[
              [{"@type":"BreadcrumbList"},{"@type":"NewsArticle","headline":"Body headline",
                "datePublished":"2015-07-10T09:53:00-04:00","author":{"@type":"Person","name":"  "}},
               {"author":{"name":"Laura June"}}]
            //]]></script>
            <script type="application/ld+json">{"datePublished":"1999-01-01"}</script>
            </body></html>"#;
        let m = page_metadata(page, None);
        assert_eq!(m.title.as_deref(), Some("Head title"));
        assert_eq!(m.published.as_deref(), Some("2015-07-10T09:53:00-04:00"));
        assert_eq!(m.author.as_deref(), Some("Laura June"));
        // without a title in the head, the body's headline is the title
        let untitled = page.replace("<title>Head title</title>", "<title> </title>");
        assert_eq!(
            page_metadata(&untitled, None).title.as_deref(),
            Some("Body headline")
        );
        // a script that only mentions the type, and a broken statement, say nothing
        let page = r#"<head></head><body><script>s.type = "application/ld+json";</script>
            <script type="application/ld+json">{"headline": </script></body>"#;
        assert_eq!(page_metadata(page, None), PageMetadata::default());
    }
}
