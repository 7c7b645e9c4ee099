//go:build tools

// Package tools records the command built from the pinned CNCF distribution release (`registry`,
// the OCI registry tests/e2e/test_real_node_registry.py pushes the images and the chart to), so
// that `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
)
