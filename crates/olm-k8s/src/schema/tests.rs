use std::time::{Duration, Instant};

use serde_json::json;

use super::pattern::{Pattern, translate};
use super::*;

/// (schema, object, expected aggregate text; empty when valid). Every expectation was printed by
/// upstream's own code: a Go program (Go 1.26, k8s.io/apiextensions-apiserver v0.34.0,
/// kube-openapi v0.0.0-20250710124328-f3f2b991d03b) that converts the schema as OLM does
/// (`Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation`), decodes the
/// object with apimachinery's `utiljson.Unmarshal` (int64/float64 like an unstructured object), and
/// prints `validation.ValidateCustomResource(field.NewPath(""), obj,
/// validation.NewSchemaValidator(...)).ToAggregate().Error()`. Each vector was run 30 times there
/// to check that Go's random map order cannot change its text. The first three are the texts
/// OLM's `TestValidateExistingCRs` / `TestValidateV1CRDCompatibility` expect.
const VECTORS: &[(&str, &str, &str)] = &[
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"scalar":{"type":"integer","minimum":3}}}}}"#,
        r#"{"apiVersion":"cluster.com/v1alpha1","kind":"testcrd","metadata":{"name":"my-cr-1"},"spec":{"scalar":2}}"#,
        r#"[].spec.scalar: Invalid value: 2: spec.scalar in body should be greater than or equal to 3"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer","maximum":9}}}}}"#,
        r#"{"spec":{"replicas":10}}"#,
        r#"[].spec.replicas: Invalid value: 10: spec.replicas in body should be less than or equal to 9"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"clusterDeploymentRef":{"type":"object","properties":{"name":{"type":"string"}}},"name":{"type":"string"},"platform":{"type":"object"}},"required":["clusterDeploymentRef","name","platform"]}}}"#,
        r#"{"spec":{"clusterDeploymentRef":null}}"#,
        r#"[[].spec.clusterDeploymentRef: Invalid value: "null": spec.clusterDeploymentRef in body must be of type object: "null", [].spec.name: Required value, [].spec.platform: Required value]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer"}}}}}"#,
        r#"{"spec":{"a":"3"}}"#,
        r#"[].spec.a: Invalid value: "string": spec.a in body must be of type integer: "string""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer"}}}}}"#,
        r#"{"spec":{"a":3.0}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer"}}}}}"#,
        r#"{"spec":{"a":1.5}}"#,
        r#"[].spec.a: Invalid value: "number": spec.a in body must be of type integer: "number""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"number"}}}}}"#,
        r#"{"spec":{"a":7}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"boolean"}}}}}"#,
        r#"{"spec":{"a":[]}}"#,
        r#"[].spec.a: Invalid value: "array": spec.a in body must be of type boolean: "array""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","nullable":true}}}}}"#,
        r#"{"spec":{"a":null}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"array"}}}}}"#,
        r#"{"spec":{"a":null}}"#,
        r#"[].spec.a: Invalid value: "null": spec.a in body must be of type array: "null""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"x-kubernetes-int-or-string":true}}}}}"#,
        r#"{"spec":{"a":true}}"#,
        r#"[].spec.a: Invalid value: "boolean": spec.a in body must be of type integer,string: "boolean""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"x-kubernetes-int-or-string":true,"maxLength":2}}}}}"#,
        r#"{"spec":{"a":"abc"}}"#,
        r#"[].spec.a: Too long: may not be more than 2 bytes"#,
    ),
    (
        r#"{"type":"string"}"#,
        r#"{"kind":"X"}"#,
        r#"[]: Invalid value: "object":  in body must be of type string: "object""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","enum":["Always","Never"]}}}}}"#,
        r#"{"spec":{"a":"Sometimes"}}"#,
        r#"[].spec.a: Unsupported value: "Sometimes": supported values: "Always", "Never""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"enum":[1,1.5,true,null,{"k":"<v>"},[1]]}}}}}"#,
        r#"{"spec":{"a":{"z":[1,2],"a":"x"}}}"#,
        r#"[].spec.a: Unsupported value: {"a":"x","z":[1,2]}: supported values: "1", "1.5", "true", "null", "{\"k\":\"\\u003cv\\u003e\"}", "[1]""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"enum":["a","b"]}}}}}"#,
        r#"{"spec":{"a":null}}"#,
        r#"[].spec.a: Unsupported value: null: supported values: "a", "b""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"enum":["a"]}}}}}"#,
        r#"{"spec":{"a":97}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"enum":[1]}}}}}"#,
        r#"{"spec":{"a":1.9}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"number","minimum":3,"exclusiveMinimum":true}}}}}"#,
        r#"{"spec":{"a":3}}"#,
        r#"[].spec.a: Invalid value: 3: spec.a in body should be greater than 3"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"number","maximum":2.5,"exclusiveMaximum":true}}}}}"#,
        r#"{"spec":{"a":2.5}}"#,
        r#"[].spec.a: Invalid value: 2.5: spec.a in body should be less than 2.5"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"number","maximum":2.5}}}}}"#,
        r#"{"spec":{"a":3}}"#,
        r#"[].spec.a: Invalid value: 3: spec.a in body should be less than or equal to 2"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"number","minimum":1000000}}}}}"#,
        r#"{"spec":{"a":0.5}}"#,
        r#"[].spec.a: Invalid value: 0.5: spec.a in body should be greater than or equal to 1e+06"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer","multipleOf":3}}}}}"#,
        r#"{"spec":{"a":10}}"#,
        r#"[].spec.a: Invalid value: 10: spec.a in body should be a multiple of 3"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"number","multipleOf":0.5}}}}}"#,
        r#"{"spec":{"a":1.25}}"#,
        r#"[].spec.a: Invalid value: 1.25: spec.a in body should be a multiple of 0.5"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer","multipleOf":0.5}}}}}"#,
        r#"{"spec":{"a":3}}"#,
        r#"[].spec.a: Invalid value: 0: factor MultipleOf declared for spec.a must be positive: 0"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer","multipleOf":2,"minimum":10,"maximum":1}}}}}"#,
        r#"{"spec":{"a":5}}"#,
        r#"[[].spec.a: Invalid value: 5: spec.a in body should be a multiple of 2, [].spec.a: Invalid value: 5: spec.a in body should be greater than or equal to 10, [].spec.a: Invalid value: 5: spec.a in body should be less than or equal to 1]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","maxLength":1}}}}}"#,
        r#"{"spec":{"a":"h\u00e9\u00e9"}}"#,
        r#"[].spec.a: Too long: may not be more than 1 byte"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","maxLength":3}}}}}"#,
        r#"{"spec":{"a":"h\u00e9\u00e9"}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","minLength":4,"pattern":"^x"}}}}}"#,
        r#"{"spec":{"a":"abc"}}"#,
        r#"[].spec.a: Invalid value: "abc": spec.a in body should be at least 4 chars long"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}}}}}"#,
        r#"{"spec":{"a":"Bad_Name"}}"#,
        r#"[].spec.a: Invalid value: "Bad_Name": spec.a in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","pattern":"^\\d+$"}}}}}"#,
        r#"{"spec":{"a":"\u0661\u0662"}}"#,
        r#"[].spec.a: Invalid value: "١٢": spec.a in body should match '^\d+$'"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","pattern":"(a"}}}}}"#,
        r#"{"spec":{"a":"a"}}"#,
        r#"[].spec.a: Invalid value: "a": spec.a in body should match '(a, but pattern is invalid: error parsing regexp: missing closing ): `(a`'"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","pattern":"[a-"}}}}}"#,
        r#"{"spec":{"a":"a"}}"#,
        r#"[].spec.a: Invalid value: "a": spec.a in body should match '[a-, but pattern is invalid: error parsing regexp: missing closing ]: `[a-`'"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","pattern":"x**"}}}}}"#,
        r#"{"spec":{"a":"x"}}"#,
        r#"[].spec.a: Invalid value: "x": spec.a in body should match 'x**, but pattern is invalid: error parsing regexp: invalid nested repetition operator: `**`'"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","pattern":"^a{,2}$"}}}}}"#,
        r#"{"spec":{"a":"a{,2}"}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","pattern":"^(?i)abc$"}}}}}"#,
        r#"{"spec":{"a":"ABC"}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"array","maxItems":1,"minItems":3,"uniqueItems":true}}}}}"#,
        r#"{"spec":{"a":[{"x":1},{"x":1}]}}"#,
        r#"[[].spec.a: Invalid value: 2: spec.a in body should have at least 3 items, [].spec.a: Too many: 2: must have at most 1 item, [].spec.a: Invalid value: "": spec.a in body shouldn't contain duplicates]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}}}"#,
        r#"{"spec":{"a":[1,1.0]}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","required":["name"],"properties":{"port":{"type":"integer","maximum":65535}}}}}}}}"#,
        r#"{"spec":{"a":[{"name":"x","port":70000},{"port":1}]}}"#,
        r#"[[].spec.a[0].port: Invalid value: 70000: spec.a[0].port in body should be less than or equal to 65535, [].spec.a[1].name: Required value]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"object","maxProperties":1,"minProperties":3}}}}}"#,
        r#"{"spec":{"a":{"x":1,"y":2}}}"#,
        r#"[[].spec.a: Invalid value: 2: spec.a in body should have at least 3 properties, [].spec.a: Too many: 2: must have at most 1 item]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"object","additionalProperties":false,"properties":{"x":{"type":"string"}}}}}}}"#,
        r#"{"spec":{"a":{"x":"1","y":2}}}"#,
        r#"[].spec.a: Invalid value: "y": spec.a.y in body is a forbidden property"#,
    ),
    (
        r#"{"type":"object","additionalProperties":{"type":"string"}}"#,
        r#"{"a":1}"#,
        r#"[].a: Invalid value: "integer": .a in body must be of type string: "integer""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"object","additionalProperties":{"type":"integer","minimum":0}}}}}}"#,
        r#"{"spec":{"a":{"k":-1}}}"#,
        r#"[].spec.a.k: Invalid value: -1: spec.a.k in body should be greater than or equal to 0"#,
    ),
    (
        r#"{"type":"object","required":["spec"]}"#,
        r#"{"apiVersion":"v1","kind":"X","metadata":{"name":"x","labels":{"a":"b"}}}"#,
        r#"[].spec: Required value"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}}"#,
        r#"{"spec":{"a":"x","unknown":{"deep":true}},"status":{"anything":1}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","maxLength":3}}}}}"#,
        r#"{"metadata":{"name":"toolong"}}"#,
        r#"[].metadata.name: Too long: may not be more than 3 bytes"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-embedded-resource":true,"x-kubernetes-validations":[{"rule":"false"}],"default":{"a":1}}}}"#,
        r#"{"spec":{"b":2}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer","minimum":5}]}}}}}"#,
        r#"{"spec":{"a":3}}"#,
        r#"[[]: Invalid value: "": "spec.a" must validate at least one schema (anyOf), [].spec.a: Invalid value: 3: spec.a in body should be greater than or equal to 5]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"oneOf":[{"type":"integer"},{"minimum":1}]}}}}}"#,
        r#"{"spec":{"a":3}}"#,
        r#"[]: Invalid value: "": "spec.a" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer","maximum":1}]}}}}}"#,
        r#"{"spec":{"a":3}}"#,
        r#"[[]: Invalid value: "": "spec.a" must validate one and only one schema (oneOf). Found none valid, [].spec.a: Invalid value: 3: spec.a in body should be less than or equal to 1]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"allOf":[{"minimum":10},{"minimum":10},{"maximum":1}]}}}}}"#,
        r#"{"spec":{"a":5}}"#,
        r#"[[].spec.a: Invalid value: 5: spec.a in body should be greater than or equal to 10, [].spec.a: Invalid value: 5: spec.a in body should be less than or equal to 1, []: Invalid value: "": "spec.a" must validate all the schemas (allOf). None validated]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"not":{"type":"integer"}}}}}}"#,
        r#"{"spec":{"a":5}}"#,
        r#"[]: Invalid value: "": "spec.a" must not validate the schema (not)"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"object","oneOf":[{"required":["x"]},{"required":["y"]}]}}}}}"#,
        r#"{"spec":{"a":{"z":1}}}"#,
        r#"[[]: Invalid value: "": "spec.a" must validate one and only one schema (oneOf). Found none valid, [].spec.a.x: Required value]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"date-time"}}}}}"#,
        r#"{"spec":{"a":"2020-01-01 10:00:00"}}"#,
        r#"[].spec.a: Invalid value: "2020-01-01 10:00:00": spec.a in body must be of type date-time: "2020-01-01 10:00:00""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"date-time"}}}}}"#,
        r#"{"spec":{"a":"2020-01-01T10:00:00.5+01:00"}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"date"}}}}}"#,
        r#"{"spec":{"a":"2021-02-29"}}"#,
        r#"[].spec.a: Invalid value: "2021-02-29": spec.a in body must be of type date: "2021-02-29""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"uuid"}}}}}"#,
        r#"{"spec":{"a":"not-a-uuid"}}"#,
        r#"[].spec.a: Invalid value: "not-a-uuid": spec.a in body must be of type uuid: "not-a-uuid""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"byte"}}}}}"#,
        r#"{"spec":{"a":""}}"#,
        r#"[].spec.a: Invalid value: "": spec.a in body must be of type byte: """#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer","format":"int32"}}}}}"#,
        r#"{"spec":{"a":99999999999}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer","format":"uuid"}}}}}"#,
        r#"{"spec":{"a":1.5}}"#,
        r#"[].spec.a: Invalid value: "float64": spec.a in body must be of type uuid: "float64""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"format":"date"}}}}}"#,
        r#"{"spec":{"a":{}}}"#,
        r#"[].spec.a: Invalid value: "": spec.a in body must be of type date: """#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"email"}}}}}"#,
        r#"{"spec":{"a":"John Doe <john@example.com>"}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"email"}}}}}"#,
        r#"{"spec":{"a":"john@"}}"#,
        r#"[].spec.a: Invalid value: "john@": spec.a in body must be of type email: "john@""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"uri"}}}}}"#,
        r#"{"spec":{"a":"example.com/path"}}"#,
        r#"[].spec.a: Invalid value: "example.com/path": spec.a in body must be of type uri: "example.com/path""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"hostname"}}}}}"#,
        r#"{"spec":{"a":"my-host"}}"#,
        r#"[].spec.a: Invalid value: "my-host": spec.a in body must be of type hostname: "my-host""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"ipv4"}}}}}"#,
        r#"{"spec":{"a":"010.1.1.1"}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"ipv6"}}}}}"#,
        r#"{"spec":{"a":"::ffff:010.1.1.1"}}"#,
        r#"[].spec.a: Invalid value: "::ffff:010.1.1.1": spec.a in body must be of type ipv6: "::ffff:010.1.1.1""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"cidr"}}}}}"#,
        r#"{"spec":{"a":"10.0.0.0/33"}}"#,
        r#"[].spec.a: Invalid value: "10.0.0.0/33": spec.a in body must be of type cidr: "10.0.0.0/33""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"duration"}}}}}"#,
        r#"{"spec":{"a":"5 minutes"}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"duration"}}}}}"#,
        r#"{"spec":{"a":"3 months"}}"#,
        r#"[].spec.a: Invalid value: "3 months": spec.a in body must be of type duration: "3 months""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","format":"k8s-short-name"}}}}}"#,
        r#"{"spec":{"a":"Not_A_Name"}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"array","format":"date"}}}}}"#,
        r#"{"spec":{"a":["x"]}}"#,
        r#""#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["c","d"]}}}"#,
        r#"{"spec":{"a":1}}"#,
        r#"[[].spec.a: Invalid value: "integer": spec.a in body must be of type string: "integer", [].spec.c: Required value, [].spec.d: Required value]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"list":{"type":"array","items":{"type":"string","maxLength":1}}}}}}"#,
        r#"{"spec":{"list":["ab","ab","c","de"]}}"#,
        r#"[[].spec.list[0]: Too long: may not be more than 1 byte, [].spec.list[1]: Too long: may not be more than 1 byte, [].spec.list[3]: Too long: may not be more than 1 byte]"#,
    ),
    (
        r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}}}"#,
        r#"{"spec":{"a":"quote\" and \\ and \u00e9 and \u200b"}}"#,
        r#"[].spec.a: Invalid value: "quote\" and \\ and é and \u200b": spec.a in body should match '^x'"#,
    ),
];

