//! The package's exceptions, and how Rust errors and panics become them.

use ctxfit_tokens::BudgetError;
use pyo3::exceptions::{PyRuntimeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    ctxfit._ctxfit,
    CtxfitError,
    PyValueError,
    "Input ctxfit cannot use: malformed messages or session files, an unknown profile, a bad policy. The message \
     is the one the CLI prints."
);
pyo3::create_exception!(
    ctxfit._ctxfit,
    PromptTooLarge,
    CtxfitError,
    "The compacted request is above the profile's request budget (seed 003's guard). Attributes: `tokens`, \
     `budget`."
);
pyo3::create_exception!(
    ctxfit._ctxfit,
    InternalError,
    PyRuntimeError,
    "A fault inside ctxfit (a Rust panic, caught at the boundary). Please report it with the input."
);

/// Input ctxfit cannot use.
pub fn bad_input(message: impl Into<String>) -> PyErr {
    CtxfitError::new_err(message.into())
}

/// The guard's refusal, with `tokens` and `budget` on the exception.
pub fn prompt_too_large(py: Python<'_>, e: &BudgetError) -> PyErr {
    let err = PromptTooLarge::new_err(e.to_string());
    let value = err.value(py);
    // setting attributes on a fresh exception object cannot fail in practice; the message carries them anyway
    let _ = value.setattr("tokens", e.tokens);
    let _ = value.setattr("budget", e.budget);
    err
}

/// A Python `UserWarning`.
pub fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    PyErr::warn(
        py,
        &py.get_type::<PyUserWarning>(),
        &std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default(),
        1,
    )
}

/// An unknown name among the ones allowed.
pub fn unknown(what: &str, name: &str, allowed: &[&str]) -> PyErr {
    PyValueError::new_err(format!(
        "unknown {what} `{name}` (expected one of: {})",
        allowed.join(", ")
    ))
}
