//! A Subscription's deprecation conditions (upstream's `updateDeprecatedStatus` in
//! `pkg/controller/operators/catalog/subscription/reconciler.go`, and the messages
//! `source_registry.go` gives a catalog entry's `Deprecations`): what the catalog says of the
//! package, the channel and the bundle the Subscription installed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use olm_v0_api::v1alpha1::SubscriptionStatus;

use super::{Condition, condition, remove_condition, set_condition};

/// The deprecation notices of the bundle a Subscription installed, in upstream's words:
/// `olm.package/<package>: <message>`, `olm.channel/<channel>: <message>`,
/// `olm.bundle/<csv>: <message>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deprecations {
    /// The package's.
    pub package: Option<String>,
    /// The channel's.
    pub channel: Option<String>,
    /// The bundle's.
    pub bundle: Option<String>,
}

impl Deprecations {
    /// The notices of `csv` in `channel` of `package`, from the catalog's messages.
    pub fn of(
        package: (&str, Option<&str>),
        channel: (&str, Option<&str>),
        bundle: (&str, Option<&str>),
    ) -> Deprecations {
        let notice = |schema: &str, (name, message): (&str, Option<&str>)| {
            message.map(|m| format!("{schema}/{name}: {m}"))
        };
        Deprecations {
            package: notice("olm.package", package),
            channel: notice("olm.channel", channel),
            bundle: notice("olm.bundle", bundle),
        }
    }
}

/// Sets the `PackageDeprecated`, `ChannelDeprecated` and `BundleDeprecated` conditions (status
/// `True`, no reason, the notice as message) from `found`, the notices of the installed bundle
/// as the Subscription's catalog lists it (none when the catalog does not list it: nothing
/// changes), removes those no longer deprecated, and keeps the roll-up `Deprecated` (the
/// notices joined with `"; "`) in step when any of them changed. A Subscription that names no
/// channel gets no channel notice. Returns whether the status changed.
pub fn deprecated(
    status: &mut SubscriptionStatus,
    channel: &str,
    found: Option<&Deprecations>,
    now: &Time,
) -> bool {
    let Some(found) = found else {
        return false;
    };
    let mut changed = false;
    let mut notices = Vec::new();
    for (kind, notice) in [
        (condition::PACKAGE_DEPRECATED, &found.package),
        (condition::CHANNEL_DEPRECATED, &found.channel),
        (condition::BUNDLE_DEPRECATED, &found.bundle),
    ] {
        let notice = notice
            .as_deref()
            .filter(|_| kind != condition::CHANNEL_DEPRECATED || !channel.is_empty());
        match notice {
            Some(n) => {
                notices.push(n);
                changed |=
                    set_condition(&mut status.conditions, &Condition::holds(kind, "", n), now);
            }
            None => changed |= remove_condition(&mut status.conditions, kind),
        }
    }
    if !changed {
        return false;
    }
    if notices.is_empty() {
        remove_condition(&mut status.conditions, condition::DEPRECATED);
    } else {
        let rollup = Condition::holds(condition::DEPRECATED, "", notices.join("; "));
        set_condition(&mut status.conditions, &rollup, now);
    }
    true
}

#[cfg(test)]
mod tests;