/// (format, values upstream accepts, values it rejects), printed by the same Go program.
#[rustfmt::skip]
const FORMATS: &[(&str, &[&str], &[&str])] = &[
    ("date", &["2020-01-01", "2020-02-29", "0000-01-01", "9999-12-31", "2000-02-29"], &["2021-02-29", "2020-13-01", "2020-00-10", "2020-1-01", "20200101", "2020-01-32", "2020-04-31", "2020-01-01 ", "1900-02-29"]),
    ("date-time", &["2020-01-01T10:00:00Z", "2020-01-01t10:00:00z", "2020-01-01T10:00:00.123Z", "2020-01-01T10:00:00+01:00", "2020-01-01T10:00:00x5Z", "2020-01-01T10:00:00é5Z", "2020-01-01T10:00:00ZT", "2020-01-01T10:00:00.5+01:00"], &["2020-01-01T24:00:00Z", "2020-01-01T23:60:00Z", "2020-01-01T10:00:00", "2020-01-01T10:00:00.Z", "2020-01-01", "T10:00:00Z", "2020-01-01T10:00:00+0100", "2020-01-01T1:00:00Z", "2020-01-01TT10:00:00Z", "abc"]),
    ("byte", &["QQ==", "QUI=", "QUJD", "QUJDRA==", "a+/b", "QUJDQQ=="], &["", "QQ=", "Q===", "a-_b", "QUJD\n", "===="]),
    ("uuid", &["123e4567-e89b-12d3-a456-426614174000", "123E4567E89B12D3A456426614174000", "123e4567e89b-12d3-a456426614174000"], &["123e4567-e89b-12d3-a456-42661417400", "123e4567-e89b-12d3-a456-4266141740000", "123e4567--e89b-12d3-a456-426614174000", "g23e4567-e89b-12d3-a456-426614174000", ""]),
    ("uuid3", &["123e4567-e89b-32d3-a456-426614174000"], &["123e4567-e89b-42d3-a456-426614174000"]),
    ("uuid4", &["123e4567-e89b-42d3-a456-426614174000", "123e4567-e89b-42d3-B456-426614174000"], &["123e4567-e89b-42d3-c456-426614174000"]),
    ("uuid5", &["123e4567-e89b-52d3-8456-426614174000"], &["123e4567-e89b-52d3-7456-426614174000"]),
    ("email", &["a@b.c", "a@b", "a.b@c", "\"a b\"@c", "Name <a@b.c>", "<a@b.c>", "a@b.c (comment)", "a@[1.2.3.4]", "a@[::1]", "group: a@b;", "a@ b", "\"a\\\"b\"@c", "Ünïcode@example.com", "John Doe <john@example.com>", "\"John\" <john@example.com>", "a@b (c) (d)"], &["a..b@c", ".a@b", "a.@b", "\"\"@c", "a@b.c (unclosed", "a@[300.1.1.1]", "a@[01.1.1.1]", "group:;", "group: a@b, c@d;", "a@b, c@d", "", "a", "@b", "a@", "a @b", "a@b..c", "john@example.com>", "(c) a@b", "a(b)@c", "x <a@b> y"]),
    ("uri", &["http://example.com", "http://example.com/path?q=1#frag", "/abs/path", "mailto:a@b", "*", "http:", "http://", "http://[::1]:80/", "http://[::1%25eth0]/", "http://host:80:90/", "http://us%2er@host/", "http://h%C3%A9st/", "http://host/pa th", "a:b", "//host/path", "http://host?x", "http://user@pass@host/", "foo:/bar", "HTTP://EXAMPLE.COM", "http://exa_mple.com", "http://host/é", "http://hôst/", "ftp://host:/x", "http://[fe80::1%25en0]:8080/", "http://[fe80::1%25%41]/", "http://[fe80::1%25%20]/"], &["rel/path", "", "http://[1.2.3.4]/", "http://[zz]/", "http://[::1%25]/", "http://a[b]/", "http://host:port/", "http://user:pa ss@host/", "http://h%41st/", "http://ho st/", "http://host/%zz", "http://host/%2", "1http://x", "http://h{o}st/", "?q", "http://[::1]x/", "http://[::1]/%", "http://[fe80::1%25%C3]/"]),
    ("hostname", &["example.com", "localhost", "a", "a-b", "a-", "a.co", "xn--bcher-kva.example", "sub.my-host.com", "例え.テスト", "é", "é.com", "a$b", "a.éé", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "abc.d-e.fgh", "a-b-c.com", "$.com"], &["my-host", "ab-c", "-a", "a.b", "a.b1", "a.c", "a..b", "a.b.", "my_host.com", "1.2.3.4", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "a.b-c", "host.domain-.com"]),
    ("ipv4", &["1.2.3.4", "01.2.3.4", "001.002.003.004", "0001.2.3.4", "::ffff:1.2.3.4"], &["256.1.1.1", "1.2.3", "1.2.3.4.5", "::1", "1.2.3.4 ", "", "1..2.3", "a.b.c.d", "1.2.3.4%eth0"]),
    ("ipv6", &["::1", "::", "1::", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4", "1:2:3:4:5:6:7::", "::1:2:3:4:5:6:7", "1:2:3:4:5:6:1.2.3.4", "0:0:0:0:0:0:0:0"], &["1:2:3:4:5:6:7:8:9", "::ffff:01.2.3.4", "1.2.3.4", "fe80::1%eth0", "00001::", "1::2::3", "1:2:3:4:5:1.2.3.4", "g::1", ":1", "1:", "12345::"]),
    ("cidr", &["10.0.0.0/8", "010.0.0.0/8", "::/0", "::/128", "10.0.0.0/08", "fe80::/0000010"], &["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0", "1.2.3.4/-1", "10.0.0.0/8 "]),
    ("mac", &["01:23:45:67:89:ab", "01-23-45-67-89-ab", "0123.4567.89ab", "0123456789ab", "01:23:45:67:89:ab:cd:ef", "0123.4567.89ab.cdef", "01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67"], &["01:23:45:67:89", "01:23-45:67:89:ab", "01:23:45:67:89:gh", "0123456789abcd"]),
    ("isbn", &["0321751043", "978-0321751041", "0-321-75104-3", "978 0321751041"], &["032175104X", "0321751044", "9780321751042"]),
    ("isbn10", &["0321751043", "080442957X"], &["978-0321751041"]),
    ("isbn13", &["9780321751041"], &["0321751043"]),
    ("creditcard", &["4111111111111111", "4111 1111 1111 1111", "5500000000000004", "340000000000009", "30000000000004", "6011000000000004", "3530111333300000", "4222222222222", "abc4111111111111111x", "36000000000008"], &["4111-1111-1111-1112", "1800000000000002", "2131000000000008", "5600000000000004"]),
    ("ssn", &["123-45-6789", "123 45 6789", "123-45 6789"], &["123456789", "123-456789", "123-45-678", "12a-45-6789"]),
    ("hexcolor", &["#fff", "fff", "#ffffff", "#FfF"], &["#ffff", "#gggggg", ""]),
    ("rgbcolor", &["rgb(0,0,0)", "rgb(255, 255, 255)", "rgb( 1 , 2 , 3 )", "rgb(\t1,2,3)", "rgb(199,249,200)"], &["rgb(256,0,0)", "rgb(01,2,3)", "rgb(1,2)", "RGB(1,2,3)", "rgb(1,2,3) ", "rgb(00,0,0)"]),
    ("duration", &["1h", "1h30m", "1.5h", "-1s", "0", "+0", "1d", "5 minutes", "2 weeks", "abc 5s xyz", "1μs", "1µs", "5 sec", "10 NANO", "1hour", "1 hr", "1.h", "5\ts", "1w2d", "5 mins"], &["", "1", "3 months", "99999999999999999999h", "99999999999999999999 d", "3x", "5\u{b}s", "ms"]),
    ("bsonobjectid", &["507f1f77bcf86cd799439011", "507F1F77BCF86CD799439011"], &["507f1f77bcf86cd79943901", "507f1f77bcf86cd79943901g"]),
    ("password", &["anything", ""], &[]),
];

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn upstream_vectors() {
    assert!(VECTORS.len() >= 30);
    for (schema, object, expected) in VECTORS {
        let errors = validate(&parse(schema), &parse(object));
        let got = aggregate(&errors).unwrap_or_default();
        assert_eq!(&got, expected, "schema {schema}\nobject {object}");
    }
}

#[test]
fn olm_prefix_composes_like_upstream() {
    let (schema, object, _) = VECTORS[2];
    let text = aggregate(&validate(&parse(schema), &parse(object))).unwrap();
    assert_eq!(
        format!(
            "error validating hive.openshift.io/v1, Kind=MachinePool \"test\": updated validation is too restrictive: {text}"
        ),
        "error validating hive.openshift.io/v1, Kind=MachinePool \"test\": updated validation is too restrictive: [[].spec.clusterDeploymentRef: Invalid value: \"null\": spec.clusterDeploymentRef in body must be of type object: \"null\", [].spec.name: Required value, [].spec.platform: Required value]"
    );
}

#[test]
fn field_errors_expose_path_and_kind() {
    let (schema, object, _) = VECTORS[2];
    let errors = validate(&parse(schema), &parse(object));
    let summary: Vec<(&str, ErrorKind)> = errors.iter().map(|e| (e.path(), e.kind())).collect();
    assert_eq!(
        summary,
        [
            ("[].spec.clusterDeploymentRef", ErrorKind::Invalid),
            ("[].spec.name", ErrorKind::Required),
            ("[].spec.platform", ErrorKind::Required),
        ]
    );
}

#[test]
fn aggregate_prints_like_utilerrors() {
    let schema = json!({"type": "object", "required": ["a", "b"]});
    let errors = validate(&schema, &json!({}));
    assert_eq!(aggregate(&[]), None);
    assert_eq!(
        aggregate(&errors[..1]).as_deref(),
        Some("[].a: Required value")
    );
    let twice = [errors[0].clone(), errors[0].clone()];
    assert_eq!(aggregate(&twice).as_deref(), Some("[].a: Required value"));
    assert_eq!(
        aggregate(&errors).as_deref(),
        Some("[[].a: Required value, [].b: Required value]")
    );
}

#[test]
fn properties_report_in_name_order() {
    // Go visits properties in random order (the oracle prints either); ours is sorted by name.
    let schema = json!({"type": "object", "properties": {
        "z": {"type": "string"}, "a": {"type": "string"}, "m": {"type": "string"}}});
    let errors = validate(&schema, &json!({"z": 1, "m": 2, "a": 3}));
    let paths: Vec<&str> = errors.iter().map(FieldError::path).collect();
    assert_eq!(paths, ["[].a", "[].m", "[].z"]);
}

/// A schema `levels` deep in `properties`, and an object following it.
fn nested(levels: usize) -> (Value, Value) {
    let mut schema = json!({"type": "integer"});
    let mut object = json!("not a number");
    for _ in 0..levels {
        schema = json!({"type": "object", "properties": {"p": schema}});
        object = json!({ "p": object });
    }
    (schema, object)
}

#[test]
fn deep_schemas_stop_at_the_depth_limit() {
    let (schema, object) = nested(MAX_DEPTH);
    let errors = validate(&schema, &object);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind(), ErrorKind::Invalid);

    let (schema, object) = nested(MAX_DEPTH + 10);
    let errors = validate(&schema, &object);
    olm_goenc::json::drop_value(schema);
    olm_goenc::json::drop_value(object);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind(), ErrorKind::Internal);
    assert!(errors[0].to_string().ends_with(&format!(
        ": Internal error: schema nests deeper than {MAX_DEPTH} levels; not validated"
    )));
}

