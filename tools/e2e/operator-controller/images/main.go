// e2e-images pushes the images upstream's e2e suite runs in its test bundles, built here because
// their registries cannot be reached: busybox:1.36 from the machine's static busybox (one
// layer: /bin/busybox, a link per applet it lists, /tmp), as docker.io/library/busybox:1.36
// names it. The real node pulls docker.io images from the environment's registry under the same
// path, so the suite's bundles run unchanged.
//
//	e2e-images REGISTRY [BUSYBOX]
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: e2e-images REGISTRY [BUSYBOX]")
		os.Exit(2)
	}
	busybox := "/bin/busybox"
	if len(os.Args) == 3 {
		busybox = os.Args[2]
	}
	ref := os.Args[1] + "/library/busybox:1.36"
	if err := pushBusybox(busybox, ref); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-images:", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}

// isStatic says whether the ELF program at path asks for no dynamic loader.
func isStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

func pushBusybox(busybox, ref string) error {
	binary, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("reading %s (Debian's busybox-static): %w", busybox, err)
	}
	if static, err := isStatic(busybox); err != nil || !static {
		return fmt.Errorf("%s is not a statically linked program (install Debian's busybox-static): the image holds no libraries", busybox)
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", busybox, err)
	}
	applets := strings.Fields(string(list))
	sort.Strings(applets)
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	// Fixed times and owners: the same busybox always gives the same digest.
	epoch := time.Unix(0, 0)
	for _, dir := range []string{"bin/", "tmp/"} {
		mode := int64(0o755)
		if dir == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: mode, ModTime: epoch}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(binary)), ModTime: epoch}); err != nil {
		return err
	}
	if _, err := tw.Write(binary); err != nil {
		return err
	}
	for _, a := range applets {
		if a == "busybox" || strings.Contains(a, "/") {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: epoch}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	data := layer.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	img, err = mutate.Config(img, v1.Config{Cmd: []string{"sh"}, Env: []string{"PATH=/bin"}})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	return crane.Push(img, ref, crane.Insecure)
}
