package main

import (
	"encoding/json"
	"olm.local/e2e/judge/known"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A case of a run: its outcome, and the message Ginkgo gives a skip or failure.
type spec struct {
	group, name, outcome, message string
	line                          int
}

func cucumberRun(t *testing.T, specs ...spec) []byte {
	type result struct {
		Status string `json:"status"`
		Error  string `json:"error_message,omitempty"`
	}
	type step struct {
		Keyword string `json:"keyword"`
		Name    string `json:"name"`
		Result  result `json:"result"`
	}
	type element struct {
		Name  string `json:"name"`
		Line  int    `json:"line"`
		Type  string `json:"type"`
		Steps []step `json:"steps"`
	}
	type feature struct {
		URI      string    `json:"uri"`
		Elements []element `json:"elements"`
	}
	var features []feature
	for _, s := range specs {
		steps := map[string][]step{
			"pass": {{"Given ", "a catalog", result{Status: "passed"}}},
			"fail": {{"Given ", "a catalog", result{Status: "passed"}}, {"Then ", "it installs", result{"failed", s.message + "\nmore"}}},
			"skip": {{"Given ", "a catalog", result{Status: "skipped"}}},
		}[s.outcome]
		features = append(features, feature{"features/" + s.group, []element{{s.name, s.line, "scenario", steps}}})
	}
	text, err := json.Marshal(features)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func ginkgoRun(t *testing.T, specs ...spec) []byte {
	type location struct {
		FileName   string
		LineNumber int
	}
	type failure struct {
		Message  string
		Location location
	}
	type specReport struct {
		ContainerHierarchyTexts  []string
		ContainerHierarchyLabels [][]string
		LeafNodeType             string
		LeafNodeText             string
		LeafNodeLocation         location
		State                    string
		RunTime                  int64
		Failure                  *failure `json:",omitempty"`
	}
	var reports []specReport
	for _, s := range specs {
		container, leaf, _ := strings.Cut(s.name, " ")
		r := specReport{
			ContainerHierarchyTexts:  []string{container},
			ContainerHierarchyLabels: [][]string{{s.group}},
			LeafNodeType:             "It",
			LeafNodeText:             leaf,
			LeafNodeLocation:         location{"/src/test/e2e/x_test.go", s.line},
			State:                    map[string]string{"pass": "passed", "fail": "failed", "skip": "skipped"}[s.outcome],
			RunTime:                  3e9,
		}
		if s.message != "" {
			r.Failure = &failure{s.message + "\nmore", location{"/src/test/e2e/x_test.go", s.line + 5}}
		}
		reports = append(reports, r)
	}
	text, err := json.Marshal([]map[string]any{{"SpecReports": reports}})
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// writer writes files named in dir and gives their paths.
func writer(t *testing.T, dir string) func(name string, text []byte) string {
	return func(name string, text []byte) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// judge runs check in a temporary folder and gives its error ("" when none) and the results TSV.
func judge(t *testing.T, knownText, format string, run []byte, flags ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	write := writer(t, dir)
	out := filepath.Join(dir, "results.tsv")
	args := append([]string{"-known", write("KNOWN.tsv", []byte(knownText)), "-profile", "fake",
		"-" + format, write("run.json", run), "-out", out}, flags...)
	msg := ""
	if err := check(args); err != nil {
		msg = err.Error()
	}
	results, _ := os.ReadFile(out)
	return msg, string(results)
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name    string
		known   string // kind and profiles of the case's line in KNOWN.tsv, or ""
		outcome string
		message string // Ginkgo's
		flags   []string
		want    string // part of check's error, or "" for none
	}{
		{name: "unlisted pass", outcome: "pass"},
		{name: "unlisted fail", outcome: "fail", message: "boom", want: "1 unexpected results:\n  "},
		{name: "listed pass", known: "fake\tdiffers", outcome: "pass", want: "passed, but is listed as differs (why): take it off the list"},
		{name: "listed skip that passed", known: "*\tskip", outcome: "pass", want: "take it off the list"},
		{name: "listed difference fails", known: "fake\tdiffers", outcome: "fail", message: "boom"},
		{name: "listed failure fails", known: "*\tfails", outcome: "fail", message: "boom"},
		{name: "listed for another profile", known: "real\tdiffers", outcome: "fail", message: "boom", want: "failed"},
		{name: "listed skip that failed", known: "fake\tskip", outcome: "fail", message: "boom", want: "failed"},
		{name: "unlisted skip", outcome: "skip", want: "was skipped with no reason listed"},
		{name: "listed skip", known: "fake\tskip", outcome: "skip"},
		{name: "difference skipped by the runner", known: "fake\tdiffers", outcome: "skip", want: "was skipped with no reason listed"},
		{name: "difference skipped on purpose", known: "fake\tdiffers", outcome: "skip", flags: []string{"-differs-skipped"}},
		{name: "unlisted skip, partial", outcome: "skip", flags: []string{"-partial"}},
	} {
		for _, format := range []string{"cucumber", "ginkgo"} {
			t.Run(format+"/"+c.name, func(t *testing.T) {
				group, name := "install.feature", "Install latest available version"
				run := cucumberRun(t, spec{group, name, c.outcome, c.message, 11}, spec{group, "Other", "pass", "", 40})
				if format == "ginkgo" {
					group, name = "Subscription", "Subscription creation if not installed"
					run = ginkgoRun(t, spec{group, name, c.outcome, c.message, 11}, spec{group, "Subscription other", "pass", "", 40})
				}
				knownText := "# header\n"
				if c.known != "" {
					profiles, kind, _ := strings.Cut(c.known, "\t")
					knownText += strings.Join([]string{group, name, profiles, kind, "why"}, "\t") + "\n"
				}
				got, results := judge(t, knownText, format, run, c.flags...)
				if c.want == "" && got != "" {
					t.Fatalf("error: %s", got)
				}
				if !strings.Contains(got, c.want) {
					t.Fatalf("error %q, want one with %q", got, c.want)
				}
				row := group + "\t11\t" + name + "\t" + c.outcome + "\n"
				if strings.HasSuffix(c.name, "partial") {
					row = "" // left out by the focus
				}
				if !strings.Contains(results, row) || !strings.HasPrefix(results, "# ") {
					t.Fatalf("results:\n%s\nwant the row %q", results, row)
				}
			})
		}
	}
}

func TestCheckGinkgo(t *testing.T) {
	run := ginkgoRun(t,
		spec{"Subscription", "Subscription creation if not installed", "pass", "", 187},
		spec{"Subscription", "Subscription skips itself", "skip", "needs OpenShift", 300},
		spec{"Webhooks", "Webhooks are called", "fail", "boom", 50},
	)
	gone := "Subscription\tSubscription was removed\tfake\tfails\twhy\n"
	other := "Webhooks\tWebhooks were removed\tfake\tfails\twhy\n"
	for _, c := range []struct {
		name, known string
		flags       []string
		want        string
	}{
		{"skipped by the suite, out of scope", "", []string{"-groups", "Subscription"}, ""},
		{"out of scope failure is judged without -groups", "", nil, `[Webhooks] "Webhooks are called" failed after 3 s: boom (x_test.go:55)`},
		{"listed, not held", gone, []string{"-groups", "Subscription"}, `lists [Subscription] "Subscription was removed" (fails), which the suite does not hold`},
		{"listed, not held, partial", gone, []string{"-groups", "Subscription", "-partial"}, ""},
		{"listed, not held, in another group", other, []string{"-groups", "Subscription"}, ""},
		{"no spec of the groups", "", []string{"-groups", "Nothing"}, "holds no spec of Nothing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, results := judge(t, "# header\n"+c.known, "ginkgo", run, c.flags...)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("error %q, want %q", got, c.want)
			}
			if c.want == "" {
				want := "# container\tline\tspec\toutcome (written by tools/e2e/olm-v0.sh)\n" +
					"Subscription\t187\tSubscription creation if not installed\tpass\n" +
					"Subscription\t300\tSubscription skips itself\tskip\n"
				if results != want {
					t.Fatalf("results:\n%s\nwant:\n%s", results, want)
				}
			}
		})
	}
}

// Ginkgo matches --skip against "<suite description> <spec full text>"
// (ginkgo/v2/internal/focus.go); the expression skips exactly the listed specs.
func TestSkipExpressionMatchesWholeSpecTexts(t *testing.T) {
	re := regexp.MustCompile(skipExpression([]string{regexp.QuoteMeta("A b (c)"), regexp.QuoteMeta("D e")}))
	for text, want := range map[string]bool{
		"End-to-end A b (c)":   true,
		"End-to-end D e":       true,
		"End-to-end A b (c) x": false,
		"End-to-end XA b (c)":  false,
		"End-to-end D e f":     false,
	} {
		if got := re.MatchString(text); got != want {
			t.Errorf("%q: matched %v, want %v", text, got, want)
		}
	}
}

// A serial spec is left out of the parallel run and run alone in a second: its outcome there is
// what counts, it must pass, and one that ran in neither is a problem.
func TestCheckSerial(t *testing.T) {
	name := "Subscription racy"
	knownText := "# header\nSubscription\t" + name + "\tfake\tserial\tanother spec deletes its CRD\n"
	first := ginkgoRun(t,
		spec{"Subscription", "Subscription creation", "pass", "", 10},
		spec{"Subscription", name, "skip", "", 20},
	)
	for _, c := range []struct {
		name    string
		second  string // the serial spec's outcome in the second run, or "" for no second run
		want    string
		outcome string
	}{
		{"passes alone", "pass", "", "pass"},
		{"fails alone", "fail", "failed", "fail"},
		{"never run alone", "", "did not run alone", "skip"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write := writer(t, dir)
			out := filepath.Join(dir, "results.tsv")
			args := []string{"-known", write("KNOWN.tsv", []byte(knownText)), "-profile", "fake",
				"-ginkgo", write("first.json", first), "-out", out}
			if c.second != "" {
				second := ginkgoRun(t,
					spec{"Subscription", "Subscription creation", "skip", "", 10},
					spec{"Subscription", name, c.second, "boom", 20},
				)
				args = append(args, "-ginkgo", write("second.json", second))
			}
			got := ""
			if err := check(args); err != nil {
				got = err.Error()
			}
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("error %q, want %q", got, c.want)
			}
			results, _ := os.ReadFile(out)
			if !strings.Contains(string(results), name+"\t"+c.outcome+"\n") ||
				!strings.Contains(string(results), "Subscription creation\tpass\n") {
				t.Fatalf("results:\n%s", results)
			}
		})
	}
}

