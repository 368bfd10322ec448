//! From Subscriptions, installed CSVs and catalogs to the bundles to install (upstream's
//! `Resolver.Resolve` in `pkg/controller/registry/resolver/resolver.go`).
//!
//! Variables: a bundle per (catalog, channel, CSV) reachable from a Subscription or an installed
//! CSV through dependencies, a `subscription:<name>` per Subscription, and the invariants "one
//! provider per API" and "one bundle per package". The solver prefers earlier candidates, so the
//! order built here is the policy: the default channel first, then channels by name, each from
//! its head down; dependencies from the installed CSVs first, then the depending bundle's own
//! catalog, then by catalog priority.
//!
//! Where it differs from upstream, deliberately: variables keep the order they were found in
//! (upstream's map order makes ties vary between runs); a bundle whose dependency properties
//! cannot be read is prohibited with the reason (upstream fails the whole namespace's
//! resolution, so one bad bundle anywhere in a catalog blocks every Subscription); and a catalog
//! that cannot be listed only fails Subscriptions that name it (upstream fails them all).

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;

use super::entry::{DEPRECATED_TYPE, Entry, SourceKey};
use super::order::{OrderError, Ranked, sort_by_channel, sort_catalogs};
use super::predicate::{self, Predicate};
use super::solver::{self, Constraint, Rule, SolveError, Variable};

/// A Subscription as the resolver needs it.
#[derive(Debug, Clone, Default)]
pub struct Subscription {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// `spec.name`.
    pub package: String,
    /// `spec.channel`; empty for every channel (the default first).
    pub channel: String,
    /// `spec.source` and `spec.sourceNamespace`.
    pub catalog: SourceKey,
    /// `spec.startingCSV`.
    pub starting_csv: String,
    /// `status.installedCSV`.
    pub installed_csv: String,
}

/// What a catalog holds, or why it could not be read.
#[derive(Debug, Clone)]
pub struct Catalog<'a> {
    /// Which catalog.
    pub key: SourceKey,
    /// `spec.priority`.
    pub priority: i64,
    /// Its entries in listing order, or the error listing them.
    pub entries: Result<&'a [Entry], String>,
}

/// A bundle chosen for installation.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The entry; `replaces` is the installed CSV it upgrades when it upgrades one.
    pub entry: Entry,
    /// Whether it is a Subscription's `startingCSV`.
    pub starting_csv: bool,
}

/// Why resolution gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// No choice satisfies the constraints: upstream's `ConstraintsNotSatisfiable`.
    #[error("{}", .0)]
    NotSatisfiable(SolveError),
    /// Something kept resolution from running: upstream's `ErrorPreventedResolution`.
    #[error(transparent)]
    Prevented(#[from] Prevented),
}

/// What kept resolution from running, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Prevented {
    /// A channel of candidates has no order.
    #[error(transparent)]
    Order(#[from] OrderError),
    /// A Subscription's `status.installedCSV` names more than one installed CSV.
    #[error(
        "multiple name matches for status.installedCSV of subscription {namespace}/{name}: {}",
        .csvs.join(", ")
    )]
    InstalledCsvAmbiguous {
        /// The Subscription's namespace.
        namespace: String,
        /// The Subscription's name.
        name: String,
        /// The CSVs it matches.
        csvs: Vec<String>,
    },
    /// The catalog a Subscription names cannot be read.
    #[error("error using catalogsource {namespace}/{name}: {error}")]
    Catalog {
        /// The CatalogSource's namespace.
        namespace: String,
        /// The CatalogSource's name.
        name: String,
        /// Why it cannot be read.
        error: String,
    },
    /// The solver could not run (inconsistent input or its own failure).
    #[error(transparent)]
    Solver(SolveError),
}

/// A bundle variable's entry and the installed CSV it would replace.
struct BundleVar<'a> {
    entry: &'a Entry,
    replaces: Option<String>,
}

