// Command oracle writes the semver test table that olm-version's tests read. It runs the real
// Masterminds/semver v3 and blang/semver v4 libraries over a fixed set of inputs, so the Rust
// implementation is checked against the libraries OLM actually uses, without needing Go at test time.
//
// Usage: go run . > ../../crates/olm-version/tests/data/oracle.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"

	mm "github.com/Masterminds/semver/v3"
	blang "github.com/blang/semver/v4"
)

type mmVersionCase struct {
	Input       string  `json:"input"`
	Parsed      *string `json:"parsed"`
	Error       *string `json:"error"`
	StrictOk    bool    `json:"strict_ok"`
	StrictError *string `json:"strict_error"`
}

type mmCheck struct {
	Version        string   `json:"version"`
	Check          bool     `json:"check"`
	ValidateErrors []string `json:"validate_errors"`
}

type mmConstraintCase struct {
	Constraint string    `json:"constraint"`
	Error      *string   `json:"error"`
	String     *string   `json:"string"`
	CrdValid   bool      `json:"crd_valid"`
	Checks     []mmCheck `json:"checks"`
}

type blangVersionCase struct {
	Input         string  `json:"input"`
	Parsed        *string `json:"parsed"`
	Error         *string `json:"error"`
	Tolerant      *string `json:"tolerant"`
	TolerantError *string `json:"tolerant_error"`
}

type blangCheck struct {
	Version string `json:"version"`
	Matches bool   `json:"matches"`
}

type blangRangeCase struct {
	Range  string       `json:"range"`
	Error  *string      `json:"error"`
	Checks []blangCheck `json:"checks"`
}

type compareCase struct {
	A   string `json:"a"`
	B   string `json:"b"`
	Cmp int    `json:"cmp"`
}

type table struct {
	Generator           string             `json:"generator"`
	MastermindsVersions []mmVersionCase    `json:"masterminds_versions"`
	MastermindsCompare  []compareCase      `json:"masterminds_compare"`
	Constraints         []mmConstraintCase `json:"masterminds_constraints"`
	BlangVersions       []blangVersionCase `json:"blang_versions"`
	BlangCompare        []compareCase      `json:"blang_compare"`
	BlangRanges         []blangRangeCase   `json:"blang_ranges"`
}

func str(s string) *string { return &s }

func errStr(err error) *string {
	if err == nil {
		return nil
	}
	return str(err.Error())
}

// crdVersionPattern is the ClusterExtension spec.source.catalog.version admission pattern as the
// upstream CRD carries it (including its typos), so the table records what upstream admission accepts.
var crdVersionPattern = regexp.MustCompile(`^(\s*(=||!=|>|<|>=|=>|<=|=<|~|~>|\^)\s*(v?(0|[1-9]\d*|[x|X|\*])(\.(0|[1-9]\d*|x|X|\*]))?(\.(0|[1-9]\d*|x|X|\*))?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?)\s*)((?:\s+|,\s*|\s*\|\|\s*)(=||!=|>|<|>=|=>|<=|=<|~|~>|\^)\s*(v?(0|[1-9]\d*|x|X|\*])(\.(0|[1-9]\d*|x|X|\*))?(\.(0|[1-9]\d*|x|X|\*]))?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?)\s*)*$`)

func crdValid(s string) bool {
	if s == "" {
		return true // an empty version is omitted and never validated
	}
	return len(s) <= 64 && crdVersionPattern.MatchString(s)
}

func main() {
	t := table{Generator: "tools/oracle (Masterminds/semver v3.5.0, blang/semver v4.0.0)"}

	for _, in := range mmVersionInputs {
		c := mmVersionCase{Input: in}
		if v, err := mm.NewVersion(in); err == nil {
			c.Parsed = str(v.String())
		} else {
			c.Error = errStr(err)
		}
		if _, err := mm.StrictNewVersion(in); err == nil {
			c.StrictOk = true
		} else {
			c.StrictError = errStr(err)
		}
		t.MastermindsVersions = append(t.MastermindsVersions, c)
	}

	for _, a := range checkVersions {
		for _, b := range checkVersions {
			va, _ := mm.NewVersion(a)
			vb, _ := mm.NewVersion(b)
			t.MastermindsCompare = append(t.MastermindsCompare, compareCase{a, b, va.Compare(vb)})
		}
	}

	for _, c := range constraintInputs {
		cc := mmConstraintCase{Constraint: c, CrdValid: crdValid(c)}
		cs, err := mm.NewConstraint(c)
		if err != nil {
			cc.Error = errStr(err)
		} else {
			cc.String = str(cs.String())
			for _, vs := range checkVersions {
				v, verr := mm.NewVersion(vs)
				if verr != nil {
					panic(fmt.Sprintf("check version %q: %v", vs, verr))
				}
				ok, errs := cs.Validate(v)
				msgs := []string{}
				for _, e := range errs {
					msgs = append(msgs, e.Error())
				}
				if cs.Check(v) != ok {
					panic("Check and Validate disagree for " + c + " " + vs)
				}
				cc.Checks = append(cc.Checks, mmCheck{Version: vs, Check: ok, ValidateErrors: msgs})
			}
		}
		t.Constraints = append(t.Constraints, cc)
	}

	for _, in := range blangVersionInputs {
		c := blangVersionCase{Input: in}
		if v, err := blang.Parse(in); err == nil {
			c.Parsed = str(v.String())
		} else {
			c.Error = errStr(err)
		}
		if v, err := blang.ParseTolerant(in); err == nil {
			c.Tolerant = str(v.String())
		} else {
			c.TolerantError = errStr(err)
		}
		t.BlangVersions = append(t.BlangVersions, c)
	}

	var strictChecks []string
	for _, vs := range checkVersions {
		if _, err := blang.Parse(vs); err == nil {
			strictChecks = append(strictChecks, vs)
		}
	}
	for _, a := range strictChecks {
		for _, b := range strictChecks {
			t.BlangCompare = append(t.BlangCompare, compareCase{a, b, blang.MustParse(a).Compare(blang.MustParse(b))})
		}
	}

	for _, r := range blangRangeInputs {
		rc := blangRangeCase{Range: r}
		fn, err := blang.ParseRange(r)
		if err != nil {
			rc.Error = errStr(err)
		} else {
			for _, vs := range strictChecks {
				rc.Checks = append(rc.Checks, blangCheck{Version: vs, Matches: fn(blang.MustParse(vs))})
			}
		}
		t.BlangRanges = append(t.BlangRanges, rc)
	}

	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
