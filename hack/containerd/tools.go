//go:build tools

// Package tools records the commands built from the pinned containerd release (the daemon, its
// runc shim and the ctr client the real node imports images with), so that `go mod tidy` keeps
// their dependencies in go.sum.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
