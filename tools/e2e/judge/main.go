// e2e-judge judges runs of upstream's e2e suites against olm: operator-controller's Godog suite
// (its cucumber JSON) and OLM v0's Ginkgo suite (its JSON report), each by its KNOWN.tsv (see
// package known).
//
//	e2e-judge check -known KNOWN.tsv -profile P (-cucumber RUN.json | -ginkgo REPORT.json [-ginkgo REPORT2.json]) -out RESULTS.tsv
//	          [-differs-skipped] [-groups A,B] [-partial] [-table COUNTS.md]
//	e2e-judge table -known KNOWN.tsv -results P=RESULTS.tsv [-results Q=...]
//	e2e-judge skip -known KNOWN.tsv -profile P [-kinds skip,serial]
//	e2e-judge retry -known KNOWN.tsv -profile P -ginkgo REPORT.json [-ginkgo REPORT2.json]
//
// `check` reduces the run to one line per scenario or spec (group, line, name, and pass, fail
// or skip) and fails when one failed that is not listed as failing (fails or differs), when a
// listed one passed (the list is stale), or when one was skipped with no reason: neither
// listed as skip, nor a listed failure the runner skipped on purpose (-differs-skipped), nor
// skipped by the suite itself with a message (Ginkgo's, which is logged). -groups judges only
// the given groups (Ginkgo's top-level labels); -partial (a run narrowed by focus) judges only
// what ran, and otherwise a Ginkgo run must hold every spec KNOWN.tsv lists for the profile in
// those groups. -table writes the counts per group as a Markdown table (printed for Ginkgo).
//
// `table` turns the committed results of every profile into the docs' Markdown table, a row
// per scenario. `skip` prints a regular expression for Ginkgo's --skip matching every spec
// listed as skip or serial for the profile, so that the parallel run leaves them out; with
// -kinds serial, one matching the serial ones alone, for the --focus of a second run in one
// process.
// `check` takes that second run's report after the first's: a spec skipped in one run and run
// in the other counts as run, and a serial spec must pass.
//
// `retry` prints a --focus expression matching every spec of those runs that failed without
// being listed as failing: upstream runs each Ginkgo process against a cluster of its own, and
// when processes share one, one spec's teardown can break another's (upstream's
// GarbageCollectCRDs deletes every CRD olm installed alongside a CSV, anyone's). Such a spec is
// run again alone, and `check -retried REPORT` takes that run's outcome in place of the
// shared run's failure; the specs retried are printed, and one that fails alone still fails.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"olm.local/e2e/judge/known"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: e2e-judge check|table|skip|retry [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "check":
		err = check(os.Args[2:])
	case "table":
		err = table(os.Args[2:])
	case "skip":
		err = skip(os.Args[2:])
	case "retry":
		err = retry(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want check, table, skip or retry)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e-judge:", err)
		os.Exit(1)
	}
}

