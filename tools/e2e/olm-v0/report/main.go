// olm-v0-report judges a run of OLM v0's own e2e suite (a Ginkgo suite) against olm.
//
//	olm-v0-report skip -known KNOWN.tsv
//	olm-v0-report check -known KNOWN.tsv -json REPORT.json -labels A,B,... -out RESULTS.tsv [-table TABLE.md] [-partial]
//
// `skip` prints a regular expression for --ginkgo.skip matching every spec KNOWN.tsv lists as
// skip, so that they are not run. `check` reduces Ginkgo's JSON report to one line per spec of the
// chosen containers (its top-level Label): container, spec, pass, fail or skip. It fails when a
// spec failed that KNOWN.tsv does not list as failing (fails or differs), when a listed failure
// passed (the list is stale), or when a spec was left out with no reason (neither listed as skip
// nor skipped by the suite itself, whose message is kept). -partial (a run narrowed by focus) only
// checks the specs that ran. -table writes the counts per container as a Markdown table.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Known is one line of KNOWN.tsv: a spec olm does not pass, and why.
type Known struct {
	Spec   string // the full spec text: containers and leaf, joined by spaces, as Ginkgo matches it
	Kind   string // skip (not run here), fails (olm lacks or breaks it), differs (olm differs on purpose)
	Reason string
}

func readKnown(path string) (map[string]Known, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]Known{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cols := strings.Split(text, "\t")
		if len(cols) != 3 {
			return nil, fmt.Errorf("%s:%d: want 3 tab-separated columns (spec, kind, reason), got %d", path, line, len(cols))
		}
		k := Known{Spec: cols[0], Kind: cols[1], Reason: cols[2]}
		switch k.Kind {
		case "skip", "fails", "differs":
		default:
			return nil, fmt.Errorf("%s:%d: kind %q is not skip, fails or differs", path, line, k.Kind)
		}
		if k.Reason == "" {
			return nil, fmt.Errorf("%s:%d: no reason given", path, line)
		}
		if _, dup := out[k.Spec]; dup {
			return nil, fmt.Errorf("%s:%d: %q is listed twice", path, line, k.Spec)
		}
		out[k.Spec] = k
	}
	return out, sc.Err()
}

// The parts of Ginkgo's JSON report (types.Report) that are read.
type ginkgoReport struct {
	SpecReports []struct {
		ContainerHierarchyTexts  []string
		ContainerHierarchyLabels [][]string
		LeafNodeType             string
		LeafNodeText             string
		LeafNodeLabels           []string
		State                    string
		RunTime                  int64 // nanoseconds
		Failure                  *struct {
			Message  string
			Location struct {
				FileName   string
				LineNumber int
			}
		}
	}
}

// Result is one spec of one run.
type Result struct {
	Container string // the top-level container's first label, e.g. Subscription
	Spec      string
	Outcome   string // pass, fail, skip, pending
	Seconds   float64
	Message   string // why it failed or was skipped, for the log only
}

