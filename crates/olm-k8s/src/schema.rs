//! Validation of a custom resource against a CRD version's `openAPIV3Schema`, with the field
//! errors Kubernetes reports: what apiextensions-apiserver's `ValidateCustomResource` (over
//! kube-openapi's `SchemaValidator`) returns, rendered as `field.Error` and `utilerrors.Aggregate`
//! print them.
//!
//! Why: before OLM v0 upgrades a CRD it checks that every existing custom resource still validates
//! under the new schema, and it prints upstream's aggregate text in the InstallPlan's condition
//! (`[].spec.scalar: Invalid value: 2: spec.scalar in body should be greater than or equal to 3`).
//! Users and tests compare that text with upstream's, so the messages, the paths, the order of
//! the errors and the quirks are kube-openapi's (see `validate` for the ones we keep, and the
//! tests for the vectors, each printed by upstream's own code).
//!
//! What it is not: the apiserver's admission path. No pruning, defaulting, CEL rules
//! (`x-kubernetes-validations`), list-type or embedded-resource checks: `ValidateCustomResource`
//! does none of them either. Unknown fields, `apiVersion`, `kind` and `metadata` are checked only
//! as far as the schema itself describes them. Keywords structural schemas forbid (`$ref`,
//! `patternProperties`, `dependencies`, tuple `items`) are ignored.
//!
//! Where it differs from upstream, on purpose: properties of one object are reported in name
//! order (Go's map order is random); schemas nest at most [`MAX_DEPTH`] levels and one validation
//! takes at most [`MAX_VISITS`] steps (upstream has no limits, we must not overflow the stack or
//! hang); a `pattern` Go accepts but the regex crate cannot run in this build (`\p{Greek}` without
//! Unicode tables) is reported as invalid; `hostname`'s non-ASCII letters and symbols are
//! approximated; `email` does not decode RFC 2047 words.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write};
use std::hash::{BuildHasherDefault, Hasher};

use olm_goenc::json::{write_f64, write_str, write_str_html};
use olm_goenc::quote;
use olm_goenc::yaml::go_format_g;
use serde_json::{Map, Number, Value};

use pattern::Pattern;

mod format;
mod pattern;
#[cfg(test)]
mod tests;

/// How many schemas deep validation goes (properties, items, allOf… each count one). Upstream has
/// no limit; we need one so a hostile schema cannot exhaust the stack. Real CRDs stay far below.
pub const MAX_DEPTH: usize = 64;

/// How many (schema, value) pairs one validation may visit. Upstream has no limit; the work grows
/// with the schema's size times the object's (every anyOf branch sees the whole value), and a
/// custom resource etcd can store (1.5 MiB) under a real CRD needs far fewer visits.
pub const MAX_VISITS: usize = 1 << 23;

/// One validation failure, rendered as Kubernetes renders a `field.Error`:
/// `<path>: <kind>[: <value>][: <detail>]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    path: String,
    kind: ErrorKind,
    value: Option<String>,
    detail: String,
}

/// The `field.ErrorType` of a [`FieldError`]: which words follow the path, and whether the value
/// is printed. Only the types `ValidateCustomResource` produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `Required value`: a property in `required` is absent.
    Required,
    /// `Invalid value: <value>`: any other constraint, including type mismatches.
    Invalid,
    /// `Unsupported value: <value>`: not in `enum`; the detail lists the allowed values.
    NotSupported,
    /// `Too long`: longer than `maxLength` (the value is not printed).
    TooLong,
    /// `Too many: <count>`: more than `maxItems` items or `maxProperties` properties.
    TooMany,
    /// `Internal error`: the schema nests deeper than [`MAX_DEPTH`] or validation takes more than
    /// [`MAX_VISITS`] steps; not an upstream error.
    Internal,
}

impl ErrorKind {
    fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Required => "Required value",
            ErrorKind::Invalid => "Invalid value",
            ErrorKind::NotSupported => "Unsupported value",
            ErrorKind::TooLong => "Too long",
            ErrorKind::TooMany => "Too many",
            ErrorKind::Internal => "Internal error",
        }
    }
}

