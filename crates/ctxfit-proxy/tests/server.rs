//! The HTTP server on loopback, with a scripted upstream: what it forwards and answers, its control endpoints,
//! and what it refuses before anything reaches the upstream. (The official SDKs and the real agents drive it in
//! `crates/ctxfit-py/tests`.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use ctxfit_proxy::{start, ProxyConfig};

/// What the upstream received: (request line, body) per request.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An upstream on 127.0.0.1 that answers every request with a small Messages (or Chat) answer, and keeps what it
/// received.
struct Upstream {
    url: String,
    received: Received,
}

fn upstream() -> Upstream {
    upstream_answering(|_, _| (200, MESSAGE_ANSWER.to_owned()))
}

/// A small Messages answer.
const MESSAGE_ANSWER: &str = r#"{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":40,"output_tokens":1}}"#;

/// The mark of an answer the upstream sends in chunks, its length not stated.
const CHUNKED: &str = "chunked:";

/// How the upstream answers a request (its request line and body): status and JSON body.
type Answer = fn(&str, &[u8]) -> (u16, String);

/// An upstream on 127.0.0.1 that answers every request as `answer` says, and keeps what it received.
fn upstream_answering(answer: Answer) -> Upstream {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || serve(stream, &log, answer));
        }
    });
    Upstream { url, received }
}

/// One connection of the upstream: requests one after the other, each answered at once.
fn serve(stream: TcpStream, log: &Mutex<Vec<(String, Vec<u8>)>>, answer: Answer) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h.trim().is_empty() {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            // (a coding the body arrived in is noted beside its request line)
            if let Some(v) = lower.strip_prefix("content-encoding:") {
                line = format!("{} [content-encoding: {}]", line.trim(), v.trim());
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let (status, answer) = answer(line.trim(), &body);
        log.lock().unwrap().push((line.trim().to_owned(), body));
        // an answer marked so is sent in chunks of 1,000 bytes, its length not stated
        if let Some(answer) = answer.strip_prefix(CHUNKED) {
            let _ = write!(
                out,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            );
            for chunk in answer.as_bytes().chunks(1000) {
                let _ = write!(out, "{:x}\r\n", chunk.len());
                let _ = out.write_all(chunk);
                let _ = write!(out, "\r\n");
            }
            let _ = write!(out, "0\r\n\r\n");
            continue;
        }
        let _ = write!(
            out,
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
    }
}

/// One request to the proxy over a fresh connection: (status, headers lower-cased, body).
fn send(addr: &str, head: &str, body: &[u8]) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{head}\r\nhost: {addr}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (top, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = top.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, rest.to_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The proxy on 127.0.0.1, both APIs' origin the upstream.
fn proxy(rt: &tokio::runtime::Runtime, upstream: &Upstream) -> String {
    let config = ProxyConfig {
        anthropic: upstream.url.parse().unwrap(),
        openai: upstream.url.parse().unwrap(),
        ..ProxyConfig::default()
    };
    serving(rt, config)
}

/// The proxy on 127.0.0.1 with `config`: its address.
fn serving(rt: &tokio::runtime::Runtime, config: ProxyConfig) -> String {
    let running = rt.block_on(start(config, "127.0.0.1:0")).unwrap();
    running.addr.to_string()
}

fn messages_body(turns: &[&str]) -> Vec<u8> {
    let messages: Vec<serde_json::Value> = (turns.iter().enumerate())
        .map(|(i, t)| serde_json::json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": t}))
        .collect();
    serde_json::to_vec_pretty(
        &serde_json::json!({"model": "m", "max_tokens": 8, "messages": messages}),
    )
    .unwrap()
}

#[test]
fn a_request_goes_upstream_as_the_client_wrote_it_and_its_conversation_is_named() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream();
    let addr = proxy(&rt, &up);
    let first = messages_body(&["list the files"]);
    let (status, headers, body) = send(&addr, "POST /v1/messages HTTP/1.1", &first);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"text\":\"ok\""), "{body}");
    let conversation = header(&headers, "x-ctxfit-conversation")
        .unwrap()
        .to_owned();
    // nothing to compact: the upstream got the client's request on the client's path, each message (and each
    // field's value) the client's own bytes
    {
        let got = up.received.lock().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "POST /v1/messages HTTP/1.1");
        let sent: serde_json::Value = serde_json::from_slice(&got[0].1).unwrap();
        assert_eq!(
            sent,
            serde_json::from_slice::<serde_json::Value>(&first).unwrap()
        );
        let message = "{\n      \"role\": \"user\",\n      \"content\": \"list the files\"\n    }";
        assert!(String::from_utf8_lossy(&first).contains(message));
        assert!(String::from_utf8_lossy(&got[0].1).contains(message));
    }
    // the next request of the same conversation continues it
    let (status, headers, _) = send(
        &addr,
        "POST /v1/messages HTTP/1.1",
        &messages_body(&["list the files", "a.rs b.rs", "read a.rs"]),
    );
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "x-ctxfit-conversation"),
        Some(conversation.as_str())
    );
    // the control endpoints count them, and are not forwarded
    let (status, _, stats) = send(&addr, "GET /ctxfit/stats HTTP/1.1", b"");
    assert_eq!(status, 200);
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(
        stats["apis"]["anthropic-messages"]["requests"], 2,
        "{stats}"
    );
    // and what the provider reported for them (the upstream says 40 input tokens each, nothing cached), read
    // once each answer has passed
    let provider = (0..200)
        .map(|_| {
            let (_, _, stats) = send(&addr, "GET /ctxfit/stats HTTP/1.1", b"");
            let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(10));
            stats["apis"]["anthropic-messages"]["provider"].clone()
        })
        .find(|p| p["answers"] == 2)
        .expect("the two answers' usage counted");
    assert_eq!(
        provider,
        serde_json::json!({"answers": 2, "input_tokens": 80, "cache_read_tokens": 0, "cache_write_tokens": 0})
    );
    let (status, _, metrics) = send(&addr, "GET /metrics HTTP/1.1", b"");
    assert_eq!(status, 200);
    assert!(
        metrics.contains("ctxfit_proxy_requests_total{api=\"anthropic-messages\"} 2")
            && metrics.contains(
                "ctxfit_proxy_provider_input_tokens_total{api=\"anthropic-messages\"} 80"
            ),
        "{metrics}"
    );
    assert_eq!(up.received.lock().unwrap().len(), 2);
}

