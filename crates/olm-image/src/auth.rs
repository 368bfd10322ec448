//! Registry credentials from a docker `config.json` (or a containers `auth.json`, same format).
//!
//! Users already log in with `docker login`, `podman login` or `oras login`; reading the file those
//! tools write means `olm image` needs no login command of its own. Only inline credentials are
//! read: `auths.<registry>.auth` (base64 `user:password`), or `username`/`password`, or
//! `registrytoken` (a bearer token). Credential helpers (`credsStore`, `credHelpers`) run external
//! programs and are not supported; entries that rely on them are treated as anonymous.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;

/// Credentials for one registry.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Credential {
    /// HTTP basic auth (also exchanged for a bearer token when the registry asks for one).
    Basic {
        /// The user name.
        username: String,
        /// The password or access token.
        password: String,
    },
    /// A registry bearer token used as is.
    Bearer(String),
}

impl std::fmt::Debug for Credential {
    // Secrets must not end up in logs or panic messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Credential::Bearer(_) => f.debug_tuple("Bearer").field(&"<redacted>").finish(),
        }
    }
}

/// Why an auth file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The file could not be read.
    #[error("reading registry auth file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON of the expected shape.
    #[error("registry auth file {path} is not a valid docker config.json: {message}")]
    Parse {
        /// The file (or `<memory>`).
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// An `auth` value is not base64 of `user:password`.
    #[error(
        "registry auth file {path}: the \"auth\" entry for {} is not base64 of \"username:password\"",
        olm_goenc::quote(registry)
    )]
    BadAuthField {
        /// The file.
        path: PathBuf,
        /// The `auths` key.
        registry: String,
    },
}

/// Credentials by registry, as read from one auth file.
///
/// Keys are normalised so `https://index.docker.io/v1/`, `index.docker.io` and `docker.io` all
/// match Docker Hub, and `https://quay.io` matches `quay.io`. A key may also name a repository
/// (`quay.io/org/repo`, as containers `auth.json` allows); the longest matching key wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthConfig {
    entries: BTreeMap<String, Credential>,
    source: Option<PathBuf>,
}

#[derive(serde::Deserialize)]
struct RawConfig {
    #[serde(default)]
    auths: BTreeMap<String, RawEntry>,
}

#[derive(serde::Deserialize, Default)]
struct RawEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

impl AuthConfig {
    /// No credentials: every registry is accessed anonymously.
    pub fn anonymous() -> AuthConfig {
        AuthConfig::default()
    }