impl FieldError {
    /// The field path as upstream prints it: `[]` (the root `field.NewPath("")`) then `.spec.x`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The error type, for callers that classify failures without parsing the text.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.kind.as_str())?;
        if let Some(v) = &self.value {
            write!(f, ": {v}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Validates `object` against `schema` (a CRD version's `openAPIV3Schema`, as JSON) the way
/// `ValidateCustomResource(field.NewPath(""), object, validator)` does; errors in upstream's order
/// (empty: valid).
///
/// Upstream's order, except where Go's map iteration makes it random: properties of one object
/// are visited in byte order of their names here. A schema that is not an object validates
/// everything; keywords of the wrong JSON type are ignored (Go would not have decoded the CRD).
pub fn validate(schema: &Value, object: &Value) -> Vec<FieldError> {
    SchemaValidator::new(schema).validate(object)
}

/// Schema nodes as read once, by address.
type Nodes<'a> = HashMap<usize, Node<'a>, BuildHasherDefault<AddrHasher>>;

/// One schema prepared for many objects (every custom resource of a CRD version): its nodes
/// are read and its `pattern`s compiled once, not once per object.
pub struct SchemaValidator<'a> {
    schema: &'a Value,
    nodes: Nodes<'a>,
    patterns: HashMap<String, Pattern>,
}

impl<'a> SchemaValidator<'a> {
    /// A validator for `schema` (a CRD version's `openAPIV3Schema`, as JSON).
    pub fn new(schema: &'a Value) -> SchemaValidator<'a> {
        SchemaValidator {
            schema,
            nodes: HashMap::default(),
            patterns: HashMap::new(),
        }
    }

    /// [`validate`] with what earlier calls prepared.
    pub fn validate(&mut self, object: &'a Value) -> Vec<FieldError> {
        self.validate_within(object, MAX_VISITS)
    }

    /// [`SchemaValidator::validate`] with a visit budget other than [`MAX_VISITS`].
    fn validate_within(&mut self, object: &'a Value, budget: usize) -> Vec<FieldError> {
        let mut v = Validator {
            nodes: &mut self.nodes,
            patterns: &mut self.patterns,
            visits: 0,
            budget,
        };
        let res = v.node(self.schema, object, &Path::Root, 0);
        // kube-openapi's `Result.AddErrors` drops an error whose text it already holds, at every
        // merge; dropping repeats once at the end keeps the same first occurrences.
        let mut seen = HashSet::new();
        res.errs
            .into_iter()
            .filter(|e| seen.insert(e.message.clone()))
            .map(OErr::into_field_error)
            .collect()
    }
}

/// Go's aggregate text of the errors (`None` when there are none), as
/// `field.ErrorList.ToAggregate().Error()` prints it: one error alone, several as `[e1, e2]`,
/// repeated texts once.
pub fn aggregate(errors: &[FieldError]) -> Option<String> {
    let mut seen = HashSet::new();
    let texts: Vec<String> = errors
        .iter()
        .map(ToString::to_string)
        .filter(|t| seen.insert(t.clone()))
        .collect();
    match texts.len() {
        0 => None,
        1 => texts.into_iter().next(),
        _ => Some(format!("[{}]", texts.join(", "))),
    }
}

/// A kube-openapi error code, as far as the conversion to `field.Error` tells them apart.
#[derive(Clone, Copy, PartialEq)]
enum Code {
    /// Not an `errors.Validation` (anyOf, oneOf, allOf, not): reported at the root path.
    Composite,
    InvalidType,
    Required,
    TooLong,
    Enum,
    /// `MaxItemsFailCode` and `TooManyPropertiesCode`.
    TooMany,
    Depth,
    Other,
}

/// A `Validation.Value`, kept as Go's dynamic type so it prints as `field.Error` prints it.
#[derive(Clone, Copy)]
enum Bad<'a> {
    Nil,
    Text(&'a str),
    Int(i64),
    Float(f64),
    Data(&'a Value),
}

/// One kube-openapi error: its `Name` (the path as kube-openapi spells it), its text (also the
/// key upstream deduplicates by), and what the conversion to `field.Error` reads.
struct OErr<'a> {
    code: Code,
    name: String,
    message: String,
    value: Bad<'a>,
    /// `Validation.Valid`: the limit of TooLong / TooMany.
    limit: i64,
    /// The `enum` of an Enum failure.
    values: &'a [Value],
}

impl<'a> OErr<'a> {
    fn new(code: Code, name: String, message: String, value: Bad<'a>) -> Self {
        OErr {
            code,
            name,
            message,
            value,
            limit: 0,
            values: &[],
        }
    }

    /// kube-openapi's `errors.InvalidType` with a string value, the only kind it gets here.
    fn invalid_type(path: &Path<'_>, type_name: &str, value: &'a str) -> Self {
        let name = path.to_string();
        let message = format!(
            "{name} in body must be of type {type_name}: {}",
            quote(value)
        );
        OErr::new(Code::InvalidType, name, message, Bad::Text(value))
    }

    fn other(path: &Path<'_>, tail: fmt::Arguments<'_>, value: Bad<'a>) -> Self {
        let name = path.to_string();
        let message = format!("{name} in body {tail}");
        OErr::new(Code::Other, name, message, value)
    }

    /// An anyOf/oneOf/allOf/not failure: `"<path>" must validate …`.
    fn composite(path: &Path<'_>, tail: fmt::Arguments<'_>) -> Self {
        let message = format!("{} {tail}", quote(&path.to_string()));
        OErr::new(Code::Composite, String::new(), message, Bad::Nil)
    }

    /// apiextensions' `kubeOpenAPIResultToFieldErrors` for this error.
    fn into_field_error(self) -> FieldError {
        let path = match self.code {
            Code::Composite => "[]".to_owned(),
            _ if self.name.is_empty() || self.name == "." => "[]".to_owned(),
            _ => format!("[].{}", self.name.strip_prefix('.').unwrap_or(&self.name)),
        };
        let plural = |n: i64, one: &str, many: &str| if n == 1 { one } else { many }.to_owned();
        let (kind, value, detail) = match self.code {
            Code::Required => (ErrorKind::Required, None, String::new()),
            Code::Enum => {
                let values: Vec<String> = self
                    .values
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => quote(s),
                        other => quote(&go_json(other, false)),
                    })
                    .collect();
                let detail = format!("supported values: {}", values.join(", "));
                (ErrorKind::NotSupported, Some(render(self.value)), detail)
            }
            Code::TooLong => {
                let detail = if self.limit >= 0 {
                    let unit = plural(self.limit, "byte", "bytes");
                    format!("may not be more than {} {unit}", self.limit)
                } else {
                    "value is too long".to_owned()
                };
                (ErrorKind::TooLong, None, detail)
            }
            Code::TooMany => {
                let detail = if self.limit >= 0 {
                    let unit = plural(self.limit, "item", "items");
                    format!("must have at most {} {unit}", self.limit)
                } else {
                    "has too many items".to_owned()
                };
                (ErrorKind::TooMany, Some(render(self.value)), detail)
            }
            Code::Depth => (ErrorKind::Internal, None, self.message),
            Code::Composite | Code::InvalidType | Code::Other => {
                let value = match self.value {
                    Bad::Nil => Bad::Text(""),
                    v => v,
                };
                (ErrorKind::Invalid, Some(render(value)), self.message)
            }
        };
        FieldError {
            path,
            kind,
            value,
            detail,
        }
    }
}

/// A value as `field.Error.ErrorBody` prints it: strings quoted, numbers and booleans with `%v`,
/// anything else (nil, maps, slices) as `json.Marshal` writes it.
fn render(v: Bad<'_>) -> String {
    match v {
        Bad::Nil => "null".to_owned(),
        Bad::Text(s) => quote(s),
        Bad::Int(i) => i.to_string(),
        Bad::Float(f) => go_format_g(f),
        Bad::Data(Value::String(s)) => quote(s),
        Bad::Data(Value::Number(n)) => match go_num(n) {
            GoNum::Int(i) => i.to_string(),
            GoNum::Float(f) => go_format_g(f),
        },
        Bad::Data(v) => go_json(v, false),
    }
}

/// A JSON number as Go's unstructured decoding holds it: `int64` when it fits, else `float64`.
#[derive(Clone, Copy)]
enum GoNum {
    Int(i64),
    Float(f64),
}

fn go_num(n: &Number) -> GoNum {
    match n.as_i64() {
        Some(i) => GoNum::Int(i),
        None => GoNum::Float(n.as_f64().unwrap_or(0.0)),
    }
}

/// Go's `int64(f)` on amd64: truncation, and `math.MinInt64` when out of range.
fn go_f2i(f: f64) -> i64 {
    // 2^63: i64::MIN is exact as a float, i64::MAX is not.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// go-openapi's `swag.IsFloat64AJSONInteger` as it behaves on amd64: integral values, and
/// positive values within a relative 1e-9 of the integer below them.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let g = f.trunc();
    if f == g {
        return true;
    }
    // Negative fractions: Go's uint64 conversion wraps, so no relative check can pass.
    f > 0.0 && g != 0.0 && (f - g) / (f + g) < 1e-9
}

/// `v` as Go writes it: `json.Marshal` (sorted keys, HTML escaping) or, with `canonical`, a key
/// that tells `int64` from `float64` so that equal keys mean `reflect.DeepEqual`. Iterative, so
/// however deep the object nests the stack does not grow.
fn go_json(v: &Value, canonical: bool) -> String {
    enum Item<'v> {
        Val(&'v Value),
        Key(&'v str),
        Raw(&'static str),
    }
    let mut out = String::new();
    let mut todo = vec![Item::Val(v)];
    while let Some(item) = todo.pop() {
        match item {
            Item::Raw(s) => out.push_str(s),
            Item::Key(k) => {
                write_json_str(&mut out, k, canonical);
                out.push(':');
            }
            Item::Val(Value::Null) => out.push_str("null"),
            Item::Val(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Item::Val(Value::String(s)) => write_json_str(&mut out, s, canonical),
            Item::Val(Value::Number(n)) => match (go_num(n), canonical) {
                (GoNum::Int(i), c) => {
                    let _ = write!(out, "{}{i}", if c { "i" } else { "" });
                }
                // DeepEqual compares floats with ==, so -0 equals 0.
                (GoNum::Float(f), true) => {
                    let _ = write!(out, "f{}", (f + 0.0).to_bits());
                }
                (GoNum::Float(f), false) => {
                    let _ = write_f64(&mut out, f);
                }
            },
            Item::Val(Value::Array(a)) => {
                out.push('[');
                todo.push(Item::Raw("]"));
                for (i, x) in a.iter().enumerate().rev() {
                    todo.push(Item::Val(x));
                    if i > 0 {
                        todo.push(Item::Raw(","));
                    }
                }
            }
            Item::Val(Value::Object(m)) => {
                out.push('{');
                todo.push(Item::Raw("}"));
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for (i, k) in keys.iter().enumerate().rev() {
                    todo.push(Item::Val(&m[k.as_str()]));
                    todo.push(Item::Key(k));
                    if i > 0 {
                        todo.push(Item::Raw(","));
                    }
                }
            }
        }
    }
    out
}

fn write_json_str(out: &mut String, s: &str, canonical: bool) {
    if canonical {
        write_str(out, s)
    } else {
        write_str_html(out, s)
    }
}

/// Whether kube-openapi's enum check accepts `data` for enum value `ev`: `reflect.DeepEqual`
/// after converting `data` to the enum value's Go type when Go allows it (so 1.5 matches 1, and
/// 97 matches "a"), and never for null.
fn enum_matches(data: &Value, ev: &Value) -> bool {
    match (data, ev) {
        (Value::Number(d), Value::Number(e)) => match (go_num(d), go_num(e)) {
            (GoNum::Int(a), GoNum::Int(b)) => a == b,
            (GoNum::Int(a), GoNum::Float(b)) => a as f64 == b,
            (GoNum::Float(a), GoNum::Int(b)) => go_f2i(a) == b,
            (GoNum::Float(a), GoNum::Float(b)) => a == b,
        },
        (Value::Number(d), Value::String(e)) => match go_num(d) {
            // Go's string(rune(i)): U+FFFD for anything that is not a scalar value.
            GoNum::Int(a) => {
                let c = u32::try_from(a).ok().and_then(char::from_u32);
                let mut buf = [0u8; 4];
                c.unwrap_or('\u{fffd}').encode_utf8(&mut buf) == e.as_str()
            }
            GoNum::Float(_) => false,
        },
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
            go_json(data, true) == go_json(ev, true)
        }
        _ => false,
    }
}

/// Where a value sits, spelled as kube-openapi spells it (`spec.list[0].name`) only when an error
/// needs it, so valid values cost no string building.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    /// A property: joined with a dot unless what precedes spells empty (the root).
    Prop(&'p Path<'p>, &'p str),
    /// An `additionalProperties` key: always joined with a dot (`.key` at the root).
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl Path<'_> {
    fn write(&self, out: &mut String) {
        let start = out.len();
        match *self {
            Path::Root => {}
            Path::Prop(parent, name) => {
                parent.write(out);
                if out.len() > start {
                    out.push('.');
                }
                out.push_str(name);
            }
            Path::Key(parent, name) => {
                parent.write(out);
                out.push('.');
                out.push_str(name);
            }
            Path::Index(parent, i) => {
                parent.write(out);
                let _ = write!(out, "[{i}]");
            }
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write(&mut s);
        f.write_str(&s)
    }
}

/// kube-openapi's `Result`: errors and the `MatchCount` that picks which failed `anyOf`/`oneOf`
/// branch explains the failure.
#[derive(Default)]
struct Res<'a> {
    errs: Vec<OErr<'a>>,
    count: usize,
}

impl<'a> Res<'a> {
    fn merge(&mut self, other: Res<'a>) {
        self.errs.extend(other.errs);
        self.count += other.count;
    }

    /// Merges one validator's result and counts the validator, as `SchemaValidator.Validate` does.
    fn step(&mut self, other: Res<'a>) {
        self.merge(other);
        self.count += 1;
    }

    fn add(&mut self, e: OErr<'a>) {
        self.errs.push(e);
    }

    fn is_valid(&self) -> bool {
        self.errs.is_empty()
    }

    fn error(e: OErr<'a>) -> Self {
        Res {
            errs: vec![e],
            count: 0,
        }
    }
}

/// One `validate` call: each schema's keywords and each pattern, read once, and the work done
/// and allowed.
struct Validator<'a, 'p> {
    nodes: &'p mut Nodes<'a>,
    patterns: &'p mut HashMap<String, Pattern>,
    visits: usize,
    budget: usize,
}

/// Hashes the address of a schema node: cheaper than hashing its keywords over and over.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }
}

/// A schema's `type` as kube-openapi sees it: none, one, or `integer,string` for
/// `x-kubernetes-int-or-string`.
#[derive(Clone, Copy)]
struct Types<'a> {
    list: [&'a str; 2],
    len: usize,
}

impl Types<'_> {
    fn has(&self, t: &str) -> bool {
        self.list[..self.len].contains(&t)
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn joined(&self) -> String {
        self.list[..self.len].join(",")
    }
}

/// The keywords of one schema that validation reads. Keywords of the wrong JSON type count as
/// absent: Go would not have decoded such a CRD at all.
#[derive(Clone, Copy)]
struct Node<'a> {
    types: Types<'a>,
    nullable: bool,
    /// The format as written (for messages) and its registry name, when apiextensions keeps it.
    format: Option<(&'a str, &'static str)>,
    any_of: &'a [Value],
    one_of: &'a [Value],
    all_of: &'a [Value],
    not: Option<&'a Value>,
    max_length: Option<i64>,
    min_length: Option<i64>,
    pattern: Option<&'a str>,
    multiple_of: Option<f64>,
    minimum: Option<f64>,
    exclusive_minimum: bool,
    maximum: Option<f64>,
    exclusive_maximum: bool,
    items: Option<&'a Value>,
    min_items: Option<i64>,
    max_items: Option<i64>,
    unique_items: bool,
    enum_values: &'a Value,
    min_properties: Option<i64>,
    max_properties: Option<i64>,
    properties: Option<&'a Map<String, Value>>,
    additional: Option<&'a Value>,
    required: &'a [Value],
}

impl<'a> Node<'a> {
    fn read(s: &'a Value) -> Self {
        let flag = |k: &str| s.get(k).and_then(Value::as_bool).unwrap_or(false);
        let int = |k: &str| s.get(k).and_then(Value::as_i64);
        let float = |k: &str| s.get(k).and_then(Value::as_f64);
        let list = |k: &str| {
            s.get(k)
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
        };
        let types = if flag("x-kubernetes-int-or-string") {
            Types {
                list: ["integer", "string"],
                len: 2,
            }
        } else {
            match s.get("type").and_then(Value::as_str) {
                Some(t) if !t.is_empty() => Types {
                    list: [t, ""],
                    len: 1,
                },
                _ => Types {
                    list: ["", ""],
                    len: 0,
                },
            }
        };
        let format = s.get("format").and_then(Value::as_str);
        Node {
            types,
            nullable: flag("nullable"),
            format: format.and_then(|f| Some((f, format::supported(f)?))),
            any_of: list("anyOf"),
            one_of: list("oneOf"),
            all_of: list("allOf"),
            not: s.get("not"),
            max_length: int("maxLength"),
            min_length: int("minLength"),
            pattern: s
                .get("pattern")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty()),
            multiple_of: float("multipleOf"),
            minimum: float("minimum"),
            exclusive_minimum: flag("exclusiveMinimum"),
            maximum: float("maximum"),
            exclusive_maximum: flag("exclusiveMaximum"),
            items: s.get("items").filter(|v| v.is_object()),
            min_items: int("minItems"),
            max_items: int("maxItems"),
            unique_items: flag("uniqueItems"),
            enum_values: s.get("enum").unwrap_or(&Value::Null),
            min_properties: int("minProperties"),
            max_properties: int("maxProperties"),
            properties: s.get("properties").and_then(Value::as_object),
            additional: s.get("additionalProperties"),
            required: list("required"),
        }
    }
}

