//! The schemas within a server tool's input schema (its properties', its
//! items', those it combines), checked as the providers check them: both
//! OpenAI and Anthropic check a tool's whole schema against JSON Schema's
//! own and refuse every request that lists a tool with one that fails,
//! however deep (`{"type": "object", "properties": {"path": "string"}}`
//! as a property's schema).
//!
//! Only what JSON Schema plainly does not allow is refused (a `type` that
//! is no type's name, a schema that is neither an object nor a boolean, a
//! `required` that is not a list of names), so that no schema a provider
//! takes is refused here; an empty list as `properties`, as PHP writes an
//! empty object, is made one.

use serde_json::{Map, Value};

/// The names JSON Schema's `type` takes.
const TYPES: [&str; 7] = ["null", "boolean", "object", "array", "number", "string", "integer"];

/// Keywords whose value is one schema.
const ONE: [&str; 11] = [
    "additionalProperties",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "items",
];

/// Keywords whose value is a list of schemas.
const LIST: [&str; 4] = ["anyOf", "allOf", "oneOf", "prefixItems"];

/// Keywords whose value is an object of schemas.
const BY_NAME: [&str; 5] = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];

/// Whether each schema within `schema` (not `schema`'s own keywords, which
/// the caller checks) is one JSON Schema allows; a `properties` written as
/// an empty list is made an empty object on the way.
pub(super) fn nested_valid(schema: &mut Map<String, Value>) -> bool {
    within_valid(schema, 0)
}

/// Whether `schema` is a schema JSON Schema allows, as far as checked
/// here, and each schema within it too; `depth` schemas deep.
fn valid(schema: &mut Value, depth: usize) -> bool {
    let schema = match schema {
        Value::Bool(_) => return true,
        Value::Object(schema) => schema,
        _ => return false,
    };
    let type_valid = match schema.get("type") {
        None => true,
        Some(Value::String(kind)) => TYPES.contains(&kind.as_str()),
        Some(Value::Array(kinds)) => {
            !kinds.is_empty() && kinds.iter().all(|kind| kind.as_str().is_some_and(|kind| TYPES.contains(&kind)))
        }
        Some(_) => false,
    };
    let required_valid = match schema.get("required") {
        None => true,
        Some(Value::Array(names)) => names.iter().all(Value::is_string),
        Some(_) => false,
    };
    type_valid && required_valid && within_valid(schema, depth)
}

/// Whether each schema within `schema`'s keywords is [`valid`].
fn within_valid(schema: &mut Map<String, Value>, depth: usize) -> bool {
    // The JSON was read with serde's limit of 128 levels: no schema is
    // deeper, but the walk does not rely on it.
    if depth > 128 {
        return false;
    }
    if schema.get("properties").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        schema.insert("properties".to_owned(), Value::Object(Map::new()));
    }
    for (keyword, value) in schema.iter_mut() {
        let keyword = keyword.as_str();
        let fine = if ONE.contains(&keyword) {
            // `items` as a list of schemas, as drafts before 2020-12 have it.
            match value {
                Value::Array(schemas) if keyword == "items" => schemas.iter_mut().all(|s| valid(s, depth + 1)),
                schema => valid(schema, depth + 1),
            }
        } else if LIST.contains(&keyword) {
            match value {
                Value::Array(schemas) => !schemas.is_empty() && schemas.iter_mut().all(|s| valid(s, depth + 1)),
                _ => false,
            }
        } else if BY_NAME.contains(&keyword) {
            match value {
                Value::Object(schemas) => schemas.values_mut().all(|s| valid(s, depth + 1)),
                _ => false,
            }
        } else {
            true
        };
        if !fine {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn checked(schema: Value) -> Option<Value> {
        let Value::Object(mut schema) = schema else { panic!("an object") };
        nested_valid(&mut schema).then_some(Value::Object(schema))
    }

    #[test]
    fn schemas_json_schema_allows_are_taken() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "Where"},
            "mode": {"type": ["string", "null"], "enum": ["r", "w"]},
            "lines": {"type": "array", "items": {"type": "integer"}},
            "pair": {"type": "array", "items": [{"type": "string"}, true]},
            "any": true,
            "either": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/point"}]},
            "meta": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"],
                     "additionalProperties": false},
        }, "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
           "x-vendor": [1, 2, 3], "examples": [{"path": "a"}]});
        assert_eq!(checked(schema.clone()), Some(schema));
    }

    #[test]
    fn a_nested_schema_json_schema_refuses_is_refused_however_deep() {
        for schema in [
            json!({"properties": {"a": "string"}}),
            json!({"properties": {"a": {"type": "object", "properties": {"b": "string"}}}}),
            json!({"properties": {"a": {"type": "strin"}}}),
            json!({"properties": {"a": {"type": ["string", 5]}}}),
            json!({"properties": {"a": {"type": []}}}),
            json!({"properties": {"a": {"type": "array", "items": "string"}}}),
            json!({"properties": {"a": {"type": "array", "items": [{"type": "string"}, 1]}}}),
            json!({"properties": {"a": {"anyOf": []}}}),
            json!({"properties": {"a": {"oneOf": {"type": "string"}}}}),
            json!({"properties": {"a": {"type": "object", "required": "b"}}}),
            json!({"properties": {"a": {"additionalProperties": "no"}}}),
            json!({"$defs": {"p": {"type": "dict"}}}),
            json!({"properties": {"a": {"properties": ["b"]}}}),
        ] {
            assert_eq!(checked(schema.clone()), None, "{schema}");
        }
    }

    #[test]
    fn an_empty_list_as_properties_is_an_empty_object_at_any_depth() {
        let schema = json!({"properties": {"a": {"type": "object", "properties": []}}});
        assert_eq!(checked(schema), Some(json!({"properties": {"a": {"type": "object", "properties": {}}}})));
    }
}
