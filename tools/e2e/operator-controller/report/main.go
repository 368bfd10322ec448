// e2e-report checks a run of operator-controller's Godog suite against olm's expectations and
// writes the results table of the docs.
//
//	e2e-report check -known KNOWN.tsv -profile P -cucumber RUN.json -out RESULTS.tsv [-differs-skipped]
//	e2e-report table -known KNOWN.tsv -results P=RESULTS.tsv [-results Q=...]
//
// `check` reduces the run to one line per scenario (feature file and line, name, pass, fail or
// skip) and fails when a scenario failed that is not a listed deliberate difference, when a
// listed difference passed (the list is stale), or when a scenario was skipped with no reason
// listed (with -differs-skipped, the runner skipped the listed differences on purpose). `table` turns the committed results of every profile into the Markdown table.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"olm.local/e2e/operatorcontroller/known"
)

// Result is one scenario of one run.
type Result struct {
	Feature  string // file name, e.g. install.feature
	Line     int
	Scenario string
	Outcome  string // pass, fail or skip
	Error    string // the first failed step and its error, for the log only
}

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
				Status string `json:"status"`
				Error  string `json:"error_message"`
			} `json:"result"`
		} `json:"steps"`
	} `json:"elements"`
}

func readRun(path string) ([]Result, error) {
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
		name := f.URI[strings.LastIndex(f.URI, "/")+1:]
		for _, e := range f.Elements {
			if e.Type != "scenario" {
				continue
			}
			r := Result{Feature: name, Line: e.Line, Scenario: e.Name, Outcome: "skip"}
			for _, s := range e.Steps {
				switch s.Result.Status {
				case "passed":
					if r.Outcome == "skip" {
						r.Outcome = "pass"
					}
				case "skipped":
				default: // failed, undefined, pending, ambiguous
					if r.Outcome != "fail" {
						r.Outcome = "fail"
						r.Error = fmt.Sprintf("%s%s: %s %s", s.Keyword, s.Name, s.Result.Status, firstLine(s.Result.Error))
					}
				}
			}
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Feature != out[j].Feature {
			return out[i].Feature < out[j].Feature
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	knownPath := fs.String("known", "", "KNOWN.tsv")
	profile := fs.String("profile", "", "profile name")
	run := fs.String("cucumber", "", "the run's cucumber JSON")
	out := fs.String("out", "", "results TSV to write")
	differsSkipped := fs.Bool("differs-skipped", false, "the listed differences were skipped (E2E_SKIP_DIFFERS=1)")
	_ = fs.Parse(args)
	list, err := known.Read(*knownPath)
	if err != nil {
		return err
	}
	results, err := readRun(*run)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		return fmt.Errorf("%s holds no scenario", *run)
	}
	var b strings.Builder
	b.WriteString("# feature\tline\tscenario\toutcome (written by tools/e2e/operator-controller.sh)\n")
	var problems []string
	counts := map[string]int{}
	for _, r := range results {
		fmt.Fprintf(&b, "%s\t%d\t%s\t%s\n", r.Feature, r.Line, r.Scenario, r.Outcome)
		counts[r.Outcome]++
		k := known.Find(list, *profile, r.Feature, r.Scenario)
		at := fmt.Sprintf("%s:%d %q", r.Feature, r.Line, r.Scenario)
		switch {
		case r.Outcome == "fail" && (k == nil || k.Kind != "differs"):
			problems = append(problems, fmt.Sprintf("%s failed: %s", at, r.Error))
		case r.Outcome == "fail":
			fmt.Printf("expected difference: %s: %s\n", at, r.Error)
		case r.Outcome == "pass" && k != nil:
			problems = append(problems, fmt.Sprintf("%s passed, but is listed as %s (%s): take it off the list", at, k.Kind, k.Reason))
		case r.Outcome == "skip" && k != nil && k.Kind == "differs" && *differsSkipped:
		case r.Outcome == "skip" && (k == nil || k.Kind != "skip"):
			problems = append(problems, fmt.Sprintf("%s was skipped with no reason listed", at))
		}
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s profile: %d scenarios, %d passed, %d failed, %d skipped\n", *profile, len(results), counts["pass"], counts["fail"], counts["skip"])
	if len(problems) > 0 {
		return fmt.Errorf("%d unexpected results:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

type profileResults struct {
	name    string
	results map[string]Result // by feature:line
}

func readResults(path string) (map[string]Result, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]Result{}
	for i, line := range strings.Split(string(text), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		n, err := strconv.Atoi(f[1])
		if len(f) != 4 || err != nil {
			return nil, fmt.Errorf("%s:%d: want feature<TAB>line<TAB>scenario<TAB>outcome", path, i+1)
		}
		out[fmt.Sprintf("%s:%d", f[0], n)] = Result{Feature: f[0], Line: n, Scenario: f[2], Outcome: f[3]}
	}
	return out, nil
}

func table(args []string) error {
	fs := flag.NewFlagSet("table", flag.ExitOnError)
	knownPath := fs.String("known", "", "KNOWN.tsv")
	var profiles []profileResults
	fs.Func("results", "PROFILE=RESULTS.tsv (repeatable)", func(v string) error {
		name, path, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("want PROFILE=FILE")
		}
		r, err := readResults(path)
		if err != nil {
			return err
		}
		profiles = append(profiles, profileResults{name, r})
		return nil
	})
	_ = fs.Parse(args)
	list, err := known.Read(*knownPath)
	if err != nil {
		return err
	}
	all := map[string]Result{}
	for _, p := range profiles {
		for id, r := range p.results {
			all[id] = r
		}
	}
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := all[ids[i]], all[ids[j]]
		if a.Feature != b.Feature {
			return a.Feature < b.Feature
		}
		return a.Line < b.Line
	})
	var b strings.Builder
	b.WriteString("| scenario |")
	for _, p := range profiles {
		fmt.Fprintf(&b, " %s node |", p.name)
	}
	b.WriteString(" why not passed |\n|---|")
	for range profiles {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	word := map[string]string{"pass": "passes", "fail": "differs", "skip": "not judged"}
	totals := make([]map[string]int, len(profiles))
	for _, id := range ids {
		r := all[id]
		fmt.Fprintf(&b, "| `%s` %s |", id, strings.ReplaceAll(r.Scenario, "|", "\\|"))
		var reasons []string
		who := map[string][]string{}
		for i, p := range profiles {
			if totals[i] == nil {
				totals[i] = map[string]int{}
			}
			pr, ok := p.results[id]
			if !ok {
				b.WriteString(" — |")
				continue
			}
			totals[i][pr.Outcome]++
			fmt.Fprintf(&b, " %s |", word[pr.Outcome])
			if k := known.Find(list, p.name, r.Feature, r.Scenario); k != nil && pr.Outcome != "pass" {
				if !contains(reasons, k.Reason) {
					reasons = append(reasons, k.Reason)
				}
				who[k.Reason] = append(who[k.Reason], p.name)
			}
		}
		// A reason every profile gives is written once; one only some give names them.
		for i, reason := range reasons {
			if len(who[reason]) < len(profiles) && len(profiles) > 1 {
				reasons[i] = strings.Join(who[reason], ", ") + ": " + reason
			}
		}
		fmt.Fprintf(&b, " %s |\n", strings.Join(reasons, "; "))
	}
	b.WriteString("\n")
	for i, p := range profiles {
		fmt.Fprintf(&b, "%s node: %d scenarios, %d pass, %d differ deliberately, %d not judged.\n", p.name,
			len(p.results), totals[i]["pass"], totals[i]["fail"], totals[i]["skip"])
	}
	fmt.Print(b.String())
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: e2e-report check|table ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "check":
		err = check(os.Args[2:])
	case "table":
		err = table(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e-report:", err)
		os.Exit(1)
	}
}
