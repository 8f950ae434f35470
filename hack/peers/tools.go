//go:build tools

// Package peers only pins the compared tools' modules.
package peers

import _ "github.com/bitnami-labs/kubewatch"
