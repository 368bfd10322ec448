//! `olm.constraint` bundle properties: parsing and CEL rule evaluation.
//!
//! A bundle declares what it needs from other bundles with properties of type
//! [`OLM_CONSTRAINT_TYPE`]. The value is a JSON object holding exactly one constraint: a GVK that
//! must be provided, a package (with a version range) that must be installed, a CEL rule over the
//! candidate bundle's properties, or a compound `all`/`any`/`not` over nested constraints.
//!
//! This module reproduces operator-framework/api's `pkg/constraints` (`Parse`, the CEL
//! environment with `properties` and `semver_compare`) together with the checks OLM's resolver
//! adds when it turns a parsed constraint into a predicate (`constraint is empty`, CEL compile and
//! type errors). Upstream splits these over two steps; here [`parse`] does both, so that a
//! constraint OLM would refuse is refused at one place the caller sees.
//!
//! Decoding follows Go's `encoding/json` with `DisallowUnknownFields`, because bundles written for
//! upstream OLM must mean the same here: keys match field names exactly or, failing that, by
//! Unicode case folding; a repeated key merges into what an earlier one decoded; `null` leaves a
//! string alone and clears an object or list; only the first JSON value of the input is read.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators,
};
use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, FunctionContext, ResolveResult, Value};
use olm_version::blang::Version;

/// The property type of every constraint OLM knows, except the legacy `olm.*.required` types.
pub const OLM_CONSTRAINT_TYPE: &str = "olm.constraint";

/// The largest constraint value, in bytes, that [`parse`] accepts.
///
/// Upstream's `maxConstraintSize` is `2 << 16` (128 KiB, although its comment says 64Kb). Go's
/// decoder cannot bound nesting, so upstream bounds the raw size instead; the same number is kept
/// so that exactly the same values are refused for size.
pub const MAX_CONSTRAINT_SIZE: usize = 2 << 16;

/// How deeply `all`/`any`/`not` may nest, counting the outermost constraint as 1.
///
/// Upstream has no such limit (only the size limit), but every level here costs a stack frame in
/// decoding, conversion and callers that walk the tree, so a hostile value must not choose the
/// depth. Real constraints nest a handful of levels; 64 leaves plenty of room.
pub const MAX_CONSTRAINT_DEPTH: usize = 64;

/// How deeply JSON arrays and objects may nest in a constraint value or a property value.
///
/// Larger than the JSON depth [`MAX_CONSTRAINT_DEPTH`] constraints need (three levels per
/// constraint), so that deep constraints are refused with the clearer constraint-depth error.
const MAX_JSON_DEPTH: usize = 3 * MAX_CONSTRAINT_DEPTH + 16;

/// A parsed, possibly nested, dependency constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// The optional message shown when resolution fails on this constraint (`failureMessage`).
    pub failure_message: String,
    /// What the constraint requires.
    pub kind: Kind,
}

/// What a [`Constraint`] requires: exactly one of upstream's `gvk`, `package`, `all`, `any`,
/// `not` or `cel` members.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A bundle providing this API must be installed.
    Gvk {
        /// The API group.
        group: String,
        /// The API version.
        version: String,
        /// The kind.
        kind: String,
    },
    /// A bundle of this package, with a version in the range, must be installed.
    Package {
        /// The package name.
        package_name: String,
        /// A blang semver range, kept as written; the resolver parses it.
        version_range: String,
    },
    /// Every nested constraint must hold.
    All(Vec<Constraint>),
    /// At least one nested constraint must hold.
    Any(Vec<Constraint>),
    /// None of the nested constraints may hold.
    Not(Vec<Constraint>),
    /// A CEL rule over a candidate bundle's properties must evaluate to true.
    Cel(CelRule),
}

/// Why a constraint value was refused.
///
/// Texts that are OLM's own words are reproduced exactly: the size error, `json: unknown field
/// "…"` (for a top-level field), `constraint is empty` (for the top-level constraint) and
/// `cel expressions must have type Bool`. The other texts are this module's, and name the place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstraintError {
    /// The value is larger than [`MAX_CONSTRAINT_SIZE`].
    #[error("olm.constraint value is greater than max constraint size {MAX_CONSTRAINT_SIZE} bytes")]
    TooLarge,
    /// The value is not well-formed JSON.
    #[error("invalid JSON: {0}")]
    Syntax(String),
    /// An object has a member that the constraint schema does not define.
    #[error("json: unknown field {field:?}{}", at(path))]
    UnknownField {
        /// The member's name, as written.
        field: String,
        /// Where the object is (empty for the top-level constraint).
        path: String,
    },
    /// A member holds a JSON value of the wrong type.
    #[error("json: cannot unmarshal {found} into {} of type {want}", place(path))]
    Type {
        /// The JSON type found: object, array, string, number or bool.
        found: &'static str,
        /// The member's path (empty for the top-level constraint).
        path: String,
        /// The type the schema wants.
        want: &'static str,
    },
    /// A constraint sets none of `gvk`, `package`, `all`, `any`, `not`, `cel`.
    #[error("constraint is empty{}", at(path))]
    Empty {
        /// Where the constraint is (empty for the top-level constraint).
        path: String,
    },
    /// A constraint sets more than one of `gvk`, `package`, `all`, `any`, `not`, `cel`.
    ///
    /// Upstream's parser accepts this and its resolver silently uses the first by the order
    /// gvk, package, all, any, not, cel; refusing it keeps a typo from dropping a requirement.
    #[error("constraint{} sets more than one of gvk, package, all, any, not, cel: {}", at(path), .members.join(", "))]
    Ambiguous {
        /// Where the constraint is (empty for the top-level constraint).
        path: String,
        /// The members that were set.
        members: Vec<&'static str>,
    },
    /// Compound constraints nest deeper than [`MAX_CONSTRAINT_DEPTH`].
    #[error(
        "constraint{} nests deeper than the maximum of {MAX_CONSTRAINT_DEPTH} levels",
        at(path)
    )]
    TooDeep {
        /// Where the first constraint past the limit is.
        path: String,
    },
    /// A `cel` rule does not compile, or is not a boolean expression.
    #[error("cel rule {rule:?}{}: {message}", at(path))]
    Cel {
        /// Where the constraint holding the rule is (empty for the top-level constraint).
        path: String,
        /// The rule, as written.
        rule: String,
        /// The compiler's complaint.
        message: CelError,
    },
}

/// Why a CEL rule does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CelError {
    /// The compiler's thread could not be started.
    #[error("cannot start the CEL compiler: {0}")]
    Spawn(String),
    /// The parser failed on the rule instead of answering.
    #[error("the CEL parser failed on this rule")]
    ParserFailed,
    /// The rule does not parse, nests too deep, or uses what is not declared: the parser's or
    /// checker's words.
    #[error("{0}")]
    Invalid(String),
    /// The rule is not a boolean expression (upstream's words).
    #[error("cel expressions must have type Bool")]
    NotBool,
}

/// Formats a location suffix: nothing for the top level, ` at PATH` otherwise.
fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at {path}")
    }
}

/// Names the destination of a type error.
fn place(path: &str) -> String {
    if path.is_empty() {
        "constraint".to_owned()
    } else {
        format!("field {path:?}")
    }
}

/// Parses an `olm.constraint` property value into a [`Constraint`].
///
/// Semantics, in order: values over [`MAX_CONSTRAINT_SIZE`] bytes are refused; the first JSON
/// value is decoded as Go's `json.Decoder` with `DisallowUnknownFields` would (anything after it
/// is ignored, as upstream's decoder never reads it); then, as OLM's resolver does next, every
/// constraint must set one member (`constraint is empty` otherwise), compound constraints are
/// checked recursively, and CEL rules are compiled and type-checked.
///
/// CEL rules are compiled here rather than when building predicates (where OLM does it) so a
/// rule that would make OLM refuse the bundle is an error of this function; the compiled rule is
/// kept in [`Kind::Cel`] and evaluated with [`CelRule::evaluate`].
pub fn parse(value: &[u8]) -> Result<Constraint, ConstraintError> {
    if value.len() > MAX_CONSTRAINT_SIZE {
        return Err(ConstraintError::TooLarge);
    }
    let json = JsonParser::new(value)
        .first_value()
        .map_err(ConstraintError::Syntax)?;
    let mut raw = RawConstraint::default();
    decode_constraint(&json, &mut raw, "", 1)?;
    build(raw, "")
}

// ---------------------------------------------------------------------------------------------
// Decoding, as Go's encoding/json fills upstream's structs.

/// Upstream's `Constraint` struct as Go would fill it, before the one-member check.
#[derive(Default)]
struct RawConstraint {
    failure_message: String,
    cel: Option<String>,
    package: Option<(String, String)>,
    gvk: Option<(String, String, String)>,
    all: Option<Vec<RawConstraint>>,
    any: Option<Vec<RawConstraint>>,
    not: Option<Vec<RawConstraint>>,
}

