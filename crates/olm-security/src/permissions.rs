//! Whether an extension's ServiceAccount may manage every object of a rendered bundle, decided
//! before anything is applied, and the one message that lists every permission it lacks.
//!
//! The rules are operator-controller v1.10's pre-authorizer
//! (`internal/operator-controller/authorization/rbac.go`) over Kubernetes' RBAC semantics:
//!
//! * per object: `get`, `patch`, `update`, `delete` on that object by name, in its namespace;
//! * per resource and namespace: `create` (no name: the object does not exist yet);
//! * per resource: the cluster-wide collection verbs (v1.10 configures `list`, `watch`);
//! * per Role/ClusterRole in the bundle: the ServiceAccount must hold every rule it grants, or
//!   `escalate` on roles; per RoleBinding/ClusterRoleBinding: `bind` on the role it references,
//!   or hold every rule of that role (as on the cluster, plus as in the bundle).
//!
//! Evaluation follows the RBAC authorizer: the rules of every ClusterRoleBinding whose subjects
//! include the user (by ServiceAccount, user name or group), plus, for a namespaced request, those
//! of RoleBindings in that namespace; verbs, API groups, resources (`*`, `*/sub`), resource names
//! and non-resource URLs (`*` suffix) match as there. Unlike v1.10, which looked at the user name
//! only, the ServiceAccount's groups (`system:serviceaccounts`, `system:serviceaccounts:<ns>`,
//! `system:authenticated`) count as the API server counts them, and `escalate` granted in the
//! role's own namespace counts too.
//!
//! Missing rules are compacted, deduplicated and sorted as v1.10 does, so the structured result
//! and the message are stable.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use serde_json::Value;

/// The RBAC API group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Verbs checked on each object by name (v1.10's `objectVerbs`).
pub const OBJECT_VERBS: [&str; 4] = ["get", "patch", "update", "delete"];

/// Verbs checked once per resource and namespace (v1.10's `namespacedCollectionVerbs`): names
/// cannot restrict them.
pub const NAMESPACED_COLLECTION_VERBS: [&str; 1] = ["create"];

/// Cluster-wide collection verbs operator-controller v1.10 checks per resource
/// (`WithClusterCollectionVerbs("list", "watch")` in `cmd/operator-controller/main.go`).
pub const CLUSTER_COLLECTION_VERBS: [&str; 2] = ["list", "watch"];

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// User name.
    pub name: String,
    /// Groups.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// A ServiceAccount as the API server authenticates it: `system:serviceaccount:<ns>:<name>`
    /// in `system:serviceaccounts`, `system:serviceaccounts:<ns>` and `system:authenticated`.
    pub fn service_account(namespace: &str, name: &str) -> UserInfo {
        UserInfo {
            name: service_account_user(namespace, name),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }
}

/// `system:serviceaccount:<ns>:<name>`, the user name of a ServiceAccount (and the identity an
/// impersonating client takes).
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// One request to authorize (Kubernetes' `authorizer.AttributesRecord`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Request {
    /// Verb.
    pub verb: String,
    /// Namespace; empty for cluster scope.
    pub namespace: String,
    /// API group; empty for the core group.
    pub api_group: String,
    /// Resource (plural).
    pub resource: String,
    /// Subresource, or empty.
    pub subresource: String,
    /// Object name, or empty for collection requests.
    pub name: String,
    /// For a non-resource request, its path; then the resource fields are unused.
    pub path: Option<String>,
}

impl Request {
    /// A resource request.
    pub fn resource(
        verb: &str,
        namespace: &str,
        api_group: &str,
        resource: &str,
        name: &str,
    ) -> Request {
        let (resource, subresource) = match resource.split_once('/') {
            Some((r, s)) => (r, s),
            None => (resource, ""),
        };
        Request {
            verb: verb.into(),
            namespace: namespace.into(),
            api_group: api_group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            name: name.into(),
            path: None,
        }
    }

