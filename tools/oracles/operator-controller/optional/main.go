// Command oc-optional runs operator-framework/api's optional bundle validators (the ones
// `operator-sdk bundle validate --select-optional` offers, minus multiarch, which inspects images
// with docker or podman) on
// bundle directories and prints each finding as operator-sdk prints it: `errors.Error.Error()`,
// each result's warnings first, then its errors, one a line. olm-bundle's tests read a table
// made by it, so they check olm's port without needing Go.
//
// Usage:
//
//	oc-optional [-annotations] [-values k=v,...] [-raw] -validator NAME BUNDLE_DIR
//	oc-optional -table DIR   # every DIR/<package>/<version>, every case, as the table
//
// The bundle is loaded as operator-sdk loads it: `manifests.GetBundleFromDir(<manifests dir>)`,
// the manifests dir named by metadata/annotations.yaml (default `manifests/`). That loader does
// not read metadata/, so the bundle's channels are [""]; with -annotations the channels, default
// channel and package are set from metadata/annotations.yaml as a bundle loaded from its root
// would have them (the table uses this).
//
// Output is normalised where upstream's order is Go map order (unless -raw): the entries of a
// removed-APIs message (wherever in a line they are listed) and the channel list of the
// channel-naming warning are sorted.
//
// A case whose values hold index-path (the community validator's bundle.Dockerfile) runs with
// the bundle directory as working directory, so a relative path is read from the bundle and
// printed as given.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	"sigs.k8s.io/yaml"
)

// The optional validators by operator-sdk's `name=` label.
var validators = map[string]interfaces.Validator{
	"operatorhubv2":         validation.OperatorHubV2Validator,
	"capabilities":          validation.StandardCapabilitiesValidator,
	"categories":            validation.StandardCategoriesValidator,
	"operatorhub":           validation.OperatorHubValidator,
	"community":             validation.CommunityOperatorValidator,
	"alpha-deprecated-apis": validation.AlphaDeprecatedAPIsValidator,
	"good-practices":        validation.GoodPracticesValidator,
}

// The table's cases: a validator and its optional values.
var cases = []struct {
	validator string
	values    string
}{
	{"operatorhubv2", ""},
	{"operatorhubv2", "k8s-version=1.25"},
	{"capabilities", ""},
	{"categories", ""},
	{"operatorhub", ""},
	{"alpha-deprecated-apis", ""},
	{"alpha-deprecated-apis", "k8s-version=1.25"},
	{"alpha-deprecated-apis", "k8s-version=1.22.0"},
	{"alpha-deprecated-apis", "k8s-version=v1.26"},
	{"alpha-deprecated-apis", "k8s-version=not-a-version"},
	{"good-practices", ""},
	{"community", ""},
	{"community", "index-path=bundle.Dockerfile"},
}

