//! Request bodies the client compressed (`Content-Encoding`), read so that they can be compacted.
//!
//! What: `zstd` (Codex CLI signed in with ChatGPT compresses every Responses request so), `gzip` and `deflate`
//! (zlib), one coding per body. Why: a body the proxy cannot read goes through untouched, and the conversation
//! is sent whole on every request — the cost the proxy is there to cut. A body is inflated in bounded memory:
//! at most `--max-body` bytes once inflated (a 1 MB zstd frame can stand for gigabytes), and a zstd window no
//! larger than that. What is compacted goes upstream uncompressed, without `Content-Encoding`; what is not
//! (a Responses request that continues a stored response) goes as the client compressed it.
//!
//! Example: a Responses request sent with `Content-Encoding: zstd` is inflated, its stale outputs cut to excerpts,
//! and forwarded as JSON without `Content-Encoding`; a frame that inflates past `--max-body` gets 413 in the
//! API's error shape, and bytes that are not zstd get 400.

use std::io::Read;

/// A content coding the proxy reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Coding {
    Zstd,
    Gzip,
    Deflate,
}

impl Coding {
    /// The coding a `Content-Encoding` value names, when it names one the proxy reads (one coding, any case);
    /// `None` for `br`, a list of codings, or anything else.
    pub(super) fn parse(value: &str) -> Option<Coding> {
        match value.trim().to_ascii_lowercase().as_str() {
            "zstd" => Some(Coding::Zstd),
            "gzip" | "x-gzip" => Some(Coding::Gzip),
            "deflate" => Some(Coding::Deflate),
            _ => None,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
        }
    }
}

/// Why a body was not inflated.
#[derive(Debug)]
pub(super) enum Undecoded {
    /// It inflates past this many bytes (413).
    TooLarge(usize),
    /// It is not what its coding says (400): the decoder's words.
    Corrupt(String),
}

impl Undecoded {
    pub(super) fn message(&self, coding: Coding) -> String {
        match self {
            Undecoded::TooLarge(max) => format!(
                "ctxfit proxy: the {} request body inflates past the proxy's limit of {max} bytes",
                coding.name()
            ),
            Undecoded::Corrupt(why) => format!(
                "ctxfit proxy: the request body is not valid {} (Content-Encoding: {}): {why}",
                coding.name(),
                coding.name()
            ),
        }
    }
}

/// `body` inflated, at most `max` bytes of it.
pub(super) fn decode(coding: Coding, body: &[u8], max: usize) -> Result<Vec<u8>, Undecoded> {
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(max));
    match coding {
        Coding::Gzip => read_capped(flate2::read::MultiGzDecoder::new(body), &mut out, max)?,
        Coding::Deflate => read_capped(flate2::read::ZlibDecoder::new(body), &mut out, max)?,
        Coding::Zstd => {
            // one frame after another, as the format allows; each frame's window (the memory its decoder takes)
            // no larger than what the body may inflate to
            let window = max.max(1 << 20) as u64;
            let mut rest = body;
            if rest.is_empty() {
                return Err(Undecoded::Corrupt("the body is empty".into()));
            }
            while !rest.is_empty() {
                let frame =
                    ruzstd::decoding::StreamingDecoder::new_with_max_window_size(&mut rest, window)
                        .map_err(|e| Undecoded::Corrupt(e.to_string()))?;
                let room = max - out.len();
                read_capped(frame, &mut out, room).map_err(|e| match e {
                    Undecoded::TooLarge(_) => Undecoded::TooLarge(max),
                    other => other,
                })?;
            }
        }
    }
    Ok(out)
}

/// Append what `reader` gives to `out`, refusing past `max` bytes.
fn read_capped(reader: impl Read, out: &mut Vec<u8>, max: usize) -> Result<(), Undecoded> {
    let start = out.len();
    reader
        .take(max as u64 + 1)
        .read_to_end(out)
        .map_err(|e| Undecoded::Corrupt(e.to_string()))?;
    if out.len() - start > max {
        return Err(Undecoded::TooLarge(max));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zstd(bytes: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
    }

    #[test]
    fn codings_are_named_as_http_names_them() {
        assert_eq!(Coding::parse("zstd"), Some(Coding::Zstd));
        assert_eq!(Coding::parse(" GZIP "), Some(Coding::Gzip));
        assert_eq!(Coding::parse("x-gzip"), Some(Coding::Gzip));
        assert_eq!(Coding::parse("deflate"), Some(Coding::Deflate));
        for other in ["br", "gzip, zstd", "identity", "compress", ""] {
            assert_eq!(Coding::parse(other), None, "{other}");
        }
    }

    #[test]
    fn each_coding_inflates_to_the_bytes_compressed() {
        let body = br#"{"model":"gpt-5.1-codex","input":[{"type":"message","role":"user","content":"hi"}]}"#
            .repeat(50);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&body).unwrap();
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zl.write_all(&body).unwrap();
        let mut two_frames = zstd(&body[..100]);
        two_frames.extend(zstd(&body[100..]));
        for (coding, packed) in [
            (Coding::Zstd, zstd(&body)),
            (Coding::Zstd, two_frames),
            (Coding::Gzip, gz.finish().unwrap()),
            (Coding::Deflate, zl.finish().unwrap()),
        ] {
            assert!(packed.len() < body.len());
            assert_eq!(
                decode(coding, &packed, body.len()).unwrap(),
                body,
                "{coding:?}"
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// Damaged frames — a real frame with bytes changed, cut short, or noise behind zstd's magic number — are
        /// refused or inflated within the cap, never a panic.
        #[test]
        fn a_damaged_frame_never_panics(
            flips in proptest::collection::vec((0usize..4096, proptest::prelude::any::<u8>()), 0..6),
            cut in 0usize..4096,
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let body = (0..400).map(|i| format!("{i}: line {}\n", i * 7)).collect::<String>();
            let mut packed = zstd(body.as_bytes());
            for (at, byte) in flips {
                let n = packed.len();
                packed[at % n] = byte;
            }
            packed.truncate(cut.max(4).min(packed.len()));
            let mut framed = b"\x28\xb5\x2f\xfd".to_vec();
            framed.extend(noise);
            for input in [&packed, &framed] {
                if let Ok(out) = decode(Coding::Zstd, input, 64 << 10) {
                    proptest::prop_assert!(out.len() <= 64 << 10);
                }
            }
        }
    }

    #[test]
    fn a_bomb_is_refused_at_the_cap_and_garbage_is_named() {
        let packed = zstd(&vec![b'a'; 8 << 20]);
        assert!(packed.len() < 8 << 10, "{}", packed.len());
        match decode(Coding::Zstd, &packed, 1 << 20) {
            Err(Undecoded::TooLarge(max)) => assert_eq!(max, 1 << 20),
            other => panic!("{other:?}"),
        }
        for coding in [Coding::Zstd, Coding::Gzip, Coding::Deflate] {
            match decode(coding, b"{\"model\": \"not compressed\"}", 1 << 20) {
                Err(e @ Undecoded::Corrupt(_)) => {
                    assert!(
                        e.message(coding).contains("is not valid"),
                        "{}",
                        e.message(coding)
                    )
                }
                other => panic!("{coding:?}: {other:?}"),
            }
        }
        assert!(matches!(
            decode(Coding::Zstd, b"", 10),
            Err(Undecoded::Corrupt(_))
        ));
    }
}
