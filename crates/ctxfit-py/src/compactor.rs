//! `ctxfit.Compactor`: the live loop of one conversation, called before every model request.
//!
//! The object keeps the conversation as the compactor has read it and the caller's own message objects. A call
//! converts only the messages appended since the previous one (a message already read is recognised by
//! identity, else by `==`), compacts, and answers a new list that holds the caller's own objects for every
//! message the request sends unchanged and new dicts only for the ones compaction changed (made once, then
//! reused while the decision stands — decisions are sticky). So a call costs the Rust per-request work plus the
//! conversion of what is new, not of the whole history.

use ctxfit_compactor::{Compactor as Inner, Report, Settings};
use ctxfit_model::{
    detect_decisive, read_message, read_system, read_tool_definitions, write_message, Conversation,
    Message, ModelError, Value, WireFormat,
};
use ctxfit_tokens::BudgetStatus;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::args::{Real, Whole};
use crate::json::{eq_but_markers, has_marker, to_py, to_value, value_has_marker};
use crate::{errors, estimator, settings, shielded};

/// Compacts the message list of one conversation before each model request.
///
/// `Compactor(profile=None, policy=None, agent=None, *, estimator="fast", format=None)`: `profile` a built-in
/// profile or the policy's (by default the policy's `default_profile`, else its only profile, else `smart`; a
/// policy of several profiles and no default is refused); `policy` a policy file's
/// path or its TOML text; `agent` the policy's `[agents.NAME]` overrides; `format` fixes the wire format instead
/// of detecting it.
///
/// Call `compact(messages)` with the agent's whole, growing history before every request and send what it
/// answers: your own objects where a message is sent unchanged, new dicts where a stale tool result was cut.
/// Only what was appended since the previous call is converted.
///
/// >>> import ctxfit
/// >>> compactor = ctxfit.Compactor("smart")
/// >>> history = [{"role": "user", "content": "list the tree"}]
/// >>> for i in range(3):
/// ...     call = {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls -R"}}
/// ...     history.append({"role": "assistant", "content": [call]})
/// ...     listing = "\n".join(f"src/pkg/mod_{k}.py" for k in range(1000))
/// ...     result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": listing}
/// ...     history.append({"role": "user", "content": [result]})
/// ...     request = compactor.compact(history)
/// >>> report = compactor.last_report
/// >>> report["tokens_after"] < report["tokens_before"], request[-1] is history[-1]
/// (True, True)
#[pyclass(module = "ctxfit._ctxfit")]
pub struct Compactor {
    settings: Settings,
    estimator: String,
    /// The wire format, when the caller named it; else detected from the messages.
    fixed_format: Option<WireFormat>,
    /// Whether the messages have shown their format yet (checked against `fixed_format` until they have).
    format_told: bool,
    inner: Inner,
    conv: Conversation,
    /// The caller's message objects, one per message of `conv`.
    seen: Py<PyList>,
    /// The request as last sent, before any messages are dropped from the front: the caller's objects, and the
    /// dicts made of the messages compaction changed.
    sent: Py<PyList>,
    /// The caller's system prompt object (Anthropic's top-level `system`), if given.
    system: Option<Py<PyAny>>,
    /// The caller's list of tool definitions (the request's `tools`), if given.
    tools: Option<Py<PyAny>>,
    /// Per message, the dict made of it as compacted and the stamp of the decisions it was made with
    /// (`Projection::changes`: the same stamp is the same message).
    returned: Vec<Option<(usize, Py<PyAny>)>>,
    /// How far the changes of `inner`'s decisions have been read into `returned`.
    changes_read: ctxfit_compactor::ChangeMark,
    /// The messages that held a `cache_control` marker when they were read: a client moves its breakpoints,
    /// taking the marker off in place, and a message compaction changed must then be sent without it.
    marked: Vec<usize>,
    last_report: Option<Report>,
    /// A panic left the state unknown: start over on the next call.
    poisoned: bool,
}