func main() {
	annotations := flag.Bool("annotations", false, "set channels, default channel and package from metadata/annotations.yaml")
	values := flag.String("values", "", "optional values, k=v,...")
	name := flag.String("validator", "", "optional validator (operator-sdk's name= label)")
	raw := flag.Bool("raw", false, "do not sort what upstream prints in Go map order")
	table := flag.String("table", "", "folder of <package>/<version>/ bundles: print every case of every bundle")
	flag.Parse()

	if *table != "" {
		if err := writeTable(*table); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() != 1 || validators[*name] == nil {
		fmt.Fprintln(os.Stderr, "usage: oc-optional [-annotations] [-values k=v,...] [-raw] -validator NAME BUNDLE_DIR | -table DIR")
		os.Exit(2)
	}
	bundle, err := load(flag.Arg(0), *annotations)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, line := range run(bundle, *name, *values, !*raw) {
		fmt.Println(line)
	}
}

func writeTable(root string) error {
	dirs, err := filepath.Glob(filepath.Join(root, "*", "*", "manifests"))
	if err != nil {
		return err
	}
	slices.Sort(dirs)
	var b strings.Builder
	for _, m := range dirs {
		dir := filepath.Dir(m)
		id := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		bundle, err := load(dir, true)
		if err != nil {
			fmt.Fprintf(&b, "== %s\nload error: %s\n", id, oneLine(err.Error()))
			continue
		}
		for _, c := range cases {
			fmt.Fprintf(&b, "== %s %s", id, c.validator)
			if c.values != "" {
				fmt.Fprintf(&b, " %s", c.values)
			}
			b.WriteString("\n")
			lines, err := runIn(dir, bundle, c.validator, c.values)
			if err != nil {
				return err
			}
			for _, line := range lines {
				fmt.Fprintf(&b, "%s\n", line)
			}
		}
	}
	_, err = os.Stdout.WriteString(b.String())
	return err
}

// runIn runs a table case; one with an index-path runs from the bundle directory.
func runIn(dir string, bundle *manifests.Bundle, name, values string) ([]string, error) {
	if !strings.Contains(values, "index-path=") {
		return run(bundle, name, values, true), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if err := os.Chdir(dir); err != nil {
		return nil, err
	}
	lines := run(bundle, name, values, true)
	return lines, os.Chdir(wd)
}

// load reads a bundle as operator-sdk does; with annotations, it also sets what a bundle loaded
// from its root gets from metadata/annotations.yaml.
func load(dir string, annotations bool) (*manifests.Bundle, error) {
	var file struct {
		Annotations map[string]string `json:"annotations"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, err
	}
	manifestsDir := "manifests/"
	if v := file.Annotations["operators.operatorframework.io.bundle.manifests.v1"]; v != "" {
		manifestsDir = v
	}
	bundle, err := manifests.GetBundleFromDir(filepath.Join(dir, manifestsDir))
	if err != nil {
		return nil, err
	}
	if annotations {
		bundle.Channels = strings.Split(file.Annotations["operators.operatorframework.io.bundle.channels.v1"], ",")
		bundle.DefaultChannel = file.Annotations["operators.operatorframework.io.bundle.channel.default.v1"]
		bundle.Package = file.Annotations["operators.operatorframework.io.bundle.package.v1"]
	}
	return bundle, nil
}

// run gives validator's findings as operator-sdk prints them: the objects and values it passes
// (`bundle.ObjectsToValidate()`, `bundle.Objects`, the values map), and per result the warnings,
// then the errors. A panic in the validator is printed as `panic: <value>`.
func run(bundle *manifests.Bundle, name, values string, normalise bool) (lines []string) {
	defer func() {
		if r := recover(); r != nil {
			lines = append(lines, oneLine(fmt.Sprintf("panic: %v", r)))
		}
	}()
	opts := map[string]string{}
	for _, kv := range strings.Split(values, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			opts[k] = v
		}
	}
	objs := bundle.ObjectsToValidate()
	for _, o := range bundle.Objects {
		objs = append(objs, o)
	}
	objs = append(objs, opts)
	for _, r := range validators[name].Validate(objs...) {
		for _, e := range append(r.Warnings, r.Errors...) {
			line := e.Error()
			if normalise {
				line = normaliseLine(line)
			}
			lines = append(lines, oneLine(line))
		}
	}
	return lines
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

var (
	removedAPIs = regexp.MustCompile(`^(.*Migrate the API\(s\) for )(.*)$`)
	apiKey      = regexp.MustCompile(`^([A-Za-z0-9]+): \(`)
	channels    = regexp.MustCompile(`^(.*channel\(s\) )(\[.*\])( are not following .*)$`)
	apiEntry    = `[A-Za-z0-9]+: \(\[[^\]]*\]\)`
	apiEntries  = regexp.MustCompile(apiEntry + `(?:,` + apiEntry + `)*,?`)
	oneAPIEntry = regexp.MustCompile(apiEntry)
)

// sortAPIEntries sorts each run of `<Kind>: (["a" "b"])` entries in line (the community
// validator's messages list them mid-sentence), keeping upstream's commas.
func sortAPIEntries(line string) string {
	return apiEntries.ReplaceAllStringFunc(line, func(block string) string {
		entries := oneAPIEntry.FindAllString(block, -1)
		sort.Strings(entries)
		out := strings.Join(entries, ",")
		if strings.HasSuffix(block, ",") {
			out += ","
		}
		return out
	})
}

// quotedList reads a `%+q` list of strings, `["a" "b"]`, from the start of s: the strings and
// the rest of s.
func quotedList(s string) ([]string, string, bool) {
	s, ok := strings.CutPrefix(s, "[")
	if !ok {
		return nil, "", false
	}
	var names []string
	for !strings.HasPrefix(s, "]") {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, "", false
		}
		name, err := strconv.Unquote(q)
		if err != nil {
			return nil, "", false
		}
		names = append(names, name)
		s = strings.TrimPrefix(s[len(q):], " ")
	}
	return names, s[1:], true
}

// normaliseLine sorts what upstream lists in Go map order: the `<Kind>: (["a" "b"])` entries of
// a removed-APIs message (each keeps the trailing comma upstream writes on every entry when
// there are several), and the channels of the channel-naming warning. A line it cannot read is
// left as it is.
func normaliseLine(line string) string {
	line = sortAPIEntries(line)
	if m := removedAPIs.FindStringSubmatch(line); m != nil {
		var entries []string
		rest := m[2]
		for rest != "" {
			k := apiKey.FindStringSubmatch(rest)
			if k == nil {
				return line
			}
			names, after, ok := quotedList(rest[len(k[0]):])
			if !ok || !strings.HasPrefix(after, ")") {
				return line
			}
			entries = append(entries, k[1]+": ("+fmt.Sprintf("%+q", names)+")")
			rest = strings.TrimPrefix(after[1:], ",")
		}
		sort.Strings(entries)
		if len(entries) > 1 {
			return m[1] + strings.Join(entries, ",") + ","
		}
		return m[1] + strings.Join(entries, "")
	}

	if m := channels.FindStringSubmatch(line); m != nil {
		names, after, ok := quotedList(m[2])
		if !ok || after != "" {
			return line
		}
		sort.Strings(names)
		return m[1] + fmt.Sprintf("%+q", names) + m[3]
	}
	return line
}