#[test]
fn what_cannot_be_compacted_is_refused_before_the_upstream_hears_of_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream();
    let addr = proxy(&rt, &up);
    // malformed JSON: the API's error shape, naming the place
    let (status, _, body) = send(
        &addr,
        "POST /v1/messages HTTP/1.1",
        b"{\"model\": \"m\", \"messages\": [",
    );
    assert_eq!(status, 400, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["type"], "error", "{body}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 1"),
        "{body}"
    );
    // a WebSocket upgrade of the Responses API: 426 at once, so the client falls back to HTTP
    let (status, _, body) = send(
        &addr,
        "GET /v1/responses HTTP/1.1\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==",
        b"",
    );
    assert_eq!(status, 426, "{body}");
    assert!(body.contains("not over a WebSocket"), "{body}");
    assert!(up.received.lock().unwrap().is_empty());
}

#[test]
fn a_body_that_stops_arriving_or_states_more_than_the_cap_is_answered_before_it_is_held() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream();
    let config = ProxyConfig {
        anthropic: up.url.parse().unwrap(),
        openai: up.url.parse().unwrap(),
        body_timeout: std::time::Duration::from_millis(300),
        max_body: 1 << 20,
        ..ProxyConfig::default()
    };
    let addr = serving(&rt, config);
    // a size over the cap: 413 from the stated length, before any of the body is sent
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\n\r\n",
        2 << 20
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains(r#""type":"request_too_large""#), "{text}");
    // a body that stops: 408 in the API's shape after the pause, and the connection closed
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 100\r\n\r\n{{\"model\""
    )
    .unwrap();
    let started = std::time::Instant::now();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(started.elapsed() >= std::time::Duration::from_millis(250));
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    let error: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        error["error"]["message"],
        "ctxfit proxy: the request body stopped arriving: nothing for 300 ms (92 of 100 bytes missing)"
    );
    assert!(up.received.lock().unwrap().is_empty());
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

#[test]
fn a_compressed_body_is_inflated_compacted_and_sent_on_uncompressed() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (openai, chatgpt) = (upstream(), upstream());
    let config = ProxyConfig {
        anthropic: openai.url.parse().unwrap(),
        openai: openai.url.parse().unwrap(),
        chatgpt: chatgpt.url.parse().unwrap(),
        max_body: 1 << 20,
        ..ProxyConfig::default()
    };
    let addr = serving(&rt, config);
    let output = (1..=2000)
        .map(|i| format!("{i}: line {i}\n"))
        .collect::<String>();
    let request = serde_json::to_vec(&serde_json::json!({
        "model": "gpt-5.1-codex", "stream": true, "store": false,
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "count"}]},
            {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"seq 1 2000\"}", "call_id": "c1"},
            {"type": "function_call_output", "call_id": "c1", "output": output},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Counted."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]},
        ]
    }))
    .unwrap();
    // Codex CLI signed in with ChatGPT: zstd, to ChatGPT's backend, which has its own upstream
    let packed = zstd(&request);
    assert!(packed.len() * 2 < request.len());
    let head = "POST /backend-api/codex/responses HTTP/1.1\r\ncontent-encoding: zstd\r\nauthorization: Bearer t";
    let (status, headers, answer) = send(&addr, head, &packed);
    assert_eq!(status, 200, "{answer}");
    assert!(header(&headers, "x-ctxfit-conversation").is_some());
    assert_eq!(header(&headers, "x-ctxfit-untouched"), None);
    {
        let got = chatgpt.received.lock().unwrap();
        assert_eq!(got.len(), 1);
        // the request inflated, on its own path, without its coding, and compacted: the stale output cut to an
        // excerpt (the last message is the user's: the model answered the output already)
        assert_eq!(got[0].0, "POST /backend-api/codex/responses HTTP/1.1");
        let sent: serde_json::Value = serde_json::from_slice(&got[0].1).unwrap();
        let kept = sent["input"][2]["output"].as_str().unwrap();
        assert!(
            kept.starts_with("1: line 1\n") && kept.contains("lines omitted]"),
            "{kept:.200}"
        );
        assert!(got[0].1.len() * 4 < request.len(), "{}", got[0].1.len());
    }
    let tokens_after = header(&headers, "x-ctxfit-tokens-after")
        .unwrap()
        .to_owned();
    assert!(openai.received.lock().unwrap().is_empty());
    // gzip to the Responses API: the same
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&request).unwrap();
    let (status, headers, answer) = send(
        &addr,
        "POST /v1/responses HTTP/1.1\r\ncontent-encoding: gzip\r\nauthorization: Bearer k",
        &gz.finish().unwrap(),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(header(&headers, "x-ctxfit-conversation").is_some());
    assert_eq!(
        header(&headers, "x-ctxfit-tokens-after"),
        Some(tokens_after.as_str())
    );
    assert_eq!(
        openai.received.lock().unwrap()[0].0,
        "POST /v1/responses HTTP/1.1"
    );
    // a request the proxy does not compact (it continues a stored response) goes as the client compressed it
    let stored = zstd(
        br#"{"model":"m","input":[{"role":"user","content":"and?"}],"previous_response_id":"r1"}"#,
    );
    let (status, headers, _) = send(&addr, head, &stored);
    assert_eq!(status, 200);
    assert!(header(&headers, "x-ctxfit-conversation").is_none());
    assert_eq!(
        chatgpt.received.lock().unwrap().last().unwrap(),
        &(
            "POST /backend-api/codex/responses HTTP/1.1 [content-encoding: zstd]".to_owned(),
            stored
        )
    );
    // a coding the proxy does not read: untouched, and the answer says why
    let brotli = b"\x1b\x03\x00 brotli bytes".to_vec();
    let (status, headers, _) = send(
        &addr,
        "POST /v1/responses HTTP/1.1\r\ncontent-encoding: br\r\nauthorization: Bearer k",
        &brotli,
    );
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "x-ctxfit-untouched"),
        Some("content-encoding br")
    );
    assert_eq!(openai.received.lock().unwrap().last().unwrap().1, brotli);
    // a frame that inflates past --max-body, and bytes that are not zstd: refused in the API's shape, before the
    // upstream hears of them
    let heard = chatgpt.received.lock().unwrap().len();
    let bomb = zstd(&vec![b' '; 16 << 20]);
    assert!(bomb.len() < 16 << 10);
    let (status, _, answer) = send(&addr, head, &bomb);
    assert_eq!(status, 413, "{answer}");
    assert!(
        answer.contains("inflates past the proxy's limit of 1048576 bytes"),
        "{answer}"
    );
    let (status, _, answer) = send(&addr, head, b"\x28\xb5\x2f\xfd not a frame");
    assert_eq!(status, 400, "{answer}");
    let error: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("ctxfit proxy: the request body is not valid zstd"),
        "{message}"
    );
    assert_eq!(chatgpt.received.lock().unwrap().len(), heard);
    // the stats count the bodies inflated: the zstd and the gzip ones, and the one not compacted
    let (_, _, stats) = send(&addr, "GET /ctxfit/stats HTTP/1.1", b"");
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["apis"]["openai-responses"]["inflated"], 3, "{stats}");
    // ChatGPT's other endpoints go to its upstream as they came
    let (status, _, _) = send(
        &addr,
        "GET /backend-api/wham/accounts/check HTTP/1.1\r\nauthorization: Bearer t",
        b"",
    );
    assert_eq!(status, 200);
    assert_eq!(
        chatgpt.received.lock().unwrap().last().unwrap().0,
        "GET /backend-api/wham/accounts/check HTTP/1.1"
    );
}

