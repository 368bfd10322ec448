// The pieces the e2e image pushers share (tools/e2e/operator-controller/images and
// tools/e2e/olm-v0/images): a static program read for an image, a one-layer image from files
// in memory, a static busybox's files, and a push. Each wrapper module requires it at v0.0.0 and
// replaces it with ./oci, where its build script copies this folder. It requires the lowest
// go-containerregistry either wrapper uses (OLM v0's), so minimal version selection keeps each
// wrapper's own version; the indirect requirements are the versions the OLM v0 wrapper selects
// (tools/e2e/olm-v0/go.mod), no newer than the operator-controller wrapper's.
module olm.local/e2e/oci

go 1.26.3

require github.com/google/go-containerregistry v0.21.1

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
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