/// Folds one character as Go's case-insensitive field matching does for ASCII field names:
/// ASCII case, plus the two non-ASCII characters whose simple case folding reaches ASCII letters
/// (KELVIN SIGN to `k`, LATIN SMALL LETTER LONG S to `s`).
fn fold(c: char) -> char {
    match c {
        '\u{212A}' => 'k',
        '\u{017F}' => 's',
        c => c.to_ascii_lowercase(),
    }
}

/// Finds the field a JSON key decodes into: an exact match first, then a case-folded one.
fn field<'f>(key: &str, fields: &[&'f str]) -> Option<&'f str> {
    fields.iter().copied().find(|f| *f == key).or_else(|| {
        fields
            .iter()
            .copied()
            .find(|f| key.chars().map(fold).eq(f.chars().map(fold)))
    })
}

/// Joins a member name onto a path.
fn join(path: &str, member: &str) -> String {
    if path.is_empty() {
        member.to_owned()
    } else {
        format!("{path}.{member}")
    }
}

fn type_error(found: &Json, path: String, want: &'static str) -> ConstraintError {
    ConstraintError::Type {
        found: found.kind(),
        path,
        want,
    }
}

/// Decodes a string member: `null` leaves it as it was, as Go does.
fn decode_string(v: &Json, out: &mut String, path: &str) -> Result<(), ConstraintError> {
    match v {
        Json::Null => Ok(()),
        Json::String(s) => {
            s.clone_into(out);
            Ok(())
        }
        other => Err(type_error(other, path.to_owned(), "string")),
    }
}

/// Decodes an object member held by pointer upstream: `null` clears it, an object decodes into
/// the existing value (merging, as Go does for a repeated key) or a new default one.
fn decode_pointer<T: Default>(
    v: &Json,
    out: &mut Option<T>,
    path: &str,
    fill: impl FnOnce(&[(String, Json)], &mut T) -> Result<(), ConstraintError>,
) -> Result<(), ConstraintError> {
    match v {
        Json::Null => {
            *out = None;
            Ok(())
        }
        Json::Object(members) => fill(members, out.get_or_insert_with(T::default)),
        other => Err(type_error(other, path.to_owned(), "object")),
    }
}

/// Decodes the members of a flat object of string fields (`gvk`, `package`, `cel`).
fn decode_strings(
    members: &[(String, Json)],
    fields: &[&str],
    outs: &mut [&mut String],
    path: &str,
) -> Result<(), ConstraintError> {
    for (key, value) in members {
        let Some(name) = field(key, fields) else {
            return Err(ConstraintError::UnknownField {
                field: key.clone(),
                path: path.to_owned(),
            });
        };
        let Some(i) = fields.iter().position(|f| *f == name) else {
            continue;
        };
        if let Some(out) = outs.get_mut(i) {
            decode_string(value, out, &join(path, name))?;
        }
    }
    Ok(())
}

/// Decodes a compound member (`{"constraints": [...]}`) into its list of constraints.
fn decode_compound(
    members: &[(String, Json)],
    out: &mut Vec<RawConstraint>,
    path: &str,
    depth: usize,
) -> Result<(), ConstraintError> {
    for (key, value) in members {
        if field(key, &["constraints"]).is_none() {
            return Err(ConstraintError::UnknownField {
                field: key.clone(),
                path: path.to_owned(),
            });
        }
        let list_path = join(path, "constraints");
        match value {
            Json::Null => out.clear(),
            Json::Array(items) => {
                // Go decodes into the elements already there and then truncates.
                for (i, item) in items.iter().enumerate() {
                    if i >= out.len() {
                        out.push(RawConstraint::default());
                    }
                    if let Some(slot) = out.get_mut(i) {
                        decode_constraint(item, slot, &format!("{list_path}[{i}]"), depth + 1)?;
                    }
                }
                out.truncate(items.len());
            }
            other => return Err(type_error(other, list_path, "array")),
        }
    }
    Ok(())
}

/// Decodes one constraint object; `depth` counts the outermost constraint as 1.
fn decode_constraint(
    v: &Json,
    out: &mut RawConstraint,
    path: &str,
    depth: usize,
) -> Result<(), ConstraintError> {
    if depth > MAX_CONSTRAINT_DEPTH {
        return Err(ConstraintError::TooDeep {
            path: path.to_owned(),
        });
    }
    let members = match v {
        // Go leaves a struct untouched for null; the empty result is refused later.
        Json::Null => return Ok(()),
        Json::Object(members) => members,
        other => return Err(type_error(other, path.to_owned(), "object")),
    };
    const FIELDS: [&str; 7] = [
        "failureMessage",
        "cel",
        "package",
        "gvk",
        "all",
        "any",
        "not",
    ];
    for (key, value) in members {
        let Some(name) = field(key, &FIELDS) else {
            return Err(ConstraintError::UnknownField {
                field: key.clone(),
                path: path.to_owned(),
            });
        };
        let here = join(path, name);
        match name {
            "failureMessage" => decode_string(value, &mut out.failure_message, &here)?,
            "cel" => decode_pointer(value, &mut out.cel, &here, |m, rule| {
                decode_strings(m, &["rule"], &mut [rule], &here)
            })?,
            "package" => decode_pointer(value, &mut out.package, &here, |m, (name, range)| {
                decode_strings(
                    m,
                    &["packageName", "versionRange"],
                    &mut [name, range],
                    &here,
                )
            })?,
            "gvk" => decode_pointer(value, &mut out.gvk, &here, |m, (g, v, k)| {
                decode_strings(m, &["group", "version", "kind"], &mut [g, v, k], &here)
            })?,
            "all" => decode_pointer(value, &mut out.all, &here, |m, list| {
                decode_compound(m, list, &here, depth)
            })?,
            "any" => decode_pointer(value, &mut out.any, &here, |m, list| {
                decode_compound(m, list, &here, depth)
            })?,
            _ => decode_pointer(value, &mut out.not, &here, |m, list| {
                decode_compound(m, list, &here, depth)
            })?,
        }
    }
    Ok(())
}

/// Turns a decoded constraint into a [`Constraint`], with OLM's checks: one member set, nested
/// constraints valid, CEL rules compiled.
fn build(raw: RawConstraint, path: &str) -> Result<Constraint, ConstraintError> {
    let set: Vec<&'static str> = [
        ("gvk", raw.gvk.is_some()),
        ("package", raw.package.is_some()),
        ("all", raw.all.is_some()),
        ("any", raw.any.is_some()),
        ("not", raw.not.is_some()),
        ("cel", raw.cel.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, is_set)| is_set.then_some(name))
    .collect();
    if set.len() > 1 {
        return Err(ConstraintError::Ambiguous {
            path: path.to_owned(),
            members: set,
        });
    }
    let nested = |list: Vec<RawConstraint>, member: &str| {
        list.into_iter()
            .enumerate()
            .map(|(i, c)| build(c, &format!("{}[{i}]", join(path, member))))
            .collect::<Result<Vec<_>, _>>()
    };
    let kind = if let Some((group, version, kind)) = raw.gvk {
        Kind::Gvk {
            group,
            version,
            kind,
        }
    } else if let Some((package_name, version_range)) = raw.package {
        Kind::Package {
            package_name,
            version_range,
        }
    } else if let Some(list) = raw.all {
        Kind::All(nested(list, "all.constraints")?)
    } else if let Some(list) = raw.any {
        Kind::Any(nested(list, "any.constraints")?)
    } else if let Some(list) = raw.not {
        Kind::Not(nested(list, "not.constraints")?)
    } else if let Some(rule) = raw.cel {
        match CelRule::compile(&rule) {
            Ok(compiled) => Kind::Cel(compiled),
            Err(message) => {
                return Err(ConstraintError::Cel {
                    path: path.to_owned(),
                    rule,
                    message,
                });
            }
        }
    } else {
        return Err(ConstraintError::Empty {
            path: path.to_owned(),
        });
    };
    Ok(Constraint {
        failure_message: raw.failure_message,
        kind,
    })
}

// ---------------------------------------------------------------------------------------------
// A small JSON reader. It keeps repeated keys (Go merges them, serde_json's map would not),
// bounds nesting with its own clear error, and reads only the first value like Go's Decoder.

/// A JSON value with object members in document order, repeated keys kept.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    /// The number as written (validated against the JSON grammar).
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The type name Go's decoder uses in its errors.
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "bool",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }
}

