//! Fuzz target: any bytes, read as a recorded session — detected, and forced into each format — give an error
//! or sessions, never a panic; and what imports can be checked, converted to every wire format and written.

#![no_main]

use ctxfit_import::{import_str, SourceFormat};
use ctxfit_model::{convert, problems, to_value, ToolCallIndex, WireFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // the first byte picks a forced format, or detection
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let format = SourceFormat::ALL.get(mode as usize % (SourceFormat::ALL.len() + 1)).copied();
    let Ok(sessions) = import_str(text, format) else {
        return;
    };
    for s in sessions {
        let conv = &s.conversation;
        let _ = problems(conv);
        let index = ToolCallIndex::build(conv);
        assert!(index.len() <= conv.tool_use_count());
        for to in WireFormat::ALL {
            let (converted, _) = convert(conv, to);
            let _ = to_value(&converted);
        }
    }
});