func readRun(path string) ([]Result, error) {
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
				Spec:    strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " "),
				Seconds: float64(s.RunTime) / 1e9,
			}
			if len(s.ContainerHierarchyLabels) > 0 && len(s.ContainerHierarchyLabels[0]) > 0 {
				r.Container = s.ContainerHierarchyLabels[0][0]
			}
			if s.Failure != nil {
				r.Message = fmt.Sprintf("%s (%s:%d)", firstLine(s.Failure.Message),
					s.Failure.Location.FileName[strings.LastIndex(s.Failure.Location.FileName, "/")+1:], s.Failure.Location.LineNumber)
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
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Container != out[j].Container {
			return out[i].Container < out[j].Container
		}
		return out[i].Spec < out[j].Spec
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

func skip(args []string) error {
	fs := flag.NewFlagSet("skip", flag.ExitOnError)
	knownPath := fs.String("known", "", "KNOWN.tsv")
	_ = fs.Parse(args)
	list, err := readKnown(*knownPath)
	if err != nil {
		return err
	}
	var alts []string
	for spec, k := range list {
		if k.Kind == "skip" {
			alts = append(alts, regexp.QuoteMeta(spec))
		}
	}
	if len(alts) == 0 {
		return nil
	}
	sort.Strings(alts)
	fmt.Printf("^(%s)$\n", strings.Join(alts, "|"))
	return nil
}

type counts struct{ pass, fail, skip, listedFail int }

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	knownPath := fs.String("known", "", "KNOWN.tsv")
	run := fs.String("json", "", "the run's Ginkgo JSON report")
	labels := fs.String("labels", "", "comma-separated top-level labels (containers) the run covers")
	out := fs.String("out", "", "results TSV to write")
	table := fs.String("table", "", "Markdown table of counts per container to write")
	partial := fs.Bool("partial", false, "the run was narrowed: judge only the specs that ran")
	_ = fs.Parse(args)
	list, err := readKnown(*knownPath)
	if err != nil {
		return err
	}
	results, err := readRun(*run)
	if err != nil {
		return err
	}
	scope := map[string]bool{}
	for _, l := range strings.Split(*labels, ",") {
		if l = strings.TrimSpace(l); l != "" {
			scope[l] = true
		}
	}
	var b strings.Builder
	b.WriteString("# container\tspec\toutcome (written by tools/e2e/olm-v0.sh)\n")
	var problems []string
	per := map[string]*counts{}
	seen := map[string]bool{}
	for _, r := range results {
		if !scope[r.Container] || r.Outcome == "pending" {
			continue
		}
		k, listed := list[r.Spec]
		seen[r.Spec] = true
		if *partial && r.Outcome == "skip" && r.Message == "" && !(listed && k.Kind == "skip") {
			continue // left out by the focus
		}
		c := per[r.Container]
		if c == nil {
			c = &counts{}
			per[r.Container] = c
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\n", r.Container, r.Spec, r.Outcome)
		at := fmt.Sprintf("[%s] %q", r.Container, r.Spec)
		failing := listed && (k.Kind == "fails" || k.Kind == "differs")
		switch r.Outcome {
		case "pass":
			c.pass++
			if listed {
				problems = append(problems, fmt.Sprintf("%s passed, but is listed as %s (%s): take it off the list", at, k.Kind, k.Reason))
			}
		case "fail":
			c.fail++
			if failing {
				c.listedFail++
				fmt.Printf("listed (%s): %s: %s\n", k.Kind, at, r.Message)
			} else {
				problems = append(problems, fmt.Sprintf("%s failed after %.0f s: %s", at, r.Seconds, r.Message))
			}
		case "skip":
			c.skip++
			switch {
			case listed && k.Kind == "skip":
			case r.Message != "":
				fmt.Printf("skipped by the suite: %s: %s\n", at, r.Message)
			default:
				problems = append(problems, fmt.Sprintf("%s was not run and no reason is listed", at))
			}
		}
	}
	if !*partial {
		for spec, k := range list {
			if !seen[spec] {
				problems = append(problems, fmt.Sprintf("KNOWN.tsv lists %q (%s), which the suite does not hold", spec, k.Kind))
			}
		}
	}
	if len(per) == 0 {
		return fmt.Errorf("%s holds no spec of %s", *run, *labels)
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Strings(names)
	var t strings.Builder
	t.WriteString("| container (label) | specs | pass | fail | skip |\n|---|---:|---:|---:|---:|\n")
	var all counts
	for _, n := range names {
		c := per[n]
		fmt.Fprintf(&t, "| %s | %d | %d | %d | %d |\n", n, c.pass+c.fail+c.skip, c.pass, c.fail, c.skip)
		all.pass += c.pass
		all.fail += c.fail
		all.skip += c.skip
		all.listedFail += c.listedFail
	}
	fmt.Fprintf(&t, "| **all** | %d | %d | %d | %d |\n", all.pass+all.fail+all.skip, all.pass, all.fail, all.skip)
	fmt.Print(t.String())
	if *table != "" {
		if err := os.WriteFile(*table, []byte(t.String()), 0o644); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%d unexpected results:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: olm-v0-report skip|check [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "skip":
		err = skip(os.Args[2:])
	case "check":
		err = check(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
