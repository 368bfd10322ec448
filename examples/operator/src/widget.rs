//! The one API the operator provides, `Widget` (`example.olm.operatorframework.io/v1`,
//! namespaced), and the rule every widget must keep. The CustomResourceDefinition itself ships
//! in the bundles (`examples/bundles/*/manifests/example.olm.operatorframework.io_widgets.yaml`);
//! these types only read and write it.

use std::borrow::Cow;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// The most parts a widget can have.
pub const MAX_SIZE: i64 = 100;

/// A widget, as the API server serves it (read only: the operator writes nothing but status
/// patches).
///
/// Written out rather than derived with `kube::CustomResource`: the CRD does not require
/// `spec`, and the derived type would refuse a widget without one — and with it every list of
/// widgets holding one, so the watch would never sync.
#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Widget {
    /// Name, namespace, generation, …
    pub metadata: ObjectMeta,
    /// What the widget should be; empty when the object has none.
    #[serde(default)]
    pub spec: WidgetSpec,
    /// What the operator last wrote.
    #[serde(default)]
    pub status: Option<WidgetStatus>,
}

impl kube::Resource for Widget {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Widget".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "example.olm.operatorframework.io".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "widgets".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// What a widget should be.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    /// How many parts the widget has (the CRD makes it at least 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// What colour the widget is painted (0.2.0's CRD has it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

/// What the operator last saw of a widget.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// Whether the widget is as it should be.
    #[serde(default)]
    pub ready: bool,
    /// The `metadata.generation` the status speaks of (0.2.0's CRD keeps it; 0.1.0's prunes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Why the widget is not ready (0.2.0's CRD keeps it; 0.1.0's prunes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Why a widget is not as it may be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// More parts than [`MAX_SIZE`].
    #[error("spec.size {0} is more than {MAX_SIZE}, the most a widget can have")]
    TooLarge(i64),
}

/// Whether `spec` keeps the rule: at most [`MAX_SIZE`] parts. A widget without a size has none.
pub fn check(spec: &WidgetSpec) -> Result<(), Invalid> {
    match spec.size {
        Some(size) if size > MAX_SIZE => Err(Invalid::TooLarge(size)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        let cases = [
            (None, Ok(())),
            (Some(0), Ok(())),
            (Some(3), Ok(())),
            (Some(100), Ok(())),
            (Some(101), Err(Invalid::TooLarge(101))),
            (Some(1000), Err(Invalid::TooLarge(1000))),
            (Some(i64::MAX), Err(Invalid::TooLarge(i64::MAX))),
        ];
        for (size, want) in cases {
            let spec = WidgetSpec { size, color: None };
            assert_eq!(check(&spec), want, "size {size:?}");
        }
    }

    #[test]
    fn the_message_says_what_and_why() {
        assert_eq!(
            Invalid::TooLarge(1000).to_string(),
            "spec.size 1000 is more than 100, the most a widget can have"
        );
    }

    /// A widget as the API server serves it reads back, unknown and missing fields alike.
    #[test]
    fn reads_what_the_api_server_serves() {
        let widget: Widget = serde_json::from_value(serde_json::json!({
            "apiVersion": "example.olm.operatorframework.io/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "generation": 2},
            "spec": {"size": 3, "color": "blue", "shape": "round"},
            "status": {"ready": true},
        }))
        .unwrap();
        assert_eq!(widget.spec.size, Some(3));
        assert_eq!(widget.spec.color.as_deref(), Some("blue"));
        assert_eq!(
            widget.status,
            Some(WidgetStatus {
                ready: true,
                observed_generation: None,
                message: None
            })
        );
        // The CRD does not require a spec.
        let bare: Widget = serde_json::from_value(serde_json::json!({
            "apiVersion": "example.olm.operatorframework.io/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
        }))
        .unwrap();
        assert_eq!(bare.spec, WidgetSpec::default());
        assert_eq!(bare.status, None);
    }
}
