//go:build tools

// Package tools records the command built from Kubernetes v1.28.15 (kube-apiserver), so that
// `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
