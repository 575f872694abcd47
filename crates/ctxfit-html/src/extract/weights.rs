//! The numbers main-content extraction weighs its signals by — paragraph length, clause commas, link density,
//! the page's own marks (`article`, `main`, `itemprop="articleBody"`), how far a choice widens — gathered in one
//! place so that they are chosen from data, out of fold, by `cargo xtask fit-html`, which writes the values in
//! use to `extract/fitted.rs` (`cargo xtask fit-html --check`, run by CI, checks them against a fresh fit).

/// One value per signal; [`Weights::HAND`] are the values written by hand before any fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// A paragraph (`p`, `pre`, a cell, a quote, a list item, a description list's `dd`) votes from this many
    /// characters of text.
    pub paragraph: f64,
    /// A block of bare text (a `div` of lines between `<br>`s) votes from this many characters of its own.
    pub bare_text: f64,
    /// A vote is 1, plus this much per clause comma, plus its characters over [`Weights::length`] up to
    /// [`Weights::length_cap`].
    pub comma: f64,
    /// The characters that count as 1 in a vote.
    pub length: f64,
    /// The most a vote gets for its length.
    pub length_cap: f64,
    /// The share of a paragraph's vote that goes to its grandparent (its parent gets it whole).
    pub grandparent: f64,
    /// What an `article`'s score is multiplied by.
    pub article: f64,
    /// What a `main`'s score is multiplied by.
    pub main: f64,
    /// What the score of the element the page marks as the article's body (`itemprop="articleBody"`) is
    /// multiplied by.
    pub marked: f64,
    /// The least score of a candidate: below it, nothing on the page is an article.
    pub least: f64,
    /// The chosen element widens to its parent while the parent holds at most this many times its text, …
    pub widen_text: f64,
    /// … under this share of the parent's text is in links (of an ancestor holding an article cut into sections
    /// too), …
    pub widen_links: f64,
    /// … and the parent scores at least this share of its score.
    pub widen_score: f64,
    /// An ancestor holding this many times the chosen element's prose, spread over children of substance, holds
    /// an article cut into sections, …
    pub split_prose: f64,
    /// … a child of substance holding this share of the chosen element's prose.
    pub split_share: f64,
    /// The prose of a short section of an article (a paragraph of two or three sentences).
    pub section_prose: f64,
    /// A sibling of the same tag and class continues the article when it holds this share of the chosen
    /// element's prose, …
    pub kin_share: f64,
    /// … or this much prose (about three paragraphs) beside a long one.
    pub kin_prose: f64,
    /// What the score of an element holding the page's title (an `<h1>`) is multiplied by.
    pub title: f64,
    /// A candidate's score is multiplied by this to the power of its depth in the tree over ten (1: depth does
    /// not matter; under 1, deeper elements weigh less).
    pub depth: f64,
    /// … and by this to the power of the share of the page's text before it (1: position does not matter;
    /// under 1, an element late on the page weighs less).
    pub position: f64,
}

impl Weights {
    /// How many weights there are.
    pub const COUNT: usize = 21;

    /// The values written by hand (tuned on the corpus's first 50 pages, then checked on the other sets).
    pub const HAND: Weights = Weights {
        paragraph: 25.0,
        bare_text: 100.0,
        comma: 1.0,
        length: 100.0,
        length_cap: 3.0,
        grandparent: 0.5,
        article: 1.25,
        main: 1.25,
        marked: 1.5,
        least: 2.0,
        widen_text: 1.6,
        widen_links: 0.25,
        widen_score: 0.6,
        split_prose: 2.0,
        split_share: 0.25,
        section_prose: 5.0,
        kin_share: 0.1,
        kin_prose: 10.0,
        title: 1.0,
        depth: 1.0,
        position: 1.0,
    };

    /// The names of the fields, in the order of [`Weights::values`].
    pub const NAMES: [&'static str; Weights::COUNT] = [
        "paragraph",
        "bare_text",
        "comma",
        "length",
        "length_cap",
        "grandparent",
        "article",
        "main",
        "marked",
        "least",
        "widen_text",
        "widen_links",
        "widen_score",
        "split_prose",
        "split_share",
        "section_prose",
        "kin_share",
        "kin_prose",
        "title",
        "depth",
        "position",
    ];

    /// The values, in the order of [`Weights::NAMES`].
    pub fn values(&self) -> [f64; Weights::COUNT] {
        [
            self.paragraph,
            self.bare_text,
            self.comma,
            self.length,
            self.length_cap,
            self.grandparent,
            self.article,
            self.main,
            self.marked,
            self.least,
            self.widen_text,
            self.widen_links,
            self.widen_score,
            self.split_prose,
            self.split_share,
            self.section_prose,
            self.kin_share,
            self.kin_prose,
            self.title,
            self.depth,
            self.position,
        ]
    }

    /// Weights from values in the order of [`Weights::NAMES`].
    pub fn from_values(v: [f64; Weights::COUNT]) -> Weights {
        Weights {
            paragraph: v[0],
            bare_text: v[1],
            comma: v[2],
            length: v[3],
            length_cap: v[4],
            grandparent: v[5],
            article: v[6],
            main: v[7],
            marked: v[8],
            least: v[9],
            widen_text: v[10],
            widen_links: v[11],
            widen_score: v[12],
            split_prose: v[13],
            split_share: v[14],
            section_prose: v[15],
            kin_share: v[16],
            kin_prose: v[17],
            title: v[18],
            depth: v[19],
            position: v[20],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Weights;

    #[test]
    fn values_and_names_go_together() {
        let w = Weights::HAND;
        assert_eq!(Weights::from_values(w.values()), w);
        let mut v = w.values();
        v[7] = 9.0;
        assert_eq!(Weights::from_values(v).main, 9.0);
        assert_eq!(Weights::NAMES[7], "main");
    }
}
