//go:build tools

// Package tools pins operator-framework's kubectl-operator plugin, built as a test oracle for
// OLM v0's user-facing behaviour; no product code.
package tools

import _ "github.com/operator-framework/kubectl-operator"
