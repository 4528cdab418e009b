package podresources

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuledger/gpuledger/attribution"
)

// fakeKubelet serves a fixed List response, or blocks until the call's
// context ends when block is set.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	resp  *podresourcesv1.ListPodResourcesResponse
	block bool

	mu    sync.Mutex
	calls int
}

func (k *fakeKubelet) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	k.calls++
	k.mu.Unlock()
	if k.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return k.resp, nil
}

func (k *fakeKubelet) callCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls
}

// serve starts a gRPC server for k on socket and stops it at the end of the
// test (stopping twice is harmless).
func serve(t *testing.T, socket string, k *fakeKubelet) *grpc.Server {
	t.Helper()
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatalf("cannot listen on %s: %v", socket, err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return srv
}

// socketPath returns a short path: unix socket paths are limited to 108
// bytes and t.TempDir can be longer.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "prt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "kubelet.sock")
}

// fakeClock is a settable clock for the backoff.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const (
	gpu0 = "GPU-6f1f0f5e-0000-4000-8000-000000000000"
	mig0 = "MIG-1c2d0000-0000-4000-8000-000000000001"
)

var nodeResponse = &podresourcesv1.ListPodResourcesResponse{
	PodResources: []*podresourcesv1.PodResources{
		{Name: "infer-0", Namespace: "team-a", Containers: []*podresourcesv1.ContainerResources{
			{Name: "server", Devices: []*podresourcesv1.ContainerDevices{
				{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu0 + "::0", gpu0 + "::3"}},
			}},
			{Name: "sidecar"}, // no devices
		}},
		{Name: "train-1", Namespace: "team-b", Containers: []*podresourcesv1.ContainerResources{
			{Name: "main", CpuIds: []int64{2, 3}, Devices: []*podresourcesv1.ContainerDevices{
				{ResourceName: "nvidia.com/mig-1g.10gb", DeviceIds: []string{mig0},
					Topology: &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: 0}}}},
				{ResourceName: "example.com/nic", DeviceIds: []string{}}, // empty entry
				{ResourceName: "", DeviceIds: []string{"x"}},             // no resource name
				{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"", gpu0}},
			}},
		}},
		{Name: "cpu-only", Namespace: "default"},
	},
}

// wantAllocations is nodeResponse flattened by hand.
var wantAllocations = []attribution.Allocation{
	{Namespace: "team-a", Pod: "infer-0", Container: "server", Resource: "nvidia.com/gpu", DeviceIDs: []string{gpu0 + "::0", gpu0 + "::3"}},
	{Namespace: "team-b", Pod: "train-1", Container: "main", Resource: "nvidia.com/mig-1g.10gb", DeviceIDs: []string{mig0}},
	{Namespace: "team-b", Pod: "train-1", Container: "main", Resource: "nvidia.com/gpu", DeviceIDs: []string{gpu0}},
}

func TestClientList(t *testing.T) {
	socket := socketPath(t)
	k := &fakeKubelet{resp: nodeResponse}
	serve(t, socket, k)

	c := NewClient(socket, nil)
	defer c.Close()
	if c.Available() {
		t.Error("Available before the first List")
	}
	for cycle := range 2 {
		got, err := c.List(context.Background())
		if err != nil {
			t.Fatalf("cycle %d: List: %v", cycle, err)
		}
		if !reflect.DeepEqual(got, wantAllocations) {
			t.Errorf("cycle %d: List =\n%+v\nwant\n%+v", cycle, got, wantAllocations)
		}
	}
	if !c.Available() {
		t.Error("not Available after a successful List")
	}
	if n := k.callCount(); n != 2 {
		t.Errorf("kubelet got %d calls, want 2 (one per List)", n)
	}
}

func TestClientEmptyNode(t *testing.T) {
	socket := socketPath(t)
	serve(t, socket, &fakeKubelet{resp: &podresourcesv1.ListPodResourcesResponse{}})
	c := NewClient(socket, nil)
	defer c.Close()
	got, err := c.List(context.Background())
	if err != nil || len(got) != 0 {
		t.Errorf("List = %v, %v; want nothing and no error", got, err)
	}
}

