//go:build tools

// Package tools records the etcd server command so `go mod tidy` keeps its dependencies.
package tools

import _ "go.etcd.io/etcd/server/v3"