    /// The rule that would allow exactly this request (v1.10's `policyRuleFromAttributesRecord`).
    pub fn as_rule(&self) -> PolicyRule {
        let verbs = if self.verb.is_empty() {
            Vec::new()
        } else {
            vec![self.verb.clone()]
        };
        if let Some(path) = &self.path {
            return PolicyRule {
                verbs,
                non_resource_urls: Some(vec![path.clone()]),
                ..PolicyRule::default()
            };
        }
        let resource = if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        };
        PolicyRule {
            verbs,
            api_groups: Some(vec![self.api_group.clone()]),
            resources: Some(vec![resource]),
            resource_names: (!self.name.is_empty()).then(|| vec![self.name.clone()]),
            non_resource_urls: None,
        }
    }
}

/// `update` on an owner's `finalizers` subresource, which an object's owner reference with
/// `blockOwnerDeletion` requires: v1.10 adds it for the ClusterExtension
/// (`clusterextensions`, helm applier) or the ClusterObjectSet (`clusterobjectsets`, boxcutter
/// applier) being installed.
pub fn owner_finalizers(resource: &str, name: &str) -> Request {
    Request::resource(
        "update",
        "",
        "olm.operatorframework.io",
        &format!("{resource}/finalizers"),
        name,
    )
}

/// The REST resource of a kind, as discovery tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group (empty for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

/// One object of the bundle, located.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// Namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// Why the objects could not be turned into requests; the texts are v1.10's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionsError {
    /// An object without `apiVersion`, `kind` or `metadata.name`.
    #[error("could not decode object {index} in manifest: {reason}")]
    Decode {
        /// Position in the manifest.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A kind the API server does not serve.
    #[error(
        "could not get REST mapping for object {index} in manifest with GVK {gvk}{name}: no matches for kind {} in version {}",
        olm_goenc::quote(kind),
        olm_goenc::quote(api_version)
    )]
    NoMapping {
        /// Position in the manifest.
        index: usize,
        /// Go's `GroupVersionKind.String()`: `group/version, Kind=kind`.
        gvk: String,
        /// ` (name: <name>)`, or empty.
        name: String,
        /// Kind.
        kind: String,
        /// apiVersion.
        api_version: String,
    },
    /// A Role, ClusterRole or binding that does not read as one.
    #[error("could not decode object {index} in manifest as {kind}: {reason}")]
    Rbac {
        /// Position in the manifest.
        index: usize,
        /// The RBAC kind.
        kind: &'static str,
        /// The decoder's complaint.
        reason: String,
    },
    /// Several of the above, joined as Go's `errors.Join` does (one per line).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Many(Vec<PermissionsError>),
}

/// Locates every object: its resource from `resolve(apiVersion, kind)`, its namespace (the
/// install namespace for namespaced objects that name none, empty for cluster-scoped ones).
pub fn targets(
    objects: &[Value],
    install_namespace: &str,
    mut resolve: impl FnMut(&str, &str) -> Option<ResourceInfo>,
) -> Result<Vec<Target>, PermissionsError> {
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for (index, o) in objects.iter().enumerate() {
        let s = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind, name) = (s("/apiVersion"), s("/kind"), s("/metadata/name"));
        // Like Go's unstructured decoding, only the kind is required: a missing apiVersion is
        // left to the mapping, which takes any version of the kind.
        if kind.is_empty() {
            errs.push(PermissionsError::Decode {
                index,
                reason: "Object 'Kind' is missing in object".into(),
            });
            continue;
        }
        let Some(info) = resolve(api_version, kind) else {
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            errs.push(PermissionsError::NoMapping {
                index,
                gvk: format!("{group}/{version}, Kind={kind}"),
                name: if name.is_empty() {
                    String::new()
                } else {
                    format!(" (name: {name})")
                },
                kind: kind.into(),
                api_version: api_version.into(),
            });
            continue;
        };
        let namespace = if !info.namespaced {
            String::new()
        } else if s("/metadata/namespace").is_empty() {
            install_namespace.to_string()
        } else {
            s("/metadata/namespace").to_string()
        };
        out.push(Target {
            group: info.group,
            version: info.version,
            resource: info.resource,
            namespace,
            name: name.into(),
        });
    }
    match errs.len() {
        0 => Ok(out),
        1 => Err(errs.remove(0)),
        _ => Err(PermissionsError::Many(errs)),
    }
}

