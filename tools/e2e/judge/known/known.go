// Package known reads KNOWN.tsv: the scenarios or specs of an upstream suite that a profile does
// not run (skip), that olm lacks or breaks (fails), in which olm differs on purpose (differs),
// or that pass only when run alone (serial: in a parallel run another spec interferes with
// them), each with its reason. A runner skips by it and e2e-judge checks a run by it.
//
// One line a case, five tab-separated columns:
//
//	group <TAB> name <TAB> profiles <TAB> skip|fails|differs|serial <TAB> reason
//
// group is a Godog scenario's feature file name (install.feature) or a Ginkgo spec's top-level
// container label (Subscription); name is the scenario's name or the spec's full text
// (containers and leaf, joined by spaces, as Ginkgo matches it). profiles is a comma-separated
// list of the profiles (nodes) the line applies to, or * for all. Lines starting with # are
// comments. A case may be listed more than once only for profiles that do not overlap.
package known

import (
	"fmt"
	"os"
	"strings"
)

// The kinds of entry.
const (
	Skip    = "skip"    // not run on the profile: it cannot judge it
	Fails   = "fails"   // olm lacks or breaks it
	Differs = "differs" // olm differs on purpose
	Serial  = "serial"  // must pass, run alone after the parallel run: another spec interferes
)

// Known is one line of KNOWN.tsv.
type Known struct {
	Group, Name string
	Profiles    []string
	Kind        string
	Reason      string
	Line        int // where in the file
}

// AppliesTo tells whether the entry is for the profile.
func (k Known) AppliesTo(profile string) bool {
	for _, p := range k.Profiles {
		if p == "*" || p == profile {
			return true
		}
	}
	return false
}

// Failing tells whether the case is expected to run and fail (fails or differs).
func (k Known) Failing() bool { return k.Kind == Fails || k.Kind == Differs }

// Read reads the KNOWN.tsv at path.
func Read(path string) ([]Known, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, string(text))
}

// Parse reads the text of a KNOWN.tsv; name is the file's, for errors (file:line: …).
func Parse(name, text string) ([]Known, error) {
	var out []Known
	for i, line := range strings.Split(text, "\n") {
		at := fmt.Sprintf("%s:%d", name, i+1)
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			return nil, fmt.Errorf("%s: want 5 tab-separated columns (group, name, profiles, skip|fails|differs, reason), got %d", at, len(f))
		}
		k := Known{Group: f[0], Name: f[1], Profiles: strings.Split(f[2], ","), Kind: f[3], Reason: f[4], Line: i + 1}
		switch {
		case k.Group == "":
			return nil, fmt.Errorf("%s: no group", at)
		case k.Name == "":
			return nil, fmt.Errorf("%s: no name", at)
		case k.Kind != Skip && k.Kind != Fails && k.Kind != Differs && k.Kind != Serial:
			return nil, fmt.Errorf("%s: kind %q is not skip, fails, differs or serial", at, k.Kind)
		case strings.TrimSpace(k.Reason) == "":
			return nil, fmt.Errorf("%s: no reason given", at)
		}
		for _, p := range k.Profiles {
			if p == "" {
				return nil, fmt.Errorf("%s: profiles %q: want a comma-separated list or *", at, f[2])
			}
		}
		for _, o := range out {
			if o.Group == k.Group && o.Name == k.Name && overlap(o.Profiles, k.Profiles) {
				return nil, fmt.Errorf("%s: %s %q is listed for the same profile on line %d", at, k.Group, k.Name, o.Line)
			}
		}
		out = append(out, k)
	}
	return out, nil
}

func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == "*" || y == "*" || x == y {
				return true
			}
		}
	}
	return false
}

// Find is the entry for a case on a profile, or nil.
func Find(list []Known, profile, group, name string) *Known {
	for i := range list {
		k := &list[i]
		if k.Group == group && k.Name == name && k.AppliesTo(profile) {
			return k
		}
	}
	return nil
}
