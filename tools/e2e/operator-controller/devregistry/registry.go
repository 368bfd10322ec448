// Package registry replaces upstream's test/internal/registry: rather than deploying a registry
// in the cluster (with a certificate from cert-manager, whose API olm's environments do not
// serve) and port-forwarding to it, the suite pushes its catalogs and bundles to the registry
// the environment already runs (E2E_REGISTRY, `olm dev status`'s registry), which olm pulls
// from on either node and the real node's containerd mirrors. The API is upstream's, so the
// suite builds unchanged around it.
package registry

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
)

// Upstream's names of the in-cluster registry, which the suite refers to.
const (
	DefaultNamespace = "operator-controller-e2e"
	DefaultName      = "docker-registry"
)

// Deploy has nothing to deploy: the registry runs beside the control plane.
func Deploy(context.Context, *rest.Config, string, string) error { return nil }

// PortForward returns the environment's registry address; there is no forward to stop.
func PortForward(context.Context, *rest.Config, string, string) (string, func(), error) {
	addr := os.Getenv("E2E_REGISTRY")
	if addr == "" {
		return "", nil, fmt.Errorf("E2E_REGISTRY is not set: give the address of the registry olm pulls from (olm dev status)")
	}
	return addr, func() {}, nil
}