type counts struct{ pass, fail, skip int }

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	knownPath := fs.String("known", "", "KNOWN.tsv")
	profile := fs.String("profile", "", "profile (node) the run is of")
	cucumber := fs.String("cucumber", "", "the run's cucumber JSON (Godog)")
	var ginkgoRuns runList
	fs.Var(&ginkgoRuns, "ginkgo", "the run's JSON report (Ginkgo); again for a second run of the same suite")
	retried := fs.String("retried", "", "the JSON report of the run that retried alone what `retry` printed (Ginkgo)")
	out := fs.String("out", "", "results TSV to write")
	differsSkipped := fs.Bool("differs-skipped", false, "the runner skipped the listed failures (E2E_SKIP_DIFFERS=1)")
	groups := fs.String("groups", "", "comma-separated groups (Ginkgo's top-level labels) to judge; default all")
	partial := fs.Bool("partial", false, "the run was narrowed: judge only what ran")
	tablePath := fs.String("table", "", "Markdown table of counts per group to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *knownPath == "" || *profile == "" || *out == "" || (*cucumber == "") == (len(ginkgoRuns) == 0) || fs.NArg() > 0 {
		return fmt.Errorf("check: want -known, -profile, -out and one of -cucumber or -ginkgo")
	}
	list, err := known.Read(*knownPath)
	if err != nil {
		return err
	}
	var results []Result
	s, run := godogSuite, *cucumber
	if len(ginkgoRuns) > 0 {
		s, run = ginkgoSuite, strings.Join(ginkgoRuns, " and ")
		for _, path := range ginkgoRuns {
			var more []Result
			if more, err = readGinkgo(path); err != nil {
				break
			}
			results = mergeRuns(results, more)
		}
	} else {
		results, err = readCucumber(run)
	}
	if err == nil && *retried != "" {
		var again []Result
		if again, err = readGinkgo(*retried); err == nil {
			var replaced []string
			results, replaced = retriedAlone(results, again)
			for _, r := range replaced {
				fmt.Printf("retried alone after failing beside other specs: %s\n", r)
			}
		}
	}
	if err != nil {
		return err
	}
	scope := map[string]bool{}
	for _, g := range strings.Split(*groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			scope[g] = true
		}
	}

	var b strings.Builder
	b.WriteString(s.header + "\n")
	var problems []string
	per := map[string]*counts{}
	seen := map[[2]string]bool{}
	for _, r := range results {
		if (len(scope) > 0 && !scope[r.Group]) || r.Outcome == "pending" {
			continue
		}
		seen[[2]string{r.Group, r.Name}] = true
		k := known.Find(list, *profile, r.Group, r.Name)
		if *partial && r.Outcome == "skip" && r.Message == "" && (k == nil || k.Kind != known.Skip) {
			continue // left out by the focus
		}
		c := per[r.Group]
		if c == nil {
			c = &counts{}
			per[r.Group] = c
		}
		fmt.Fprintf(&b, "%s\t%d\t%s\t%s\n", r.Group, r.Line, r.Name, r.Outcome)
		switch r.Outcome {
		case "pass":
			c.pass++
			if k != nil && k.Kind != known.Serial {
				problems = append(problems, fmt.Sprintf("%s passed, but is listed as %s (%s): take it off the list", r.At, k.Kind, k.Reason))
			}
		case "fail":
			c.fail++
			switch {
			case k != nil && k.Failing():
				fmt.Printf("listed (%s): %s: %s\n", k.Kind, r.At, r.Message)
			case r.Seconds > 0:
				problems = append(problems, fmt.Sprintf("%s failed after %.0f s: %s", r.At, r.Seconds, r.Message))
			default:
				problems = append(problems, fmt.Sprintf("%s failed: %s", r.At, r.Message))
			}
		case "skip":
			c.skip++
			switch {
			case k != nil && k.Kind == known.Serial:
				problems = append(problems, fmt.Sprintf("%s is listed as serial (%s) but did not run alone: run the suite with its second, one-process pass", r.At, k.Reason))
			case k != nil && k.Kind == known.Skip:
			case k != nil && k.Failing() && *differsSkipped:
			case r.Message != "":
				fmt.Printf("skipped by the suite: %s: %s\n", r.At, r.Message)
			default:
				problems = append(problems, fmt.Sprintf("%s was skipped with no reason listed", r.At))
			}
		}
	}
	if s == ginkgoSuite && !*partial {
		for _, k := range list {
			if k.AppliesTo(*profile) && (len(scope) == 0 || scope[k.Group]) && !seen[[2]string{k.Group, k.Name}] {
				problems = append(problems, fmt.Sprintf("%s:%d lists [%s] %q (%s), which the suite does not hold",
					*knownPath, k.Line, k.Group, k.Name, k.Kind))
			}
		}
	}
	if len(per) == 0 {
		if *groups != "" {
			return fmt.Errorf("%s holds no %s of %s", run, strings.TrimSuffix(s.unit, "s"), *groups)
		}
		return fmt.Errorf("%s holds no %s", run, strings.TrimSuffix(s.unit, "s"))
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
	fmt.Fprintf(&t, "| %s | %s | pass | fail | skip |\n|---|---:|---:|---:|---:|\n", s.group, s.unit)
	var all counts
	for _, n := range names {
		c := per[n]
		fmt.Fprintf(&t, "| %s | %d | %d | %d | %d |\n", n, c.pass+c.fail+c.skip, c.pass, c.fail, c.skip)
		all.pass += c.pass
		all.fail += c.fail
		all.skip += c.skip
	}
	fmt.Fprintf(&t, "| **all** | %d | %d | %d | %d |\n", all.pass+all.fail+all.skip, all.pass, all.fail, all.skip)
	if s == ginkgoSuite {
		fmt.Print(t.String())
	}
	fmt.Printf("%s profile: %d %s, %d passed, %d failed, %d skipped\n", *profile,
		all.pass+all.fail+all.skip, s.unit, all.pass, all.fail, all.skip)
	if *tablePath != "" {
		if err := os.WriteFile(*tablePath, []byte(t.String()), 0o644); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d unexpected results:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

type profileResults struct {
	name    string
	results map[string]Result // by group:line
}

// readResults reads a results TSV that check wrote.
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
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: want group<TAB>line<TAB>name<TAB>outcome", path, i+1)
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: line %q is not a number", path, i+1, f[1])
		}
		out[fmt.Sprintf("%s:%d", f[0], n)] = Result{Group: f[0], Line: n, Name: f[2], Outcome: f[3]}
	}
	return out, nil
}

