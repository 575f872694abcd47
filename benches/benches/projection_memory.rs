//! Extra heap memory of projection mode on a generated 1M-token history, next to an owned copy.
//!
//! Not a criterion benchmark: it counts bytes, not time. Run with
//! `cargo bench -p ctxfit-benches --bench projection_memory`.

#![allow(clippy::print_stderr)]

use ctxfit_benches::history::{corpus_turns, generate_history};
use ctxfit_compactor::{Compactor, PolicyFile};
use ctxfit_model::Conversation;

fn compactor(profile: &str) -> Compactor {
    let settings = PolicyFile::default()
        .resolve(Some(profile), None, &|_| None)
        .unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap()
}

/// Counts the heap: the peak of live bytes while a closure runs is its extra memory.
#[global_allocator]
static HEAP: peak_alloc::PeakAlloc = peak_alloc::PeakAlloc;

fn extra_heap_bytes(f: impl FnOnce()) -> usize {
    let before = HEAP.current_usage();
    HEAP.reset_peak_usage();
    f();
    HEAP.peak_usage().saturating_sub(before)
}

fn projection_memory(history: &Conversation) {
    let source = extra_heap_bytes(|| {
        std::hint::black_box(history.clone());
    });
    for profile in ["seed-000", "seed-002"] {
        let mut c = compactor(profile);
        c.compact(history, None);
        let view = extra_heap_bytes(|| {
            let p = c.projection(history);
            p.write_json(std::io::sink(), false).unwrap();
        });
        let owned = extra_heap_bytes(|| {
            std::hint::black_box(c.project(history));
        });
        eprintln!(
            "projection memory [{profile}]: history {:.1} MB in memory; projection written to a sink: +{:.2} MB peak \
             ({:.1}% of the history); owned copy (project()): +{:.1} MB ({:.0}%)",
            source as f64 / 1e6,
            view as f64 / 1e6,
            100.0 * view as f64 / source as f64,
            owned as f64 / 1e6,
            100.0 * owned as f64 / source as f64,
        );
    }
}

fn main() {
    let history = generate_history(&corpus_turns(), 1_000_000, 7);
    projection_memory(&history);
}
