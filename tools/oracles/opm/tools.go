//go:build tools

// Package tools records opm's main package so that `go mod tidy` keeps everything it needs.
package tools

import _ "github.com/operator-framework/operator-registry/cmd/opm"