#[test]
fn a_request_that_is_not_compacted_goes_to_the_upstream_whose_api_it_speaks() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (anthropic, openai, chatgpt) = (upstream(), upstream(), upstream());
    let addr = serving(
        &rt,
        ProxyConfig {
            anthropic: anthropic.url.parse().unwrap(),
            openai: openai.url.parse().unwrap(),
            chatgpt: chatgpt.url.parse().unwrap(),
            ..ProxyConfig::default()
        },
    );
    let cases = [
        // Anthropic's, by its headers
        ("GET /v1/models HTTP/1.1\r\nx-api-key: k", &anthropic),
        ("GET /v1/models HTTP/1.1\r\nanthropic-version: 2023-06-01", &anthropic),
        // a Claude plan's token, with the beta header that goes with it
        ("GET /api/oauth/profile HTTP/1.1\r\nauthorization: Bearer t\r\nanthropic-beta: oauth-2025-04-20", &anthropic),
        // by its path, when it carries no credentials: Claude Code's reachability check names no API
        ("GET /api/hello HTTP/1.1", &anthropic),
        // but the rest of `/api/` stays with an OpenAI upstream that is not the OpenAI API: a server of the
        // user's own (Ollama's native API) is never sent to a third party
        ("GET /api/tags HTTP/1.1", &openai),
        // ChatGPT's backend, by its path; the OpenAI API otherwise — a key under `/api/` too (Open WebUI speaks
        // the OpenAI API there): a credential is never sent where its headers do not say it belongs
        ("GET /backend-api/wham/accounts/check HTTP/1.1\r\nauthorization: Bearer t", &chatgpt),
        ("GET /v1/models HTTP/1.1\r\nauthorization: Bearer t", &openai),
        ("GET /v1/files HTTP/1.1", &openai),
        ("GET /api/models HTTP/1.1\r\nauthorization: Bearer t", &openai),
    ];
    for (head, to) in cases {
        let (status, _, answer) = send(&addr, head, b"");
        assert_eq!(status, 200, "{head}: {answer}");
        let line = head.split("\r\n").next().unwrap();
        assert_eq!(
            to.received.lock().unwrap().last().unwrap().0,
            line,
            "{head}"
        );
    }
    let heard = |u: &Upstream| u.received.lock().unwrap().len();
    assert_eq!(
        (heard(&anthropic), heard(&chatgpt), heard(&openai)),
        (4, 1, 4)
    );
    // the proxy answers a reachability check that names nothing, itself
    let (status, _, _) = send(&addr, "HEAD / HTTP/1.1", b"");
    assert_eq!(status, 200);
    assert_eq!(
        (heard(&anthropic), heard(&chatgpt), heard(&openai)),
        (4, 1, 4)
    );
}

