//go:build tools

// Package tools records the command built from the pinned training-operator release, so that
// `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
)
