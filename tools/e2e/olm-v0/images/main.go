// olm-v0-images pushes the images OLM v0's e2e suite runs on a real node, built here because
// their registries cannot be reached. The real node pulls quay.io images from the environment's
// registry under the same path, so the suite's Pods run unchanged.
//
//	olm-v0-images [-catalog DIR] REGISTRY [BUSYBOX]
//
// It pushes, to REGISTRY:
//
//   - operator-framework/opm:latest (and :$OPERATOR_REGISTRY_TAG when that is set), what the
//     suite's MagicCatalog Pods run (`opm serve DIR`, probed by `grpc_health_probe
//     -addr=:50051`): laid out as operator-registry's own image (goreleaser.opm.Dockerfile):
//     /bin/opm, /bin/grpc_health_probe, /etc/nsswitch.conf, user 1001, entrypoint /bin/opm; and
//     /tmp, where `opm serve` with no --cache-dir builds its cache. The two programs are the
//     static ones tools/e2e/olm-v0/build.sh builds beside this one (operator-registry's cmd/opm
//     and grpc-health-probe, at the versions upstream's go.mod files pin).
//   - operator-framework/mock-extension-apiserver:master, what the Deployments of its hand-made
//     CSVs that own APIServices run: the stand-in built beside this one (mockext/), as
//     /bin/mock-extension-apiserver.
//   - olm-e2e/dummy:latest, the suite's -dummyImage (what the Deployments of its hand-made CSVs
//     run): the machine's static busybox idling until it is told to stop, so those Deployments
//     become available. Also pushed as bitnami/nginx:latest, the flag's default, which the
//     suite's package-level CSVs take before flags are parsed.
//   - operator-framework/olm:latest, what an extractContent registry Pod's first init container
//     runs: busybox's cp and operator-lifecycle-manager's copy-content (built beside this one).
//   - operatorhubio/catalog:latest (with -catalog), the suite's -communityOperators image: the
//     catalog under /configs and the cache opm builds for it under /tmp/cache.
//   - library/busybox:latest, what the stand-in bundles' Deployments run (`busybox`): the dummy
//     image, whose busybox has sleep.
//   - with -standins DIR, the quay.io/olmtest images the suite's catalogs name, built from
//     DIR/bundles/REPO/TAG (a registry+v1 bundle, pushed as olmtest/REPO:TAG with its
//     metadata/annotations.yaml as labels) and DIR/indexes/REPO/TAG (a file-based catalog,
//     pushed as olmtest/REPO:TAG laid out as opm's generated catalog Dockerfile lays one out:
//     opm's image, the catalog under /configs, its cache under /tmp/cache, `opm serve`).
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"olm.local/e2e/oci"
	"sigs.k8s.io/yaml"
)

func main() {
	catalog := flag.String("catalog", "", "a file-based catalog folder, pushed as upstream's community catalog image")
	standins := flag.String("standins", "", "a folder of bundles/REPO/TAG and indexes/REPO/TAG, pushed as quay.io/olmtest/REPO:TAG")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: olm-v0-images [-catalog DIR] [-standins DIR] REGISTRY [BUSYBOX]")
	}
	flag.Parse()
	if flag.NArg() < 1 || flag.NArg() > 2 {
		flag.Usage()
		os.Exit(2)
	}
	registry := flag.Arg(0)
	busybox := "/bin/busybox"
	if flag.NArg() == 2 {
		busybox = flag.Arg(1)
	}
	if err := run(registry, busybox, *catalog, *standins); err != nil {
		fmt.Fprintln(os.Stderr, "olm-v0-images:", err)
		os.Exit(1)
	}
}

