//! The aggressive level on hand-written pages: what stands around the article — its lead kept; labels, link lists,
//! teasers, credits and headings over nothing left out; tables and sentences full of links kept.

use super::*;

#[test]
fn link_lists_outside_nav_are_dropped_and_prose_with_links_is_kept() {
    let html = r#"<html><body>
      <div class="top"><a href="/">Home</a> | <a href="/news">News</a> | <a href="/sport">Sport</a> | <a href="/about">About</a></div>
      <article>
        <h1>The bridge reopens</h1>
        <p>The <a href="/bridge">old bridge</a> reopened on Monday after <a href="/works">two years of works</a>,
           the city said, and traffic will be back to normal by <a href="/may">May</a>.</p>
        <ul><li><a href="/a">One source</a></li><li><a href="/b">Another</a></li></ul>
      </article>
      <ul class="more"><li><a href="/x">Storm closes schools</a></li><li><a href="/y">Mayor resigns</a></li>
        <li><a href="/z">Team wins cup</a></li></ul>
    </body></html>"#;
    for level in [StripLevel::Moderate, StripLevel::Aggressive] {
        let md = clean(level, html);
        assert!(md.contains("# The bridge reopens"), "{level:?}: {md}");
        // a paragraph of prose keeps its links, however many
        assert!(
            md.contains("[old bridge](https://example.com/bridge)"),
            "{level:?}: {md}"
        );
        assert!(
            md.contains("[May](https://example.com/may)"),
            "{level:?}: {md}"
        );
        // a list of two links is not a link list
        assert!(md.contains("[One source]"), "{level:?}: {md}");
        // a menu without <nav> and a list of other stories are
        assert!(
            !md.contains("Home") && !md.contains("Sport"),
            "{level:?}: {md}"
        );
        assert!(!md.contains("Mayor resigns"), "{level:?}: {md}");
    }
    // the minimal level keeps everything but scripts, styles and media
    let md = clean(StripLevel::Minimal, html);
    assert!(md.contains("Home") && md.contains("Mayor resigns"), "{md}");
}

#[test]
fn a_list_of_links_with_text_of_its_own_is_kept() {
    // each entry links a title and says something of its own: content, not a menu
    let entries: String = (0..4)
        .map(|i| {
            format!(
                "<li><a href='/r{i}'>Report {i}</a>: measured the effect of the new schedule on the morning \
                 commute across the northern districts over several weeks.</li>"
            )
        })
        .collect();
    let html = format!("<html><body><h1>Reports</h1><ul>{entries}</ul></body></html>");
    let md = clean(StripLevel::Moderate, &html);
    assert!(md.contains("[Report 3](https://example.com/r3)"), "{md}");
}

#[test]
fn the_aggressive_level_keeps_the_lead_above_the_article_body() {
    // the standfirst sits after the title in the article's header, the body in a sibling; a date, a picture
    // and a caption between them are passed over, the breadcrumbs above the title are not reached
    let more: String = (0..12)
        .map(|i| format!("<a href='/story/{i}'>Another story from the region, number {i}</a> "))
        .collect();
    let html = format!(
        r#"<html><body>
        <div class="crumbs"><a href="/">Home</a> › <a href="/news">News</a></div>
        <div class="story">
          <div class="story-header">
            <h1>The river rose</h1>
            <div class="lead"><p>After a week of rain the town braced for the worst, and then the water came.</p></div>
            <time>22 May 2024</time>
          </div>
          <figure><img src="/flood.jpg"><figcaption>The square at noon.</figcaption></figure>
          <div class="story-body">{}</div>
          <div class="more-stories">{more}</div>
        </div>
        </body></html>"#,
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.starts_with("After a week of rain the town braced for the worst"),
        "{md}"
    );
    assert!(md.contains("Paragraph 3 of the report"), "{md}");
    assert!(
        !md.contains("Home") && !md.contains("The square at noon"),
        "{md}"
    );
    // a teaser that is a sibling of the body's element, without a title in between
    let html = format!(
        r#"<html><body><main>
          <div class="teaser"><p>Standfirst: the dykes held, the damage is counted, and the clean-up begins.</p></div>
          <div class="body">{}</div>
        </main></body></html>"#,
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.starts_with("Standfirst: the dykes held"), "{md}");
    // the title set as a second-rank heading, in a header with a date and a picture: the standfirst is found
    // inside it
    let html = format!(
        r#"<html><body><div class="page">
          <div class="article-header"><time>22 May 2024</time><h2 class="title">The river rose</h2>
            <div class="article-intro"><p>Intro: the dykes held, the damage is counted, and the clean-up begins.</p></div>
            <figure><img src="/flood.jpg"></figure></div>
          <div class="share"><a href="/s/1">Share on one network</a> <a href="/s/2">Share on another network</a></div>
          <div class="article-body">{}</div>
        </div></body></html>"#,
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.starts_with("Intro: the dykes held"), "{md}");
}