impl<'a> Validator<'a, '_> {
    /// kube-openapi's `SchemaValidator.Validate`: the type, combinator, string, format, number,
    /// array, enum and object validators in that order, each that applies to the value's kind.
    fn node(&mut self, s: &'a Value, data: &'a Value, path: &Path<'_>, depth: usize) -> Res<'a> {
        let mut r = Res::default();
        self.visits += 1;
        if self.visits > self.budget {
            // One text, so the repeats collapse into a single error at the root.
            let message = format!("validation stopped after {} steps", self.budget);
            r.add(OErr::new(Code::Depth, String::new(), message, Bad::Nil));
            return r;
        }
        if depth > MAX_DEPTH {
            let message = format!("schema nests deeper than {MAX_DEPTH} levels; not validated");
            r.add(OErr::new(Code::Depth, path.to_string(), message, Bad::Nil));
            return r;
        }
        let key = std::ptr::from_ref(s) as usize;
        let n = *self.nodes.entry(key).or_insert_with(|| Node::read(s));
        if data.is_null() {
            r.merge(type_check(&n, data, path));
            r.merge(enum_check(&n, data, path));
            return r;
        }
        if !n.types.is_empty() || n.format.is_some() {
            r.step(type_check(&n, data, path));
        }
        r.step(self.combinators(&n, data, path, depth));
        if let Value::String(text) = data {
            r.step(self.string_check(&n, text, path));
            if let Some((written, name)) = n.format {
                let sub = if format::check(name, text) {
                    Res::default()
                } else {
                    Res::error(OErr::invalid_type(path, written, text))
                };
                r.step(sub);
            }
        }
        if let Value::Number(num) = data {
            r.step(number_check(&n, num, data, path));
        }
        if let Value::Array(items) = data {
            r.step(self.array_check(&n, items, path, depth));
        }
        r.step(enum_check(&n, data, path));
        if let Value::Object(m) = data {
            r.step(self.object_check(&n, m, path, depth));
        }
        r.count += 1;
        r
    }

    /// kube-openapi's `schemaPropsValidator`: anyOf, oneOf, allOf and not, each branch validated
    /// at the same path; a failed anyOf/oneOf explains itself with the branch that matched most.
    fn combinators(
        &mut self,
        n: &Node<'a>,
        data: &'a Value,
        path: &Path<'_>,
        depth: usize,
    ) -> Res<'a> {
        let mut main = Res::default();
        let any = n.any_of;
        if !any.is_empty() {
            let mut best: Option<Res<'a>> = None;
            let mut success = None;
            for sub in any {
                let r = self.node(sub, data, path, depth + 1);
                if r.is_valid() {
                    best = None;
                    success = Some(r);
                    break;
                }
                if best.as_ref().is_none_or(|b| r.count > b.count) {
                    best = Some(r);
                }
            }
            if success.is_none() {
                let tail = format_args!("must validate at least one schema (anyOf)");
                main.add(OErr::composite(path, tail));
            }
            if let Some(r) = best.or(success) {
                main.merge(r);
            }
        }
        let one = n.one_of;
        if !one.is_empty() {
            let mut best: Option<Res<'a>> = None;
            let mut success = None;
            let mut validated = 0;
            for sub in one {
                let r = self.node(sub, data, path, depth + 1);
                if r.is_valid() {
                    validated += 1;
                    best = None;
                    success.get_or_insert(r);
                } else if validated == 0 && best.as_ref().is_none_or(|b| r.count > b.count) {
                    best = Some(r);
                }
            }
            if validated == 1 {
                main.merge(success.unwrap_or_default());
            } else {
                let found = if validated == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                let tail = format_args!("must validate one and only one schema (oneOf). {found}");
                main.add(OErr::composite(path, tail));
                if let Some(r) = best {
                    main.merge(r);
                }
            }
        }
        let all = n.all_of;
        if !all.is_empty() {
            let mut validated = 0;
            for sub in all {
                let r = self.node(sub, data, path, depth + 1);
                validated += usize::from(r.is_valid());
                main.merge(r);
            }
            if validated != all.len() {
                let none = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                let tail = format_args!("must validate all the schemas (allOf){none}");
                main.add(OErr::composite(path, tail));
            }
        }
        if let Some(not) = n.not
            && self.node(not, data, path, depth + 1).is_valid()
        {
            let tail = format_args!("must not validate the schema (not)");
            main.add(OErr::composite(path, tail));
        }
        main.count += 1;
        main
    }

    /// kube-openapi's `stringValidator`: the first failing of maxLength, minLength, pattern.
    fn string_check(&mut self, n: &Node<'a>, text: &'a str, path: &Path<'_>) -> Res<'a> {
        let runes = || i64::try_from(text.chars().count()).unwrap_or(i64::MAX);
        if let Some(max) = n.max_length
            && runes() > max
        {
            let tail = format_args!("should be at most {max} chars long");
            let mut e = OErr::other(path, tail, Bad::Text(text));
            (e.code, e.limit) = (Code::TooLong, max);
            return Res::error(e);
        }
        if let Some(min) = n.min_length
            && runes() < min
        {
            let tail = format_args!("should be at least {min} chars long");
            return Res::error(OErr::other(path, tail, Bad::Text(text)));
        }
        let Some(pattern) = n.pattern else {
            return Res::default();
        };
        let compiled = &mut *self.patterns;
        if !compiled.contains_key(pattern) {
            compiled.insert(pattern.to_owned(), Pattern::compile(pattern));
        }
        let Some(compiled) = compiled.get(pattern) else {
            return Res::default();
        };
        let shown = match compiled.is_match(text) {
            Ok(true) => return Res::default(),
            Ok(false) => pattern.to_owned(),
            Err(why) => format!("{pattern}, but pattern is invalid: {why}"),
        };
        let tail = format_args!("should match '{shown}'");
        Res::error(OErr::other(path, tail, Bad::Text(text)))
    }

    /// kube-openapi's `schemaSliceValidator`: items, then minItems, maxItems, uniqueItems.
    fn array_check(
        &mut self,
        n: &Node<'a>,
        items: &'a [Value],
        path: &Path<'_>,
        depth: usize,
    ) -> Res<'a> {
        let mut r = Res::default();
        if let Some(schema) = n.items {
            for (i, item) in items.iter().enumerate() {
                r.merge(self.node(schema, item, &Path::Index(path, i), depth + 1));
            }
        }
        let size = i64::try_from(items.len()).unwrap_or(i64::MAX);
        if let Some(min) = n.min_items
            && size < min
        {
            let tail = format_args!("should have at least {min} items");
            r.add(OErr::other(path, tail, Bad::Int(size)));
        }
        if let Some(max) = n.max_items
            && size > max
        {
            let tail = format_args!("should have at most {max} items");
            let mut e = OErr::other(path, tail, Bad::Int(size));
            (e.code, e.limit) = (Code::TooMany, max);
            r.add(e);
        }
        if n.unique_items {
            let mut seen = HashSet::with_capacity(items.len());
            if !items.iter().all(|item| seen.insert(go_json(item, true))) {
                let tail = format_args!("shouldn't contain duplicates");
                r.add(OErr::other(path, tail, Bad::Nil));
            }
        }
        r.count += 1;
        r
    }

    /// kube-openapi's `objectValidator`: property counts, additionalProperties, properties, and
    /// required. Unknown fields are fine unless `additionalProperties: false`.
    fn object_check(
        &mut self,
        n: &Node<'a>,
        m: &'a Map<String, Value>,
        path: &Path<'_>,
        depth: usize,
    ) -> Res<'a> {
        let mut r = Res::default();
        let count = i64::try_from(m.len()).unwrap_or(i64::MAX);
        if let Some(min) = n.min_properties
            && count < min
        {
            let tail = format_args!("should have at least {min} properties");
            r.add(OErr::other(path, tail, Bad::Int(count)));
        }
        if let Some(max) = n.max_properties
            && count > max
        {
            let tail = format_args!("should have at most {max} properties");
            let mut e = OErr::other(path, tail, Bad::Int(count));
            (e.code, e.limit) = (Code::TooMany, max);
            r.add(e);
        }
        let props = n.properties;
        let known = |k: &str| props.is_some_and(|p| p.contains_key(k));
        // Go walks maps in random order; sorting makes ours stable.
        let mut extra: Vec<(&'a String, &'a Value)> = m.iter().filter(|(k, _)| !known(k)).collect();
        extra.sort_unstable_by_key(|(k, _)| *k);
        match n.additional {
            Some(Value::Bool(false)) => {
                for (k, _) in extra {
                    let message = format!("{path}.{k} in body is a forbidden property");
                    r.add(OErr::new(
                        Code::Other,
                        path.to_string(),
                        message,
                        Bad::Text(k),
                    ));
                }
            }
            Some(ap @ Value::Object(_)) => {
                for (k, v) in extra {
                    r.merge(self.node(ap, v, &Path::Key(path, k), depth + 1));
                }
            }
            _ => {}
        }
        if let Some(props) = props {
            let mut present: Vec<(&'a String, &'a Value, &'a Value)> = if props.len() <= m.len() {
                props
                    .iter()
                    .filter_map(|(k, ps)| Some((k, ps, m.get(k)?)))
                    .collect()
            } else {
                m.iter()
                    .filter_map(|(k, v)| Some((k, props.get(k)?, v)))
                    .collect()
            };
            present.sort_unstable_by_key(|(k, _, _)| *k);
            for (k, ps, v) in present {
                r.merge(self.node(ps, v, &Path::Prop(path, k), depth + 1));
            }
        }
        for k in n.required.iter().filter_map(Value::as_str) {
            if !m.contains_key(k) {
                let name = format!("{path}.{k}");
                let message = format!("{name} in body is required");
                r.add(OErr::new(Code::Required, name, message, Bad::Nil));
            }
        }
        r
    }
}

