//! OLM v1 on the real node: what only real containers show. Each scenario publishes bundles of
//! its own (`tests/fixtures/v1-real/`) in a catalog of its own, and installs them into a
//! namespace named after its package, so the scenarios run beside each other and beside v0's.
//!
//! * `v1-unpullable-image`: a Deployment whose image was never pushed — the rollout cannot
//!   finish, and after `progressDeadlineMinutes` it is reported as failed.
//! * `v1-readiness-never-passes`: an upgrade whose pod never becomes Ready — the installed
//!   revision keeps running and stays installed, the new one times out, and a changed spec does
//!   not replace a rollout in flight.
//! * `v1-conversion-webhook`: a CRD served in two versions, converted by the example operator's
//!   pod through the webhook OLM wires from the CSV, with the built-in certificate provider.
//!
//! Condition reasons and messages are upstream's (operator-controller's ClusterObjectSet
//! controller, `clusterobjectset_controller.go` and `progress_deadline.go`, and its
//! ClusterExtension reconcile steps, `boxcutter` applier and status helpers).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{Env, Scenario, wait};

/// This module's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        ("v1-unpullable-image", unpullable_image),
        ("v1-readiness-never-passes", readiness_never_passes),
        ("v1-conversion-webhook", conversion_webhook),
    ]
}

/// The deadline these scenarios give: below the CRDs' minimum of 10, which
/// [`allow_short_deadlines`] lowers as upstream's e2e suite does for the same checks
/// (`min value for ClusterExtension .spec.progressDeadlineMinutes is set to 1`, `steps.go`), so
/// that a failed rollout is reported in minutes rather than ten. Two rather than upstream's one:
/// the revision that does succeed must become available within it on a busy machine.
const DEADLINE_MINUTES: u32 = 2;

/// Lowers `progressDeadlineMinutes`' minimum in the ClusterExtension and ClusterObjectSet CRDs
/// to 1, once for the whole run (other scenarios only ever see a looser schema).
fn allow_short_deadlines(env: &Env) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let patch = r#"[{"op": "replace", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/progressDeadlineMinutes/minimum", "value": 1}]"#;
        for crd in [
            "clusterextensions.olm.operatorframework.io",
            "clusterobjectsets.olm.operatorframework.io",
        ] {
            env.kubectl(&["patch", "crd", crd, "--type=json", "-p", patch], None);
        }
    });
}

/// How long past the deadline the report may take: the ClusterObjectSet controller requeues at
/// the deadline, and the extension's reconcile follows the revision's status change.
const DEADLINE_SLACK: Duration = Duration::from_secs(180);

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-real")
}

