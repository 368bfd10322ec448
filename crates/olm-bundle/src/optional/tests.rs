//! The optional validators on bundles made for each check, with the texts of operator-framework/api
//! (`pkg/validation/internal/*_test.go` cases where they exist).

use super::*;
use crate::bundle::{Bundle, BundleFile};

fn bundle(csv: &str, extra: &[(&str, &str)], channels: &str) -> Bundle {
    let mut files = vec![
        BundleFile {
            path: "manifests/csv.yaml".into(),
            contents: csv.as_bytes().to_vec(),
        },
        BundleFile {
            path: "metadata/annotations.yaml".into(),
            contents: format!(
                "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: demo\n  operators.operatorframework.io.bundle.channels.v1: {channels}\n"
            )
            .into_bytes(),
        },
    ];
    for (path, text) in extra {
        files.push(BundleFile {
            path: (*path).into(),
            contents: text.as_bytes().to_vec(),
        });
    }
    Bundle::from_files(files).unwrap()
}

const GOOD: &str = "apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo.v0.0.1
  annotations:
    capabilities: Basic Install
    categories: Database, Monitoring
spec:
  displayName: Demo
  version: 0.0.1
  minKubeVersion: 1.20.0
  provider:
    name: Example
  maintainers:
  - name: Someone
    email: someone@example.com
  links:
  - name: Docs
    url: https://example.com/docs
  icon:
  - base64data: iVBOR
    mediatype: image/png
  installModes:
  - type: AllNamespaces
    supported: true
  install:
    strategy: deployment
    spec:
      deployments:
      - name: demo
        spec:
          selector: {matchLabels: {app: demo}}
          template:
            metadata: {labels: {app: demo}}
            spec:
              containers:
              - name: manager
                image: example.com/demo:v0.0.1
                resources:
                  requests: {cpu: 10m, memory: 64Mi}
";

fn texts(findings: &[Finding]) -> Vec<String> {
    findings.iter().map(ToString::to_string).collect()
}

fn suite() -> Vec<Validator> {
    select("suite=operatorframework").unwrap()
}

#[test]
fn a_good_bundle_passes_the_suite() {
    let b = bundle(GOOD, &[], "stable");
    assert_eq!(
        texts(&run(&b, &suite(), &BTreeMap::new())),
        Vec::<String>::new()
    );
}

#[test]
fn selection_follows_labels() {
    let names = |s: &str| {
        select(s)
            .unwrap()
            .iter()
            .map(|v| v.name)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names("suite=operatorframework"),
        [
            "operatorhubv2",
            "capabilities",
            "categories",
            "alpha-deprecated-apis",
            "good-practices"
        ]
    );
    assert_eq!(names("name=good-practices"), ["good-practices"]);
    assert_eq!(
        select("name=nothing"),
        Err(
            "invalid command args: selector \"name=nothing\" does not match any validator labels"
                .to_owned()
        )
    );
    assert!(list().starts_with("NAME"));
    assert!(list().contains("good-practices"));
}

#[test]
fn operatorhub_metadata() {
    let csv = GOOD
        .replace("    name: Example\n", "    name: \"\"\n")
        .replace("email: someone@example.com", "email: someone")
        .replace("url: https://example.com/docs", "url: docs")
        .replace("mediatype: image/png", "mediatype: image/bmp")
        .replace("Basic Install", "Expert")
        .replace("Database, Monitoring", "Database, Fun");
    let b = bundle(&csv, &[], "stable");
    let got = texts(&run(
        &b,
        &select("name=operatorhub").unwrap(),
        &BTreeMap::new(),
    ));
    assert_eq!(
        got,
        [
            "Error: Value : (demo.v0.0.1) csv.Spec.Provider.Name not specified",
            "Error: Value : (demo.v0.0.1) csv.Spec.Maintainers email someone is invalid: mail: missing '@' or angle-addr",
            "Error: Value : (demo.v0.0.1) csv.Spec.Links url docs is invalid: parse \"docs\": invalid URI for request",
            "Error: Value : (demo.v0.0.1) csv.Metadata.Annotations.Capabilities \"Expert\" is not a valid capabilities level",
            "Error: Value : (demo.v0.0.1) csv.Metadata.Annotations[\"categories\"] value \" Fun\" is not in the set of standard categories",
            "Error: Value : (demo.v0.0.1) csv.Spec.Icon image/bmp does not have a valid mediatype",
            "Warning: Value : The \"operatorhub\" validator is deprecated; for equivalent validation use \"operatorhub/v2\", \"standardcapabilities\" and \"standardcategories\" validators",
        ]
    );
    let no_icon = GOOD.replace(
        "  icon:\n  - base64data: iVBOR\n    mediatype: image/png\n",
        "",
    );
    let got = texts(&run(
        &bundle(&no_icon, &[], "stable"),
        &select("name=operatorhubv2").unwrap(),
        &BTreeMap::new(),
    ));
    assert_eq!(
        got,
        ["Warning: Value : (demo.v0.0.1) csv.Spec.Icon not specified"]
    );
}

