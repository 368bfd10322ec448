package known

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       int    // entries, when no error
		err        string // part of the error
	}{
		{"comments and blank lines", "# a comment\n\ninstall.feature\tInstall\t*\tskip\tno network\n", 1, ""},
		{"one case on two profiles", "ha.feature\tHA\tfake\tskip\tone node\nha.feature\tHA\treal\tdiffers\tone Deployment\n", 2, ""},
		{"name ending in a space", "Subscription\tSubscription does it \tfake\tfails\tnot triaged\n", 1, ""},
		{"too few columns", "install.feature\tInstall\tskip\tno network\n", 0, "x.tsv:1: want 5 tab-separated columns"},
		{"bad kind", "# c\ninstall.feature\tInstall\t*\tbroken\tno network\n", 0, `x.tsv:2: kind "broken" is not skip, fails, differs or serial`},
		{"missing reason", "install.feature\tInstall\t*\tskip\t\n", 0, "x.tsv:1: no reason given"},
		{"empty profile", "install.feature\tInstall\tfake,\tskip\tno network\n", 0, "x.tsv:1: profiles"},
		{"no group", "\tInstall\t*\tskip\tno network\n", 0, "x.tsv:1: no group"},
		{"duplicate", "a.feature\tA\tfake\tskip\tr\na.feature\tA\tfake\tdiffers\tr\n", 0, "x.tsv:2: a.feature \"A\" is listed for the same profile on line 1"},
		{"duplicate through *", "a.feature\tA\treal\tskip\tr\na.feature\tA\t*\tskip\tr\n", 0, "x.tsv:2:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			list, err := Parse("x.tsv", c.text)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("error: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one with %q", err, c.err)
			case c.err == "" && len(list) != c.want:
				t.Fatalf("%d entries, want %d", len(list), c.want)
			}
		})
	}
}

func TestFind(t *testing.T) {
	list, err := Parse("x.tsv", "ha.feature\tHA\tfake\tskip\tone node\nha.feature\tHA\treal\tdiffers\tone Deployment\nx.feature\tX\t*\tfails\tbroken\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ profile, group, name, kind string }{
		{"fake", "ha.feature", "HA", "skip"},
		{"real", "ha.feature", "HA", "differs"},
		{"other", "ha.feature", "HA", ""},
		{"other", "x.feature", "X", "fails"},
		{"fake", "ha.feature", "X", ""},
		{"fake", "x.feature", "HA", ""},
	} {
		got := ""
		if k := Find(list, c.profile, c.group, c.name); k != nil {
			got = k.Kind
		}
		if got != c.kind {
			t.Errorf("Find(%s, %s, %s) is %q, want %q", c.profile, c.group, c.name, got, c.kind)
		}
	}
}
