//! The 50 web pages of the corpus with their ground-truth article text (`html/ground-truth.json`).

use std::io::Read;

use ctxfit_testkit::corpus_dir;

/// One page: its id, URL, HTML as served, and the article text a human marked as its content.
pub struct CorpusPage {
    pub id: String,
    pub url: String,
    pub html: String,
    pub article: String,
}

/// Every page of the corpus, by id. Panics with a clear message when the corpus is missing.
pub fn corpus_pages() -> Vec<CorpusPage> {
    let corpus = corpus_dir().expect(
        "the shared corpus is missing: put it at ../shared/corpus beside the workspace or set CTXFIT_CORPUS",
    );
    let truth_path = corpus.join("html/ground-truth.json");
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&truth_path)
            .unwrap_or_else(|e| panic!("{}: {e}", truth_path.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", truth_path.display()));
    let mut pages: Vec<CorpusPage> = truth
        .as_object()
        .expect("ground truth is an object of pages")
        .iter()
        .map(|(id, page)| {
            let path = corpus.join(format!("html/pages/{id}.html.gz"));
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(
                std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            )
            .read_to_end(&mut bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            CorpusPage {
                id: id.clone(),
                url: page["url"].as_str().unwrap_or_default().to_owned(),
                html: String::from_utf8_lossy(&bytes).into_owned(),
                article: page["articleBody"].as_str().unwrap_or_default().to_owned(),
            }
        })
        .collect();
    pages.sort_by(|a, b| a.id.cmp(&b.id));
    pages
}