/// The requests managing `targets` takes (v1.10's `asAuthorizationAttributesRecordsForUser`):
/// per resource, in resource order, the object verbs per object, `create` per namespace, then
/// `cluster_collection_verbs` at cluster scope.
pub fn requests(targets: &[Target], cluster_collection_verbs: &[&str]) -> Vec<Request> {
    let mut by_resource: BTreeMap<(&str, &str, &str), Vec<&Target>> = BTreeMap::new();
    for t in targets {
        by_resource
            .entry((&t.group, &t.version, &t.resource))
            .or_default()
            .push(t);
    }
    let mut out = Vec::new();
    for ((group, _, resource), ts) in by_resource {
        let mut namespaces = BTreeSet::new();
        for t in ts {
            namespaces.insert(t.namespace.as_str());
            for v in OBJECT_VERBS {
                out.push(Request::resource(v, &t.namespace, group, resource, &t.name));
            }
        }
        for ns in namespaces {
            for v in NAMESPACED_COLLECTION_VERBS {
                out.push(Request::resource(v, ns, group, resource, ""));
            }
        }
        for v in cluster_collection_verbs {
            out.push(Request::resource(v, "", group, resource, ""));
        }
    }
    out
}

fn list(v: &Option<Vec<String>>) -> &[String] {
    v.as_deref().unwrap_or_default()
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

/// Whether `rule` allows `req` (Kubernetes' `RuleAllows`).
pub fn rule_allows(rule: &PolicyRule, req: &Request) -> bool {
    let verb = has(&rule.verbs, "*") || has(&rule.verbs, &req.verb);
    if !verb {
        return false;
    }
    if let Some(path) = &req.path {
        return list(&rule.non_resource_urls).iter().any(|u| {
            u == "*" || u == path || u.strip_suffix('*').is_some_and(|p| path.starts_with(p))
        });
    }
    let groups = list(&rule.api_groups);
    if !(has(groups, "*") || has(groups, &req.api_group)) {
        return false;
    }
    let combined = if req.subresource.is_empty() {
        req.resource.clone()
    } else {
        format!("{}/{}", req.resource, req.subresource)
    };
    let resource = list(&rule.resources).iter().any(|r| {
        r == "*"
            || *r == combined
            || (!req.subresource.is_empty()
                && r.strip_prefix("*/") == Some(req.subresource.as_str()))
    });
    if !resource {
        return false;
    }
    let names = list(&rule.resource_names);
    names.is_empty() || has(names, &req.name)
}

/// The rules of `servant` that `owner` does not cover, broken down to one verb, group, resource
/// and name (or URL) each (Kubernetes' `Covers` / `ConfirmNoEscalation`).
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: Some(vec![group.clone()]),
                    resources: Some(vec![resource.clone()]),
                    verbs: vec![verb.clone()],
                    ..PolicyRule::default()
                };
                let names = list(&rule.resource_names);
                if names.is_empty() {
                    out.push(base);
                } else {
                    for n in names {
                        out.push(PolicyRule {
                            resource_names: Some(vec![n.clone()]),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: Some(vec![url.clone()]),
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn has_all(set: &[String], subset: &[String]) -> bool {
    subset.iter().all(|s| has(set, s))
}

fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let og = list(&owner.api_groups);
    let groups = has(og, "*") || has_all(og, list(&sub.api_groups));
    let or = list(&owner.resources);
    let resources = has(or, "*")
        || list(&sub.resources).iter().all(|r| {
            has(or, r)
                || r.split_once('/')
                    .is_some_and(|(_, s)| has(or, &format!("*/{s}")))
        });
    let ou = list(&owner.non_resource_urls);
    let urls = list(&sub.non_resource_urls).iter().all(|u| {
        ou.iter()
            .any(|o| o == u || o == "*" || o.strip_suffix('*').is_some_and(|p| u.starts_with(p)))
    });
    let on = list(&owner.resource_names);
    let sn = list(&sub.resource_names);
    let names = if sn.is_empty() {
        on.is_empty()
    } else {
        on.is_empty() || has_all(on, sn)
    };
    verbs && groups && resources && urls && names
}

/// The cluster's RBAC objects the ServiceAccount's rights come from.
#[derive(Debug, Clone, Default)]
pub struct Rbac {
    /// ClusterRoles (at least those bindings reference).
    pub cluster_roles: Vec<ClusterRole>,
    /// Roles.
    pub roles: Vec<Role>,
    /// ClusterRoleBindings.
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
    /// RoleBindings.
    pub role_bindings: Vec<RoleBinding>,
}

fn applies_to(subject: &Subject, user: &UserInfo, binding_namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => subject.name == user.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let ns = subject
                .namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(binding_namespace);
            service_account_user(ns, &subject.name) == user.name
        }
        _ => false,
    }
}

impl Rbac {
    fn cluster_role_rules(&self, name: &str) -> Vec<PolicyRule> {
        self.cluster_roles
            .iter()
            .filter(|r| r.metadata.name.as_deref() == Some(name))
            .flat_map(|r| r.rules.clone().unwrap_or_default())
            .collect()
    }

    fn role_rules(&self, namespace: &str, name: &str) -> Vec<PolicyRule> {
        self.roles
            .iter()
            .filter(|r| {
                r.metadata.name.as_deref() == Some(name)
                    && r.metadata.namespace.as_deref() == Some(namespace)
            })
            .flat_map(|r| r.rules.clone().unwrap_or_default())
            .collect()
    }

    /// The rules a role reference grants in `namespace` (a Role there, or a ClusterRole); none
    /// when the role does not exist.
    pub fn role_reference_rules(&self, role_ref: &RoleRef, namespace: &str) -> Vec<PolicyRule> {
        match role_ref.kind.as_str() {
            "ClusterRole" => self.cluster_role_rules(&role_ref.name),
            "Role" => self.role_rules(namespace, &role_ref.name),
            _ => Vec::new(),
        }
    }

    /// Every rule `user` holds in `namespace` (empty: cluster-wide rules only).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<PolicyRule> {
        let mut out = Vec::new();
        for b in &self.cluster_role_bindings {
            if list_subjects(&b.subjects)
                .iter()
                .any(|s| applies_to(s, user, ""))
            {
                out.extend(self.role_reference_rules(&b.role_ref, ""));
            }
        }
        if !namespace.is_empty() {
            for b in &self.role_bindings {
                let ns = b.metadata.namespace.as_deref().unwrap_or("");
                if ns == namespace
                    && list_subjects(&b.subjects)
                        .iter()
                        .any(|s| applies_to(s, user, ns))
                {
                    out.extend(self.role_reference_rules(&b.role_ref, ns));
                }
            }
        }
        out
    }

    /// Whether `user` may make `req`.
    pub fn allows(&self, user: &UserInfo, req: &Request) -> bool {
        self.rules_for(user, &req.namespace)
            .iter()
            .any(|r| rule_allows(r, req))
    }
}