/// kube-openapi's `typeValidator`, with its quirks: a format on a non-numeric type skips the type
/// check for strings and arrays, integral floats pass as integers, integers as numbers.
fn type_check<'a>(n: &Node<'a>, data: &'a Value, path: &Path<'_>) -> Res<'a> {
    let types = &n.types;
    let ok = Res {
        errs: Vec::new(),
        count: 1,
    };
    let (sch_type, is_float_int) = match data {
        Value::Null => {
            if !types.is_empty() && !types.has("null") && !n.nullable {
                return Res::error(OErr::invalid_type(path, &types.joined(), "null"));
            }
            return ok;
        }
        Value::Bool(_) => ("boolean", false),
        Value::String(_) => ("string", false),
        Value::Array(_) => ("array", false),
        Value::Object(_) => ("object", false),
        Value::Number(num) => match go_num(num) {
            GoNum::Int(_) => ("integer", false),
            GoNum::Float(f) => ("number", is_json_integer(f) && types.has("integer")),
        },
    };
    let data_format = match sch_type {
        "integer" => "int64",
        "number" => "float64",
        _ => "",
    };
    let is_int_float = sch_type == "integer" && types.has("number");
    let text_like = data.is_string() || data.is_array();
    let matches = types.has(sch_type) || is_float_int || is_int_float;
    if let Some((f, _)) = n.format {
        if !text_like && !matches {
            return Res::error(OErr::invalid_type(path, f, data_format));
        }
        if text_like && !types.has("number") && !types.has("integer") {
            return ok;
        }
    }
    if !matches {
        return Res::error(OErr::invalid_type(path, &types.joined(), sch_type));
    }
    ok
}