#[test]
fn a_transfer_coding_other_than_chunked_is_refused_in_the_apis_shape() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream();
    let addr = proxy(&rt, &up);
    // chunks of a gzip stream: read as the body, they would be "malformed JSON"; relayed, the upstream would take
    // the coded bytes for the body
    for (path, te) in [
        ("/v1/messages", "gzip, chunked"),
        ("/v1/chat/completions", "gzip, chunked"),
        ("/v1/models", "deflate, chunked"),
    ] {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ntransfer-encoding: {te}\r\nconnection: close\r\n\r\n\
             4\r\ngz..\r\n0\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 501"), "{text}");
        let error: serde_json::Value = serde_json::from_str(body).unwrap();
        let coding = te.split(',').next().unwrap();
        let message = format!(
            "ctxfit proxy: transfer coding `{coding}` is not supported: send the body as it is (or with \
             Content-Encoding, which is relayed untouched)"
        );
        if path == "/v1/chat/completions" {
            assert_eq!(error["error"]["message"], message.as_str());
            assert_eq!(error["error"]["type"], "invalid_request_error");
        } else {
            assert_eq!(error["type"], "error");
            assert_eq!(error["error"]["message"], message.as_str());
        }
    }
    // chunked alone is HTTP's own framing: read as ever
    let body = messages_body(&["hello"]);
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /v1/messages HTTP/1.1\r\nhost: {addr}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(&body).unwrap();
    s.write_all(b"\r\n0\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert_eq!(up.received.lock().unwrap().len(), 1);
}

#[test]
fn a_responses_request_is_compacted_only_when_it_carries_its_whole_conversation() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream();
    let addr = proxy(&rt, &up);
    let head = "POST /v1/responses HTTP/1.1\r\nauthorization: Bearer k";
    let whole = br#"{"model":"m","input":[{"role":"user","content":"list the files"}],"previous_response_id":null}"#;
    let (status, headers, body) = send(&addr, head, whole);
    assert_eq!(status, 200, "{body}");
    assert!(header(&headers, "x-ctxfit-conversation").is_some());
    // continuing a stored response, or one string of input: not the proxy's, forwarded as the client wrote it
    for other in [
        &br#"{"model":"m","input":[{"role":"user","content":"and then?"}],"previous_response_id":"resp_1"}"#[..],
        &br#"{"model":"m","input":"hello"}"#[..],
        &br#"{"model":"m"}"#[..],
    ] {
        let (status, headers, body) = send(&addr, head, other);
        assert_eq!(status, 200, "{body}");
        assert!(header(&headers, "x-ctxfit-conversation").is_none());
        assert_eq!(up.received.lock().unwrap().last().unwrap().1, other);
    }
    // malformed: refused with its place, the upstream never hears of it
    let heard = up.received.lock().unwrap().len();
    let (status, _, body) = send(
        &addr,
        head,
        b"{\"model\":\"m\",\n\"input\":[{\"role\":\"user\",}]}",
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("line 2"), "{body}");
    assert_eq!(up.received.lock().unwrap().len(), heard);
}

#[test]
fn an_api_behind_a_providers_own_base_path_is_compacted_and_goes_on_to_that_path() {
    // OpenRouter, Groq, Azure and the providers' Anthropic-compatible endpoints put the API under a path of
    // their own; the SDKs append `/chat/completions`, `/responses` or `/v1/messages` to the base URL given
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (anthropic, openai) = (upstream(), upstream());
    let addr = serving(
        &rt,
        ProxyConfig {
            anthropic: anthropic.url.parse().unwrap(),
            openai: openai.url.parse().unwrap(),
            ..ProxyConfig::default()
        },
    );
    let chat = br#"{"model":"m","messages":[{"role":"user","content":"list the files"}]}"#;
    let responses = br#"{"model":"m","input":[{"role":"user","content":"list the files"}]}"#;
    let messages = messages_body(&["list the files"]);
    let cases: [(&str, &[u8], &Upstream, &str); 6] = [
        ("POST /api/v1/chat/completions HTTP/1.1\r\nauthorization: Bearer k", chat, &openai, "openai-chat"),
        ("POST /openai/v1/chat/completions HTTP/1.1\r\nauthorization: Bearer k", chat, &openai, "openai-chat"),
        (
            "POST /openai/deployments/gpt/chat/completions?api-version=2024-10-21 HTTP/1.1\r\napi-key: k",
            chat,
            &openai,
            "openai-chat",
        ),
        ("POST /api/v1/responses HTTP/1.1\r\nauthorization: Bearer k", responses, &openai, "openai-responses"),
        ("POST /api/anthropic/v1/messages HTTP/1.1\r\nx-api-key: k", &messages, &anthropic, "anthropic-messages"),
        // a provider's Anthropic-compatible endpoint signed in with a bearer token, not `x-api-key`
        ("POST /anthropic/v1/messages HTTP/1.1\r\nauthorization: Bearer k", &messages, &anthropic, "anthropic-messages"),
    ];
    for (head, body, to, api) in cases {
        let (status, headers, answer) = send(&addr, head, body);
        assert_eq!(status, 200, "{head}: {answer}");
        assert!(
            header(&headers, "x-ctxfit-conversation").is_some(),
            "{head}: compacted, so named"
        );
        let line = head.split("\r\n").next().unwrap();
        assert_eq!(
            to.received.lock().unwrap().last().unwrap().0,
            line,
            "{head}"
        );
        let (_, _, stats) = send(&addr, "GET /ctxfit/stats HTTP/1.1", b"");
        let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
        assert!(
            stats["apis"][api]["requests"].as_u64() > Some(0),
            "{head}: {stats}"
        );
    }
    // what only ends like one of them is not one: an Assistants thread's message, a batch, a response's
    // cancellation go through untouched, unnamed
    for head in [
        "POST /v1/threads/thread_1/messages HTTP/1.1\r\nauthorization: Bearer k",
        "POST /v1/messages/batches HTTP/1.1\r\nx-api-key: k",
        "POST /v1/responses/resp_1/cancel HTTP/1.1\r\nauthorization: Bearer k",
    ] {
        let (status, headers, answer) = send(&addr, head, br#"{"role":"user","content":"hi"}"#);
        assert_eq!(status, 200, "{head}: {answer}");
        assert!(
            header(&headers, "x-ctxfit-conversation").is_none(),
            "{head}"
        );
    }
    let heard = |u: &Upstream| u.received.lock().unwrap().len();
    assert_eq!((heard(&anthropic), heard(&openai)), (3, 6));
}

/// The test certificates of `tests/tls/` (`make.sh`): a CA, and a certificate for 127.0.0.1 and localhost.
fn tls_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls")
}

