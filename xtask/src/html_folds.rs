//! Sites as the unit of validation for `cargo xtask eval-html`: each page's site, the folds the sites are split
//! into, the sealed part no one opens page by page, and the bootstrap over sites.
//!
//! A page's site is its registrable domain (`www.nytimes.com` and `nytimes.com` are one site): from the set's
//! URL for it, else the page's own canonical URL, else — for a test page named after its site (`nytimes-2`) —
//! that name. Folds and the sealed part are drawn by a hash of the site, so every page of a site lands in the
//! same one, the same on every machine and every run, whatever pages are added.

use ctxfit_replay::spread::{middle_90, RESAMPLES};

/// The registrable domain of a host: the last two labels, or three when the last two read as a country's
/// second-level domain (`bbc.co.uk`, `folha.com.br`); `www.` and a port dropped, lowercase.
pub fn site_of_host(host: &str) -> String {
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    let host = host.split(':').next().unwrap_or_default();
    let labels: Vec<&str> = host.split('.').filter(|l| !l.is_empty()).collect();
    let keep = match labels.as_slice() {
        [.., second, tld]
            if tld.len() == 2
                && matches!(
                    *second,
                    "co" | "com" | "org" | "net" | "ac" | "gov" | "ne" | "or" | "edu"
                ) =>
        {
            3
        }
        _ => 2,
    };
    labels[labels.len().saturating_sub(keep)..].join(".")
}

/// The host of an absolute http(s) URL.
pub fn host_of_url(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    (!host.is_empty()).then_some(host)
}

/// A page's site: the URL's domain if there is one, else the page name's stem (`nytimes-2` → `nytimes`).
pub fn site(url: Option<&str>, name: &str) -> String {
    match url.and_then(host_of_url) {
        Some(host) => site_of_host(host),
        None => {
            let stem = name.split('.').next().unwrap_or(name);
            match stem.rsplit_once('-') {
                Some((head, tail)) if tail.chars().all(|c| c.is_ascii_digit()) => head.to_owned(),
                _ => stem.to_owned(),
            }
        }
    }
}

/// FNV-1a, 64 bits: a hash that is the same everywhere (std's is seeded per process).
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The fold of a site, of `folds`.
pub fn fold(site: &str, folds: usize) -> usize {
    (fnv(site) % folds.max(1) as u64) as usize
}

/// Is the site in the sealed part — a fifth of the sites, drawn by a hash of their own, whose pages
/// `eval-html --pages` never lists and whose figures are reported apart? Rules written from now on are written
/// without looking at them, so they tell whether a change helps where it was not made.
pub fn sealed(site: &str) -> bool {
    fnv(&format!("sealed:{site}")) % 5 == 0
}

/// The paired bootstrap over sites: [`RESAMPLES`] draws of as many sites as there are, with replacement (a
/// fixed seed), each scored as the pages of the sites drawn. `score(pages)` scores a list of page indices for
/// one converter minus the other; returns the share of draws at or above zero and the 5th and 95th percentiles.
pub fn bootstrap_over_sites(sites: &[String], score: impl Fn(&[usize]) -> f64) -> (f64, f64, f64) {
    let mut names: Vec<&String> = sites.iter().collect();
    names.sort();
    names.dedup();
    let pages_of: Vec<Vec<usize>> = names
        .iter()
        .map(|name| (0..sites.len()).filter(|&i| &sites[i] == *name).collect())
        .collect();
    let mut diffs: Vec<f64> = ctxfit_replay::spread::resamples(names.len(), RESAMPLES)
        .map(|draw| {
            let pages: Vec<usize> = draw
                .iter()
                .flat_map(|&s| pages_of[s].iter().copied())
                .collect();
            score(&pages)
        })
        .collect();
    let ahead = diffs.iter().filter(|&&d| d >= 0.0).count() as f64 / diffs.len().max(1) as f64;
    let [low, high] = middle_90(&mut diffs);
    (ahead, low, high)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_its_registrable_domain_or_the_pages_stem() {
        assert_eq!(
            site(Some("https://www.nytimes.com/2019/a.html"), "x"),
            "nytimes.com"
        );
        assert_eq!(
            site(Some("https://mobile.nytimes.com/a"), "x"),
            "nytimes.com"
        );
        assert_eq!(site(Some("http://news.bbc.co.uk:8080/a"), "x"), "bbc.co.uk");
        assert_eq!(
            site(Some("https://user@www.folha.com.br/"), "x"),
            "folha.com.br"
        );
        assert_eq!(site(None, "nytimes-2.html.gz"), "nytimes");
        assert_eq!(site(None, "lifehacker-working"), "lifehacker-working");
        assert_eq!(site(Some("not a url"), "wapo-1"), "wapo");
    }

    #[test]
    fn folds_and_the_sealed_part_are_fixed_by_the_site() {
        let sites: Vec<String> = (0..1000).map(|i| format!("site{i}.example")).collect();
        let mut sizes = [0usize; 5];
        for s in &sites {
            sizes[fold(s, 5)] += 1;
            assert_eq!(fold(s, 5), fold(&s.clone(), 5));
        }
        assert!(sizes.iter().all(|&n| (150..250).contains(&n)), "{sizes:?}");
        let sealed_share = sites.iter().filter(|s| sealed(s)).count();
        assert!((150..250).contains(&sealed_share), "{sealed_share}");
        // the same numbers on every machine: the hash is not std's seeded one
        assert_eq!(fnv("nytimes.com"), fnv("nytimes.com"));
        assert_eq!(fnv(""), 0xcbf2_9ce4_8422_2325);
    }

    #[test]
    fn the_site_bootstrap_draws_whole_sites() {
        // one site of 10 pages all ahead, nine sites of one page each behind: a page bootstrap would call the
        // lead sure; drawn by site, it is ahead only when the big site is drawn often enough
        let mut sites = vec!["big".to_owned(); 10];
        sites.extend((0..9).map(|i| format!("small{i}")));
        let lead = |pages: &[usize]| {
            pages
                .iter()
                .map(|&i| if i < 10 { 1.0 } else { -1.0 })
                .sum::<f64>()
                / pages.len() as f64
        };
        let (ahead, low, high) = bootstrap_over_sites(&sites, lead);
        assert!(ahead < 0.9 && ahead > 0.1, "{ahead}");
        assert!(low < 0.0 && high > 0.0);
    }
}