/// The resolution of one namespace.
struct Resolution<'a> {
    namespace: &'a str,
    catalogs: Vec<(&'a SourceKey, i64, &'a [Entry])>,
    variables: IndexMap<String, Variable>,
    bundles: HashMap<String, BundleVar<'a>>,
    visited: HashMap<*const Entry, String>,
}

/// A bundle's variable identifier (`<catalog>/<namespace>/<channel>/<csv>`).
pub fn bundle_id(entry: &Entry) -> String {
    format!("{}/{}/{}", entry.catalog, entry.channel, entry.name)
}

/// Resolves a namespace: its Subscriptions, its installed CSVs (entries of
/// `SourceKey::existing(namespace)`), and the catalogs it may use, the namespace's first.
pub fn resolve(
    namespace: &str,
    subscriptions: &[Subscription],
    existing: &[Entry],
    catalogs: &[Catalog<'_>],
) -> Result<Vec<Resolved>, ResolveError> {
    let existing_key = SourceKey::existing(namespace);
    let mut listed: Vec<(&SourceKey, i64, &[Entry])> = vec![(&existing_key, 0, existing)];
    for c in catalogs {
        if let Ok(entries) = c.entries {
            listed.push((&c.key, c.priority, entries));
        }
    }
    let mut r = Resolution {
        namespace,
        catalogs: listed,
        variables: IndexMap::new(),
        bundles: HashMap::new(),
        visited: HashMap::new(),
    };
    let existing_refs: Vec<&Entry> = existing.iter().collect();
    r.bundle_variables(&existing_refs)
        .map_err(Prevented::from)?;

    let mut starting = HashSet::new();
    for sub in subscriptions {
        let matches: Vec<&Entry> = existing
            .iter()
            .filter(|e| e.name == sub.installed_csv)
            .collect();
        if matches.len() > 1 {
            return Err(Prevented::InstalledCsvAmbiguous {
                namespace: sub.namespace.clone(),
                name: sub.name.clone(),
                csvs: matches.iter().map(|e| e.name.clone()).collect(),
            }
            .into());
        }
        let current = matches.first().copied();
        if current.is_none() && !sub.starting_csv.is_empty() {
            starting.insert(sub.starting_csv.clone());
        }
        if let Some(Err(error)) = catalogs
            .iter()
            .find(|c| c.key == sub.catalog)
            .map(|c| &c.entries)
        {
            return Err(Prevented::Catalog {
                namespace: sub.catalog.namespace.clone(),
                name: sub.catalog.name.clone(),
                error: error.clone(),
            }
            .into());
        }
        r.subscription_variables(sub, current)
            .map_err(Prevented::from)?;
    }
    r.add_invariants();

    let input: Vec<Variable> = r.variables.values().cloned().collect();
    let chosen = solver::solve(&input).map_err(|e| match e {
        SolveError::NotSatisfiable(_) => ResolveError::NotSatisfiable(e),
        other => Prevented::Solver(other).into(),
    })?;
    Ok(chosen
        .into_iter()
        .filter_map(|i| {
            let bundle = r.bundles.get(&input[i].id)?;
            if bundle.entry.catalog.is_virtual() {
                return None;
            }
            let mut entry = bundle.entry.clone();
            if let Some(replaces) = &bundle.replaces {
                entry.replaces.clone_from(replaces);
            }
            let starting_csv = starting.contains(&entry.name);
            Some(Resolved {
                entry,
                starting_csv,
            })
        })
        .collect())
}

impl<'a> Resolution<'a> {
    fn catalog(&self, key: &SourceKey) -> &'a [Entry] {
        self.catalogs
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, _, e)| *e)
            .unwrap_or_default()
    }

    /// Entries passing `p`, catalogs in preference order (upstream's `FindPreferred`).
    fn find_preferred(
        &self,
        preferred: Option<&SourceKey>,
        namespace: &str,
        p: &Predicate,
    ) -> Vec<&'a Entry> {
        let mut ranked: Vec<Ranked<'a>> = self
            .catalogs
            .iter()
            .map(|(key, priority, _)| Ranked {
                key,
                priority: *priority,
            })
            .collect();
        sort_catalogs(&mut ranked, preferred, namespace);
        ranked
            .iter()
            .flat_map(|c| self.catalog(c.key).iter().filter(|e| p.test(e)))
            .collect()
    }

    /// The variable for an entry, made once, with its dependencies' candidates; walks the
    /// dependencies of `stack` transitively (upstream's `getBundleVariables`).
    fn bundle_variables(&mut self, stack: &[&'a Entry]) -> Result<(), OrderError> {
        let mut stack: Vec<&'a Entry> = stack.to_vec();
        while let Some(bundle) = stack.pop() {
            if self.visited.contains_key(&(bundle as *const Entry)) {
                continue;
            }
            let id = bundle_id(bundle);
            self.visited.insert(bundle as *const Entry, id.clone());
            let mut constraints = Vec::new();
            if bundle.catalog.is_virtual() && bundle.subscription.is_none() {
                constraints.push(Constraint::pretty(
                    Rule::Mandatory,
                    format!(
                        "clusterserviceversion {} exists and is not referenced by a subscription",
                        bundle.name
                    ),
                ));
            }
            if bundle.has_property(DEPRECATED_TYPE) {
                constraints.push(Constraint::pretty(
                    Rule::Prohibited,
                    format!("bundle {id} is deprecated"),
                ));
            }
            for property in &bundle.properties {
                let dependency = match predicate::dependency(&property.kind, &property.value) {
                    Ok(Some(d)) => d,
                    Ok(None) => continue,
                    Err(error) => {
                        constraints.push(Constraint::pretty(
                            Rule::Prohibited,
                            format!(
                                "bundle {} has a dependency that cannot be read: {error}",
                                bundle.name
                            ),
                        ));
                        continue;
                    }
                };
                let candidates = self.dependency_candidates(bundle, &dependency)?;
                let mut ids = Vec::with_capacity(candidates.len());
                for candidate in candidates {
                    ids.push(bundle_id(candidate));
                    stack.push(candidate);
                }
                dedup(&mut ids);
                constraints.push(Constraint::pretty(
                    Rule::Dependency(ids),
                    format!(
                        "bundle {} requires an operator {}",
                        bundle.name,
                        dependency.describe()
                    ),
                ));
            }
            self.bundles.insert(
                id.clone(),
                BundleVar {
                    entry: bundle,
                    replaces: None,
                },
            );
            self.variables
                .insert(id.clone(), Variable { id, constraints });
        }
        Ok(())
    }

    /// The entries that satisfy a dependency of `bundle`, in preference order: the channels
    /// holding a match, whole (so their chains sort), catalogs ranked from `bundle`'s own.
    fn dependency_candidates(
        &self,
        bundle: &Entry,
        dependency: &Predicate,
    ) -> Result<Vec<&'a Entry>, OrderError> {
        let mut sources = Vec::new();
        let mut seen = HashSet::new();
        for b in self.find_preferred(None, "", dependency) {
            let key = (
                b.package.as_str(),
                b.channel.as_str(),
                &b.catalog,
                b.catalog.is_virtual().then_some(b.name.as_str()),
            );
            if !seen.insert(key) {
                continue;
            }
            sources.push(if b.catalog.is_virtual() {
                Predicate::And(vec![
                    Predicate::CsvName(b.name.clone()),
                    Predicate::Catalog(b.catalog.clone()),
                ])
            } else {
                Predicate::And(vec![
                    Predicate::Package(b.package.clone()),
                    Predicate::Channel(b.channel.clone()),
                    Predicate::Catalog(b.catalog.clone()),
                ])
            });
        }
        if sources.is_empty() {
            return Ok(Vec::new());
        }
        let found = self.find_preferred(
            Some(&bundle.catalog),
            self.namespace,
            &Predicate::Or(sources),
        );
        Ok(sort_bundles(&found)?
            .into_iter()
            .filter(|e| dependency.test(e))
            .collect())
    }

    /// A Subscription's variable and its candidates (upstream's `getSubscriptionVariables`).
    fn subscription_variables(
        &mut self,
        sub: &Subscription,
        current: Option<&'a Entry>,
    ) -> Result<(), OrderError> {
        let entries = self.catalog(&sub.catalog);
        let (mut npkg, mut nch, mut ncsv) = (0, 0, 0);
        let csv_filter = match current {
            None if !sub.starting_csv.is_empty() => Some(sub.starting_csv.as_str()),
            _ => None,
        };
        let mut matching: Vec<&'a Entry> = Vec::new();
        for e in entries {
            if !Predicate::Package(sub.package.clone()).test(e) {
                continue;
            }
            npkg += 1;
            if !(sub.channel.is_empty() || e.channel == sub.channel) {
                continue;
            }
            nch += 1;
            if csv_filter.is_some_and(|name| e.name != name) {
                continue;
            }
            ncsv += 1;
            matching.push(e);
        }
        let invalid = if entries.is_empty() {
            Some(format!(
                "no operators found from catalog {} in namespace {} referenced by subscription {}",
                sub.catalog.name, sub.catalog.namespace, sub.name
            ))
        } else if npkg == 0 {
            Some(format!(
                "no operators found in package {} in the catalog referenced by subscription {}",
                sub.package, sub.name
            ))
        } else if nch == 0 {
            Some(format!(
                "no operators found in channel {} of package {} in the catalog referenced by subscription {}",
                sub.channel, sub.package, sub.name
            ))
        } else if ncsv == 0 {
            Some(format!(
                "no operators found with name {} in channel {} of package {} in the catalog referenced by subscription {}",
                sub.starting_csv, sub.channel, sub.package, sub.name
            ))
        } else {
            None
        };
        let sub_id = format!("subscription:{}", sub.name);
        let exists =
            Constraint::pretty(Rule::Mandatory, format!("subscription {} exists", sub.name));
        if let Some(reason) = invalid {
            let constraints = vec![exists, Constraint::pretty(Rule::Prohibited, reason)];
            self.variables.insert(
                sub_id.clone(),
                Variable {
                    id: sub_id,
                    constraints,
                },
            );
            return Ok(());
        }
        // Default channel first, then by channel name; each channel along its chain.
        matching.sort_by(|a, b| {
            b.default_channel
                .cmp(&a.default_channel)
                .then_with(|| a.channel.cmp(&b.channel))
        });
        let mut sorted = Vec::with_capacity(matching.len());
        for group in matching.chunk_by(|a, b| a.channel == b.channel) {
            sorted.extend(super::order::sort_channel(group)?);
        }
        let upgrade = current.map(|c| {
            let mut any = vec![Predicate::Replaces(c.name.clone())];
            if let Some(v) = &c.version {
                any.insert(0, Predicate::SkipRangeIncludes(v.clone()));
            }
            Predicate::Or(any)
        });
        let mut candidates = Vec::new();
        for o in sorted
            .into_iter()
            .filter(|o| upgrade.as_ref().is_none_or(|p| p.test(o)))
        {
            let same_name: Vec<&'a Entry> = matching
                .iter()
                .copied()
                .filter(|e| e.name == o.name)
                .collect();
            self.bundle_variables(&same_name)?;
            candidates.extend(same_name.iter().map(|e| bundle_id(e)));
        }
        dedup(&mut candidates);
        if let Some(current) = current {
            let installed = bundle_id(current);
            for id in &candidates {
                if let Some(bundle) = self.bundles.get_mut(id) {
                    bundle.replaces = Some(current.name.clone());
                }
                if let Some(variable) = self.variables.get_mut(id) {
                    variable.constraints.push(Constraint {
                        rule: Rule::Conflict(installed.clone()),
                        message: None,
                    });
                }
            }
            candidates.push(installed);
        }
        let requirement = match candidates.as_slice() {
            [] => format!(
                "no operators found matching the criteria of subscription {}",
                sub.name
            ),
            [only] => format!("subscription {} requires {only}", sub.name),
            [rest @ .., last] => format!(
                "subscription {} requires at least one of {} or {last}",
                sub.name,
                rest.join(", ")
            ),
        };
        let constraints = vec![
            exists,
            Constraint::pretty(Rule::Dependency(candidates), requirement),
        ];
        self.variables.insert(
            sub_id.clone(),
            Variable {
                id: sub_id,
                constraints,
            },
        );
        Ok(())
    }

    /// At most one provider per API and one bundle per package among the variables.
    fn add_invariants(&mut self) {
        let mut gvks: IndexMap<(String, String, String), Vec<String>> = IndexMap::new();
        let mut packages: IndexMap<String, Vec<String>> = IndexMap::new();
        for id in self.variables.keys() {
            let Some(bundle) = self.bundles.get(id) else {
                continue;
            };
            let parsed = bundle.entry.parsed();
            for gvk in &parsed.gvks {
                gvks.entry(gvk.clone()).or_default().push(id.clone());
            }
            for (package, _) in &parsed.packages {
                packages
                    .entry(package.clone())
                    .or_default()
                    .push(id.clone());
            }
        }
        let mut invariants = Vec::new();
        for ((group, version, kind), mut ids) in gvks {
            let gvk = format!("{kind} ({group}/{version})");
            invariants.extend(at_most_one(
                gvk.clone(),
                &mut ids,
                format!("there can be only one provider of {gvk}"),
                "provide",
                &gvk,
            ));
        }
        for (package, mut ids) in packages {
            invariants.extend(at_most_one(
                package.clone(),
                &mut ids,
                format!("there can be only one operator from package {package}"),
                "originate from package",
                &package,
            ));
        }
        for v in invariants {
            self.variables.entry(v.id.clone()).or_insert(v);
        }
    }
}

