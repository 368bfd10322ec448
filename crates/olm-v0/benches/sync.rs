//! What one CSV sync decides, at scale: the membership checks against every OperatorGroup of a
//! cluster (each sync compares the CSV's provided APIs with all intersecting groups, so a
//! cluster with a group per namespace makes this linear in namespaces), the phase machine, and
//! building the Deployments of a real CSV (flux, six Deployments), which the install check
//! redoes on every sync.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;

use divan::{Bencher, black_box};
use olm_goenc::yamlread::{Options, parse_document_with};
use olm_v0::olm_operator::inject::Overrides;
use olm_v0::olm_operator::membership::{Csv, Group, check};
use olm_v0::olm_operator::strategy::{CsvOwner, deployment_for_spec, strategy_deployments};
use olm_v0::olm_operator::transition::{Facts, InstallStatus, next};
use olm_v0::{ApiSet, InstallMode, OperatorGroupView};
use olm_v0_api::v1alpha1::{ClusterServiceVersion, ClusterServiceVersionPhase as Phase};

fn main() {
    divan::main();
}

/// `groups` explicit-target groups, one per namespace, each providing an API of its own.
fn other_groups(groups: usize) -> Vec<OperatorGroupView> {
    (0..groups)
        .map(|i| {
            let ns = format!("tenant-{i}");
            OperatorGroupView::new(
                "og",
                &ns,
                std::slice::from_ref(&ns),
                Some(&format!("Thing{i}.v1.tenant{i}.example.com")),
            )
        })
        .collect()
}

#[divan::bench(args = [100, 1_000, 10_000])]
fn membership(bencher: Bencher, groups: usize) {
    let others = other_groups(groups);
    let annotations = BTreeMap::from([
        ("olm.operatorGroup".to_owned(), "global".to_owned()),
        ("olm.operatorNamespace".to_owned(), "operators".to_owned()),
        ("olm.targetNamespaces".to_owned(), String::new()),
    ]);
    let modes = vec![InstallMode {
        type_: olm_v0::InstallModeType::AllNamespaces,
        supported: true,
    }];
    let apis = ApiSet::parse_annotation("EtcdCluster.v1beta2.etcd.database.coreos.com");
    let all = vec![String::new()];
    let group = Group {
        name: "global",
        namespace: "operators",
        status_namespaces: Some(&all),
        provided_apis: Some("EtcdCluster.v1beta2.etcd.database.coreos.com"),
        static_provided_apis: false,
        selects_nothing: false,
    };
    let csv = Csv {
        namespace: "operators",
        annotations: &annotations,
        install_modes: &modes,
        provided_apis: &apis,
        reason: None,
    };
    bencher.bench(|| {
        check(
            black_box(&csv),
            std::slice::from_ref(&group),
            black_box(&others),
        )
    });
}

#[divan::bench]
fn phase_machine(bencher: Bencher) {
    let facts = Facts {
        phase: Some(Phase::Succeeded),
        requirements: Some(Ok(true)),
        install_status: Some(InstallStatus {
            strategy: None,
            apiservices: Ok(true),
            webhooks: Ok(true),
        }),
        ..Facts::default()
    };
    bencher.bench(|| next(black_box(&facts)));
}

#[divan::bench]
fn flux_deployments(bencher: Bencher) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../../shared/data/bundles/flux/2.3.0/manifests/flux.v2.3.0.clusterserviceversion.yaml",
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let mut csv = parse_document_with(&text, &Options::default()).unwrap();
    let meta = csv["metadata"].as_object_mut().unwrap();
    meta.insert("namespace".into(), "operators".into());
    meta.insert("uid".into(), "5f1c6e9a-0000-4000-8000-000000000001".into());
    let csv: ClusterServiceVersion = serde_json::from_value(csv).unwrap();
    let owner = CsvOwner::from_csv(&csv).unwrap();
    let entries = strategy_deployments(&csv.spec.install).unwrap();
    bencher.bench(|| {
        for e in &entries {
            black_box(
                deployment_for_spec(
                    &owner,
                    e,
                    Overrides {
                        config: None,
                        proxy: None,
                    },
                )
                .unwrap(),
            );
        }
    });
}
