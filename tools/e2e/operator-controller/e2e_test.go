// The runner of operator-controller's e2e suite: upstream's step definitions, hooks and
// feature files, run by Godog with the options given on the command line (`--godog.*`), the
// feature paths as arguments. Upstream's own runner adds a summary for its CI that needs
// cluster monitoring, which olm's environments do not run.
//
// One hook is olm's: with E2E_KNOWN (KNOWN.tsv) and E2E_PROFILE set, a scenario listed there
// as `skip` for the profile is skipped first, with its reason logged, as upstream's own hook
// skips a scenario whose feature gate is off; with E2E_SKIP_DIFFERS=1, so is one listed as
// failing (fails or differs), which otherwise runs until a step times out.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cucumber/godog"
	"github.com/spf13/pflag"

	"github.com/operator-framework/operator-controller/test/e2e/steps"

	"olm.local/e2e/judge/known"
)

func TestMain(m *testing.M) {
	opts := godog.Options{Format: "pretty", Concurrency: 1, NoColors: true, Strict: true}
	godog.BindCommandLineFlags("godog.", &opts)
	pflag.Parse()
	opts.Paths = pflag.Args()
	var list []known.Known
	if path := os.Getenv("E2E_KNOWN"); path != "" {
		var err error
		if list, err = known.Read(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	profile := os.Getenv("E2E_PROFILE")
	skipDiffers := os.Getenv("E2E_SKIP_DIFFERS") == "1"
	os.Exit(godog.TestSuite{
		TestSuiteInitializer: func(tc *godog.TestSuiteContext) { tc.BeforeSuite(steps.BeforeSuite) },
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			sc.Before(func(ctx context.Context, s *godog.Scenario) (context.Context, error) {
				k := known.Find(list, profile, filepath.Base(s.Uri), s.Name)
				switch {
				case k != nil && k.Kind == "skip":
					fmt.Printf("skipping %q on the %s node: %s\n", s.Name, profile, k.Reason)
					return ctx, godog.ErrSkip
				case k != nil && k.Failing() && skipDiffers:
					fmt.Printf("skipping %q, a listed difference: %s\n", s.Name, k.Reason)
					return ctx, godog.ErrSkip
				}
				return ctx, nil
			})
			steps.RegisterSteps(sc)
			steps.RegisterDemoSteps(sc)
			steps.RegisterHooks(sc)
		},
		Options: &opts,
	}.Run())
}
