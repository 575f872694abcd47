//! Fuzz target: any bytes, as the body of a request to the proxy for each API, are split, checked and compacted
//! without a panic; the structural split agrees with the full parse on every body the parse accepts; a body
//! that is forwarded was JSON (or mended: its lone surrogate escapes written U+FFFD) and is written as JSON; and
//! the same body sent again is forwarded again.

#![no_main]

use ctxfit_compactor::PolicyFile;
use ctxfit_proxy::{Api, Gateway, RequestBody};
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;

/// `smart` as shipped, and `smart` under a request budget small enough that fuzzed bodies reach it (escalation,
/// pointers, refusal).
const POLICY: &str = "[profiles.tight]\nextends = \"smart\"\nrequest_budget = 300\n";

fuzz_target!(|data: &[u8]| {
    // the first byte picks the API, the profile, and whether the body is sent twice
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let api = match mode % 3 {
        0 => Api::AnthropicMessages,
        1 => Api::OpenAiChat,
        _ => Api::OpenAiResponses,
    };
    if let Ok(parsed) = RequestBody::parse(api, body) {
        let split = RequestBody::split(api, body).expect("a body the parse accepts splits");
        assert_eq!(split.messages, parsed.messages);
        assert_eq!(
            split.write(|i| Some(split.messages[i])),
            parsed.write(|i| Some(parsed.messages[i]))
        );
    }
    let profile = if mode & 4 != 0 { "tight" } else { "smart" };
    let settings = PolicyFile::parse(POLICY, "fuzz.toml")
        .and_then(|p| p.resolve(Some(profile), None, &|_| None))
        .expect("the policy resolves");
    let gateway = Gateway::new(settings).expect("the gateway starts");
    let first = gateway.forward(api, body, None);
    if let Ok(sent) = &first {
        assert!(
            sent.mended > 0 || serde_json::from_slice::<IgnoredAny>(body).is_ok(),
            "a malformed body was forwarded"
        );
        assert!(
            serde_json::from_slice::<IgnoredAny>(&sent.body).is_ok(),
            "a forwarded body is not JSON"
        );
    }
    if mode & 8 != 0 {
        let again = gateway.forward(api, body, None);
        assert_eq!(
            first.is_ok(),
            again.is_ok(),
            "the same body sent again: {again:?}"
        );
    }
});