fn list_subjects(s: &Option<Vec<Subject>>) -> &[Subject] {
    s.as_deref().unwrap_or_default()
}

/// Missing rules of one namespace (empty: cluster scope), v1.10's `ScopedPolicyRules`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedPolicyRules {
    /// Namespace.
    pub namespace: String,
    /// Compacted, verb-deduplicated, sorted.
    pub missing_rules: Vec<PolicyRule>,
}

/// RBAC objects of the bundle, for the escalation checks.
#[derive(Debug, Default)]
struct Granted {
    cluster_roles: Vec<ClusterRole>,
    roles: Vec<Role>,
    cluster_role_bindings: Vec<ClusterRoleBinding>,
    role_bindings: Vec<RoleBinding>,
}

fn decode<T: serde::de::DeserializeOwned>(
    index: usize,
    kind: &'static str,
    o: &Value,
) -> Result<T, PermissionsError> {
    serde_json::from_value(o.clone()).map_err(|e| PermissionsError::Rbac {
        index,
        kind,
        reason: e.to_string(),
    })
}

fn granted(objects: &[Value], install_namespace: &str) -> Result<Granted, PermissionsError> {
    let mut g = Granted::default();
    let mut errs = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        let group = o
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.split_once('/'))
            .map_or("", |(g, _)| g);
        if group != RBAC_GROUP {
            continue;
        }
        let mut o = o.clone();
        let namespaced = matches!(
            o.get("kind").and_then(Value::as_str),
            Some("Role" | "RoleBinding")
        );
        if namespaced
            && o.pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            && let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut)
        {
            m.insert("namespace".into(), Value::String(install_namespace.into()));
        }
        let r = match o.get("kind").and_then(Value::as_str) {
            Some("ClusterRole") => decode(i, "ClusterRole", &o).map(|x| g.cluster_roles.push(x)),
            Some("Role") => decode(i, "Role", &o).map(|x| g.roles.push(x)),
            Some("ClusterRoleBinding") => {
                decode(i, "ClusterRoleBinding", &o).map(|x| g.cluster_role_bindings.push(x))
            }
            Some("RoleBinding") => decode(i, "RoleBinding", &o).map(|x| g.role_bindings.push(x)),
            _ => Ok(()),
        };
        if let Err(e) = r {
            errs.push(e);
        }
    }
    match errs.len() {
        0 => Ok(g),
        1 => Err(errs.remove(0)),
        _ => Err(PermissionsError::Many(errs)),
    }
}

