//! The gRPC services `opm serve` offers, over a [`Registry`]: `api.Registry`,
//! `api.ExperimentalRegistry`, `grpc.health.v1.Health` (always `SERVING`, for any service
//! name, as the catalog pods' probes expect) and server reflection (v1 and v1alpha, for
//! grpcurl). Errors are `Unknown` with upstream's text, as Go's plain errors arrive.

use std::pin::Pin;
use std::sync::Arc;

use tokio_stream::Stream;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

use crate::api;
use crate::api::experimental_registry_server::{ExperimentalRegistry, ExperimentalRegistryServer};
use crate::api::registry_server::{Registry as RegistryService, RegistryServer};
use crate::registry::Registry;

type Streamed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The API over one registry.
#[derive(Clone)]
pub struct Service {
    registry: Arc<Registry>,
    metas: Arc<crate::metas::Metas>,
}

impl Service {
    /// Serves `registry` and the custom-schema blobs `metas`.
    pub fn new(registry: Arc<Registry>, metas: Arc<crate::metas::Metas>) -> Service {
        Service { registry, metas }
    }
}

fn unknown(e: crate::queries::QueryError) -> Status {
    Status::unknown(e.to_string())
}

fn stream<T: Send + 'static>(items: Vec<T>) -> Streamed<T> {
    Box::pin(tokio_stream::iter(items.into_iter().map(Ok)))
}

#[tonic::async_trait]
impl RegistryService for Service {
    type ListPackagesStream = Streamed<api::PackageName>;
    type GetChannelEntriesThatReplaceStream = Streamed<api::ChannelEntry>;
    type GetChannelEntriesThatProvideStream = Streamed<api::ChannelEntry>;
    type GetLatestChannelEntriesThatProvideStream = Streamed<api::ChannelEntry>;
    type ListBundlesStream = Streamed<api::Bundle>;

    async fn list_packages(
        &self,
        _: Request<api::ListPackageRequest>,
    ) -> Result<Response<Self::ListPackagesStream>, Status> {
        Ok(Response::new(stream(self.registry.list_packages())))
    }

    async fn get_package(
        &self,
        r: Request<api::GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        self.registry
            .get_package(&r.get_ref().name)
            .map(Response::new)
            .map_err(unknown)
    }

    async fn get_bundle(
        &self,
        r: Request<api::GetBundleRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let r = r.get_ref();
        self.registry
            .get_bundle(&r.pkg_name, &r.channel_name, &r.csv_name)
            .map(Response::new)
            .map_err(unknown)
    }

    async fn get_bundle_for_channel(
        &self,
        r: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let r = r.get_ref();
        self.registry
            .get_bundle_for_channel(&r.pkg_name, &r.channel_name)
            .map(Response::new)
            .map_err(unknown)
    }

    async fn get_channel_entries_that_replace(
        &self,
        r: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        self.registry
            .channel_entries_that_replace(&r.get_ref().csv_name)
            .map(|e| Response::new(stream(e)))
            .map_err(unknown)
    }

    async fn get_bundle_that_replaces(
        &self,
        r: Request<api::GetReplacementRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let r = r.get_ref();
        self.registry
            .bundle_that_replaces(&r.csv_name, &r.pkg_name, &r.channel_name)
            .map(Response::new)
            .map_err(unknown)
    }

    async fn get_channel_entries_that_provide(
        &self,
        r: Request<api::GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        let r = r.get_ref();
        self.registry
            .channel_entries_that_provide(&r.group, &r.version, &r.kind)
            .map(|e| Response::new(stream(e)))
            .map_err(unknown)
    }

    async fn get_latest_channel_entries_that_provide(
        &self,
        r: Request<api::GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        let r = r.get_ref();
        self.registry
            .latest_channel_entries_that_provide(&r.group, &r.version, &r.kind)
            .map(|e| Response::new(stream(e)))
            .map_err(unknown)
    }

    async fn get_default_bundle_that_provides(
        &self,
        r: Request<api::GetDefaultProviderRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let r = r.get_ref();
        self.registry
            .default_bundle_that_provides(&r.group, &r.version, &r.kind)
            .map(Response::new)
            .map_err(unknown)
    }

