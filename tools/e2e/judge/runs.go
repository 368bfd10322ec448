package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Result is one scenario or spec of one run.
type Result struct {
	Group   string // feature file (install.feature) or top-level container label (Subscription)
	Line    int    // of the scenario in its feature file, or of the spec's leaf node
	Name    string // scenario name, or the spec's full text
	Outcome string // pass, fail, skip or pending (Ginkgo's, never judged)
	At      string // how messages name it
	Seconds float64
	Message string // why it failed or was skipped, for the log only
}

// A suite's words, for the files e2e-judge writes.
type suite struct {
	header string // the results TSV's first line
	group  string // the counts table's first column
	unit   string // scenarios or specs
}

var (
	godogSuite  = suite{"# feature\tline\tscenario\toutcome (written by tools/e2e/operator-controller.sh)", "feature", "scenarios"}
	ginkgoSuite = suite{"# container\tline\tspec\toutcome (written by tools/e2e/olm-v0.sh)", "container (label)", "specs"}
)

// The parts of Godog's cucumber JSON that are read.
type cucumberFeature struct {
	URI      string `json:"uri"`
	Elements []struct {
		Name  string `json:"name"`
		Line  int    `json:"line"`
		Type  string `json:"type"`
		Steps []struct {
			Keyword string `json:"keyword"`
			Name    string `json:"name"`
			Result  struct {
				Status   string `json:"status"`
				Error    string `json:"error_message"`
				Duration int64  `json:"duration"` // nanoseconds
			} `json:"result"`
		} `json:"steps"`
	} `json:"elements"`
}

// readCucumber reads a Godog run: a scenario passes when a step passed and none failed, is
// skipped when no step ran, and fails when a step failed, was undefined, pending or ambiguous.
func readCucumber(path string) ([]Result, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var features []cucumberFeature
	if err := json.Unmarshal(text, &features); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var out []Result
	for _, f := range features {
		feature := f.URI[strings.LastIndex(f.URI, "/")+1:]
		for _, e := range f.Elements {
			if e.Type != "scenario" {
				continue
			}
			r := Result{Group: feature, Line: e.Line, Name: e.Name, Outcome: "skip",
				At: fmt.Sprintf("%s:%d %q", feature, e.Line, e.Name)}
			for _, s := range e.Steps {
				r.Seconds += float64(s.Result.Duration) / 1e9
				switch s.Result.Status {
				case "passed":
					if r.Outcome == "skip" {
						r.Outcome = "pass"
					}
				case "skipped":
				default: // failed, undefined, pending, ambiguous
					if r.Outcome != "fail" {
						r.Outcome = "fail"
						r.Message = fmt.Sprintf("%s%s: %s %s", s.Keyword, s.Name, s.Result.Status, firstLine(s.Result.Error))
					}
				}
			}
			out = append(out, r)
		}
	}
	sortResults(out)
	return out, nil
}

// The parts of Ginkgo's JSON report (a list of types.Report) that are read.
type ginkgoReport struct {
	SpecReports []struct {
		ContainerHierarchyTexts  []string
		ContainerHierarchyLabels [][]string
		LeafNodeType             string
		LeafNodeText             string
		LeafNodeLocation         ginkgoLocation
		State                    string
		RunTime                  int64 // nanoseconds
		Failure                  *struct {
			Message  string
			Location ginkgoLocation
		}
	}
}

type ginkgoLocation struct {
	FileName   string
	LineNumber int
}

// readGinkgo reads a Ginkgo report: one result per It, its group the top-level container's first
// label.
func readGinkgo(path string) ([]Result, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(text, &reports); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var out []Result
	for _, rep := range reports {
		for _, s := range rep.SpecReports {
			if s.LeafNodeType != "It" {
				continue
			}
			r := Result{
				Line:    s.LeafNodeLocation.LineNumber,
				Name:    strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " "),
				Seconds: float64(s.RunTime) / 1e9,
			}
			if len(s.ContainerHierarchyLabels) > 0 && len(s.ContainerHierarchyLabels[0]) > 0 {
				r.Group = s.ContainerHierarchyLabels[0][0]
			}
			r.At = fmt.Sprintf("[%s] %q", r.Group, r.Name)
			if s.Failure != nil {
				r.Message = fmt.Sprintf("%s (%s:%d)", firstLine(s.Failure.Message),
					baseName(s.Failure.Location.FileName), s.Failure.Location.LineNumber)
			}
			switch s.State {
			case "passed":
				r.Outcome = "pass"
			case "skipped":
				r.Outcome = "skip"
			case "pending":
				r.Outcome = "pending"
			default: // failed, panicked, timedout, interrupted, aborted
				r.Outcome = "fail"
				if s.State != "failed" {
					r.Message = s.State + ": " + r.Message
				}
			}
			out = append(out, r)
		}
	}
	sortResults(out)
	return out, nil
}

func sortResults(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Name < b.Name
	})
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func baseName(path string) string { return path[strings.LastIndex(path, "/")+1:] }
