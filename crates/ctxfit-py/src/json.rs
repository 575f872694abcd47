//! Python objects to JSON values and back, without a detour through JSON text.
//!
//! What a message list holds in Python: dicts, lists, tuples, strings, numbers, booleans, `None`, and the SDKs'
//! response objects (pydantic models: `anthropic.types.TextBlock`, `openai.types.chat.ChatCompletionMessage`),
//! which are read through their `model_dump(mode="json", exclude_none=True)`, as the SDKs send them.

use ctxfit_model::{Map, Value};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Nesting deeper than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 256;

/// A Python object as a JSON value; `path` names it in errors (`messages[3]`).
pub fn to_value(obj: &Bound<'_, PyAny>, path: impl std::fmt::Display) -> PyResult<Value> {
    read(obj, 0).map_err(|e| match e {
        Odd::Type(what, at) => PyTypeError::new_err(format!(
            "{path}{}: cannot send {what} as JSON (dicts, lists, strings, numbers, booleans, None, or an SDK model with model_dump)",
            shortened(&at)
        )),
        Odd::Value(what, at) => PyValueError::new_err(format!("{path}{}: {what}", shortened(&at))),
        Odd::Python(e) => e,
    })
}

/// Characters of a long path kept at each end in errors.
const PATH_ENDS: usize = 60;

/// A path below the root as an error names it: whole, or — a value nested hundreds deep, a list that holds
/// itself — its first and last steps around `…`, so the message stays a line.
fn shortened(at: &str) -> std::borrow::Cow<'_, str> {
    if at.chars().count() <= 2 * PATH_ENDS + 10 {
        return at.into();
    }
    // cut where a step begins (`.key`, `[3]`) within each end, else at a character
    let starts: Vec<usize> = at.char_indices().map(|(i, _)| i).collect();
    let step = |i: usize| matches!(at.as_bytes()[i], b'.' | b'[');
    let head_limit = starts[PATH_ENDS];
    let head = starts[1..=PATH_ENDS]
        .iter()
        .rev()
        .copied()
        .find(|&i| step(i))
        .unwrap_or(head_limit);
    let tail_from = starts[starts.len() - PATH_ENDS];
    let tail = starts[starts.len() - PATH_ENDS..]
        .iter()
        .copied()
        .find(|&i| step(i))
        .unwrap_or(tail_from);
    format!("{}…{}", &at[..head], &at[tail..]).into()
}

enum Odd {
    /// An object of a type JSON has no place for (its type name), at a path below the root.
    Type(String, String),
    /// A value JSON cannot hold.
    Value(String, String),
    Python(PyErr),
}

impl From<PyErr> for Odd {
    fn from(e: PyErr) -> Self {
        Odd::Python(e)
    }
}

fn within(e: Odd, step: impl FnOnce() -> String) -> Odd {
    match e {
        Odd::Type(what, at) => Odd::Type(what, format!("{}{at}", step())),
        Odd::Value(what, at) => Odd::Value(what, format!("{}{at}", step())),
        other => other,
    }
}