struct JsonParser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> JsonParser<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        JsonParser { bytes, pos: 0 }
    }

    /// Reads the first value, ignoring whatever follows (Go's `Decoder.Decode`).
    fn first_value(mut self) -> Result<Json, String> {
        self.skip_ws();
        if self.pos >= self.bytes.len() {
            return Err("empty input".to_owned());
        }
        self.value(0)
    }

    /// Reads the whole input as one value (Go's `json.Unmarshal`).
    fn whole_value(mut self) -> Result<Json, String> {
        let v = self.value(0)?;
        self.skip_ws();
        match self.peek() {
            None => Ok(v),
            Some(c) => Err(self.error(&format!(
                "invalid character {} after top-level value",
                show(c)
            ))),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn error(&self, what: &str) -> String {
        format!("{what} at offset {}", self.pos)
    }

    fn unexpected(&self, context: &str) -> String {
        match self.peek() {
            None => self.error(&format!("unexpected end of input {context}")),
            Some(c) => self.error(&format!("invalid character {} {context}", show(c))),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        self.skip_ws();
        match self.peek() {
            Some(b'{' | b'[') if depth >= MAX_JSON_DEPTH => Err(self.error(&format!(
                "arrays and objects nest deeper than {MAX_JSON_DEPTH} levels"
            ))),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.unexpected("looking for beginning of value")),
        }
    }

    fn literal(&mut self, word: &str, v: Json) -> Result<Json, String> {
        for expected in word.bytes() {
            if self.peek() != Some(expected) {
                return Err(self.unexpected(&format!("in literal {word}")));
            }
            self.pos += 1;
        }
        Ok(v)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.unexpected("in numeric literal")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.unexpected("after decimal point in numeric literal"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.unexpected("in exponent of numeric literal"));
            }
        }
        let text = self.bytes.get(start..self.pos).unwrap_or_default();
        Ok(Json::Number(String::from_utf8_lossy(text).into_owned()))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut n = 0;
        for _ in 0..4 {
            let d = self
                .peek()
                .and_then(|c| char::from(c).to_digit(16))
                .ok_or_else(|| self.unexpected("in \\u hexadecimal character escape"))?;
            n = n * 16 + d;
            self.pos += 1;
        }
        Ok(n)
    }

    /// Reads a string; invalid UTF-8 and unpaired surrogates become U+FFFD, as in Go.
    fn string(&mut self) -> Result<String, String> {
        self.pos += 1; // the opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error("unexpected end of input in string literal"));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                b'\\' => {
                    self.pos += 1;
                    let escaped = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            let unit = self.hex4()?;
                            let c = if (0xD800..0xDC00).contains(&unit)
                                && self.bytes.get(self.pos..self.pos + 2) == Some(b"\\u")
                            {
                                let save = self.pos;
                                self.pos += 2;
                                let low = self.hex4()?;
                                if (0xDC00..0xE000).contains(&low) {
                                    char::from_u32(
                                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00),
                                    )
                                } else {
                                    self.pos = save;
                                    None
                                }
                            } else {
                                char::from_u32(unit)
                            };
                            let mut buf = [0; 4];
                            out.extend_from_slice(
                                c.unwrap_or('\u{FFFD}').encode_utf8(&mut buf).as_bytes(),
                            );
                            continue;
                        }
                        _ => return Err(self.unexpected("in string escape code")),
                    };
                    self.pos += 1;
                    let mut buf = [0; 4];
                    out.extend_from_slice(escaped.encode_utf8(&mut buf).as_bytes());
                }
                0..0x20 => return Err(self.unexpected("in string literal")),
                _ => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                _ => return Err(self.unexpected("after array element")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, String> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected("looking for beginning of object key string"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.unexpected("after object key"));
            }
            self.pos += 1;
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                _ => return Err(self.unexpected("after object key:value pair")),
            }
        }
    }
}

/// Quotes a byte for an error message, as Go's scanner does.
fn show(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        0x20..0x7f => format!("'{}'", char::from(c)),
        _ => format!("byte 0x{c:02x}"),
    }
}

// ---------------------------------------------------------------------------------------------
// CEL.

/// The variable holding the candidate bundle's properties, as upstream's `PropertiesKey`.
const PROPERTIES: &str = "properties";
/// The function upstream's CEL library adds.
const SEMVER_COMPARE: &str = "semver_compare";
/// Internal step and result functions that give `exists`/`all` CEL's error-absorbing semantics.
/// Their names start with `@`, which no rule can spell.
const EXISTS_STEP: &str = "@olm_exists_step";
const ALL_STEP: &str = "@olm_all_step";
const MACRO_RESULT: &str = "@olm_macro_result";

/// A compiled, type-checked CEL rule of an `olm.constraint`.
///
/// The `cel` crate interprets without a type checker, so compiling adds the checks upstream's
/// `cel-go` environment makes: every variable and function must be declared (the variable
/// `properties`, `semver_compare`, and the standard functions both implementations share), and
/// the rule's static type must be `bool` (upstream: `cel expressions must have type Bool`).
/// Expressions the interpreter cannot run (message construction) are refused here too, so that
/// evaluation never meets them.
#[derive(Debug, Clone, PartialEq)]
pub struct CelRule {
    rule: String,
    expr: IdedExpr,
}

impl CelRule {
    /// Compiles and checks a rule.
    ///
    /// The `cel` crate's parser (ANTLR-generated) recurses deeply per nesting level, so it runs on
    /// a thread of its own with a [`COMPILE_STACK`]-byte stack: a hostile rule then meets the
    /// parser's recursion limit rather than the caller's stack end. The checked expression may
    /// nest at most [`MAX_RULE_DEPTH`] levels, which keeps evaluation shallow on any stack.
    ///
    /// # Errors
    ///
    /// Why the rule does not compile ([`CelError`]).
    pub fn compile(rule: &str) -> Result<CelRule, CelError> {
        let owned = rule.to_owned();
        let worker = std::thread::Builder::new()
            .name("cel-compile".to_owned())
            .stack_size(COMPILE_STACK)
            .spawn(move || compile_on_this_thread(&owned))
            .map_err(|e| CelError::Spawn(e.to_string()))?;
        let expr = worker.join().map_err(|_| CelError::ParserFailed)??;
        Ok(CelRule {
            rule: rule.to_owned(),
            expr,
        })
    }

    /// The rule as written.
    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// Evaluates the rule against a bundle's properties, given as (type, JSON value text) pairs.
    ///
    /// As OLM's `celPredicate`: `properties` is a list of maps `{"type": …, "value": …}` where
    /// the value is the parsed JSON (numbers are doubles, as Go decodes them); a property whose
    /// value is not JSON is an empty map; an evaluation error counts as false.
    pub fn evaluate(&self, properties: &[(&str, &str)]) -> bool {
        let list: Vec<Value> = properties
            .iter()
            .map(|(ty, value)| property_value(ty, value))
            .collect();
        // The interpreter is not ours; should it panic on some input after all, that is an
        // evaluation error like any other, not the resolver's end.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut ctx = Context::default();
            ctx.add_variable_from_value(PROPERTIES, Value::List(Arc::new(list)));
            ctx.add_function(SEMVER_COMPARE, boxed(semver_compare));
            ctx.add_function(EXISTS_STEP, boxed(exists_step));
            ctx.add_function(ALL_STEP, boxed(all_step));
            ctx.add_function(MACRO_RESULT, boxed(macro_result));
            matches!(Value::resolve(&self.expr, &ctx), Ok(Value::Bool(true)))
        }))
        .unwrap_or(false)
    }
}

/// The stack size of the thread [`CelRule::compile`] parses on: ample for the parser's own
/// recursion limit in an unoptimised build. Only the pages touched are committed.
const COMPILE_STACK: usize = 256 << 20;

/// How deeply a checked rule's expression tree may nest.
///
/// Evaluation recurses once per level on the caller's stack, and the `cel` crate's interpreter
/// frame is large in an unoptimised build (some 40 KiB), so the limit keeps the deepest rule
/// well inside a 2 MiB thread stack (Rust's and tokio's default). Real rules nest a few levels;
/// macros count their expansion (a nested `exists` is about two levels).
pub const MAX_RULE_DEPTH: usize = 24;

fn compile_on_this_thread(rule: &str) -> Result<IdedExpr, CelError> {
    let source = prepare(rule).map_err(CelError::Invalid)?;
    let mut expr = cel::parser::Parser::new()
        .parse(&source)
        .map_err(|e| CelError::Invalid(e.to_string()))?;
    let mut scope = Vec::new();
    let ty = check(&expr, &mut scope, 0).map_err(CelError::Invalid)?;
    if ty != Ty::Bool {
        return Err(CelError::NotBool);
    }
    absorb_errors(&mut expr);
    Ok(expr)
}