    async fn list_bundles(
        &self,
        _: Request<api::ListBundlesRequest>,
    ) -> Result<Response<Self::ListBundlesStream>, Status> {
        // Streamed from the shared registry, one bundle at a time: a large catalog is not
        // copied whole for each caller.
        let registry = self.registry.clone();
        let count = registry.listing.len();
        let items = (0..count).filter_map(move |i| registry.listed(i)).map(Ok);
        Ok(Response::new(Box::pin(tokio_stream::iter(items))))
    }
}

#[tonic::async_trait]
impl ExperimentalRegistry for Service {
    type ExperimentalListPackageCustomSchemasStream = Streamed<prost_types::Struct>;

    async fn experimental_list_package_custom_schemas(
        &self,
        r: Request<api::ExperimentalListPackageCustomSchemasRequest>,
    ) -> Result<Response<Self::ExperimentalListPackageCustomSchemasStream>, Status> {
        let acknowledged = r
            .metadata()
            .get("x-acknowledge-experimental")
            .and_then(|v| v.to_str().ok())
            == Some("true");
        if !acknowledged {
            return Ok(Response::new(stream(Vec::new())));
        }
        let r = r.get_ref();
        if r.schema.is_empty() {
            return Err(Status::invalid_argument("schema is required"));
        }
        self.metas
            .list(&r.schema, &r.package_name)
            .map(|m| Response::new(stream(m)))
            .map_err(|e| Status::invalid_argument(e.to_string()))
    }
}

/// `grpc.health.v1.Health`: serving, whatever service is asked about, until the server stops:
/// then every watch hears `NOT_SERVING` and ends, so that a graceful stop does not wait on
/// clients that watch.
#[derive(Clone)]
pub struct AlwaysServing {
    stopping: tokio::sync::watch::Receiver<bool>,
}

fn answer(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status.into(),
    }
}

#[tonic::async_trait]
impl Health for AlwaysServing {
    type WatchStream = Streamed<HealthCheckResponse>;

    async fn check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(answer(ServingStatus::Serving)))
    }

    async fn watch(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let mut stopping = self.stopping.clone();
        let ending = async move {
            // An error means the sender is gone: the server is stopping too.
            let _ = stopping.wait_for(|s| *s).await;
            Ok(answer(ServingStatus::NotServing))
        };
        let s = tokio_stream::StreamExt::chain(
            tokio_stream::iter([Ok(answer(ServingStatus::Serving))]),
            futures::stream::once(ending),
        );
        Ok(Response::new(Box::pin(s)))
    }
}

/// Every service, ready to be added to a tonic server.
///
/// # Errors
///
/// The reflection descriptor does not load (a build defect).
/// `stopping` turns true when the server is about to stop (health watches then end).
pub fn routes(
    service: Service,
    stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<tonic::service::Routes, tonic_reflection::server::Error> {
    let v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    let mut routes = tonic::service::Routes::new(RegistryServer::new(service.clone()));
    routes = routes
        .add_service(ExperimentalRegistryServer::new(service))
        .add_service(HealthServer::new(AlwaysServing { stopping }))
        .add_service(v1)
        .add_service(v1alpha);
    Ok(routes)
}

/// Serves `registry` on `listener` until `stop` resolves: every service of [`routes`], the
/// health watches ended first so a graceful stop does not wait on their clients. What `olm
/// catalog serve`, CatalogSources served in process and the tests all run.
///
/// # Errors
///
/// The reflection descriptor does not load (a build defect), or the server fails.
pub async fn serve(
    registry: Arc<Registry>,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let metas = Arc::new(crate::metas::Metas::new(&registry.metas));
    let (stopping, stop_watch) = tokio::sync::watch::channel(false);
    let routes = routes(Service::new(registry, metas), stop_watch)?;
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tonic::transport::Server::builder()
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming, async move {
            stop.await;
            let _ = stopping.send(true);
        })
        .await?;
    Ok(())
}

/// Why [`serve`] stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The reflection descriptor does not load.
    #[error("registry reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The gRPC server failed.
    #[error("serving: {0}")]
    Transport(#[from] tonic::transport::Error),
}
