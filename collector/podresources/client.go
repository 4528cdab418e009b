package podresources

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/support/backoff"
)

// ErrBackoff is wrapped by the error List returns while it waits before
// reconnecting to a kubelet that failed.
var ErrBackoff = errors.New("pod-resources API unavailable, waiting before reconnecting")

// Defaults for the client.
const (
	DefaultTimeout    = 2 * time.Second
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 30 * time.Second
	// maxRecvMsgSize leaves room for nodes with hundreds of pods and
	// topology information on every device.
	maxRecvMsgSize = 16 << 20
	// DefaultAllocatableRefresh is how many Allocatable calls (cycles) a
	// read of kubelet's allocatable devices is reused before it is read
	// again (sooner when an allocated ID is not in it).
	DefaultAllocatableRefresh = 600
)

// Client lists device allocations from kubelet's pod-resources v1 API. It
// keeps one connection across cycles. After a failure it closes it and does
// not dial again before an exponential, jittered backoff has passed; until
// then List fails at once, so a dead kubelet never slows a collection
// cycle. It is safe for concurrent use.
type Client struct {
	socket string
	log    *slog.Logger

	timeout                time.Duration
	minBackoff, maxBackoff time.Duration
	now                    func() time.Time

	mu        sync.Mutex
	conn      *grpc.ClientConn
	api       podresourcesv1.PodResourcesListerClient
	failures  int       // consecutive failed attempts
	retryAt   time.Time // no dial before this while failures > 0
	lastErr   error
	available bool

	allocRefresh int
	alloc        allocCache
}

// allocCache is the last read of kubelet's allocatable devices.
type allocCache struct {
	ids       []string            // every advertised device ID; replaced, never changed, on a read
	known     map[string]struct{} // ids plus the allocated IDs checked since the read
	age       int                 // Allocatable calls since the last attempt
	attempted bool
	warned    bool
}

var _ Lister = (*Client)(nil)

// Option changes a Client's defaults.
type Option func(*Client)

// WithTimeout bounds each List call.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithBackoff sets the first and the largest wait before reconnecting.
func WithBackoff(minWait, maxWait time.Duration) Option {
	return func(c *Client) { c.minBackoff, c.maxBackoff = minWait, maxWait }
}

// WithAllocatableRefresh sets how many Allocatable calls reuse one read of
// kubelet's allocatable devices (n < 1: 1, a read on every call).
func WithAllocatableRefresh(n int) Option { return func(c *Client) { c.allocRefresh = max(1, n) } }

// WithClock replaces the wall clock the backoff is measured with (tests).
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// NewClient returns a client for the pod-resources API on the unix socket
// path. It does not dial: the first List does. A nil log discards.
func NewClient(socket string, log *slog.Logger, opts ...Option) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		socket:     socket,
		log:        log.With("source", "podresources", "socket", socket),
		timeout:    DefaultTimeout,
		minBackoff: DefaultMinBackoff,
		maxBackoff: DefaultMaxBackoff,
		now:        time.Now,

		allocRefresh: DefaultAllocatableRefresh,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// List returns one Allocation per container and resource with devices, and
// one per container holding DRA claims, for every pod kubelet lists.
func (c *Client) List(ctx context.Context) ([]attribution.Allocation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failures > 0 && c.now().Before(c.retryAt) {
		return nil, fmt.Errorf("cannot list pod resources from %s: %w (last error: %w)", c.socket, ErrBackoff, c.lastErr)
	}
	if c.conn == nil {
		if err := c.dial(); err != nil {
			return nil, c.fail(err)
		}
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.api.List(callCtx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		err = fmt.Errorf("cannot list pod resources from %s: %w", c.socket, err)
		if ctx.Err() != nil {
			return nil, err // the caller gave up; kubelet is not to blame
		}
		return nil, c.fail(err)
	}
	if c.failures > 0 {
		c.log.Info("pod-resources API available again", "failed_attempts", c.failures)
	}
	c.failures, c.lastErr, c.available = 0, nil, true
	return flatten(resp), nil
}

// Allocatable returns every device ID kubelet advertises as allocatable
// (GetAllocatableResources, all resources): every replica ID of a shared
// GPU, allocated or not, which is how many replicas share it when no label
// says so. The list changes only when the device plugin re-registers, so it
// is not read on every cycle: the first call reads it, later calls return
// the cached slice (the same one, which callers must not modify) until
// DefaultAllocatableRefresh calls have passed or allocs (this cycle's List)
// names a device ID the cached list lacks. Such an ID triggers one read;
// if kubelet does not list it then either, it triggers none until the next
// periodic read. A failed read (a kubelet without the call, or one that is
// down) returns the cached IDs, possibly nil, with the error, and is not
// retried before the next periodic read.
func (c *Client) Allocatable(ctx context.Context, allocs []attribution.Allocation) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := &c.alloc
	if a.attempted && a.age < c.allocRefresh && a.covers(allocs) {
		a.age++
		return a.ids, nil
	}
	a.attempted, a.age = true, 1
	ids, err := c.readAllocatable(ctx)
	if err == nil {
		a.ids = ids
		a.known = make(map[string]struct{}, len(ids))
		for _, id := range ids {
			a.known[id] = struct{}{}
		}
	} else if !a.warned {
		a.warned = true
		c.log.Warn("cannot read allocatable devices; replica counts without a label use the IDs seen", "err", err)
	} else {
		c.log.Debug("cannot read allocatable devices", "err", err)
	}
	if a.known == nil {
		a.known = map[string]struct{}{}
	}
	// IDs allocated now but not advertised trigger no further read.
	for i := range allocs {
		for _, id := range allocs[i].DeviceIDs {
			a.known[id] = struct{}{}
		}
	}
	return a.ids, err
}