/// Scans a rule's source before the parser sees it, for two reasons.
///
/// Depth: bracket nesting plus `?` (each ternary nests the rest) must stay within
/// [`MAX_RULE_DEPTH`], so hostile input meets this clear error rather than the parser's own
/// recursion limit (whose error path the `cel` crate mishandles).
///
/// Repeated unary operators: CEL drops an even run of `!` or `-` (`!!x` is `x`) and keeps one
/// of an odd run, but the `cel` crate keeps one operator either way (`!!true` is false there).
/// The run is rewritten the way CEL reads it, with spaces in place of dropped operators so that
/// error positions still point into the rule as written.
fn prepare(rule: &str) -> Result<String, String> {
    let chars: Vec<char> = rule.chars().collect();
    let mut out = chars.clone();
    let mut depth: usize = 0;
    let mut questions: usize = 0;
    // The last significant character outside strings and comments, and the current run of one
    // unary operator: its character and the positions of its members.
    let mut prev: Option<char> = None;
    let mut run: (char, Vec<usize>) = (' ', Vec::new());
    let mut i = 0;
    let end_run = |run: &mut (char, Vec<usize>), out: &mut Vec<char>| {
        let keep_last = run.1.len() % 2 == 1;
        let n = run.1.len();
        for (k, &at) in run.1.iter().enumerate() {
            if !(keep_last && k + 1 == n)
                && let Some(c) = out.get_mut(at)
            {
                *c = ' ';
            }
        }
        run.1.clear();
    };
    while let Some(&c) = chars.get(i) {
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while chars.get(i).is_some_and(|&c| c != '\n') {
                i += 1;
            }
            continue;
        }
        if c == '\'' || c == '"' {
            end_run(&mut run, &mut out);
            let raw = i > 0
                && matches!(chars.get(i - 1), Some('r' | 'R'))
                && !(i > 1
                    && chars.get(i - 2).is_some_and(|&p| {
                        (p.is_alphanumeric() || p == '_') && !matches!(p, 'b' | 'B')
                    }));
            let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
            i += if triple { 3 } else { 1 };
            loop {
                match chars.get(i) {
                    None => break,
                    Some('\\') if !raw => i += 2,
                    Some(&q) if q == c => {
                        if !triple {
                            i += 1;
                            break;
                        }
                        if chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c) {
                            i += 3;
                            break;
                        }
                        i += 1;
                    }
                    Some(_) => i += 1,
                }
            }
            prev = Some(c);
            continue;
        }
        let unary = match c {
            '!' => chars.get(i + 1) != Some(&'='),
            '-' => prev.is_none_or(|p| "([{,?:!+-*/%<>=&|".contains(p)),
            _ => false,
        };
        if unary {
            let contiguous = run.0 == c
                && run.1.last().is_some_and(|&last| {
                    chars
                        .get(last + 1..i)
                        .is_some_and(|gap| gap.iter().all(|g| g.is_whitespace()))
                });
            if !contiguous {
                end_run(&mut run, &mut out);
                run.0 = c;
            }
            run.1.push(i);
        } else {
            end_run(&mut run, &mut out);
        }
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '?' => questions += 1,
            _ => {}
        }
        if depth + questions > MAX_RULE_DEPTH {
            return Err(format!(
                "expression nests deeper than {MAX_RULE_DEPTH} levels"
            ));
        }
        prev = Some(c);
        i += 1;
    }
    end_run(&mut run, &mut out);
    Ok(out.into_iter().collect())
}

impl fmt::Display for CelRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rule)
    }
}

type CelFunction = Box<dyn Fn(&mut FunctionContext) -> ResolveResult + Send + Sync>;

fn boxed(f: fn(&mut FunctionContext) -> ResolveResult) -> CelFunction {
    Box::new(f)
}

/// One entry of `properties`.
fn property_value(ty: &str, value: &str) -> Value {
    let mut map: HashMap<Key, Value> = HashMap::new();
    if let Some(v) = JsonParser::new(value.as_bytes())
        .whole_value()
        .ok()
        .and_then(|j| to_cel(&j))
    {
        map.insert(
            Key::String(Arc::new("type".to_owned())),
            Value::String(Arc::new(ty.to_owned())),
        );
        map.insert(Key::String(Arc::new("value".to_owned())), v);
    }
    Value::Map(Map { map: Arc::new(map) })
}

/// Converts JSON as Go's `json.Unmarshal` into `interface{}` would type it; `None` where Go
/// fails (a number out of float64 range).
fn to_cel(j: &Json) -> Option<Value> {
    Some(match j {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Float(n.parse::<f64>().ok().filter(|f| f.is_finite())?),
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(items) => {
            Value::List(Arc::new(items.iter().map(to_cel).collect::<Option<_>>()?))
        }
        Json::Object(members) => {
            let mut map = HashMap::with_capacity(members.len());
            for (k, v) in members {
                map.insert(Key::String(Arc::new(k.clone())), to_cel(v)?);
            }
            Value::Map(Map { map: Arc::new(map) })
        }
    })
}

/// `semver_compare(a, b)`: -1, 0 or 1 as blang's `Compare` of `ParseTolerant` of each argument
/// formatted as Go's `fmt.Sprint` would; an argument that does not parse is an evaluation
/// error, `unable to parse '…' to semver format` (so the rule evaluates to false).
fn semver_compare(ftx: &mut FunctionContext) -> ResolveResult {
    if ftx.this.is_some() || ftx.args.len() != 2 {
        return Err(ExecutionError::invalid_argument_count(2, ftx.args.len()));
    }
    let mut versions = Vec::with_capacity(2);
    for arg in ftx.args {
        let v = ftx.ptx.resolve(arg)?;
        let text = go_sprint(&v);
        let parsed = Version::parse_tolerant(&text)
            .map_err(|_| ftx.error(format!("unable to parse '{text}' to semver format")))?;
        versions.push(parsed);
    }
    let ord = match versions.as_slice() {
        [a, b] => a.cmp(b),
        _ => Ordering::Equal,
    };
    Ok(Value::Int(match ord {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }))
}

/// Formats a CEL value as Go's `fmt.Sprint` formats the native value cel-go hands over.
fn go_sprint(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => go_float(*f),
        Value::Bool(b) => b.to_string(),
        Value::Null => "NULL_VALUE".to_owned(),
        other => format!("{other:?}"),
    }
}

/// Formats a float as Go's `%v`: the shortest round-tripping digits, in exponent form when the
/// decimal exponent is below -4 or at least 6 (Go's `%g` with shortest precision).
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-tripping digits: `-1.2345e8`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.unsigned_abs());
    }
    if exp < 0 {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = usize::try_from(exp + 1).unwrap_or(1);
    if digits.len() <= int_len {
        format!("{sign}{digits}{}", "0".repeat(int_len - digits.len()))
    } else {
        let (int, frac) = digits.split_at(int_len);
        format!("{sign}{int}.{frac}")
    }
}

/// Evaluates both step arguments of a rewritten `exists`/`all`, keeping errors as values.
fn step_args(
    ftx: &FunctionContext,
) -> (Result<Value, ExecutionError>, Result<Value, ExecutionError>) {
    let arg = |i: usize| match ftx.args.get(i) {
        Some(e) => ftx.ptx.resolve(e),
        None => Err(ExecutionError::invalid_argument_count(2, ftx.args.len())),
    };
    (arg(0), arg(1))
}

/// The error an accumulator carries: an earlier error (kept as a string) or this step's.
fn carried(accu: &Result<Value, ExecutionError>, pred: &Result<Value, ExecutionError>) -> Value {
    let message = match (accu, pred) {
        (Ok(Value::String(s)), _) => s.to_string(),
        (_, Err(e)) => e.to_string(),
        _ => ExecutionError::NoSuchOverload.to_string(),
    };
    Value::String(Arc::new(message))
}

/// One step of `exists`, as CEL's commutative `||`: true wins over an error, an error over false.
/// The accumulator holds a bool or, once an error was met, the error text as a string.
fn exists_step(ftx: &mut FunctionContext) -> ResolveResult {
    let (accu, pred) = step_args(ftx);
    Ok(match (&accu, &pred) {
        (Ok(Value::Bool(true)), _) | (_, Ok(Value::Bool(true))) => Value::Bool(true),
        (Ok(Value::Bool(false)), Ok(Value::Bool(false))) => Value::Bool(false),
        _ => carried(&accu, &pred),
    })
}

/// One step of `all`, as CEL's commutative `&&`: false wins over an error, an error over true.
fn all_step(ftx: &mut FunctionContext) -> ResolveResult {
    let (accu, pred) = step_args(ftx);
    Ok(match (&accu, &pred) {
        (Ok(Value::Bool(false)), _) | (_, Ok(Value::Bool(false))) => Value::Bool(false),
        (Ok(Value::Bool(true)), Ok(Value::Bool(true))) => Value::Bool(true),
        _ => carried(&accu, &pred),
    })
}

