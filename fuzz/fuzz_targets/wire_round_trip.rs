//! Fuzz target: any JSON document that a wire format's reader accepts is written back by its writer as the same
//! JSON value (the model is lossless); and no document makes a reader panic.

#![no_main]

use ctxfit_model::{anthropic, openai, responses, to_value, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    for read in [anthropic::from_value, openai::from_value, responses::from_value] {
        if let Ok(conv) = read(value.clone()) {
            assert_eq!(to_value(&conv), value, "{}", conv.format.name());
        }
    }
});