/// The invariant variable "at most one of `ids`", when there is more than one.
fn at_most_one(
    id: String,
    ids: &mut Vec<String>,
    mandatory: String,
    verb: &str,
    what: &str,
) -> Option<Variable> {
    ids.sort();
    ids.dedup();
    let [rest @ .., last] = ids.as_slice() else {
        return None;
    };
    if rest.is_empty() {
        return None;
    }
    let message = format!("{} and {last} {verb} {what}", rest.join(", "));
    Some(Variable {
        id,
        constraints: vec![
            Constraint::pretty(Rule::Mandatory, mandatory),
            Constraint::pretty(Rule::AtMost(1, ids.clone()), message),
        ],
    })
}

/// Candidates grouped by catalog in the order found, each catalog's channels ordered default
/// first, then package and channel name, each along its chain (upstream's `sortBundles`).
fn sort_bundles<'a>(bundles: &[&'a Entry]) -> Result<Vec<&'a Entry>, OrderError> {
    let mut catalogs: Vec<(&SourceKey, Vec<&'a Entry>)> = Vec::new();
    for b in bundles {
        match catalogs.iter_mut().find(|(k, _)| **k == b.catalog) {
            Some((_, list)) => list.push(b),
            None => catalogs.push((&b.catalog, vec![b])),
        }
    }
    let mut out = Vec::with_capacity(bundles.len());
    for (_, list) in catalogs {
        out.extend(sort_by_channel(&list)?);
    }
    Ok(out)
}

/// Removes repeats, keeping first occurrences in order.
fn dedup(ids: &mut Vec<String>) {
    let mut seen = HashSet::new();
    ids.retain(|id| seen.insert(id.clone()));
}

#[cfg(test)]
mod tests;