/// The result of a rewritten `exists`/`all`: the bool, or the carried error.
fn macro_result(ftx: &mut FunctionContext) -> ResolveResult {
    let accu = match ftx.args.first() {
        Some(e) => ftx.ptx.resolve(e)?,
        None => return Err(ExecutionError::invalid_argument_count(1, 0)),
    };
    match accu {
        Value::Bool(b) => Ok(Value::Bool(b)),
        Value::String(message) => Err(ftx.error(message)),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

/// Rewrites `exists` and `all` comprehensions so an element whose predicate errors does not end
/// the loop: in CEL (and cel-go) `[error, true].exists(…)` is true, while the `cel` crate's
/// `||` step would stop at the error. A rule like `properties.exists(p, p.value.x == 1)` must not
/// fail because another property's value has no `x`.
fn absorb_errors(e: &mut IdedExpr) {
    match &mut e.expr {
        Expr::Call(call) => {
            if let Some(t) = call.target.as_deref_mut() {
                absorb_errors(t);
            }
            call.args.iter_mut().for_each(absorb_errors);
        }
        Expr::Comprehension(c) => {
            for part in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                absorb_errors(part);
            }
            rewrite_macro(c);
        }
        Expr::List(l) => l.elements.iter_mut().for_each(absorb_errors),
        Expr::Map(m) => {
            for entry in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut entry.expr {
                    absorb_errors(&mut me.key);
                    absorb_errors(&mut me.value);
                }
            }
        }
        Expr::Select(s) => absorb_errors(&mut s.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Struct(_) | Expr::Unspecified => {}
    }
}

fn rewrite_macro(c: &mut ComprehensionExpr) {
    let init = match &c.accu_init.expr {
        Expr::Literal(LiteralValue::Boolean(b)) => *b.inner(),
        _ => return,
    };
    let Expr::Call(step) = &mut c.loop_step.expr else {
        return;
    };
    let accu_first = matches!(step.args.first(), Some(IdedExpr { expr: Expr::Ident(name), .. }) if *name == c.accu_var);
    if step.target.is_some() || step.args.len() != 2 || !accu_first {
        return;
    }
    let new_step = match (step.func_name.as_str(), init) {
        (operators::LOGICAL_OR, false) => EXISTS_STEP,
        (operators::LOGICAL_AND, true) => ALL_STEP,
        _ => return,
    };
    new_step.clone_into(&mut step.func_name);
    let result = std::mem::take(&mut c.result);
    c.result = IdedExpr {
        id: result.id,
        expr: Expr::Call(CallExpr {
            func_name: MACRO_RESULT.to_owned(),
            target: None,
            args: vec![result],
        }),
    };
}

/// Static types, as far as the check needs them: `Dyn` wherever cel-go would say `dyn` or this
/// check does not follow.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    List(Box<Ty>),
    Map(Box<Ty>),
    Dyn,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Null => f.write_str("null_type"),
            Ty::Duration => f.write_str("google.protobuf.Duration"),
            Ty::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Ty::List(t) => write!(f, "list({t})"),
            Ty::Map(t) => write!(f, "map(string, {t})"),
            Ty::Dyn => f.write_str("dyn"),
        }
    }
}

/// The common type of two: the same, or `Dyn`.
fn unify(a: Ty, b: &Ty) -> Ty {
    if a == *b { a } else { Ty::Dyn }
}

/// Standard functions both cel-go's standard library and the `cel` crate provide, with their
/// result types. Others the crate has (`max`, `min`, optionals) are not in upstream's
/// environment, and are refused as cel-go would.
fn function_type(name: &str) -> Option<Ty> {
    Some(match name {
        "contains" | "startsWith" | "endsWith" | "matches" => Ty::Bool,
        "size" | "int" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "string" => Ty::String,
        "bytes" => Ty::Bytes,
        "duration" => Ty::Duration,
        "timestamp" => Ty::Timestamp,
        "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate"
        | "getDayOfWeek" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds" => Ty::Int,
        _ => return None,
    })
}

fn no_overload(name: &str, args: &[Ty]) -> String {
    let args: Vec<String> = args.iter().map(ToString::to_string).collect();
    format!(
        "found no matching overload for '{name}' applied to '({})'",
        args.join(", ")
    )
}

/// Checks an expression and infers its static type; `scope` holds comprehension variables.
fn check(e: &IdedExpr, scope: &mut Vec<(String, Ty)>, depth: usize) -> Result<Ty, String> {
    if depth >= MAX_RULE_DEPTH {
        return Err(format!(
            "expression nests deeper than {MAX_RULE_DEPTH} levels"
        ));
    }
    let depth = depth + 1;
    match &e.expr {
        Expr::Literal(l) => Ok(match l {
            LiteralValue::Boolean(_) => Ty::Bool,
            LiteralValue::Bytes(_) => Ty::Bytes,
            LiteralValue::Double(_) => Ty::Double,
            LiteralValue::Int(_) => Ty::Int,
            LiteralValue::Null => Ty::Null,
            LiteralValue::String(_) => Ty::String,
            LiteralValue::UInt(_) => Ty::Uint,
        }),
        Expr::Ident(name) => {
            if let Some((_, t)) = scope.iter().rev().find(|(n, _)| n == name) {
                Ok(t.clone())
            } else if name == PROPERTIES {
                Ok(Ty::List(Box::new(Ty::Map(Box::new(Ty::Dyn)))))
            } else {
                Err(format!("undeclared reference to '{name}'"))
            }
        }
        Expr::Select(s) => {
            let operand = check(&s.operand, scope, depth)?;
            if s.test {
                return Ok(Ty::Bool);
            }
            match operand {
                Ty::Map(v) => Ok(*v),
                Ty::Dyn => Ok(Ty::Dyn),
                other => Err(format!(
                    "type '{other}' does not support field selection ('.{}')",
                    s.field
                )),
            }
        }
        Expr::List(l) => {
            let mut elem: Option<Ty> = None;
            for item in &l.elements {
                let t = check(item, scope, depth)?;
                elem = Some(match elem {
                    None => t,
                    Some(prev) => unify(prev, &t),
                });
            }
            Ok(Ty::List(Box::new(elem.unwrap_or(Ty::Dyn))))
        }
        Expr::Map(m) => {
            let mut value: Option<Ty> = None;
            for entry in &m.entries {
                let EntryExpr::MapEntry(me) = &entry.expr else {
                    return Err("message field initializers are not supported".to_owned());
                };
                check(&me.key, scope, depth)?;
                let t = check(&me.value, scope, depth)?;
                value = Some(match value {
                    None => t,
                    Some(prev) => unify(prev, &t),
                });
            }
            Ok(Ty::Map(Box::new(value.unwrap_or(Ty::Dyn))))
        }
        Expr::Struct(s) => Err(format!(
            "message construction is not supported ('{}{{…}}')",
            s.type_name
        )),
        Expr::Unspecified => Err("unsupported expression".to_owned()),
        Expr::Comprehension(c) => check_comprehension(c, scope, depth),
        Expr::Call(call) => check_call(call, scope, depth),
    }
}

fn check_comprehension(
    c: &ComprehensionExpr,
    scope: &mut Vec<(String, Ty)>,
    depth: usize,
) -> Result<Ty, String> {
    let range = check(&c.iter_range, scope, depth)?;
    let item = match range {
        Ty::List(t) => *t,
        Ty::Map(_) => Ty::String,
        Ty::Dyn => Ty::Dyn,
        other => {
            return Err(format!(
                "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
            ));
        }
    };
    let accu = check(&c.accu_init, scope, depth)?;
    let base = scope.len();
    scope.push((c.accu_var.clone(), accu));
    let body = (|| {
        check(&c.loop_cond, scope, depth)?;
        scope.push((c.iter_var.clone(), item));
        if let Some(v2) = &c.iter_var2 {
            scope.push((v2.clone(), Ty::Dyn));
        }
        check(&c.loop_step, scope, depth)?;
        scope.truncate(base + 1);
        check(&c.result, scope, depth)
    })();
    scope.truncate(base);
    body
}

