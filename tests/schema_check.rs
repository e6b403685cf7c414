//! The argument checker on the keywords real tool schemas use beyond the basics: local `$ref`s
//! (pydantic and zod emit `$defs`), exclusive bounds, unique and positional items, member
//! counts; and what it leaves alone on purpose (`format`, dangling references).

use floorgate::catalog::JsonPath;
use floorgate::schema::{check_arguments, check_value, MAX_CHECK_STEPS, MAX_REFERENCE_HOPS};
use serde_json::{json, Value};

fn refused(schema: &Value, arguments: Value) -> String {
    match check_arguments(schema, &arguments) {
        Ok(()) => panic!("{arguments} was accepted by {schema}"),
        Err(e) => e.to_string(),
    }
}

fn accepted(schema: &Value, arguments: Value) {
    if let Err(e) = check_arguments(schema, &arguments) {
        panic!("{arguments} was refused: {e}");
    }
}

fn issue_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "issue": { "$ref": "#/$defs/Issue" },
            "labels": { "type": "array", "items": { "$ref": "#/$defs/Label" } }
        },
        "$defs": {
            "Issue": {
                "type": "object",
                "properties": {
                    "title": { "type": "string", "minLength": 1 },
                    "priority": { "$ref": "#/$defs/Priority" }
                },
                "required": ["title"],
                "additionalProperties": false
            },
            "Priority": { "enum": ["low", "high"] },
            "Label": { "type": "string", "maxLength": 5 }
        }
    })
}

#[test]
fn a_local_reference_is_followed_and_its_errors_say_where() {
    let schema = issue_schema();
    accepted(
        &schema,
        json!({"issue": {"title": "db down", "priority": "high"}, "labels": ["ops"]}),
    );
    assert_eq!(
        refused(&schema, json!({"issue": {"title": 7}})),
        "arguments.issue.title: expected a string, got a number"
    );
    assert_eq!(
        refused(
            &schema,
            json!({"issue": {"title": "x", "priority": "urgent"}})
        ),
        r#"arguments.issue.priority: expected one of: "low", "high""#
    );
    assert_eq!(
        refused(&schema, json!({"issue": {}})),
        "arguments.issue.title: required argument is missing"
    );
    assert_eq!(
        refused(&schema, json!({"issue": {"title": "x", "owner": "ada"}})),
        "arguments.issue.owner: unknown argument (expected one of: priority, title)"
    );
    assert_eq!(
        refused(&schema, json!({"labels": ["ops", "database"]})),
        "arguments.labels[1]: must be at most 5 characters"
    );
}

#[test]
fn a_recursive_schema_checks_a_tree_to_its_leaves() {
    let schema = json!({
        "type": "object",
        "properties": { "filter": { "$ref": "#/$defs/Filter" } },
        "$defs": {
            "Filter": {
                "type": "object",
                "properties": {
                    "field": { "type": "string" },
                    "and": { "type": "array", "items": { "$ref": "#/$defs/Filter" } }
                },
                "additionalProperties": false
            }
        }
    });
    accepted(
        &schema,
        json!({"filter": {"and": [{"field": "a"}, {"and": [{"field": "b"}]}]}}),
    );
    assert_eq!(
        refused(
            &schema,
            json!({"filter": {"and": [{"and": [{"field": 3}]}]}})
        ),
        "arguments.filter.and[0].and[0].field: expected a string, got a number"
    );
}

#[test]
fn a_top_level_reference_applies_to_the_whole_call() {
    let schema = json!({
        "$ref": "#/$defs/Args",
        "$defs": {
            "Args": {
                "type": "object",
                "properties": { "n": { "type": "integer", "exclusiveMinimum": 0 } },
                "required": ["n"]
            }
        }
    });
    assert_eq!(
        refused(&schema, json!({})),
        "arguments.n: required argument is missing"
    );
    assert_eq!(
        refused(&schema, json!({"n": 0})),
        "arguments.n: must be more than 0"
    );
}

#[test]
fn pointers_unescape_tilde_slash_and_percent() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": { "$ref": "#/$defs/a~1b" },
            "b": { "$ref": "#/$defs/t~0ilde" },
            "c": { "$ref": "#/$defs/with%20space" },
            "d": { "$ref": "#/$defs/list/1" }
        },
        "$defs": {
            "a/b": { "type": "integer" },
            "t~ilde": { "type": "boolean" },
            "with space": { "type": "null" },
            "list": [ { "type": "string" }, { "type": "number" } ]
        }
    });
    accepted(&schema, json!({"a": 1, "b": true, "c": null, "d": 2.5}));
    assert!(refused(&schema, json!({"a": "1"})).starts_with("arguments.a: expected an integer"));
    assert!(refused(&schema, json!({"b": 1})).starts_with("arguments.b: expected a boolean"));
    assert!(refused(&schema, json!({"c": 1})).starts_with("arguments.c: expected null"));
    assert!(refused(&schema, json!({"d": "x"})).starts_with("arguments.d: expected a number"));
}

