//! Names and labels of generated RBAC against values computed by Go's own `crypto/sha256`,
//! `math/big` (`Text(62)`) and `hash/fnv` with upstream's formulas (OLM repo
//! `pkg/controller/operators/olm/operatorgroup.go` `getClusterRoleName`, `hash`;
//! `pkg/controller/registry/resolver/cache/operators.go` `APIKeyToGVKHash`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_v0::ApiKey;
use olm_v0::olm_operator::rbac::{aggregation_label, group_cluster_role_name};
use olm_v0::olm_operator::surface::{ApiServiceRef, CrdRef, api_labels, gvk_hash, surface};

#[test]
fn group_cluster_role_names() {
    assert_eq!(
        group_cluster_role_name("ns", "og", "admin"),
        "olm.og.og.admin-7hdvs1pJiMS8ikuUkvThunsWUnvSLPNYPbr0ec"
    );
    assert_eq!(
        group_cluster_role_name("operators", "global-operators", "view"),
        "olm.og.global-operators.view-6lzJtrbG08ne4wrZHGxP3h1MBUjq5e7nOF4gax"
    );
    let long = group_cluster_role_name("a", &"g".repeat(250), "edit");
    assert_eq!(
        long,
        format!(
            "olm.og.{}.edit-9Ed3pAaBUiAMDh42DBVi2o2TG0fdTbCCIsZydk",
            "g".repeat(202)
        )
    );
    assert!(long.len() <= 253);
}

#[test]
fn api_hashes_and_labels() {
    let etcd = ApiKey::gvk("etcd.database.coreos.com", "v1beta2", "EtcdCluster");
    assert_eq!(gvk_hash(&etcd), "c571d720f17289d3");
    assert_eq!(
        gvk_hash(&ApiKey::gvk("example.com", "v1", "Widget")),
        "50cc6f60739af19b"
    );
    assert_eq!(
        aggregation_label(&etcd, "view"),
        "olm.opgroup.permissions/aggregate-to-c571d720f17289d3-view"
    );
    let s = surface(
        &[CrdRef {
            name: "etcdclusters.etcd.database.coreos.com",
            version: "v1beta2",
            kind: "EtcdCluster",
        }],
        &[ApiServiceRef {
            name: "widgets",
            group: "example.com",
            version: "v1",
            kind: "Widget",
        }],
        &[CrdRef {
            name: "others.example.com",
            version: "v1",
            kind: "Other",
        }],
        &[],
    )
    .unwrap();
    assert_eq!(s.provided.0.len(), 2);
    assert_eq!(s.required.0.len(), 1);
    let labels = api_labels(&s);
    assert_eq!(labels.len(), 2);
    assert_eq!(labels["olm.api.c571d720f17289d3"], "provided");
    assert_eq!(labels["olm.api.50cc6f60739af19b"], "provided");
    assert_eq!(
        surface(
            &[CrdRef {
                name: "nodot",
                version: "v1",
                kind: "K"
            }],
            &[],
            &[],
            &[]
        ),
        Err("error parsing crd name: nodot".into())
    );
}