fn check_call(call: &CallExpr, scope: &mut Vec<(String, Ty)>, depth: usize) -> Result<Ty, String> {
    let target = match &call.target {
        Some(t) => Some(check(t, scope, depth)?),
        None => None,
    };
    let args = call
        .args
        .iter()
        .map(|a| check(a, scope, depth))
        .collect::<Result<Vec<_>, _>>()?;
    let name = call.func_name.as_str();
    let is_bool = |t: &Ty| matches!(t, Ty::Bool | Ty::Dyn);
    match name {
        operators::LOGICAL_AND | operators::LOGICAL_OR | operators::LOGICAL_NOT => {
            if args.iter().all(is_bool) {
                Ok(Ty::Bool)
            } else {
                Err(no_overload(name, &args))
            }
        }
        operators::NOT_STRICTLY_FALSE
        | operators::EQUALS
        | operators::NOT_EQUALS
        | operators::LESS
        | operators::LESS_EQUALS
        | operators::GREATER
        | operators::GREATER_EQUALS
        | operators::IN => Ok(Ty::Bool),
        operators::CONDITIONAL => match args.as_slice() {
            [cond, a, b] if is_bool(cond) => Ok(unify(a.clone(), b)),
            _ => Err(no_overload(name, &args)),
        },
        operators::ADD
        | operators::SUBSTRACT
        | operators::MULTIPLY
        | operators::DIVIDE
        | operators::MODULO => match args.as_slice() {
            [Ty::List(a), Ty::List(b)] if name == operators::ADD => {
                Ok(Ty::List(Box::new(unify((**a).clone(), b))))
            }
            [a, b] if a == b && matches!(a, Ty::Int | Ty::Uint | Ty::Double) => Ok(a.clone()),
            [a, b] if a == b && matches!(a, Ty::String | Ty::Bytes) && name == operators::ADD => {
                Ok(a.clone())
            }
            [a, b]
                if matches!(a, Ty::Dyn | Ty::Duration | Ty::Timestamp)
                    || matches!(b, Ty::Dyn | Ty::Duration | Ty::Timestamp) =>
            {
                Ok(Ty::Dyn)
            }
            _ => Err(no_overload(name, &args)),
        },
        operators::NEGATE => match args.as_slice() {
            [t @ (Ty::Int | Ty::Double | Ty::Dyn | Ty::Duration)] => Ok(t.clone()),
            _ => Err(no_overload(name, &args)),
        },
        operators::INDEX => match args.as_slice() {
            [Ty::List(t), _] | [Ty::Map(t), _] => Ok((**t).clone()),
            [Ty::Dyn, _] => Ok(Ty::Dyn),
            _ => Err(no_overload(name, &args)),
        },
        SEMVER_COMPARE => {
            if target.is_some() || args.len() != 2 {
                let mut all = target.into_iter().collect::<Vec<_>>();
                all.extend(args);
                Err(no_overload(name, &all))
            } else {
                Ok(Ty::Int)
            }
        }
        _ => function_type(name).ok_or_else(|| format!("undeclared reference to '{name}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gvk(group: &str, version: &str, kind: &str) -> Constraint {
        Constraint {
            failure_message: String::new(),
            kind: Kind::Gvk {
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
            },
        }
    }

    fn pkg(name: &str, range: &str) -> Constraint {
        Constraint {
            failure_message: String::new(),
            kind: Kind::Package {
                package_name: name.into(),
                version_range: range.into(),
            },
        }
    }

    fn msg(mut c: Constraint, m: &str) -> Constraint {
        c.failure_message = m.into();
        c
    }

    fn compound(kind: fn(Vec<Constraint>) -> Kind, items: Vec<Constraint>) -> Constraint {
        Constraint {
            failure_message: String::new(),
            kind: kind(items),
        }
    }

    // Inputs of operator-framework/api pkg/constraints/constraint_test.go.
    const INPUT_BASIC_GVK: &str = r#"{
        "failureMessage": "blah",
        "gvk": {"group": "example.com", "version": "v1", "kind": "Foo"}
    }"#;

    const INPUT_BASIC_PACKAGE: &str = r#"{
        "failureMessage": "blah",
        "package": {"packageName": "foo", "versionRange": ">=1.0.0"}
    }"#;

    const INPUT_BASIC_COMPOUND_TMPL: &str = r#"{
"failureMessage": "blah",
"%s": {
	"constraints": [
		{
			"failureMessage": "blah blah",
			"package": {"packageName": "fuz", "versionRange": ">=1.0.0"}
		}
	]
}}
"#;

    const INPUT_COMPLEX: &str = r#"{