#[test]
fn a_standfirst_the_walk_back_cannot_reach_is_found_after_the_title() {
    // the header holds the title, the standfirst and a byline; the body is five wrappers down in a sibling, out
    // of the walk back's reach, behind a bar of links
    let html = format!(
        r#"<html><body><nav><a href="/">Home</a></nav>
        <div class="article">
          <div class="head"><h1>The river rose</h1>
            <p class="dek">After a week of rain the town braced for the worst, and then the water came.</p>
            <p class="byline">by <a href="/authors/ada">Ada C. Lovelace</a>, ada@example.com</p>
            <time>22 May 2024</time></div>
          <div class="tools"><a href="/s/1">Share</a> <a href="/s/2">Print</a> <a href="/s/3">Mail</a></div>
          <div class="wrap"><div class="grid"><div class="col"><div class="inner"><div class="text">{}</div></div></div></div></div>
        </div></body></html>"#,
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.starts_with("After a week of rain the town braced for the worst"),
        "{md}"
    );
    assert!(md.contains("Paragraph 3 of the report"), "{md}");
    // a byline is no sentence, however many dots its initials and address hold
    assert!(!md.contains("Lovelace") && !md.contains("Home"), "{md}");
    // a leftover title of a widget right before the body, with nothing after it: the page's own title, further
    // up, still leads to the standfirst
    let leftover = r#"<div class="wrap"><h1>This widget is not configured</h1><div class="grid">"#;
    let html = html.replace(r#"<div class="wrap"><div class="grid">"#, leftover);
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.starts_with("After a week of rain the town braced for the worst"),
        "{md}"
    );
}

