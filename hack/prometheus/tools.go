//go:build tools

// Package tools records the commands built from the pinned Prometheus release (`prometheus`,
// which scrapes the operator, and `promtool`, which checks its alert rules), so that
// `go mod tidy` keeps their dependencies in go.sum.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
