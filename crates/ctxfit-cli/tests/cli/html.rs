//! `html`: a file or standard input, `--explain`, and fetching only from allowed addresses.

use super::*;

/// A real page of the corpus, decompressed into a temporary file.
fn corpus_html_page(dir: &std::path::Path) -> (PathBuf, Vec<u8>) {
    use std::io::Read;
    let pages = corpus().join("html/pages");
    let mut names: Vec<_> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut html = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&names[0]).unwrap())
        .read_to_end(&mut html)
        .unwrap();
    let path = dir.join("page.html");
    std::fs::write(&path, &html).unwrap();
    (path, html)
}

#[test]
fn html_cleans_a_file_or_stdin_and_reports_like_the_page_tool() {
    ctxfit_testkit::skip_without_corpus!();
    let dir = temp_dir("html");
    let (path, html) = corpus_html_page(&dir);
    let path = path.to_str().unwrap();
    let minimal = ctxfit(&["html", path, "--level", "minimal"], None);
    assert!(minimal.status.success(), "{}", stderr(&minimal));
    let aggressive = ctxfit(&["html", path, "--level", "aggressive"], None);
    assert!(stdout(&aggressive).len() < stdout(&minimal).len());
    assert!(
        stderr(&aggressive).contains("bytes of page"),
        "{}",
        stderr(&aggressive)
    );
    let from_stdin = ctxfit(&["html", "-", "--level", "minimal"], Some(&html));
    assert_eq!(stdout(&from_stdin), stdout(&minimal));
    // a file:// URL: its path asked for, not "no such file"
    let o = ctxfit(&["html", "file:///tmp/page.html"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("file:// URLs are not fetched: give the file's path (/tmp/page.html)"),
        "{}",
        stderr(&o)
    );
    // a PDF or an executable given as the page: refused by what it is, nothing written
    for (bytes, kind) in [
        (
            &b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj"[..],
            "a PDF document",
        ),
        (b"\x7fELF\x02\x01\x01\x00\x00", "an executable (ELF)"),
    ] {
        let o = ctxfit(&["html", "-"], Some(bytes));
        assert_eq!(o.status.code(), Some(2));
        assert!(stdout(&o).is_empty());
        assert!(
            stderr(&o).contains(&format!("not a web page: the bytes are {kind}, not text")),
            "{}",
            stderr(&o)
        );
    }
    // a stray control byte in a file named as a page: a page, as a browser opens it by its name; the same bytes
    // untyped (standard input, another name) are sniffed, and refused
    let stray = b"<meta charset=utf-8><p>caf\xc3\xa9 \x00 au lait</p>";
    for (name, page) in [
        ("stray.html", true),
        ("stray.HTM", true),
        ("stray.dat", false),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, stray).unwrap();
        let o = ctxfit(&["html", file.to_str().unwrap()], None);
        assert_eq!(o.status.success(), page, "{name}: {}", stderr(&o));
        assert_eq!(stdout(&o).contains("café"), page, "{name}");
    }

    let json = ctxfit(&["html", path, "--max-chars", "500", "--json"], None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(v["success"], true);
    assert_eq!(v["was_truncated"], true);
    assert_eq!(v["original_size"], html.len());
    assert!(v["data"].as_str().unwrap().chars().count() <= 500);
    let total = v["total_chunks"].as_u64().unwrap();
    assert!(total > 1);
    let last = ctxfit(
        &[
            "html",
            path,
            "--max-chars",
            "500",
            "--chunk",
            &total.to_string(),
            "--json",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&last)).unwrap();
    assert_eq!(
        (v["is_chunked"].clone(), v["chunk_number"].clone()),
        (true.into(), total.into())
    );

    let past = ctxfit(&["html", path, "--chunk", "999"], None);
    assert_eq!(past.status.code(), Some(2));
    assert!(
        stderr(&past).contains("there is no chunk 999"),
        "{}",
        stderr(&past)
    );
    // settings that would silently do nothing, or nothing useful, are refused by name
    for (args, says) in [
        (
            &["--max-chars", "0"][..],
            "0 characters would leave nothing",
        ),
        (&["--base-url", "docs/"], "not an absolute URL"),
        (&["--base-url", "https:///x"], "not an absolute URL"),
    ] {
        let o = ctxfit(&[&["html", path][..], args].concat(), None);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    let linked = dir.join("linked.html");
    std::fs::write(
        &linked,
        r#"<p>See <a href="../b/c.html">the next part</a> of it.</p>"#,
    )
    .unwrap();
    // a site's URL, or a saved page's own place
    for (base, link) in [
        (
            "https://example.org/a/index.html",
            "https://example.org/b/c.html",
        ),
        (
            "file:///home/u/pages/a/index.html",
            "file:///home/u/pages/b/c.html",
        ),
    ] {
        let o = ctxfit(
            &["html", linked.to_str().unwrap(), "--base-url", base],
            None,
        );
        let expected = format!("[the next part]({link})");
        assert!(stdout(&o).contains(&expected), "{base}: {}", stdout(&o));
    }
    let out = dir.join("page.md");
    let written = ctxfit(&["html", path, "-o", out.to_str().unwrap()], None);
    assert!(written.status.success());
    assert!(!std::fs::read_to_string(&out).unwrap().is_empty());
}

#[test]
fn html_explain_names_what_the_aggressive_level_chose() {
    let dir = temp_dir("html-explain");
    let paragraphs: String = (0..5)
        .map(|i| {
            format!(
                "<p>Paragraph {i}: the river rose, the dykes held, and the town, which had prepared for a week, \
                 counted the damage on Monday morning.</p>"
            )
        })
        .collect();
    let page = format!(
        "<html><body><div class='page'><div id='story' class='body'>{paragraphs}<p>Share this:</p></div>\
         </div></body></html>"
    );
    let path = dir.join("story.html");
    std::fs::write(&path, &page).unwrap();
    let path = path.to_str().unwrap();
    let out = ctxfit(&["html", path, "--explain"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "article (1):\n  div#story.body (535 characters): \"Paragraph 0: the river rose, the dykes held, and the town,…\"\n\
         lead, written before it: none\n\
         left out of it (1):\n  p (10 characters): \"Share this:\"\n"
    );
    // the same from standard input
    let piped = ctxfit(&["html", "-", "--explain"], Some(page.as_bytes()));
    assert_eq!(stdout(&piped), stdout(&out));
    // a page of short blocks has no article, and says so
    let short = ctxfit(
        &["html", "-", "--explain"],
        Some(b"<html><body><div>Flour, 200 g</div><div>Sugar</div></body></html>"),
    );
    assert!(
        stdout(&short).starts_with("no article:"),
        "{}",
        stdout(&short)
    );
    // a URL is refused with the way round it; with --json it is a usage error
    let url = ctxfit(&["html", "http://127.0.0.1:9/page", "--explain"], None);
    assert_eq!(url.status.code(), Some(2));
    assert!(
        stderr(&url).contains("save the page first"),
        "{}",
        stderr(&url)
    );
    let both = ctxfit(&["html", path, "--explain", "--json"], None);
    assert_eq!(both.status.code(), Some(2));
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
}

#[test]
fn html_fetches_urls_only_from_allowed_addresses() {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/page",
        listener.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = "<html><body><nav>menu</nav><h1>Served</h1><p>Hello from a server.</p></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let refused = ctxfit(&["html", &url], None);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("a loopback address"),
        "{}",
        stderr(&refused)
    );
    let refused_json = ctxfit(&["html", &url, "--json"], None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&refused_json)).unwrap();
    assert_eq!(v["success"], false);

    let fetched = ctxfit(&["html", &url, "--allow-address", "127.0.0.1"], None);
    assert!(fetched.status.success(), "{}", stderr(&fetched));
    assert_eq!(stdout(&fetched), "# Served\n\nHello from a server.\n");
}