#[test]
fn work_stops_at_the_visit_budget() {
    // Every anyOf branch sees every item: branches times items visits.
    let branches: Vec<Value> = (0..100)
        .map(|i| json!({"type": "integer", "minimum": i + 1000}))
        .collect();
    let schema = json!({"type": "array", "items": {"anyOf": branches}});
    let object = Value::Array((0..100).map(|i| json!(i)).collect());
    let full = validate(&schema, &object);
    assert_eq!(full.len(), 200);
    let stopped = SchemaValidator::new(&schema).validate_within(&object, 1000);
    let text = aggregate(&stopped).unwrap();
    assert!(
        text.contains("[]: Internal error: validation stopped after 1000 steps"),
        "{text}"
    );
    assert!(stopped.len() < full.len());
}

#[test]
fn deep_values_do_not_recurse() {
    // uniqueItems and enum compare whole values; a value nested 100,000 deep must not overflow.
    let mut deep = json!(1);
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let object = Value::Array(vec![olm_goenc::json::clone_value(&deep), deep]);
    let schema = json!({"type": "array", "uniqueItems": true, "items": {"enum": [1]}});
    let text = aggregate(&validate(&schema, &object)).unwrap();
    // serde_json drops recursively: free the value before an assertion can unwind past it.
    olm_goenc::json::drop_value(object);
    assert!(
        text.starts_with("[[].[0]: Unsupported value: [[[["),
        "{}",
        &text[..40]
    );
    assert!(text.ends_with("[]: Invalid value: \"\":  in body shouldn't contain duplicates]"));
}

