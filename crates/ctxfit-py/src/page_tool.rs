//! `ctxfit.PageTool`: the page tool as an agent registers it — its definition for the Anthropic and OpenAI
//! APIs, and the handler of the model's calls (`ctxfit_webfetch::tool`).

use ctxfit_webfetch::tool::{PageTool as Tool, ToolFormat, TOOL_NAME};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::args::{Real, Whole};
use crate::errors::unknown;
use crate::json::{to_py, to_value};
use crate::{fetch_options, shielded};

/// The page tool for an agent: `definition(format)` goes into the request's `tools`, and calling the object
/// with the model's input (a dict, or an OpenAI call's `arguments` text) fetches the page and returns the
/// result dict to hand back as the tool's result. Bad input from the model is a result with `success: False`
/// saying what to fix, never an exception.
#[pyclass(module = "ctxfit._ctxfit", frozen)]
pub struct PageTool {
    tool: Tool,
}

#[pymethods]
impl PageTool {
    #[new]
    #[pyo3(signature = (
        strip_level = "moderate",
        max_chars = Whole::of(ctxfit_webfetch::DEFAULT_MAX_CHARS as u64),
        *,
        max_chars_limit = None,
        timeout = Real::of(30.0),
        max_bytes = Whole::of(10 << 20),
        allow_private = false,
        allow_addresses = None,
        cache_pages = Whole::of(4),
        cache_seconds = Real::of(300.0),
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        strip_level: &str,
        max_chars: Whole,
        max_chars_limit: Option<Whole>,
        timeout: Real,
        max_bytes: Whole,
        allow_private: bool,
        allow_addresses: Option<Vec<String>>,
        cache_pages: Whole,
        cache_seconds: Real,
    ) -> PyResult<PageTool> {
        let max_chars = max_chars.at_least_usize("max_chars", 1)?;
        let max_chars_limit =
            (max_chars_limit.map(|m| m.at_least_usize("max_chars_limit", 1))).transpose()?;
        let max_bytes = max_bytes.get("max_bytes")?;
        let cache_pages = cache_pages.get_usize("cache_pages")?;
        let cache_seconds = cache_seconds.seconds("cache_seconds")?.unwrap_or_default();
        let net = crate::Net {
            timeout,
            max_bytes,
            allow_private,
            allow_addresses,
        };
        let options = fetch_options(strip_level, max_chars, None, net)?;
        let mut tool = Tool::new(options).with_page_cache(cache_pages, cache_seconds);
        if let Some(limit) = max_chars_limit {
            tool = tool.with_max_chars_limit(limit);
        }
        Ok(PageTool { tool })
    }

    /// The tool's name, as the model calls it.
    #[getter]
    fn name(&self) -> &'static str {
        TOOL_NAME
    }

    /// The largest `max_chars` the model may ask for.
    #[getter]
    fn max_chars_limit(&self) -> usize {
        self.tool.max_chars_limit()
    }

    /// The definition for a request's `tools`: `"anthropic"` (`name`, `description`, `input_schema`),
    /// `"openai-chat"` (`{"type": "function", "function": {...}}`) or `"openai-responses"`.
    #[pyo3(signature = (format = "anthropic"))]
    fn definition<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyAny>> {
        let format = ToolFormat::parse(format).ok_or_else(|| {
            let names: Vec<&str> = ToolFormat::ALL.iter().map(|f| f.name()).collect();
            unknown("format", format, &names)
        })?;
        to_py(py, &self.tool.definition(format))
    }

    /// Handle one call: `input` is the `tool_use` block's `input` dict, or an OpenAI call's `arguments` text.
    /// Returns the result dict (seed 003's fields); `json.dumps` it into the tool result's content.
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let result = if let Ok(text) = input.cast::<PyString>() {
            let text = text.to_cow()?.into_owned();
            py.detach(|| shielded("PageTool", || self.tool.call_json(&text)))?
        } else {
            let value = to_value(input, "input")?;
            py.detach(|| shielded("PageTool", || self.tool.call(&value)))?
        };
        let v = serde_json::to_value(&result).map_err(|e| PyValueError::new_err(e.to_string()))?;
        to_py(py, &v)
    }

    fn __repr__(&self) -> String {
        let o = self.tool.options();
        format!(
            "PageTool(strip_level={:?}, max_chars={}, max_chars_limit={})",
            o.strip_level.name(),
            o.max_chars,
            self.tool.max_chars_limit()
        )
    }
}
