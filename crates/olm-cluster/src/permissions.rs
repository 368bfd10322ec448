//! An extension's ServiceAccount on the cluster: gathering the RBAC that binds it, so that
//! [`olm_security::permissions`] can say before anything is applied whether it may manage every
//! object of a bundle, and clients that act as it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use olm_security::permissions::{
    CLUSTER_COLLECTION_VERBS, PermissionsError, PreAuthorizationFailed, Rbac, Request,
    ResourceInfo, ScopedPolicyRules, UserInfo, missing_permissions, service_account_user, verdict,
};
use serde_json::Value;

use crate::context::Shared;

/// Why a preflight refused.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// The ServiceAccount does not exist (upstream v1.10's wording).
    #[error(
        "service account {} not found in namespace {}",
        olm_goenc::quote(name),
        olm_goenc::quote(namespace)
    )]
    ServiceAccountNotFound {
        /// Namespace looked in.
        namespace: String,
        /// ServiceAccount name.
        name: String,
    },
    /// The ServiceAccount lacks permissions; the message lists every one.
    #[error("{0}")]
    Denied(#[from] PreAuthorizationFailed),
    /// Reading the ServiceAccount or RBAC failed: the API server's message only, as this
    /// becomes a ClusterExtension status message.
    #[error("{}", olm_runtime::api_error::message(.0))]
    Kube(#[from] kube::Error),
}

/// Checks that `service_account` in `namespace` may manage `objects` (rendered, to be installed
/// into `namespace`).
///
/// 1. Get the ServiceAccount; absent → [`PreflightError::ServiceAccountNotFound`].
/// 2. List ClusterRoles, ClusterRoleBindings, Roles and RoleBindings (all namespaces: the
///    objects and their escalation checks may touch any).
/// 3. Look up the resource and scope of every distinct kind with discovery; a kind the API server
///    does not serve stays unresolved and becomes an evaluation error in the verdict.
/// 4. Hand it all to [`missing_permissions`] with operator-controller's cluster collection verbs
///    (`list`, `watch`) and return its [`verdict`].
///
/// Caveat: what RBAC says, not what other authorizers (webhooks, Node) would; the objects are
/// applied later, so a role changed in between is seen only by the next preflight.
pub async fn preflight(
    shared: &Shared,
    namespace: &str,
    service_account: &str,
    objects: &[Value],
) -> Result<(), PreflightError> {
    preflight_with(shared, namespace, service_account, objects, &[]).await
}

/// [`preflight`] with requests checked besides the objects' (e.g.
/// [`olm_security::permissions::owner_finalizers`] of the extension or revision that will own
/// them).
pub async fn preflight_with(
    shared: &Shared,
    namespace: &str,
    service_account: &str,
    objects: &[Value],
    extra: &[Request],
) -> Result<(), PreflightError> {
    check_account(&shared.client, namespace, service_account, objects, extra).await
}

/// [`preflight_with`] through any client: `olm install` runs it with the user's credentials
/// before creating an extension, so an account that cannot install the bundle is refused at
/// once rather than retried by the controller until someone notices.
pub async fn check_account(
    client: &kube::Client,
    namespace: &str,
    service_account: &str,
    objects: &[Value],
    extra: &[Request],
) -> Result<(), PreflightError> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    if accounts.get_opt(service_account).await?.is_none() {
        return Err(PreflightError::ServiceAccountNotFound {
            namespace: namespace.into(),
            name: service_account.into(),
        });
    }
    let rbac = list_rbac(client).await?;
    let result = missing_rules(client, namespace, service_account, objects, &rbac, extra).await?;
    Ok(verdict(result)?)
}

/// Every Role, ClusterRole and binding of the cluster: what a ServiceAccount's rights are
/// worked out from.
pub async fn list_rbac(client: &kube::Client) -> Result<Rbac, kube::Error> {
    let all = ListParams::default();
    Ok(Rbac {
        cluster_roles: Api::<ClusterRole>::all(client.clone())
            .list(&all)
            .await?
            .items,
        roles: Api::<Role>::all(client.clone()).list(&all).await?.items,
        cluster_role_bindings: Api::<ClusterRoleBinding>::all(client.clone())
            .list(&all)
            .await?
            .items,
        role_bindings: Api::<RoleBinding>::all(client.clone())
            .list(&all)
            .await?
            .items,
    })
}