/// One `compact` call's arguments, checked.
struct Request<'a, 'py> {
    /// The agent's list of messages (or any iterable of them).
    messages: &'a Bound<'py, PyAny>,
    /// What the provider reported for the previous request, when the caller passes it.
    input_tokens: Option<usize>,
    /// The request's system prompt, when the caller passes it.
    system: Option<&'a Bound<'py, PyAny>>,
    /// The request's tool definitions, when the caller passes them.
    tools: Option<&'a Bound<'py, PyAny>>,
    /// When the request is sent, milliseconds since the Unix epoch.
    sent_at: u64,
    /// Seconds the request's cache lives, when its messages do not say.
    cache_ttl: Option<u64>,
}

impl Compactor {
    /// `compact` once the caller holds the compactor and its arguments are checked.
    fn compact_request<'py>(&mut self, request: Request<'_, 'py>) -> PyResult<Bound<'py, PyList>> {
        let Request {
            messages,
            input_tokens,
            system,
            tools,
            sent_at,
            cache_ttl,
        } = request;
        let py = messages.py();
        let items: Bound<'py, PyList> = match messages.cast::<PyList>() {
            Ok(list) => list.clone(),
            Err(_) => PyList::new(py, messages.try_iter()?.collect::<PyResult<Vec<_>>>()?)?,
        };
        if self.poisoned {
            self.start_over(py, self.conv.format)?;
        }

        // the system prompt and the tools: new ones are a new conversation (the tools are counted once, when a
        // conversation starts; the provider's cache breaks at a new list anyway: tools come before the messages),
        // read (and refused if malformed) before anything is started over
        let system_value = read_if_new(system, &self.system, "system", |v| {
            read_system(v).map_err(|e| errors::bad_input(e.to_string()))
        })?;
        let tools_value = read_if_new(tools, &self.tools, "tools", |v| {
            read_tool_definitions(v).map_err(|e| errors::bad_input(e.to_string()))
        })?;
        let preamble_same = system_value.is_none()
            && tools_value.is_none()
            && system.is_some() == self.system.is_some()
            && tools.is_some() == self.tools.is_some();
        let (known, mut moved) = self.known_prefix(&items)?;
        // (before any message is read — a new compactor, one just restored — they are only taken in: the
        // decisions restored stand)
        let preamble_changed = !preamble_same && !self.conv.messages.is_empty();
        if preamble_changed || known < self.conv.messages.len() {
            self.start_over(py, self.conv.format)?;
            moved.clear();
        }
        let read = |from: usize| -> PyResult<Vec<Value>> {
            (from..items.len())
                .map(|i| to_value(&items.get_item(i)?, format_args!("messages[{i}]")))
                .collect()
        };

