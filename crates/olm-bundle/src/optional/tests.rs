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
        select("name=nothing").map_err(|e| e.to_string()),
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

/// A CSV shaped as operator-framework/api's `testdata/valid_bundle` (etcdoperator.v0.9.4): one
/// deployment pinned by node affinity to linux on amd64, arm64, ppc64le and s390x, with a
/// `manager` container and two more on another image.
const ETCD_MANAGER: &str = "quay.io/coreos/etcd-operator2@sha256:66a37fd61a06a43969854ee6d3e21087a98b93838e284a6086b13917f96b0d9b";
const ETCD_OTHER: &str = "quay.io/coreos/etcd-operator@sha256:66a37fd61a06a43969854ee6d3e21087a98b93838e284a6086b13917f96b0d9b";

fn etcd_csv(labels: &[&str], affinity: bool, image: Option<&str>, extra_spec: &str) -> String {
    let labels: String = labels
        .iter()
        .map(|l| format!("    {l}: supported\n"))
        .collect();
    let labels = if labels.is_empty() {
        String::new()
    } else {
        format!("  labels:\n{labels}")
    };
    let affinity = if affinity {
        "              affinity:
                nodeAffinity:
                  requiredDuringSchedulingIgnoredDuringExecution:
                    nodeSelectorTerms:
                    - matchExpressions:
                      - key: kubernetes.io/arch
                        operator: In
                        values: [amd64, arm64, ppc64le, s390x]
                      - key: kubernetes.io/os
                        operator: In
                        values: [linux]
"
    } else {
        ""
    };
    let (manager, other) = image.map_or((ETCD_MANAGER, ETCD_OTHER), |i| (i, i));
    format!(
        "apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: etcdoperator.v0.9.4
{labels}spec:
  version: 0.9.4
{extra_spec}  installModes:
  - type: AllNamespaces
    supported: true
  install:
    strategy: deployment
    spec:
      deployments:
      - name: etcd-operator
        spec:
          selector: {{matchLabels: {{name: etcd-operator-alm-owned}}}}
          template:
            metadata: {{labels: {{name: etcd-operator-alm-owned}}}}
            spec:
{affinity}              containers:
              - name: manager
                image: {manager}
              - name: etcd-backup-operator
                image: {other}
              - name: etcd-restore-operator
                image: {other}
"
    )
}

fn linux(archs: &[&str]) -> Vec<multiarch::Platform> {
    archs
        .iter()
        .map(|a| multiarch::Platform::new("linux", *a))
        .collect()
}

fn multiarch_texts(
    csv: &str,
    values: &[(&str, &str)],
    inspected: &[(&str, multiarch::Inspection)],
) -> Vec<String> {
    let b = bundle(csv, &[], "stable");
    let values = values
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let gathered = Gathered {
        platforms: inspected
            .iter()
            .map(|(i, p)| ((*i).to_owned(), p.clone()))
            .collect(),
        index_file: None,
    };
    texts(&run_gathered(
        &b,
        &select("name=multiarch").unwrap(),
        &values,
        &gathered,
    ))
}

/// multiarch_test.go `Test_ValidateMultiArchFrom`: every image is opm's, built for linux on
/// four architectures; without labels the CSV is told to add them, with them it passes.
#[test]
fn multiarch_asks_for_the_labels_the_images_support() {
    const OPM: &str = "quay.io/operator-framework/opm:latest";
    let four = linux(&["amd64", "arm64", "ppc64le", "s390x"]);
    let inspected = [(OPM, Ok(four))];
    let got = multiarch_texts(&etcd_csv(&[], true, Some(OPM), ""), &[], &inspected);
    assert_eq!(
        got,
        [
            "Warning: Value etcdoperator.v0.9.4: check if the CSV is missing the label (operatorframework.io/arch.<value>) for the Arch(s): [\"amd64\" \"arm64\" \"ppc64le\" \"s390x\"]. Be aware that your Operator manager image [\"quay.io/operator-framework/opm:latest\"] provides this support. Thus, it is very likely that you want to provide it and if you support more than amd64 architectures, you MUST,use the required labels for all which are supported.Otherwise, your solution cannot be listed on the cluster for these architectures"
        ]
    );
    let all = [
        "operatorframework.io/arch.arm64",
        "operatorframework.io/arch.ppc64le",
        "operatorframework.io/arch.s390x",
        "operatorframework.io/arch.amd64",
    ];
    let got = multiarch_texts(&etcd_csv(&all, true, Some(OPM), ""), &[], &inspected);
    assert_eq!(got, Vec::<String>::new());
}

