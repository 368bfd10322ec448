//! Whether the PackageManifest API (`packages.operators.coreos.com/v1`, upstream's
//! packageserver) is registered with the API server, and the objects that register and route it.
//!
//! Why this needs deciding at all: an APIService the aggregator cannot reach is not merely a
//! missing API. Its `Available=False` makes discovery fail for its group, and the namespace
//! controller and the garbage collector refuse to work on a partial discovery: every namespace
//! deletion in the cluster stays `Terminating` (`NamespaceDeletionDiscoveryFailure`). So the
//! APIService is registered only while this process serves the API *and* something routes the
//! Service it names to this process, and it is taken away when either stops.
//!
//! The expected flow, in the shell (`olm run`'s leader):
//!
//! 1. Bind the packageserver's port and issue its serving certificate. If either fails, the
//!    process does not serve: [`Serving::No`].
//! 2. When the shell knows the address the API server reaches it at (`olm dev`: this machine's
//!    address), it routes the Service itself: [`service`] without a selector and [`endpoints`]
//!    pointing at that address. Otherwise someone else routes it (a Service of the install
//!    manifests, a test's Endpoints), or nobody does.
//! 3. On every change of the Service (and periodically), observe whether the Service exists and
//!    what the APIService says, and act on [`decide`]: [`Action::Register`] applies
//!    [`apiservice`] with this process's CA, [`Action::Unregister`] deletes it.
//! 4. On shutdown, decide once more with [`Serving::Stopping`]: the registration carrying this
//!    process's CA goes; one a newer leader already replaced stays.
//! 5. A process that does not serve the API at all (`olm run --olm v1`, `olm uninstall-olm`)
//!    decides with [`Serving::No`]: a registration naming the Service of its namespace goes.
//!
//! Guarantees: nothing is ever done to an APIService that names another Service (upstream's
//! packageserver in `olm`, say): [`Action::Foreign`] only reports it. A registration is only
//! made while a Service exists to route it.
//!
//! Assumptions: a Service that exists routes to the leader. When `olm` routes it itself, this
//! holds by construction; a Service someone else made is trusted.
//!
//! Caveats: the Service existing does not prove its endpoints are ready; a Service whose
//! endpoints point elsewhere still makes an unavailable APIService.

use base64::Engine as _;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use serde_json::{Value, json};

/// The Service the APIService points at (upstream's name for the packageserver's Service).
pub const SERVICE: &str = "packageserver-service";
/// The APIService: version `v1` of [`GROUP`].
pub const APISERVICE: &str = "v1.packages.operators.coreos.com";
/// The API group.
pub const GROUP: &str = "packages.operators.coreos.com";
/// The version.
pub const VERSION: &str = "v1";
/// The resource.
pub const RESOURCE: &str = "packagemanifests";
/// The port of [`SERVICE`] the aggregator connects to (upstream's).
pub const SERVICE_PORT: u16 = 443;
/// The port upstream's packageserver listens on, and `olm run`'s default.
pub const DEFAULT_PORT: u16 = 5443;
/// Label of the Service and Endpoints `olm` creates to route the API to itself, so that it
/// removes only those.
pub const ROUTE_LABEL: &str = "olm.operatorframework.io/packageserver-route";

/// Whether this process serves the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// It listens and has a certificate whose CA it registers.
    Yes,
    /// It served and is stopping; another replica may already have taken over.
    Stopping,
    /// It does not serve the API (OLM v0 does not run, or the port or certificate failed).
    No,
}

/// The APIService as the API server holds it, reduced to what [`decide`] needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registered {
    /// It names [`SERVICE`] in this process's namespace: a registration this binary makes.
    pub ours: bool,
    /// It is exactly what this process would register (its CA, the Service, the port).
    pub current: bool,
}

/// What one decision looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    /// Whether this process serves the API.
    pub serving: Serving,
    /// Whether [`SERVICE`] exists in this process's namespace.
    pub routed: bool,
    /// The APIService [`APISERVICE`], if it exists.
    pub registered: Option<Registered>,
}

/// What to do with the APIService.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Apply [`apiservice`] (create it, or bring it to this process's CA).
    Register,
    /// Delete it.
    Unregister,
    /// It belongs to another packageserver: leave it, and say that PackageManifests are not
    /// served by `olm`.
    Foreign,
    /// Nothing to do.
    Nothing,
}