func TestClientMissingSocket(t *testing.T) {
	socket := socketPath(t)
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	c := NewClient(socket, nil, WithClock(clock.now), WithBackoff(time.Second, 4*time.Second))
	defer c.Close()

	_, err := c.List(context.Background())
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List without a socket: error %v, want fs.ErrNotExist", err)
	}
	// Within the backoff the client does not even look for the socket.
	k := &fakeKubelet{resp: nodeResponse}
	serve(t, socket, k)
	if _, err := c.List(context.Background()); !errors.Is(err, ErrBackoff) {
		t.Fatalf("List during backoff: error %v, want ErrBackoff", err)
	}
	if k.callCount() != 0 {
		t.Error("the client reached kubelet during its backoff")
	}
	clock.advance(time.Second) // the first wait is at most minBackoff
	if _, err := c.List(context.Background()); err != nil {
		t.Fatalf("List after the backoff: %v", err)
	}
}

func TestClientReconnects(t *testing.T) {
	socket := socketPath(t)
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	c := NewClient(socket, nil, WithClock(clock.now), WithBackoff(time.Second, 4*time.Second), WithTimeout(5*time.Second))
	defer c.Close()

	srv := serve(t, socket, &fakeKubelet{resp: nodeResponse})
	if _, err := c.List(context.Background()); err != nil {
		t.Fatalf("List: %v", err)
	}

	// kubelet restarts: the socket disappears.
	srv.Stop()
	if _, err := c.List(context.Background()); err == nil || errors.Is(err, ErrBackoff) {
		t.Fatalf("List with kubelet down: error %v, want a connection error", err)
	}
	if c.Available() {
		t.Error("Available with kubelet down")
	}
	// Failed attempts double the wait: 1 s, 2 s, then the 4 s cap.
	// The jittered wait lies in [nominal/2, nominal].
	for attempt, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		clock.advance(wait/2 - time.Millisecond)
		if _, err := c.List(context.Background()); !errors.Is(err, ErrBackoff) {
			t.Fatalf("attempt %d: List during backoff: error %v, want ErrBackoff", attempt, err)
		}
		clock.advance(wait/2 + time.Millisecond)
		if _, err := c.List(context.Background()); err == nil || errors.Is(err, ErrBackoff) {
			t.Fatalf("attempt %d: List after %v: error %v, want a new connection error", attempt, wait, err)
		}
	}

	srv = serve(t, socket, &fakeKubelet{resp: nodeResponse})
	if _, err := c.List(context.Background()); !errors.Is(err, ErrBackoff) {
		t.Fatalf("List right after kubelet came back: error %v, want ErrBackoff", err)
	}
	clock.advance(4 * time.Second)
	got, err := c.List(context.Background())
	if err != nil {
		t.Fatalf("List after recovery: %v", err)
	}
	if !reflect.DeepEqual(got, wantAllocations) {
		t.Errorf("List after recovery = %+v, want %+v", got, wantAllocations)
	}
	if !c.Available() {
		t.Error("not Available after recovery")
	}

	// Success resets the backoff: after the next failure the client tries
	// again within minBackoff, not the 4 s it had reached.
	srv.Stop()
	if _, err := c.List(context.Background()); err == nil || errors.Is(err, ErrBackoff) {
		t.Fatalf("List with kubelet down again: error %v, want a connection error", err)
	}
	clock.advance(time.Second)
	if _, err := c.List(context.Background()); err == nil || errors.Is(err, ErrBackoff) {
		t.Fatalf("List 1 s after a fresh failure: error %v, want a new connection error", err)
	}
}

