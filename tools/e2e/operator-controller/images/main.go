// e2e-images pushes the images upstream's e2e suite runs in its test bundles, built here because
// their registries cannot be reached: busybox:1.36 from the machine's static busybox (one
// layer: /bin/busybox, a link per applet it lists, /tmp), as docker.io/library/busybox:1.36
// names it. The real node pulls docker.io images from the environment's registry under the same
// path, so the suite's bundles run unchanged.
//
//	e2e-images REGISTRY [BUSYBOX]
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"olm.local/e2e/oci"
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

func pushBusybox(busybox, ref string) error {
	binary, err := oci.StaticProgram(busybox)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return fmt.Errorf("reading %s (Debian's busybox-static): %w", busybox, err)
	}
	if err != nil {
		return fmt.Errorf("%s is not a statically linked program (install Debian's busybox-static): the image holds no libraries", busybox)
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", busybox, err)
	}
	applets := strings.Fields(string(list))
	sort.Strings(applets)
	files := append([]oci.File{
		{Name: "bin/", Mode: 0o755},
		{Name: "tmp/", Mode: 0o1777},
	}, oci.Busybox(binary, applets...)...)
	img, err := oci.Image(files, v1.Config{Cmd: []string{"sh"}, Env: []string{"PATH=/bin"}})
	if err != nil {
		return err
	}
	return oci.Push(img, ref)
}
