//! The aggressive level on hand-written pages: which element is the article — whole, in sections, cut in two, beside
//! a gallery or readers' comments.

use super::*;

#[test]
fn a_dialog_is_never_the_article() {
    // a newsletter pop-up says more than the article, and is still not it
    let html = format!(
        r#"<html><body>
          <div class="dialog" id="signup">{}</div>
          <div role="dialog" aria-modal="true">{}</div>
          <div class="content">{}</div>
        </body></html>"#,
        body_paragraphs(8).replace("report", "offer"),
        body_paragraphs(8).replace("report", "notice"),
        body_paragraphs(3)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 2 of the report"), "{md}");
    assert!(
        !md.contains("of the offer") && !md.contains("of the notice"),
        "{md}"
    );
}

#[test]
fn a_box_of_sentences_beside_the_title_s_article_of_short_lines_is_not_the_article() {
    // a recipe's ingredients and steps, each step a short line in wrappers of its own, under the page's title;
    // further down, a contact box whose sentences (commas, length) outscore the steps
    let steps: String = (1..=8)
        .map(|i| format!("<div class='step'><div><p>Step {i}: stir the batter for two more minutes</p></div></div>"))
        .collect();
    let box_text = "<p>Questions, wishes, praise or criticism? Our team in Bielefeld, Hamburg and Munich reads \
                    every message, answers within two working days, and, if you like, calls you back.</p>";
    let html = format!(
        r#"<html><body><header><a href="/">Baking at home</a></header>
        <div class="recipe"><h1>Honey cake</h1>
          <div class="ingredients"><ul><li>250 g flour</li><li>3 eggs</li></ul></div>
          <div class="steps">{steps}</div></div>
        <div class="service"><div class="contact-info">{box_text}{box_text}</div></div>
      </body></html>"#
    );
    let md = clean(StripLevel::Aggressive, &html);
    // the title, and all it heads
    assert!(
        md.contains("# Honey cake") && md.contains("250 g flour"),
        "{md}"
    );
    assert!(
        md.contains("Step 1: stir") && md.contains("Step 8: stir"),
        "{md}"
    );
    assert!(!md.contains("Our team in Bielefeld"), "{md}");

    // a title over the site's name alone (a logo in the header) changes nothing: the article is chosen by its
    // paragraphs, and the box beside it stays out
    let html = format!(
        r#"<html><body><header><h1><a href="/">The Valley Courier</a></h1></header>
        <div class="story">{}</div>
        <div class="service"><div class="contact-info">{box_text}</div></div>
      </body></html>"#,
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 3 of the report"), "{md}");
    assert!(!md.contains("Our team in Bielefeld"), "{md}");
}

#[test]
fn an_article_in_many_short_sections_beside_a_gallery_is_kept_whole_at_the_aggressive_level() {
    // a report in blocks of a paragraph each, one of them a gallery whose captions hold more text than any one
    // block: the report is the container of all the blocks, not the gallery
    let caption = |i: usize| {
        format!(
            r#"<div class="item"><div class="caption">Photo {i}: the slope above the village, seen from the
            north ridge, with the tracks of the skiers who crossed it on Saturday (Photo: R. Keller).</div></div>"#
        )
    };
    let section = |i: usize| {
        format!(
            r#"<section class="text-element"><h3>Part {i}</h3><div class="body"><p>Report part {i}: the snow
            settled, and the danger fell to moderate over the week. In the north, where the wind had packed it,
            the old layers held; in the south, which had less snow, the slopes were safe by Thursday.</p></div>
            </section>"#
        )
    };
    let gallery: String = (1..=8).map(caption).collect();
    let sections: Vec<String> = (1..=8).map(section).collect();
    let html = format!(
        r#"<html><body><nav><a href="/">Home</a> <a href="/reports">Reports</a></nav><main><div class="content">
        {}{}<section class="gallery-element"><div class="track">{gallery}</div></section>{}</div></main>
        <footer><p>Imprint</p></footer></body></html>"#,
        sections[0],
        sections[1],
        sections[2..].join("")
    );
    let md = clean(StripLevel::Aggressive, &html);
    for i in 1..=8 {
        assert!(
            md.contains(&format!("Report part {i}: the snow")),
            "{i}: {md}"
        );
    }
    assert!(md.contains("Photo 8: the slope"), "{md}");
    assert!(!md.contains("Imprint") && !md.contains("Reports"), "{md}");
}

#[test]
fn short_sections_of_an_article_are_kept_beside_a_long_one() {
    // the article's opening sections, twelve paragraphs each (more than a lead), then one long section, all in
    // blocks of the same class; beside them, teaser cards of that class with a sentence each are not the article
    let part = |name: &str, n: usize| {
        format!(
            r#"<div class="row text"><div class="col">{}</div></div>"#,
            body_paragraphs(n).replace("Paragraph", name)
        )
    };
    let card = r#"<div class="row text"><div class="col"><p>Teaser: a story elsewhere on the site, read it.</p></div></div>"#;
    let html = format!(
        r#"<html><body><div class="page"><article class="content">{}{}{}</article>
        <div class="more">{card}{card}</div></div></body></html>"#,
        part("Opening", 12),
        part("Middle", 12),
        part("Body", 300)
    );
    let md = clean(StripLevel::Aggressive, &html);
    for name in [
        "Opening 0",
        "Opening 11",
        "Middle 0",
        "Middle 11",
        "Body 299",
    ] {
        assert!(
            md.contains(&format!("{name} of the report")),
            "{name}: {md}"
        );
    }
    assert!(!md.contains("Teaser"), "{md}");
}

#[test]
fn an_article_in_sections_of_the_page_s_body_is_kept_whole() {
    // each section of the article is a block of its own right under `<body>`, with the same class; a table
    // between them is another kind, and the footer is not the article
    let section = |topic: &str| {
        format!(
            r#"<div class="topic-block"><div class="row"><h2>{topic}</h2>
            <p>About {topic}: the plant, which opened in March, makes the fuel from straw, and the village, which
            had doubted it, now heats its school with it.</p>
            <p>More on {topic}: the cost per litre, the suppliers, and the permits, which took two years.</p></div></div>"#
        )
    };
    let html = format!(
        r#"<html><body><nav><a href="/">Home</a> <a href="/fuels">Fuels</a></nav>
        {}<div class="table-block"><table><tr><td>Price</td><td>1.10</td></tr></table></div>{}{}
        <div class="footer"><p>Imprint</p></div></body></html>"#,
        section("production"),
        section("heating"),
        section("prospects")
    );
    let md = clean(StripLevel::Aggressive, &html);
    for topic in ["production", "heating", "prospects"] {
        assert!(
            md.contains(&format!("About {topic}: the plant")),
            "{topic}: {md}"
        );
    }
    let order: Vec<usize> = ["About production", "About heating", "About prospects"]
        .iter()
        .map(|t| md.find(t).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{md}");
    assert!(!md.contains("Imprint") && !md.contains("Fuels"), "{md}");
}

#[test]
fn a_page_without_an_article_keeps_its_content_at_the_aggressive_level() {
    // a recipe: short lines and lists, no paragraph of prose to choose; nothing is outside a main content
    let html = r#"<html><body><nav><a href="/">Home</a></nav>
        <div class="recipe"><h1>Pineapple cake</h1>
          <ul><li>1 can pineapple slices</li><li>200 g flour</li><li>2 eggs</li></ul>
          <ol><li>Heat the oven</li><li>Mix and bake</li></ol></div>
        <form><input name="q"><button>Search</button></form>
      </body></html>"#;
    let md = clean(StripLevel::Aggressive, html);
    assert!(
        md.contains("200 g flour") && md.contains("Mix and bake"),
        "{md}"
    );
    assert!(!md.contains("Home"), "{md}");
}

#[test]
fn an_article_cut_in_two_around_an_advertisement_is_written_whole_at_the_aggressive_level() {
    let paragraphs = |from: usize, to: usize| {
        (from..to)
            .map(|i| {
                format!(
                    "<p class=\"story__para\">Paragraph {i} of the report says that the river rose, the dykes held, \
                     and the town, which had prepared for a week, counted the damage on Monday.</p>"
                )
            })
            .collect::<String>()
    };
    let html = format!(
        r#"<html><body><header><a href="/">Home</a></header>
          <section class="row row--story"><div class="col"><div class="text">{}<div class="quote">{}</div></div></div></section>
          <section class="row row--ad"><div class="ad">Advertisement</div></section>
          <section class="row row--story main"><div class="col"><div class="text">{}</div>
            <div class="related"><p class="teaser">Another story about another river that rose last spring, and the dykes there.</p></div>
          </div></section>
          <footer>© The Paper</footer></body></html>"#,
        paragraphs(0, 3),
        paragraphs(10, 12),
        paragraphs(3, 10)
    );
    let md = clean(StripLevel::Aggressive, &html);
    let first = md.find("Paragraph 0 of the report").expect(&md);
    let last = md.find("Paragraph 9 of the report").expect(&md);
    assert!(first < last, "{md}");
    // paragraphs inside a part are written once, with it
    assert_eq!(md.matches("Paragraph 11 of the report").count(), 1, "{md}");
    assert!(!md.contains("Advertisement"), "{md}");
}

#[test]
fn an_article_part_a_script_gave_a_class_of_its_own_is_kept_with_the_rest() {
    // four paragraphs in `div.story-content`, five more after a paywall's empty marker in a block that also
    // carries the paywall's class (a class the page gives these two blocks only): one article, both parts
    // written, in order
    let para = |i: usize| {
        format!(
            "<p>Paragraph {i} of the report says that fuel prices rose again this week, despite the subsidy, and \
             that the ministry, which had expected it, sees the rise continuing slowly.</p>"
        )
    };
    let part = |r: std::ops::Range<usize>| r.map(para).collect::<String>();
    let html = format!(
        r#"<html><body><nav><a href="/">Home</a> <a href="/economy">Economy</a></nav>
          <div class="story"><h1>Fuel prices keep rising</h1>
            <div class="story-content">{}</div><div class="paywall-banner"></div>
            <div class="paywall-handler story-content">{}</div></div>
          <footer><p>About us</p></footer></body></html>"#,
        part(0..4),
        part(4..9)
    );
    let md = clean(StripLevel::Aggressive, &html);
    let first = md.find("Paragraph 0 of the report").expect(&md);
    let last = md.find("Paragraph 8 of the report").expect(&md);
    assert!(first < last, "{md}");
    assert!(!md.contains("About us"), "{md}");
}

#[test]
fn classes_of_more_words_than_a_page_writes_are_not_compared_word_by_word() {
    // a flood of class words (a hostile page: comparing them pairwise would take their product) marks no part
    // of the article: the box beside it, whose words are all among the article's, stays out
    let words: Vec<String> = (0..5_000).map(|k| format!("w{k}")).collect();
    let (para, column) = (report_paragraph, column_paragraph);
    let html = format!(
        r#"<html><body><div class="row"><div class="{}">{}</div><div class="{}">{}</div></div></body></html>"#,
        words.join(" "),
        (0..8).map(para).collect::<String>(),
        words[..4_999].join(" "),
        (0..6).map(column).collect::<String>()
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 7 of the report"), "{md}");
    assert!(!md.contains("Column 0"), "{md}");
}

#[test]
fn a_layout_column_class_shared_with_a_box_beside_the_article_joins_nothing() {
    // the article in `div.col-12.col-md-8`, after it a column of short paragraphs in a plain `div.col-12` — a
    // class the page's grid gives every column: the column is not a part of the article
    let (para, column) = (report_paragraph, column_paragraph);
    let cells: String = (0..8)
        .map(|i| format!(r#"<div class="col-12"><span>Cell {i}</span></div>"#))
        .collect();
    let html = format!(
        r#"<html><body><div class="row">{cells}</div>
          <div class="row"><div class="col-12 col-md-8">{}</div><div class="col-12">{}</div></div></body></html>"#,
        (0..8).map(para).collect::<String>(),
        (0..6).map(column).collect::<String>()
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 7 of the report"), "{md}");
    assert!(!md.contains("Column 0"), "{md}");
}

#[test]
fn readers_comments_are_kept_at_the_moderate_level_and_dropped_at_the_aggressive() {
    let comments: String = (0..3)
        .map(|i| {
            format!(
                "<div class='comment'><p>Reader {i}: thank you for this report, it matches what we saw on the \
                 north bank, and the photos of the square were a shock to everyone in the family.</p></div>"
            )
        })
        .collect();
    let html = format!(
        "<html><body><div class='post'>{}</div><section class='comments'>{comments}</section></body></html>",
        body_paragraphs(4)
    );
    let moderate = clean(StripLevel::Moderate, &html);
    assert!(
        moderate.contains("Paragraph 3") && moderate.contains("Reader 2: thank you"),
        "{moderate}"
    );
    let aggressive = clean(StripLevel::Aggressive, &html);
    assert!(
        aggressive.contains("Paragraph 3") && !aggressive.contains("Reader"),
        "{aggressive}"
    );
}

#[test]
fn a_thread_of_bare_text_in_a_page_wide_form_is_found_at_the_aggressive_level() {
    // an ASP.NET page wraps the whole page in one <form>; a forum's posts are lines between <br>s, no <p>
    let posts: String = (0..8)
        .map(|i| {
            format!(
                "<div class='post'><div class='author'>member{i}</div><div class='text'>Post {i}: the update asks \
                 for a wireless network here too,<br>although mobile data is allowed for every app in the \
                 settings, and the phone has the newest version of the system.</div></div>"
            )
        })
        .collect();
    let html = format!(
        "<html><body><form id='form1' action='./thread.aspx'><div class='page'>{posts}\
         <div id='reply'><h2>Reply</h2><h3>You must <a href='/login'>log in</a> to take part.</h3></div>\
         </div></form></body></html>"
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.contains("Post 0: the update") && md.contains("Post 7: the update"),
        "{md}"
    );
    // the thread is the main content, so the headings over nothing after it go
    assert!(!md.contains("Reply") && !md.contains("log in"), "{md}");
}

#[test]
fn an_aside_that_holds_the_article_is_kept() {
    // some sites put the article itself in an <aside>; a short one is still a sidebar
    let html = format!(
        "<html><body><aside class='pa'><section>{}</section></aside>\
         <aside><p>Popular this week: the storm, the mayor, the cup.</p></aside></body></html>",
        body_paragraphs(8)
    );
    for level in [StripLevel::Moderate, StripLevel::Aggressive] {
        let md = clean(level, &html);
        assert!(md.contains("Paragraph 7 of the report"), "{level:?}: {md}");
        assert!(!md.contains("Popular this week"), "{level:?}: {md}");
    }
}

#[test]
fn a_list_is_part_of_the_article_not_its_container() {
    // a statistics release: a paragraph, a table and a list whose items are full of decimal commas (German
    // numbers) — a list is never the article, and a number's comma is no clause
    let items: String = [
        "der Export von Mineralölprodukten um 13,6 % von 20,4 auf 23,1 Millionen Tonnen gestiegen;",
        "der Import von Mineralölprodukten um 5,0 % von 31,9 auf 33,5 Millionen Tonnen angestiegen;",
        "die Einfuhr von Rohöl um 2,9 % von 76,0 auf 73,9 Millionen Tonnen gesunken;",
        "der Grenzübergangspreis von Rohöl um 55,8 % von 276,95 Euro auf 431,42 Euro pro Tonne gestiegen.",
    ]
    .iter()
    .map(|i| format!("<li>{i}</li>"))
    .collect();
    let html = format!(
        r#"<html><body><nav><a href="/">Start</a> <a href="/energie">Energie</a></nav>
        <div class="content"><h1>MineralölINFO November 2021</h1>
          <p>Nach Erhebungen des Bundesamtes sank der Absatz von Mineralölprodukten im aktuellen Zeitraum
             gegenüber der Vorjahresperiode um 2,3 % von 91,5 auf 89,4 Millionen Tonnen.</p>
          <table><tr><th>Produkt</th><th>2020</th><th>2021</th></tr>
            <tr><td>Dieselkraftstoff</td><td>32,23 Mio. t</td><td>32,28 Mio. t</td></tr></table>
          <p>Im Vergleich zum Vorjahreszeitraum ist</p><ul>{items}</ul></div>
        <div class="teaser"><p>Diese Seite empfehlen</p></div></body></html>"#
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert_holds(
        &md,
        &[
            "Nach Erhebungen des Bundesamtes",
            "32,23 Mio. t",
            "die Einfuhr von Rohöl",
            "431,42 Euro",
        ],
    );
    assert!(!md.contains("Energie"), "{md}");
}

#[test]
fn a_glossary_s_descriptions_are_its_paragraphs() {
    // a dictionary's or glossary's page: its text is a description list, each `<dd>` a paragraph of its own;
    // beside it, a box about the publisher in two paragraphs, which outscores it when descriptions do not vote
    let entries: String = [
        (
            "Base flow",
            "the part of a river's flow fed by groundwater, which keeps it running between rains",
        ),
        (
            "Catchment",
            "the land from which rain drains into one river, bounded by ridges, hills or dykes",
        ),
        (
            "Flood peak",
            "the highest level a flood reaches at a gauge, measured in metres above its zero",
        ),
        (
            "Levee",
            "an embankment, natural or built, that holds a river in its bed when the water rises",
        ),
        (
            "Runoff",
            "the rain that flows over the ground into streams, rather than soaking into the soil",
        ),
    ]
    .iter()
    .map(|(term, text)| format!("<dt>{term}</dt><dd>{text}.</dd>"))
    .collect();
    let about = "<p>The institute, founded in 1952, studies rivers, lakes and groundwater, advises the \
                 federal states, and, twice a year, publishes its reports, maps and data for everyone.</p>";
    let html = format!(
        r#"<html><body><div class="glossary"><h1>Glossary of hydrology</h1><dl>{entries}</dl></div>
        <div class="about">{about}{about}</div></body></html>"#
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert_holds(
        &md,
        &[
            "Base flow",
            "a flood reaches at a gauge",
            "soaking into the soil",
        ],
    );
    assert!(!md.contains("founded in 1952"), "{md}");
}

#[test]
fn the_body_the_page_marks_as_the_article_wins_over_a_longer_thread_of_readers() {
    // schema.org microdata names the article's body; readers' comments below it, under a class no word list
    // knows, hold more prose than the article itself
    let comments: String = (0..8)
        .map(|i| {
            format!(
                "<li><a href='/u/{i}'>reader{i}</a> 14. 01. 2020<p>I read it twice, and I think the author, \
                 who clearly knows the subject, forgets that the mine, the railway and the port were decided \
                 years ago, long before anyone asked, and number {i} of us said so.</p></li>"
            )
        })
        .collect();
    let html = format!(
        r#"<html><body><div class="page">
        <article itemprop="articleBody"><h1>The mine and the railway</h1>{}</article>
        <div class="community"><h2>Your views</h2><ul>{comments}</ul></div></div></body></html>"#,
        body_paragraphs(3)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 2 of the report"), "{md}");
    assert!(!md.contains("I read it twice"), "{md}");
}

#[test]
fn an_article_in_blocks_wrapped_one_by_one_is_kept_whole() {
    // a CMS writes each block of the article inside its own field item: the blocks are siblings three
    // wrappers up, and the second holds less prose than the first
    let block = |paragraphs: usize| {
        format!(
            r#"<div class="field__item"><div class="paragraph paragraph--text"><div class="text-formatted">{}</div></div></div>"#,
            body_paragraphs(paragraphs)
        )
    };
    let html = format!(
        r#"<html><body><nav><a href="/">Home</a> <a href="/news">News</a></nav><main>
        <div class="field field--content">{}<div class="field__item"><div class="teaser-box">
        <a href="/join">Join us</a></div></div>{}</div></main>
        <footer>Imprint</footer></body></html>"#,
        block(5),
        block(1).replace("Paragraph 0", "The closing paragraph")
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 4 of the report"), "{md}");
    assert!(md.contains("The closing paragraph"), "{md}");
    assert!(!md.contains("Imprint") && !md.contains("Home"), "{md}");
}

#[test]
fn the_weights_decide_what_is_the_article() {
    use ctxfit_html::{ParsedPage, Weights};
    // a `<main>` of short paragraphs beside a longer box of prose: the box wins by its paragraphs' votes, unless
    // `main` weighs enough more
    let short = "<p>One line of the article that is short.</p>".repeat(6);
    let html = format!(
        r#"<html><body><main>{short}</main><div class="box">{}</div></body></html>"#,
        body_paragraphs(4)
    );
    let with = |w: Weights| weighed(w, &html);
    let hand = with(Weights::HAND);
    assert!(
        hand.contains("Paragraph 3") && !hand.contains("One line"),
        "{hand}"
    );
    let main = with(Weights {
        main: 4.0,
        ..Weights::HAND
    });
    assert!(
        main.contains("One line") && !main.contains("Paragraph 3"),
        "{main}"
    );
    // no candidate scores the least a candidate must: the page is written as the moderate level writes it
    let none = with(Weights {
        least: 1e9,
        ..Weights::HAND
    });
    assert_eq!(none, clean(StripLevel::Moderate, &html));
    // of two boxes of prose, the longer is the article, unless what comes late on the page weighs less: then the
    // earlier box is chosen, and the article starts with it
    let two = format!(
        r#"<html><body><div id="a">{}</div><div id="b">{}</div></body></html>"#,
        body_paragraphs(3).replace("report", "first"),
        body_paragraphs(4)
    );
    let choose = |w: Weights| weighed(w, &two);
    let longer = choose(Weights::HAND);
    assert!(
        longer.contains("of the report") && !longer.contains("of the first"),
        "{longer}"
    );
    let earlier = choose(Weights {
        position: 0.1,
        ..Weights::HAND
    });
    assert!(earlier.starts_with("Paragraph 0 of the first"), "{earlier}");
    // a page parsed once and cleaned twice gives what a clean gives
    let page = ParsedPage::parse(&html);
    let cleaner = HtmlCleaner::new(StripLevel::Aggressive).with_weights(Weights::HAND);
    assert_eq!(cleaner.clean_parsed(&page), hand);
    assert_eq!(cleaner.clean_parsed(&page), hand);
}

/// The aggressive level with these weights.
fn weighed(w: ctxfit_html::Weights, html: &str) -> String {
    HtmlCleaner::new(StripLevel::Aggressive)
        .with_weights(w)
        .clean(html)
        .0
}

/// A paragraph of an article's prose, numbered.
fn report_paragraph(i: usize) -> String {
    format!(
        "<p>Paragraph {i} of the report says that the river rose, the dykes held, and the town, which had \
         prepared for a week, counted the damage on Monday.</p>"
    )
}

/// A paragraph of a column beside the article, numbered.
fn column_paragraph(i: usize) -> String {
    format!(
        "<p>Column {i}: our columnist, who grew up by the sea, writes about tides, boats, and the harbour, which \
         was rebuilt twice.</p>"
    )
}

#[test]
fn a_table_s_body_is_a_part_of_the_article_not_its_container() {
    // a reference page: two paragraphs, a table of many rows whose cells vote as paragraphs for their row and the
    // table's body, then a closing paragraph; the table's body outscores the element that holds all of it
    let rows: String = (1..=24)
        .map(|i| {
            format!(
                "<tr><td>Release {i}, a maintenance update, fixes crashes, leaks and slow start-up on old \
                 machines</td><td>Supported until {}, with security fixes, backports and notes</td></tr>",
                2030 + i
            )
        })
        .collect();
    let html = format!(
        r#"<html><body><nav><a href="/">Home</a> <a href="/docs">Docs</a> <a href="/blog">Blog</a></nav>
        <div class="content"><h1>Release history</h1>
        <p>Every release of the tool is listed below, with what it fixed and how long it is supported.</p>
        <p>Releases before the first one here are no longer supported: upgrade to a listed one first.</p>
        <table><tbody>{rows}</tbody></table>
        <p>Support ends on the first of January of the year given, unless a later notice extends it.</p>
        </div></body></html>"#
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert_holds(
        &md,
        &[
            "Every release of the tool is listed below",
            "no longer supported",
            "Release 24, a maintenance update",
            "Support ends on the first of January",
        ],
    );
    assert!(!md.contains("Blog"), "{md}");
}