"failureMessage": "blah",
"all": {"constraints": [
    {"package": {"packageName": "fuz", "versionRange": ">=1.0.0"}},
    {"gvk": {"group": "fals.example.com", "version": "v1", "kind": "Fal"}},
    {"failureMessage": "foo and buf must be stable versions",
     "all": {"constraints": [
        {"package": {"packageName": "foo", "versionRange": ">=1.0.0"}},
        {"package": {"packageName": "buf", "versionRange": ">=1.0.0"}},
        {"gvk": {"group": "foos.example.com", "version": "v1", "kind": "Foo"}}
     ]}},
    {"failureMessage": "blah blah",
     "any": {"constraints": [
        {"gvk": {"group": "foos.example.com", "version": "v1beta1", "kind": "Foo"}},
        {"gvk": {"group": "foos.example.com", "version": "v1beta2", "kind": "Foo"}},
        {"gvk": {"group": "foos.example.com", "version": "v1", "kind": "Foo"}}
     ]}},
    {"not": {"constraints": [
        {"gvk": {"group": "bazs.example.com", "version": "v1alpha1", "kind": "Baz"}}
    ]}}
]}}
"#;

    /// Upstream's TestParse table (constraint_test.go).
    #[test]
    fn upstream_parse_table() {
        let basic_nested = || vec![msg(pkg("fuz", ">=1.0.0"), "blah blah")];
        let too_large: Vec<u8> = (0..=MAX_CONSTRAINT_SIZE)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let cases: Vec<(&str, Vec<u8>, Result<Constraint, &str>)> = vec![
            (
                "Valid/BasicGVK",
                INPUT_BASIC_GVK.into(),
                Ok(msg(gvk("example.com", "v1", "Foo"), "blah")),
            ),
            (
                "Valid/BasicPackage",
                INPUT_BASIC_PACKAGE.into(),
                Ok(msg(pkg("foo", ">=1.0.0"), "blah")),
            ),
            (
                "Valid/BasicAll",
                INPUT_BASIC_COMPOUND_TMPL.replace("%s", "all").into(),
                Ok(msg(compound(Kind::All, basic_nested()), "blah")),
            ),
            (
                "Valid/BasicAny",
                INPUT_BASIC_COMPOUND_TMPL.replace("%s", "any").into(),
                Ok(msg(compound(Kind::Any, basic_nested()), "blah")),
            ),
            (
                "Valid/BasicNot",
                INPUT_BASIC_COMPOUND_TMPL.replace("%s", "not").into(),
                Ok(msg(compound(Kind::Not, basic_nested()), "blah")),
            ),
            (
                "Valid/Complex",
                INPUT_COMPLEX.into(),
                Ok(msg(
                    compound(
                        Kind::All,
                        vec![
                            pkg("fuz", ">=1.0.0"),
                            gvk("fals.example.com", "v1", "Fal"),
                            msg(
                                compound(
                                    Kind::All,
                                    vec![
                                        pkg("foo", ">=1.0.0"),
                                        pkg("buf", ">=1.0.0"),
                                        gvk("foos.example.com", "v1", "Foo"),
                                    ],
                                ),
                                "foo and buf must be stable versions",
                            ),
                            msg(
                                compound(
                                    Kind::Any,
                                    vec![
                                        gvk("foos.example.com", "v1beta1", "Foo"),
                                        gvk("foos.example.com", "v1beta2", "Foo"),
                                        gvk("foos.example.com", "v1", "Foo"),
                                    ],
                                ),
                                "blah blah",
                            ),
                            compound(Kind::Not, vec![gvk("bazs.example.com", "v1alpha1", "Baz")]),
                        ],
                    ),
                    "blah",
                )),
            ),
            (
                "Invalid/TooLarge",
                too_large,
                Err("olm.constraint value is greater than max constraint size 131072 bytes"),
            ),
            (
                "Invalid/UnknownField",
                br#"{"failureMessage": "something", "arbitrary": {"key": "value"}}"#.to_vec(),
                Err(r#"json: unknown field "arbitrary""#),
            ),
        ];
        for (name, input, want) in cases {
            let got = parse(&input).map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_owned), "{name}");
        }
    }

    /// Refusals beyond upstream's table, with the error text each must carry.
    #[test]
    fn refusals() {
        let deep = {
            let mut s = String::new();
            for _ in 0..MAX_CONSTRAINT_DEPTH {
                s.push_str(r#"{"all":{"constraints":["#);
            }
            s.push_str(r#"{"gvk":{}}"#);
            for _ in 0..MAX_CONSTRAINT_DEPTH {
                s.push_str("]}}");
            }
            s
        };
        let cases: Vec<(&str, String, &str)> = vec![
            (
                "malformed",
                r#"{"gvk": {"group": "a",}}"#.into(),
                "invalid JSON: invalid character '}' looking for beginning of object key string at offset 22",
            ),
            (
                "truncated",
                r#"{"gvk": "#.into(),
                "invalid JSON: unexpected end of input looking for beginning of value at offset 8",
            ),
            ("empty input", "  ".into(), "invalid JSON: empty input"),
            (
                "not an object",
                r#""gvk""#.into(),
                "json: cannot unmarshal string into constraint of type object",
            ),
            (
                "wrong member type",
                r#"{"gvk": {"group": 1}}"#.into(),
                r#"json: cannot unmarshal number into field "gvk.group" of type string"#,
            ),
            (
                "wrong compound type",
                r#"{"all": []}"#.into(),
                r#"json: cannot unmarshal array into field "all" of type object"#,
            ),
            (
                "nested unknown field",
                r#"{"all": {"constraints": [{"gvk": {"grp": "x"}}]}}"#.into(),
                r#"json: unknown field "grp" at all.constraints[0].gvk"#,
            ),
            (
                "unknown compound field",
                r#"{"any": {"items": []}}"#.into(),
                r#"json: unknown field "items" at any"#,
            ),
            ("empty", "{}".into(), "constraint is empty"),
            ("null", "null".into(), "constraint is empty"),
            (
                "only a message",
                r#"{"failureMessage": "x"}"#.into(),
                "constraint is empty",
            ),
            (
                "member set to null",
                r#"{"gvk": null}"#.into(),
                "constraint is empty",
            ),
            (
                "nested empty",
                r#"{"any": {"constraints": [{"gvk": {}}, {}]}}"#.into(),
                "constraint is empty at any.constraints[1]",
            ),
            (
                "two members",
                r#"{"gvk": {}, "cel": {"rule": "true"}}"#.into(),
                "constraint sets more than one of gvk, package, all, any, not, cel: gvk, cel",
            ),
            ("too deep", deep, "constraint at all.constraints[0]"),
            (
                "cel does not compile",
                r#"{"cel": {"rule": "properties.exists(p, "}}"#.into(),
                r#"cel rule "properties.exists(p, ": ERROR: <input>:1:"#,
            ),
            (
                "cel not bool",
                r#"{"cel": {"rule": "1"}}"#.into(),
                r#"cel rule "1": cel expressions must have type Bool"#,
            ),
            ("cel empty rule", r#"{"cel": {}}"#.into(), r#"cel rule """#),
            (
                "nested cel",
                r#"{"not": {"constraints": [{"cel": {"rule": "nope(1)"}}]}}"#.into(),
                r#"cel rule "nope(1)" at not.constraints[0]: undeclared reference to 'nope'"#,
            ),
        ];
        for (name, input, want) in cases {
            let err = match parse(input.as_bytes()) {
                Ok(c) => panic!("{name}: parsed as {c:?}"),
                Err(e) => e.to_string(),
            };
            assert!(err.starts_with(want), "{name}: {err}");
        }
    }

    #[test]
    fn depth_limit_is_exact() {
        let nest = |levels: usize| {
            let mut s = String::new();
            for _ in 1..levels {
                s.push_str(r#"{"not":{"constraints":["#);
            }
            s.push_str(r#"{"gvk":{}}"#);
            for _ in 1..levels {
                s.push_str("]}}");
            }
            s
        };
        let mut c = parse(nest(MAX_CONSTRAINT_DEPTH).as_bytes()).unwrap();
        let mut levels = 1;
        while let Kind::Not(mut inner) = c.kind {
            c = inner.remove(0);
            levels += 1;
        }
        assert_eq!(levels, MAX_CONSTRAINT_DEPTH);
        let err = parse(nest(MAX_CONSTRAINT_DEPTH + 1).as_bytes()).unwrap_err();
        assert!(matches!(err, ConstraintError::TooDeep { .. }), "{err}");
        assert!(
            err.to_string()
                .ends_with("nests deeper than the maximum of 64 levels")
        );
    }

    #[test]
    fn hostile_json_nesting_is_an_error() {
        let s = "[".repeat(100_000);
        let err = parse(format!(r#"{{"failureMessage": {s}"#).as_bytes()).unwrap_err();
        assert!(err.to_string().contains("nest deeper than"), "{err}");
    }

    #[test]
    fn size_limit_boundary() {
        let mut exact = br#"{"gvk": {}}"#.to_vec();
        exact.resize(MAX_CONSTRAINT_SIZE, b' ');
        assert_eq!(parse(&exact).unwrap(), gvk("", "", ""));
        exact.push(b' ');
        assert_eq!(parse(&exact).unwrap_err(), ConstraintError::TooLarge);
    }

    /// Go's decoder quirks that bundles written for upstream may rely on.
    #[test]
    fn go_decoder_semantics() {
        // Case-insensitive member names, exact match preferred.
        assert_eq!(
            parse(br#"{"GVK": {"Group": "g", "VERSION": "v", "kind": "k"}}"#).unwrap(),
            gvk("g", "v", "k")
        );
        // KELVIN SIGN folds to k in Go's matching.
        assert_eq!(
            parse("{\"pac\u{212A}age\": {\"packageName\": \"p\"}}".as_bytes()).unwrap(),
            pkg("p", "")
        );
        // A repeated key merges into what the first decoded.
        assert_eq!(
            parse(br#"{"gvk": {"group": "g"}, "gvk": {"kind": "k"}}"#).unwrap(),
            gvk("g", "", "k")
        );
        // null leaves strings alone.
        assert_eq!(
            parse(br#"{"failureMessage": "m", "failureMessage": null, "gvk": {"group": null}}"#)
                .unwrap(),
            msg(gvk("", "", ""), "m")
        );
        // A later null clears an earlier member.
        assert_eq!(
            parse(br#"{"cel": {"rule": "true"}, "cel": null, "gvk": {}}"#).unwrap(),
            gvk("", "", "")
        );
        // Only the first value is read.
        assert_eq!(parse(br#"{"gvk": {}} trailing"#).unwrap(), gvk("", "", ""));
        // Empty compound lists are allowed (an empty all is vacuously true to the resolver).
        assert_eq!(
            parse(br#"{"all": {}}"#).unwrap(),
            compound(Kind::All, vec![])
        );
        assert_eq!(
            parse(br#"{"any": {"constraints": null}}"#).unwrap(),
            compound(Kind::Any, vec![])
        );
        // Escapes and surrogates.
        assert_eq!(
            parse(br#"{"failureMessage": "a\"\u00e9\ud83d\ude00\ud800", "gvk": {}}"#)
                .unwrap()
                .failure_message,
            "a\"é😀\u{FFFD}"
        );
    }

    #[test]
    fn parses_cel() {
        let c = parse(br#"{"failureMessage": "m", "cel": {"rule": "properties.exists(p, p.type == 'olm.test')"}}"#).unwrap();
        let Kind::Cel(rule) = &c.kind else {
            panic!("{c:?}")
        };
        assert_eq!(rule.rule(), "properties.exists(p, p.type == 'olm.test')");
        assert!(rule.evaluate(&[("olm.test", "1")]));
        assert!(!rule.evaluate(&[("olm.other", "1")]));
    }

    /// Upstream's TestCelLibrary table (cel_test.go): properties `[{"type": "olm.test",
    /// "value": "1.0.0"}]`; `None` expects a compile error.
    #[test]
    fn upstream_cel_table() {
        let props = [("olm.test", r#""1.0.0""#)];
        let cases: [(&str, &str, Option<bool>); 6] = [
            (
                "ValidCelExpression/True",
                "properties.exists(p, p.type == 'olm.test' && (semver_compare(p.value, '1.0.0') == 0))",
                Some(true),
            ),
            (
                "ValidCelExpression/NotEqual/False",
                "properties.exists(p, p.type == 'olm.test' && (semver_compare(p.value, '1.0.1') == 0))",
                Some(false),
            ),
            (
                "ValidCelExpression/Less/False",
                "properties.exists(p, p.type == 'olm.test' && (semver_compare(p.value, '1.0.0') < 0))",
                Some(false),
            ),
            (
                "ValidCelExpression/Larger/False",
                "properties.exists(p, p.type == 'olm.test' && (semver_compare(p.value, '1.0.0') > 0))",
                Some(false),
            ),
            (
                "InvalidCelExpression/NotExistedFunc",
                "properties.exists(p, p.type == 'olm.test' && (doesnt_exist(p.value, '1.0.0') == 0))",
                None,
            ),
            ("InvalidCelExpression/NonBoolReturn", "1", None),
        ];
        for (name, rule, want) in cases {
            match (CelRule::compile(rule), want) {
                (Ok(r), Some(out)) => assert_eq!(r.evaluate(&props), out, "{name}"),
                (Err(_), None) => {}
                (got, _) => panic!("{name}: {got:?}"),
            }
        }
    }

    #[test]
    fn compile_errors() {
        let cases = [
            ("properties.exists(p, ", "ERROR"),
            ("1", "cel expressions must have type Bool"),
            ("'a'", "cel expressions must have type Bool"),
            ("properties", "cel expressions must have type Bool"),
            ("properties[0].value", "cel expressions must have type Bool"),
            (
                "semver_compare('1.0.0', '1.0.0')",
                "cel expressions must have type Bool",
            ),
            (
                "size(properties) + 1",
                "cel expressions must have type Bool",
            ),
            ("foo == 1", "undeclared reference to 'foo'"),
            ("max(1, 2) == 2", "undeclared reference to 'max'"),
            ("doesnt_exist(1)", "undeclared reference to 'doesnt_exist'"),
            (
                "semver_compare('1.0.0') == 0",
                "found no matching overload for 'semver_compare'",
            ),
            (
                "'1.0.0'.semver_compare('1.0.0') == 0",
                "found no matching overload",
            ),
            (
                "1 && true",
                "found no matching overload for '_&&_' applied to '(int, bool)'",
            ),
            ("Foo{a: 1} == 1", "message construction is not supported"),
            ("1.a == 1", "does not support field selection"),
            ("1 + 'a' == 1", "found no matching overload for '_+_'"),
            ("[1].exists(x, 1)", "found no matching overload"),
        ];
        for (rule, want) in cases {
            match CelRule::compile(rule) {
                Ok(r) => panic!("{rule}: compiled as {r:?}"),
                Err(e) => assert!(e.to_string().contains(want), "{rule}: {e}"),
            }
        }
        // Boolean expressions compile, including the dyn-typed comparisons rules are made of.
        for rule in [
            "true",
            "has(properties[0].value)",
            "properties.all(p, p.type != '')",
            "properties.exists_one(p, p.type == 'a')",
            "properties.map(p, p.type).exists(t, t == 'a')",
            "properties.filter(p, p.type == 'a').size() == 1",
            "[true][0]",
            "size('abc') == 3 && 'abc'.startsWith('a') && 'abc'.matches('^a')",
            "!(1 in [1, 2]) || {'a': 1}['a'] == 1",
            "(1 > 2 ? 'a' : 'b') == 'b'",
        ] {
            assert!(
                CelRule::compile(rule).is_ok(),
                "{rule}: {:?}",
                CelRule::compile(rule)
            );
        }
    }

    #[test]
    fn semver_compare_rules() {
        let rule = CelRule::compile(
            r#"properties.exists(p, p.type == "olm.package" && semver_compare(p.value.version, "1.0.0") >= 0)"#,
        )
        .unwrap();
        let pkg = |v: &str| format!(r#"{{"packageName": "foo", "version": "{v}"}}"#);
        for (version, want) in [
            ("1.0.0", true),
            ("1.2.3", true),
            ("0.9.9", false),
            ("1.0.0-rc.1", false),
            ("v1.0.0", true), // ParseTolerant forgives the v prefix
            ("1", true),      // and missing minor/patch
            ("01.0.0", true), // and leading zeros
            ("1.0.0+build", true),
            ("not-a-version", false), // a parse error is an evaluation error: false
        ] {
            let value = pkg(version);
            assert_eq!(
                rule.evaluate(&[("olm.gvk", r#"{"group":"g"}"#), ("olm.package", &value)]),
                want,
                "{version}"
            );
        }
        // Numbers reach semver_compare formatted as Go's fmt.Sprint of a float64.
        let num = CelRule::compile("properties.exists(p, semver_compare(p.value, '2.0.0') == 0)")
            .unwrap();
        assert!(num.evaluate(&[("olm.n", "2")]));
        assert!(num.evaluate(&[("olm.n", "2.0")]));
        assert!(!num.evaluate(&[("olm.n", "2000000")])); // "2e+06" does not parse
        let cmp = |a: &str, b: &str| {
            CelRule::compile(&format!("semver_compare('{a}', '{b}') == -1"))
                .unwrap()
                .evaluate(&[])
        };
        assert!(cmp("1.0.0-alpha", "1.0.0"));
        assert!(cmp("1.9.0", "1.10.0"));
        assert!(!cmp("1.10.0", "1.9.0"));
    }

    #[test]
    fn evaluation_errors_are_false() {
        let props = [("olm.test", r#""1.0.0""#)];
        for rule in [
            "semver_compare('x', '1.0.0') == 0",
            "!(semver_compare('x', '1.0.0') == 0)",
            "properties[5].type == 'a'",
            "properties[0].value.missing == 1",
            "1 / 0 == 1",
            "int('abc') == 1",
        ] {
            let r = CelRule::compile(rule).unwrap();
            assert!(!r.evaluate(&props), "{rule}");
        }
        // Non-bool results at run time (dyn-typed, so not caught by the checker) are false.
        let r = CelRule::compile("[true, 1][1] == 1 && ([1][0] > 0)").unwrap();
        assert!(r.evaluate(&props));
    }

    /// CEL's error-absorbing `exists`/`all`: one property whose value lacks a key, or is not
    /// JSON, must not hide a match among the others.
    #[test]
    fn errors_inside_exists_and_all() {
        let props = [
            ("olm.bad", "not json"),
            ("olm.gvk", r#"{"group": "g"}"#),
            (
                "olm.package",
                r#"{"packageName": "foo", "version": "1.0.0"}"#,
            ),
        ];
        let eval = |rule: &str| CelRule::compile(rule).unwrap().evaluate(&props);
        assert!(eval("properties.exists(p, p.value.packageName == 'foo')"));
        assert!(!eval("properties.exists(p, p.value.packageName == 'bar')"));
        // An error with no true element stays an error: negating it does not make it true.
        assert!(!eval("!properties.exists(p, p.value.packageName == 'bar')"));
        assert!(!eval("properties.all(p, p.value.packageName == 'foo')"));
        assert!(eval("!properties.all(p, has(p.value.packageName))")); // false wins over the error
        assert!(eval(
            "!properties.all(p, p.type == 'olm.package' && has(p.value.packageName))"
        ));
        // No false element, one error: the error stands, so false.
        assert!(!eval("properties.all(p, p.type != 'olm.other')"));
        // The unparseable property is an empty map: no type, no value.
        assert!(eval("!has(properties[0].type) && has(properties[1].type)"));
        assert!(eval("size(properties) == 3"));
    }

    #[test]
    fn property_values_are_typed_as_go_decodes_them() {
        let props = [
            (
                "olm.a",
                r#"{"n": 3, "b": true, "s": "x", "l": [1, "two"], "z": null}"#,
            ),
            ("olm.big", "1e400"),
        ];
        let eval = |rule: &str| CelRule::compile(rule).unwrap().evaluate(&props);
        assert!(eval("properties[0].value.n == 3.0"));
        assert!(eval("properties[0].value.b == true"));
        // A dyn-typed rule is not a boolean expression to the checker, as in cel-go.
        assert!(CelRule::compile("properties[0].value.b").is_err());
        assert!(eval(
            "properties[0].value.s == 'x' && properties[0].value.l[1] == 'two'"
        ));
        assert!(eval("properties[0].value.z == null"));
        assert!(eval("!has(properties[1].value)"));
        assert!(eval("properties[0].type == 'olm.a'"));
    }

    #[test]
    fn go_float_formatting() {
        for (f, want) in [
            (2.0, "2"),
            (1.5, "1.5"),
            (100_000.0, "100000"),
            (123_456.0, "123456"),
            (1_000_000.0, "1e+06"),
            (1_234_567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1e21, "1e+21"),
        ] {
            assert_eq!(go_float(f), want, "{f}");
        }
    }

    /// CEL drops even runs of unary operators; the `cel` crate alone would not.
    #[test]
    fn repeated_unary_operators() {
        let eval = |rule: &str| CelRule::compile(rule).unwrap().evaluate(&[]);
        assert!(eval("!!true"));
        assert!(!eval("!!!true"));
        assert!(eval("! ! true"));
        assert!(eval("!(!true)"));
        assert!(eval("--1 == 1"));
        assert!(eval("1 - -1 == 2 && 1--1 == 2 && 1e-5 > 0.0"));
        assert!(eval("'!!' == '!!' && \"--\" == \"--\""));
        assert!(eval("true // don't !!\n && !!true"));
        assert_eq!(CelRule::compile("!!1").unwrap_err(), CelError::NotBool);
        assert_eq!(
            CelError::NotBool.to_string(),
            "cel expressions must have type Bool"
        );
        assert_eq!(CelRule::compile("!!true").unwrap().rule(), "!!true");
    }

    #[test]
    fn rule_depth_limit() {
        let parens = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
        assert!(CelRule::compile(&parens(20)).unwrap().evaluate(&[]));
        for rule in [
            parens(MAX_RULE_DEPTH + 1),
            format!("{}true", "true ? true : ".repeat(MAX_RULE_DEPTH + 1)),
            format!("1{} == 1", " + 1".repeat(MAX_RULE_DEPTH)),
        ] {
            let err = CelRule::compile(&rule).unwrap_err().to_string();
            assert_eq!(
                err,
                format!("expression nests deeper than {MAX_RULE_DEPTH} levels"),
                "{rule}"
            );
        }
    }

    /// The deepest rules that compile still evaluate on half of a default 2 MiB thread stack.
    #[test]
    fn deepest_rules_evaluate_on_a_small_stack() {
        let shapes: [fn(usize) -> String; 5] = [
            |n| format!("1{} == 1", " + 0".repeat(n)),
            |n| format!("{}true{}", "properties.exists(p, ".repeat(n), ")".repeat(n)),
            |n| format!("properties[0]{} == 1", ".a".repeat(n)),
            |n| format!("{}'a'{} == 1", "size(".repeat(n), ")".repeat(n)),
            |n| format!("{}true", "!".repeat(n)),
        ];
        let compiled: Vec<CelRule> = shapes
            .iter()
            .map(|shape| {
                (1..=MAX_RULE_DEPTH + 2)
                    .rev()
                    .find_map(|n| CelRule::compile(&shape(n)).ok())
                    .unwrap()
            })
            .collect();
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                for r in &compiled {
                    let _ = r.evaluate(&[("t", "{}")]);
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn hostile_rules_do_not_panic() {
        for rule in [
            "(".repeat(10_000),
            format!("{}true{}", "(".repeat(5_000), ")".repeat(5_000)),
            format!("{}true", "!".repeat(10_000)),
            "[".repeat(10_000),
            "\u{0}".to_owned(),
            String::new(),
            "properties.exists(p, ".to_owned(),
            "a.b.c.d().e[1]{".to_owned(),
            "true ? true : ".repeat(10_000),
            format!("{}true{}", "size(".repeat(60_000), ")".repeat(60_000)),
            format!("{}true", "properties.exists(p, ".repeat(5_000)),
            "'unterminated".to_owned(),
            "'''".to_owned(),
            "r'".to_owned(),
        ] {
            let _ = CelRule::compile(&rule);
        }
    }
}
