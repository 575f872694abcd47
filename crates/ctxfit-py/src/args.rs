//! Number arguments (`input_tokens`, `cache_ttl`, `max_chars`, `timeout`, …) whose errors name the argument.
//!
//! pyo3's own conversions answer `cache_ttl=-1` with `OverflowError: can't convert negative int to unsigned`,
//! `10**30` with `int too big to convert` and `sent_at="x"` with `TypeError: must be real number, not str`,
//! naming neither the argument nor what it takes. [`Whole`] and [`Real`] take any object and are checked in the
//! function's body, where the name is known: `ValueError: cache_ttl must be a whole number, 0 or more: got -1`,
//! `TypeError: sent_at must be a number (int or float), got str`.

use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

/// What was wrong with an argument, before its name is known.
#[derive(Debug, Clone)]
enum Odd {
    /// Not a number of the kind asked for: the type's name.
    Type(String),
    /// An `int` beyond 64 bits, negative or not, as Python writes it (shortened).
    Range(String),
}

/// A whole-number argument as Python gave it: an `int` (not a `bool`) that fits a `u64`, or what was wrong.
#[derive(Debug, Clone)]
pub struct Whole(Result<u64, Odd>);

impl Whole {
    /// A default value.
    pub const fn of(n: u64) -> Self {
        Whole(Ok(n))
    }

    /// The value, or an error naming argument `name`: a `TypeError` for what is not an `int`, a `ValueError` for
    /// a negative one or one beyond 64 bits.
    pub fn get(self, name: &str) -> PyResult<u64> {
        self.at_least(name, 0)
    }

    /// The value, at least `min`.
    pub fn at_least(self, name: &str, min: u64) -> PyResult<u64> {
        let too_small = |got: &str| {
            PyValueError::new_err(format!(
                "{name} must be a whole number, {min} or more: got {got}"
            ))
        };
        match self.0 {
            Ok(n) if n >= min => Ok(n),
            Ok(n) => Err(too_small(&n.to_string())),
            Err(Odd::Range(written)) if written.starts_with('-') => Err(too_small(&written)),
            Err(Odd::Range(written)) => Err(PyValueError::new_err(format!(
                "{name} is too large: got {written} (at most {})",
                u64::MAX
            ))),
            Err(Odd::Type(kind)) => Err(PyTypeError::new_err(format!(
                "{name} must be a whole number (int), got {kind}"
            ))),
        }
    }

    /// As a `usize` (the same range on the 64-bit targets the package is built for).
    pub fn get_usize(self, name: &str) -> PyResult<usize> {
        self.at_least_usize(name, 0)
    }

    /// As a `usize`, at least `min`.
    pub fn at_least_usize(self, name: &str, min: u64) -> PyResult<usize> {
        let n = self.at_least(name, min)?;
        usize::try_from(n).map_err(|_| {
            PyValueError::new_err(format!("{name} is too large for this machine: got {n}"))
        })
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Whole {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyBool>() {
            return Ok(Whole(Err(Odd::Type("bool".to_owned()))));
        }
        let Ok(int) = obj.cast::<PyInt>() else {
            return Ok(Whole(Err(Odd::Type(type_name(&obj)))));
        };
        Ok(Whole(match int.extract::<u64>() {
            Ok(n) => Ok(n),
            Err(_) => Err(Odd::Range(int.str().map_or_else(
                |_| "an integer Python will not write".to_owned(),
                |s| shortened(s.to_string()),
            ))),
        }))
    }
}

/// A number argument (`int` or `float`, not a `bool`) as Python gave it, or what it was instead.
#[derive(Debug, Clone)]
pub struct Real(Result<f64, Odd>);

impl Real {
    /// A default value.
    pub const fn of(x: f64) -> Self {
        Real(Ok(x))
    }

    /// The value, or a `TypeError` naming argument `name`.
    pub fn get(self, name: &str) -> PyResult<f64> {
        match self.0 {
            Ok(x) => Ok(x),
            Err(Odd::Type(kind) | Odd::Range(kind)) => Err(PyTypeError::new_err(format!(
                "{name} must be a number (int or float), got {kind}"
            ))),
        }
    }

    /// A number of seconds as a `Duration` (`None` for 0), or an error naming argument `name` for what is not a
    /// number, or a negative, infinite or NaN one, or one past what a `Duration` holds.
    pub fn seconds(self, name: &str) -> PyResult<Option<Duration>> {
        let s = self.get(name)?;
        match Duration::try_from_secs_f64(s) {
            Ok(d) if d.is_zero() => Ok(None),
            Ok(d) => Ok(Some(d)),
            Err(_) => Err(PyValueError::new_err(format!(
                "{name} must be a number of seconds, 0 or more (and finite): got {s:?}"
            ))),
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Real {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyBool>() {
            return Ok(Real(Err(Odd::Type("bool".to_owned()))));
        }
        if let Ok(f) = obj.cast::<PyFloat>() {
            return Ok(Real(Ok(f.value())));
        }
        if let Ok(int) = obj.cast::<PyInt>() {
            // (an int past a float's range is infinity, refused where a finite number is needed)
            let past = if int.lt(0).unwrap_or(false) {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
            return Ok(Real(Ok(int.extract::<f64>().unwrap_or(past))));
        }
        Ok(Real(Err(Odd::Type(type_name(&obj)))))
    }
}

fn type_name(obj: &Borrowed<'_, '_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// A long number written in full would fill the message: its first digits and how many there are.
fn shortened(written: String) -> String {
    match written.len() {
        n if n > 40 => format!("{}… ({n} characters)", &written[..20]),
        _ => written,
    }
}

/// A file or folder argument as Python's file functions take one: a `str`, an `os.PathLike` (`pathlib.Path`), or
/// `bytes` — what `os.listdir(b".")` and `os.fsencode` give, the one spelling of a name that is not UTF-8
/// (`open` and `os.stat` take them all alike). Anything else is a `TypeError` naming what was given.
#[derive(Debug, Clone)]
pub struct FilePath(pub std::path::PathBuf);

impl<'a, 'py> FromPyObject<'a, 'py> for FilePath {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        // `os.fspath` gives a str or bytes of whatever is a path (a bytes-valued `PathLike` too)
        let spelled = obj
            .py()
            .import("os")?
            .call_method1("fspath", (obj,))
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "expected a path (str, bytes or os.PathLike), got {}",
                    type_name(&obj)
                ))
            })?;
        if let Ok(bytes) = spelled.cast::<pyo3::types::PyBytes>() {
            #[cfg(unix)]
            {
                use std::os::unix::ffi::OsStrExt;
                return Ok(FilePath(
                    std::ffi::OsStr::from_bytes(bytes.as_bytes()).into(),
                ));
            }
            #[cfg(not(unix))]
            {
                let text = std::str::from_utf8(bytes.as_bytes()).map_err(|_| {
                    PyValueError::new_err("a path given as bytes must be UTF-8 on this system")
                })?;
                return Ok(FilePath(text.into()));
            }
        }
        spelled.extract::<std::path::PathBuf>().map(FilePath)
    }
}
