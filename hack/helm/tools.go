//go:build tools

// Package tools records the command built from the pinned Helm release (`helm`, which the chart
// tests run against charts/mxjob-operator), so that `go mod tidy` keeps its dependencies in
// go.sum.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
