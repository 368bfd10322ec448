//go:build tools

// Package tools pins grpcurl, built as a test oracle (a gRPC client with reflection); no
// product code.
package tools

import _ "github.com/fullstorydev/grpcurl/cmd/grpcurl"
