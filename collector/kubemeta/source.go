// Package kubemeta gives the collector the Kubernetes view of its node:
// node labels, namespace labels, the pods bound to it with their labels,
// annotations and container IDs (regular and init containers apart), and the
// devices its DRA ResourceSlices publish.
package kubemeta

import (
	"context"

	"github.com/gpuledger/gpuledger/attribution"
)

// Source returns the current metadata snapshot.
type Source interface {
	Snapshot(ctx context.Context) (attribution.Metadata, error)
}