func TestSkipAlternativesLeaveSerialSpecsToTheSecondRun(t *testing.T) {
	list := []known.Known{
		{Group: "G", Name: "a skip", Profiles: []string{"*"}, Kind: known.Skip},
		{Group: "G", Name: "b serial", Profiles: []string{"fake"}, Kind: known.Serial},
		{Group: "G", Name: "c fails", Profiles: []string{"*"}, Kind: known.Fails},
		{Group: "G", Name: "d serial", Profiles: []string{"real"}, Kind: known.Serial},
	}
	if got := strings.Join(skipAlternatives(list, "fake", []string{"skip", "serial"}), "|"); got != "a skip|b serial" {
		t.Errorf("parallel run skips %q", got)
	}
	if got := strings.Join(skipAlternatives(list, "fake", []string{"serial"}), "|"); got != "b serial" {
		t.Errorf("second run focuses %q", got)
	}
}

// A spec that failed beside others and not listed as failing is retried alone; the retry's
// outcome is what counts, and a listed failure is never retried.
func TestRetryAlone(t *testing.T) {
	knownText := "# header\nSubscription\tSubscription listed\tfake\tdiffers\tolm differs\n"
	shared := ginkgoRun(t,
		spec{"Subscription", "Subscription creation", "pass", "", 10},
		spec{"Subscription", "Subscription broken by a neighbour", "fail", "CRD gone", 20},
		spec{"Subscription", "Subscription broken (truly)", "fail", "boom", 30},
		spec{"Subscription", "Subscription listed", "fail", "as listed", 40},
	)
	dir := t.TempDir()
	write := writer(t, dir)
	knownPath := write("KNOWN.tsv", []byte(knownText))
	list, err := known.Read(knownPath)
	if err != nil {
		t.Fatal(err)
	}
	results, err := readGinkgo(write("shared.json", shared))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(unexpectedFailures(list, "fake", results), "|")
	if want := `Subscription broken \(truly\)|Subscription broken by a neighbour`; got != want {
		t.Fatalf("retried %q, want %q", got, want)
	}
	alone := ginkgoRun(t,
		spec{"Subscription", "Subscription creation", "skip", "", 10},
		spec{"Subscription", "Subscription broken by a neighbour", "pass", "", 20},
		spec{"Subscription", "Subscription broken (truly)", "fail", "boom again", 30},
		spec{"Subscription", "Subscription listed", "skip", "", 40},
	)
	out := filepath.Join(dir, "results.tsv")
	err = check([]string{"-known", knownPath, "-profile", "fake", "-ginkgo", write("shared.json", shared),
		"-retried", write("alone.json", alone), "-out", out})
	if err == nil || !strings.Contains(err.Error(), "1 unexpected results") || !strings.Contains(err.Error(), "broken (truly)") {
		t.Fatalf("check: %v", err)
	}
	tsv, _ := os.ReadFile(out)
	for _, line := range []string{"Subscription creation\tpass\n", "broken by a neighbour\tpass\n", "broken (truly)\tfail\n", "Subscription listed\tfail\n"} {
		if !strings.Contains(string(tsv), line) {
			t.Errorf("results lack %q:\n%s", line, tsv)
		}
	}
}
