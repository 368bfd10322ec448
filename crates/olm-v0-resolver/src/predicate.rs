//! Tests on entries (upstream's `cache/predicates.go`), and the dependency properties that
//! become them (`olm.gvk.required`, `olm.package.required`, `olm.label.required`,
//! `olm.constraint`). Each predicate describes itself in upstream's words, which end up in
//! "bundle X requires an operator …" sentences.

use olm_version::blang::{Range, RangeError, Version};
use serde_json::Value;

use super::constraint::{self, CelRule, ConstraintError, Kind};
use super::entry::{Entry, SourceKey};
use olm_v0::ApiKey;

/// A test on an entry.
#[derive(Debug, Clone)]
pub enum Predicate {
    /// Its CSV name is this.
    CsvName(String),
    /// Its channel is this; an empty channel matches every entry.
    Channel(String),
    /// Its package (an `olm.package` property or its catalog package) is this.
    Package(String),
    /// Its version (an `olm.package` property's or its own) is in this range.
    VersionInRange(Range, String),
    /// It has an `olm.label` property with this label.
    Label(String),
    /// It comes from this catalog.
    Catalog(SourceKey),
    /// It has an `olm.gvk` property for this API.
    ProvidingApi(ApiKey),
    /// Its skip range includes this version.
    SkipRangeIncludes(Version),
    /// It replaces or skips this CSV.
    Replaces(String),
    /// All of these hold.
    And(Vec<Predicate>),
    /// One of these holds.
    Or(Vec<Predicate>),
    /// None of these holds.
    Not(Vec<Predicate>),
    /// Always this answer.
    Bool(bool),
    /// A CEL rule over its properties holds; with the constraint's failure message.
    Cel(Box<CelRule>, String),
}

fn json_field(value: &Value, key: &str) -> Option<String> {
    value.get(key)?.as_str().map(str::to_owned)
}

impl Predicate {
    /// Whether `entry` passes.
    pub fn test(&self, entry: &Entry) -> bool {
        match self {
            Predicate::CsvName(name) => entry.name == *name,
            Predicate::Channel(channel) => channel.is_empty() || entry.channel == *channel,
            Predicate::Package(package) => {
                entry.package_names().any(|p| p == package) || entry.package == *package
            }
            Predicate::VersionInRange(range, _) => {
                let from_properties = entry
                    .parsed()
                    .packages
                    .iter()
                    .any(|(_, v)| Version::parse(v).is_ok_and(|v| range.matches(&v)));
                from_properties || entry.version.as_ref().is_some_and(|v| range.matches(v))
            }
            Predicate::Label(label) => entry.parsed().labels.iter().any(|l| l == label),
            Predicate::Catalog(key) => entry.catalog == *key,
            Predicate::ProvidingApi(api) => entry
                .parsed()
                .gvks
                .iter()
                .any(|(g, v, k)| *g == api.group && *v == api.version && *k == api.kind),
            Predicate::SkipRangeIncludes(version) => entry
                .skip_range
                .as_ref()
                .is_some_and(|r| r.matches(version)),
            Predicate::Replaces(name) => {
                entry.replaces == *name || entry.skips.iter().any(|s| s == name)
            }
            Predicate::And(all) => all.iter().all(|p| p.test(entry)),
            Predicate::Or(any) => any.iter().any(|p| p.test(entry)),
            Predicate::Not(none) => !none.iter().any(|p| p.test(entry)),
            Predicate::Bool(answer) => *answer,
            Predicate::Cel(rule, _) => {
                let properties: Vec<(&str, &str)> = entry
                    .properties
                    .iter()
                    .map(|p| (p.kind.as_str(), p.value.as_str()))
                    .collect();
                rule.evaluate(&properties)
            }
        }
    }

