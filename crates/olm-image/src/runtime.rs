//! Images that run one program, assembled from its binary and what it needs at run time,
//! without a container engine and byte for byte reproducibly: the image `olm` itself runs from
//! in a cluster ([`olm_image`]), and any other program's, such as the example operator's
//! ([`program_image`]).
//!
//! The file system holds nothing but: the binary at its [`Program::path`], the shared libraries
//! it is linked against at the paths its loader looks for them (none for a static binary), the
//! CA bundle registries and API servers are checked against, `/etc/passwd` and `/etc/group`
//! naming the non-root user it runs as, `/tmp`, and the program's home directory owned by that
//! user when it has one. No shell, no package manager: nothing an attacker in the container
//! could use that the program does not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::assemble::{
    BuildError, Entry, Image, Layer, RunConfig, image_with_config, layer_from_entries,
};

/// Where the `olm` binary lives in its image.
pub const BINARY_PATH: &str = "/usr/local/bin/olm";
/// The user and group id the container runs as: distroless's `nonroot`, which Kubernetes
/// policies that demand a non-root numeric user accept.
pub const USER_ID: u32 = 65532;
/// Where the CA bundle goes: the path rustls' platform verifier and Go programs read on Debian
/// and most distributions.
pub const CA_BUNDLE_PATH: &str = "/etc/ssl/certs/ca-certificates.crt";
/// `olm run`'s default `--cache-path`, writable by [`USER_ID`] when no volume is mounted there.
pub const CACHE_PATH: &str = "/var/cache/olm";
/// The label naming an image's program.
pub const TITLE_LABEL: &str = "org.opencontainers.image.title";
/// The label carrying an image's version.
pub const VERSION_LABEL: &str = "org.opencontainers.image.version";
/// The label describing an image.
pub const DESCRIPTION_LABEL: &str = "org.opencontainers.image.description";

/// What goes into the image, read by the caller from the machine that builds it.
#[derive(Debug)]
pub struct RuntimeFiles {
    /// The program's binary.
    pub binary: Vec<u8>,
    /// Each shared library: the absolute path the loader finds it at, and its bytes.
    pub libraries: Vec<(PathBuf, Vec<u8>)>,
    /// The PEM CA bundle.
    pub ca_bundle: Vec<u8>,
}

/// How the program sits in its image and starts.
#[derive(Debug, Clone)]
pub struct Program {
    /// Its name: the user it runs as in `/etc/passwd` and `/etc/group` (with id [`USER_ID`]).
    /// A user name as `useradd` takes one: a lowercase letter or `_`, then lowercase letters,
    /// digits, `_` and `-`, at most 32 in all.
    pub name: String,
    /// The absolute path of the binary in the image, the entrypoint.
    pub path: String,
    /// The default arguments (the image's `Cmd`), which a pod's `args` replace.
    pub args: Vec<String>,
    /// The image's labels.
    pub labels: BTreeMap<String, String>,
    /// A directory owned by the user, its home in `/etc/passwd` (`olm`'s cache); without one,
    /// the home is `/`, which the user cannot write.
    pub home: Option<String>,
}

impl Program {
    /// A program named after the binary's file name, at `/usr/local/bin/NAME`, without default
    /// arguments or home, labelled with its name as the title.
    pub fn named(name: &str) -> Program {
        Program {
            name: name.to_owned(),
            path: format!("/usr/local/bin/{name}"),
            args: Vec::new(),
            labels: BTreeMap::from([(TITLE_LABEL.to_owned(), name.to_owned())]),
            home: None,
        }
    }
}

/// The image `olm` runs from: [`program_image`] with the binary at [`BINARY_PATH`], `olm run`
/// as the default command, [`CACHE_PATH`] as its writable home, and `version` in its labels.
pub fn olm_image(files: RuntimeFiles, version: &str) -> Result<Image, BuildError> {
    let program = Program {
        name: "olm".to_owned(),
        path: BINARY_PATH.to_owned(),
        args: vec!["run".to_owned()],
        labels: BTreeMap::from([
            (TITLE_LABEL.to_owned(), "olm".to_owned()),
            (
                DESCRIPTION_LABEL.to_owned(),
                "The Operator Lifecycle Manager".to_owned(),
            ),
            (VERSION_LABEL.to_owned(), version.to_owned()),
        ]),
        home: Some(CACHE_PATH.to_owned()),
    };
    program_image(&program, files)
}