func TestClientCallTimeout(t *testing.T) {
	socket := socketPath(t)
	k := &fakeKubelet{block: true}
	serve(t, socket, k)
	c := NewClient(socket, nil, WithTimeout(50*time.Millisecond))
	defer c.Close()
	// The test's own deadline is far longer than the client's: an error
	// here comes from the per-call timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.List(ctx); err == nil {
		t.Fatal("List against a hung kubelet returned no error")
	}
	if ctx.Err() != nil {
		t.Fatal("the test's deadline ran out before the client's")
	}
	if _, err := c.List(ctx); !errors.Is(err, ErrBackoff) {
		t.Errorf("a timed-out call should start the backoff, got %v", err)
	}
}

func TestClientCallerCancelDoesNotBackOff(t *testing.T) {
	socket := socketPath(t)
	serve(t, socket, &fakeKubelet{resp: nodeResponse})
	c := NewClient(socket, nil)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.List(ctx); err == nil {
		t.Fatal("List with a cancelled context returned no error")
	}
	if _, err := c.List(context.Background()); err != nil {
		t.Errorf("List after the caller's cancellation: %v (kubelet was fine)", err)
	}
}

func TestBackoffJitter(t *testing.T) {
	c := NewClient("unused", nil, WithBackoff(time.Second, 30*time.Second))
	// failures -> nominal wait; the jittered wait lies in [nominal/2, nominal].
	for failures, nominal := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second, 6: 30 * time.Second, 40: 30 * time.Second} {
		c.failures = failures
		for range 50 {
			if d := c.backoff(); d < nominal/2 || d > nominal {
				t.Fatalf("failures=%d: backoff %v outside [%v, %v]", failures, d, nominal/2, nominal)
			}
		}
	}
}

