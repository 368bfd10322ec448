//! Registry rewrites and mirrors from a `containers-registries.conf(5)` file (version 2, the
//! `[[registry]]` tables), as upstream's catalogd and operator-controller honour
//! `/etc/containers/registries.conf` through containers/image: an image named under `prefix`
//! is pulled from each `[[registry.mirror]]` in turn and then from `location`, and `insecure`
//! registries are spoken to over plain HTTP. Upstream's e2e names catalogs at a
//! `mirrored-registry…` host that only this rewrite makes reachable.
//!
//! Supported keys: `prefix` (a `host[:port][/path]`, or `*.domain` for any subdomain),
//! `location`, `insecure`, `blocked`, `mirror-by-digest-only`, and per mirror `location` and
//! `insecure`. Others (`unqualified-search-registries`, short-name aliases) are read and
//! ignored: references here are always fully qualified.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::client::ImageRef;

/// Where containers tools look for the file.
pub const DEFAULT_PATH: &str = "/etc/containers/registries.conf";

/// A registries.conf that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// Reading it failed (other than not existing).
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// It is not valid TOML of the expected shape.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, as the TOML reader says.
        message: String,
    },
}

#[derive(Debug, Default, Deserialize)]
struct File {
    #[serde(default)]
    registry: Vec<RegistryTable>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RegistryTable {
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    blocked: bool,
    #[serde(default)]
    mirror_by_digest_only: bool,
    #[serde(default)]
    mirror: Vec<MirrorTable>,
}

#[derive(Debug, Default, Deserialize)]
struct MirrorTable {
    location: String,
    #[serde(default)]
    insecure: bool,
}

/// The rules of one registries.conf; empty when there is none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registries {
    rules: Vec<Rule>,
    /// The hosts of insecure locations and mirrors, found once when the file is read: every
    /// registry request asks.
    insecure: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    prefix: String,
    location: String,
    insecure: bool,
    blocked: bool,
    mirror_by_digest_only: bool,
    mirrors: Vec<(String, bool)>,
}

/// Where to try pulling an image from, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Each reference in turn (mirrors first, then the location).
    Try(Vec<ImageRef>),
    /// The registries.conf blocks the image's registry.
    Blocked {
        /// The rule's prefix.
        prefix: String,
    },
}

