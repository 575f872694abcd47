//! The page tool against a real HTTP server on 127.0.0.1: cleaning, charsets, truncation and chunks, and every
//! limit (SSRF guard, redirects, size, content type, timeout, status).

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use ctxfit_html::{HtmlCleaner, StripLevel};
use ctxfit_webfetch::{
    fetch_webpage_markdown, shape, AddressPolicy, FetchError, FetchOptions, FetchResult, Fetcher,
};

#[test]
fn a_page_is_fetched_decoded_and_cleaned() {
    ctxfit_testkit::skip_without_corpus!();
    let server = serve();
    let result = fetcher(FetchOptions::default()).fetch_markdown(&server.url("/article"));
    let link = format!("[relative link]({})", server.url("/other"));
    assert!(result.success, "{}", result.message);
    assert_eq!(result.data, format!("# Caf\u{e9} news\n\nA {link}.\n"));
    assert_eq!(result.original_size, ARTICLE.len());
    assert!(
        result.tokens_used > 5 && result.tokens_used < 30,
        "{}",
        result.tokens_used
    );
    assert!(!result.was_truncated && !result.is_chunked);
    assert_eq!((result.chunk_number, result.total_chunks), (None, 1));
    assert!(
        result
            .message
            .contains(&format!("{} bytes of page", ARTICLE.len())),
        "{}",
        result.message
    );

    // redirects are followed, and links resolve against where the page ended up
    let redirected = fetcher(FetchOptions::default()).fetch_markdown(&server.url("/redirect"));
    assert_eq!(redirected.data, result.data);
    assert!(
        redirected.message.contains("/article (moderate)"),
        "{}",
        redirected.message
    );

    let plain = fetcher(FetchOptions::default()).fetch_markdown(&server.url("/plain"));
    assert_eq!(plain.data, "just <text>");
}

#[test]
fn text_comes_back_as_it_is_and_binaries_are_refused() {
    // an API's JSON, a CSV, a feed: the agent reads them as they were sent, escapes and markup included
    let server = serve();
    let fetch = |path: &str| fetcher(FetchOptions::default()).fetch_markdown(&server.url(path));
    for (path, text) in [
        (
            "/json",
            "{\"name\": \"ctxfit\", \"tags\": [\"<b>\", \"café\"]}",
        ),
        ("/problem", "{\"title\": \"Out of stock\"}"),
        ("/csv", "city,rain_mm\nBergen,2250\n"),
        (
            "/feed",
            "<rss><channel><title>News &amp; notes</title></channel></rss>",
        ),
    ] {
        let result = fetch(path);
        assert!(result.success, "{path}: {}", result.message);
        assert_eq!(result.data, text, "{path}");
        assert_eq!(result.original_size, text.len(), "{path}");
    }
    // an image is not text: refused with its type, nothing handed to the model
    let png = fetch("/png");
    assert!(!png.success && png.data.is_empty());
    assert!(
        png.message.ends_with(
            "not a web page: content type \"image/png\" (web pages and text are fetched: HTML, plain text, JSON, XML)"
        ),
        "{}",
        png.message
    );
    // a body that is not text whatever its label says: refused by what it is, not answered as mojibake
    for (path, kind) in [
        ("/pdf-as-html", "a PDF document"),
        ("/png-as-text", "a PNG image"),
        ("/untyped-binary", "binary data"),
    ] {
        let result = fetch(path);
        assert!(!result.success && result.data.is_empty(), "{path}");
        assert!(
            result
                .message
                .ends_with(&format!("not a web page: the body is {kind}, not text")),
            "{path}: {}",
            result.message
        );
    }
    // a page said to be HTML is read as HTML, a stray control byte and all
    let page = fetch("/html-with-a-nul");
    assert!(
        page.success && page.data.contains("kept"),
        "{}",
        page.message
    );
}

#[test]
fn a_real_page_comes_back_as_the_cleaner_makes_it() {
    ctxfit_testkit::skip_without_corpus!();
    let server = serve();
    let (id, html) = corpus_page();
    let options = FetchOptions {
        strip_level: StripLevel::Aggressive,
        max_chars: 1_000_000,
        ..FetchOptions::default()
    };
    let page = fetcher(options).fetch(&server.url("/corpus")).unwrap();
    let (expected, stats) = HtmlCleaner::new(StripLevel::Aggressive)
        .with_base_url(server.url("/corpus"))
        .clean(&html);
    assert_eq!(page.markdown, expected, "{id}");
    assert_eq!(page.stats, stats);
    assert_eq!(page.encoding, "UTF-8");
    assert!(
        page.stats.reduction_percent > 80.0,
        "{id}: {:?}",
        page.stats
    );
}

