//! A server tool's input schema, and the schemas within it (its
//! properties', its items', those it combines), checked as the providers
//! check them: both
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

/// A server's schema as the providers take it, if it is an object's as
/// the spec has it (`"type": "object"`, added if the server left it out;
/// `properties`, if there, an object of schemas; `required`, if there, a
/// list of names; each schema within it one JSON Schema allows): no
/// `$schema` key, and always `properties` (OpenAI refuses an object schema
/// without). Both providers check a schema against JSON Schema's own and
/// refuse the whole request over one that fails, such as
/// `"properties": {"path": "string"}`.
pub(super) fn input_schema(schema: &Map<String, Value>) -> Option<Value> {
    let mut schema = schema.clone();
    schema.remove("$schema");
    match schema.get("type") {
        None => {
            schema.insert("type".to_owned(), Value::from("object"));
        }
        Some(Value::String(kind)) if kind == "object" => {}
        Some(_) => return None,
    }
    // Its own `required` and `properties` are checked as any schema's
    // (an empty list as `properties` made an empty object on the way).
    let mut schema = Value::Object(schema);
    if !valid(&mut schema, 0) {
        return None;
    }
    if let Value::Object(map) = &mut schema {
        map.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    }
    Some(schema)
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
        let Value::Object(schema) = schema else { panic!("an object") };
        input_schema(&schema)
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
        let made = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}});
        assert_eq!(checked(schema), Some(made));
    }
}