impl Registries {
    /// Reads `path`; a file that does not exist gives no rules.
    pub fn load(path: &Path) -> Result<Registries, MirrorError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Registries::parse(&text, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registries::default()),
            Err(source) => Err(MirrorError::Io {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Parses the text of a registries.conf read from `path` (named in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Registries, MirrorError> {
        let file: File = toml::from_str(text).map_err(|e| MirrorError::Invalid {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let mut rules = Vec::new();
        for table in file.registry {
            let prefix = if table.prefix.is_empty() {
                table.location.clone()
            } else {
                table.prefix
            };
            if prefix.is_empty() {
                return Err(MirrorError::Invalid {
                    path: path.to_owned(),
                    message: "a [[registry]] table has neither prefix nor location".to_owned(),
                });
            }
            rules.push(Rule {
                location: if table.location.is_empty() {
                    prefix.clone()
                } else {
                    table.location
                },
                prefix,
                insecure: table.insecure,
                blocked: table.blocked,
                mirror_by_digest_only: table.mirror_by_digest_only,
                mirrors: table
                    .mirror
                    .into_iter()
                    .map(|m| (m.location, m.insecure))
                    .collect(),
            });
        }
        let insecure = insecure_hosts(&rules);
        Ok(Registries { rules, insecure })
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The registry hosts marked `insecure` (as a location or a mirror): spoken to over plain
    /// HTTP.
    pub fn insecure_hosts(&self) -> &BTreeSet<String> {
        &self.insecure
    }

    /// Where to pull `reference` from: the rule with the longest matching prefix rewrites it
    /// (mirrors first, unless `mirror-by-digest-only` and it is not pinned by digest); no rule
    /// leaves it as it is.
    pub fn route(&self, reference: &ImageRef) -> Route {
        let name = format!("{}/{}", reference.registry(), reference.repository());
        let Some((rule, matched)) = self
            .rules
            .iter()
            .filter_map(|r| matches(&r.prefix, &name).map(|m| (r, m)))
            .max_by_key(|(_, m)| m.len())
        else {
            return Route::Try(vec![reference.clone()]);
        };
        if rule.blocked {
            return Route::Blocked {
                prefix: rule.prefix.clone(),
            };
        }
        let rest = &name[matched.len()..];
        let mut locations: Vec<&str> = Vec::new();
        if !rule.mirror_by_digest_only || reference.digest().is_some() {
            locations.extend(rule.mirrors.iter().map(|(l, _)| l.as_str()));
        }
        locations.push(&rule.location);
        let suffix = match (reference.digest(), reference.tag()) {
            (Some(digest), _) => format!("@{digest}"),
            (None, Some(tag)) => format!(":{tag}"),
            (None, None) => String::new(),
        };
        let refs = locations
            .into_iter()
            .filter_map(|l| format!("{l}{rest}{suffix}").parse::<ImageRef>().ok())
            .collect();
        Route::Try(refs)
    }
}

/// The hosts of `rules`' insecure locations and mirrors.
fn insecure_hosts(rules: &[Rule]) -> BTreeSet<String> {
    let host = |location: &str| location.split('/').next().unwrap_or_default().to_owned();
    let mut hosts = BTreeSet::new();
    for rule in rules {
        if rule.insecure {
            hosts.insert(host(&rule.location));
        }
        for (location, insecure) in &rule.mirrors {
            if *insecure {
                hosts.insert(host(location));
            }
        }
    }
    hosts
}

/// The part of `name` (`host/repository`) that `prefix` matches, if it does: the whole prefix
/// when `name` is it or continues it with `/`; for `*.domain`, the host when it is a subdomain.
fn matches<'a>(prefix: &str, name: &'a str) -> Option<&'a str> {
    if let Some(domain) = prefix.strip_prefix("*.") {
        let host = name.split('/').next().unwrap_or_default();
        let sub = host.strip_suffix(domain)?;
        return sub.ends_with('.').then_some(host);
    }
    if name == prefix {
        return Some(name);
    }
    name.strip_prefix(prefix)
        .filter(|rest| rest.starts_with('/'))
        .map(|_| &name[..prefix.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> ImageRef {
        s.parse().unwrap()
    }

    fn tried(registries: &Registries, reference: &str) -> Vec<String> {
        match registries.route(&r(reference)) {
            Route::Try(refs) => refs.iter().map(ToString::to_string).collect(),
            Route::Blocked { prefix } => vec![format!("blocked by {prefix}")],
        }
    }

    /// The rewrite of upstream operator-controller's e2e: catalogs named at a host that only
    /// the registries.conf makes reachable.
    #[test]
    fn a_prefix_is_pulled_from_its_location() {
        let conf = r#"
[[registry]]
prefix = "mirrored-registry.operator-controller-e2e.svc.cluster.local:5000"
location = "docker-registry.operator-controller-e2e.svc.cluster.local:5000"
"#;
        let registries = Registries::parse(conf, Path::new("registries.conf")).unwrap();
        assert_eq!(
            tried(
                &registries,
                "mirrored-registry.operator-controller-e2e.svc.cluster.local:5000/e2e/test-catalog:v1"
            ),
            ["docker-registry.operator-controller-e2e.svc.cluster.local:5000/e2e/test-catalog:v1"]
        );
        assert_eq!(tried(&registries, "quay.io/a/b:1"), ["quay.io/a/b:1"]);
    }

    #[test]
    fn mirrors_come_first_and_the_longest_prefix_wins() {
        let conf = r#"
unqualified-search-registries = ["docker.io"]

[[registry]]
prefix = "quay.io"
location = "quay.io"
[[registry.mirror]]
location = "10.0.0.5:5000/quay"
insecure = true

[[registry]]
prefix = "quay.io/operatorhubio"
location = "10.0.0.5:5000/hub"
mirror-by-digest-only = true
[[registry.mirror]]
location = "10.0.0.6:5000/hub"

[[registry]]
prefix = "*.example.com"
blocked = true
"#;
        let registries = Registries::parse(conf, Path::new("registries.conf")).unwrap();
        assert_eq!(
            tried(&registries, "quay.io/org/app:1"),
            ["10.0.0.5:5000/quay/org/app:1", "quay.io/org/app:1"]
        );
        // Digest-only mirrors are skipped for a tag.
        assert_eq!(
            tried(&registries, "quay.io/operatorhubio/catalog:latest"),
            ["10.0.0.5:5000/hub/catalog:latest"]
        );
        let digest = "sha256:".to_owned() + &"a".repeat(64);
        assert_eq!(
            tried(
                &registries,
                &format!("quay.io/operatorhubio/catalog@{digest}")
            ),
            [
                format!("10.0.0.6:5000/hub/catalog@{digest}"),
                format!("10.0.0.5:5000/hub/catalog@{digest}")
            ]
        );
        assert_eq!(
            tried(&registries, "registry.example.com/x:1"),
            ["blocked by *.example.com"]
        );
        // A prefix matches whole path segments only.
        assert_eq!(tried(&registries, "quay.iox/a:1"), ["quay.iox/a:1"]);
        assert_eq!(
            registries.insecure_hosts().iter().collect::<Vec<_>>(),
            ["10.0.0.5:5000"]
        );
    }

    #[test]
    fn a_missing_file_has_no_rules_and_a_broken_one_says_where() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            Registries::load(&dir.path().join("none.conf"))
                .unwrap()
                .is_empty()
        );
        let err = Registries::parse("[[registry]]\nprefix = 3\n", Path::new("/etc/r.conf"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("/etc/r.conf: "), "{err}");
        let err = Registries::parse("[[registry]]\ninsecure = true\n", Path::new("r.conf"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("neither prefix nor location"), "{err}");
    }
}