        // read what is new (nothing is kept if any of it is malformed)
        let mut start = self.conv.messages.len();
        let mut values = read(start)?;
        // plain text reads the same in every format: the first message that tells decides it — or, where the caller
        // named the format, is checked against it (nothing of messages it contradicts would be recognised)
        let asking = match self.fixed_format {
            Some(_) => !self.format_told,
            None => self.conv.format == WireFormat::Anthropic,
        };
        if asking {
            let new = Value::Array(values);
            let told = detect_decisive(&new);
            let Value::Array(new) = new else {
                unreachable!("built as an array")
            };
            values = new;
            match (self.fixed_format, told) {
                (Some(fixed), Some(told)) => {
                    self.format_told = true;
                    if told != fixed {
                        errors::warn(
                            py,
                            &format!(
                                "Compactor(format=\"{}\"): the messages read as {} — their tool calls and \
                                 results will not be recognised, nor compacted; leave format out to detect it",
                                fixed.name(),
                                told.name()
                            ),
                        )?;
                    }
                }
                (None, Some(told)) if told != WireFormat::Anthropic => {
                    if start > 0 {
                        // read again, in the format now known, what was read as plain text
                        values = read(0)?;
                        start = 0;
                        self.start_over(py, told)?;
                    }
                    self.conv.format = told;
                }
                _ => {}
            }
        }
        let format = self.conv.format;
        // a message read before whose breakpoint moved: read again, so that what is sent of it carries the
        // markers the caller's message holds now, and no other (its decisions stand: it is the same message)
        let reread = moved
            .iter()
            .filter(|&&i| i < self.conv.messages.len())
            .map(|&i| {
                let at = format!("messages[{i}]");
                let value = to_value(&items.get_item(i)?, &at)?;
                let marked = value_has_marker(&value);
                read_message(format, value, "")
                    .map(|m| (i, m, marked))
                    .map_err(|e| errors::bad_input(e.under(&at).to_string()))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let new_marks: Vec<usize> = (values.iter().enumerate())
            .filter(|(_, v)| value_has_marker(v))
            .map(|(k, _)| start + k)
            .collect();
        let new_messages = values
            .into_iter()
            .enumerate()
            .map(|(k, v)| {
                // (the path is written only for an error)
                read_message(format, v, "")
                    .map_err(|e| e.under(&format!("messages[{}]", start + k)))
            })
            .collect::<Result<Vec<Message>, ModelError>>()
            .map_err(|e| errors::bad_input(e.to_string()))?;
        // what reads but is probably wrong in what is new, said once (a `tool` message without its call's id is
        // kept whole, never compacted: the caller should know)
        for (k, message) in new_messages.iter().enumerate() {
            for problem in ctxfit_model::message_problems(format, start + k, message) {
                errors::warn(py, &problem.to_string())?;
            }
        }
        if let Some(prompt) = system_value {
            self.conv.system = Some(prompt);
        } else if system.is_none() {
            self.conv.system = None;
        }
        self.system = system.map(|s| s.clone().unbind());
        if let Some(list) = tools_value {
            self.conv.tools = Some(list);
        } else if tools.is_none() {
            self.conv.tools = None;
        }
        self.tools = tools.map(|t| t.clone().unbind());
        let (seen, sent) = (self.seen.bind(py), self.sent.bind(py));
        let mut rebuild = Vec::new();
        for (i, message, marked) in reread {
            self.conv.messages[i] = message;
            self.marked.retain(|&k| k != i);
            if marked {
                self.marked.push(i);
            }
            let item = items.get_item(i)?;
            seen.set_item(i, &item)?;
            match &self.returned[i] {
                Some(_) => rebuild.push(i),
                None => sent.set_item(i, &item)?,
            }
        }
        self.marked.extend(new_marks);
        self.conv.messages.extend(new_messages);
        for i in start..items.len() {
            let item = items.get_item(i)?;
            seen.append(&item)?;
            sent.append(&item)?;
        }
        self.returned.resize_with(items.len(), || None);

        // the cache the request asks for: as the caller says (OpenAI's `prompt_cache_retention` is an argument of
        // the request, not of its messages), else as its `cache_control` marks say; compacted without holding
        // the interpreter
        let next = ctxfit_compactor::NextRequest {
            first_new: start,
            reported_input_tokens: input_tokens,
            cache_ttl,
            sent_at: Some(sent_at),
            ..ctxfit_compactor::NextRequest::default()
        };
        let (inner, conv) = (&mut self.inner, &self.conv);
        let report = py.detach(|| shielded("compact", || inner.next_request(conv, next)));
        let report = match report {
            Ok(r) => r,
            Err(e) => {
                self.poisoned = true;
                return Err(e);
            }
        };

        // the request: the caller's own objects where nothing changed, a dict made once per change otherwise
        let projection = self.inner.projection(&self.conv);
        // (only the messages whose decisions changed since the previous call: a call costs what changed, not
        // every message ever cut)
        for (i, stamp) in projection.changes_since(self.changes_read) {
            if !matches!(&self.returned[i], Some((n, _)) if *n == stamp) {
                let obj = to_py(py, &write_message(format, &projection.message(i)))?;
                sent.set_item(i, &obj)?;
                self.returned[i] = Some((stamp, obj.unbind()));
            }
        }
        // (a message whose markers moved, made again of the message as read now)
        for i in rebuild {
            if let Some((stamp, _)) = self.returned[i] {
                let obj = to_py(py, &write_message(format, &projection.message(i)))?;
                sent.set_item(i, &obj)?;
                self.returned[i] = Some((stamp, obj.unbind()));
            }
        }
        self.changes_read = projection.change_mark();
        let out = sent.get_slice(0, sent.len());
        if let Some(dropped) = projection.dropped() {
            out.del_slice(dropped.start, dropped.end)?;
        }
        self.last_report = Some(report);
        Ok(out)
    }

    fn fresh_inner(&self) -> PyResult<Inner> {
        new_inner(&self.settings, &self.estimator)
    }

    /// Forget the conversation (the caller rewrote its history, or changed its format).
    fn start_over(&mut self, py: Python<'_>, format: WireFormat) -> PyResult<()> {
        // (the model's window a refusal taught is the model's, not the history's: it stays)
        let window = self.inner.window();
        self.inner = self.fresh_inner()?;
        if let Some(w) = window {
            self.inner.set_window(w);
        }
        let (system, tools) = (self.conv.system.take(), self.conv.tools.take());
        self.conv = Conversation::new(format);
        self.conv.system = system;
        self.conv.tools = tools;
        self.seen = PyList::empty(py).unbind();
        self.sent = PyList::empty(py).unbind();
        self.returned.clear();
        self.changes_read = ctxfit_compactor::ChangeMark::default();
        self.marked.clear();
        self.poisoned = false;
        Ok(())
    }

    /// The length of the prefix of `items` the compactor has read already: the caller's objects (or equal
    /// ones), or the dicts the previous call answered with — and, within it, the messages whose `cache_control`
    /// markers moved (taken off in place, or a copy sent that differs only in them), to be read again.
    fn known_prefix(&mut self, items: &Bound<'_, PyList>) -> PyResult<(usize, Vec<usize>)> {
        let py = items.py();
        let seen = self.seen.bind(py);
        let known = seen.len();
        if items.len() < known {
            return Ok((items.len(), Vec::new()));
        }
        let mut moved = Vec::new();
        // the common case, compared in one pass by the interpreter (identical objects are not looked into)
        if !items.get_slice(0, known).eq(seen)? {
            let sent = self.sent.bind(py);
            for i in 0..known {
                let (item, old) = (items.get_item(i)?, seen.get_item(i)?);
                if item.is(&old) {
                    continue;
                }
                if matches!(self.returned.get(i), Some(Some((_, r))) if item.is(r)) {
                    continue;
                }
                if item.eq(&old)? {
                    // an equal object: the caller rebuilt its list; remember the new one for the fast path
                    seen.set_item(i, &item)?;
                    if matches!(self.returned.get(i), Some(None) | None) {
                        sent.set_item(i, &item)?;
                    }
                    continue;
                }
                if eq_but_markers(&item, &old)? {
                    moved.push(i);
                    continue;
                }
                return Ok((i, Vec::new()));
            }
        }
        // a marker taken off in place (a breakpoint moved to the newest message): the same object, changed (but
        // for the dict this compactor made of it, which the caller keeps as its history: sent as it is now)
        for &i in &self.marked {
            if i >= known || moved.contains(&i) {
                continue;
            }
            let item = items.get_item(i)?;
            let ours = matches!(self.returned.get(i), Some(Some((_, r))) if item.is(r));
            if !ours && !has_marker(&item)? {
                moved.push(i);
            }
        }
        Ok((known, moved))
    }
}

/// What a provider's refusal says of the model's context window ([`Compactor::learn_window`]): from an SDK's
/// exception (its `body`, else its text), an error answer as a dict or JSON text, or a message.
fn refusal_of(
    refusal: &Bound<'_, PyAny>,
    format: WireFormat,
) -> PyResult<Option<ctxfit_compactor::window::Overflow>> {
    use ctxfit_compactor::window::overflow_in_words;
    if let Ok(text) = refusal.extract::<String>() {
        return Ok(match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) if v.is_object() => refusal_in(&v, format),
            _ => overflow_in_words(&text),
        });
    }
    if refusal.is_instance_of::<pyo3::types::PyDict>() {
        let v = crate::json::to_value(refusal, "refusal")?;
        return Ok(refusal_in(&v, format));
    }
    // an SDK's exception: its parsed body, else what it says
    if let Ok(body) = refusal.getattr("body") {
        if body.is_instance_of::<pyo3::types::PyDict>() {
            if let Some(o) = refusal_of(&body, format)? {
                return Ok(Some(o));
            }
        }
    }
    Ok(overflow_in_words(&refusal.str()?.to_string_lossy()))
}

