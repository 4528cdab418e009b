// Package podresources lists the devices kubelet allocated to each container,
// through the kubelet pod-resources v1 gRPC API on its unix socket.
package podresources

import (
	"context"

	"github.com/gpuledger/gpuledger/attribution"
)

// DefaultSocket is where kubelet serves the pod-resources API.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// Lister lists the device allocations of every running pod on the node.
type Lister interface {
	List(ctx context.Context) ([]attribution.Allocation, error)
}