#[test]
fn the_aggressive_level_leaves_out_the_labels_and_link_lists_around_the_prose() {
    let html = format!(
        r#"<html><body><div class="post">
          <p><a href="/">Home</a></p>
          <div class="count">71 comments</div>
          <h2>The river rose</h2>
          {}
          <table><tr><td>Level</td><td>4.2 m</td></tr></table>
          <p>Thanks for reading, and see you next week.</p>
          <div class="tags"><span>Filed under:</span></div>
          <h3>More from the region</h3>
          <ul><li><a href="/a">Storm closes schools</a></li><li><a href="/b">Mayor resigns</a></li></ul>
          <p><a href="/overview">Back to the overview</a></p>
        </div></body></html>"#,
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    // the prose, its heading, a table and a closing sentence stay
    assert!(md.contains("## The river rose"), "{md}");
    assert!(
        md.contains("Paragraph 0") && md.contains("Paragraph 3"),
        "{md}"
    );
    assert!(
        md.contains("4.2 m") && md.contains("Thanks for reading, and see you next week."),
        "{md}"
    );
    // labels and link lists before and after it go, with the heading over them
    for gone in [
        "Home",
        "71 comments",
        "Filed under",
        "More from the region",
        "Storm closes schools",
        "Back to the overview",
    ] {
        assert!(!md.contains(gone), "{gone}: {md}");
    }
    // the moderate level keeps what is not a link list
    let md = clean(StripLevel::Moderate, &html);
    assert!(
        md.contains("71 comments") && md.contains("Filed under"),
        "{md}"
    );
}

#[test]
fn after_the_last_paragraph_a_link_or_date_standing_alone_between_blocks_is_a_label() {
    // each directly in the article's element, after its last paragraph: a `<time>`, a byline's link, a "back to
    // the list" link; in the last paragraph, links and emphasis that are part of its sentence
    for (label, gone) in [
        (
            r#"<time datetime="2020-04-03">Published: 03.04.2020, 12:35</time>"#,
            "Published:",
        ),
        (
            r#"<br><a href="mailto:a@b.c"><b>By:</b><br><br>Ada Lovelace</a>"#,
            "Ada Lovelace",
        ),
        (
            r#"<a href="/list">Back to the list</a>"#,
            "Back to the list",
        ),
    ] {
        let html = format!(
            r#"<html><body><div class="post">
              {}
              <p>She covers the river for us. <em>Follow her on</em> <a href="/x"><em>@riverdesk</em></a> <em>or write.</em></p>
              {label}
              <div class="ad"></div>
            </div></body></html>"#,
            body_paragraphs(4)
        );
        let md = clean(StripLevel::Aggressive, &html);
        assert!(md.contains("Paragraph 3"), "{md}");
        assert!(
            md.contains("@riverdesk") && md.contains("or write."),
            "{md}"
        );
        assert!(!md.contains(gone), "{gone}: {md}");
        // the moderate level keeps it
        let md = clean(StripLevel::Moderate, &html);
        assert!(md.contains(gone), "{gone}: {md}");
    }
    // a formula standing alone there is content, not a label
    let html = format!(
        r#"<html><body><div class="post">{}<math><mi>E</mi><mo>=</mo><mi>mc</mi></math><div></div></div></body></html>"#,
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("E = mc") || md.contains("E=mc"), "{md}");
}

#[test]
fn after_the_last_paragraph_a_series_of_entries_is_content_not_labels() {
    // a troupe's page: its story, then its stages as paragraphs of a date and a line each — no sentence ends in
    // them, but three or more blocks of a kind and of five words or more side by side make a text, and a line
    // among them is a part of it; labels stand apart: in a block of their own, or of a few words
    let stages = "<p><strong>April 2013</strong><br>Premiere of the cabaret collective at the Aera, Vienna</p>\
                  <p><strong>January 2013</strong><br>Premiere of our second programme, Theater am Alsergrund</p>\
                  <p><strong>2008–2012</strong><br>100 episodes of bad puns, badly acted, on our channel</p>";
    let html = format!(
        r#"<html><body><div class="post">{}{stages}<p>Share this page</p>
        <div class="post-footer"><p>Posted in the troupe news section</p></div></div></body></html>"#,
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert_holds(
        &md,
        &[
            "Paragraph 3",
            "Aera, Vienna",
            "Theater am Alsergrund",
            "100 episodes of bad puns",
        ],
    );
    assert!(
        !md.contains("Share this page") && !md.contains("Posted in"),
        "{md}"
    );
    // the stages alone, without the series, are labels still
    let html = format!(
        r#"<html><body><div class="post">{}<div>{stages}</div></div></body></html>"#,
        body_paragraphs(4)
    )
    .replace("<p><strong>2008–2012</strong><br>100 episodes of bad puns, badly acted, on our channel</p>", "");
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 3"), "{md}");
    assert!(!md.contains("Aera, Vienna"), "{md}");
    // a series of thousands of lines is kept whole (each line looks at its neighbours up to the series' length)
    let lines: String = (0..5_000)
        .map(|i| format!("<p>Entry {i} of the long list of stages</p>"))
        .collect();
    let html = format!(
        r#"<html><body><div class="post">{}{lines}</div></body></html>"#,
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.contains("Entry 0 of") && md.contains("Entry 4999 of"),
        "{md}"
    );
}

#[test]
fn a_label_and_a_link_or_a_box_of_links_between_paragraphs_is_left_out_at_the_aggressive_level() {
    let html = format!(
        r#"<html><body><div class="post">{}
          <p>Read more: <a href="/other">Storm closes schools across the northern districts</a></p>
          {}
          <div class="explore"><div><svg></svg><p>Explore further</p></div>
            <a href="/older">Rivers rose faster than the forecasts of last spring</a></div>
          <div class="box"><h3>More on this</h3>
            <ul><li><a href="/m1">The dykes, ten years on</a></li><li><a href="/m2">Who pays for the damage</a></li></ul></div>
          {}
          <p>The <a href="/report">full report</a> is online.</p>
        </div></body></html>"#,
        body_paragraphs(2),
        body_paragraphs(2),
        body_paragraphs(2)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(!md.contains("Storm closes schools"), "{md}");
    // the label and the link in a block of their own, each in an element of its own
    assert!(
        !md.contains("Explore further") && !md.contains("Rivers rose"),
        "{md}"
    );
    // a box of links between the paragraphs goes with its heading
    assert!(
        !md.contains("More on this") && !md.contains("Who pays"),
        "{md}"
    );
    // a sentence with a link of its own is prose
    assert!(
        md.contains("[full report](https://example.com/report)"),
        "{md}"
    );
    assert!(clean(StripLevel::Moderate, &html).contains("Storm closes schools"));
    assert!(clean(StripLevel::Moderate, &html).contains("Rivers rose"));
}

#[test]
fn a_teaser_for_another_page_after_the_article_is_left_out_at_the_aggressive_level() {
    // a card: a linked title over a blurb that reads as a sentence, with the teased page's picture
    let teaser = |n: usize| {
        format!(
            r#"<div class="snippet"><h3 class="teaser"><a href="/other-{n}">Heat wave number {n} breaks the records of a century</a></h3>
              <a href="/other-{n}"><img src="/t{n}.jpg"></a>
              <div class="text">Summer is here, and the south of the country had its hottest day since the records began. See for yourself!</div></div>"#
        )
    };
    let page = |teasers: &str| {
        format!(
            r#"<html><body><div class="content"><h1>Flood</h1>{}<div class="more">{teasers}</div></div></body></html>"#,
            body_paragraphs(3)
        )
    };
    let html = page(&teaser(1));
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 2 of the report"), "{md}");
    assert!(
        !md.contains("Heat wave") && !md.contains("hottest day"),
        "{md}"
    );
    assert!(clean(StripLevel::Moderate, &html).contains("hottest day"));
    // a page that is mostly teasers (a section's front page) is its teasers
    let front = page(&(1..=8).map(teaser).collect::<String>());
    let md = clean(StripLevel::Aggressive, &front);
    assert!(md.contains("Heat wave number 8"), "{md}");
    // an article of a few pages' length is an article, however many teasers follow it
    let long = format!(
        r#"<html><body><div class="content"><h1>Flood</h1>{}<div class="more">{}</div></div></body></html>"#,
        body_paragraphs(18),
        (1..=24).map(teaser).collect::<String>()
    );
    let md = clean(StripLevel::Aggressive, &long);
    assert!(md.contains("Paragraph 17 of the report"), "{md}");
    assert!(!md.contains("Heat wave"), "{md}");
    // a heading with a link in it that is not all link is the article's own
    let own = format!(
        r#"<html><body><div class="content"><h1>Flood</h1>{}<h3>What the <a href="/agency">agency</a> measured at the weir</h3>
          <p>The gauge at the weir read four metres and ten centimetres at noon, the highest since the flood of 1995.</p></div></body></html>"#,
        body_paragraphs(3)
    );
    let md = clean(StripLevel::Aggressive, &own);
    assert!(md.contains("four metres"), "{md}");
}

#[test]
fn a_teaser_whose_excerpt_is_cut_off_after_the_article_is_left_out_at_the_aggressive_level() {
    // a card whose title is no link: the title, the other page's first lines cut off with an ellipsis, and a
    // "read on" link (the whole card is the link, as frameworks' `stretched-link` make it)
    let teaser = |n: usize, ending: &str| {
        format!(
            r#"<div class="card"><div class="card-body"><h3 class="card-title">Dyke repairs, part {n}</h3>
              <p>The district began repairing the dykes on the northern bank this week, and the work will take{ending}</p>
              <a href="/news/{n}" class="stretched-link">Weiterlesen</a></div></div>"#
        )
    };
    let page = |more: &str| {
        format!(
            r#"<html><body><div class="content"><h1>Flood</h1>{}<div class="more"><h2>Mehr zum Thema</h2>{more}</div></div></body></html>"#,
            body_paragraphs(3)
        )
    };
    let html = page(&format!("{}{}", teaser(1, " …"), teaser(2, "...")));
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 2 of the report"), "{md}");
    assert!(
        !md.contains("Dyke repairs") && !md.contains("northern bank") && !md.contains("Mehr zum"),
        "{md}"
    );
    assert!(clean(StripLevel::Moderate, &html).contains("northern bank"));
    // a section of the article's own ends a sentence: it is no excerpt of another page
    let own = page(&teaser(1, " two months."));
    let md = clean(StripLevel::Aggressive, &own);
    assert!(md.contains("northern bank"), "{md}");
}

#[test]
fn a_question_over_a_bar_of_icon_links_after_the_article_is_left_out_at_the_aggressive_level() {
    // a share bar: a question that ends a sentence, over buttons that are links holding only an icon
    let icons: String = ["facebook", "mastodon", "whatsapp", "mail"]
        .iter()
        .map(|n| {
            format!("<a href='https://{n}.example/share?u=x'><div class='icon-{n}'></div></a>")
        })
        .collect();
    let html = format!(
        "<html><body><div class='post'>{}<div><strong>Would you like to share this article?</strong><br>{icons}</div>\
         </div></body></html>",
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Paragraph 3 of the report"), "{md}");
    assert!(!md.contains("share this article"), "{md}");
    // a paragraph of the article with linked pictures (no text in the links once the pictures go) stays
    let pictures: String = (0..3)
        .map(|i| format!("<a href='/photos/{i}.jpg'><img src='/photos/{i}-small.jpg'></a>"))
        .collect();
    let html = format!(
        "<html><body><div class='post'><p>{pictures}It snowed all night here.</p>{}</div></body></html>",
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("It snowed all night here."), "{md}");
}

#[test]
fn the_label_of_a_left_out_box_between_paragraphs_goes_with_it_at_the_aggressive_level() {
    // a table of contents whose list is a <nav>, and an advertisement's label whose box has an ad class: what
    // they label is left out, so the labels go too
    let html = format!(
        "<html><body><div class='post'>{}\
         <div class='toc'><p class='toc-title'>Contents</p><nav><ul>\
         <li><a href='#a'>What is it?</a></li><li><a href='#b'>Why does it matter?</a></li></ul></nav></div>\
         {}<div class='slot'><span>Advertisement</span><div class='ad'>Buy now</div></div>{}</div></body></html>",
        body_paragraphs(1),
        body_paragraphs(2),
        body_paragraphs(2)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert_eq!(md.matches("Paragraph 1 of the report").count(), 2, "{md}");
    assert!(
        !md.contains("Contents") && !md.contains("Advertisement"),
        "{md}"
    );
    // a line that stood beside a control (a checkbox of a shopping list) is no label: it stays
    let html = format!(
        "<html><body><div class='post'>{}<div><input type='checkbox'>Two cups of flour</div>{}</div></body></html>",
        body_paragraphs(2),
        body_paragraphs(2)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(md.contains("Two cups of flour"), "{md}");
}

#[test]
fn a_heading_over_subsections_stays_and_one_over_nothing_goes_at_the_aggressive_level() {
    // `<h2>` right over `<h3>`: a section of subsections, between the paragraphs or after them
    let html = format!(
        "<html><body><div class='post'>{}<h2>Three advantages, each in its own section.</h2>\
         <h3>The first advantage</h3>{}<h3>The second advantage</h3>{}\
         <h2>Comments</h2><h3>Log in to comment.</h3></div></body></html>",
        body_paragraphs(2),
        body_paragraphs(1),
        body_paragraphs(1)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.contains("## Three advantages, each in its own section.")
            && md.contains("### The first advantage")
            && md.contains("### The second advantage"),
        "{md}"
    );
    // after the last paragraph, a heading over a heading over nothing heads nothing: both go
    assert!(!md.contains("Comments") && !md.contains("Log in"), "{md}");
}

#[test]
fn a_table_of_results_whose_rows_are_links_stays_at_the_aggressive_level() {
    // a test's results in a block of their own, each row's first cell a link to the tested product: the block is
    // mostly link text, but a table is content
    let rows: String = ["Safe Seat Two", "Cosy Shell", "Level Up Plus"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            format!(
                "<tr><td><a href='/test/{i}'>{name}</a></td><td>{}0 €</td><td>1,{i}</td></tr>",
                30 + i
            )
        })
        .collect();
    let html = format!(
        "<html><body><div class='post'>{}<div class='text'><h2>Results</h2><table>\
         <tr><th>Model</th><th>Price</th><th>Grade</th></tr>{rows}</table></div></div></body></html>",
        body_paragraphs(4)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.contains("## Results") && md.contains("Cosy Shell") && md.contains("| Level Up Plus"),
        "{md}"
    );
}

#[test]
fn a_paragraph_of_sentences_full_of_links_between_paragraphs_stays_at_the_aggressive_level() {
    // most of its words are links, and each sentence ends right after one: prose all the same
    let cited = "<p>The haze led to <a href='/a'>canceled flights</a>, <a href='/b'>closed schools</a> and a \
                 <a href='/c'>public health emergency</a>. The city handed out \
                 <a href='/d'>five million masks to its schoolchildren</a>.</p>";
    // a paragraph that is only links between separators is a box of links, and goes
    let links =
        "<p><a href='/x'>Weather</a> · <a href='/y'>Traffic</a> · <a href='/z'>Sport</a></p>";
    let html = format!(
        "<html><body><div class='post'>{}{cited}{}{links}{}</div></body></html>",
        body_paragraphs(2),
        body_paragraphs(2),
        body_paragraphs(2)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.contains("The haze led to [canceled flights](https://example.com/a)"),
        "{md}"
    );
    assert!(!md.contains("Weather") && !md.contains("Traffic"), "{md}");
}

#[test]
fn a_copyright_note_is_left_out_at_the_aggressive_level() {
    let html = format!(
        r#"<html><body><div class="content"><h1>Flood</h1>{}
          <figure><img src="/a.jpg"><figcaption>The dykes held on Monday. <span class="credit">© Government/Kugler</span></figcaption></figure>
          {}<div class="caption">Sandbags at the weir. | © AFP / Jeff Pachoud</div>
          <figure><img src="/b.jpg"><figcaption>The weir at dawn.</figcaption><p>(Image: © River Authority)</p></figure>
          <p>The © sign on the town's old flood maps, drawn in 1995, still names the surveyor who made them.</p>
          {}</div></body></html>"#,
        body_paragraphs(2),
        body_paragraphs(2),
        body_paragraphs(2)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.contains("The dykes held on Monday.") && md.contains("Sandbags at the weir."),
        "{md}"
    );
    assert!(
        !md.contains("Kugler") && !md.contains("Pachoud") && !md.contains('|'),
        "{md}"
    );
    // a credit under a label of a word or two goes whole, the label with it
    assert!(
        md.contains("The weir at dawn.")
            && !md.contains("Image:")
            && !md.contains("River Authority"),
        "{md}"
    );
    // a © inside a sentence is the sentence's
    assert!(
        md.contains("The © sign on the town's old flood maps"),
        "{md}"
    );
    let md = clean(StripLevel::Moderate, &html);
    assert!(
        md.contains("Kugler")
            && md.contains("Pachoud")
            && md.contains("(Image: © River Authority)"),
        "{md}"
    );
}

#[test]
fn a_credit_by_its_class_is_left_out_at_the_aggressive_level() {
    // a picture's credit without a ©: the class says what it is (a part of a class word, not inside a word)
    let html = format!(
        r#"<html><body><div class="content"><h1>Flood</h1>
          <div class="content-header__accreditation"><p class="content-header__dek">The town that prepared for a week counts the damage, and the river falls again.</p></div>
          {}<div class="article__img"><img src="/a.jpg"><span class="v-A_-copyright">Jane Roe/imagebank.example</span>
          <p class="story-meta__credit">Rep. Jane Doe. | Photo Agency</p><div class="caption">The weir at dawn.</div></div>
          {}</div></body></html>"#,
        body_paragraphs(2),
        body_paragraphs(2)
    );
    let md = clean(StripLevel::Aggressive, &html);
    assert!(
        md.contains("The weir at dawn.") && md.contains("counts the damage"),
        "{md}"
    );
    assert!(
        !md.contains("Jane Roe") && !md.contains("Photo Agency"),
        "{md}"
    );
    let md = clean(StripLevel::Moderate, &html);
    assert!(
        md.contains("Jane Roe") && md.contains("Photo Agency"),
        "{md}"
    );
}

#[test]
fn the_search_for_the_lead_does_not_recurse_into_a_deep_nest() {
    // the lead is looked for in the wrappers before the article: 100,000 of them, one inside the other
    let depth = 100_000;
    let html = format!(
        "<html><body><div class='story'><div class='top'>{}A standfirst long enough to be one, ending here. \
         <img src='/a.jpg'>{}</div><div class='body'>{}</div></div></body></html>",
        "<span>".repeat(depth),
        "</span>".repeat(depth),
        body_paragraphs(4)
    );
    let (md, _) = HtmlCleaner::new(StripLevel::Aggressive).clean(&html);
    assert!(md.contains("Paragraph 3 of the report"), "{md}");
}
