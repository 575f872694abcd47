//! Text for people, on a terminal: names a session or a folder brings (a file's, a tool's, a path) shown with
//! their control characters escaped.

/// `text` as it may be shown on a terminal: every control character but line breaks and tabs — those of a file's
/// name, a tool's or a path a session names (`b\x1b]0;title\x07.json` would set the terminal's title, a colour
/// code would recolour what follows) — written as its escape (`\u{1b}`). For messages and tables; what a
/// command outputs as data (Markdown, a file's content, a conversation) is written as it is.
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(escaped) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match escaped(c) {
            true => out.extend(c.escape_default()),
            false => out.push(c),
        }
    }
    out.into()
}

/// Say `message` on standard error, its control characters escaped ([`shown`]).
pub fn say(message: &str) {
    eprintln!("{}", shown(message));
}