/// Every rule, on resources and URLs (v1.10's `fullAuthority`), needed to set an aggregation rule.
fn full_authority() -> Vec<PolicyRule> {
    let all = || Some(vec!["*".to_string()]);
    vec![
        PolicyRule {
            verbs: vec!["*".into()],
            api_groups: all(),
            resources: all(),
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: vec!["*".into()],
            non_resource_urls: all(),
            ..PolicyRule::default()
        },
    ]
}

/// The rules `user` lacks to manage `objects` (rendered, to be installed into
/// `install_namespace`), grouped by namespace and sorted, empty when it lacks none.
///
/// Flow: locate every object ([`targets`]), derive the requests ([`requests`], plus `extra`),
/// keep those [`Rbac::allows`] refuses as rules; then for each RBAC object of the bundle, unless
/// the user may `escalate` (roles) or `bind` (bindings), add the rules it would grant that the
/// user does not hold ([`uncovered`]). Per namespace the rules are compacted as Kubernetes'
/// `CompactRules` does, verbs deduplicated and sorted (`*` alone when present), and the rules
/// sorted by their Go `String()`.
///
/// Errors: objects that cannot be located or RBAC objects that do not decode, all reported.
pub fn missing_permissions(
    user: &UserInfo,
    objects: &[Value],
    install_namespace: &str,
    resolve: impl FnMut(&str, &str) -> Option<ResourceInfo>,
    rbac: &Rbac,
    extra: &[Request],
    cluster_collection_verbs: &[&str],
) -> Result<Vec<ScopedPolicyRules>, PermissionsError> {
    let targets = targets(objects, install_namespace, resolve)?;
    let granted = granted(objects, install_namespace)?;
    let mut missing: BTreeMap<String, Vec<PolicyRule>> = BTreeMap::new();
    for req in requests(&targets, cluster_collection_verbs)
        .iter()
        .chain(extra)
    {
        if !rbac.allows(user, req) {
            missing
                .entry(req.namespace.clone())
                .or_default()
                .push(req.as_rule());
        }
    }
    let masters = user.groups.iter().any(|g| g == "system:masters");
    let may = |verb: &str, ns: &str, resource: &str, name: &str| {
        masters
            || rbac.allows(
                user,
                &Request::resource(verb, ns, RBAC_GROUP, resource, name),
            )
    };
    let mut add = |ns: &str, owner_ns: &str, rules: &[PolicyRule]| {
        let lacking = uncovered(&rbac.rules_for(user, owner_ns), rules);
        if !lacking.is_empty() {
            missing.entry(ns.to_string()).or_default().extend(lacking);
        }
    };
    for r in &granted.cluster_roles {
        if may("escalate", "", "clusterroles", "") {
            continue;
        }
        let aggregates = r
            .aggregation_rule
            .as_ref()
            .is_some_and(|a| !list_selectors(&a.cluster_role_selectors).is_empty());
        if aggregates {
            add("", "", &full_authority());
        }
        add("", "", r.rules.as_deref().unwrap_or_default());
    }
    for r in &granted.roles {
        let ns = r.metadata.namespace.as_deref().unwrap_or("");
        if may("escalate", ns, "roles", "") {
            continue;
        }
        add(ns, ns, r.rules.as_deref().unwrap_or_default());
    }
    for b in &granted.cluster_role_bindings {
        if may("bind", "", &role_resource(&b.role_ref), &b.role_ref.name) {
            continue;
        }
        let mut rules = rbac.role_reference_rules(&b.role_ref, "");
        if b.role_ref.kind == "ClusterRole" {
            rules.extend(bundle_cluster_role_rules(&granted, &b.role_ref.name));
        }
        add("", "", &rules);
    }
    for b in &granted.role_bindings {
        let ns = b.metadata.namespace.as_deref().unwrap_or("");
        if may("bind", ns, &role_resource(&b.role_ref), &b.role_ref.name) {
            continue;
        }
        let mut rules = rbac.role_reference_rules(&b.role_ref, ns);
        match b.role_ref.kind.as_str() {
            "ClusterRole" => rules.extend(bundle_cluster_role_rules(&granted, &b.role_ref.name)),
            "Role" => rules.extend(
                granted
                    .roles
                    .iter()
                    .filter(|r| {
                        r.metadata.name.as_deref() == Some(b.role_ref.name.as_str())
                            && r.metadata.namespace.as_deref() == Some(ns)
                    })
                    .flat_map(|r| r.rules.clone().unwrap_or_default()),
            ),
            _ => {}
        }
        add(ns, ns, &rules);
    }
    Ok(missing
        .into_iter()
        .map(|(namespace, rules)| ScopedPolicyRules {
            namespace,
            missing_rules: compact_rules(rules),
        })
        .collect())
}