/// The refusal in an error answer: the whole body (`{"error": {...}}`), or the error object alone (OpenAI's SDK
/// keeps that as an exception's `body`).
fn refusal_in(
    value: &serde_json::Value,
    format: WireFormat,
) -> Option<ctxfit_compactor::window::Overflow> {
    let wrapped;
    let body = if value.get("error").is_some() {
        value
    } else {
        wrapped = serde_json::json!({ "error": value });
        &wrapped
    };
    // in the conversation's provider's words, else in the other's (a dict says whose it is by what it holds)
    ctxfit_compactor::window::overflow_of(format, body).or_else(|| {
        let message = body["error"]["message"].as_str()?;
        ctxfit_compactor::window::overflow_in_words(message)
    })
}

fn new_inner(settings: &Settings, estimator_name: &str) -> PyResult<Inner> {
    let registry = crate::registry()?;
    Inner::new(settings.clone(), &registry, estimator(estimator_name)?)
        .map_err(|e| errors::bad_input(e.to_string()))
}

#[pymethods]
impl Compactor {
    #[new]
    #[pyo3(signature = (profile = None, policy = None, agent = None, *, estimator = "fast", format = None))]
    fn new(
        py: Python<'_>,
        profile: Option<&str>,
        policy: Option<&str>,
        agent: Option<&str>,
        estimator: &str,
        format: Option<&str>,
    ) -> PyResult<Self> {
        let settings = settings(profile, policy, agent)?;
        let fixed_format = format.map(wire_format).transpose()?;
        let inner = new_inner(&settings, estimator)?;
        Ok(Compactor {
            settings,
            estimator: estimator.to_owned(),
            fixed_format,
            format_told: false,
            inner,
            conv: Conversation::new(fixed_format.unwrap_or(WireFormat::Anthropic)),
            seen: PyList::empty(py).unbind(),
            sent: PyList::empty(py).unbind(),
            system: None,
            tools: None,
            returned: Vec::new(),
            changes_read: ctxfit_compactor::ChangeMark::default(),
            marked: Vec::new(),
            last_report: None,
            poisoned: false,
        })
    }

