//! `explain`: what the aggressive level's extraction chose, named so that a reader finds it in the page.

use ctxfit_html::{explain, Explanation, HtmlCleaner, StripLevel};

fn paragraphs(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "<p>Paragraph {i} of the report says that the river rose, the dykes held, and the town, which had \
                 prepared for a week, counted the damage on Monday morning.</p>"
            )
        })
        .collect()
}

#[test]
fn the_article_its_lead_and_what_was_left_out_are_named() {
    let html = format!(
        "<html><body><nav><a href='/'>Home</a></nav><div class='page'><div class='header'><h1>The river rose</h1>\
         <div class='intro'><p class='standfirst'>After a week of rain, the town counted the damage, and the \
         dykes held.</p></div></div>\
         <div id='body' class='article-body text'>{}<p>Related posts</p></div></div></body></html>",
        paragraphs(5)
    );
    let Explanation::Article {
        lead,
        article,
        left_out,
    } = explain(&html)
    else {
        panic!("no article found");
    };
    assert_eq!(article.len(), 1);
    assert_eq!(article[0].selector(), "div#body.article-body.text");
    assert!(
        article[0]
            .start
            .starts_with("Paragraph 0 of the report says"),
        "{:?}",
        article[0]
    );
    // the start is cut at a word, within 60 characters, and marked
    assert!(article[0].start.ends_with('…') && article[0].start.chars().count() <= 61);
    assert_eq!(lead.len(), 1);
    assert_eq!(lead[0].selector(), "div.intro");
    assert_eq!(
        lead[0].start,
        "After a week of rain, the town counted the damage, and the…"
    );
    assert_eq!(left_out.len(), 1);
    assert_eq!(left_out[0].selector(), "p");
    assert_eq!(left_out[0].start, "Related posts");
    assert_eq!(left_out[0].chars, "Relatedposts".len());
    assert_eq!(
        left_out[0].to_string(),
        "p (12 characters): \"Related posts\""
    );
    // what it names is what the aggressive level writes
    let md = HtmlCleaner::new(StripLevel::Aggressive).clean(&html).0;
    assert!(md.starts_with("After a week of rain"), "{md}");
    assert!(
        md.contains("Paragraph 4") && !md.contains("Related posts"),
        "{md}"
    );
}

#[test]
fn a_block_left_out_by_two_tests_is_named_once_in_document_order() {
    // "Source files: [a], [b]" between the paragraphs is both a box of two links and a label with links
    let html = format!(
        "<html><body><div class='post'>{}<p>Source files: <a href='/a.js'>blanket.js</a>, \
         <a href='/b.js'>mocha-blanket.js</a></p>{}<p>Share this:</p></div></body></html>",
        paragraphs(2),
        paragraphs(2)
    );
    let Explanation::Article { left_out, .. } = explain(&html) else {
        panic!("no article found");
    };
    let starts: Vec<&str> = left_out.iter().map(|e| e.start.as_str()).collect();
    assert_eq!(
        starts,
        ["Source files: blanket.js , mocha-blanket.js", "Share this:"]
    );
}

#[test]
fn a_page_without_an_article_or_too_deep_for_a_tree_says_so() {
    let short = "<html><body><div>Flour, 200 g</div><div>Sugar, 100 g</div><div>Bake it.</div></body></html>";
    assert_eq!(explain(short), Explanation::NoArticle);
    let deep = format!(
        "<html><body>{}<p>deep</p></body></html>",
        "<div>".repeat(100_000)
    );
    assert_eq!(explain(&deep), Explanation::TooDeep);
}