/// kube-openapi's `numberValidator`: multipleOf, minimum, maximum. Integers are compared with the
/// limit truncated to an integer, as Go does (`int64(3.5)` is 3).
fn number_check<'a>(n: &Node<'a>, num: &Number, data: &'a Value, path: &Path<'_>) -> Res<'a> {
    let mut r = Res {
        errs: Vec::new(),
        count: 1,
    };
    let value = go_num(num);
    if let Some(factor) = n.multiple_of {
        let (positive, shown, multiple) = match value {
            GoNum::Int(i) => {
                let f = go_f2i(factor);
                (f > 0, Bad::Int(f), f > 0 && i % f == 0)
            }
            GoNum::Float(x) => {
                let mult = if factor < 1.0 {
                    1.0 / factor * x
                } else {
                    x / factor
                };
                (factor > 0.0, Bad::Float(factor), is_json_integer(mult))
            }
        };
        if !positive {
            let shown_text = render(shown);
            let message =
                format!("factor MultipleOf declared for {path} must be positive: {shown_text}");
            r.add(OErr::new(Code::Other, path.to_string(), message, shown));
        } else if !multiple {
            let tail = format_args!("should be a multiple of {}", render(shown));
            r.add(OErr::other(path, tail, Bad::Data(data)));
        }
    }
    for (limit, exclusive, is_max) in [
        (n.minimum, n.exclusive_minimum, false),
        (n.maximum, n.exclusive_maximum, true),
    ] {
        let Some(limit) = limit else {
            continue;
        };
        let (order, shown) = match value {
            GoNum::Int(i) => {
                let l = go_f2i(limit);
                (i.cmp(&l), l.to_string())
            }
            GoNum::Float(x) => (
                x.partial_cmp(&limit).unwrap_or(Ordering::Equal),
                go_format_g(limit),
            ),
        };
        let beyond = if is_max { order } else { order.reverse() };
        let fails = beyond.is_gt() || (exclusive && beyond.is_eq());
        if fails {
            let words = match (is_max, exclusive) {
                (true, false) => "less than or equal to",
                (true, true) => "less than",
                (false, false) => "greater than or equal to",
                (false, true) => "greater than",
            };
            let tail = format_args!("should be {words} {shown}");
            r.add(OErr::other(path, tail, Bad::Data(data)));
        }
    }
    r
}

/// kube-openapi's `basicCommonValidator`: the value must match one `enum` entry.
fn enum_check<'a>(n: &Node<'a>, data: &'a Value, path: &Path<'_>) -> Res<'a> {
    let values = n.enum_values.as_array().map_or(&[][..], Vec::as_slice);
    if values.is_empty() || values.iter().any(|ev| enum_matches(data, ev)) {
        return Res::default();
    }
    // Upstream's text prints the list with %v; it only serves to tell errors apart, which the
    // canonical JSON of the list does as well.
    let message = format!(
        "{path} in body should be one of {}",
        go_json(n.enum_values, true)
    );
    let mut e = OErr::new(Code::Enum, path.to_string(), message, Bad::Data(data));
    e.values = values;
    Res::error(e)
}
