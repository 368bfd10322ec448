//go:build tools

// Package tools records the programs build.sh builds from other modules, so that `go mod tidy`
// keeps their requirements: opm and grpc_health_probe, which the suite's catalog Pods run.
package tools

import (
	_ "github.com/grpc-ecosystem/grpc-health-probe"
	_ "github.com/operator-framework/operator-registry/cmd/opm"
)