/// The image for `program` with `files`: one layer, the binary as the entrypoint and
/// [`Program::args`] as the default command, running as [`USER_ID`].
///
/// Errors: a name that is no user name, a binary path or home that is not absolute or climbs
/// with `..`, a library path that is not absolute, and a binary or home that would replace a
/// file the image needs (`/etc/passwd`, the CA bundle, a library, `/tmp`) — each named.
pub fn program_image(program: &Program, files: RuntimeFiles) -> Result<Image, BuildError> {
    let (layer, run) = program_layer(program, files)?;
    Ok(image_with_config(program.labels.clone(), &run, vec![layer]))
}

/// Where a serving catalog image keeps the registry cache: under `/tmp`, which the non-root
/// user can write, as opm-based images do.
pub const CATALOG_CACHE_DIR: &str = "/tmp/cache";

/// The default command of a catalog image that serves: `olm catalog serve` of its
/// [`crate::CATALOG_CONFIGS_DIR`] with the registry cache in [`CATALOG_CACHE_DIR`], as
/// opm-based catalog images run `opm serve /configs --cache-dir=/tmp/cache`.
pub fn catalog_serve_args() -> Vec<String> {
    vec![
        "catalog".to_owned(),
        "serve".to_owned(),
        crate::CATALOG_CONFIGS_DIR.to_owned(),
        format!("--cache-dir={CATALOG_CACHE_DIR}"),
    ]
}

/// A catalog image that serves OLM v0's registry API, as opm-based catalog images do: the
/// layer of [`olm_image`]'s file system with `olm catalog serve` as its command
/// ([`catalog_serve_args`]), then [`crate::catalog_image`]'s `/configs` layer and label, then
/// the registry cache built from that catalog (`cache`: the file's name in
/// [`CATALOG_CACHE_DIR`] and its bytes), as opm-based images build it with `opm serve
/// --cache-only` (the server checks the cache against `/configs` at start and refuses to serve
/// a catalog whose cache is missing or stale). A CatalogSource's registry Pod runs it as it
/// is; catalogd unpacks only `/configs` and never reads the other layers' files. Keeping the
/// catalog in a layer of its own means a new catalog built with the same `olm` shares the
/// large layer with the previous one in every registry and node.
pub fn serving_catalog_image(
    dir: &Path,
    files: RuntimeFiles,
    version: &str,
    cache: (&str, Vec<u8>),
) -> Result<Image, BuildError> {
    let (configs, mut labels) = crate::assemble::catalog_layer(dir)?;
    let (cache_name, cache_bytes) = cache;
    let cache_dir = CATALOG_CACHE_DIR.trim_start_matches('/');
    let dir_entry = |path: &str, mode: u32| Entry {
        path: path.to_owned(),
        content: None,
        mode,
        owner: 0,
    };
    // `/tmp` is listed again with the mode the first layer gives it: a later layer's entry
    // for a directory replaces its mode.
    let cache_layer = layer_from_entries(&[
        dir_entry("tmp", 0o1777),
        dir_entry(cache_dir, 0o755),
        Entry {
            path: format!("{cache_dir}/{cache_name}"),
            content: Some(cache_bytes),
            mode: 0o644,
            owner: 0,
        },
    ])?;
    let program = Program {
        name: "olm".to_owned(),
        path: BINARY_PATH.to_owned(),
        args: catalog_serve_args(),
        labels: BTreeMap::new(),
        home: None,
    };
    let (server, run) = program_layer(&program, files)?;
    labels.insert(VERSION_LABEL.to_owned(), version.to_owned());
    Ok(image_with_config(
        labels,
        &run,
        vec![server, configs, cache_layer],
    ))
}

