//! Parsing an image reference (`[registry/]repository[:tag][@digest]`) with docker's grammar
//! (`distribution/reference`), into `oci-client`'s `Reference`.
//!
//! `oci-client`'s own parser (oci-spec's) compiles the grammar with Unicode-aware `\w` for tags,
//! so a tag may hold any Unicode letter where docker allows ASCII only, and the compiled
//! program is so large that each thread which parses a reference keeps a matching cache of about
//! 5 MiB for the life of the process: a quarter of `olm run`'s heap after a burst of installs.
//! This is the same grammar with docker's ASCII classes (a small program and cache), followed by
//! the same checks and the same messages, so references read and print as before.

use std::sync::OnceLock;

use oci_client::Reference;
use regex::Regex;

/// The longest repository accepted (docker's `NameTotalLengthMax`).
const NAME_TOTAL_LENGTH_MAX: usize = 255;

/// docker's `ReferenceRegexp`, anchored, with groups for the name, tag and digest. Every class is
/// ASCII, as in Go's regexp: `\w` is `[0-9A-Za-z_]`.
const REFERENCE: &str = concat!(
    r"^(?-u)(",
    // domain: components joined by dots, an optional port, then a slash
    r"(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])",
    r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?",
    // path components: lower-case alphanumerics joined by separators
    r"[a-z0-9]+(?:(?:[._]|__|-*)[a-z0-9]+)*",
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-*)[a-z0-9]+)*)*",
    r")",
    r"(?::([0-9A-Za-z_][0-9A-Za-z_.-]{0,127}))?",
    r"(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$",
);

fn reference_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // A constant pattern, covered by the tests below.
        #[allow(clippy::expect_used)]
        Regex::new(REFERENCE).expect("the reference grammar compiles")
    })
}

/// Parses `s`; the error is docker's (and oci-spec's) message.
pub(crate) fn parse(s: &str) -> Result<Reference, &'static str> {
    if s.is_empty() {
        return Err("repository name must have at least one component");
    }
    let captures = reference_regex()
        .captures(s)
        .ok_or("invalid reference format")?;
    let name = captures.get(1).map_or("", |m| m.as_str());
    let tag = captures.get(2).map(|m| m.as_str().to_owned());
    let digest = captures.get(3).map(|m| m.as_str().to_owned());
    let (registry, repository) = split_domain(name);
    if repository.len() > NAME_TOTAL_LENGTH_MAX {
        return Err("repository name must not be more than 255 characters");
    }
    if let Some(digest) = &digest {
        let (algorithm, hex) = digest
            .split_once(':')
            .ok_or("invalid checksum digest format")?;
        let expected = match algorithm {
            "sha256" => 64,
            "sha384" => 96,
            "sha512" => 128,
            _ => return Err("unsupported digest algorithm"),
        };
        if hex.len() != expected {
            return Err("invalid checksum digest length");
        }
    }
    Ok(match (tag, digest) {
        (Some(tag), Some(digest)) => {
            Reference::with_tag_and_digest(registry, repository, tag, digest)
        }
        (None, Some(digest)) => Reference::with_digest(registry, repository, digest),
        (Some(tag), None) => Reference::with_tag(registry, repository, tag),
        (None, None) => Reference::with_tag(registry, repository, "latest".to_owned()),
    })
}

