//! Bad bundles give errors that name the problem (and the file), never panics.

use olm_bundle::{Bundle, BundleError, BundleFile, CertProvider, goyaml, render_bundle};
use proptest::prelude::*;
use serde_json::{Value, json};

const ANNOTATIONS: &str =
    "annotations:\n  operators.operatorframework.io.bundle.package.v1: demo\n";

const CSV: &str = r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo.v1.0.0
spec:
  version: 1.0.0
  installModes:
  - {type: AllNamespaces, supported: true}
  install:
    strategy: deployment
    spec:
      clusterPermissions:
      - serviceAccountName: demo
        rules:
        - {apiGroups: [""], resources: [pods], verbs: [get]}
      deployments:
      - name: demo
        spec:
          selector: {matchLabels: {app: demo}}
          template:
            metadata: {labels: {app: demo}}
            spec:
              containers:
              - {name: demo, image: "example.com/demo:1"}
"#;

fn file(path: &str, text: &str) -> BundleFile {
    BundleFile {
        path: path.into(),
        contents: text.as_bytes().to_vec(),
    }
}

fn base() -> Vec<BundleFile> {
    vec![
        file("metadata/annotations.yaml", ANNOTATIONS),
        file("manifests/csv.yaml", CSV),
    ]
}

#[test]
fn minimal_bundle_renders() {
    let b = Bundle::from_files(base()).unwrap();
    let objs = render_bundle(&b, "ns", None, None).unwrap();
    let kinds: Vec<&str> = objs.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment"
        ]
    );
}

#[test]
fn missing_csv_is_upstreams_error() {
    let err = Bundle::from_files(vec![file("metadata/annotations.yaml", ANNOTATIONS)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no ClusterServiceVersion found in \"manifests\""
    );
}

#[test]
fn two_csvs_are_rejected_naming_both_files() {
    let mut files = base();
    files.push(file("manifests/other.yaml", CSV));
    let err = Bundle::from_files(files).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid bundle: contains multiple CSVs (manifests/csv.yaml, manifests/other.yaml)"
    );
}

#[test]
fn subdirectories_in_manifests_are_upstreams_error() {
    let mut files = base();
    files.push(file("manifests/nested/x.yaml", "kind: ConfigMap\n"));
    let err = Bundle::from_files(files).unwrap_err();
    assert_eq!(
        err.to_string(),
        "subdirectories are not allowed within the \"manifests\" directory of the bundle image filesystem: found \"manifests/nested/x.yaml\""
    );
}

#[test]
fn malformed_yaml_names_the_file() {
    let mut files = base();
    files.push(file("manifests/broken.yaml", "kind: [unclosed\n"));
    let err = Bundle::from_files(files).unwrap_err();
    assert!(
        matches!(&err, BundleError::Yaml { file, .. } if file == "manifests/broken.yaml"),
        "{err}"
    );
}

#[test]
fn objects_without_kind_name_the_file() {
    let mut files = base();
    files.push(file("manifests/nokind.yaml", "metadata: {name: x}\n"));
    let err = Bundle::from_files(files).unwrap_err();
    assert_eq!(
        err.to_string(),
        "manifests/nokind.yaml: object has no \"kind\""
    );
}

#[test]
fn missing_annotations_file() {
    let err = Bundle::from_files(vec![file("manifests/csv.yaml", CSV)]).unwrap_err();
    assert_eq!(err, BundleError::NoAnnotations);
}

#[test]
fn unknown_kinds_fail_render_with_upstreams_message() {
    let mut files = base();
    files.push(file(
        "manifests/job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate}\n",
    ));
    let b = Bundle::from_files(files).unwrap();
    let err = render_bundle(&b, "ns", None, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported resource \"migrate\" with kind \"Job\""
    );
}

