// Command render writes the table of outcomes of operator-controller's own registry+v1 renderer
// for every bundle directory under -bundles, in every install mode (and with and without a
// deploymentConfig). olm-bundle's tests read the table to check `olm bundle render` against the
// real thing without needing Go.
//
// The bundle goes through the same path a ClusterExtension takes: RegistryV1ManifestProvider with
// webhook, Single/OwnNamespace and deploymentConfig support on and cert-manager as certificate
// provider, the inline configuration validated against the bundle's schema. Errors are printed as
// a ClusterExtension condition shows them (without controller-runtime's "terminal error: " prefix,
// newlines written " | ").
//
// Each rendered object is one line: kind, namespace/name and the first 16 hex digits of the
// SHA-256 of its YAML as sigs.k8s.io/yaml writes it (the bytes `olm bundle render` prints), so a
// difference in any byte of any object shows up as a changed line. Objects are sorted by kind,
// namespace, name (and digest), as upstream's regression generator sorts its files; the
// renderer's own order is generator order and is not part of the comparison.
//
// With -dump DIR the full YAML of every object is also written to DIR/<pkg>/<version>/<case>/,
// named NN_<kind>_<name>.yaml as upstream's regression files are, to look at a difference.
package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ocv1 "github.com/operator-framework/operator-controller/api/v1"
	"github.com/operator-framework/operator-controller/internal/operator-controller/applier"
	"github.com/operator-framework/operator-controller/internal/operator-controller/rukpak/bundle/source"
	"github.com/operator-framework/operator-controller/internal/operator-controller/rukpak/render/certproviders"
	"github.com/operator-framework/operator-controller/internal/operator-controller/rukpak/render/registryv1"
	errorutil "github.com/operator-framework/operator-controller/internal/shared/util/error"
)

// installNamespace is the ClusterExtension's spec.namespace in every case.
const installNamespace = "operators"

// deploymentConfig touches every field upstream's deploymentConfig supports on every Deployment.
const deploymentConfig = `{"nodeSelector":{"kubernetes.io/os":"linux"},` +
	`"tolerations":[{"key":"some/key","operator":"Equal","effect":"NoSchedule"},{"key":"other/key","operator":"Exists","effect":"NoExecute","tolerationSeconds":120}],` +
	`"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"512Mi"}},` +
	`"env":[{"name":"LOG_LEVEL","value":"debug"}],"envFrom":[{"configMapRef":{"name":"extra-env"}}],` +
	`"volumes":[{"name":"extra","emptyDir":{}}],"volumeMounts":[{"name":"extra","mountPath":"/extra"}],` +
	`"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64","arm64"]}]}]}}},` +
	`"annotations":{"example.com/owner":"team-a"}}`

type renderCase struct {
	name   string
	config string // inline configuration; "" means none
}

// casesFor lists the cases of one bundle: no configuration, the install namespace as watch
// namespace, another watch namespace (each whether or not the bundle supports that mode, so the
// refusals are checked too), a deploymentConfig in the bundle's preferred mode, and two watch
// namespaces that are not namespace names.
func casesFor(csv *v1alpha1.ClusterServiceVersion) []renderCase {
	supported := map[v1alpha1.InstallModeType]bool{}
	for _, m := range csv.Spec.InstallModes {
		if m.Supported {
			supported[m.Type] = true
		}
	}
	dc := `{"deploymentConfig":` + deploymentConfig + `}`
	switch {
	case supported[v1alpha1.InstallModeTypeAllNamespaces]:
	case supported[v1alpha1.InstallModeTypeOwnNamespace]:
		dc = `{"watchNamespace":"` + installNamespace + `","deploymentConfig":` + deploymentConfig + `}`
	case supported[v1alpha1.InstallModeTypeSingleNamespace]:
		dc = `{"watchNamespace":"watched","deploymentConfig":` + deploymentConfig + `}`
	}
	return []renderCase{
		{name: "no-config"},
		{name: "own-namespace", config: `{"watchNamespace":"` + installNamespace + `"}`},
		{name: "single-namespace", config: `{"watchNamespace":"watched"}`},
		{name: "deployment-config", config: dc},
		// Watch namespaces no namespace can have: every check that fails is reported.
		{name: "invalid-namespace", config: `{"watchNamespace":"Not_A-Namespace-"}`},
		{name: "empty-namespace", config: `{"watchNamespace":""}`},
	}
}