    /// The profile's name.
    #[getter]
    fn profile(&self) -> &str {
        &self.settings.profile
    }

    /// The wire format of the conversation: `anthropic`, `openai` or `responses`.
    #[getter]
    fn format(&self) -> &'static str {
        self.conv.format.name()
    }

    /// Pickling: a compactor travels as its effective profile, its estimator, its fixed format and its saved
    /// decisions (`save`); unpickled, it is a compactor of the same profile that has taken them up (`restore`),
    /// and sends, for the same history, the same bytes.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, pyo3::types::PyTuple>)> {
        let py = slf.py();
        let this = slf.try_borrow().map_err(|_| {
            pyo3::exceptions::PyRuntimeError::new_err(
                "this Compactor is in use by another thread: pickle it between requests",
            )
        })?;
        let rebuild = py
            .import("ctxfit._ctxfit")?
            .getattr("_compactor_from_pickle")?;
        let args = (
            this.settings.to_string(),
            this.settings.profile.clone(),
            this.estimator.clone(),
            this.fixed_format.map(|f| f.name()),
            this.save(py)?,
        )
            .into_pyobject(py)?;
        Ok((rebuild, args))
    }

    /// The effective profile as TOML (what `ctxfit policy show` prints).
    #[getter]
    fn settings_toml(&self) -> String {
        self.settings.to_string()
    }

    /// The message list to send instead of `messages` (Anthropic Messages, OpenAI Chat or Responses dicts, or
    /// the SDKs' response objects); `messages` is never changed. Messages sent unchanged are your own objects;
    /// the ones compaction changed are new dicts.
    ///
    /// `input_tokens`: the input tokens the provider reported for the previous request (the budget trigger
    /// uses them). `system`: Anthropic's top-level system prompt (a string or a list of blocks). `tools`: the
    /// request's tool definitions (a list, in any of the three formats' spellings), counted against the budget
    /// as the system prompt is; a new system prompt or tool list starts a new conversation. `sent_at`:
    /// when the request is sent, in seconds since the Unix epoch (default: now); after a pause longer than the
    /// provider's cache lives, the cuts waiting for their turn are made. `cache_ttl`: how long, in seconds, the
    /// provider keeps this request's cache, when its messages do not say. One conversation per Compactor, one
    /// thread at a time.
    #[pyo3(signature = (messages, *, input_tokens = None, system = None, tools = None, sent_at = None, cache_ttl = None))]
    fn compact<'py>(
        slf: &Bound<'py, Self>,
        messages: &Bound<'py, PyAny>,
        input_tokens: Option<Whole>,
        system: Option<&Bound<'py, PyAny>>,
        tools: Option<&Bound<'py, PyAny>>,
        sent_at: Option<Real>,
        cache_ttl: Option<Whole>,
    ) -> PyResult<Bound<'py, PyList>> {
        // one conversation, one caller at a time: a second thread is told so, not "Already borrowed"
        let mut this = slf.try_borrow_mut().map_err(|_| {
            pyo3::exceptions::PyRuntimeError::new_err(
                "this Compactor is in use by another thread: it holds one conversation, compacted one request at \
                 a time — give each thread (each conversation) its own Compactor, or hold a lock around compact()",
            )
        })?;
        crate::message_list("compact", messages)?;
        let input_tokens = input_tokens
            .map(|n| n.get_usize("input_tokens"))
            .transpose()?;
        let cache_ttl = cache_ttl.map(|n| n.get("cache_ttl")).transpose()?;
        // when the request is sent (seconds since the Unix epoch, as `time.time()`): now, unless the caller says
        let sent_at = match sent_at.map(|t| t.get("sent_at")).transpose()? {
            None => ctxfit_compactor::unix_millis(),
            Some(t) if t.is_finite() && t >= 0.0 => (t * 1000.0) as u64,
            Some(t) => {
                return Err(errors::bad_input(format!(
                    "sent_at must be seconds since the Unix epoch (0 or more), got {t}"
                )))
            }
        };
        this.compact_request(Request {
            messages,
            input_tokens,
            system,
            tools,
            sent_at,
            cache_ttl,
        })
    }

    /// The report of the last `compact` call as a dict (`None` before the first).
    #[getter]
    fn last_report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.last_report
            .as_ref()
            .map(|r| {
                let v =
                    serde_json::to_value(r).map_err(|e| PyValueError::new_err(e.to_string()))?;
                to_py(py, &v)
            })
            .transpose()
    }

    /// The provider refused the last request as too long for its model: hold the window its refusal says from
    /// the next call on — call `compact` with the same messages again and send what it returns. `refusal`: the
    /// SDK's exception (`anthropic.BadRequestError`, `openai.BadRequestError`), its `body`, the error answer as
    /// a dict or its JSON text, or its message. Where the refusal says no numbers (the Responses API's), the
    /// window is the request before, which the provider took; each later call's `input_tokens` measures the
    /// rate between the provider's count and this one's again. The request budget it comes to (this
    /// compactor's tokens), or `None` when it is no such refusal or teaches nothing (no budget lower than the
    /// one held: the edits and the newest results alone are above it).
    fn learn_window(&mut self, refusal: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let overflow = refusal_of(refusal, self.conv.format)?;
        Ok(overflow.and_then(|o| self.inner.learn_window(&o)))
    }

    /// The token guard on the last request: its estimated tokens, a `UserWarning` above the profile's warning
    /// threshold, `PromptTooLarge` above its request budget.
    fn check_request(&self, py: Python<'_>) -> PyResult<usize> {
        let report = self
            .last_report
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("no request yet: call compact(messages) first"))?;
        match self.inner.check_request(report) {
            Ok(BudgetStatus::Ok) => Ok(report.tokens_after),
            Ok(BudgetStatus::Warning { tokens, threshold }) => {
                errors::warn(
                    py,
                    &format!(
                        "the request is {} tokens, above the warning threshold of {}",
                        ctxfit_tokens::thousands(tokens),
                        ctxfit_tokens::thousands(threshold)
                    ),
                )?;
                Ok(tokens)
            }
            Err(e) => Err(errors::prompt_too_large(py, &e)),
        }
    }

    /// The compactor's decisions as a JSON-ready dict, to keep across a restart of the agent: a compactor of the
    /// same profile given it with `restore` sends, for the same history, the same bytes as this one would.
    fn save<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = serde_json::to_value(self.inner.save())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        to_py(py, &v)
    }

    /// Take up the decisions `save` gave (before the first `compact` of the restarted agent, which then reads
    /// the whole history once). A state of another profile or version is refused.
    fn restore(&mut self, state: &Bound<'_, PyAny>) -> PyResult<()> {
        let saved: ctxfit_compactor::SavedState = serde_json::from_value(to_value(state, "state")?)
            .map_err(|e| errors::bad_input(format!("state: not a saved compactor state: {e}")))?;
        let py = state.py();
        self.start_over(py, self.conv.format)?;
        self.inner
            .restore(saved)
            .map_err(|e| errors::bad_input(e.to_string()))
    }

    /// The profile's retrieval tool (`retrieval_tool` in the policy), or `None` when it has none.
    #[getter]
    fn retrieval_tool(&self) -> Option<&str> {
        self.settings.retrieval_tool.as_deref()
    }

    /// The retrieval tool's definition, as a dict for the `tools` list of a request in `format` (by default the
    /// conversation's: `anthropic` until messages tell otherwise); `None` when the profile has no retrieval tool.
    #[pyo3(signature = (format = None))]
    fn retrieval_tool_definition<'py>(
        &self,
        py: Python<'py>,
        format: Option<&str>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(name) = self.settings.retrieval_tool.as_deref() else {
            return Ok(None);
        };
        let format = match format {
            Some(f) => wire_format(f)?,
            None => self.conv.format,
        };
        let mut conv = Conversation::new(format);
        conv.tools = Some(vec![ctxfit_compactor::retrieval_tool_definition(
            format, name,
        )]);
        let written = ctxfit_model::to_value(&conv);
        to_py(py, &written["tools"][0]).map(Some)
    }

    /// The original of the tool result a retrieval handle names (`toolu_01`, or `toolu_01#1` for the second
    /// result with a reused id), from the history read so far: its content as the wire format writes it (a
    /// string, or a list of blocks). `None` when no result has that handle.
    fn retrieve<'py>(&self, py: Python<'py>, handle: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        ctxfit_compactor::retrieve(&self.conv, handle)
            .map(|content| to_py(py, &content.to_json()))
            .transpose()
    }

    /// Forget the conversation: the next `compact` starts a new one.
    fn reset(&mut self, py: Python<'_>) -> PyResult<()> {
        self.system = None;
        self.tools = None;
        self.conv.tools = None;
        self.last_report = None;
        self.start_over(py, self.fixed_format.unwrap_or(WireFormat::Anthropic))
    }

    /// Messages read so far.
    fn __len__(&self) -> usize {
        self.conv.messages.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Compactor(profile={:?}, format={:?}, messages={})",
            self.settings.profile,
            self.conv.format.name(),
            self.conv.messages.len()
        )
    }
}

