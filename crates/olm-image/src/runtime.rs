//! The image `olm` itself runs from in a cluster, assembled from the binary and what it needs at
//! run time, without a container engine and byte for byte reproducibly.
//!
//! The file system holds nothing but: the binary at [`BINARY_PATH`], the shared libraries it is
//! linked against at the paths its loader looks for them (none for a static binary), the CA
//! bundle registries and API servers are checked against, `/etc/passwd` and `/etc/group` naming
//! the non-root user it runs as, `/tmp`, and the default cache directory owned by that user. No
//! shell, no package manager: nothing an attacker in the container could use that `olm` does not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::assemble::{BuildError, Entry, Image, RunConfig, image_with_config, layer_from_entries};

/// Where the binary lives in the image.
pub const BINARY_PATH: &str = "/usr/local/bin/olm";
/// The user and group id the container runs as: distroless's `nonroot`, which Kubernetes
/// policies that demand a non-root numeric user accept.
pub const USER_ID: u32 = 65532;
/// Where the CA bundle goes: the path rustls' platform verifier and Go programs read on Debian
/// and most distributions.
pub const CA_BUNDLE_PATH: &str = "/etc/ssl/certs/ca-certificates.crt";
/// `olm run`'s default `--cache-path`, writable by [`USER_ID`] when no volume is mounted there.
pub const CACHE_PATH: &str = "/var/cache/olm";

/// What goes into the image, read by the caller from the machine that builds it.
#[derive(Debug)]
pub struct RuntimeFiles {
    /// The `olm` binary.
    pub binary: Vec<u8>,
    /// Each shared library: the absolute path the loader finds it at, and its bytes.
    pub libraries: Vec<(PathBuf, Vec<u8>)>,
    /// The PEM CA bundle.
    pub ca_bundle: Vec<u8>,
    /// The binary's version, for the image's labels.
    pub version: String,
}

/// The image for `files`: one layer, `olm run` as the default command, running as [`USER_ID`].
pub fn olm_image(files: RuntimeFiles) -> Result<Image, BuildError> {
    let owner_root = |path: &str, content: Option<Vec<u8>>, mode: u32| Entry {
        path: path.trim_start_matches('/').to_owned(),
        content,
        mode,
        owner: 0,
    };
    let passwd = format!(
        "root:x:0:0:root:/root:/sbin/nologin\nolm:x:{USER_ID}:{USER_ID}:olm:{CACHE_PATH}:/sbin/nologin\n"
    );
    let group = format!("root:x:0:\nolm:x:{USER_ID}:\n");
    let mut files_in: Vec<Entry> = vec![
        owner_root(BINARY_PATH, Some(files.binary), 0o755),
        owner_root(CA_BUNDLE_PATH, Some(files.ca_bundle), 0o644),
        owner_root("/etc/passwd", Some(passwd.into_bytes()), 0o644),
        owner_root("/etc/group", Some(group.into_bytes()), 0o644),
        owner_root("/tmp", None, 0o1777),
        Entry {
            path: CACHE_PATH.trim_start_matches('/').to_owned(),
            content: None,
            mode: 0o755,
            owner: USER_ID,
        },
    ];
    for (path, bytes) in &files.libraries {
        let Some(p) = path
            .to_str()
            .filter(|p| p.starts_with('/') && !p.contains("/../"))
        else {
            return Err(BuildError::Missing {
                path: path.clone(),
                what: "an absolute library path",
            });
        };
        files_in.push(owner_root(p, Some(bytes.clone()), 0o755));
    }
    let mut entries = parent_dirs(&files_in);
    entries.extend(files_in);
    let layer = layer_from_entries(&entries)?;
    let labels = BTreeMap::from([
        (
            "org.opencontainers.image.title".to_owned(),
            "olm".to_owned(),
        ),
        (
            "org.opencontainers.image.description".to_owned(),
            "The Operator Lifecycle Manager".to_owned(),
        ),
        ("org.opencontainers.image.version".to_owned(), files.version),
    ]);
    let run = RunConfig {
        entrypoint: vec![BINARY_PATH.to_owned()],
        cmd: vec!["run".to_owned()],
        env: vec!["PATH=/usr/local/bin:/usr/bin:/bin".to_owned()],
        user: format!("{USER_ID}:{USER_ID}"),
        working_dir: "/".to_owned(),
    };
    Ok(image_with_config(labels, &run, vec![layer]))
}

/// Root-owned 0755 directories for every parent of `entries` not listed itself.
fn parent_dirs(entries: &[Entry]) -> Vec<Entry> {
    let listed: std::collections::BTreeSet<&str> =
        entries.iter().map(|e| e.path.as_str()).collect();
    let mut parents = std::collections::BTreeSet::new();
    for e in entries {
        let mut p = Path::new(&e.path).parent();
        while let Some(dir) = p.and_then(Path::to_str).filter(|d| !d.is_empty()) {
            if !listed.contains(dir) {
                parents.insert(dir.to_owned());
            }
            p = Path::new(dir).parent();
        }
    }
    parents
        .into_iter()
        .map(|path| Entry {
            path,
            content: None,
            mode: 0o755,
            owner: 0,
        })
        .collect()
}

