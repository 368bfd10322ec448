// olm-v0-images pushes the images OLM v0's e2e suite runs on a real node, built here because
// their registries cannot be reached. The real node pulls quay.io images from the environment's
// registry under the same path, so the suite's Pods run unchanged.
//
//	olm-v0-images REGISTRY [BUSYBOX]
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
//   - olm-e2e/dummy:latest, the suite's -dummyImage (its default, bitnami/nginx, is what the
//     Deployments of its hand-made CSVs run): the machine's static busybox idling until it is
//     told to stop, so those Deployments become available.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: olm-v0-images REGISTRY [BUSYBOX]")
		os.Exit(2)
	}
	registry := os.Args[1]
	busybox := "/bin/busybox"
	if len(os.Args) == 3 {
		busybox = os.Args[2]
	}
	if err := run(registry, busybox); err != nil {
		fmt.Fprintln(os.Stderr, "olm-v0-images:", err)
		os.Exit(1)
	}
}

func run(registry, busybox string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir := filepath.Dir(self)
	opm, err := staticProgram(filepath.Join(dir, "opm"))
	if err != nil {
		return err
	}
	probe, err := staticProgram(filepath.Join(dir, "grpc_health_probe"))
	if err != nil {
		return err
	}
	img, err := image([]entry{
		{name: "bin/", mode: 0o755},
		{name: "bin/grpc_health_probe", mode: 0o755, data: probe},
		{name: "bin/opm", mode: 0o755, data: opm},
		{name: "etc/", mode: 0o755},
		// As operator-registry's image has it: Go's resolver reads the order from here.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "tmp/", mode: 0o1777},
	}, v1.Config{
		Entrypoint: []string{"/bin/opm"},
		Env:        []string{"PATH=/bin"},
		User:       "1001",
		WorkingDir: "/",
	})
	if err != nil {
		return err
	}
	tags := []string{"latest"}
	if t := os.Getenv("OPERATOR_REGISTRY_TAG"); t != "" && t != "latest" {
		tags = append(tags, t)
	}
	for _, t := range tags {
		ref := registry + "/operator-framework/opm:" + t
		if err := crane.Push(img, ref, crane.Insecure); err != nil {
			return err
		}
		fmt.Println(ref)
	}

	bb, err := staticProgram(busybox)
	if err != nil {
		return fmt.Errorf("%w (install Debian's busybox-static)", err)
	}
	// sh, as PID 1, leaves the loop on SIGTERM: the Pod stops at once rather than after its
	// grace period.
	dummy, err := image([]entry{
		{name: "bin/", mode: 0o755},
		{name: "bin/busybox", mode: 0o755, data: bb},
		{name: "bin/sh", link: "busybox"},
		{name: "bin/sleep", link: "busybox"},
		{name: "tmp/", mode: 0o1777},
	}, v1.Config{
		Cmd: []string{"sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 1; done"},
		Env: []string{"PATH=/bin"},
	})
	if err != nil {
		return err
	}
	ref := registry + "/olm-e2e/dummy:latest"
	if err := crane.Push(dummy, ref, crane.Insecure); err != nil {
		return err
	}
	fmt.Println(ref)
	return nil
}

// staticProgram reads the ELF program at path, which must ask for no dynamic loader: the
// images hold no libraries.
func staticProgram(path string) ([]byte, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%s is not a statically linked program", path)
		}
	}
	return os.ReadFile(path)
}

// entry is one file of an image's layer: a folder (name ends in /), a symbolic link to link,
// or a regular file holding data.
type entry struct {
	name string
	mode int64
	data []byte
	link string
}

// image is one layer of entries (owned by root, at a fixed time, so the same inputs always give
// the same digest) with config.
func image(entries []entry, config v1.Config) (v1.Image, error) {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	epoch := time.Unix(0, 0)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch}
		switch {
		case e.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.link, 0o777
		case e.name[len(e.name)-1] == '/':
			h.Typeflag = tar.TypeDir
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := layer.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, err
	}
	if img, err = mutate.Config(img, config); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	return mutate.ConfigFile(img, cf)
}
