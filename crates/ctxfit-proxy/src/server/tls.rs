//! The proxy's own HTTPS (`--tls-cert`, `--tls-key`).
//!
//! What: a rustls acceptor from a PEM certificate chain and its PEM private key (PKCS#8, PKCS#1 or SEC1), HTTP/1.1
//! over it. Why: Codex CLI signed in with ChatGPT sends only to an `https://` base URL, so the proxy must speak
//! TLS itself to sit in front of it (the client is told to trust the certificate: `CODEX_CA_CERTIFICATE`).
//! Example: `ctxfit proxy --tls-cert localhost.pem --tls-key localhost-key.pem` listens on
//! `https://127.0.0.1:8788` (without `--tls-key`, the key is read from the certificate's file, as servers that
//! keep both in one PEM file write it); a file that holds no certificate, or no key, stops it before it listens,
//! named.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use super::TlsFiles;

/// The acceptor for `files`, or what is wrong with them, in words that name the file.
pub(super) fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, String> {
    let cert = files.cert.display();
    let chain = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| format!("--tls-cert {cert}: {}", pem_error(e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--tls-cert {cert}: {}", pem_error(e)))?;
    if chain.is_empty() {
        return Err(format!(
            "--tls-cert {cert}: no certificate in it (a PEM file with a `BEGIN CERTIFICATE` block)"
        ));
    }
    let private = match &files.key {
        Some(key) => PrivateKeyDer::from_pem_file(key)
            .map_err(|e| format!("--tls-key {}: {}", key.display(), pem_error(e)))?,
        None => PrivateKeyDer::from_pem_file(&files.cert)
            .map_err(|e| format!("--tls-cert {cert} (no --tls-key given): {}", pem_error(e)))?,
    };
    let key = files.key.as_deref().unwrap_or(&files.cert).display();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| format!("--tls-cert {cert} and --tls-key {key}: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn pem_error(e: rustls_pki_types::pem::Error) -> String {
    match e {
        rustls_pki_types::pem::Error::Io(e) => format!("cannot read it: {e}"),
        rustls_pki_types::pem::Error::NoItemsFound => {
            "no private key in it (a PEM file with a `BEGIN PRIVATE KEY` block)".to_owned()
        }
        other => format!("not a PEM file of that kind: {other:?}"),
    }
}

/// Whether a connection's first byte opens a TLS handshake (a record of type 22); `false` for anything else —
/// `GET`, `POST`: plain HTTP — and for a connection closed before it sent a byte.
pub(super) async fn begins_handshake(stream: &TcpStream) -> bool {
    let mut first = [0u8; 1];
    matches!(stream.peek(&mut first).await, Ok(1) if first[0] == 0x16)
}

/// Answer a plain HTTP request on the HTTPS port with a 400 that says so, and close — once its head has
/// arrived (at most 16 KiB of it, within `wait`), so that a client still writing it is not cut off mid-write.
pub(super) async fn refuse_plain_http(mut stream: TcpStream, wait: std::time::Duration) {
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    let _ = tokio::time::timeout(wait, async {
        while head.len() < 16 << 10 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    let body = super::error_body(
        None,
        hyper::StatusCode::BAD_REQUEST,
        "ctxfit proxy: this port speaks HTTPS (--tls-cert): send the request to https://, not http://",
    );
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
}
