//! The CRDs of the OLM v0 API, generated from the types.
//!
//! kube's derive gives each version its names, scope, short names, categories, printer columns
//! and status subresource; [`crate::schema`] gives it its schema; versions of one kind are merged
//! into one CRD with the stored version marked. Upstream adjusts a few generated schemas by hand
//! after `controller-gen` (API repo `Makefile`, target `manifests`); those adjustments are made
//! here too, each where its kind is built, so that the CRDs accept and default what upstream's
//! do.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceValidation, JSONSchemaProps,
};
use kube::core::crd::{CustomResourceExt, MergeError, merge_crds};
use kube::core::object::{HasSpec, HasStatus};
use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::schema::{SchemaError, crd_schema};
use crate::{Crd, GROUP, v1, v1alpha1, v1alpha2, v2};

/// Why a CRD could not be generated (a defect of the types, never of input).
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// A schema could not be built.
    #[error("{kind}: {source}")]
    Schema {
        /// The kind.
        kind: String,
        /// Why.
        source: SchemaError,
    },
    /// The schema is not a valid `JSONSchemaProps`, or the CRD not a valid object.
    #[error("{kind}: {source}")]
    Json {
        /// The kind.
        kind: String,
        /// Why.
        source: serde_json::Error,
    },
    /// Versions of one kind could not be merged.
    #[error("{kind}: {source}")]
    Merge {
        /// The kind.
        kind: String,
        /// Why.
        source: MergeError,
    },
    /// A path adjusted after generation is not in the schema.
    #[error("{kind}: no schema at {path}")]
    MissingPath {
        /// The kind.
        kind: String,
        /// The path, as property names.
        path: String,
    },
}

/// The top of a version's schema, which the derive does not describe: the object's own fields.
struct Root {
    /// What the kind is.
    description: &'static str,
    /// Of `metadata` and `spec`: those whose Go JSON tag has no `omitempty` and no `+optional`.
    required: &'static [&'static str],
    /// `spec`'s default, when the Go type has one.
    spec_default: Option<Value>,
}

/// One version of a kind as a single-version CRD.
fn version<K>(root: Root) -> Result<CustomResourceDefinition, GenerateError>
where
    K: CustomResourceExt + HasSpec + HasStatus,
    K::Spec: JsonSchema,
    K::Status: JsonSchema,
{
    let mut crd = K::crd();
    let kind = crd.spec.names.kind.clone();
    let schema_err = |source| GenerateError::Schema {
        kind: kind.clone(),
        source,
    };
    let mut spec = crd_schema::<K::Spec>().map_err(schema_err)?;
    if let (Some(default), Value::Object(spec)) = (root.spec_default, &mut spec) {
        spec.insert("default".into(), default);
    }
    let status = crd_schema::<K::Status>().map_err(schema_err)?;
    let mut schema = json!({
        "description": root.description,
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "The versioned schema of this representation of an object; servers convert recognised schemas to the latest internal value and may reject unrecognised ones.",
                "type": "string",
            },
            "kind": {
                "description": "The REST resource this object represents; servers may infer it from the endpoint the client submits requests to.",
                "type": "string",
            },
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    });
    if !root.required.is_empty() {
        schema["required"] = json!(root.required);
    }
    let props: JSONSchemaProps =
        serde_json::from_value(schema).map_err(|source| GenerateError::Json {
            kind: kind.clone(),
            source,
        })?;
    for v in &mut crd.spec.versions {
        v.schema = Some(CustomResourceValidation {
            open_api_v3_schema: Some(props.clone()),
        });
    }
    Ok(crd)
}

/// Several versions of one kind as one CRD, `stored` marked for storage, versions by name.
fn merged(
    versions: Vec<CustomResourceDefinition>,
    stored: &str,
) -> Result<CustomResourceDefinition, GenerateError> {
    let kind = versions
        .first()
        .map(|c| c.spec.names.kind.clone())
        .unwrap_or_default();
    let mut crd =
        merge_crds(versions, stored).map_err(|source| GenerateError::Merge { kind, source })?;
    crd.spec.versions.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(crd)
}

/// The CRD as the committed file holds it.
fn finish(mut crd: CustomResourceDefinition) -> Result<Crd, GenerateError> {
    // The API server would fill it in; upstream's files spell it out.
    crd.spec.names.list_kind = Some(format!("{}List", crd.spec.names.kind));
    let kind = crd.spec.names.kind.clone();
    let name = format!("{}.{GROUP}", crd.spec.names.plural);
    let file_name = format!("{GROUP}_{}.yaml", crd.spec.names.plural);
    let mut value =
        serde_json::to_value(&crd).map_err(|source| GenerateError::Json { kind, source })?;
    integral_numbers(&mut value);
    Ok(Crd {
        name,
        file_name,
        value,
    })
}