/// What to do with the APIService, from what is observed; see the module documentation.
///
/// | serving | routed | registered | action |
/// |---|---|---|---|
/// | yes | yes | none, or ours but not current | register |
/// | yes | yes | ours and current | nothing |
/// | yes | no | ours | unregister (nothing routes it) |
/// | stopping | any | ours and current | unregister |
/// | stopping | any | ours, another CA | nothing (a newer leader's) |
/// | no | any | ours | unregister |
/// | any | any | another Service's | foreign (left alone) |
/// | otherwise | | | nothing |
pub fn decide(observed: Observed) -> Action {
    let Observed {
        serving,
        routed,
        registered,
    } = observed;
    match (serving, routed, registered) {
        (_, _, Some(Registered { ours: false, .. })) => Action::Foreign,
        (Serving::Yes, true, None) => Action::Register,
        (Serving::Yes, true, Some(Registered { current, .. })) => {
            if current {
                Action::Nothing
            } else {
                Action::Register
            }
        }
        (Serving::Yes, false, Some(_)) => Action::Unregister,
        (Serving::Yes, false, None) => Action::Nothing,
        (Serving::Stopping, _, Some(Registered { current, .. })) => {
            if current {
                Action::Unregister
            } else {
                Action::Nothing
            }
        }
        (Serving::No, _, Some(_)) => Action::Unregister,
        (Serving::Stopping | Serving::No, _, None) => Action::Nothing,
    }
}

/// Reads an APIService against this process's namespace and the CA it would register (base64
/// of its PEM, as the API writes bytes); `ca_bundle` is `None` for a process that has none (it
/// never finds one current).
pub fn registered(apiservice: &APIService, namespace: &str, ca_bundle: Option<&str>) -> Registered {
    let spec = apiservice.spec.as_ref();
    let service = spec.and_then(|s| s.service.as_ref());
    let ours = service.is_some_and(|s| {
        s.namespace.as_deref() == Some(namespace) && s.name.as_deref() == Some(SERVICE)
    });
    let port = service.and_then(|s| s.port).unwrap_or(443);
    let written_ca = spec
        .and_then(|s| s.ca_bundle.as_ref())
        .map(|b| base64::engine::general_purpose::STANDARD.encode(&b.0));
    let current = ours
        && ca_bundle.is_some_and(|ca| written_ca.as_deref() == Some(ca))
        && port == i32::from(SERVICE_PORT)
        && spec.and_then(|s| s.group.as_deref()) == Some(GROUP)
        && spec.and_then(|s| s.version.as_deref()) == Some(VERSION)
        && spec.and_then(|s| s.insecure_skip_tls_verify) != Some(true);
    Registered { ours, current }
}

/// The APIService pointing at [`SERVICE`] in `namespace`, trusting `ca_bundle` (base64 of the
/// CA's PEM, as the API stores bytes). Priorities are upstream packageserver's.
pub fn apiservice(namespace: &str, ca_bundle: &str) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": APISERVICE},
        "spec": {
            "group": GROUP,
            "version": VERSION,
            "groupPriorityMinimum": 2000,
            "versionPriority": 15,
            "service": {"name": SERVICE, "namespace": namespace, "port": SERVICE_PORT},
            "caBundle": ca_bundle,
        },
    })
}

/// [`SERVICE`] without a selector, for a process that routes the API to itself: its
/// endpoints are [`endpoints`], not pods.
pub fn service(namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": namespace, "labels": {ROUTE_LABEL: "true"}},
        "spec": {"ports": [{"name": "https", "port": SERVICE_PORT, "protocol": "TCP"}]},
    })
}

/// The label the serving replica of an in-cluster `olm` puts on its own Pod, which the Service
/// [`selected_service`] selects: only the leader serves PackageManifests, so only its Pod may be
/// an endpoint.
pub const SERVING_LABEL: &str = "olm.operatorframework.io/packageserver";

/// [`SERVING_LABEL`]'s value while the Pod serves.
pub const SERVING: &str = "serving";

/// The Service of an in-cluster `olm` (installed with it, never made by `olm run`): port 443 of
/// the Pod among `pod_labels` that carries [`SERVING_LABEL`], on [`DEFAULT_PORT`].
pub fn selected_service(namespace: &str, pod_labels: &serde_json::Map<String, Value>) -> Value {
    let mut selector = pod_labels.clone();
    selector.insert(SERVING_LABEL.to_owned(), Value::from(SERVING));
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": namespace},
        "spec": {
            "selector": selector,
            "ports": [{
                "name": "https",
                "port": SERVICE_PORT,
                "protocol": "TCP",
                "targetPort": DEFAULT_PORT,
            }],
        },
    })
}