/// [`program_image`]'s single layer and how its container starts.
fn program_layer(program: &Program, files: RuntimeFiles) -> Result<(Layer, RunConfig), BuildError> {
    check_name(&program.name)?;
    let binary_path = absolute(&program.path)?;
    let home = program.home.as_deref().map(absolute).transpose()?;
    let owner_root = |path: &str, content: Option<Vec<u8>>, mode: u32| Entry {
        path: path.trim_start_matches('/').to_owned(),
        content,
        mode,
        owner: 0,
    };
    let name = &program.name;
    let home_field = program.home.as_deref().unwrap_or("/");
    let passwd = format!(
        "root:x:0:0:root:/root:/sbin/nologin\n{name}:x:{USER_ID}:{USER_ID}:{name}:{home_field}:/sbin/nologin\n"
    );
    let group = format!("root:x:0:\n{name}:x:{USER_ID}:\n");
    let mut files_in: Vec<Entry> = vec![
        owner_root(CA_BUNDLE_PATH, Some(files.ca_bundle), 0o644),
        owner_root("/etc/passwd", Some(passwd.into_bytes()), 0o644),
        owner_root("/etc/group", Some(group.into_bytes()), 0o644),
        owner_root("/tmp", None, 0o1777),
    ];
    for (path, bytes) in files.libraries {
        let Some(p) = path
            .to_str()
            .filter(|p| p.starts_with('/') && !p.contains("/../"))
        else {
            return Err(BuildError::Missing {
                path: path.clone(),
                what: "an absolute library path",
            });
        };
        files_in.push(owner_root(p, Some(bytes), 0o755));
    }
    // Neither the binary nor the home may take the place of something listed already: the
    // image would silently lose it.
    let taken = |path: &str| {
        let rel = path.trim_start_matches('/');
        match files_in.iter().any(|e| e.path == rel) {
            true => Err(BuildError::Program {
                value: path.to_owned(),
                problem: "the image holds another file there",
            }),
            false => Ok(()),
        }
    };
    taken(binary_path)?;
    if let Some(home) = home {
        taken(home)?;
        if home == binary_path {
            return Err(BuildError::Program {
                value: home.to_owned(),
                problem: "the binary's path cannot be its home too",
            });
        }
    }
    files_in.push(owner_root(binary_path, Some(files.binary), 0o755));
    if let Some(home) = home {
        files_in.push(Entry {
            path: home.trim_start_matches('/').to_owned(),
            content: None,
            mode: 0o755,
            owner: USER_ID,
        });
    }
    let mut entries = parent_dirs(&files_in);
    entries.extend(files_in);
    let layer = layer_from_entries(&entries)?;
    let run = RunConfig {
        entrypoint: vec![binary_path.to_owned()],
        cmd: program.args.clone(),
        env: vec!["PATH=/usr/local/bin:/usr/bin:/bin".to_owned()],
        user: format!("{USER_ID}:{USER_ID}"),
        working_dir: "/".to_owned(),
    };
    Ok((layer, run))
}

/// `useradd`'s default rule for user names, so that `/etc/passwd` stays one line per user.
fn check_name(name: &str) -> Result<(), BuildError> {
    let mut chars = name.chars();
    let first = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    match first && rest && name.len() <= 32 {
        true => Ok(()),
        false => Err(BuildError::Program {
            value: name.to_owned(),
            problem: "not a user name (a lowercase letter or _, then lowercase letters, digits, _ and -, at most 32)",
        }),
    }
}

