//! A rule's parameters, read through serde: one way for every rule, built in or a team's own.

use ctxfit_model::Value;
use serde::de::DeserializeOwned;

use crate::RuleConfigError;

/// Read a rule's `params` table into `T`: a struct deriving `Deserialize` with `#[serde(default,
/// deny_unknown_fields)]`, whose fields are the parameters and whose `Default` is the rule's. No table (`null`)
/// is `T::default()`. A misspelt parameter is an error naming the ones the rule takes, never silently ignored; a
/// parameter of the wrong type is named with what it must be.
///
/// ```
/// use ctxfit_retention::read_params;
/// use ctxfit_model::Value;
///
/// #[derive(serde::Deserialize)]
/// #[serde(default, deny_unknown_fields)]
/// struct Params {
///     rows: usize,
/// }
/// impl Default for Params {
///     fn default() -> Self {
///         Params { rows: 5 }
///     }
/// }
///
/// let p: Params = read_params("sql-query", &serde_json::json!({"rows": 3})).unwrap();
/// assert_eq!(p.rows, 3);
/// assert_eq!(read_params::<Params>("sql-query", &Value::Null).unwrap().rows, 5);
/// let err = read_params::<Params>("sql-query", &serde_json::json!({"row": 3})).err().unwrap();
/// assert_eq!(err.to_string(), "rule `sql-query`: unknown parameter `row` (expected: rows)");
/// let err = read_params::<Params>("sql-query", &serde_json::json!({"rows": "many"})).err().unwrap();
/// assert_eq!(err.to_string(), "rule `sql-query`: `rows` must be a non-negative integer");
/// ```
pub fn read_params<T: DeserializeOwned + Default>(
    rule: &str,
    params: &Value,
) -> Result<T, RuleConfigError> {
    let map = match params {
        Value::Null => return Ok(T::default()),
        Value::Object(map) => map,
        _ => return Err(RuleConfigError::new(rule, "params must be a table")),
    };
    // read from the text: serde's messages then name the value and the type (`arbitrary_precision` numbers in a
    // `Value` say only "invalid number")
    let whole = match serde_json::from_str::<T>(&params.to_string()) {
        Ok(t) => return Ok(t),
        Err(e) => e.to_string(),
    };
    if let Some(rest) = whole.strip_prefix("unknown field `") {
        let (name, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        let message = if known.is_empty() {
            format!("takes no parameters (found `{name}`)")
        } else {
            format!(
                "unknown parameter `{name}` (expected: {})",
                known.join(", ")
            )
        };
        return Err(RuleConfigError::new(rule, message));
    }
    // which parameter it is: the first that fails alone
    for (k, v) in map {
        let alone = Value::Object([(k.clone(), v.clone())].into_iter().collect());
        if let Err(e) = serde_json::from_str::<T>(&alone.to_string()) {
            return Err(RuleConfigError::new(
                rule,
                format!("`{k}` {}", must_be(&e.to_string())),
            ));
        }
    }
    Err(RuleConfigError::new(rule, whole))
}

/// What serde's "invalid type: string \"many\", expected usize" asks for, in the words a policy's author reads.
fn must_be(message: &str) -> String {
    let Some((_, expected)) = message.rsplit_once(", expected ") else {
        return format!("is not valid: {message}");
    };
    let expected = expected.split(" at line ").next().unwrap_or(expected);
    format!("must be {}", type_in_words(expected))
}

/// serde's name of what it expected (`usize`, `a sequence`) in the words a policy's author reads (`a
/// non-negative integer`, `a list`); anything else as it is.
pub fn type_in_words(expected: &str) -> &str {
    match expected {
        "usize" | "u64" | "u32" | "u16" | "u8" => "a non-negative integer",
        "isize" | "i64" | "i32" => "an integer",
        "f64" | "f32" => "a number",
        "a boolean" => "true or false",
        "a sequence" => "a list",
        "a map" => "a table",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct P {
        keep: usize,
        ratio: f64,
        on: bool,
        name: String,
        scope: Scope,
        list: Vec<String>,
    }

    #[derive(serde::Deserialize, Debug, PartialEq, Default)]
    #[serde(rename_all = "lowercase")]
    enum Scope {
        #[default]
        Tool,
        All,
    }

    impl Default for P {
        fn default() -> Self {
            P {
                keep: 3,
                ratio: 0.5,
                on: true,
                name: "x".into(),
                scope: Scope::Tool,
                list: vec![],
            }
        }
    }

    #[derive(serde::Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    struct None_ {}

    fn err<T: DeserializeOwned + Default>(v: serde_json::Value) -> String {
        match read_params::<T>("r", &v) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{v} was accepted"),
        }
    }

    #[test]
    fn parameters_are_read_with_their_defaults() {
        let p: P = read_params("r", &serde_json::json!({"keep": 7, "scope": "all"})).unwrap();
        assert_eq!((p.keep, p.scope, p.ratio), (7, Scope::All, 0.5));
        assert_eq!(read_params::<P>("r", &Value::Null).unwrap(), P::default());
    }

    #[test]
    fn each_fault_is_named_in_the_policy_s_words() {
        for (params, message) in [
            (
                serde_json::json!({"kep": 1}),
                "rule `r`: unknown parameter `kep` (expected: keep, ratio, on, name, scope, list)",
            ),
            (
                serde_json::json!({"keep": -1}),
                "rule `r`: `keep` must be a non-negative integer",
            ),
            (
                serde_json::json!({"keep": 1, "ratio": "half"}),
                "rule `r`: `ratio` must be a number",
            ),
            (
                serde_json::json!({"on": "yes"}),
                "rule `r`: `on` must be true or false",
            ),
            (
                serde_json::json!({"name": 3}),
                "rule `r`: `name` must be a string",
            ),
            (
                serde_json::json!({"scope": "some"}),
                "rule `r`: `scope` must be `tool` or `all`",
            ),
            (
                serde_json::json!({"list": "a"}),
                "rule `r`: `list` must be a list",
            ),
            (serde_json::json!([1]), "rule `r`: params must be a table"),
        ] {
            assert_eq!(err::<P>(params), message);
        }
        assert_eq!(
            err::<None_>(serde_json::json!({"x": 1})),
            "rule `r`: takes no parameters (found `x`)"
        );
    }
}