type line struct {
	kind, namespace, name, digest string
	yaml                          []byte
}

func renderOne(dir string, c renderCase) ([]line, error) {
	provider := applier.RegistryV1ManifestProvider{
		BundleRenderer:              registryv1.Renderer,
		CertificateProvider:         certproviders.CertManagerCertificateProvider{},
		IsWebhookSupportEnabled:     true,
		IsSingleOwnNamespaceEnabled: true,
		IsDeploymentConfigEnabled:   true,
	}
	ext := &ocv1.ClusterExtension{}
	ext.Name = "oracle"
	ext.Spec.Namespace = installNamespace
	if c.config != "" {
		ext.Spec.Config = &ocv1.ClusterExtensionConfig{
			ConfigType: ocv1.ClusterExtensionConfigTypeInline,
			Inline:     &apiextensionsv1.JSON{Raw: []byte(c.config)},
		}
	}
	objs, err := provider.Get(os.DirFS(dir), ext)
	if err != nil {
		return nil, errorutil.UnwrapTerminal(err)
	}
	out := make([]line, 0, len(objs))
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("writing %s %s as YAML: %w", kindOf(o), o.GetName(), err)
		}
		sum := sha256.Sum256(y)
		out = append(out, line{kindOf(o), o.GetNamespace(), o.GetName(), hex.EncodeToString(sum[:8]), y})
	}
	slices.SortFunc(out, func(a, b line) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.namespace, b.namespace),
			cmp.Compare(a.name, b.name), cmp.Compare(a.digest, b.digest))
	})
	return out, nil
}

func kindOf(o client.Object) string { return o.GetObjectKind().GroupVersionKind().Kind }

func main() {
	bundles := flag.String("bundles", "", "folder of <package>/<version>/ bundle directories")
	dump := flag.String("dump", "", "also write every rendered object's YAML under this folder")
	flag.Parse()
	if *bundles == "" {
		fmt.Fprintln(os.Stderr, "usage: render -bundles DIR [-dump DIR]")
		os.Exit(2)
	}
	dirs, err := filepath.Glob(filepath.Join(*bundles, "*", "*", "manifests"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	slices.Sort(dirs)
	var b strings.Builder
	for _, m := range dirs {
		dir := filepath.Dir(m)
		id := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		rv1, err := source.FromFS(os.DirFS(dir)).GetBundle()
		if err != nil {
			fmt.Fprintf(&b, "%s: parse error: %s\n", id, oneLine(err))
			continue
		}
		for _, c := range casesFor(&rv1.CSV) {
			cfg := c.config
			if cfg == "" {
				cfg = "-"
			}
			fmt.Fprintf(&b, "%s %s %s: ", id, c.name, cfg)
			objs, err := renderOne(dir, c)
			if err != nil {
				fmt.Fprintf(&b, "error: %s\n", oneLine(err))
				continue
			}
			fmt.Fprintf(&b, "ok, %d objects\n", len(objs))
			for i, o := range objs {
				ref := o.name
				if o.namespace != "" {
					ref = o.namespace + "/" + o.name
				}
				fmt.Fprintf(&b, "  %s %s %s\n", o.kind, ref, o.digest)
				if *dump != "" {
					p := filepath.Join(*dump, id, c.name, fmt.Sprintf("%02d_%s_%s.yaml", i, strings.ToLower(o.kind), o.name))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
						err = os.WriteFile(p, o.yaml, 0o644)
					}
					if err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
				}
			}
		}
	}
	os.Stdout.WriteString(b.String())
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " | ") }