#[test]
fn several_documents_in_one_file_all_count() {
    let mut files = base();
    files.push(file(
        "manifests/multi.yaml",
        "kind: ConfigMap\nmetadata: {name: a}\n---\nkind: Secret\nmetadata: {name: b}\n",
    ));
    let b = Bundle::from_files(files).unwrap();
    assert_eq!(b.others.len(), 2);
}

#[test]
fn csv_with_wrong_types_is_an_error_not_a_panic() {
    let mut files = base();
    files[1] = file(
        "manifests/csv.yaml",
        "kind: ClusterServiceVersion\nspec:\n  installModes: 7\n",
    );
    let err = Bundle::from_files(files).unwrap_err();
    assert!(matches!(err, BundleError::InvalidCsv { .. }), "{err}");
}

/// Replaces the value at a random path of `v` by `replacement`.
fn mutate(v: &mut Value, path: &[usize], replacement: Value) {
    let Some((&i, rest)) = path.split_first() else {
        *v = replacement;
        return;
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            let k = m.keys().nth(i % m.len()).cloned().unwrap_or_default();
            if let Some(n) = m.get_mut(&k) {
                mutate(n, rest, replacement);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let n = a.len();
            mutate(&mut a[i % n], rest, replacement);
        }
        _ => *v = replacement,
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Arbitrary bytes in any bundle file: an error or a bundle, never a panic.
    #[test]
    fn garbage_files_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400), which in 0..3usize) {
        let mut files = base();
        let path = ["manifests/x.yaml", "metadata/annotations.yaml", "manifests/csv.yaml"][which];
        files.retain(|f| f.path != path);
        files.push(BundleFile { path: path.into(), contents: bytes });
        if let Ok(b) = Bundle::from_files(files) {
            let _ = render_bundle(&b, "ns", None, Some(CertProvider::CertManager));
        }
    }

    /// Any value anywhere in a valid CSV: parse, render and property derivation never panic,
    /// and whatever renders can be written as YAML.
    #[test]
    fn mutated_csv_never_panics(path in prop::collection::vec(0usize..8, 0..7), replacement in arb_json(),
                                config in prop::option::of(arb_json())) {
        let mut csv = goyaml::parse_documents(CSV).unwrap().remove(0);
        mutate(&mut csv, &path, replacement);
        let text = serde_json::to_string(&csv).unwrap();
        let files = vec![file("metadata/annotations.yaml", ANNOTATIONS), file("manifests/csv.yaml", &text)];
        if let Ok(b) = Bundle::from_files(files) {
            let _ = olm_bundle::validate_for_render(&b);
            let _ = olm_bundle::properties::to_olm_bundle(&b, "", olm_bundle::properties::ObjectsMode::BundleObjects);
            let cfg = config.map(|c| serde_json::to_string(&c).unwrap());
            if let Ok(objs) = render_bundle(&b, "ns", cfg.as_deref(), Some(CertProvider::OpenshiftServiceCa)) {
                let _ = olm_bundle::manifests_to_yaml(&objs);
            }
        }
    }

    /// The YAML writer and reader agree on arbitrary strings (quoting, folding, literals).
    #[test]
    fn yaml_strings_round_trip(s in "([\\PC&&[^\u{2028}\u{2029}]]|[\t\r\n \u{85}\u{feff}]){0,120}", key in "[a-z]{1,10}") {
        let v = json!({ key: s });
        let y = goyaml::to_yaml(&v);
        let back = goyaml::parse_documents(&y).unwrap();
        prop_assert_eq!(&back[0], &v, "{}", y);
    }
}

#[test]
fn image_paths_may_be_absolute_or_dot_relative() {
    let files = vec![
        BundleFile {
            path: "/metadata/annotations.yaml".into(),
            contents: ANNOTATIONS.as_bytes().to_vec(),
        },
        BundleFile {
            path: "./manifests/csv.yaml".into(),
            contents: CSV.as_bytes().to_vec(),
        },
    ];
    assert_eq!(Bundle::from_files(files).unwrap().package_name, "demo");
}