/// Pushes `package`'s bundles (one stable channel, each version replacing the one before) and
/// a catalog of them, served by a ClusterCatalog named `package`, and waits until it serves.
fn publish(env: &Env, package: &str, versions: &[&str]) {
    let work = env.work_dir(package);
    let registry = &env.registry;
    let mut entries = String::new();
    let mut bundles = String::new();
    let mut previous: Option<String> = None;
    for version in versions {
        let name = format!("{package}.v{version}");
        let image = bundle_image(env, package, version);
        env.olm(&[
            "image",
            "push-bundle",
            fixtures().join(&name).to_str().unwrap(),
            &image,
        ]);
        entries.push_str(&format!("  - name: {name}\n"));
        if let Some(p) = &previous {
            entries.push_str(&format!("    replaces: {p}\n"));
        }
        bundles.push_str(&format!("- schema: olm.bundle\n  image: {image}\n"));
        previous = Some(name);
    }
    let template = format!(
        "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: {package}\n  defaultChannel: stable\n- schema: olm.channel\n  package: {package}\n  name: stable\n  entries:\n{entries}{bundles}"
    );
    let template_file = work.join("template.yaml");
    std::fs::write(&template_file, template).unwrap();
    let rendered = env.olm(&[
        "catalog",
        "template",
        "basic",
        template_file.to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    let dir = work.join("catalog");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("catalog.yaml"), rendered).unwrap();
    let image = format!("{registry}/v1-real/{package}-catalog:latest");
    env.olm(&["image", "push-catalog", dir.to_str().unwrap(), &image]);
    env.apply(&format!(
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterCatalog\nmetadata: {{name: {package}}}\nspec:\n  source:\n    type: Image\n    image: {{ref: \"{image}\"}}\n"
    ));
    env.kubectl(
        &[
            "wait",
            "--for=condition=Serving",
            &format!("clustercatalog/{package}"),
            "--timeout=180s",
        ],
        None,
    );
}

fn bundle_image(env: &Env, package: &str, version: &str) -> String {
    format!("{}/v1-real/{package}-bundle:v{version}", env.registry)
}

/// Installs `version` of `package` from its own catalog into the namespace `package`, as a
/// ServiceAccount bound to cluster-admin, as a ClusterExtension named `package`.
fn install(env: &Env, package: &str, version: &str, deadline_minutes: Option<u32>) {
    let deadline = deadline_minutes
        .map(|m| format!("  progressDeadlineMinutes: {m}\n"))
        .unwrap_or_default();
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {package}}}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: installer, namespace: {package}}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: {package}-installer}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}\nsubjects: [{{kind: ServiceAccount, name: installer, namespace: {package}}}]\n---\napiVersion: olm.operatorframework.io/v1\nkind: ClusterExtension\nmetadata: {{name: {package}}}\nspec:\n  namespace: {package}\n  serviceAccount: {{name: installer}}\n{deadline}  source:\n    sourceType: Catalog\n    catalog:\n      packageName: {package}\n      version: \"{version}\"\n      selector:\n        matchLabels: {{olm.operatorframework.io/metadata.name: {package}}}\n"
    ));
}

/// An object as JSON (`Value::Null` when it cannot be read).
fn get(env: &Env, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let (ok, out, _) = env.try_kubectl(&all, None);
    if !ok {
        return Value::Null;
    }
    serde_json::from_str(&out).unwrap_or(Value::Null)
}

/// A condition of `object`'s status: status, reason and message.
fn condition(object: &Value, type_: &str) -> Option<(String, String, String)> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (s("status"), s("reason"), s("message"))
        })
}

fn is(c: Option<(String, String, String)>, status: &str, reason: &str, message: &str) -> bool {
    c.is_some_and(|(s, r, m)| s == status && r == reason && m == message)
}