#[test]
fn long_pages_are_truncated_or_read_in_chunks() {
    ctxfit_testkit::skip_without_corpus!();
    let server = serve();
    let url = server.url("/long");
    let get = |chunk| {
        fetcher(FetchOptions {
            max_chars: 2000,
            chunk,
            ..FetchOptions::default()
        })
        .fetch_markdown(&url)
    };
    let first = get(None);
    assert!(first.success && first.was_truncated && !first.is_chunked);
    assert!(first.data.chars().count() <= 2000);
    assert!(first.data.starts_with("# Long\n\n## Part 1\n"));
    let total = first.total_chunks;
    assert!(total > 5, "{total}");
    assert!(first.message.contains("pass chunk=2"), "{}", first.message);

    let mut all = Vec::new();
    for k in 1..=total {
        let part = get(Some(k));
        assert!(part.success && part.is_chunked && !part.was_truncated);
        assert_eq!((part.chunk_number, part.total_chunks), (Some(k), total));
        assert!(part.data.chars().count() <= 2000);
        assert!(
            part.data.starts_with("#"),
            "chunks start at headings: {}",
            part.data
        );
        all.push(part.data);
    }
    assert_eq!(all[0], first.data);
    let whole = HtmlCleaner::new(StripLevel::Moderate).clean(&long_page()).0;
    assert_eq!(
        all.join("\n\n").trim_end(),
        whole.trim_end(),
        "the chunks are the whole page"
    );

    let past = get(Some(total + 1));
    assert!(!past.success);
    assert!(past
        .message
        .contains(&format!("there is no chunk {}", total + 1)));
    assert_eq!(past.total_chunks, total);
}

#[test]
fn non_public_addresses_are_refused_before_connecting() {
    ctxfit_testkit::skip_without_corpus!();
    let server = serve();
    for url in [
        server.url("/article"),
        format!("http://localhost:{}/article", server.port),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://[::1]:9/".to_owned(),
        "http://10.0.0.1/".to_owned(),
    ] {
        let result = fetch_webpage_markdown(&url, StripLevel::Moderate, 5000, None);
        assert!(!result.success, "{url}");
        assert!(result.data.is_empty());
        assert!(
            result.message.contains("refused to connect")
                && result.message.contains("public addresses"),
            "{url}: {}",
            result.message
        );
    }
    assert!(
        fetch_webpage_markdown("http://169.254.169.254/", StripLevel::Moderate, 5000, None)
            .message
            .contains("a cloud metadata address")
    );
    assert_eq!(
        server.requests.load(Ordering::SeqCst),
        0,
        "nothing reached the server"
    );

    // an allowed address that redirects to one that is not: the redirect is refused
    let err = fetcher(FetchOptions::default())
        .fetch(&server.url("/to-other-loopback"))
        .unwrap_err();
    assert!(
        matches!(&err, FetchError::Refused(r) if r.ip.to_string() == "127.0.0.2"),
        "{err}"
    );
}

#[test]
fn a_page_says_its_title_url_date_and_author_when_it_states_them() {
    ctxfit_testkit::skip_without_corpus!();
    let server = serve();
    let result = fetcher(FetchOptions::default()).fetch_markdown(&server.url("/meta"));
    assert!(result.success, "{}", result.message);
    assert_eq!(result.title.as_deref(), Some("Release notes"));
    assert_eq!(result.canonical_url, Some(server.url("/notes")));
    assert_eq!(result.published.as_deref(), Some("2024-05-01"));
    assert_eq!(result.author.as_deref(), Some("Ada"));
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["title"], "Release notes");
    // a page that states nothing: the keys are left out, seed 003's keys stay
    let plain = fetcher(FetchOptions::default()).fetch_markdown(&server.url("/plain"));
    let json = serde_json::to_value(&plain).unwrap();
    assert!(json.get("title").is_none() && json.get("message").is_some());
}

#[test]
fn compressed_pages_are_capped_on_what_they_inflate_to() {
    ctxfit_testkit::skip_without_corpus!();
    let server = serve();
    let page = fetcher(FetchOptions::default())
        .fetch(&server.url("/gzip"))
        .unwrap();
    assert!(page.markdown.contains("Sent gzipped."), "{}", page.markdown);
    let small = FetchOptions {
        max_bytes: 1 << 20,
        ..FetchOptions::default()
    };
    let err = fetcher(small).fetch(&server.url("/gzip-bomb")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the page is larger than the limit of 1048576 bytes"
    );
}

