// Command apivalidate writes the table of operator-framework/api's bundle authoring checks (the
// version operator-controller v1.11.0 pins) for every bundle directory under -bundles: the
// ClusterServiceVersion validator and the bundle validator, as `operator-sdk bundle validate`
// runs them, without the CustomResourceDefinition validator (olm does not implement it).
// olm-bundle's tests read the table to check olm's `apivalidate` without needing Go.
//
// Each bundle is a line `<pkg>/<version>:` followed by its findings, one a line, as the
// validators' errors print themselves. Findings are sorted: the validators' own order is not
// compared.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
)

func main() {
	bundles := flag.String("bundles", "", "folder of <package>/<version>/ bundle directories")
	flag.Parse()
	if *bundles == "" {
		fmt.Fprintln(os.Stderr, "usage: apivalidate -bundles DIR")
		os.Exit(2)
	}
	dirs, err := filepath.Glob(filepath.Join(*bundles, "*", "*", "manifests"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	slices.Sort(dirs)
	var b strings.Builder
	for _, m := range dirs {
		dir := filepath.Dir(m)
		id := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		fmt.Fprintf(&b, "%s:\n", id)
		bundle, err := manifests.GetBundleFromDir(dir)
		if err != nil {
			fmt.Fprintf(&b, "  load error: %s\n", strings.ReplaceAll(err.Error(), "\n", " | "))
			continue
		}
		var findings []string
		results := validation.ClusterServiceVersionValidator.Validate(bundle.CSV)
		results = append(results, validation.BundleValidator.Validate(bundle)...)
		for _, r := range results {
			for _, e := range append(r.Errors, r.Warnings...) {
				findings = append(findings, strings.ReplaceAll(e.Error(), "\n", " | "))
			}
		}
		slices.Sort(findings)
		for _, f := range findings {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	os.Stdout.WriteString(b.String())
}