fn list_selectors<T>(s: &Option<Vec<T>>) -> &[T] {
    s.as_deref().unwrap_or_default()
}

fn role_resource(r: &RoleRef) -> String {
    if r.kind == "Role" {
        "roles".into()
    } else {
        "clusterroles".into()
    }
}

fn bundle_cluster_role_rules(g: &Granted, name: &str) -> Vec<PolicyRule> {
    g.cluster_roles
        .iter()
        .filter(|r| r.metadata.name.as_deref() == Some(name))
        .flat_map(|r| r.rules.clone().unwrap_or_default())
        .collect()
}

/// Compacts (Kubernetes' `CompactRules`: rules on one group, one resource and at most one name
/// merge their verbs), deduplicates and sorts verbs (`*` alone when present), and sorts the rules
/// by their Go `String()`, as v1.10 does with each namespace's missing rules.
pub fn compact_rules(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut complex = Vec::new();
    let mut simple: BTreeMap<(String, String, Option<String>), PolicyRule> = BTreeMap::new();
    for r in rules {
        let groups = list(&r.api_groups);
        let resources = list(&r.resources);
        let names = list(&r.resource_names);
        let is_simple = names.len() <= 1
            && r.non_resource_urls.is_none()
            && groups.len() == 1
            && resources.len() == 1;
        if !is_simple {
            complex.push(r);
            continue;
        }
        let key = (
            groups[0].clone(),
            resources[0].clone(),
            names.first().cloned(),
        );
        match simple.get_mut(&key) {
            Some(existing) => existing.verbs.extend(r.verbs),
            None => {
                simple.insert(key, r);
            }
        }
    }
    let mut out: Vec<PolicyRule> = complex
        .into_iter()
        .chain(simple.into_values())
        .map(|mut r| {
            let verbs: BTreeSet<String> = r.verbs.drain(..).collect();
            r.verbs = if verbs.contains("*") {
                vec!["*".into()]
            } else {
                verbs.into_iter().collect()
            };
            r
        })
        .collect();
    out.sort_by_cached_key(go_string);
    out
}