/// multiarch_test.go `Test_LoadImagesFromCSV` and `…WithRelatedImage`: the manager's image,
/// the other containers' image and the related images are all inspected, each once.
#[test]
fn multiarch_inspects_every_image_once() {
    let b = bundle(&etcd_csv(&[], true, None, ""), &[], "stable");
    assert_eq!(multiarch::images(&b), [ETCD_MANAGER, ETCD_OTHER]);
    let related = "  relatedImages:\n  - name: etcd-operator\n    image: related-image-test\n";
    let b = bundle(&etcd_csv(&[], true, None, related), &[], "stable");
    assert_eq!(
        multiarch::images(&b),
        [ETCD_MANAGER, ETCD_OTHER, "related-image-test"]
    );
}

/// multiarch_test.go `Test_ValidateContainerTool`: empty and `none` mean docker; anything but
/// docker or podman is refused with upstream's words (key and value swapped as upstream has
/// them), before any image is looked at.
#[test]
fn multiarch_container_tools_value() {
    for ok in ["", "none", "docker", "Podman"] {
        let values = BTreeMap::from([("container-tools".to_owned(), ok.to_owned())]);
        assert_eq!(multiarch::container_tool_error(&values), None, "{ok}");
    }
    let got = multiarch_texts(
        &etcd_csv(&[], true, None, ""),
        &[("container-tools", "Invalid")],
        &[],
    );
    assert_eq!(
        got,
        [
            "Error: Value etcdoperator.v0.9.4: invalid value (container-tools) for (invalid). One of: [docker, podman, none] (If not set, the default value is docker)"
        ]
    );
}

/// multiarch_test.go `Test_multiArchValidator_checkSupportDefined`: labels promise linux and
/// `other` on arm64; images built for linux/amd64 only miss both, listed sorted.
#[test]
fn multiarch_errors_on_promised_platforms_the_images_lack() {
    let labels = [
        "operatorframework.io/arch.arm64",
        "operatorframework.io/os.linux",
        "operatorframework.io/os.other",
    ];
    let amd64 = Ok(linux(&["amd64"]));
    let got = multiarch_texts(
        &etcd_csv(&labels, true, None, ""),
        &[],
        &[(ETCD_MANAGER, amd64.clone()), (ETCD_OTHER, amd64)],
    );
    let errors: Vec<&String> = got.iter().filter(|t| t.starts_with("Error")).collect();
    assert_eq!(
        errors,
        [
            &format!(
                "Error: Value etcdoperator.v0.9.4: not all images specified are providing the support described via the CSV labels. Note that (OS.architecture): (linux.arm64) was not found for the image(s) [{ETCD_MANAGER} {ETCD_OTHER}]"
            ),
            &format!(
                "Error: Value etcdoperator.v0.9.4: not all images specified are providing the support described via the CSV labels. Note that (OS.architecture): (other.arm64) was not found for the image(s) [{ETCD_MANAGER} {ETCD_OTHER}]"
            ),
        ]
    );
    // Without labels, linux/amd64 is what is promised, and given.
    let amd64 = Ok(linux(&["amd64"]));
    let got = multiarch_texts(
        &etcd_csv(&[], true, None, ""),
        &[],
        &[(ETCD_MANAGER, amd64.clone()), (ETCD_OTHER, amd64)],
    );
    assert!(got.iter().all(|t| t.starts_with("Warning")), "{got:?}");
}