/// `path` when it is absolute and names something below `/` plainly: no `.` or `..` parts, no
/// empty ones.
fn absolute(path: &str) -> Result<&str, BuildError> {
    let plain = path.strip_prefix('/').is_some_and(|rest| {
        rest.split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
    });
    match plain {
        true => Ok(path),
        false => Err(BuildError::Program {
            value: path.to_owned(),
            problem: "not an absolute path below / without ., .. or empty parts",
        }),
    }
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

/// A shared library `ldd` could not find for a binary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shared library {0} not found")]
pub struct MissingLibrary(pub String);

/// The shared libraries `ldd` lists for a binary, as absolute paths: `name => /path (0x…)` and
/// the loader's own `/path (0x…)` line. The kernel's vDSO has no file and is skipped; a static
/// binary (`not a dynamic executable`, `statically linked`) needs none. A library `ldd` could
/// not find is an error naming it: the image would not start.
pub fn parse_ldd(output: &str) -> Result<Vec<PathBuf>, MissingLibrary> {
    let mut libs = Vec::new();
    for line in output.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("not a dynamic executable") || line.contains("statically linked") {
            continue;
        }
        let path = match line.split_once(" => ") {
            Some((name, rest)) => {
                let target = rest.split(" (").next().unwrap_or("").trim();
                if target == "not found" {
                    return Err(MissingLibrary(name.to_owned()));
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
            parse_ldd("\tlibfoo.so.1 => not found\n")
                .unwrap_err()
                .to_string(),
            "shared library libfoo.so.1 not found"
        );
    }

    /// The same inputs give the same digest; the config says how the container starts and
    /// as whom.
    #[test]
    fn reproducible_and_non_root() {
        let a = olm_image(files(), "1.2.3").unwrap();
        let b = olm_image(files(), "1.2.3").unwrap();
        assert_eq!(a.digest(), b.digest());
        let config: serde_json::Value = serde_json::from_slice(a.config()).unwrap();
        let c = &config["config"];
        assert_eq!(c["User"], "65532:65532");
        assert_eq!(c["Entrypoint"], serde_json::json!(["/usr/local/bin/olm"]));
        assert_eq!(c["Cmd"], serde_json::json!(["run"]));
        assert_eq!(c["Labels"]["org.opencontainers.image.version"], "1.2.3");
        assert_ne!(olm_image(files(), "1.2.4").unwrap().digest(), a.digest());
    }

    /// A serving catalog image runs `olm catalog serve /configs` as the non-root user, and its
    /// catalog layer and label are exactly the content-only image's, so catalogd reads the
    /// same catalog from either and the server layer is shared between catalogs.
    #[test]
    fn serving_catalog_image_runs_the_server_over_the_same_catalog_layer() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("catalog.yaml"),
            "schema: olm.package\nname: a\n",
        )
        .unwrap();
        let cache = || ("olm-registry.v1", b"cache".to_vec());
        let serving = serving_catalog_image(dir.path(), files(), "1.2.3", cache()).unwrap();
        let content = crate::catalog_image(dir.path()).unwrap();
        assert_eq!(serving.layers().len(), 3);
        assert_eq!(serving.layers()[1].digest(), content.layers()[0].digest());
        let config: serde_json::Value = serde_json::from_slice(serving.config()).unwrap();
        let c = &config["config"];
        assert_eq!(c["Entrypoint"], serde_json::json!(["/usr/local/bin/olm"]));
        assert_eq!(
            c["Cmd"],
            serde_json::json!(["catalog", "serve", "/configs", "--cache-dir=/tmp/cache"])
        );
        assert_eq!(c["User"], "65532:65532");
        assert_eq!(
            c["Labels"]["operators.operatorframework.io.index.configs.v1"],
            "/configs"
        );
        std::fs::write(
            dir.path().join("catalog.yaml"),
            "schema: olm.package\nname: b\n",
        )
        .unwrap();
        let next = serving_catalog_image(dir.path(), files(), "1.2.3", cache()).unwrap();
        assert_eq!(next.layers()[0].digest(), serving.layers()[0].digest());
        assert_ne!(next.digest(), serving.digest());
        // The cache layer: /tmp keeps the first layer's mode (a later layer's directory entry
        // replaces it), the cache is readable by the non-root user.
        let gz = flate2::read::GzDecoder::new(serving.layers()[2].data());
        let entries: Vec<(String, u32)> = tar::Archive::new(gz)
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let path = e.path().unwrap().to_string_lossy().into_owned();
                (path, e.header().mode().unwrap())
            })
            .collect();
        assert_eq!(
            entries,
            [
                ("tmp/".to_owned(), 0o1777),
                ("tmp/cache/".to_owned(), 0o755),
                ("tmp/cache/olm-registry.v1".to_owned(), 0o644)
            ]
        );
    }

    /// olm's image is exactly what it was before any program could have an image: the
    /// digest `olm image push-olm` gave for these inputs when it built only olm's.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn olm_image_unchanged() {
        assert_eq!(
            olm_image(files(), "1.2.3").unwrap().digest().as_str(),
            "sha256:908eaa9b5438e7faf3e45f266e78ee4b71c179cb2baf222584bea8c4146bd911"
        );
    }

    /// Every file with its parents, modes and owners as listed: the binary executable, `/tmp`
    /// sticky, the cache directory the non-root user's.
    #[test]
    fn file_system() {
        let seen = unpacked(&olm_image(files(), "1.2.3").unwrap());
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

    /// Each entry of the image's one layer: its mode, owner and text.
    fn unpacked(image: &Image) -> BTreeMap<String, (u32, u64, String)> {
        use std::io::Read;
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
        seen
    }

    #[test]
    fn relative_library_path_is_refused() {
        let mut f = files();
        f.libraries = vec![(PathBuf::from("lib/libc.so.6"), Vec::new())];
        assert!(olm_image(f, "1").is_err());
    }

    /// Any program: its binary where asked, its arguments as the default command, its name as
    /// the user, no home unless asked, its labels as given.
    #[test]
    fn a_program_of_its_own() {
        let mut program = Program::named("example-operator");
        program.args = vec!["--webhook-cert-dir=/certs".to_owned()];
        program
            .labels
            .insert(VERSION_LABEL.to_owned(), "0.2.0".to_owned());
        let image = program_image(&program, files()).unwrap();
        let config: serde_json::Value = serde_json::from_slice(image.config()).unwrap();
        let c = &config["config"];
        assert_eq!(
            c["Entrypoint"],
            serde_json::json!(["/usr/local/bin/example-operator"])
        );
        assert_eq!(c["Cmd"], serde_json::json!(["--webhook-cert-dir=/certs"]));
        assert_eq!(c["User"], "65532:65532");
        assert_eq!(
            c["Labels"],
            serde_json::json!({TITLE_LABEL: "example-operator", VERSION_LABEL: "0.2.0"})
        );
        let seen = unpacked(&image);
        assert_eq!(seen["usr/local/bin/example-operator"].0, 0o755);
        assert!(!seen.contains_key("var/cache/olm/"));
        assert!(!seen.contains_key("usr/local/bin/olm"));
        assert_eq!(
            seen["etc/passwd"].2,
            "root:x:0:0:root:/root:/sbin/nologin\n\
             example-operator:x:65532:65532:example-operator:/:/sbin/nologin\n"
        );
        assert_eq!(
            seen["etc/group"].2,
            "root:x:0:\nexample-operator:x:65532:\n"
        );
        // The same program and files, the same image.
        assert_eq!(
            program_image(&program, files()).unwrap().digest(),
            image.digest()
        );
    }

    /// What a program cannot be: each refusal names what was asked for and why.
    #[test]
    fn what_a_program_cannot_be() {
        let with = |edit: fn(&mut Program)| {
            let mut p = Program::named("app");
            edit(&mut p);
            program_image(&p, files()).unwrap_err().to_string()
        };
        type Edit = fn(&mut Program);
        let cases: [(Edit, &str); 8] = [
            (|p| p.name = "App".to_owned(), "App: not a user name"),
            (|p| p.name = "a:b".to_owned(), "a:b: not a user name"),
            (|p| p.name = String::new(), ": not a user name"),
            (|p| p.name = "a".repeat(33), "aaaa"),
            (
                |p| p.path = "bin/app".to_owned(),
                "bin/app: not an absolute path",
            ),
            (
                |p| p.path = "/usr/../etc/x".to_owned(),
                "/usr/../etc/x: not an absolute path",
            ),
            (
                |p| p.path = "/etc/passwd".to_owned(),
                "/etc/passwd: the image holds another file there",
            ),
            (
                |p| p.home = Some("/usr/local/bin/app".to_owned()),
                "/usr/local/bin/app: the binary's path cannot be its home too",
            ),
        ];
        for (edit, want) in cases {
            let got = with(edit);
            assert!(got.starts_with(want), "{got:?} should start with {want:?}");
        }
        let mut lib = Program::named("app");
        lib.path = "/lib/x86_64-linux-gnu/libc.so.6".to_owned();
        assert!(program_image(&lib, files()).is_err());
    }
}
