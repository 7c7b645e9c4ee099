//go:build tools

// Package tools records the command built from the pinned kwok release (the `kwok` controller
// that simulates nodes and drives pod lifecycles), so that `go mod tidy` keeps its dependencies
// in go.sum.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