    /// Parses the JSON of a docker `config.json`. `path` is only used in error messages.
    pub fn parse(json: &[u8], path: &Path) -> Result<AuthConfig, AuthError> {
        let raw: RawConfig = serde_json::from_slice(json).map_err(|e| AuthError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut entries = BTreeMap::new();
        for (key, entry) in raw.auths {
            let credential = if let Some(token) = entry.registrytoken.filter(|t| !t.is_empty()) {
                Some(Credential::Bearer(token))
            } else if let Some(auth) = entry.auth.filter(|a| !a.is_empty()) {
                let bad = || AuthError::BadAuthField {
                    path: path.to_path_buf(),
                    registry: key.clone(),
                };
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(auth.trim())
                    .map_err(|_| bad())?;
                let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
                let (username, password) = decoded.split_once(':').ok_or_else(bad)?;
                Some(Credential::Basic {
                    username: username.to_string(),
                    password: password.to_string(),
                })
            } else {
                match (entry.username, entry.password) {
                    (Some(username), Some(password)) if !username.is_empty() => {
                        Some(Credential::Basic { username, password })
                    }
                    _ => None,
                }
            };
            if let Some(credential) = credential {
                entries.insert(normalize_key(&key), credential);
            }
        }
        Ok(AuthConfig {
            entries,
            source: Some(path.to_path_buf()),
        })
    }

    /// Reads `path`.
    pub fn from_file(path: &Path) -> Result<AuthConfig, AuthError> {
        let bytes = std::fs::read(path).map_err(|source| AuthError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        AuthConfig::parse(&bytes, path)
    }

    /// The auth file container tools would use, in this order:
    /// `$REGISTRY_AUTH_FILE` (must exist when set: the user asked for it),
    /// `$DOCKER_CONFIG/config.json`, `~/.docker/config.json`. No file means anonymous access.
    pub fn load_default() -> Result<AuthConfig, AuthError> {
        if let Some(path) = std::env::var_os("REGISTRY_AUTH_FILE").filter(|p| !p.is_empty()) {
            return AuthConfig::from_file(Path::new(&path));
        }
        let candidate = match std::env::var_os("DOCKER_CONFIG").filter(|p| !p.is_empty()) {
            Some(dir) => Some(PathBuf::from(dir).join("config.json")),
            None => std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|home| PathBuf::from(home).join(".docker").join("config.json")),
        };
        match candidate {
            Some(path) if path.is_file() => AuthConfig::from_file(&path),
            _ => Ok(AuthConfig::anonymous()),
        }
    }

    /// Reads the `.dockerconfigjson` of a Secret of type `kubernetes.io/dockerconfigjson`
    /// (the format of a docker `config.json`); `secret` (`<namespace>/<name>`) names it in
    /// errors and as the [`AuthConfig::source`].
    pub fn from_dockerconfigjson(json: &[u8], secret: &str) -> Result<AuthConfig, AuthError> {
        AuthConfig::parse(json, Path::new(&format!("secret {secret}")))
    }

    /// These credentials with `overlay`'s added; where both have a key, `overlay`'s wins (a
    /// cluster's global pull secret over the process's own auth file).
    pub fn merged(&self, overlay: &AuthConfig) -> AuthConfig {
        let mut entries = self.entries.clone();
        entries.extend(overlay.entries.iter().map(|(k, v)| (k.clone(), v.clone())));
        AuthConfig {
            entries,
            source: overlay.source.clone().or_else(|| self.source.clone()),
        }
    }

    /// The file these credentials came from, if any.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// The credential for `repository` on `registry` (`host[:port]`), or `None` for anonymous
    /// access. Repository-scoped keys are tried longest first, then the registry itself.
    pub fn credential_for(&self, registry: &str, repository: &str) -> Option<&Credential> {
        let registry = normalize_key(registry);
        let mut scope = format!("{registry}/{repository}");
        loop {
            if let Some(c) = self.entries.get(&scope) {
                return Some(c);
            }
            match scope.rfind('/') {
                Some(i) if i > registry.len() => scope.truncate(i),
                _ => break,
            }
        }
        self.entries.get(&registry)
    }
}

/// `https://index.docker.io/v1/` → `docker.io`; `http://localhost:5000/` → `localhost:5000`.
fn normalize_key(key: &str) -> String {
    let key = key.trim();
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let key = key.trim_end_matches('/');
    // A bare registry URL may carry an API path (`/v1`, `/v2`); a repository path is kept.
    let key = key
        .strip_suffix("/v1")
        .or_else(|| key.strip_suffix("/v2"))
        .unwrap_or(key);
    let (host, rest) = match key.split_once('/') {
        Some((h, r)) => (h, Some(r)),
        None => (key, None),
    };
    let host = match host {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => "docker.io",
        h => h,
    };
    match rest {
        Some(r) => format!("{host}/{r}"),
        None => host.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn parses_auth_username_password_and_token_entries() {
        let json = format!(
            r#"{{
              "auths": {{
                "https://index.docker.io/v1/": {{"auth": "{}"}},
                "quay.io": {{"username": "robot", "password": "s3cret"}},
                "quay.io/org/private": {{"auth": "{}"}},
                "ghcr.io": {{"registrytoken": "tok"}},
                "helper.example.com": {{}}
              }},
              "credsStore": "desktop"
            }}"#,
            b64("alice:pa:ss"),
            b64("bob:other")
        );
        let cfg = AuthConfig::parse(json.as_bytes(), Path::new("config.json")).expect("parse");
        let basic = |u: &str, p: &str| Credential::Basic {
            username: u.into(),
            password: p.into(),
        };
        // The password keeps everything after the first colon.
        assert_eq!(
            cfg.credential_for("docker.io", "library/busybox"),
            Some(&basic("alice", "pa:ss"))
        );
        assert_eq!(
            cfg.credential_for("index.docker.io", "library/busybox"),
            Some(&basic("alice", "pa:ss"))
        );
        assert_eq!(
            cfg.credential_for("quay.io", "org/public"),
            Some(&basic("robot", "s3cret"))
        );
        assert_eq!(
            cfg.credential_for("quay.io", "org/private/sub"),
            Some(&basic("bob", "other"))
        );
        assert_eq!(
            cfg.credential_for("quay.io", "org/private"),
            Some(&basic("bob", "other"))
        );
        assert_eq!(
            cfg.credential_for("ghcr.io", "x/y"),
            Some(&Credential::Bearer("tok".into()))
        );
        assert_eq!(cfg.credential_for("helper.example.com", "x"), None);
        assert_eq!(cfg.credential_for("127.0.0.1:5000", "x"), None);
    }

    #[test]
    fn bad_auth_field_names_the_registry() {
        let json = br#"{"auths": {"quay.io": {"auth": "bm8tY29sb24="}}}"#; // "no-colon"
        let err = AuthConfig::parse(json, Path::new("/x/config.json")).expect_err("must fail");
        let msg = err.to_string();
        assert!(msg.contains("\"quay.io\""), "{msg}");
        assert!(msg.contains("/x/config.json"), "{msg}");
    }

    #[test]
    fn not_json_is_a_parse_error() {
        let err = AuthConfig::parse(b"auths: {}", Path::new("c.json")).expect_err("must fail");
        assert!(matches!(err, AuthError::Parse { .. }), "{err}");
    }

    #[test]
    fn debug_redacts_secrets() {
        let c = Credential::Basic {
            username: "u".into(),
            password: "hunter2".into(),
        };
        assert!(!format!("{c:?}").contains("hunter2"));
    }

    #[test]
    fn a_pull_secret_overrides_the_auth_file() {
        let file = AuthConfig::parse(
            br#"{"auths":{"quay.io":{"username":"a","password":"1"},"ghcr.io":{"registrytoken":"t"}}}"#,
            Path::new("config.json"),
        )
        .expect("parse");
        let secret = AuthConfig::from_dockerconfigjson(
            br#"{"auths":{"https://quay.io":{"username":"b","password":"2"}}}"#,
            "ns/pull",
        )
        .expect("parse");
        let merged = file.merged(&secret);
        assert_eq!(
            merged.credential_for("quay.io", "x"),
            Some(&Credential::Basic {
                username: "b".into(),
                password: "2".into()
            })
        );
        assert_eq!(
            merged.credential_for("ghcr.io", "x"),
            Some(&Credential::Bearer("t".into()))
        );
        let err = AuthConfig::from_dockerconfigjson(b"{", "ns/pull").expect_err("must fail");
        assert!(err.to_string().contains("secret ns/pull"), "{err}");
    }

    #[test]
    fn keys_are_normalized() {
        assert_eq!(normalize_key("https://index.docker.io/v1/"), "docker.io");
        assert_eq!(normalize_key("http://localhost:5000/"), "localhost:5000");
        assert_eq!(normalize_key("quay.io/org/repo"), "quay.io/org/repo");
    }
}