#[test]
fn redirects_go_only_to_web_pages_and_credentials_never_reach_the_model() {
    ctxfit_testkit::skip_without_corpus!();
    let server = serve();
    let fetch = fetcher(FetchOptions::default());
    let err = fetch.fetch(&server.url("/to-file")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "refused a redirect to file:///etc/passwd: scheme \"file\" is not http or https"
    );
    // a relative Location is resolved against the page that sent it
    let page = fetch.fetch(&server.url("/to-relative")).unwrap();
    assert!(page.final_url.ends_with("/plain"), "{}", page.final_url);
    assert_eq!(page.markdown, "just <text>");

    let with_password = format!("http://agent:s3cret@127.0.0.1:{}/missing", server.port);
    let result = fetch.fetch_markdown(&with_password);
    assert!(!result.success);
    assert!(!result.message.contains("s3cret"), "{}", result.message);
    assert!(
        result.message.contains("http://***@127.0.0.1"),
        "{}",
        result.message
    );
    let result = fetch.fetch_markdown("ftp://agent:s3cret@example.com/");
    assert!(!result.message.contains("s3cret"), "{}", result.message);

    // allowing private addresses does not open the metadata services
    let open = Fetcher::new(FetchOptions {
        addresses: AddressPolicy {
            allow_private: true,
            ..AddressPolicy::default()
        },
        ..FetchOptions::default()
    });
    let err = open
        .fetch("http://169.254.169.254/latest/meta-data/")
        .unwrap_err();
    assert!(
        matches!(&err, FetchError::Refused(r) if r.kind == "a cloud metadata address"),
        "{err}"
    );
}

#[test]
fn limits_give_clear_errors() {
    ctxfit_testkit::skip_without_corpus!();
    let server = serve();
    let fetch = |path: &str, options: FetchOptions| {
        fetcher(options)
            .fetch(&server.url(path))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        fetch("/missing", FetchOptions::default()),
        "HTTP 404 Not Found"
    );
    assert_eq!(
        fetch("/loop", FetchOptions::default()),
        "more than 5 redirects"
    );
    assert_eq!(
        fetch("/pdf", FetchOptions::default()),
        "not a web page: content type \"application/pdf\" (web pages and text are fetched: HTML, plain text, JSON, XML)"
    );
    let small = FetchOptions {
        max_bytes: 1 << 20,
        ..FetchOptions::default()
    };
    assert_eq!(
        fetch("/big", small),
        "the page is larger than the limit of 1048576 bytes"
    );
    let quick = FetchOptions {
        timeout: Duration::from_millis(500),
        ..FetchOptions::default()
    };
    assert!(fetch("/slow", quick).starts_with("timed out"));
    // the timeout covers cleaning too
    let quick = FetchOptions {
        // long enough to read 8 MB from loopback, far too short to clean it (seconds in a debug build)
        timeout: Duration::from_millis(1000),
        max_bytes: 16 << 20,
        ..FetchOptions::default()
    };
    assert!(
        fetch("/slow-to-clean", quick).starts_with("timed out (the page was not cleaned within"),
        "cleaning is bounded by the timeout"
    );
    let long = format!("https://example.com/{}", "x".repeat(100_000));
    for (url, reason) in [
        ("ftp://example.com/x", "scheme \"ftp\" is not http or https"),
        ("file:///etc/passwd", "scheme \"file\" is not http or https"),
        ("example.com/page", "no scheme (http:// or https://)"),
        ("http://", "not a URL"),
        (&long, "not a URL (uri too long)"),
    ] {
        let result = fetch_webpage_markdown(url, StripLevel::Moderate, 5000, None);
        assert!(!result.success);
        assert!(result.message.contains(reason), "{url}: {}", result.message);
    }
}

#[test]
fn a_word_longer_than_a_chunk_is_split_not_dropped() {
    let blob = format!("before\n\n{}\n\nafter", "x".repeat(2500));
    let first = shape(&blob, 0, 1000, None, "blob");
    assert_eq!(first.total_chunks, 5);
    let all: Vec<String> = (1..=5)
        .map(|k| shape(&blob, 0, 1000, Some(k), "blob").data)
        .collect();
    assert!(all.iter().all(|c| c.chars().count() <= 1000));
    assert_eq!(all.concat().replace('\n', ""), blob.replace('\n', ""));
}

#[test]
fn the_result_serialises_to_the_tools_json() {
    let result = shape("# Title\n\nBody text.\n", 120, 5000, None, "page");
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "success": true,
            "data": "# Title\n\nBody text.\n",
            "tokens_used": result.tokens_used,
            "was_truncated": false,
            "original_size": 120,
            "is_chunked": false,
            "chunk_number": null,
            "total_chunks": 1,
            "message": "page: 120 bytes of page, 20 characters of Markdown",
        })
    );
    let failed =
        serde_json::to_value(FetchResult::failure("could not fetch x: host not found")).unwrap();
    assert_eq!(failed["success"], false);
    assert_eq!(failed["data"], "");
}