#[test]
fn large_lists_validate_in_milliseconds() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "pattern": "^[a-z0-9-]+$", "maxLength": 63},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "mode": {"type": "string", "enum": ["a", "b"]}}}}}}}});
    let items: Vec<Value> = (0..10_000)
        .map(|i| json!({"name": format!("item-{i}"), "port": 1 + i % 60_000, "mode": "a"}))
        .collect();
    let object = json!({"spec": {"items": items}});
    let start = Instant::now();
    assert!(validate(&schema, &object).is_empty());
    let took = start.elapsed();
    // Milliseconds in a release build; the bound leaves room for unoptimized test builds.
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn patterns_translate_go_syntax() {
    for (go, rust) in [
        (r"^\d+\w\s$", r"^[0-9]+[0-9A-Za-z_][\t\n\f\r ]$"),
        (r"\bx\B", r"(?-u:\b)x(?-u:\B)"),
        (r"a{,2}}", r"a\{,2\}\}"),
        (r"[]a[&~\d-]", r"[\]a\[\&\~[0-9]\-]"),
        (r"\Qa.b\E\101\x41", r"a\.b\x{41}\x{41}"),
        (r"a(?i)*(?P<n>b)(?P<n>c)", r"a*(?i)(b)(c)"),
    ] {
        assert_eq!(translate(go).as_deref(), Ok(rust), "{go}");
    }
    for (go, why) in [
        ("a)", "unexpected ): `a)`"),
        ("*a", "missing argument to repetition operator: `*`"),
        ("a*??", "invalid nested repetition operator: `*??`"),
        ("a{2,1}", "invalid repeat count: `{2,1}`"),
        (r"\8", r"invalid escape sequence: `\8`"),
        ("[z-a]", "invalid character class range: `z-a`"),
        ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
        ("(?x)", "invalid or unsupported Perl syntax: `(?x`"),
        ("(?P<a-b>x)", "invalid named capture: `(?P<a-b>`"),
        ("a\\", "trailing backslash at end of expression: ``"),
    ] {
        assert_eq!(translate(go), Err(why.to_owned()), "{go}");
    }
}

#[test]
fn patterns_fall_back_to_ascii_matching() {
    // Builds without the regex crate's Unicode case tables compile `(?i)` byte-wise.
    let go = "(?i)^[a-f]+$";
    let fallback = Pattern::ascii(go, &translate(go).unwrap());
    assert_eq!(fallback.is_match("BeEf"), Ok(true));
    assert_eq!(fallback.is_match("beefy"), Ok(false));
    let unsupported = Pattern::ascii(r"\pL", r"\pL");
    assert!(unsupported.is_match("a").is_err());
}

#[test]
fn formats_match_upstream() {
    for (format, accepted, rejected) in FORMATS {
        let schema = json!({"type": "string", "format": format});
        for v in *accepted {
            assert_eq!(validate(&schema, &json!(v)), [], "{format} {v:?}");
        }
        for v in *rejected {
            let text = aggregate(&validate(&schema, &json!(v)));
            let want = format!(
                "[]: Invalid value: {q}:  in body must be of type {format}: {q}",
                q = quote(v)
            );
            assert_eq!(text, Some(want), "{format} {v:?}");
        }
    }
}
