//go:build tools

// Package tools records the command built from the pinned cosign release (`cosign`, which signs
// the released images and attaches their SBOMs: hack/release.sh), so that `go mod tidy` keeps its
// dependencies in go.sum.
package tools

import (
	_ "github.com/sigstore/cosign/v2/cmd/cosign"
)
