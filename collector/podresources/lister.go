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

// AllocatableLister is a Lister that also knows every device ID kubelet
// advertises as allocatable (Client.Allocatable), allocated or not.
type AllocatableLister interface {
	Lister
	Allocatable(ctx context.Context, allocs []attribution.Allocation) ([]string, error)
}
