// Command crdupgrade writes the table of outcomes of operator-controller's CRD upgrade-safety
// preflight (crdify with operator-controller's configuration and message formatting) for
// consecutive versions of every package under -bundles, upgrade and downgrade. olm-bundle's tests
// read the table to check `olm crd diff` against the real thing without needing Go.
//
// For each pair, every CRD of the newer-installed bundle is checked against the CRD of the same
// name in the installed bundle, as the preflight does on a cluster: the installed CRD is the one
// from the bundle with status.storedVersions set to its storage version (what an API server
// records after one install), the new CRD is the bundle's CRD as operator-controller parses it.
// One preflight run per CRD, so each CRD gets its own outcome line.
//
// An unsafe CRD is written `unsafe: validating upgrade for CRD "<name>":` and then one problem a
// line. Upstream's order of the problems, and of the names after "new required fields: ", changes
// from run to run (crdify walks Go maps), so both are sorted here and compared sorted. crdify
// panics on a CRD version without a schema: that is recorded as "crash: <panic>".
//
// With -mutations it writes one-change mutations instead (mutations.go), with -cases FILE the
// outcomes of upstream's own test vectors listed in FILE (cases.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-framework/operator-controller/internal/operator-controller/rukpak/bundle"
	"github.com/operator-framework/operator-controller/internal/operator-controller/rukpak/bundle/source"
	"github.com/operator-framework/operator-controller/internal/operator-controller/rukpak/preflights/crdupgradesafety"
)

var requiredList = regexp.MustCompile(`new required fields: \[([^\]]*)\]`)

// sortRequired puts the names in every "new required fields: [...]" list in order.
func sortRequired(s string) string {
	return requiredList.ReplaceAllStringFunc(s, func(m string) string {
		inner := requiredList.FindStringSubmatch(m)[1]
		f := strings.Fields(inner)
		sort.Strings(f)
		return "new required fields: [" + strings.Join(f, " ") + "]"
	})
}

func installed(crd apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	c := crd.DeepCopy()
	c.Status.StoredVersions = nil
	for _, v := range c.Spec.Versions {
		if v.Storage {
			c.Status.StoredVersions = append(c.Status.StoredVersions, v.Name)
		}
	}
	return c
}

// check runs the preflight with old installed as a cluster that installed it holds it.
func check(old apiextensionsv1.CustomResourceDefinition, new apiextensionsv1.CustomResourceDefinition) string {
	return checkInstalled(installed(old), new)
}

// checkInstalled runs the preflight with the installed CRD exactly as given.
func checkInstalled(old *apiextensionsv1.CustomResourceDefinition, new apiextensionsv1.CustomResourceDefinition) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = fmt.Sprintf("crash: %v", r)
		}
	}()
	cli := fake.NewSimpleClientset(old).ApiextensionsV1().CustomResourceDefinitions()
	p := crdupgradesafety.NewPreflight(cli)
	obj := new.DeepCopy()
	err := p.Upgrade(context.Background(), []client.Object{obj})
	if err == nil {
		return "safe"
	}
	prefix := fmt.Sprintf("validating upgrade for CRD %q: ", new.Name)
	msg, ok := strings.CutPrefix(err.Error(), prefix)
	if !ok {
		return "error: " + strings.ReplaceAll(err.Error(), "\n", " | ")
	}
	lines := strings.Split(sortRequired(msg), "\n")
	slices.Sort(lines)
	return "unsafe: " + strings.TrimSuffix(prefix, " ") + "\n  " + strings.Join(lines, "\n  ")
}

type version struct {
	dir string
	v   semver.Version
}

// versionsOf lists a package folder's bundle versions, oldest first.
func versionsOf(pkgDir string) []version {
	dirs, _ := filepath.Glob(filepath.Join(pkgDir, "*", "manifests"))
	var vs []version
	for _, m := range dirs {
		dir := filepath.Dir(m)
		if v, err := semver.Parse(filepath.Base(dir)); err == nil {
			vs = append(vs, version{dir, v})
		}
	}
	slices.SortFunc(vs, func(a, b version) int { return a.v.Compare(b.v) })
	return vs
}

func main() {
	bundles := flag.String("bundles", "", "folder of <package>/<version>/ bundle directories")
	mutations := flag.Bool("mutations", false, "write the one-change mutation table (mutations.go) instead of the pairs")
	cases := flag.String("cases", "", "write the outcomes of the upstream test vectors in this JSON file (cases.go) instead")
	flag.Parse()
	if *cases != "" {
		os.Stdout.WriteString(upstreamCases(*cases))
		return
	}
	if *bundles == "" {
		fmt.Fprintln(os.Stderr, "usage: crdupgrade -bundles DIR")
		os.Exit(2)
	}
	dirs, err := filepath.Glob(filepath.Join(*bundles, "*", "*", "manifests"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	byPkg := map[string][]version{}
	for _, m := range dirs {
		dir := filepath.Dir(m)
		v, err := semver.Parse(filepath.Base(dir))
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", dir, err)
			os.Exit(1)
		}
		pkg := filepath.Base(filepath.Dir(dir))
		byPkg[pkg] = append(byPkg[pkg], version{dir, v})
	}
	pkgs := make([]string, 0, len(byPkg))
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	parsed := map[string]bundle.RegistryV1{}
	load := func(dir string) bundle.RegistryV1 {
		if b, ok := parsed[dir]; ok {
			return b
		}
		b, err := source.FromFS(os.DirFS(dir)).GetBundle()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", dir, err)
			os.Exit(1)
		}
		parsed[dir] = b
		return b
	}
	if *mutations {
		os.Stdout.WriteString(mutationCases(*bundles, func(dir string) ([]apiextensionsv1.CustomResourceDefinition, []string) {
			crds := load(dir).CRDs
			apiVersions := make([]string, len(crds))
			for i, c := range crds {
				apiVersions[i] = c.APIVersion
			}
			return crds, apiVersions
		}))
		return
	}
	var b strings.Builder
	for _, pkg := range pkgs {
		vs := byPkg[pkg]
		slices.SortFunc(vs, func(a, b version) int { return a.v.Compare(b.v) })
		for i := 1; i < len(vs); i++ {
			for _, pair := range [][2]version{{vs[i-1], vs[i]}, {vs[i], vs[i-1]}} {
				from, to := load(pair[0].dir), load(pair[1].dir)
				for _, n := range to.CRDs {
					fmt.Fprintf(&b, "%s %s -> %s %s: ", pkg, pair[0].v, pair[1].v, n.Name)
					idx := slices.IndexFunc(from.CRDs, func(o apiextensionsv1.CustomResourceDefinition) bool { return o.Name == n.Name })
					if idx < 0 {
						b.WriteString("new CRD\n")
						continue
					}
					b.WriteString(check(from.CRDs[idx], n))
					b.WriteString("\n")
				}
			}
		}
	}
	os.Stdout.WriteString(b.String())
}
