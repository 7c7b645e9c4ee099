//go:build tools

// Package tools records the command built from the pinned CoreDNS release (the real node's
// cluster DNS), so that `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "github.com/coredns/coredns"
)
