// Package known reads KNOWN.tsv: the scenarios of an upstream suite that a profile does not
// run (skip) or that fail on olm on purpose (differs), each with its reason. The runner skips
// by it and the report checks a run by it.
package known

import (
	"fmt"
	"os"
	"strings"
)

// Known is one line of KNOWN.tsv: feature file, scenario name, the profiles it applies to
// (comma-separated, or *), kind (skip or differs) and the reason.
type Known struct {
	Feature, Scenario, Kind, Reason string
	Profiles                        []string
}

func (k Known) AppliesTo(profile string) bool {
	for _, p := range k.Profiles {
		if p == "*" || p == profile {
			return true
		}
	}
	return false
}

// Read reads KNOWN.tsv; `#` lines are comments.
func Read(path string) ([]Known, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Known
	for i, line := range strings.Split(string(text), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 || (f[3] != "skip" && f[3] != "differs") || f[4] == "" {
			return nil, fmt.Errorf("%s:%d: want feature<TAB>scenario<TAB>profiles<TAB>skip|differs<TAB>reason", path, i+1)
		}
		out = append(out, Known{Feature: f[0], Scenario: f[1], Profiles: strings.Split(f[2], ","), Kind: f[3], Reason: f[4]})
	}
	return out, nil
}

// Find is the entry for a scenario on a profile, or nil.
func Find(known []Known, profile, feature, scenario string) *Known {
	for i := range known {
		k := &known[i]
		if k.Feature == feature && k.Scenario == scenario && k.AppliesTo(profile) {
			return k
		}
	}
	return nil
}