/// The extension's `status.activeRevisions`, by name.
fn active_revisions(extension: &Value) -> Vec<String> {
    extension
        .pointer("/status/activeRevisions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A condition of one entry of the extension's `status.activeRevisions`.
fn revision_condition(
    extension: &Value,
    revision: &str,
    type_: &str,
) -> Option<(String, String, String)> {
    let entry = extension
        .pointer("/status/activeRevisions")?
        .as_array()?
        .iter()
        .find(|r| r["name"] == revision)?;
    condition(&serde_json::json!({"status": entry}), type_)
}

/// `install.bundle` of the extension: name and version.
fn installed_bundle(extension: &Value) -> (String, String) {
    let s = |p: &str| {
        extension
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (
        s("/status/install/bundle/name"),
        s("/status/install/bundle/version"),
    )
}

/// The names of `package`'s ClusterObjectSets.
fn revisions(env: &Env, package: &str) -> Vec<String> {
    let list = get(
        env,
        &[
            "clusterobjectsets",
            "-l",
            &format!("olm.operatorframework.io/owner-name={package}"),
        ],
    );
    let mut names: Vec<String> = list["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o.pointer("/metadata/name")?.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A pod of a scenario's Deployment, as far as the scenarios look at it.
#[derive(Debug, Clone, PartialEq)]
struct Pod {
    name: String,
    ready: bool,
    deleting: bool,
    /// Why its container waits (`ImagePullBackOff`, …), if it does.
    waiting: Option<String>,
}

fn pods(env: &Env, package: &str) -> Vec<Pod> {
    let list = get(
        env,
        &[
            "pods",
            "-n",
            package,
            "-l",
            &format!("app.kubernetes.io/name={package}"),
        ],
    );
    list["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| Pod {
                    name: p["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    ready: condition(p, "Ready").is_some_and(|(s, _, _)| s == "True"),
                    deleting: p["metadata"]["deletionTimestamp"].is_string(),
                    waiting: p
                        .pointer("/status/containerStatuses/0/state/waiting/reason")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What the cluster says about a scenario, for a failure.
fn state(env: &Env, package: &str) -> String {
    let text = |args: &[&str]| {
        let (_, out, err) = env.try_kubectl(args, None);
        format!("{out}{err}")
    };
    format!(
        "{}\n{}\n{}\n{}",
        text(&["get", "clusterextension", package, "-o", "yaml"]),
        text(&[
            "get",
            "clusterobjectsets",
            "-l",
            &format!("olm.operatorframework.io/owner-name={package}"),
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.spec.lifecycleState} {.status.conditions}{\"\\n\"}{end}",
        ]),
        text(&["get", "deployments,pods", "-n", package, "-o", "wide"]),
        text(&["get", "events", "-n", package]),
    )
}

/// Upstream's ClusterObjectSet controller while a revision's probes fail:
/// `Revision <version> is rolling out.` (`clusterobjectset_controller.go`).
fn rolling_out(version: &str) -> String {
    format!("Revision {version} is rolling out.")
}

/// Upstream's `markAsProgressing` past the deadline (`progress_deadline.go`): the last status
/// kept after the prefix.
fn deadline_exceeded(last: &str) -> String {
    format!("Revision has not rolled out for {DEADLINE_MINUTES} minute(s). Last status: {last}")
}

/// Waits out `version`'s progress deadline: the extension's `Progressing` False /
/// `ProgressDeadlineExceeded` with upstream's message. The extension as last read.
fn wait_for_deadline(
    env: &Env,
    package: &str,
    version: &str,
    explain: &dyn Fn() -> String,
) -> Value {
    let exceeded = deadline_exceeded(&rolling_out(version));
    let mut extension = Value::Null;
    wait(
        "ProgressDeadlineExceeded",
        Duration::from_secs(u64::from(DEADLINE_MINUTES) * 60) + DEADLINE_SLACK,
        || {
            extension = get(env, &["clusterextension", package]);
            is(
                condition(&extension, "Progressing"),
                "False",
                "ProgressDeadlineExceeded",
                &exceeded,
            )
        },
        explain,
    );
    extension
}

/// An image nobody pushed: the pod never starts. The rollout is reported as rolling out with
/// the Deployment's failing probe, nothing is installed, and once `progressDeadlineMinutes`
/// have passed the revision — and the extension — say `ProgressDeadlineExceeded`.
fn unpullable_image(env: &Env) {
    let package = "v1-unpullable";
    publish(env, package, &["0.1.0"]);
    let started = Instant::now();
    allow_short_deadlines(env);
    install(env, package, "0.1.0", Some(DEADLINE_MINUTES));
    let explain = || state(env, package);

    // containerd asks the mirror for quay.io/olm-examples/never-pushed and is told no.
    wait(
        "the pod waiting for its image",
        Duration::from_secs(180),
        || {
            pods(env, package).iter().any(|p| {
                matches!(
                    p.waiting.as_deref(),
                    Some("ErrImagePull" | "ImagePullBackOff")
                )
            })
        },
        explain,
    );

    // Upstream's probe for Deployments: `status.updatedReplicas == status.replicas` and the
    // `Available` condition True (boxcutter's default progression probes);
    // the failing one is named as `Object <Kind>.<group>/<version> <ns>/<name>: <message>`
    // (`clusterobjectset_controller.go`). The replicas are updated; the pod is not available, which
    // boxcutter's `ConditionProbe` words `.status.condition["Available"] is False`
    // (`probing/condition.go`).
    let probe_failure = format!(
        "Object Deployment.apps/v1 {package}/{package}-controller: .status.condition[\"Available\"] is False"
    );
    let revision = format!("{package}-1");
    let mut extension = Value::Null;
    wait(
        "the extension reporting the rollout that cannot finish",
        Duration::from_secs(180),
        || {
            extension = get(env, &["clusterextension", package]);
            // Nothing is installed while a healthy rollout is in flight: `Absent`, not
            // `Failed` (`determineFailureReason`); the newest rolling-out revision's Progressing is
            // mirrored (`ApplyBundleWithBoxcutter`).
            is(
                condition(&extension, "Installed"),
                "False",
                "Absent",
                "No bundle installed",
            ) && is(
                condition(&extension, "Progressing"),
                "True",
                "RollingOut",
                &rolling_out("0.1.0"),
            ) && active_revisions(&extension) == [revision.clone()]
                && is(
                    revision_condition(&extension, &revision, "Available"),
                    "False",
                    "ProbeFailure",
                    &probe_failure,
                )
        },
        explain,
    );
    eprintln!(
        "FIGURE v1 unpullable image: ClusterExtension created -> rollout reported failing its probe: {:.1?}",
        started.elapsed()
    );
    assert_eq!(installed_bundle(&extension), (String::new(), String::new()));
    // `Available` is mirrored from the installed revision only (`ApplyBundleWithBoxcutter`):
    // with none installed, the extension has none; the rolling-out
    // revision's is under `activeRevisions`.
    assert!(condition(&extension, "Available").is_none(), "{extension}");
    let objectset = get(env, &["clusterobjectset", &revision]);
    assert!(
        is(
            condition(&objectset, "Available"),
            "False",
            "ProbeFailure",
            &probe_failure
        ),
        "{objectset}"
    );
    assert!(condition(&objectset, "Succeeded").is_none(), "{objectset}");

    // The deadline runs from the revision's creation.
    extension = wait_for_deadline(env, package, "0.1.0", &explain);
    let exceeded = deadline_exceeded(&rolling_out("0.1.0"));
    eprintln!(
        "FIGURE v1 unpullable image: ClusterExtension created -> ProgressDeadlineExceeded ({DEADLINE_MINUTES} min deadline): {:.1?}",
        started.elapsed()
    );
    let objectset = get(env, &["clusterobjectset", &revision]);
    assert!(
        is(
            condition(&objectset, "Progressing"),
            "False",
            "ProgressDeadlineExceeded",
            &exceeded
        ),
        "{objectset}"
    );
    // Still nothing installed; the reason stays `Absent`: only a `Retrying` rollout makes it
    // `Failed` (`determineFailureReason`).
    assert!(
        is(
            condition(&extension, "Installed"),
            "False",
            "Absent",
            "No bundle installed"
        ),
        "{extension}"
    );
    assert!(condition(&extension, "Available").is_none(), "{extension}");
    assert!(pods(env, package).iter().all(|p| !p.ready), "{}", explain());
}

/// 0.1.0 runs; 0.2.0's pod never becomes Ready. Upstream keeps the installed revision active
/// (its pod serving, the extension's `install` naming it) until the new one succeeds, reports
/// the new one rolling out and then `ProgressDeadlineExceeded`, and — while a revision rolls
/// out — does not resolve again, so pinning the old version back changes nothing.
fn readiness_never_passes(env: &Env) {
    let package = "v1-stuck";
    publish(env, package, &["0.1.0", "0.2.0"]);
    let started = Instant::now();
    allow_short_deadlines(env);
    install(env, package, "0.1.0", Some(DEADLINE_MINUTES));
    let explain = || state(env, package);
    // `Installed bundle <image> successfully` (`setInstalledStatusFromRevisionStates`).
    let installed_first = format!(
        "Installed bundle {} successfully",
        bundle_image(env, package, "0.1.0")
    );
    wait(
        "0.1.0 installed",
        Duration::from_secs(180),
        || {
            let extension = get(env, &["clusterextension", package]);
            is(
                condition(&extension, "Installed"),
                "True",
                "Succeeded",
                &installed_first,
            ) && installed_bundle(&extension) == (format!("{package}.v0.1.0"), "0.1.0".to_owned())
        },
        explain,
    );
    eprintln!(
        "FIGURE v1 readiness never passes: 0.1.0 created -> Installed: {:.1?}",
        started.elapsed()
    );
    let first_pods = pods(env, package);
    let [old] = first_pods.as_slice() else {
        panic!("one pod: {first_pods:?}\n{}", explain())
    };
    assert!(old.ready, "{old:?}");
    let old = old.name.clone();

    let upgraded = Instant::now();
    env.kubectl(
        &[
            "patch",
            "clusterextension",
            package,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"source":{"catalog":{"version":"0.2.0"}}}}"#,
        ],
        None,
    );
    // The Deployment rolls one new pod out beside the old (maxSurge 1, maxUnavailable 0 for one
    // replica): two replicas, one updated — the first of upstream's two Deployment probes fails,
    // in boxcutter's `FieldsEqualProbe` words (`probing/fieldsequal.go`).
    let probe_failure = format!(
        "Object Deployment.apps/v1 {package}/{package}-controller: \"status.updatedReplicas\" != \"status.replicas\" expected: 1 got: 2"
    );
    let (first, second) = (format!("{package}-1"), format!("{package}-2"));
    let mut extension = Value::Null;
    wait(
        "0.2.0 rolling out while 0.1.0 stays installed",
        Duration::from_secs(180),
        || {
            extension = get(env, &["clusterextension", package]);
            is(
                condition(&extension, "Installed"),
                "True",
                "Succeeded",
                &installed_first,
            ) && installed_bundle(&extension) == (format!("{package}.v0.1.0"), "0.1.0".to_owned())
                && is(
                    condition(&extension, "Progressing"),
                    "True",
                    "RollingOut",
                    &rolling_out("0.2.0"),
                )
                && active_revisions(&extension) == [first.clone(), second.clone()]
                && is(
                    revision_condition(&extension, &second, "Available"),
                    "False",
                    "ProbeFailure",
                    &probe_failure,
                )
        },
        explain,
    );
    eprintln!(
        "FIGURE v1 readiness never passes: upgrade to 0.2.0 -> reported rolling out, 0.1.0 still installed: {:.1?}",
        upgraded.elapsed()
    );
    // The installed revision stays active (archived only once a newer one succeeds,
    // `clusterobjectset_controller.go`) and its pod keeps serving beside the new one that is not Ready.
    let old_revision_active = |env: &Env| {
        let objectset = get(env, &["clusterobjectset", &first]);
        objectset.pointer("/spec/lifecycleState") == Some(&Value::from("Active"))
            && is(
                condition(&objectset, "Succeeded"),
                "True",
                "Succeeded",
                "Revision succeeded rolling out.",
            )
    };
    assert!(old_revision_active(env), "{}", explain());
    // Upstream probes an object a newer revision has taken over as it is on the cluster
    // (boxcutter's `ResultProgressed` runs the probe on the actual object), so the installed
    // revision now fails the same probe and says it is rolling out again — its `Succeeded`
    // stays latched — and the extension mirrors its `Available` (`ApplyBundleWithBoxcutter`).
    let old_revision_reports = |env: &Env| {
        let objectset = get(env, &["clusterobjectset", &first]);
        is(
            condition(&objectset, "Available"),
            "False",
            "ProbeFailure",
            &probe_failure,
        ) && is(
            condition(&objectset, "Progressing"),
            "True",
            "RollingOut",
            &rolling_out("0.1.0"),
        )
    };
    wait(
        "the installed revision probing the taken-over Deployment",
        Duration::from_secs(60),
        || {
            old_revision_reports(env)
                && is(
                    condition(&get(env, &["clusterextension", package]), "Available"),
                    "False",
                    "ProbeFailure",
                    &probe_failure,
                )
        },
        explain,
    );
    let old_pod_serving = |env: &Env| {
        let now = pods(env, package);
        now.len() == 2
            && now.iter().any(|p| p.name == old && p.ready && !p.deleting)
            && now.iter().any(|p| p.name != old && !p.ready)
    };
    wait(
        "the old pod Ready beside the new one that is not",
        Duration::from_secs(60),
        || old_pod_serving(env),
        explain,
    );

    extension = wait_for_deadline(env, package, "0.2.0", &explain);
    let exceeded = deadline_exceeded(&rolling_out("0.2.0"));
    eprintln!(
        "FIGURE v1 readiness never passes: upgrade to 0.2.0 -> ProgressDeadlineExceeded ({DEADLINE_MINUTES} min deadline): {:.1?}",
        upgraded.elapsed()
    );
    // Ten minutes on: still 0.1.0, its revision active, its first pod serving.
    assert!(
        is(
            condition(&extension, "Installed"),
            "True",
            "Succeeded",
            &installed_first
        ),
        "{extension}"
    );
    assert_eq!(
        installed_bundle(&extension),
        (format!("{package}.v0.1.0"), "0.1.0".to_owned())
    );
    assert!(old_revision_active(env), "{}", explain());
    assert!(old_pod_serving(env), "{}", explain());
    // The installed revision's own deadline ended with its success (`Succeeded` latched).
    assert!(old_revision_reports(env), "{}", explain());

    // Pinning 0.1.0 back does not roll back: while a revision rolls out, upstream reuses its
    // bundle and consults no catalog (`ResolveBundle`), so no third revision
    // appears and the failed rollout stays reported.
    env.kubectl(
        &[
            "patch",
            "clusterextension",
            package,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"source":{"catalog":{"version":"0.1.0"}}}}"#,
        ],
        None,
    );
    let generation = get(env, &["clusterextension", package])["metadata"]["generation"].clone();
    wait(
        "the pinned spec reconciled",
        Duration::from_secs(120),
        || {
            extension = get(env, &["clusterextension", package]);
            extension
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|c| c["type"] == "Installed"))
                .is_some_and(|c| c["observedGeneration"] == generation)
        },
        explain,
    );
    assert_eq!(revisions(env, package), [first.clone(), second.clone()]);
    assert!(
        is(
            condition(&extension, "Progressing"),
            "False",
            "ProgressDeadlineExceeded",
            &exceeded
        ),
        "{extension}"
    );
    assert_eq!(
        installed_bundle(&extension),
        (format!("{package}.v0.1.0"), "0.1.0".to_owned())
    );
    assert!(old_pod_serving(env), "{}", explain());
}

/// A CRD in two versions whose conversion OLM wires to the example operator's pod
/// (`ConversionWebhook` in the CSV): a widget written as v2 is stored as v1 and read back as
/// v1, and the other way round — `spec.size` and `spec.parts` renamed by the pod.
fn conversion_webhook(env: &Env) {
    let package = "v1-convert";
    let crd = "widgets.convert.olm.operatorframework.io";
    publish(env, package, &["0.1.0"]);
    let started = Instant::now();
    install(env, package, "0.1.0", None);
    let explain = || {
        let (_, log, err) = env.try_kubectl(
            &[
                "logs",
                "-n",
                package,
                "-l",
                &format!("app.kubernetes.io/name={package}"),
                "--tail=30",
            ],
            None,
        );
        format!("{}\n--- operator log:\n{log}{err}", state(env, package))
    };
    let installed = format!(
        "Installed bundle {} successfully",
        bundle_image(env, package, "0.1.0")
    );
    wait(
        "0.1.0 installed",
        Duration::from_secs(240),
        || {
            is(
                condition(&get(env, &["clusterextension", package]), "Installed"),
                "True",
                "Succeeded",
                &installed,
            )
        },
        explain,
    );
    eprintln!(
        "FIGURE v1 conversion webhook: ClusterExtension created -> Installed: {:.1?}",
        started.elapsed()
    );

    // OLM's rendering (upstream's registry+v1 render): the CRD converts through the Service of
    // the Deployment the CSV names, at the definition's path and container port, with the CA
    // of the serving certificate.
    let definition = get(env, &["crd", crd]);
    let webhook = &definition["spec"]["conversion"];
    assert_eq!(webhook["strategy"], "Webhook", "{definition}");
    assert_eq!(
        webhook["webhook"]["clientConfig"]["service"],
        serde_json::json!({"name": format!("{package}-controller-service"), "namespace": package, "path": "/convert", "port": 9443}),
        "{definition}"
    );
    assert_eq!(
        webhook["webhook"]["conversionReviewVersions"],
        serde_json::json!(["v1"])
    );
    // Which certificate provider: `--cert-provider auto` (the default, docs/run.md) takes
    // cert-manager only where the API server serves cert-manager.io/v1; this cluster has none,
    // so OLM's built-in provider issued the certificate and injected its CA.
    let cert_manager = env.kubectl(
        &["api-resources", "--api-group=cert-manager.io", "-o", "name"],
        None,
    );
    assert_eq!(cert_manager.trim(), "", "no cert-manager here");
    let annotations = &definition["metadata"]["annotations"];
    assert_eq!(
        annotations["olm.operatorframework.io/inject-ca-from"],
        format!("{package}/{package}-controller-service-cert"),
        "{definition}"
    );
    assert!(
        annotations.get("cert-manager.io/inject-ca-from").is_none(),
        "{definition}"
    );

    // Written as v2 (`parts`), stored as v1: the API server must call the pod before it stores
    // anything, which it can once the CA is in the CRD and the pod serves.
    let v2 = format!(
        "apiVersion: convert.olm.operatorframework.io/v2\nkind: Widget\nmetadata: {{name: written-as-v2, namespace: {package}}}\nspec: {{parts: 7, color: red}}\n"
    );
    let last = std::cell::RefCell::new(String::new());
    let callable = wait(
        "a v2 widget stored through the conversion webhook",
        Duration::from_secs(180),
        || {
            let (ok, out, err) = env.try_kubectl(&["create", "-f", "-"], Some(&v2));
            *last.borrow_mut() = format!("{out}{err}");
            ok || err.contains("AlreadyExists")
        },
        || format!("last: {}\n{}", last.borrow(), explain()),
    );
    eprintln!(
        "FIGURE v1 conversion webhook: Installed -> first conversion answered: {callable:.1?}"
    );
    let as_v1 = get(
        env,
        &[
            "widgets.v1.convert.olm.operatorframework.io",
            "written-as-v2",
            "-n",
            package,
        ],
    );
    // Stored as the CRD's storage version, v1, only.
    assert_eq!(
        get(env, &["crd", crd])["status"]["storedVersions"],
        serde_json::json!(["v1"])
    );
    assert_eq!(
        as_v1["apiVersion"], "convert.olm.operatorframework.io/v1",
        "{as_v1}"
    );
    assert_eq!(
        as_v1["spec"],
        serde_json::json!({"size": 7, "color": "red"}),
        "{as_v1}"
    );

    // Written as v1 (`size`), read as v2.
    env.apply(&format!(
        "apiVersion: convert.olm.operatorframework.io/v1\nkind: Widget\nmetadata: {{name: written-as-v1, namespace: {package}}}\nspec: {{size: 3}}\n"
    ));
    let as_v2 = get(
        env,
        &[
            "widgets.v2.convert.olm.operatorframework.io",
            "written-as-v1",
            "-n",
            package,
        ],
    );
    assert_eq!(
        as_v2["apiVersion"], "convert.olm.operatorframework.io/v2",
        "{as_v2}"
    );
    assert_eq!(as_v2["spec"], serde_json::json!({"parts": 3}), "{as_v2}");
    // A list in v2 converts both.
    let list = get(
        env,
        &["widgets.v2.convert.olm.operatorframework.io", "-n", package],
    );
    let mut parts: Vec<i64> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["spec"]["parts"].as_i64())
        .collect();
    parts.sort_unstable();
    assert_eq!(parts, [3, 7], "{list}");

    // And the pod says it did it.
    let (_, log, _) = env.try_kubectl(
        &[
            "logs",
            "-n",
            package,
            "-l",
            &format!("app.kubernetes.io/name={package}"),
            "--tail=-1",
        ],
        None,
    );
    assert!(
        log.contains("conversion: converted"),
        "the pod's log:\n{log}"
    );
}
