//! `operators.coreos.com/v1alpha1`: ClusterServiceVersion, CatalogSource, Subscription and
//! InstallPlan (API repo `pkg/operators/v1alpha1`).

mod catalogsource;
mod csv;
mod installplan;
mod subscription;

pub use catalogsource::{
    CatalogSource, CatalogSourceSpec, CatalogSourceStatus, ConfigMapResourceReference,
    ExtractContentConfig, GrpcConnectionState, GrpcPodConfig, RegistryPoll, RegistryServiceStatus,
    SecurityConfig, SourceType, UpdateStrategy,
};
pub use csv::{
    ApiResourceReference, ApiServiceDefinitions, ApiServiceDescription, AppLink, CleanupSpec,
    CleanupStatus, ClusterServiceVersion, ClusterServiceVersionCondition,
    ClusterServiceVersionPhase, ClusterServiceVersionSpec, ClusterServiceVersionStatus,
    ConditionReason, CrdDescription, CustomResourceDefinitions, DependentStatus, Descriptor,
    GroupVersionKind, INSTALL_STRATEGY_NAME_DEPLOYMENT, Icon, InstallMode, InstallModeType,
    Maintainer, NamedInstallStrategy, OperatorRelease, RelatedImage, RequirementStatus,
    ResourceInstance, ResourceList, StatusReason, StrategyDeploymentPermissions,
    StrategyDeploymentSpec, StrategyDetailsDeployment, WebhookAdmissionType, WebhookDescription,
};
pub use installplan::{
    Approval, BundleLookup, BundleLookupCondition, BundleLookupConditionType, InstallPlan,
    InstallPlanCondition, InstallPlanConditionType, InstallPlanPhase, InstallPlanSpec,
    InstallPlanStatus, Step, StepResource, StepStatus,
};
pub use subscription::{
    InstallPlanReference, Subscription, SubscriptionCatalogHealth, SubscriptionCondition,
    SubscriptionConditionType, SubscriptionConfig, SubscriptionSpec, SubscriptionState,
    SubscriptionStatus,
};