#[test]
fn a_reference_to_nothing_or_elsewhere_is_not_enforced() {
    // Notion's published tools point at OpenAPI components their schemas do not carry.
    let schema = json!({
        "type": "object",
        "properties": {
            "parent": { "$ref": "#/components/schemas/parentRequest" },
            "remote": { "$ref": "https://example.com/schema.json" },
            "broken": { "$ref": "#/$defs/%zz" }
        }
    });
    accepted(
        &schema,
        json!({"parent": {"page_id": "x"}, "remote": 1, "broken": [true]}),
    );
}

#[test]
fn a_reference_loop_is_refused_not_followed_forever() {
    let schema = json!({
        "type": "object",
        "properties": { "x": { "$ref": "#/$defs/a" } },
        "$defs": { "a": { "$ref": "#/$defs/b" }, "b": { "$ref": "#/$defs/a" } }
    });
    assert_eq!(
        refused(&schema, json!({"x": 1})),
        format!("arguments.x: the schema's $ref chain is longer than {MAX_REFERENCE_HOPS}")
    );
}

#[test]
fn a_schema_that_branches_back_on_itself_runs_out_of_steps_not_time() {
    // Each level offers two branches that both lead back to the level: 2^depth paths.
    let schema = json!({
        "type": "object",
        "properties": { "x": { "$ref": "#/$defs/n" } },
        "$defs": {
            "n": {
                "anyOf": [
                    { "type": "array", "items": { "$ref": "#/$defs/n" } },
                    { "type": "array", "items": { "$ref": "#/$defs/n" } },
                    { "type": "string" }
                ]
            }
        }
    });
    let mut value = json!(1);
    for _ in 0..40 {
        value = json!([value]);
    }
    assert_eq!(
        refused(&schema, json!({ "x": value })),
        format!("arguments.x: the tool's schema takes more than {MAX_CHECK_STEPS} steps to check")
    );
}

#[test]
fn exclusive_bounds_unique_and_positional_items_member_counts() {
    let schema = json!({
        "type": "object",
        "properties": {
            "ratio": { "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1 },
            "tags": { "type": "array", "uniqueItems": true },
            "pair": {
                "type": "array",
                "prefixItems": [ { "type": "string" }, { "type": "integer" } ],
                "items": false
            },
            "meta": { "type": "object", "minProperties": 1, "maxProperties": 2 }
        }
    });
    accepted(
        &schema,
        json!({"ratio": 0.5, "tags": ["a", "b"], "pair": ["a", 1], "meta": {"k": 1}}),
    );
    assert_eq!(
        refused(&schema, json!({"ratio": 1})),
        "arguments.ratio: must be less than 1"
    );
    assert_eq!(
        refused(&schema, json!({"ratio": 0})),
        "arguments.ratio: must be more than 0"
    );
    assert_eq!(
        refused(&schema, json!({"tags": ["a", {"b": 1}, {"b": 1}]})),
        "arguments.tags[2]: repeats an earlier item (items must be unique)"
    );
    assert_eq!(
        refused(&schema, json!({"pair": [1, 1]})),
        "arguments.pair[0]: expected a string, got a number"
    );
    assert_eq!(
        refused(&schema, json!({"pair": ["a", 1, 2]})),
        "arguments.pair[2]: no value is allowed here"
    );
    assert_eq!(
        refused(&schema, json!({"meta": {}})),
        "arguments.meta: must have at least 1 members"
    );
    assert_eq!(
        refused(&schema, json!({"meta": {"a": 1, "b": 2, "c": 3}})),
        "arguments.meta: must have at most 2 members"
    );
}

#[test]
fn format_is_an_annotation_as_draft_2020_12_defaults() {
    let schema = json!({
        "type": "object",
        "properties": { "when": { "type": "string", "format": "date-time" } }
    });
    accepted(&schema, json!({"when": "next tuesday"}));
}

#[test]
fn a_frozen_value_is_checked_through_the_tools_references() {
    let root = issue_schema();
    let property = &root["properties"]["issue"];
    let path = JsonPath::root().field("issue");
    assert!(check_value(&root, property, &json!({"title": "ok"}), &path).is_ok());
    let error = check_value(&root, property, &json!({"title": ""}), &path).unwrap_err();
    assert_eq!(
        error.to_string(),
        "issue.title: must be at least 1 characters"
    );
}