// covers reports whether every device ID of allocs was checked already.
func (a *allocCache) covers(allocs []attribution.Allocation) bool {
	for i := range allocs {
		for _, id := range allocs[i].DeviceIDs {
			if _, ok := a.known[id]; !ok {
				return false
			}
		}
	}
	return true
}

// readAllocatable calls GetAllocatableResources on the current connection.
func (c *Client) readAllocatable(ctx context.Context) ([]string, error) {
	if c.api == nil {
		return nil, fmt.Errorf("cannot read allocatable devices from %s: not connected", c.socket)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.api.GetAllocatableResources(callCtx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("cannot read allocatable devices from %s: %w", c.socket, err)
	}
	var ids []string
	for _, dev := range resp.GetDevices() {
		for _, id := range dev.GetDeviceIds() {
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// Available reports whether the last List succeeded.
func (c *Client) Available() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.available
}

// Close releases the connection. List may be called again afterwards and
// dials anew.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeConn()
}

// dial creates the connection. grpc.NewClient connects lazily, so a missing
// socket is checked here to fail with a clear error before any RPC.
func (c *Client) dial() error {
	if _, err := os.Stat(c.socket); err != nil {
		return fmt.Errorf("cannot find kubelet pod-resources socket: %w", err)
	}
	conn, err := grpc.NewClient("unix://"+c.socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvMsgSize)),
	)
	if err != nil {
		return fmt.Errorf("cannot create gRPC client for %s: %w", c.socket, err)
	}
	c.conn, c.api = conn, podresourcesv1.NewPodResourcesListerClient(conn)
	return nil
}

// fail records a failed attempt, drops the connection (its own reconnect
// backoff would otherwise outlast ours) and schedules the next attempt.
func (c *Client) fail(err error) error {
	if cerr := c.closeConn(); cerr != nil {
		c.log.Debug("cannot close gRPC connection", "err", cerr)
	}
	c.failures++
	c.lastErr = err
	c.available = false
	wait := c.backoff()
	c.retryAt = c.now().Add(wait)
	if c.failures == 1 {
		c.log.Warn("pod-resources API unavailable", "err", err, "retry_in", wait)
	} else {
		c.log.Debug("pod-resources API still unavailable", "err", err, "failed_attempts", c.failures, "retry_in", wait)
	}
	return err
}

// backoff is min x 2^(failures-1), capped at max, drawn uniformly from its
// upper half so that collectors on many nodes do not reconnect in step.
func (c *Client) backoff() time.Duration {
	return backoff.Jittered(c.failures-1, c.minBackoff, c.maxBackoff)
}

func (c *Client) closeConn() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn, c.api = nil, nil
	return err
}

// flatten turns a List response into one Allocation per container device
// entry, skipping entries without a resource name or device IDs, and one
// Allocation per container holding DRA claims (dynamic_resources).
func flatten(resp *podresourcesv1.ListPodResourcesResponse) []attribution.Allocation {
	var out []attribution.Allocation
	for _, pod := range resp.GetPodResources() {
		for _, ctr := range pod.GetContainers() {
			for _, dev := range ctr.GetDevices() {
				ids := nonEmpty(dev.GetDeviceIds())
				if dev.GetResourceName() == "" || len(ids) == 0 {
					continue
				}
				out = append(out, attribution.Allocation{
					Namespace: pod.GetNamespace(),
					Pod:       pod.GetName(),
					Container: ctr.GetName(),
					Resource:  dev.GetResourceName(),
					DeviceIDs: ids,
				})
			}
			if claims := claimDevices(ctr.GetDynamicResources()); len(claims) > 0 {
				out = append(out, attribution.Allocation{
					Namespace: pod.GetNamespace(),
					Pod:       pod.GetName(),
					Container: ctr.GetName(),
					Claims:    claims,
				})
			}
		}
	}
	return out
}

// claimDevices lists one ClaimDevice per allocated device of a container's
// DRA claims. An empty pool name is kept: a driver may publish its slices
// without one, and attribution matches it against the ResourceSlices as is.
// Entries naming neither driver nor device identify nothing and are
// skipped; anything else, however odd, is passed on so that attribution
// can count it as an anomaly instead of losing it here.
func claimDevices(dyn []*podresourcesv1.DynamicResource) []attribution.ClaimDevice {
	var out []attribution.ClaimDevice
	for _, claim := range dyn {
		for _, res := range claim.GetClaimResources() {
			if res.GetDriverName() == "" && res.GetDeviceName() == "" {
				continue
			}
			out = append(out, attribution.ClaimDevice{
				ClaimNamespace: claim.GetClaimNamespace(),
				ClaimName:      claim.GetClaimName(),
				Driver:         res.GetDriverName(),
				Pool:           res.GetPoolName(),
				Device:         res.GetDeviceName(),
			})
		}
	}
	return out
}

// nonEmpty returns ids without empty strings, copying only when it must.
func nonEmpty(ids []string) []string {
	for i, id := range ids {
		if id != "" {
			continue
		}
		out := append([]string(nil), ids[:i]...)
		for _, id := range ids[i+1:] {
			if id != "" {
				out = append(out, id)
			}
		}
		return out
	}
	return ids
}