/// A wire format by name.
pub fn wire_format(name: &str) -> PyResult<WireFormat> {
    WireFormat::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown wire format `{name}` (expected anthropic, openai or responses)"
        ))
    })
}

/// `read` of the caller's `new` object (its JSON value), when it is not the object given before (`old`, nor one
/// equal to it); `None` when it is the same, or when there is none.
fn read_if_new<T>(
    new: Option<&Bound<'_, PyAny>>,
    old: &Option<Py<PyAny>>,
    name: &str,
    read: impl FnOnce(Value) -> PyResult<T>,
) -> PyResult<Option<T>> {
    let Some(new) = new else { return Ok(None) };
    if let Some(old) = old {
        if new.is(old) || new.eq(old.bind(new.py()))? {
            return Ok(None);
        }
    }
    read(to_value(new, name)?).map(Some)
}

/// A compactor from what `Compactor.__reduce__` pickled.
#[pyfunction]
pub(crate) fn _compactor_from_pickle(
    py: Python<'_>,
    policy: &str,
    profile: &str,
    estimator: &str,
    format: Option<&str>,
    state: &Bound<'_, PyAny>,
) -> PyResult<Compactor> {
    let mut c = Compactor::new(py, Some(profile), Some(policy), None, estimator, format)?;
    c.restore(state)?;
    Ok(c)
}
