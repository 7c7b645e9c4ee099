//go:build tools

// Package tools records the command built from the pinned kube-network-policies release (the
// host process that enforces NetworkPolicy on the real node with nftables and nfqueue), so that
// `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "sigs.k8s.io/kube-network-policies/cmd"
)