func table(args []string) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *knownPath == "" || len(profiles) == 0 || fs.NArg() > 0 {
		return fmt.Errorf("table: want -known and at least one -results PROFILE=FILE")
	}
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
		if a.Group != b.Group {
			return a.Group < b.Group
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
	for i := range totals {
		totals[i] = map[string]int{}
	}
	for _, id := range ids {
		r := all[id]
		fmt.Fprintf(&b, "| `%s` %s |", id, strings.ReplaceAll(r.Name, "|", "\\|"))
		var reasons []string
		who := map[string][]string{}
		for i, p := range profiles {
			pr, ok := p.results[id]
			if !ok {
				b.WriteString(" — |")
				continue
			}
			totals[i][pr.Outcome]++
			fmt.Fprintf(&b, " %s |", word[pr.Outcome])
			if k := known.Find(list, p.name, r.Group, r.Name); k != nil && pr.Outcome != "pass" {
				if _, given := who[k.Reason]; !given {
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

func skip(args []string) error {
	fs := flag.NewFlagSet("skip", flag.ContinueOnError)
	knownPath := fs.String("known", "", "KNOWN.tsv")
	profile := fs.String("profile", "", "profile (node) of the run")
	kinds := fs.String("kinds", "skip,serial", "the kinds of entry to match: skip,serial for the parallel run's --skip, serial for the second run's --focus, skip for a focused run that runs everything in one go")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *knownPath == "" || *profile == "" || fs.NArg() > 0 {
		return fmt.Errorf("skip: want -known and -profile")
	}
	list, err := known.Read(*knownPath)
	if err != nil {
		return err
	}
	alts := skipAlternatives(list, *profile, strings.Split(*kinds, ","))
	if len(alts) == 0 {
		return nil
	}
	fmt.Println(skipExpression(alts))
	return nil
}

// skipAlternatives are the quoted full texts of the profile's specs listed as one of kinds,
// sorted.
func skipAlternatives(list []known.Known, profile string, kinds []string) []string {
	var alts []string
	given := map[string]bool{}
	for _, k := range list {
		if slices.Contains(kinds, k.Kind) && k.AppliesTo(profile) && !given[k.Name] {
			given[k.Name] = true
			alts = append(alts, regexp.QuoteMeta(k.Name))
		}
	}
	sort.Strings(alts)
	return alts
}

func retry(args []string) error {
	fs := flag.NewFlagSet("retry", flag.ContinueOnError)
	knownPath := fs.String("known", "", "KNOWN.tsv")
	profile := fs.String("profile", "", "profile (node) of the run")
	var ginkgoRuns runList
	fs.Var(&ginkgoRuns, "ginkgo", "the run's JSON report (Ginkgo); again for a second run of the same suite")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *knownPath == "" || *profile == "" || len(ginkgoRuns) == 0 || fs.NArg() > 0 {
		return fmt.Errorf("retry: want -known, -profile and -ginkgo")
	}
	list, err := known.Read(*knownPath)
	if err != nil {
		return err
	}
	var results []Result
	for _, path := range ginkgoRuns {
		more, err := readGinkgo(path)
		if err != nil {
			return err
		}
		results = mergeRuns(results, more)
	}
	alts := unexpectedFailures(list, *profile, results)
	if len(alts) == 0 {
		return nil
	}
	fmt.Println(skipExpression(alts))
	return nil
}

// unexpectedFailures are the quoted full texts of the specs that failed without being listed
// as failing for the profile, sorted.
func unexpectedFailures(list []known.Known, profile string, results []Result) []string {
	var alts []string
	for _, r := range results {
		if r.Outcome != "fail" {
			continue
		}
		if k := known.Find(list, profile, r.Group, r.Name); k != nil && k.Failing() {
			continue
		}
		alts = append(alts, regexp.QuoteMeta(r.Name))
	}
	sort.Strings(alts)
	return slices.Compact(alts)
}

// retriedAlone puts the outcome of each spec the retry run ran in place of that spec's
// failure; it returns how the replaced ones are named, for the log. A spec the retry run did
// not run keeps its outcome.
func retriedAlone(results, again []Result) ([]Result, []string) {
	at := map[[2]string]int{}
	for i, r := range results {
		at[[2]string{r.Group, r.Name}] = i
	}
	var replaced []string
	for _, r := range again {
		i, ok := at[[2]string{r.Group, r.Name}]
		if !ok || r.Outcome == "skip" || r.Outcome == "pending" || results[i].Outcome != "fail" {
			continue
		}
		replaced = append(replaced, fmt.Sprintf("%s: %s", r.At, r.Outcome))
		results[i] = r
	}
	return results, replaced
}

// runList is a flag given once per run.
type runList []string

func (l *runList) String() string { return strings.Join(*l, ",") }

func (l *runList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// mergeRuns adds a later run's results to the earlier ones: a spec the earlier run skipped and
// the later one ran takes the later outcome; one both ran keeps the earlier.
func mergeRuns(earlier, later []Result) []Result {
	at := map[[2]string]int{}
	for i, r := range earlier {
		at[[2]string{r.Group, r.Name}] = i
	}
	for _, r := range later {
		i, ok := at[[2]string{r.Group, r.Name}]
		switch {
		case !ok:
			at[[2]string{r.Group, r.Name}] = len(earlier)
			earlier = append(earlier, r)
		case earlier[i].Outcome == "skip" && r.Outcome != "skip":
			earlier[i] = r
		}
	}
	return earlier
}

// skipExpression is the --skip expression matching each of the quoted full spec texts alts
// whole. Ginkgo matches --focus and --skip against the suite's description, a space and the
// spec's full text, so a whole text is one that follows a space and ends the string.
func skipExpression(alts []string) string {
	return fmt.Sprintf(" (?:%s)$", strings.Join(alts, "|"))
}
