//! Listings: a long search or listing keeps its first lines; the lines of an `ls -l` listing keep their mode and
//! name.
//!
//! ## What
//! A search or listing (`Grep`, `Glob`, `ls`, `find`, `grep -rn` in a shell) still longer than `listing_above`
//! characters (2,000) keeps its first `listing_keep` lines (20). The lines of a long listing (`-rw-r--r-- 1 root
//! root 4096 Sep 10  2025 setup.py`, [`long_listing_line`]) keep their mode and name (`-rw-r--r-- setup.py`,
//! `lrwxrwxrwx link -> target`), after a line `[mode and name only: the links, owner, group, size and date of 14
//! long-listing lines left out]`; it takes at least `long_listing_min` (5) such lines (0: never).
//!
//! ## Why
//! An agent lists to find one thing: once it has acted on the hit, the hundredth line of a search is noise, and
//! the first ones say what the search found. Of a long listing it needs what is a directory, a link or an
//! executable, and what it is called — not the owner, size and date of each.
//!
//! ## Example
//! ```text
//! [mode and name only: the links, owner, group, size and date of 6 long-listing lines left out]
//! drwxr-xr-x src
//! -rw-r--r-- Cargo.toml
//! lrwxrwxrwx latest -> target/release
//! ```

use ctxfit_retention::line_number_prefix;

/// Can the rule keep `kept` of the result's line `line`? The line itself, the line less its number
/// ([`line_number_prefix`]), or a long listing line's mode and name ([`long_listing_line`]).
pub fn keeps_of(line: &str, kept: &str) -> bool {
    line == kept
        || &line[line_number_prefix(line)..] == kept
        || long_listing_line(line)
            .is_some_and(|(mode, name)| kept == format!("{} {}", &line[mode], &line[name]))
}

pub type LongLine = (std::ops::Range<usize>, std::ops::RangeFrom<usize>);

/// A line of an `ls -l` listing, as its mode (`drwxr-xr-x`, `-rw-r--r--@`) and its name (`setup.py`, `link ->
/// target`): the byte ranges of both, leaving out the link count, owner, group, size (`4096`, `4.0K`, `1,5M`)
/// and date (`Sep 10  2025`, `Apr 10 07:00`, `2025-09-10 07:00`) between them.
pub fn long_listing_line(line: &str) -> Option<LongLine> {
    // (most lines of most results are not a listing's: their first ten bytes already say so)
    let head = line.trim_start().as_bytes();
    if head.len() < 10
        || !b"dlcbps-".contains(&head[0])
        || !head[1..10].iter().all(|b| b"rwxsStT-".contains(b))
    {
        return None;
    }
    // `split_whitespace` yields subslices of the line: their offsets in it
    let mut words = line
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - line.as_ptr() as usize, w));
    let digits = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
    let (at, mode) = words.next()?;
    let bits = mode.trim_end_matches(['.', '+', '@']);
    let mode_ok = bits.len() == 10
        && bits.starts_with(['d', 'l', 'c', 'b', 'p', 's', '-'])
        && bits[1..].bytes().all(|b| b"rwxsStT-".contains(&b));
    if !mode_ok {
        // (most lines of most results: not a listing's)
        return None;
    }
    let links = words.next()?.1;
    let size = words.nth(2)?.1;
    let size_ok = size.starts_with(|c: char| c.is_ascii_digit())
        && size
            .trim_end_matches(['K', 'M', 'G', 'T', 'P', 'E', 'k'])
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b',');
    if !(digits(links) && size_ok) {
        return None;
    }
    let time = |w: &str| {
        let mut parts = w.split(':');
        parts.next().is_some_and(digits)
            && parts
                .next()
                .is_some_and(|m| m.len() >= 2 && m.as_bytes()[..2].iter().all(u8::is_ascii_digit))
    };
    let first = words.next()?.1;
    let date_ok = if first.len() == 10 && first.as_bytes()[4] == b'-' && first.as_bytes()[7] == b'-'
    {
        time(words.next()?.1)
    } else if first.len() == 3 && first.bytes().all(|b| b.is_ascii_alphabetic()) {
        let day = words.next()?.1;
        let year_or_time = words.next()?.1;
        digits(day) && (time(year_or_time) || (year_or_time.len() == 4 && digits(year_or_time)))
    } else {
        false
    };
    let (name, _) = words.next()?;
    date_ok.then_some((at..at + mode.len(), name..))
}

/// The line before the first line of a long listing whose columns were left out starts with this.
pub(crate) const NAMES_HEADER: &str =
    "[mode and name only: the links, owner, group, size and date of ";

#[cfg(test)]
mod tests {
    use super::long_listing_line;

    /// The mode and name `long_listing_line` finds, as text.
    fn parts(line: &str) -> Option<(&str, &str)> {
        long_listing_line(line).map(|(mode, name)| (&line[mode], &line[name]))
    }

    #[test]
    fn long_listing_lines_of_every_date_and_size_style() {
        let cases = [
            (
                "-rw-r--r-- 1 root root  1157 May  6  2025 .gitignore",
                ("-rw-r--r--", ".gitignore"),
            ),
            (
                "drwxr-xr-x  2 dev staff  4096 Apr 10 07:00 my dir",
                ("drwxr-xr-x", "my dir"),
            ),
            (
                "lrwxrwxrwx 1 root root 7 2025-09-10 07:00 bin -> usr/bin",
                ("lrwxrwxrwx", "bin -> usr/bin"),
            ),
            (
                "-rwxr-xr-x@ 1 me staff 4.0K Jan  2 12:34:56 run.sh",
                ("-rwxr-xr-x@", "run.sh"),
            ),
            (
                "drwxrwsr-t+ 12 a b 1,5M Dec 31  1999 shared",
                ("drwxrwsr-t+", "shared"),
            ),
            (
                "crw-rw-rw- 1 root root 1 Sep 10  2025 null",
                ("crw-rw-rw-", "null"),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parts(line), Some(want), "{line}");
        }
    }

    #[test]
    fn lines_that_only_look_like_a_long_listing_are_not_one() {
        for line in [
            "total 176",
            "-rw-r--r-- 1 root root 1157 May  6  2025", // no name
            "-rw-r--r-- x root root 1157 May  6  2025 a.txt", // no link count
            "-rw-r--r-- 1 root root big May  6  2025 a.txt", // no size
            "-rw-r--r-- 1 root root 1157 yesterday 6 2025 a", // no date
            "rw-r--r--- 1 root root 1157 May  6  2025 a.txt", // no file type first
            "-rw-r--r-- 1 root root 1157 May six 2025 a.txt",
            "-rw-r--r-- 1 root root 1157 May 6 1:aé a.txt", // a minute that is not one, cut inside a character
            "error: 1 2 3 4 5 6 7",
            "",
        ] {
            assert_eq!(parts(line), None, "{line}");
        }
    }
}