/// multiarch_test.go `Test_multiArchValidator_checkMissingLabels`.
#[test]
fn multiarch_missing_labels() {
    let labels = [
        "operatorframework.io/arch.amd64",
        "operatorframework.io/arch.arm64",
        "operatorframework.io/os.linux",
    ];
    let p = |os: &str, arch: &str| multiarch::Platform::new(os, arch);
    let label_warnings = |csv: &str, platforms: Vec<multiarch::Platform>| {
        multiarch_texts(
            csv,
            &[],
            &[(ETCD_MANAGER, Ok(platforms)), (ETCD_OTHER, Ok(Vec::new()))],
        )
        .into_iter()
        .filter(|t| t.contains("for the Arch(s)"))
        .collect::<Vec<_>>()
    };
    assert_eq!(
        label_warnings(&etcd_csv(&[], true, None, ""), linux(&["amd64"])),
        Vec::<String>::new()
    );
    let supported = vec![
        p("other", "amd64"),
        p("other", "arm64"),
        p("linux", "amd64"),
        p("linux", "arm64"),
    ];
    assert_eq!(
        label_warnings(&etcd_csv(&labels, true, None, ""), supported.clone()),
        Vec::<String>::new()
    );
    let mut with_missing = supported;
    with_missing.extend([p("other", "missing"), p("linux", "missing")]);
    assert_eq!(
        label_warnings(&etcd_csv(&labels, true, None, ""), with_missing),
        [format!(
            "Warning: Value etcdoperator.v0.9.4: check if the CSV is missing the label (operatorframework.io/arch.<value>) for the Arch(s): [\"missing\"]. Be aware that your Operator manager image [\"{ETCD_MANAGER}\"] provides this support. Thus, it is very likely that you want to provide it and if you support more than amd64 architectures, you MUST,use the required labels for all which are supported.Otherwise, your solution cannot be listed on the cluster for these architectures"
        )]
    );
}

/// multiarch_test.go `Test_multiArchValidator_checkNodeAffinity`: the manager image's
/// platforms against the deployment's node affinity.
#[test]
fn multiarch_node_affinity() {
    let p = |os: &str, arch: &str| multiarch::Platform::new(os, arch);
    let four = linux(&["amd64", "arm64", "ppc64le", "s390x"]);
    let affinity_warnings = |affinity: bool, platforms: Vec<multiarch::Platform>| {
        multiarch_texts(
            &etcd_csv(&[], affinity, None, ""),
            &[],
            &[
                (ETCD_MANAGER, Ok(platforms)),
                (ETCD_OTHER, Ok(four.clone())),
            ],
        )
        .into_iter()
        .filter(|t| t.contains("node affinity") && t.contains(&format!("\"{ETCD_MANAGER}\"")))
        .collect::<Vec<_>>()
    };
    assert_eq!(affinity_warnings(true, four.clone()), Vec::<String>::new());
    assert_eq!(
        affinity_warnings(false, four.clone()),
        [format!(
            "Warning: Value etcdoperator.v0.9.4: check if the CSV has a missing or invalid node affinity configuration for the image: \"{ETCD_MANAGER}\". The image data suggests the following platforms are supported: [\"linux/amd64\" \"linux/arm64\" \"linux/ppc64le\" \"linux/s390x\"]"
        )]
    );
    assert_eq!(
        affinity_warnings(true, linux(&["amd64", "arm64"])),
        [format!(
            "Warning: Value etcdoperator.v0.9.4: the CSV includes [\"linux/ppc64le\" \"linux/s390x\"] in the node affinity configuration for the image: \"{ETCD_MANAGER}\", but the image data suggests the following platforms are supported: [\"linux/amd64\" \"linux/arm64\"]"
        )]
    );
    let mut more = vec![p("other", "amd64"), p("other", "arm64")];
    more.extend(four.clone());
    assert_eq!(
        affinity_warnings(true, more),
        [format!(
            "Warning: Value etcdoperator.v0.9.4: the image data indicates [\"other/amd64\" \"other/arm64\"] is supported for the image: \"{ETCD_MANAGER}\", but the node affinity configuration for the image only specifies [\"linux/amd64\" \"linux/arm64\" \"linux/ppc64le\" \"linux/s390x\"]"
        )]
    );
}