func TestCloseIdempotent(t *testing.T) {
	c := NewClient("unused", nil)
	if err := c.Close(); err != nil {
		t.Errorf("Close before any List: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

const mig1 = "MIG-1c2d0000-0000-4000-8000-000000000002"

// draResponse has DRA claims as kubelet lists them under
// dynamic_resources: a pod with two claims on one container, a device
// shared by two pods' claims, a claim resource without a pool, a claim with
// no resources yet, and a container that holds both a device-plugin
// resource and a claim.
var draResponse = &podresourcesv1.ListPodResourcesResponse{
	PodResources: []*podresourcesv1.PodResources{
		{Name: "train-0", Namespace: "team-a", Containers: []*podresourcesv1.ContainerResources{
			{Name: "main", DynamicResources: []*podresourcesv1.DynamicResource{
				{ClaimName: "train-0-gpus", ClaimNamespace: "team-a", ClaimResources: []*podresourcesv1.ClaimResource{
					{DriverName: "gpu.nvidia.com", PoolName: "node-1", DeviceName: "gpu-0",
						CdiDevices: []*podresourcesv1.CDIDevice{{Name: "k8s.gpu.nvidia.com/claim=abc-gpu-0"}}},
					{DriverName: "gpu.nvidia.com", PoolName: "node-1", DeviceName: "gpu-1"},
				}},
				{ClaimName: "scratch-mig", ClaimNamespace: "team-a", ClaimResources: []*podresourcesv1.ClaimResource{
					{DriverName: "gpu.nvidia.com", PoolName: "node-1", DeviceName: "gpu-2-mig-1g10gb-0"},
				}},
				{ClaimName: "pending", ClaimNamespace: "team-a"}, // no resources
			}},
			{Name: "log-shipper"}, // nothing at all
		}},
		{Name: "infer-a", Namespace: "team-b", Containers: []*podresourcesv1.ContainerResources{
			{Name: "server",
				Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/mig-1g.10gb", DeviceIds: []string{mig1}}},
				DynamicResources: []*podresourcesv1.DynamicResource{
					{ClaimName: "shared-gpu", ClaimNamespace: "team-b", ClaimResources: []*podresourcesv1.ClaimResource{
						{DriverName: "gpu.nvidia.com", PoolName: "node-1", DeviceName: "gpu-3"},
					}},
				}},
		}},
		{Name: "infer-b", Namespace: "team-b", Containers: []*podresourcesv1.ContainerResources{
			{Name: "server", DynamicResources: []*podresourcesv1.DynamicResource{
				// The same claim as infer-a: both pods share gpu-3.
				{ClaimName: "shared-gpu", ClaimNamespace: "team-b", ClaimResources: []*podresourcesv1.ClaimResource{
					{DriverName: "gpu.nvidia.com", PoolName: "node-1", DeviceName: "gpu-3"},
				}},
				// A non-GPU driver without a pool, and an entry naming nothing.
				{ClaimName: "nic", ClaimNamespace: "team-b", ClaimResources: []*podresourcesv1.ClaimResource{
					{DriverName: "dra.net", DeviceName: "eth1"},
					{},
				}},
			}},
		}},
	},
}

var wantDRAAllocations = []attribution.Allocation{
	{Namespace: "team-a", Pod: "train-0", Container: "main", Claims: []attribution.ClaimDevice{
		{ClaimNamespace: "team-a", ClaimName: "train-0-gpus", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "gpu-0"},
		{ClaimNamespace: "team-a", ClaimName: "train-0-gpus", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "gpu-1"},
		{ClaimNamespace: "team-a", ClaimName: "scratch-mig", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "gpu-2-mig-1g10gb-0"},
	}},
	{Namespace: "team-b", Pod: "infer-a", Container: "server", Resource: "nvidia.com/mig-1g.10gb", DeviceIDs: []string{mig1}},
	{Namespace: "team-b", Pod: "infer-a", Container: "server", Claims: []attribution.ClaimDevice{
		{ClaimNamespace: "team-b", ClaimName: "shared-gpu", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "gpu-3"},
	}},
	{Namespace: "team-b", Pod: "infer-b", Container: "server", Claims: []attribution.ClaimDevice{
		{ClaimNamespace: "team-b", ClaimName: "shared-gpu", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "gpu-3"},
		{ClaimNamespace: "team-b", ClaimName: "nic", Driver: "dra.net", Pool: "", Device: "eth1"},
	}},
}

func TestClientListDynamicResources(t *testing.T) {
	socket := socketPath(t)
	serve(t, socket, &fakeKubelet{resp: draResponse})
	c := NewClient(socket, nil)
	defer c.Close()
	got, err := c.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !reflect.DeepEqual(got, wantDRAAllocations) {
		t.Errorf("List =\n%+v\nwant\n%+v", got, wantDRAAllocations)
	}
	for _, a := range got {
		if len(a.Claims) > 0 && (a.Resource != "" || len(a.DeviceIDs) > 0) {
			t.Errorf("allocation %s/%s/%s carries claims and device-plugin IDs: %+v", a.Namespace, a.Pod, a.Container, a)
		}
	}
}

// allocKubelet also serves GetAllocatableResources, counting the calls;
// fail makes them fail.
type allocKubelet struct {
	fakeKubelet
	amu    sync.Mutex
	alloc  *podresourcesv1.AllocatableResourcesResponse
	fail   bool
	aCalls int
}

func (k *allocKubelet) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	k.amu.Lock()
	defer k.amu.Unlock()
	k.aCalls++
	if k.fail {
		return nil, errors.New("kubelet is busy")
	}
	return k.alloc, nil
}

func (k *allocKubelet) set(resp *podresourcesv1.AllocatableResourcesResponse, fail bool) {
	k.amu.Lock()
	k.alloc, k.fail = resp, fail
	k.amu.Unlock()
}

func (k *allocKubelet) allocCalls() int {
	k.amu.Lock()
	defer k.amu.Unlock()
	return k.aCalls
}

func serveAlloc(t *testing.T, socket string, k *allocKubelet) {
	t.Helper()
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
}

func allocatable(ids map[string][]string) *podresourcesv1.AllocatableResourcesResponse {
	resp := &podresourcesv1.AllocatableResourcesResponse{}
	for _, res := range []string{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "example.com/nic"} {
		if l, ok := ids[res]; ok {
			resp.Devices = append(resp.Devices, &podresourcesv1.ContainerDevices{ResourceName: res, DeviceIds: l})
		}
	}
	return resp
}

// Allocatable reads kubelet's list once, then reuses it for
// WithAllocatableRefresh calls, reads it again early when an allocated ID
// is missing from it (once per missing ID), and survives a failing read.
func TestClientAllocatableIsCached(t *testing.T) {
	socket := socketPath(t)
	k := &allocKubelet{fakeKubelet: fakeKubelet{resp: nodeResponse}}
	k.set(allocatable(map[string][]string{
		"nvidia.com/gpu":         {gpu0 + "::0", gpu0 + "::1", gpu0 + "::2", gpu0 + "::3", "", gpu0},
		"nvidia.com/mig-1g.10gb": {mig0},
		"example.com/nic":        {"nic-0"},
	}), false)
	serveAlloc(t, socket, k)
	c := NewClient(socket, nil, WithAllocatableRefresh(3))
	defer c.Close()
	ctx := context.Background()
	allocs, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{gpu0 + "::0", gpu0 + "::1", gpu0 + "::2", gpu0 + "::3", gpu0, mig0, "nic-0"}
	call := func(n int, allocs []attribution.Allocation) []string {
		t.Helper()
		ids, err := c.Allocatable(ctx, allocs)
		if err != nil {
			t.Fatalf("call %d: %v", n, err)
		}
		return ids
	}
	first := call(1, allocs)
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("Allocatable = %v, want %v", first, want)
	}
	// Calls 2 and 3 reuse the read (the same slice); call 4 reads again.
	for n := 2; n <= 3; n++ {
		if ids := call(n, allocs); &ids[0] != &first[0] {
			t.Errorf("call %d returned a new slice", n)
		}
	}
	if got := k.allocCalls(); got != 1 {
		t.Errorf("after 3 calls kubelet got %d reads, want 1", got)
	}
	call(4, allocs)
	if got := k.allocCalls(); got != 2 {
		t.Errorf("after 4 calls kubelet got %d reads, want 2", got)
	}
	// An allocated ID kubelet did not advertise: one early read, none after.
	extra := append(slicesClone(allocs), attribution.Allocation{Resource: "nvidia.com/gpu", DeviceIDs: []string{gpu0 + "::7"}})
	call(5, extra)
	call(6, extra)
	if got := k.allocCalls(); got != 3 {
		t.Errorf("an unseen ID: kubelet got %d reads, want 3", got)
	}
	// A failing periodic read keeps the list and returns the error.
	k.set(nil, true)
	call(7, extra)
	ids, err := c.Allocatable(ctx, extra) // call 8: the periodic read
	if err == nil || !reflect.DeepEqual(ids, want) {
		t.Errorf("failing read: %v, %v; want the cached list and an error", ids, err)
	}
	call(9, extra) // not retried before the next periodic read
	if got := k.allocCalls(); got != 4 {
		t.Errorf("after a failure kubelet got %d reads, want 4", got)
	}
}

// A kubelet without GetAllocatableResources: nil and an error, read again
// only periodically.
func TestClientAllocatableUnimplemented(t *testing.T) {
	socket := socketPath(t)
	serve(t, socket, &fakeKubelet{resp: nodeResponse})
	c := NewClient(socket, nil, WithAllocatableRefresh(10))
	defer c.Close()
	allocs, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := c.Allocatable(context.Background(), allocs)
	if ids != nil || err == nil {
		t.Fatalf("Allocatable = %v, %v; want nil and an error", ids, err)
	}
	if ids, err = c.Allocatable(context.Background(), allocs); ids != nil || err != nil {
		t.Fatalf("second call = %v, %v; want nil, nil (no read)", ids, err)
	}
}

func slicesClone(a []attribution.Allocation) []attribution.Allocation {
	return append([]attribution.Allocation(nil), a...)
}