const OWNS_WIDGETS: &str = r#"  customresourcedefinitions:
    owned:
    - {name: widgets.example.com, version: v1, kind: Widget}
    - {name: gadgets.example.com, version: v1, kind: Gadget}
"#;

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v1alpha1, served: true, storage: false}
"#;

/// opm's bundle parser (`AllProvidedAPIsInBundle`) refuses to render a bundle whose CSV owns a
/// CRD the bundle does not hold, naming it and listing what the bundle provides as Go prints a
/// map; the message is opm v1.74.0's.
#[test]
fn an_owned_crd_missing_from_the_bundle_is_refused_as_opm_does() {
    use olm_bundle::properties::{ObjectsMode, to_olm_bundle};
    let csv = CSV.replace(
        "spec:\n  version: 1.0.0\n",
        &format!("spec:\n  version: 1.0.0\n{OWNS_WIDGETS}"),
    );
    let mut files = base();
    files[1] = file("manifests/csv.yaml", &csv);
    files.push(file("manifests/widgets.yaml", WIDGET_CRD));
    let b = Bundle::from_files(files.clone()).unwrap();
    let e = to_olm_bundle(&b, "", ObjectsMode::BundleObjects).unwrap_err();
    assert_eq!(
        e.to_string(),
        "error checking provided apis in bundle demo.v1.0.0: couldn't find example.com/v1/Gadget (gadgets) in bundle. \
         found: map[example.com/v1/Widget (widgets):{} example.com/v1alpha1/Widget (widgets):{}]"
    );

    let gadgets = WIDGET_CRD
        .replace("widget", "gadget")
        .replace("Widget", "Gadget");
    files.push(file("manifests/gadgets.yaml", &gadgets));
    let b = Bundle::from_files(files.clone()).unwrap();
    assert!(to_olm_bundle(&b, "", ObjectsMode::BundleObjects).is_ok());

    // An owned name that is not <plural>.<group>.
    files[1] = file(
        "manifests/csv.yaml",
        &csv.replace("gadgets.example.com", "gadgets"),
    );
    let b = Bundle::from_files(files).unwrap();
    assert_eq!(
        to_olm_bundle(&b, "", ObjectsMode::CsvMetadata)
            .unwrap_err()
            .to_string(),
        "error checking provided apis in bundle demo.v1.0.0: couldn't parse plural.group from crd name: gadgets"
    );
}

/// opm sorts a bundle's properties by type, then by JSON value, before moving the
/// `olm.bundle.object`s to the end (`registry_to_model.go`, `render.go`): the objects come out
/// in the order of their base64 text, not file order.
#[test]
fn bundle_objects_are_in_the_order_of_their_data() {
    use olm_bundle::properties::{ObjectsMode, to_olm_bundle};
    let mut files = base();
    for name in ["a", "b", "c", "d"] {
        files.push(file(
            &format!("manifests/{name}.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n"),
        ));
    }
    let b = Bundle::from_files(files).unwrap();
    let blob = to_olm_bundle(&b, "", ObjectsMode::BundleObjects).unwrap();
    let data: Vec<&str> = blob["properties"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "olm.bundle.object")
        .map(|p| p["value"]["data"].as_str().unwrap())
        .collect();
    assert_eq!(data.len(), 5);
    let mut sorted = data.clone();
    sorted.sort_unstable();
    assert_eq!(data, sorted);
    // The CSV's JSON starts `{"apiVersion":"operators…` and a ConfigMap's `{"apiVersion":"v1"…`:
    // in base64 the CSV sorts first, then the ConfigMaps by the name after `metadata`.
    let kinds: Vec<String> = data
        .iter()
        .map(|d| {
            let json = olm_goenc::base64::decode_std(d.as_bytes()).unwrap();
            let v: Value = serde_json::from_slice(&json).unwrap();
            format!(
                "{}/{}",
                v["kind"].as_str().unwrap(),
                v["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(kinds[0], "ClusterServiceVersion/demo.v1.0.0");
}