/// A request sent over TLS to the proxy at `addr`, trusting the test CA: the whole answer.
fn over_tls(rt: &tokio::runtime::Runtime, addr: &str, head: &str, body: &[u8]) -> String {
    use rustls_pki_types::pem::PemObject;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::{ClientConfig, RootCertStore};

    let mut roots = RootCertStore::empty();
    for cert in rustls_pki_types::CertificateDer::pem_file_iter(tls_dir().join("ca.pem")).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(client));
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        let mut tls = connector.connect(name, tcp).await.unwrap();
        let head = format!(
            "{head}\r\nhost: localhost\r\nx-api-key: k\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        tls.write_all(head.as_bytes()).await.unwrap();
        tls.write_all(body).await.unwrap();
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out).await;
        String::from_utf8(out).unwrap()
    })
}

#[test]
fn over_tls_the_proxy_answers_as_over_plain_http_and_a_stalled_handshake_holds_nothing() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream();
    let dir = tls_dir();
    let config = ProxyConfig {
        anthropic: up.url.parse().unwrap(),
        openai: up.url.parse().unwrap(),
        header_timeout: std::time::Duration::from_millis(300),
        tls: Some(ctxfit_proxy::server::TlsFiles {
            cert: dir.join("localhost.pem"),
            key: Some(dir.join("localhost-key.pem")),
        }),
        ..ProxyConfig::default()
    };
    let addr = serving(&rt, config);
    let body = messages_body(&["list the files"]);
    let answer = over_tls(&rt, &addr, "POST /v1/messages HTTP/1.1", &body);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("x-ctxfit-conversation:"), "{answer}");
    let sent: serde_json::Value =
        serde_json::from_slice(&up.received.lock().unwrap()[0].1).unwrap();
    assert_eq!(
        sent,
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()
    );
    // plain HTTP on the HTTPS port is told so
    let (status, _, answer) = send(&addr, "GET /ctxfit/stats HTTP/1.1", b"");
    assert_eq!(status, 400);
    assert!(answer.contains("this port speaks HTTPS"), "{answer}");
    // a client that says nothing after connecting is let go when the headers' time is up
    let started = std::time::Instant::now();
    let mut silent = TcpStream::connect(&addr).unwrap();
    silent
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(silent.read(&mut buf).unwrap_or(0), 0);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn tls_files_are_read_before_listening_and_a_key_may_share_the_certificates_file() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tls_dir();
    let scratch = tempfile::tempdir().unwrap();
    // one PEM file holding the chain and its key, as some servers keep them: no --tls-key needed
    let both = scratch.path().join("both.pem");
    let mut text = std::fs::read_to_string(dir.join("localhost.pem")).unwrap();
    text += &std::fs::read_to_string(dir.join("localhost-key.pem")).unwrap();
    std::fs::write(&both, text).unwrap();
    let files = |cert: std::path::PathBuf, key: Option<std::path::PathBuf>| ProxyConfig {
        tls: Some(ctxfit_proxy::server::TlsFiles { cert, key }),
        ..ProxyConfig::default()
    };
    let addr = serving(&rt, files(both, None));
    let answer = over_tls(&rt, &addr, "GET /ctxfit/stats HTTP/1.1", b"");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // what is wrong is said before anything listens, naming the option and the file
    let refused = |config: ProxyConfig| match rt.block_on(start(config, "127.0.0.1:0")) {
        Ok(_) => panic!("the proxy started"),
        Err(e) => e.to_string(),
    };
    let cert_only = refused(files(dir.join("localhost.pem"), None));
    assert!(
        cert_only.contains("--tls-cert")
            && cert_only.contains("localhost.pem (no --tls-key given): no private key in it"),
        "{cert_only}"
    );
    let key_as_cert = refused(files(dir.join("localhost-key.pem"), None));
    assert!(
        key_as_cert.contains("localhost-key.pem: no certificate in it"),
        "{key_as_cert}"
    );
    let missing = refused(files(
        dir.join("localhost.pem"),
        Some(scratch.path().join("absent.pem")),
    ));
    assert!(
        missing.contains("--tls-key") && missing.contains("absent.pem: cannot read it"),
        "{missing}"
    );
}