/// The resource and scope of every distinct kind of `objects`, by `(apiVersion, kind)`, from
/// discovery; `None` for a kind the API server does not serve.
pub async fn resources_of(
    client: &kube::Client,
    objects: &[Value],
) -> Result<BTreeMap<(String, String), Option<ResourceInfo>>, kube::Error> {
    let mut kinds: BTreeMap<(String, String), Option<ResourceInfo>> = BTreeMap::new();
    for o in objects {
        let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        kinds.entry((s("apiVersion"), s("kind"))).or_insert(None);
    }
    for ((api_version, kind), info) in kinds.iter_mut() {
        if kind.is_empty() {
            continue;
        }
        let (group, version) = api_version
            .split_once('/')
            .unwrap_or(("", api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        match kube::discovery::pinned_kind(client, &gvk).await {
            Ok((ar, caps)) => {
                *info = Some(ResourceInfo {
                    group: ar.group,
                    version: ar.version,
                    resource: ar.plural,
                    namespaced: caps.scope == Scope::Namespaced,
                });
            }
            // Not served: left unresolved, reported by the verdict with the object's index.
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(kube::Error::Discovery(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(kinds)
}

/// Every rule the ServiceAccount `service_account` of `namespace` needs to install `objects`
/// (rendered into `namespace`) and to handle `extra`: what [`preflight_with`] would find
/// missing for an account bound to nothing, grouped by namespace (empty: cluster scope).
///
/// Errors: discovery failures, and objects that cannot be located or RBAC objects that do not
/// decode (the message lists them).
pub async fn required_rules(
    client: &kube::Client,
    namespace: &str,
    service_account: &str,
    objects: &[Value],
    extra: &[Request],
) -> Result<Vec<ScopedPolicyRules>, RequiredRulesError> {
    Ok(missing_rules(
        client,
        namespace,
        service_account,
        objects,
        &Rbac::default(),
        extra,
    )
    .await??)
}

/// [`missing_permissions`] for the ServiceAccount under `rbac`, with the kinds of `objects`
/// looked up by discovery.
async fn missing_rules(
    client: &kube::Client,
    namespace: &str,
    service_account: &str,
    objects: &[Value],
    rbac: &Rbac,
    extra: &[Request],
) -> Result<Result<Vec<ScopedPolicyRules>, PermissionsError>, kube::Error> {
    let kinds = resources_of(client, objects).await?;
    let user = UserInfo::service_account(namespace, service_account);
    Ok(missing_permissions(
        &user,
        objects,
        namespace,
        |api_version, kind| {
            kinds
                .get(&(api_version.to_string(), kind.to_string()))
                .cloned()
                .flatten()
        },
        rbac,
        extra,
        &CLUSTER_COLLECTION_VERBS,
    ))
}

/// Why [`required_rules`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RequiredRulesError {
    /// Discovery failed: the API server's message only, as `olm install` prints it.
    #[error("{}", olm_runtime::api_error::message(.0))]
    Kube(#[from] kube::Error),
    /// An object could not be located or an RBAC object did not decode.
    #[error("{0}")]
    Objects(#[from] PermissionsError),
}

/// A client that acts as the ServiceAccount `name` in `namespace`: the process's own connection
/// ([`Shared::kube_config`]) impersonating `system:serviceaccount:<ns>:<name>` with the groups
/// the API server gives ServiceAccounts, so every request is authorized as that account's.
pub fn impersonating_client(
    shared: &Shared,
    namespace: &str,
    name: &str,
) -> Result<kube::Client, kube::Error> {
    let user = UserInfo::service_account(namespace, name);
    let mut config = shared.kube_config.clone();
    config.auth_info.impersonate = Some(service_account_user(namespace, name));
    config.auth_info.impersonate_groups = Some(user.groups);
    kube::Client::try_from(config)
}