func run(registry, busybox, catalog, standins string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir := filepath.Dir(self)
	opm, err := oci.StaticProgram(filepath.Join(dir, "opm"))
	if err != nil {
		return err
	}
	probe, err := oci.StaticProgram(filepath.Join(dir, "grpc_health_probe"))
	if err != nil {
		return err
	}
	opmFiles := []oci.File{
		{Name: "bin/", Mode: 0o755},
		{Name: "bin/grpc_health_probe", Mode: 0o755, Data: probe},
		{Name: "bin/opm", Mode: 0o755, Data: opm},
		{Name: "etc/", Mode: 0o755},
		// As operator-registry's image has it: Go's resolver reads the order from here.
		{Name: "etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
		{Name: "tmp/", Mode: 0o1777},
	}
	img, err := oci.Image(opmFiles, opmConfig(nil))
	if err != nil {
		return err
	}
	tags := []string{"latest"}
	if t := os.Getenv("OPERATOR_REGISTRY_TAG"); t != "" && t != "latest" {
		tags = append(tags, t)
	}
	for _, t := range tags {
		ref := registry + "/operator-framework/opm:" + t
		if err := push(img, ref); err != nil {
			return err
		}
	}

	mock, err := oci.StaticProgram(filepath.Join(dir, "mock-extension-apiserver"))
	if err != nil {
		return err
	}
	mockImg, err := oci.Image([]oci.File{
		{Name: "bin/", Mode: 0o755},
		{Name: "bin/mock-extension-apiserver", Mode: 0o755, Data: mock},
	}, v1.Config{Entrypoint: []string{"/bin/mock-extension-apiserver"}, WorkingDir: "/"})
	if err != nil {
		return err
	}
	ref := registry + "/operator-framework/mock-extension-apiserver:master"
	if err := push(mockImg, ref); err != nil {
		return err
	}

	bb, err := oci.StaticProgram(busybox)
	if err != nil {
		return fmt.Errorf("%w (install Debian's busybox-static)", err)
	}
	// sh, as PID 1, leaves the loop on SIGTERM: the Pod stops at once rather than after its
	// grace period.
	files := append([]oci.File{{Name: "bin/", Mode: 0o755}}, oci.Busybox(bb, "sh", "sleep")...)
	files = append(files, oci.File{Name: "tmp/", Mode: 0o1777})
	dummy, err := oci.Image(files, v1.Config{
		Cmd: []string{"sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 1; done"},
		Env: []string{"PATH=/bin"},
	})
	if err != nil {
		return err
	}
	// Also under the suite's default -dummyImage, docker.io/bitnami/nginx:latest: some of its
	// CSVs are package-level variables, built from the flag's default before flags are parsed.
	for _, ref := range []string{registry + "/olm-e2e/dummy:latest", registry + "/bitnami/nginx:latest", registry + "/library/busybox:latest"} {
		if err := push(dummy, ref); err != nil {
			return err
		}
	}

	// What an extractContent registry Pod runs besides opm: `cp` and `copy-content` from OLM's
	// image (its first init container copies the latter out), and the catalog image whose
	// /configs and cache the second one copies.
	copyContent, err := oci.StaticProgram(filepath.Join(dir, "copy-content"))
	if err != nil {
		return err
	}
	olmFiles := append([]oci.File{{Name: "bin/", Mode: 0o755}}, oci.Busybox(bb, "cp")...)
	olmFiles = append(olmFiles, oci.File{Name: "bin/copy-content", Mode: 0o755, Data: copyContent})
	olmImg, err := oci.Image(olmFiles, v1.Config{Env: []string{"PATH=/bin"}})
	if err != nil {
		return err
	}
	ref = registry + "/operator-framework/olm:latest"
	if err := push(olmImg, ref); err != nil {
		return err
	}
	if catalog != "" {
		catalogImg, err := catalogImage(filepath.Join(dir, "opm"), catalog, nil)
		if err != nil {
			return err
		}
		ref = registry + "/operatorhubio/catalog:latest"
		if err := push(catalogImg, ref); err != nil {
			return err
		}
	}
	if standins != "" {
		return pushStandins(registry, standins, filepath.Join(dir, "opm"), opmFiles)
	}
	return nil
}

// push pushes img as ref and prints ref, as every image this program pushes is reported.
func push(img v1.Image, ref string) error {
	if err := oci.Push(img, ref); err != nil {
		return err
	}
	fmt.Println(ref)
	return nil
}

// opmUser is the user operator-registry's opm image runs as.
const opmUser = 1001

// opmConfig is the configuration of operator-registry's opm image, with cmd as its command.
func opmConfig(cmd []string) v1.Config {
	return v1.Config{
		Entrypoint: []string{"/bin/opm"},
		Cmd:        cmd,
		Env:        []string{"PATH=/bin"},
		User:       fmt.Sprint(opmUser),
		WorkingDir: "/",
	}
}

// pushStandins pushes every bundle and index under dir (bundles/REPO/TAG, indexes/REPO/TAG) as
// olmtest/REPO:TAG, in name order.
func pushStandins(registry, dir, opm string, opmFiles []oci.File) error {
	for _, kind := range []string{"bundles", "indexes"} {
		tags, err := filepath.Glob(filepath.Join(dir, kind, "*", "*"))
		if err != nil {
			return err
		}
		sort.Strings(tags)
		for _, path := range tags {
			var img v1.Image
			if kind == "bundles" {
				img, err = bundleImage(path)
			} else {
				img, err = catalogImage(opm, path, opmFiles)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			ref := registry + "/olmtest/" + filepath.Base(filepath.Dir(path)) + ":" + filepath.Base(path)
			if err := push(img, ref); err != nil {
				return err
			}
		}
	}
	return nil
}

// bundleImage lays a registry+v1 bundle folder out as its Dockerfile would: manifests/ and
// metadata/ at the root, labelled with metadata/annotations.yaml's annotations.
func bundleImage(dir string) (v1.Image, error) {
	data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, err
	}
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(data, &meta); err != nil {
		return nil, fmt.Errorf("metadata/annotations.yaml: %w", err)
	}
	files, err := tree(dir, "")
	if err != nil {
		return nil, err
	}
	return oci.Image(files, v1.Config{Labels: meta.Annotations})
}

// catalogImage lays the catalog out as opm's generated catalog Dockerfile does: the catalog
// under /configs (named by the index.configs label) and its serving cache, built by opm
// itself, under /tmp/cache. With base (opm's image), it is a whole index image that serves the
// catalog as opm's Dockerfile has it: `opm serve /configs --cache-dir=/tmp/cache`; without,
// the content alone, as extractContent registry Pods copy it.
func catalogImage(opm, catalog string, base []oci.File) (v1.Image, error) {
	cache, err := os.MkdirTemp("", "olm-v0-images-cache-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(cache)
	cmd := exec.Command(opm, "serve", catalog, "--cache-dir", cache, "--cache-only")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the catalog's cache: %v: %s", err, out)
	}
	files := []oci.File{}
	for _, f := range base {
		if f.Name != "tmp/" {
			files = append(files, f)
		}
	}
	files = append(files, oci.File{Name: "configs/", Mode: 0o755})
	configs, err := tree(catalog, "configs/")
	if err != nil {
		return nil, err
	}
	files = append(files, configs...)
	files = append(files, oci.File{Name: "tmp/", Mode: 0o1777}, oci.File{Name: "tmp/cache/", Mode: 0o755, Owner: opmUser})
	cached, err := tree(cache, "tmp/cache/")
	if err != nil {
		return nil, err
	}
	// Owned by opm's user, as the Dockerfile's `RUN opm serve … --cache-only` leaves it: `opm
	// serve` takes a lock file in the cache, so it must be able to write there.
	for i := range cached {
		cached[i].Owner = opmUser
	}
	files = append(files, cached...)
	config := v1.Config{}
	if base != nil {
		config = opmConfig([]string{"serve", "/configs", "--cache-dir=/tmp/cache"})
	}
	config.Labels = map[string]string{"operators.operatorframework.io.index.configs.v1": "/configs"}
	return oci.Image(files, config)
}

// tree is every folder and file under root, named under prefix, in walk order.
func tree(root, prefix string) ([]oci.File, error) {
	var files []oci.File
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		name := prefix + filepath.ToSlash(rel)
		if d.IsDir() {
			files = append(files, oci.File{Name: name + "/", Mode: 0o755})
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, oci.File{Name: name, Mode: 0o644, Data: data})
		return nil
	})
	return files, err
}
