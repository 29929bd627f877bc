//! The OpenAPI document: poem-openapi's, with what the wire does that it cannot say (optional
//! properties `nullable`, the error codes and audit actions as enums).
use crate::{audit, error, plugins, Apis, BASE_PATH};
use poem_openapi::OpenApiService;

/// The OpenAPI service with every operation; also what `gatehouse openapi` prints.
pub fn openapi_service() -> OpenApiService<Apis, ()> {
    OpenApiService::new(plugins::apis(), "Gatehouse", env!("CARGO_PKG_VERSION"))
        .description(
            "Authentication, account and organization server speaking better-auth's HTTP API. \
         Errors are `{code, message}` JSON bodies.",
        )
        .server(BASE_PATH)
}

/// The OpenAPI document as committed in `openapi/openapi.json` and served at
/// `/api/auth/openapi.json`: poem-openapi's, with every optional property marked `nullable`,
/// because the wire sends `null` for an absent value (and accepts it).
pub fn openapi_json() -> String {
    let raw = openapi_service().spec();
    let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(&raw) else {
        return raw;
    };
    nullable_optionals(&mut doc);
    error_code_enum(&mut doc);
    audit_action_enum(&mut doc);
    serde_json::to_string_pretty(&doc).unwrap_or(raw)
}

/// The API's route templates under [`BASE_PATH`], from the OpenAPI document.
pub(crate) fn api_paths() -> Vec<String> {
    serde_json::from_str::<serde_json::Value>(&openapi_service().spec())
        .ok()
        .and_then(|doc| {
            doc.get("paths")
                .and_then(serde_json::Value::as_object)
                .map(|paths| paths.keys().cloned().collect())
        })
        .unwrap_or_default()
}

/// Types `Error.code` as the enum of every code the server sends ([`error::Code::ALL`]), so a
/// client's table of messages can be checked complete by its compiler.
fn error_code_enum(doc: &mut serde_json::Value) {
    let codes: std::collections::BTreeSet<&str> =
        error::Code::ALL.iter().map(|c| c.code()).collect();
    if let Some(code) = doc
        .pointer_mut("/components/schemas/Error/properties/code")
        .and_then(serde_json::Value::as_object_mut)
    {
        code.insert("enum".into(), serde_json::json!(codes));
    }
}

/// Types `AuditEvent.action` as the enum of every action recorded ([`audit::action::ALL`]), so
/// a client's labels for them can be checked complete by its compiler too.
fn audit_action_enum(doc: &mut serde_json::Value) {
    if let Some(action) = doc
        .pointer_mut("/components/schemas/AuditEvent/properties/action")
        .and_then(serde_json::Value::as_object_mut)
    {
        action.insert("enum".into(), serde_json::json!(audit::action::ALL));
    }
}

/// Marks the properties that are not `required` (`Option<T>` fields) as `nullable`; a `$ref`
/// is wrapped in `allOf`, since OpenAPI 3.0 ignores a reference's siblings.
fn nullable_optionals(doc: &mut serde_json::Value) {
    use serde_json::{json, Value};
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for schema in schemas.values_mut() {
        // poem-openapi types every union as an object, also one of a string or a list
        // (`role: "admin" | ["admin", "user"]`): such a union has no single type.
        let scalar_union = schema
            .get("oneOf")
            .and_then(Value::as_array)
            .is_some_and(|alts| {
                alts.iter()
                    .any(|a| a.get("type").is_some_and(|t| t != "object"))
            });
        if scalar_union {
            if let Some(obj) = schema.as_object_mut() {
                obj.remove("type");
            }
        }
        let required: Vec<String> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        for (name, prop) in props.iter_mut() {
            if required.contains(name) {
                continue;
            }
            let Some(obj) = prop.as_object_mut() else {
                continue;
            };
            if let Some(reference) = obj.remove("$ref") {
                obj.insert("allOf".into(), json!([{ "$ref": reference }]));
            }
            obj.insert("nullable".into(), Value::Bool(true));
        }
    }
}