/// The shared libraries `ldd` lists for a binary, as absolute paths: `name => /path (0x…)` and
/// the loader's own `/path (0x…)` line. The kernel's vDSO has no file and is skipped; a static
/// binary (`not a dynamic executable`, `statically linked`) needs none. A library `ldd` could
/// not find is an error naming it: the image would not start.
pub fn parse_ldd(output: &str) -> Result<Vec<PathBuf>, String> {
    let mut libs = Vec::new();
    for line in output.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("not a dynamic executable") || line.contains("statically linked") {
            continue;
        }
        let path = match line.split_once(" => ") {
            Some((name, rest)) => {
                let target = rest.split(" (").next().unwrap_or("").trim();
                if target == "not found" {
                    return Err(format!("shared library {name} not found"));
                }
                target
            }
            None => line.split(" (").next().unwrap_or("").trim(),
        };
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    libs.sort();
    libs.dedup();
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> RuntimeFiles {
        RuntimeFiles {
            binary: b"\x7fELF binary".to_vec(),
            libraries: vec![(
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                b"libc".to_vec(),
            )],
            ca_bundle: b"-----BEGIN CERTIFICATE-----\n".to_vec(),
            version: "1.2.3".to_owned(),
        }
    }

    /// Debian's glibc `ldd` output for a Rust binary, and the static cases.
    #[test]
    fn ldd_lines() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                   \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f21)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f20)\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x00007f22)\n";
        assert_eq!(
            parse_ldd(out).unwrap(),
            [
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib64/ld-linux-x86-64.so.2"
            ]
            .map(PathBuf::from)
        );
        assert!(
            parse_ldd("\tnot a dynamic executable\n")
                .unwrap()
                .is_empty()
        );
        assert!(parse_ldd("\tstatically linked\n").unwrap().is_empty());
        assert_eq!(
            parse_ldd("\tlibfoo.so.1 => not found\n").unwrap_err(),
            "shared library libfoo.so.1 not found"
        );
    }

    /// The same inputs give the same digest; the config says how the container starts and
    /// as whom.
    #[test]
    fn reproducible_and_non_root() {
        let a = olm_image(files()).unwrap();
        let b = olm_image(files()).unwrap();
        assert_eq!(a.digest(), b.digest());
        let config: serde_json::Value = serde_json::from_slice(a.config()).unwrap();
        let c = &config["config"];
        assert_eq!(c["User"], "65532:65532");
        assert_eq!(c["Entrypoint"], serde_json::json!(["/usr/local/bin/olm"]));
        assert_eq!(c["Cmd"], serde_json::json!(["run"]));
        assert_eq!(c["Labels"]["org.opencontainers.image.version"], "1.2.3");
        let mut other = files();
        other.version = "1.2.4".to_owned();
        assert_ne!(olm_image(other).unwrap().digest(), a.digest());
    }

    /// Every file with its parents, modes and owners as listed: the binary executable, `/tmp`
    /// sticky, the cache directory the non-root user's.
    #[test]
    fn file_system() {
        use std::io::Read;
        let image = olm_image(files()).unwrap();
        let gz = flate2::read::GzDecoder::new(image.layers()[0].data());
        let mut tar = tar::Archive::new(gz);
        let mut seen = BTreeMap::new();
        for e in tar.entries().unwrap() {
            let mut e = e.unwrap();
            let h = e.header().clone();
            let mut body = String::new();
            e.read_to_string(&mut body).unwrap_or_default();
            let path = e.path().unwrap().display().to_string();
            seen.insert(path, (h.mode().unwrap(), h.uid().unwrap(), body));
        }
        let paths: Vec<&str> = seen.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            [
                "etc/",
                "etc/group",
                "etc/passwd",
                "etc/ssl/",
                "etc/ssl/certs/",
                "etc/ssl/certs/ca-certificates.crt",
                "lib/",
                "lib/x86_64-linux-gnu/",
                "lib/x86_64-linux-gnu/libc.so.6",
                "tmp/",
                "usr/",
                "usr/local/",
                "usr/local/bin/",
                "usr/local/bin/olm",
                "var/",
                "var/cache/",
                "var/cache/olm/",
            ]
        );
        assert_eq!(seen["usr/local/bin/olm"].0, 0o755);
        assert_eq!(seen["tmp/"].0, 0o1777);
        assert_eq!(seen["var/cache/olm/"].1, 65532);
        assert!(seen["etc/passwd"].2.contains("olm:x:65532:65532:"));
    }

    #[test]
    fn relative_library_path_is_refused() {
        let mut f = files();
        f.libraries = vec![(PathBuf::from("lib/libc.so.6"), Vec::new())];
        assert!(olm_image(f).is_err());
    }
}