/// Whole numbers written as integers: `JSONSchemaProps` holds limits as `f64`, which serde writes
/// as `1.0` where Go writes `1`.
fn integral_numbers(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n
                .as_f64()
                .filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15)
            {
                // Exact: |f| < 2^53.
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *v = Value::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// The schema of the first version of `crd` at `path` (property names, `[]` for items).
fn schema_at<'a>(crd: &'a mut Value, path: &[&str]) -> Result<&'a mut Value, GenerateError> {
    let missing = GenerateError::MissingPath {
        kind: crd["spec"]["names"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        path: path.join("."),
    };
    let mut node = crd.pointer_mut("/spec/versions/0/schema/openAPIV3Schema");
    for step in path {
        node = node.and_then(|n| {
            if *step == "[]" {
                n.get_mut("items")
            } else {
                n.get_mut("properties").and_then(|p| p.get_mut(*step))
            }
        });
    }
    node.ok_or(missing)
}

/// The ClusterServiceVersion CRD.
pub fn cluster_service_version() -> Result<Crd, GenerateError> {
    let mut crd = finish(version::<v1alpha1::ClusterServiceVersion>(Root {
        description: "ClusterServiceVersion: one version of an operator, how to install it, and which APIs it provides and needs.",
        required: &["metadata", "spec"],
        spec_default: None,
    })?)?;
    // Upstream's hand adjustments of the embedded pod template: defaults `controller-gen` did not
    // once carry over from the Kubernetes types (the protocol default now comes with the types;
    // the other two do not), and the template's metadata kept as given rather than pruned to
    // nothing, since the schema declares no fields of it.
    let deployment = [
        "spec",
        "install",
        "spec",
        "deployments",
        "[]",
        "spec",
        "template",
    ];
    let pod = [&deployment[..], &["spec"]].concat();
    for (path, default) in [
        ([&pod[..], &["imagePullSecrets", "[]", "name"]].concat(), ""),
        ([&pod[..], &["hostAliases", "[]", "ip"]].concat(), ""),
    ] {
        schema_at(&mut crd.value, &path)?["default"] = json!(default);
    }
    let metadata = [&deployment[..], &["metadata"]].concat();
    schema_at(&mut crd.value, &metadata)?["x-kubernetes-preserve-unknown-fields"] = json!(true);
    Ok(crd)
}

/// The CatalogSource CRD.
pub fn catalog_source() -> Result<Crd, GenerateError> {
    finish(version::<v1alpha1::CatalogSource>(Root {
        description: "CatalogSource: a repository of operators, served from a catalog image, a ConfigMap or a registry server's address.",
        required: &["metadata", "spec"],
        spec_default: None,
    })?)
}

/// The Subscription CRD.
pub fn subscription() -> Result<Crd, GenerateError> {
    finish(version::<v1alpha1::Subscription>(Root {
        description: "Subscription: keeps a package installed from a catalog channel, and upgrades it as the channel moves.",
        required: &["metadata", "spec"],
        spec_default: None,
    })?)
}

/// The InstallPlan CRD.
pub fn install_plan() -> Result<Crd, GenerateError> {
    finish(version::<v1alpha1::InstallPlan>(Root {
        description: "InstallPlan: the resources to create to install or upgrade a set of CSVs, and whether they were.",
        required: &["metadata", "spec"],
        spec_default: None,
    })?)
}

/// The OperatorGroup CRD: v1 stored, v1alpha2 served.
pub fn operator_group() -> Result<Crd, GenerateError> {
    let description = "OperatorGroup: the namespaces the operators installed in its namespace watch, and the service account they are installed as.";
    finish(merged(
        vec![
            version::<v1::OperatorGroup>(Root {
                description,
                required: &["metadata"],
                // An OperatorGroup written without a spec still gets the default strategy.
                spec_default: Some(json!({"upgradeStrategy": "Default"})),
            })?,
            version::<v1alpha2::OperatorGroup>(Root {
                description,
                required: &["metadata"],
                spec_default: None,
            })?,
        ],
        "v1",
    )?)
}

/// The OperatorCondition CRD: v2 stored, v1 served.
pub fn operator_condition() -> Result<Crd, GenerateError> {
    let description =
        "OperatorCondition: the conditions of one installed operator, named as its CSV.";
    finish(merged(
        vec![
            version::<v2::OperatorCondition>(Root {
                description,
                required: &["metadata"],
                spec_default: None,
            })?,
            version::<v1::OperatorCondition>(Root {
                description,
                required: &["metadata"],
                spec_default: None,
            })?,
        ],
        "v2",
    )?)
}

/// The Operator CRD.
pub fn operator() -> Result<Crd, GenerateError> {
    finish(version::<v1::Operator>(Root {
        description: "Operator: everything that belongs to one installed operator, found by label.",
        required: &[],
        spec_default: None,
    })?)
}

/// The OLMConfig CRD.
pub fn olm_config() -> Result<Crd, GenerateError> {
    finish(version::<v1::OLMConfig>(Root {
        description: "OLMConfig: cluster-wide settings of OLM; the one object read is named `cluster`.",
        required: &["metadata"],
        spec_default: None,
    })?)
}

/// Every CRD of the OLM v0 API, by file name.
pub fn crds() -> Result<Vec<Crd>, GenerateError> {
    let mut all = vec![
        catalog_source()?,
        cluster_service_version()?,
        install_plan()?,
        olm_config()?,
        operator_condition()?,
        operator_group()?,
        operator()?,
        subscription()?,
    ];
    all.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    Ok(all)
}
