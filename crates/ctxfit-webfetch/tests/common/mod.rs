//! The page-tool tests' HTTP server on 127.0.0.1 (pages, redirects, charsets, slow and broken answers) and what
//! they share.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ctxfit_webfetch::{FetchOptions, Fetcher};

/// A page in windows-1252 (the charset is in the HTTP header only).
pub const ARTICLE: &[u8] = b"<html><head><script>LEAK()</script></head><body><nav>Menu</nav>\
    <h1>Caf\xe9 news</h1><p>A <a href=\"/other\">relative link</a>.</p></body></html>";

pub const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A real page of the corpus, served as `/corpus`.
pub fn corpus_page() -> (String, String) {
    let corpus = ctxfit_testkit::corpus_dir().expect("the shared corpus is missing");
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("html/ground-truth.json")).unwrap(),
    )
    .unwrap();
    let (id, _) = truth.as_object().unwrap().iter().nth(3).unwrap();
    let mut html = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(corpus.join(format!("html/pages/{id}.html.gz"))).unwrap(),
    )
    .read_to_string(&mut html)
    .unwrap();
    (id.clone(), html)
}

pub struct Server {
    pub port: u16,
    pub requests: Arc<AtomicUsize>,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

pub fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

pub fn long_page() -> String {
    let mut html = String::from("<html><body><article><h1>Long</h1>");
    for i in 1..=40 {
        html.push_str(&format!(
            "<h2>Part {i}</h2><p>{}</p>",
            format!("Sentence {i} of a long page, with words enough to fill it. ").repeat(8)
        ));
    }
    html.push_str("</article></body></html>");
    html
}

pub fn serve() -> Server {
    let listener = TcpListener::bind((LOOPBACK, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&requests);
    let (_, corpus_html) = corpus_page();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            let corpus_html = corpus_html.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                let _ = reader.read_line(&mut request_line);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .to_owned();
                let html = ("Content-Type", "text/html; charset=utf-8");
                match path.as_str() {
                    "/article" => respond(
                        &mut stream,
                        "200 OK",
                        &[("Content-Type", "text/html; charset=windows-1252")],
                        ARTICLE,
                    ),
                    "/corpus" => respond(&mut stream, "200 OK", &[html], corpus_html.as_bytes()),
                    "/long" => respond(&mut stream, "200 OK", &[html], long_page().as_bytes()),
                    "/plain" => respond(
                        &mut stream,
                        "200 OK",
                        &[("Content-Type", "text/plain")],
                        b"just <text>",
                    ),
                    "/redirect" => {
                        respond(&mut stream, "302 Found", &[("Location", "/article")], b"")
                    }
                    "/loop" => respond(&mut stream, "302 Found", &[("Location", "/loop")], b""),
                    "/to-other-loopback" => {
                        let to = format!("http://127.0.0.2:{port}/article");
                        respond(&mut stream, "302 Found", &[("Location", to.as_str())], b"")
                    }
                    "/json" => respond(
                        &mut stream,
                        "200 OK",
                        &[("Content-Type", "application/json; charset=utf-8")],
                        "{\"name\": \"ctxfit\", \"tags\": [\"<b>\", \"café\"]}".as_bytes(),
                    ),
                    "/problem" => respond(
                        &mut stream,
                        "200 OK",
                        &[("Content-Type", "application/problem+json")],
                        b"{\"title\": \"Out of stock\"}",
                    ),
                    "/csv" => respond(
                        &mut stream,
                        "200 OK",
                        &[("Content-Type", "text/csv")],
                        b"city,rain_mm\nBergen,2250\n",
                    ),
                    "/feed" => respond(
                        &mut stream,
                        "200 OK",
                        &[("Content-Type", "application/rss+xml")],
                        b"<rss><channel><title>News &amp; notes</title></channel></rss>",
                    ),
                    "/png" => respond(
                        &mut stream,
                        "200 OK",
                        &[("Content-Type", "image/png")],
                        b"\x89PNG\r\n\x1a\n",
                    ),
                    // what servers mislabel: a PDF said to be a page, an image said to be text, a body of no
                    // stated type; and a page with a stray control byte said to be HTML (read as it says)
                    "/pdf-as-html" => respond(&mut stream, "200 OK", &[html], b"%PDF-1.7\n%\xe2\xe3"),
                    "/png-as-text" => respond(
                        &mut stream,
                        "200 OK",
                        &[("Content-Type", "text/plain")],
                        b"\x89PNG\r\n\x1a\n\x00\x00",
                    ),
                    "/untyped-binary" => respond(&mut stream, "200 OK", &[], b"ab\x00\x01cd"),
                    "/html-with-a-nul" => {
                        respond(&mut stream, "200 OK", &[html], b"<p>kept\x00 text</p>")
                    }
                    "/pdf" => respond(
                        &mut stream,
                        "200 OK",
                        &[("Content-Type", "application/pdf")],
                        b"%PDF-1.4",
                    ),
                    "/big" => respond(&mut stream, "200 OK", &[html], &vec![b'a'; 2 << 20]),
                    // 4 MiB of page in a few kilobytes of gzip
                    "/gzip-bomb" => respond(
                        &mut stream,
                        "200 OK",
                        &[html, ("Content-Encoding", "gzip")],
                        &gzip(&vec![b'a'; 4 << 20]),
                    ),
                    "/gzip" => respond(
                        &mut stream,
                        "200 OK",
                        &[html, ("Content-Encoding", "gzip")],
                        &gzip(b"<html><body><h1>Packed</h1><p>Sent gzipped.</p></body></html>"),
                    ),
                    "/to-file" => respond(
                        &mut stream,
                        "302 Found",
                        &[("Location", "file:///etc/passwd")],
                        b"",
                    ),
                    "/meta" => respond(
                        &mut stream,
                        "200 OK",
                        &[html],
                        b"<html><head><title>Ignored</title><meta property=\"og:title\" content=\"Release notes\">\
                          <link rel=\"canonical\" href=\"/notes\"><meta name=\"author\" content=\"Ada\">\
                          <meta property=\"article:published_time\" content=\"2024-05-01\"></head>\
                          <body><p>Version 2 is out.</p></body></html>",
                    ),
                    // quick to send, slow to clean: 8 MB of `<`, each a parse error
                    "/slow-to-clean" => respond(&mut stream, "200 OK", &[html], &vec![b'<'; 8 << 20]),
                    "/to-relative" => {
                        respond(&mut stream, "301 Moved", &[("Location", "plain")], b"")
                    }
                    "/slow" => {
                        std::thread::sleep(Duration::from_secs(3));
                        respond(&mut stream, "200 OK", &[html], b"<p>late</p>")
                    }
                    _ => respond(&mut stream, "404 Not Found", &[html], b"<p>no</p>"),
                }
            });
        }
    });
    Server { port, requests }
}

pub fn fetcher(options: FetchOptions) -> Fetcher {
    Fetcher::new(options.allow_address(LOOPBACK))
}
