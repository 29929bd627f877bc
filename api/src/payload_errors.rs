//! Which field of a JSON body failed, for `details` of a validation error: poem-openapi says
//! what it expected but not where, so the body is checked again against the operation's
//! schema in the OpenAPI document (top-level fields: presence and JSON type).
use serde_json::Value;
use std::sync::OnceLock;

fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(&crate::openapi_json()).unwrap_or(Value::Null))
}

/// The schema object a `$ref` (or an `allOf` of one) points at.
fn resolve(schema: &Value) -> &Value {
    let target = schema
        .get("$ref")
        .or_else(|| schema.pointer("/allOf/0/$ref"))
        .and_then(Value::as_str);
    match target.and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => document().pointer(pointer).unwrap_or(schema),
        None => schema,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn with_article(t: &str) -> String {
    let an = t.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {t}", if an { "an" } else { "a" })
}

/// Whether `v` has the schema's JSON type (unions and untyped schemas accept anything).
fn fits(schema: &Value, v: &Value) -> bool {
    let schema = resolve(schema);
    let Some(ty) = schema.get("type").and_then(Value::as_str) else {
        return true;
    };
    let ok = match (ty, type_name(v)) {
        ("number", "integer") => true,
        (t, found) => t == found,
    };
    ok && match schema.get("enum").and_then(Value::as_array) {
        Some(allowed) => allowed.contains(v),
        None => true,
    }
}

fn describe(schema: &Value) -> String {
    let schema = resolve(schema);
    match (
        schema.get("type").and_then(Value::as_str),
        schema.get("enum").and_then(Value::as_array),
    ) {
        (_, Some(allowed)) => format!(
            "one of {}",
            allowed
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (Some(t), None) => with_article(t),
        (None, None) => "another value".into(),
    }
}

/// `["email: required", "name: expected a string, found an integer"]` for a body that does
/// not fit the request schema of `method path` (path under the API's base); `None` when the
/// body is not a JSON object or no field-level cause is found.
pub fn field_errors(method: &str, path: &str, body: &[u8]) -> Option<Vec<String>> {
    let op = document()
        .get("paths")?
        .get(path)?
        .get(method.to_ascii_lowercase())?;
    let content = op.pointer("/requestBody/content")?.as_object()?;
    let schema = content
        .iter()
        .find(|(ty, _)| ty.starts_with("application/json"))?
        .1
        .get("schema")?;
    let schema = resolve(schema);
    let props = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let given = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(given)) => given,
        Ok(_) => return None,
        Err(e) => return Some(vec![format!("body: not valid JSON ({e})")]),
    };
    let mut out = Vec::new();
    for (name, prop) in props {
        match given.get(name) {
            None | Some(Value::Null) => {
                if required.contains(&name.as_str()) {
                    out.push(format!("{name}: required"));
                }
            }
            Some(v) if !fits(prop, v) => out.push(format!(
                "{name}: expected {}, found {}",
                describe(prop),
                with_article(type_name(v))
            )),
            Some(_) => {}
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::field_errors;

    #[test]
    fn names_the_missing_and_the_ill_typed_fields() {
        let d = field_errors("POST", "/sign-up/email", br#"{"email":5,"password":"x"}"#).unwrap();
        assert!(
            d.contains(&"email: expected a string, found an integer".to_owned()),
            "{d:?}"
        );
        assert!(d.contains(&"name: required".to_owned()), "{d:?}");
        assert!(!d.iter().any(|m| m.starts_with("password")), "{d:?}");
        let d = field_errors(
            "POST",
            "/sign-in/email",
            br#"{"email":"a@b.co","password":"x","rememberMe":"yes"}"#,
        )
        .unwrap();
        assert_eq!(d, ["rememberMe: expected a boolean, found a string"]);
        assert!(field_errors("POST", "/sign-in/email", b"[1]").is_none());
        let d = field_errors("POST", "/sign-in/email", b"{nope").unwrap();
        assert!(d[0].starts_with("body: not valid JSON"), "{d:?}");
        assert!(field_errors("POST", "/no-such-route", b"{}").is_none());
    }
}