/// An image that cannot be inspected gets upstream's warning and counts as supporting
/// everything; without node affinity it is also told it may lack one. As upstream, its `error`
/// platform counts as a second OS of the manager, so `linux` is asked for a label.
#[test]
fn multiarch_uninspectable_images() {
    let got = multiarch_texts(
        &etcd_csv(&["operatorframework.io/arch.s390x"], false, None, ""),
        &[],
        &[
            (ETCD_MANAGER, Err("registry said no".to_owned())),
            (ETCD_OTHER, Ok(linux(&["amd64"]))),
        ],
    );
    assert_eq!(
        got,
        [
            format!(
                "Warning: Value etcdoperator.v0.9.4: unable to inspect the image ({ETCD_MANAGER}) : registry said no"
            ),
            format!(
                "Warning: Value etcdoperator.v0.9.4: check if the CSV is missing the label (operatorframework.io/os.<value>) for the OS(s): [\"linux\"]. Be aware that your Operator manager image [\"{ETCD_MANAGER}\"] provides this support. Thus, it is very likely that you want to provide it and if you support more than linux OS you MUST,use the required labels for all which are supported.Otherwise, your solution cannot be listed on the cluster for these architectures"
            ),
            format!(
                "Warning: Value etcdoperator.v0.9.4: check if the image {ETCD_OTHER} should not support [\"s390x\"]. Note that this CSV has labels for this Arch(s) Your manager image [\"{ETCD_MANAGER}\"] are providing this support OR the CSV is configured via labels to support it. Then, please verify if this image should not support it"
            ),
            format!(
                "Warning: Value etcdoperator.v0.9.4: check if the CSV is missing a node affinity configuration for the image: \"{ETCD_MANAGER}\". "
            ),
            format!(
                "Warning: Value etcdoperator.v0.9.4: check if the CSV has a missing or invalid node affinity configuration for the image: \"{ETCD_MANAGER}\". The image data suggests the following platforms are supported: [\"error/error\"]"
            ),
            format!(
                "Warning: Value etcdoperator.v0.9.4: check if the CSV has a missing or invalid node affinity configuration for the image: \"{ETCD_OTHER}\". The image data suggests the following platforms are supported: [\"linux/amd64\"]"
            ),
            format!(
                "Error: Value etcdoperator.v0.9.4: not all images specified are providing the support described via the CSV labels. Note that (OS.architecture): (linux.s390x) was not found for the image(s) [{ETCD_OTHER}]"
            ),
        ]
    );
}

/// The etcd bundle of operator-framework/api's `testdata/valid_bundle_v1beta1`: three
/// `apiextensions.k8s.io/v1beta1` CRDs, so the community checks apply.
fn etcd_v1beta1(properties: Option<&str>) -> Bundle {
    let crd = |plural: &str, kind: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: {plural}.etcd.database.coreos.com
spec:
  group: etcd.database.coreos.com
  names: {{kind: {kind}, plural: {plural}}}
  scope: Namespaced
  version: v1beta2
"
        )
    };
    let mut csv = etcd_csv(&[], true, None, "");
    if let Some(p) = properties {
        csv = csv.replace(
            "  name: etcdoperator.v0.9.4\n",
            &format!("  name: etcdoperator.v0.9.4\n  annotations:\n    olm.properties: '{p}'\n"),
        );
    }
    let (b, c, r) = (
        crd("etcdbackups", "EtcdBackup"),
        crd("etcdclusters", "EtcdCluster"),
        crd("etcdrestores", "EtcdRestore"),
    );
    bundle(
        &csv,
        &[
            ("manifests/etcdbackups.crd.yaml", &b),
            ("manifests/etcdclusters.crd.yaml", &c),
            ("manifests/etcdrestores.crd.yaml", &r),
        ],
        "alpha",
    )
}

/// A bundle.Dockerfile whose OpenShift label is `label` (no label line when `None`), as those of
/// operator-framework/api's `testdata/dockerfile`.
fn dockerfile(label: Option<&str>) -> community::IndexFile {
    let label = label.map_or(String::new(), |l| {
        format!("LABEL com.redhat.openshift.versions={l}\n")
    });
    community::IndexFile {
        path: "./bundle.Dockerfile".into(),
        contents: Ok(format!(
            "FROM scratch\n\nLABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1\nLABEL operators.operatorframework.io.bundle.channels.v1=alpha\n{label}\nCOPY bundle/manifests /manifests/\n"
        )),
    }
}