#[test]
fn half_an_emoji_cut_off_by_the_client_goes_on_written_u_fffd_and_is_counted() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream();
    let addr = proxy(&rt, &up);
    let body =
        br#"{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"cut \ud83d"}]}"#;
    let (status, headers, answer) = send(&addr, "POST /v1/messages HTTP/1.1", body);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(header(&headers, "x-ctxfit-mended"), Some("1"));
    {
        let got = up.received.lock().unwrap();
        let sent: serde_json::Value = serde_json::from_slice(&got[0].1).unwrap();
        assert_eq!(sent["messages"][0]["content"], "cut \u{FFFD}");
    }
    let (_, _, stats) = send(&addr, "GET /ctxfit/stats HTTP/1.1", b"");
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["apis"]["anthropic-messages"]["mended"], 1, "{stats}");
    let (_, _, metrics) = send(&addr, "GET /metrics HTTP/1.1", b"");
    assert!(
        metrics.contains("ctxfit_proxy_mended_total{api=\"anthropic-messages\"} 1"),
        "{metrics}"
    );
}

/// Requests of the agent below: its history outgrows the window a third of the way in.
const TURNS: usize = 45;

/// The window of the scripted model below, in its tokens (a token is four bytes of the request body).
const WINDOW: usize = 12_000;

/// A model with a context window of [`WINDOW`] tokens, refusing a longer request as each API does, and
/// answering the others with their usage.
fn model_with_a_window(line: &str, body: &[u8]) -> (u16, String) {
    let tokens = body.len() / 4;
    match model_with_a_window_reporting_no_usage(line, body) {
        (200, _) => (
            200,
            MESSAGE_ANSWER.replace("\"input_tokens\":40", &format!("\"input_tokens\":{tokens}")),
        ),
        refused => refused,
    }
}

/// [`model_with_a_window`], its answers reporting no usage (as a stream that does not ask for it).
fn model_with_a_window_reporting_no_usage(line: &str, body: &[u8]) -> (u16, String) {
    let tokens = body.len() / 4;
    if tokens <= WINDOW {
        return (
            200,
            MESSAGE_ANSWER.replace(",\"usage\":{\"input_tokens\":40,\"output_tokens\":1}", ""),
        );
    }
    let refusal = if line.contains("/v1/messages") {
        serde_json::json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": format!("prompt is too long: {tokens} tokens > {WINDOW} maximum")}})
    } else if line.contains("/chat/completions") {
        serde_json::json!({"error": {"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
            "message": format!("This model's maximum context length is {WINDOW} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages.")}})
    } else {
        serde_json::json!({"error": {"type": "invalid_request_error", "param": "input", "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again."}})
    };
    (400, refusal.to_string())
}

/// An agent's request after `turns` file reads, in `api`'s shape: each read a result of 40 lines of its own.
fn agent_request(api: &str, turns: usize) -> Vec<u8> {
    let read = |k: usize| -> String {
        (0..40)
            .map(|i| format!("    let value_{k}_{i} = compute_{i}(input_{k}, {i}); // step {i} of file {k}\n"))
            .collect()
    };
    let tool = serde_json::json!({"name": "Read", "description": "Read a file of the project. ".repeat(20),
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}});
    let body = match api {
        "anthropic" => {
            let mut messages =
                vec![serde_json::json!({"role": "user", "content": "Read the project's files."})];
            for k in 0..turns {
                messages.push(serde_json::json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("toolu_{k}"),
                    "name": "Read", "input": {"file_path": format!("/src/f{k}.rs")}}]}));
                messages.push(serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{k}"),
                    "content": read(k)}]}));
            }
            serde_json::json!({"model": "m", "max_tokens": 8, "system": "You are a test agent.", "tools": [tool], "messages": messages})
        }
        "chat" => {
            let mut messages = vec![
                serde_json::json!({"role": "system", "content": "You are a test agent."}),
                serde_json::json!({"role": "user", "content": "Read the project's files."}),
            ];
            for k in 0..turns {
                messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{k}"),
                    "type": "function", "function": {"name": "Read", "arguments": format!("{{\"file_path\":\"/src/f{k}.rs\"}}")}}]}));
                messages.push(serde_json::json!({"role": "tool", "tool_call_id": format!("call_{k}"), "content": read(k)}));
            }
            serde_json::json!({"model": "m", "messages": messages,
                "tools": [{"type": "function", "function": {"name": "Read", "description": tool["description"], "parameters": tool["input_schema"]}}]})
        }
        _ => {
            let mut input =
                vec![serde_json::json!({"role": "user", "content": "Read the project's files."})];
            for k in 0..turns {
                input.push(serde_json::json!({"type": "function_call", "call_id": format!("call_{k}"), "name": "Read",
                    "arguments": format!("{{\"file_path\":\"/src/f{k}.rs\"}}")}));
                input.push(serde_json::json!({"type": "function_call_output", "call_id": format!("call_{k}"), "output": read(k)}));
            }
            serde_json::json!({"model": "m", "instructions": "You are a test agent.", "input": input,
                "tools": [{"type": "function", "name": "Read", "description": tool["description"], "parameters": tool["input_schema"]}]})
        }
    };
    serde_json::to_vec(&body).unwrap()
}

