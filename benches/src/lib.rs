//! Shared helpers of the ctxfit benchmarks.