fn read(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, Odd> {
    if depth > MAX_DEPTH {
        return Err(Odd::Value(
            format!("nested more than {MAX_DEPTH} levels deep"),
            String::new(),
        ));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        // a lone surrogate (`"\ud800"`) has no UTF-8: named at its place, as any value JSON cannot hold
        return s
            .to_cow()
            .map(|text| Value::String(text.into_owned()))
            .map_err(|e| {
                Odd::Value(
                    format!(
                        "a string JSON cannot hold: a lone surrogate — half of an emoji cut in two, or a byte \
                         decoded with errors=\"surrogateescape\" — which the API refuses too; write it as U+FFFD \
                         first, as text.encode(\"utf-16\", \"surrogatepass\").decode(\"utf-16\", \"replace\") \
                         does ({e})"
                    ),
                    String::new(),
                )
            });
    }
    if let Ok(i) = obj.cast::<PyInt>() {
        if let Ok(n) = i.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = i.extract::<u64>() {
            return Ok(Value::from(n));
        }
        // beyond 64 bits: kept as written (the model keeps numbers exactly)
        // (Python refuses to write one of more than 4,300 digits unless told: said at its place)
        let digits = i
            .str()
            .and_then(|d| d.to_cow().map(|c| c.into_owned()))
            .map_err(|e| {
                Odd::Value(
                    format!("an integer Python will not write ({e})"),
                    String::new(),
                )
            })?;
        return serde_json::from_str(&digits)
            .map_err(|e| Odd::Value(format!("integer {digits}: {e}"), String::new()));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        return serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| Odd::Value(format!("{v} is not a JSON number"), String::new()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = match k.cast::<PyString>() {
                Ok(s) => s.to_cow()?.into_owned(),
                Err(_) => {
                    return Err(Odd::Type(
                        format!("a dict key of type {}", type_name(&k)),
                        String::new(),
                    ))
                }
            };
            let value = read(&v, depth + 1).map_err(|e| within(e, || format!(".{key}")))?;
            map.insert(key, value);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return items(l.iter(), depth);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return items(t.iter(), depth);
    }
    if obj.hasattr("model_dump")? {
        let kwargs = PyDict::new(obj.py());
        kwargs.set_item("mode", "json")?;
        kwargs.set_item("exclude_none", true)?;
        let dumped = obj.call_method("model_dump", (), Some(&kwargs))?;
        return read(&dumped, depth + 1);
    }
    Err(Odd::Type(
        format!("an object of type {}", type_name(obj)),
        String::new(),
    ))
}

fn items<'py>(it: impl Iterator<Item = Bound<'py, PyAny>>, depth: usize) -> Result<Value, Odd> {
    it.enumerate()
        .map(|(i, v)| read(&v, depth + 1).map_err(|e| within(e, || format!("[{i}]"))))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// A JSON value as a Python object: dicts, lists, `str`, `int` (any size), `float`, `bool`, `None`.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                let written = n.to_string();
                if written.contains(['.', 'e', 'E']) {
                    PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
                } else {
                    // an integer beyond 64 bits, exactly
                    py.get_type::<PyInt>().call1((written,))?
                }
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// The key of Anthropic's cache breakpoints, which clients move from message to message between requests.
const MARKER: &str = "cache_control";

/// Whether a message holds a `cache_control` marker: on itself, on one of its content blocks, or on a block
/// inside a tool result's content (where Anthropic reads them; one inside a tool call's input is the call's).
pub fn value_has_marker(message: &Value) -> bool {
    fn blocks(v: &Value) -> &[Value] {
        v.get("content")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    }
    let marked = |v: &Value| v.get(MARKER).is_some();
    marked(message)
        || blocks(message)
            .iter()
            .any(|block| marked(block) || blocks(block).iter().any(marked))
}

/// [`value_has_marker`] of a Python message, read in place where it is a dict (an SDK model is converted).
pub fn has_marker(message: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Ok(d) = message.cast::<PyDict>() else {
        return Ok(value_has_marker(&to_value(message, "message")?));
    };
    if d.contains(MARKER)? {
        return Ok(true);
    }
    let Some(content) = d.get_item("content")? else {
        return Ok(false);
    };
    for block in sequence(&content)? {
        let Ok(b) = block.cast::<PyDict>() else {
            continue;
        };
        if b.contains(MARKER)? {
            return Ok(true);
        }
        if let Some(inner) = b.get_item("content")? {
            for ib in sequence(&inner)? {
                if ib
                    .cast::<PyDict>()
                    .is_ok_and(|x| x.contains(MARKER).unwrap_or(false))
                {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// The items of a list or tuple; nothing for anything else.
fn sequence<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if let Ok(l) = obj.cast::<PyList>() {
        return Ok(l.iter().collect());
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Ok(t.iter().collect());
    }
    Ok(Vec::new())
}

/// Whether two messages are equal but for their `cache_control` markers (where [`value_has_marker`] looks for
/// them): the same message, its breakpoint moved.
pub fn eq_but_markers(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
    same_but_markers(a, b, 0)
}

/// `depth` counts the steps from the message: 0 the message, 2 a block, 4 a block inside a tool result — the
/// dicts whose markers are not compared.
fn same_but_markers(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, depth: usize) -> PyResult<bool> {
    if a.is(b) {
        return Ok(true);
    }
    if depth > 4 {
        return a.eq(b);
    }
    if let (Ok(x), Ok(y)) = (a.cast::<PyDict>(), b.cast::<PyDict>()) {
        if depth % 2 == 1 {
            return a.eq(b);
        }
        let mut compared = 0;
        for (k, v) in x.iter() {
            if k.cast::<PyString>()
                .is_ok_and(|s| s.to_cow().is_ok_and(|s| s == MARKER))
            {
                continue;
            }
            compared += 1;
            match y.get_item(&k)? {
                Some(w) if same_but_markers(&v, &w, depth + 1)? => {}
                _ => return Ok(false),
            }
        }
        return Ok(compared == y.len() - usize::from(y.contains(MARKER)?));
    }
    let is_sequence =
        |o: &Bound<'_, PyAny>| o.cast::<PyList>().is_ok() || o.cast::<PyTuple>().is_ok();
    if is_sequence(a) && is_sequence(b) && depth % 2 == 1 {
        let (xs, ys) = (sequence(a)?, sequence(b)?);
        if xs.len() != ys.len() {
            return Ok(false);
        }
        for (x, y) in xs.iter().zip(&ys) {
            if !same_but_markers(x, y, depth + 1)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    a.eq(b)
}