/// The provider's refusal of a request as too long for its model says how large the window is (or, in the
/// Responses API, only that it is passed): the conversation holds that window from then on, the refused request
/// is compacted under it and sent again, and the agent never sees the refusal — in each API's shape.
#[test]
fn a_refusal_as_too_long_for_the_model_is_learned_and_the_request_sent_again_within_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let models: [(&str, Answer); 2] = [
        ("usage reported", model_with_a_window),
        ("no usage", model_with_a_window_reporting_no_usage),
    ];
    for ((api, path), (usage, model)) in [
        ("anthropic", "/v1/messages"),
        ("chat", "/v1/chat/completions"),
        ("responses", "/v1/responses"),
    ]
    .into_iter()
    .flat_map(|a| models.map(|m| (a, m)))
    {
        let api_name = api;
        let api = &*format!("{api} ({usage})");
        let up = upstream_answering(model);
        let addr = proxy(&rt, &up);
        let mut retried = Vec::new();
        for turns in 1..=TURNS {
            let (status, headers, body) = send(
                &addr,
                &format!("POST {path} HTTP/1.1"),
                &agent_request(api_name, turns),
            );
            assert_eq!(status, 200, "{api}, request {turns}: {body}");
            if let Some(w) = header(&headers, "x-ctxfit-window") {
                retried.push((turns, w.parse::<usize>().unwrap()));
            }
        }
        let received = up.received.lock().unwrap();
        let refused: Vec<usize> = (received.iter().enumerate())
            .filter(|(_, (_, body))| body.len() / 4 > WINDOW)
            .map(|(i, _)| i)
            .collect();
        // the history outgrows the window a third of the way in: from then on every request would be refused
        let whole = agent_request(api_name, TURNS).len() / 4;
        assert!(whole > 2 * WINDOW, "{api}: {whole}");
        assert!(!refused.is_empty(), "{api}: the window was never reached");
        // each refusal taught a budget, and the request sent again under it was accepted
        assert_eq!(retried.len(), refused.len(), "{api}: {retried:?}");
        for &i in &refused {
            assert!(
                received[i + 1].1.len() / 4 <= WINDOW,
                "{api}: request {i} was refused twice"
            );
        }
        // not request after request: sent whole, every request from the first refused on would be; the budget
        // is learned again only when the provider's count and the proxy's drift apart (here, as more of the
        // request is structure: a scripted model counting bytes, not words)
        let past = (1..=TURNS)
            .filter(|&t| agent_request(api_name, t).len() / 4 > WINDOW)
            .count();
        assert!(
            refused.len() * 4 <= past,
            "{api}: refused {} times of {past} ({retried:?})",
            refused.len()
        );
        assert_eq!(received.len(), TURNS + refused.len());
        // the budgets only go down
        assert!(
            retried.windows(2).all(|w| w[1].1 < w[0].1),
            "{api}: {retried:?}"
        );
        if usage == "usage reported" {
            // each answer's usage measures the rate again: the window is learned once
            assert_eq!(refused.len(), 1, "{api}: {retried:?}");
        }
        let (_, _, stats) = send(&addr, "GET /ctxfit/stats HTTP/1.1", b"");
        let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
        let name = match api_name {
            "anthropic" => "anthropic-messages",
            "chat" => "openai-chat",
            _ => "openai-responses",
        };
        assert_eq!(
            stats["apis"][name]["window_retries"],
            refused.len(),
            "{api}: {stats}"
        );
        // the refused requests are not counted among the conversation's
        assert_eq!(
            stats["per_conversation"][0]["requests"], TURNS,
            "{api}: {stats}"
        );
    }
}

/// An agent's Messages request after three reads, through the proxy at `addr`.
fn three_reads(addr: &str) -> (u16, Vec<(String, String)>, String) {
    send(
        addr,
        "POST /v1/messages HTTP/1.1",
        &agent_request("anthropic", 3),
    )
}

/// A 400 that is not about the window goes to the client as it came, and nothing is sent again.
#[test]
fn another_refusal_is_relayed_as_it_came() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream_answering(|_, _| {
        (400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#.to_owned())
    });
    let addr = proxy(&rt, &up);
    let (status, _, body) = three_reads(&addr);
    assert_eq!(status, 400);
    assert_eq!(
        body,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#
    );
    assert_eq!(up.received.lock().unwrap().len(), 1);
}

