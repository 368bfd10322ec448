// Wrapper module that builds OLM v0's own end-to-end suite (operator-lifecycle-manager's test/e2e,
// a Ginkgo suite) and the Ginkgo command that runs it in parallel, to judge olm's OLM v0, and what
// the suite's Pods run on a real node: opm and grpc_health_probe at the versions upstream pins
// (operator-registry, as OLM's go.mod requires it, and grpc-health-probe, as operator-registry's
// requires it) and the image pusher (images/). tools/e2e/judge judges a run.
// tools/e2e/olm-v0/build.sh copies the pinned upstream module to ./upstream (see the replace
// below): the suite reads its test data from its source folder. Every module version the suite
// needs is served by the module proxy, so no other replace is needed. go.sum is upstream's; the
// added requirements select no other version of any module the suite builds with, and the
// indirect ones are the modules of the image pusher's imports, which Go wants listed.
module olm.local/e2e/olmv0

go 1.26.3

require (
	github.com/google/go-containerregistry v0.21.1
	github.com/grpc-ecosystem/grpc-health-probe v0.4.53
	github.com/onsi/ginkgo/v2 v2.32.0
	github.com/operator-framework/operator-lifecycle-manager v0.46.0
	github.com/operator-framework/operator-registry v1.73.0
	olm.local/e2e/oci v0.0.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/containerd/stargz-snapshotter/estargz v0.18.2 // indirect
	github.com/docker/cli v29.6.2+incompatible // indirect
	github.com/docker/distribution v2.8.3+incompatible // indirect
	github.com/docker/docker-credential-helpers v0.9.7 // indirect
	github.com/klauspost/compress v1.19.0 // indirect
	github.com/mitchellh/go-homedir v1.1.0 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	github.com/vbatts/tar-split v0.12.3 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace github.com/operator-framework/operator-lifecycle-manager => ./upstream

replace olm.local/e2e/oci => ./oci