#[test]
fn removed_apis_by_release() {
    let crd = "apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  version: v1
";
    let pdb = "apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: demo-pdb
spec:
  minAvailable: 1
";
    let csv = GOOD.replace(
        "  installModes:",
        "  customresourcedefinitions:\n    owned:\n    - name: widgets.example.com\n      version: v1\n      kind: Widget\n      description: Widgets\n  installModes:",
    );
    let b = bundle(
        &csv,
        &[("manifests/crd.yaml", crd), ("manifests/pdb.yaml", pdb)],
        "stable",
    );
    let selected = select("name=alpha-deprecated-apis").unwrap();
    let got = texts(&run(&b, &selected, &BTreeMap::new()));
    assert_eq!(
        got,
        [
            "Warning: Value demo.v0.0.1: this bundle is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22. Migrate the API(s) for CRD: ([\"widgets.example.com\"])",
            "Warning: Value demo.v0.0.1: this bundle is using APIs which were deprecated and removed in v1.25. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-25. Migrate the API(s) for PodDisruptionBudget: ([\"demo-pdb\"])",
        ]
    );
    let values = BTreeMap::from([("k8s-version".to_owned(), "1.23".to_owned())]);
    let got = texts(&run(&b, &selected, &values));
    assert!(got[0].starts_with("Warning: Value demo.v0.0.1: this bundle is using APIs which were deprecated and removed in v1.25."), "{got:?}");
    assert!(got[1].starts_with("Error: Value demo.v0.0.1: this bundle is using APIs which were deprecated and removed in v1.22."), "{got:?}");
    let bad = BTreeMap::from([("k8s-version".to_owned(), "one".to_owned())]);
    // Upstream goes on with a zero version after an invalid one.
    assert_eq!(
        texts(&run(&b, &selected, &bad))[2],
        "Error: Value demo.v0.0.1: invalid value informed via the k8s key option : one"
    );
}

#[test]
fn good_practices() {
    let csv = GOOD
        .replace("                resources:\n                  requests: {cpu: 10m, memory: 64Mi}\n", "")
        .replace("name: demo.v0.0.1", "name: demo-operator")
        .replace(
            "  installModes:",
            "  customresourcedefinitions:\n    owned:\n    - name: widgets.example.com\n      version: v1\n      kind: Widget\n  installModes:",
        );
    let crd = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
";
    let b = bundle(&csv, &[("manifests/crd.yaml", crd)], "alpha");
    let got = texts(&run(
        &b,
        &select("name=good-practices").unwrap(),
        &BTreeMap::new(),
    ));
    assert_eq!(
        got,
        [
            "Warning: Value demo-operator: unable to find the resource requests for the container: (manager). It is recommended to ensure the resource request for CPU and Memory. Be aware that for some clusters configurations it is required to specify requests or limits for those values. Otherwise, the system or quota may reject Pod creation. More info: https://master.sdk.operatorframework.io/docs/best-practices/managing-resources/",
            "Warning: Value demo-operator: owned CRD \"widgets.example.com\" has an empty description",
            "Warning: Value demo-operator: channel(s) [\"alpha\"] are not following the recommended naming convention: https://olm.operatorframework.io/docs/best-practices/channel-naming",
            "Warning: Value demo-operator: csv.metadata.Name demo-operator is not following the versioning convention (MAJOR.MINOR.PATCH e.g 0.0.1): https://semver.org/",
            "Warning: Value demo-operator: csv.metadata.Name demo-operator is not following the recommended naming convention: <operator-name>.v<semver> e.g. memcached-operator.v0.0.1",
        ]
    );
}

#[test]
fn request_uris_as_go_parses_them() {
    let cases = [
        ("https://example.com/docs", Ok(())),
        ("/abs", Ok(())),
        ("mailto:x@y", Ok(())),
        ("*", Ok(())),
        ("http://[::1]:80/", Ok(())),
        ("ftp://h:1:2/", Ok(())),
        ("docs", Err("invalid URI for request")),
        ("", Err("empty url")),
        (":x", Err("missing protocol scheme")),
        (
            "http://h\x7f/",
            Err("net/url: invalid control character in URL"),
        ),
        (
            "http://host:port/x",
            Err("invalid port \":port\" after host"),
        ),
        ("http://h:1:2/", Err("invalid port \":1:2\" after host")),
        ("https://example.com/%zz", Err("invalid URL escape \"%zz\"")),
        ("http://h/%41%2", Err("invalid URL escape \"%2\"")),
        ("http://%41.com/", Err("invalid URL escape \"%41\"")),
        (
            "http://a b.com/",
            Err("invalid character \" \" in host name"),
        ),
        ("http://[1.2.3.4]/", Err("invalid IP-literal")),
        ("http://x[::1]/", Err("invalid IP-literal")),
        ("http://[::1/", Err("missing ']' in host")),
        ("http://u ser@h/", Err("net/url: invalid userinfo")),
        ("http://u%zz@h/", Err("invalid URL escape \"%zz\"")),
    ];
    for (url, want) in cases {
        assert_eq!(
            goparse::parse_request_uri(url),
            want.map_err(str::to_owned),
            "{url}"
        );
    }
}

#[test]
fn csv_names_with_a_semver_suffix() {
    for (name, want) in [
        ("demo.v0.0.1", true),
        ("demo.v1.2.3-rc.1+build", true),
        ("demo1.2.3", true),
        ("demo.v1.2.3.4", true),
        ("demo.v1.0.0+build.1", false),
        ("demo.v01.2.3", false),
        ("demo-operator", false),
        ("demo.v1.2", false),
    ] {
        assert_eq!(name_has_semver_suffix(name), want, "{name}");
    }
}