    /// The predicate in upstream's words ("with package: x and with version in range: …").
    /// Upstream writes a negation of one predicate without any "not" (`notPredicate.String`);
    /// here a negation always says "not", so the sentence means what the constraint does.
    pub fn describe(&self) -> String {
        let join = |list: &[Predicate], sep: &str| {
            list.iter()
                .map(Predicate::describe)
                .collect::<Vec<_>>()
                .join(sep)
        };
        match self {
            Predicate::CsvName(name) => format!("with name: {name}"),
            Predicate::Channel(channel) => format!("with channel: {channel}"),
            Predicate::Package(package) => format!("with package: {package}"),
            Predicate::VersionInRange(_, text) => format!("with version in range: {text}"),
            Predicate::Label(label) => format!("with label: {label}"),
            Predicate::Catalog(key) => format!("from catalog: {}/{}", key.namespace, key.name),
            Predicate::ProvidingApi(api) => format!(
                "providing an API with group: {}, version: {}, kind: {}",
                api.group, api.version, api.kind
            ),
            Predicate::SkipRangeIncludes(version) => format!("skip range includes: {version}"),
            Predicate::Replaces(name) => format!("replaces: {name}"),
            Predicate::And(all) => join(all, " and "),
            Predicate::Or(any) => join(any, " or "),
            Predicate::Not(none) => format!("not {}", join(none, " and not ")),
            Predicate::Bool(true) => "predicate is true".to_owned(),
            Predicate::Bool(false) => "predicate is false".to_owned(),
            Predicate::Cel(rule, message) => {
                format!(
                    "with constraint: {} and message: {}",
                    olm_goenc::quote(rule.rule()),
                    olm_goenc::quote(message)
                )
            }
        }
    }
}

/// Why a dependency property cannot be read, in upstream's words where it has them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DependencyError {
    /// The value of a `*.required` property is not JSON.
    #[error("{kind}: {error}")]
    Json {
        /// The property's type.
        kind: String,
        /// The parser's words.
        error: String,
    },
    /// An `olm.constraint` value that does not parse.
    #[error("parse olm.constraint: {0}")]
    Constraint(#[source] ConstraintError),
    /// An `olm.constraint` whose package constraint has a version range that does not parse.
    #[error("convert olm.constraint to resolver predicate: {0}")]
    Convert(#[source] RangeError),
    /// An `olm.package.required` whose version range does not parse.
    #[error(transparent)]
    Range(RangeError),
}

/// The dependency a property declares, if its type declares one.
///
/// # Errors
///
/// Why the property cannot be read ([`DependencyError`]).
pub fn dependency(kind: &str, value: &str) -> Result<Option<Predicate>, DependencyError> {
    let object = || {
        serde_json::from_str::<Value>(value).map_err(|e| DependencyError::Json {
            kind: kind.to_owned(),
            error: e.to_string(),
        })
    };
    Ok(Some(match kind {
        constraint::OLM_CONSTRAINT_TYPE => {
            let parsed =
                constraint::parse(value.as_bytes()).map_err(DependencyError::Constraint)?;
            from_constraint(parsed).map_err(DependencyError::Convert)?
        }
        "olm.gvk.required" => {
            let v = object()?;
            Predicate::ProvidingApi(ApiKey::gvk(
                &json_field(&v, "group").unwrap_or_default(),
                &json_field(&v, "version").unwrap_or_default(),
                &json_field(&v, "kind").unwrap_or_default(),
            ))
        }
        "olm.package.required" => {
            let v = object()?;
            package_required(
                &json_field(&v, "packageName").unwrap_or_default(),
                &json_field(&v, "versionRange").unwrap_or_default(),
            )
            .map_err(DependencyError::Range)?
        }
        "olm.label.required" => {
            Predicate::Label(json_field(&object()?, "label").unwrap_or_default())
        }
        _ => return Ok(None),
    }))
}

/// A package within a version range (upstream's `newPackageRequiredPredicate`).
fn package_required(name: &str, range: &str) -> Result<Predicate, RangeError> {
    let parsed = Range::parse(range)?;
    Ok(Predicate::And(vec![
        Predicate::Package(name.to_owned()),
        Predicate::VersionInRange(parsed, range.to_owned()),
    ]))
}

/// An `olm.constraint` as a predicate (upstream's `convertConstraints`).
fn from_constraint(c: constraint::Constraint) -> Result<Predicate, RangeError> {
    let all = |list: Vec<constraint::Constraint>| {
        list.into_iter()
            .map(from_constraint)
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(match c.kind {
        Kind::Gvk {
            group,
            version,
            kind,
        } => Predicate::ProvidingApi(ApiKey::gvk(&group, &version, &kind)),
        Kind::Package {
            package_name,
            version_range,
        } => package_required(&package_name, &version_range)?,
        Kind::All(list) => Predicate::And(all(list)?),
        Kind::Any(list) => Predicate::Or(all(list)?),
        Kind::Not(list) => Predicate::Not(all(list)?),
        Kind::Cel(rule) => Predicate::Cel(Box::new(rule), c.failure_message),
    })
}

#[cfg(test)]
mod tests;