/// The protobuf-generated `String()` of a Go `rbacv1.PolicyRule`, the key v1.10 sorts by.
fn go_string(r: &PolicyRule) -> String {
    let v = |l: &[String]| format!("[{}]", l.join(" "));
    format!(
        "&PolicyRule{{Verbs:{},APIGroups:{},Resources:{},ResourceNames:{},NonResourceURLs:{},}}",
        v(&r.verbs),
        v(list(&r.api_groups)),
        v(list(&r.resources)),
        v(list(&r.resource_names)),
        v(list(&r.non_resource_urls)),
    )
}

/// One line of the message (v1.10's `ruleDescription`): the namespace quoted, then each
/// non-empty field with its values sorted and comma-separated.
pub fn rule_description(namespace: &str, rule: &PolicyRule) -> String {
    let mut s = format!("Namespace:{}", olm_goenc::quote(namespace));
    let mut field = |name: &str, values: &[String]| {
        if !values.is_empty() {
            let mut v = values.to_vec();
            v.sort();
            s.push_str(&format!(" {name}:[{}]", v.join(",")));
        }
    };
    field("APIGroups", list(&rule.api_groups));
    field("Resources", list(&rule.resources));
    field("ResourceNames", list(&rule.resource_names));
    field("Verbs", &rule.verbs);
    field("NonResourceURLs", list(&rule.non_resource_urls));
    s
}

/// The ServiceAccount may not manage the extension: every missing permission, and any error that
/// kept the evaluation from being complete.
#[derive(Debug, Clone, PartialEq)]
pub struct PreAuthorizationFailed {
    /// Missing rules by namespace.
    pub missing: Vec<ScopedPolicyRules>,
    /// Evaluation errors (objects that could not be located, say).
    pub errors: Vec<String>,
}

impl fmt::Display for PreAuthorizationFailed {
    /// v1.10's `formatPreAuthorizerOutput`: `pre-authorization failed: ` then the sorted rule
    /// lines under `service account requires the following permissions to manage cluster
    /// extension:`, and/or `authorization evaluation error: …`, joined by newlines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut lines: Vec<String> = self
            .missing
            .iter()
            .flat_map(|s| {
                s.missing_rules
                    .iter()
                    .map(|r| rule_description(&s.namespace, r))
            })
            .collect();
        if !lines.is_empty() {
            lines.sort();
            parts.push(format!(
                "service account requires the following permissions to manage cluster extension:\n  {}",
                lines.join("\n  ")
            ));
        }
        for e in &self.errors {
            parts.push(format!("authorization evaluation error: {e}"));
        }
        write!(f, "pre-authorization failed: {}", parts.join("\n"))
    }
}

impl std::error::Error for PreAuthorizationFailed {}

/// The verdict: `Ok` when nothing is missing and nothing failed.
pub fn verdict(
    result: Result<Vec<ScopedPolicyRules>, PermissionsError>,
) -> Result<(), PreAuthorizationFailed> {
    match result {
        Ok(missing) if missing.iter().all(|s| s.missing_rules.is_empty()) => Ok(()),
        Ok(missing) => Err(PreAuthorizationFailed {
            missing,
            errors: Vec::new(),
        }),
        Err(e) => Err(PreAuthorizationFailed {
            missing: Vec::new(),
            errors: vec![e.to_string()],
        }),
    }
}