const ETCD_CRDS: &str = "CRD: ([\"etcdbackups.etcd.database.coreos.com\" \"etcdclusters.etcd.database.coreos.com\" \"etcdrestores.etcd.database.coreos.com\"])";

/// community_test.go `Test_communityValidator`, case by case.
#[test]
fn community_cases() {
    let max = |v: &str| format!(r#"[{{"type": "olm.maxOpenShiftVersion", "value": "{v}"}}]"#);
    let valid = dockerfile(Some("\"v4.6-v4.8\""));
    let check =
        |b: &Bundle, file: Option<&community::IndexFile>| texts(&community::validate(b, file));
    // valid_bundle_v1: nothing removed in 1.22, nothing to say.
    assert_eq!(
        check(&bundle(GOOD, &[], "stable"), None),
        Vec::<String>::new()
    );
    assert_eq!(
        check(&etcd_v1beta1(Some(&max("4.8"))), Some(&valid)),
        Vec::<String>::new()
    );
    assert_eq!(
        check(&etcd_v1beta1(None), Some(&valid)),
        [format!(
            "Error: Value : (etcdoperator.v0.9.4) csv.Annotations not specified olm.maxOpenShiftVersion for an OCP version < 4.9. This annotation is required to prevent the user from upgrading their OCP cluster before they have installed a version of their operator which is compatible with 4.9. This bundle is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22 which are no longer supported on 4.9. Migrate the API(s) for {ETCD_CRDS} or use the annotation"
        )]
    );
    assert_eq!(
        check(
            &etcd_v1beta1(Some(r#"[{"type": "olm.invalid", "value": "4.9"}]"#)),
            Some(&valid)
        ),
        [format!(
            "Error: Value : (etcdoperator.v0.9.4) csv.Annotations.olm.properties with the key `olm.maxOpenShiftVersion` and a value with an OCP version which is < 4.9 is required for any operator bundle that is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22. Migrate the API(s) for {ETCD_CRDS} or use the annotation"
        )]
    );
    assert_eq!(
        check(&etcd_v1beta1(Some(&max("4.9"))), Some(&valid)),
        [format!(
            "Error: Value : (etcdoperator.v0.9.4) csv.Annotations.olm.properties with the key and value for olm.maxOpenShiftVersion has the OCP version value 4.9 which is >= of 4.9. This bundle is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22. Migrate the API(s) for {ETCD_CRDS} or inform in this property an OCP version which is < 4.9"
        )]
    );
    assert_eq!(
        check(&etcd_v1beta1(Some(&max("4.8"))), None),
        [format!(
            "Warning: Value : (etcdoperator.v0.9.4) please, inform the path of its index image file via the the optional key values and the key index-path to allow this validator check the labels configuration or migrate the API(s) for {ETCD_CRDS}. (e.g. index-path=./mypath/bundle.Dockerfile). This bundle is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22 "
        )]
    );
    assert_eq!(
        check(&etcd_v1beta1(Some(&max("4.8.1"))), Some(&valid)),
        [
            "Warning: Value : (etcdoperator.v0.9.4) csv.Annotations.olm.properties has an invalid value. olm.maxOpenShiftVersion must specify only major.minor versions, 4.8.1 will be truncated to 4.8.0"
        ]
    );
    assert_eq!(
        check(&etcd_v1beta1(Some(&max("4.8.0+build"))), Some(&valid)),
        Vec::<String>::new()
    );
    assert_eq!(
        check(
            &etcd_v1beta1(Some(&max("4.8"))),
            Some(&dockerfile(Some("\"=v4.8\"")))
        ),
        Vec::<String>::new()
    );
    // Upstream turns the errors into warnings too when no index-path is given.
    assert_eq!(
        check(&etcd_v1beta1(None), None)
            .iter()
            .map(|t| t.split(") ").next().unwrap_or_default())
            .collect::<Vec<_>>(),
        [
            "Warning: Value : (etcdoperator.v0.9.4",
            "Warning: Value : (etcdoperator.v0.9.4",
            "Error: Value : (etcdoperator.v0.9.4"
        ]
    );
}

/// community_test.go `Test_checkOCPLabelsWithHasDeprecatedAPIs`: the Dockerfile label must
/// keep the bundle below OpenShift 4.9.
#[test]
fn community_dockerfile_labels() {
    let b = etcd_v1beta1(Some(
        r#"[{"type": "olm.maxOpenShiftVersion", "value": "4.8"}]"#,
    ));
    let errors = |file: &community::IndexFile| texts(&community::validate(&b, Some(file)));
    assert_eq!(
        errors(&dockerfile(Some("\"v4.6-v4.8\""))),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(&dockerfile(None)),
        [format!(
            "Error: Value : (etcdoperator.v0.9.4) this bundle is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22. Migrate the APIs for {ETCD_CRDS} or provide compatible version(s) via the labels. (e.g. LABEL com.redhat.openshift.versions='4.6-4.8')"
        )]
    );
    let missing = community::IndexFile::read("./testdata/dockerfile/invalid");
    assert_eq!(
        errors(&missing),
        [
            "Error: Value : (etcdoperator.v0.9.4) the index image in the path (./testdata/dockerfile/invalid) was not found. Please, inform the path of the bundle operator index image via the the optional key values and the key index-path. (e.g. index-path=./mypath/bundle.Dockerfile). Error : stat ./testdata/dockerfile/invalid: no such file or directory"
        ]
    );
    assert_eq!(
        errors(&dockerfile(Some("\"=v4.9\""))),
        [format!(
            "Error: Value : (etcdoperator.v0.9.4) this bundle is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22. Migrate the API(s) for {ETCD_CRDS} or provide compatible version(s) by using the com.redhat.openshift.versions annotation in `metadata/annotations.yaml` to ensure that the index image will be geneared with its label. (e.g. LABEL com.redhat.openshift.versions='4.6-4.8')"
        )]
    );
    assert_eq!(
        errors(&dockerfile(Some("\"v4.6-v4.9\""))),
        [format!(
            "Error: Value : (etcdoperator.v0.9.4) this bundle is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22. Upgrade the APIs from for {ETCD_CRDS} or provide compatible distribution version(s) by using the com.redhat.openshift.versions annotation in `metadata/annotations.yaml` to ensure that the index image will be generated with its label. (e.g. LABEL com.redhat.openshift.versions='4.6-4.8')"
        )]
    );
    assert_eq!(
        errors(&dockerfile(Some("\"v4.6,v4.7\""))),
        [format!(
            "Error: Value : (etcdoperator.v0.9.4) this bundle is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22 The 4.6,4.7 allows to distribute it on >= 4.9. Migrate the API(s) for {ETCD_CRDS} or provide compatible version(s) by using the com.redhat.openshift.versions annotation in `metadata/annotations.yaml` to ensure that the index image will be generated with its label. (e.g. LABEL com.redhat.openshift.versions='4.6-4.8')"
        )]
    );
    let dir = community::IndexFile::read(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(dir.contents, Err(community::IndexFileError::Directory));
}

/// `olm.properties` read as Go's encoding/json reads it into `[]{Type, Value string}`.
#[test]
fn community_properties_as_go_reads_them() {
    for (text, bad) in [
        (
            r#"[{"TYPE": "olm.maxOpenShiftVersion", "Value": "4.8"}]"#,
            false,
        ),
        ("null", false),
        (r#"[null, {"type": "x", "other": 1}]"#, false),
        (r#"{"type": "olm.maxOpenShiftVersion"}"#, true),
        (
            r#"[{"type": "olm.maxOpenShiftVersion", "value": 4.8}]"#,
            true,
        ),
        ("[", true),
    ] {
        let got = texts(&community::validate(
            &etcd_v1beta1(Some(text)),
            Some(&dockerfile(Some("\"v4.6-v4.8\""))),
        ));
        let invalid = got
            .iter()
            .any(|t| t.contains("has an invalid value specified for olm.properties"));
        assert_eq!(invalid, bad, "{text}: {got:?}");
    }
}