/// Splits a name into registry and repository as docker does: the first component is a host
/// when it holds a dot or a colon or is `localhost`; otherwise the registry is `docker.io`
/// (`index.docker.io` is the same), where a one-component repository is under `library/`.
fn split_domain(name: &str) -> (String, String) {
    let (mut domain, mut remainder) = match name.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) || host == "localhost" => {
            (host.to_owned(), rest.to_owned())
        }
        _ => ("docker.io".to_owned(), name.to_owned()),
    };
    if domain == "index.docker.io" {
        domain = "docker.io".to_owned();
    }
    if domain == "docker.io" && !remainder.contains('/') {
        remainder = format!("library/{remainder}");
    }
    (domain, remainder)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, registry, repository, tag, digest).
    type Case = (
        &'static str,
        &'static str,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
    );

    /// oci-spec's own parse table and docker's `reference_test.go` cases, which both parsers
    /// agree on.
    const OK: &[Case] = &[
        (
            "busybox",
            "docker.io",
            "library/busybox",
            Some("latest"),
            None,
        ),
        (
            "test.com:tag",
            "docker.io",
            "library/test.com",
            Some("tag"),
            None,
        ),
        (
            "test.com:5000",
            "docker.io",
            "library/test.com",
            Some("5000"),
            None,
        ),
        ("test.com/repo:tag", "test.com", "repo", Some("tag"), None),
        ("test:5000/repo", "test:5000", "repo", Some("latest"), None),
        ("test:5000/repo:tag", "test:5000", "repo", Some("tag"), None),
        ("localhost/app", "localhost", "app", Some("latest"), None),
        (
            "index.docker.io/redis",
            "docker.io",
            "library/redis",
            Some("latest"),
            None,
        ),
        (
            "a/b/c__d-e.f_g:V1.2_3-x",
            "docker.io",
            "a/b/c__d-e.f_g",
            Some("V1.2_3-x"),
            None,
        ),
        (
            "test:5000/repo@sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "test:5000",
            "repo",
            None,
            Some("sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"),
        ),
        (
            "quay.io/a/b:v1@sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "quay.io",
            "a/b",
            Some("v1"),
            Some("sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"),
        ),
    ];

    #[test]
    fn references_parse_as_docker_parses_them() {
        for &(input, registry, repository, tag, digest) in OK {
            let r = parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(r.registry(), registry, "{input}");
            assert_eq!(r.repository(), repository, "{input}");
            assert_eq!(r.tag(), tag, "{input}");
            assert_eq!(r.digest(), digest, "{input}");
        }
    }

    #[test]
    fn bad_references_get_dockers_messages() {
        let long = format!("a/{}", "b".repeat(254));
        for (input, message) in [
            ("", "repository name must have at least one component"),
            (":justtag", "invalid reference format"),
            ("Uppercase:tag", "invalid reference format"),
            (
                "test:5000/Uppercase/lowercase:tag",
                "invalid reference format",
            ),
            ("aa/asdf$$^/aa", "invalid reference format"),
            ("repo:tag:tag", "invalid reference format"),
            ("repo:-tag", "invalid reference format"),
            ("-repo", "invalid reference format"),
            // docker's `\w` is ASCII: a Unicode letter is not a tag character.
            ("repo:vé", "invalid reference format"),
            (
                long.as_str(),
                "repository name must not be more than 255 characters",
            ),
            (
                "repo@sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
                "invalid checksum digest length",
            ),
            (
                "repo@md5:ffffffffffffffffffffffffffffffff",
                "unsupported digest algorithm",
            ),
        ] {
            assert_eq!(parse(input).err(), Some(message), "{input:?}");
        }
    }

    #[test]
    fn the_tag_may_be_128_characters_and_no_more() {
        let ok = format!("repo:{}", "t".repeat(128));
        assert!(parse(&ok).is_ok());
        let long = format!("repo:{}", "t".repeat(129));
        assert_eq!(parse(&long).err(), Some("invalid reference format"));
    }

    /// Both parsers give the same result on every string of one to five characters over an
    /// alphabet with each kind of character the grammar tells apart.
    #[test]
    fn agrees_with_oci_spec_on_ascii_inputs() {
        let alphabet = b"aZ0.:/-_@";
        let mut n = 0usize;
        let mut buf = Vec::new();
        for len in 1..=5u32 {
            for code in 0..alphabet.len().pow(len) {
                buf.clear();
                let mut c = code;
                for _ in 0..len {
                    buf.push(alphabet[c % alphabet.len()]);
                    c /= alphabet.len();
                }
                let s = std::str::from_utf8(&buf).unwrap_or_default();
                let ours = parse(s).map_err(str::to_owned);
                let theirs = s.parse::<Reference>().map_err(|e| e.to_string());
                assert_eq!(ours, theirs, "{s:?}");
                n += 1;
            }
        }
        assert_eq!(n, (1..=5).map(|l| 9usize.pow(l)).sum::<usize>());
    }
}
