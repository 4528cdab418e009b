package sim

import (
	"context"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// maxSocketPath is the longest unix socket path Linux accepts.
const maxSocketPath = 107

// serve listens on the pod-resources socket and serves it until Close.
func (n *Node) serve(ctx context.Context) error {
	n.socket = filepath.Join(n.dir, "kubelet.sock")
	if len(n.socket) > maxSocketPath {
		return fmt.Errorf("cannot serve pod-resources: socket path %q is longer than %d bytes; use a shorter Options.Dir", n.socket, maxSocketPath)
	}
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "unix", n.socket)
	if err != nil {
		return fmt.Errorf("cannot listen on pod-resources socket: %w", err)
	}
	n.server = grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(n.server, &podResourcesServer{n: n})
	n.served = make(chan struct{})
	go func() {
		defer close(n.served)
		_ = n.server.Serve(lis) // returns when Close stops the server
	}()
	return nil
}

// podResourcesServer is kubelet's PodResourcesLister over the simulated
// pods. It reads the clock at request time; pods are immutable.
type podResourcesServer struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	n *Node
}

var _ podresourcesv1.PodResourcesListerServer = (*podResourcesServer)(nil)

// List returns the pods alive now with their containers' devices.
func (s *podResourcesServer) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	t := s.n.clock.offset()
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for _, p := range s.n.pods {
		if p.aliveAt(t) {
			resp.PodResources = append(resp.PodResources, p.resources(t))
		}
	}
	return resp, nil
}

// Get returns one pod alive now.
func (s *podResourcesServer) Get(ctx context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	t := s.n.clock.offset()
	for _, p := range s.n.pods {
		if p.meta.Namespace == req.GetPodNamespace() && p.meta.Name == req.GetPodName() && p.aliveAt(t) {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: p.resources(t)}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "pod %s/%s not found", req.GetPodNamespace(), req.GetPodName())
}

// GetAllocatableResources lists every device ID any pod of the scenario is
// given, per resource name.
func (s *podResourcesServer) GetAllocatableResources(ctx context.Context, _ *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	ids := map[string][]string{}
	for _, p := range s.n.pods {
		for _, c := range p.containers {
			for _, d := range c.devices {
				ids[d.Resource] = append(ids[d.Resource], d.IDs...)
			}
		}
	}
	resp := &podresourcesv1.AllocatableResourcesResponse{}
	for _, res := range slices.Sorted(maps.Keys(ids)) {
		l := ids[res]
		slices.Sort(l)
		resp.Devices = append(resp.Devices, &podresourcesv1.ContainerDevices{ResourceName: res, DeviceIds: slices.Compact(l)})
	}
	return resp, nil
}

// resources builds a fresh message per request so concurrent requests never
// share one. It lists the containers running at t: init containers during
// their run window, regular ones for the pod's life.
func (p *pod) resources(t time.Duration) *podresourcesv1.PodResources {
	pr := &podresourcesv1.PodResources{Name: p.meta.Name, Namespace: p.meta.Namespace}
	for i := range p.containers {
		c := &p.containers[i]
		if !c.runsAt(t) {
			continue
		}
		cr := &podresourcesv1.ContainerResources{Name: c.name, DynamicResources: c.dynamicResources(p.meta.Namespace)}
		for _, d := range c.devices {
			cr.Devices = append(cr.Devices, &podresourcesv1.ContainerDevices{
				ResourceName: d.Resource, DeviceIds: slices.Clone(d.IDs),
			})
		}
		pr.Containers = append(pr.Containers, cr)
	}
	return pr
}

// dynamicResources groups the container's claim devices by claim name, in
// the order the claims first appear: one DynamicResource per claim, one
// ClaimResource per device. Claims live in the pod's namespace.
func (c *container) dynamicResources(namespace string) []*podresourcesv1.DynamicResource {
	var out []*podresourcesv1.DynamicResource
	byName := make(map[string]*podresourcesv1.DynamicResource, len(c.claims))
	for _, cl := range c.claims {
		dr, ok := byName[cl.Claim]
		if !ok {
			dr = &podresourcesv1.DynamicResource{ClaimName: cl.Claim, ClaimNamespace: namespace}
			byName[cl.Claim] = dr
			out = append(out, dr)
		}
		dr.ClaimResources = append(dr.ClaimResources, &podresourcesv1.ClaimResource{
			DriverName: cl.Driver, PoolName: cl.Pool, DeviceName: cl.Device,
		})
	}
	return out
}