/// Under a profile's own `request_budget`, a request that stays above it with every stale result cut (what no
/// step may cut — here its newest result — is above it) is refused before the upstream hears of it, in the words
/// and shape the provider refuses a request too long for its model with; one that fits goes on.
#[test]
fn a_request_above_the_profiles_budget_after_every_cut_is_refused_as_the_provider_would() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream();
    let policy = ctxfit_compactor::PolicyFile::parse(
        "[profiles.tight]\nextends = \"smart\"\nrequest_budget = 4000\n",
        "test",
    )
    .unwrap();
    let addr = serving(
        &rt,
        ProxyConfig {
            anthropic: up.url.parse().unwrap(),
            openai: up.url.parse().unwrap(),
            policy,
            ..ProxyConfig::default()
        },
    );
    // three reads: within the budget once the first two are cut, not with the third (the newest) whole
    let fits = agent_request("anthropic", 3);
    let (status, _, body) = send(&addr, "POST /v1/messages HTTP/1.1", &fits);
    assert_eq!(status, 200, "{body}");
    let mut over: serde_json::Value =
        serde_json::from_slice(&agent_request("anthropic", 4)).unwrap();
    let newest = over["messages"].as_array_mut().unwrap().last_mut().unwrap();
    newest["content"][0]["content"] = "a line of the newest result, whole\n".repeat(600).into();
    for (path, body) in [
        ("/v1/messages", serde_json::to_vec(&over).unwrap()),
        ("/v1/chat/completions", {
            let mut chat: serde_json::Value =
                serde_json::from_slice(&agent_request("chat", 4)).unwrap();
            let newest = chat["messages"].as_array_mut().unwrap().last_mut().unwrap();
            newest["content"] = "a line of the newest result, whole\n".repeat(600).into();
            serde_json::to_vec(&chat).unwrap()
        }),
    ] {
        let before = up.received.lock().unwrap().len();
        let (status, _, answer) = send(&addr, &format!("POST {path} HTTP/1.1"), &body);
        assert_eq!(status, 400, "{answer}");
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        let message = if path == "/v1/messages" {
            assert_eq!(answer["error"]["type"], "invalid_request_error");
            answer["error"]["message"].as_str().unwrap().to_owned()
        } else {
            assert_eq!(answer["error"]["code"], "context_length_exceeded");
            answer["error"]["message"].as_str().unwrap().to_owned()
        };
        let says = if path == "/v1/messages" {
            message.starts_with("prompt is too long: ") && message.contains("> 4000 maximum")
        } else {
            message.starts_with("This model's maximum context length is 4000 tokens. However, your messages resulted in ")
        };
        assert!(says, "{message}");
        // what the proxy refuses, it reads as the provider's refusal would be read
        let overflow = ctxfit_proxy::window::overflow_of(
            if path == "/v1/messages" {
                ctxfit_model::WireFormat::Anthropic
            } else {
                ctxfit_model::WireFormat::OpenAi
            },
            &answer,
        );
        let (counted, limit) = overflow.and_then(|o| o.counted).unwrap();
        assert!(limit == 4000 && counted > 4000, "{answer}");
        assert_eq!(
            up.received.lock().unwrap().len(),
            before,
            "{path}: nothing went upstream"
        );
    }
}

/// A model of the Responses API that says a request is past its window in the stream it has begun (a
/// `response.failed` event under 200), as the API does once a stream is under way.
fn responses_model_failing_in_stream(_: &str, body: &[u8]) -> (u16, String) {
    let tokens = body.len() / 4;
    if tokens <= WINDOW {
        return (
            200,
            MESSAGE_ANSWER.replace("\"input_tokens\":40", &format!("\"input_tokens\":{tokens}")),
        );
    }
    let failed = serde_json::json!({"type": "response.failed", "response": {"status": "failed", "error": {
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again."}}});
    (200, format!("event: response.created\ndata: {{\"type\":\"response.created\"}}\n\nevent: response.failed\ndata: {failed}\n\n"))
}

/// A stream that has begun cannot be sent again: the client sees that request fail, and the conversation learns
/// the window from it for the next one.
#[test]
fn a_window_said_in_a_begun_stream_holds_the_next_request() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream_answering(responses_model_failing_in_stream);
    let addr = proxy(&rt, &up);
    let mut failed = Vec::new();
    for turns in 1..=TURNS {
        let (status, _, body) = send(
            &addr,
            "POST /v1/responses HTTP/1.1",
            &agent_request("responses", turns),
        );
        assert_eq!(status, 200);
        if body.contains("response.failed") {
            failed.push(turns);
        }
    }
    let received = up.received.lock().unwrap();
    assert_eq!(received.len(), TURNS, "nothing sent again");
    // the first request past the window failed; the next ones were held within it (but where the rate drifts)
    assert!(
        !failed.is_empty() && failed.len() * 4 <= TURNS - failed[0],
        "{failed:?}"
    );
    assert!(
        received[failed[0]].1.len() / 4 <= WINDOW,
        "the request after the failed one is within the window"
    );
    let (_, _, stats) = send(&addr, "GET /ctxfit/stats HTTP/1.1", b"");
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(
        stats["apis"]["openai-responses"]["windows_learned"],
        failed.len(),
        "{stats}"
    );
    assert_eq!(
        stats["apis"]["openai-responses"]["window_retries"], 0,
        "{stats}"
    );
}

/// An error answer longer than any refusal as too long for the model, its length not stated, reaches the client
/// whole, byte for byte: the part read to see what it says, then the rest.
#[test]
fn a_long_error_answer_is_relayed_whole() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream_answering(|_, _| {
        let message = "x".repeat(200_000);
        let body = format!(
            r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"{message}"}}}}"#
        );
        (400, format!("{CHUNKED}{body}"))
    });
    let addr = proxy(&rt, &up);
    let (status, _, body) = three_reads(&addr);
    assert_eq!(status, 400);
    // (the test client reads the chunked answer as it came: its chunks' sizes between the data)
    let data: String = body
        .split("\r\n")
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, part)| part)
        .collect();
    let answer: serde_json::Value = serde_json::from_str(&data).unwrap();
    assert_eq!(answer["error"]["message"].as_str().unwrap().len(), 200_000);
    assert_eq!(up.received.lock().unwrap().len(), 1);
}