/// The merge patch that labels (`serving`) or unlabels a Pod with [`SERVING_LABEL`].
pub fn serving_label_patch(serving: bool) -> Value {
    let value = if serving {
        Value::from(SERVING)
    } else {
        Value::Null
    };
    json!({"metadata": {"labels": {SERVING_LABEL: value}}})
}

/// The Endpoints of [`service`]: `address:port`, where the API server reaches this process.
/// The aggregator connects to endpoints directly (`--enable-aggregator-routing`), so no
/// cluster IP needs to route; the address may not be a loopback one (the API refuses it).
pub fn endpoints(namespace: &str, address: std::net::IpAddr, port: u16) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": SERVICE, "namespace": namespace, "labels": {ROUTE_LABEL: "true"}},
        "subsets": [{
            "addresses": [{"ip": address.to_string()}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: &str = "olmv1-system";
    const CA: &str = "Q0E=";

    fn observed(serving: Serving, routed: bool, registered: Option<(bool, bool)>) -> Observed {
        Observed {
            serving,
            routed,
            registered: registered.map(|(ours, current)| Registered { ours, current }),
        }
    }

    /// Every row of the table in [`decide`]'s documentation.
    #[test]
    fn decisions() {
        use Action::*;
        use Serving::*;
        let cases = [
            (Yes, true, None, Register),
            (Yes, true, Some((true, false)), Register),
            (Yes, true, Some((true, true)), Nothing),
            (Yes, false, Some((true, true)), Unregister),
            (Yes, false, Some((true, false)), Unregister),
            (Yes, false, None, Nothing),
            (Stopping, true, Some((true, true)), Unregister),
            (Stopping, false, Some((true, true)), Unregister),
            (Stopping, true, Some((true, false)), Nothing),
            (Stopping, true, None, Nothing),
            (No, true, Some((true, false)), Unregister),
            (No, false, Some((true, true)), Unregister),
            (No, true, None, Nothing),
            (Yes, true, Some((false, false)), Foreign),
            (Yes, false, Some((false, false)), Foreign),
            (Stopping, true, Some((false, false)), Foreign),
            (No, true, Some((false, false)), Foreign),
        ];
        for (serving, routed, registered, want) in cases {
            assert_eq!(
                decide(observed(serving, routed, registered)),
                want,
                "{serving:?} routed={routed} registered={registered:?}"
            );
        }
    }

    #[test]
    fn what_this_process_registers_is_current() {
        let typed = |v: &Value| -> APIService { serde_json::from_value(v.clone()).unwrap() };
        let registered = |v: &Value, ns: &str, ca: Option<&str>| registered(&typed(v), ns, ca);
        let mine = apiservice(NS, CA);
        assert_eq!(
            registered(&mine, NS, Some(CA)),
            Registered {
                ours: true,
                current: true
            }
        );
        // Another replica's CA: ours, not current.
        assert_eq!(
            registered(&mine, NS, Some("b3RoZXI=")),
            Registered {
                ours: true,
                current: false
            }
        );
        // A process without a CA (not serving) never finds it current.
        assert!(!registered(&mine, NS, None).current);
        // Another namespace's Service: upstream's packageserver in `olm`, say.
        let upstream = apiservice("olm", CA);
        assert_eq!(
            registered(&upstream, NS, Some(CA)),
            Registered {
                ours: false,
                current: false
            }
        );
        let mut skip = mine.clone();
        skip["spec"]["insecureSkipTLSVerify"] = json!(true);
        assert!(!registered(&skip, NS, Some(CA)).current);
        let mut port = mine;
        port["spec"]["service"]["port"] = json!(5443);
        assert!(!registered(&port, NS, Some(CA)).current);
    }

    #[test]
    fn the_route_points_at_the_given_address() {
        let address = std::net::IpAddr::from([192, 168, 1, 7]);
        let e = endpoints(NS, address, 40123);
        assert_eq!(e["subsets"][0]["addresses"][0]["ip"], "192.168.1.7");
        assert_eq!(e["subsets"][0]["ports"][0]["port"], 40123);
        let s = service(NS);
        assert_eq!(s["spec"]["ports"][0]["port"], 443);
        assert!(s["spec"].get("selector").is_none());
        assert_eq!(s["metadata"]["labels"][ROUTE_LABEL], "true");
        assert_eq!(e["metadata"]["name"], s["metadata"]["name"]);
    }
}
