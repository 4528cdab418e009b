package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"google.golang.org/grpc"

	"github.com/gpuledger/gpuledger/collector/dcgmsource"
	"github.com/gpuledger/gpuledger/collector/kubemeta"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// Options tune the simulated node.
type Options struct {
	// Dir is where the node's temporary directory (pod-resources socket,
	// procfs tree) is created; "" means the system temp dir.
	Dir string
}

// Node is one simulated GPU node. NVML and DCGM calls, Advance and the
// pod-resources server may run on different goroutines.
type Node struct {
	clock      *Clock
	period     time.Duration // driver sample period
	capPeriods int64
	startMicro int64

	dir    string
	procfs procTree
	socket string
	server *grpc.Server
	served chan struct{}

	// Immutable after New.
	gpus      []*gpu
	devByUUID map[string]*device
	procs     []*proc
	pods      []*pod
	life      []lifeEvent
	lib       *nvmlLib
	dcgm      *dcgmClient
	meta      *metaSource

	mu          sync.Mutex // guards everything below and the gpus' mutable state
	nextLife    int
	pidOwner    map[uint32]*proc // who owns each procfs entry
	periodsDone int64
	scratch     scratch
	dcgmPeriod  time.Duration
	closed      bool
}

// New builds the simulated node at the scenario start: it creates the
// procfs tree and starts the pod-resources gRPC server.
func New(ctx context.Context, sc *scenario.Scenario, opts Options) (*Node, error) {
	if sc == nil {
		return nil, errors.New("cannot build simulated node: nil scenario")
	}
	if sc.DriverSamplePeriod < time.Microsecond {
		return nil, fmt.Errorf("cannot build simulated node: driverSamplePeriod %v is below 1µs", sc.DriverSamplePeriod)
	}
	n := &Node{
		clock: newClock(sc.Start), period: sc.DriverSamplePeriod,
		capPeriods: capPeriodsFor(sc.DriverSamplePeriod, sc.PollInterval), startMicro: sc.Start.UnixMicro(),
		pidOwner: make(map[uint32]*proc),
	}
	if err := n.build(sc); err != nil {
		return nil, fmt.Errorf("cannot build simulated node from scenario %q: %w", sc.Name, err)
	}
	if err := n.start(ctx, opts); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Node) build(sc *scenario.Scenario) error {
	if err := n.buildGPUs(sc); err != nil {
		return err
	}
	if err := n.buildProcs(sc); err != nil {
		return err
	}
	n.buildPods(sc)
	n.buildLifecycle()
	n.lib = newNVMLLib(n)
	n.dcgm = &dcgmClient{n: n}
	n.meta = newMetaSource(n, sc)
	return nil
}

// start creates the temp dir and procfs tree at t=start and starts serving
// pod-resources.
func (n *Node) start(ctx context.Context, opts Options) error {
	dir, err := os.MkdirTemp(opts.Dir, "gpuledger-sim-")
	if err != nil {
		return fmt.Errorf("cannot create simulator directory: %w", err)
	}
	n.dir = dir
	n.procfs = procTree{root: filepath.Join(dir, "proc")}
	if err := os.Mkdir(n.procfs.root, 0o755); err != nil {
		return fmt.Errorf("cannot create procfs root: %w", err)
	}
	n.mu.Lock()
	err = n.applyLife(0)
	n.mu.Unlock()
	if err != nil {
		return fmt.Errorf("cannot build procfs at start: %w", err)
	}
	return n.serve(ctx)
}

// Clock returns the node's virtual clock.
func (n *Node) Clock() *Clock { return n.clock }

// Advance moves the clock to `to` and brings processes, pods, driver
// samples and energy up to it. Time never moves backwards.
func (n *Node) Advance(to time.Time) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("cannot advance: simulated node is closed")
	}
	now := n.clock.Now()
	if to.Before(now) {
		return fmt.Errorf("cannot advance clock backwards from %s to %s", now.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	t := to.Sub(n.clock.start)
	n.clock.set(t)
	n.computePeriods(t)
	n.accumulateEnergy(t)
	if err := n.applyLife(t); err != nil {
		return fmt.Errorf("cannot advance to %s: %w", to.Format(time.RFC3339Nano), err)
	}
	return nil
}

// NVML returns the simulated NVML library.
func (n *Node) NVML() nvml.Interface { return n.lib }

// DCGM returns the simulated DCGM client.
func (n *Node) DCGM() dcgmsource.Client { return n.dcgm }

// PodResourcesSocket is the unix socket of the pod-resources server.
func (n *Node) PodResourcesSocket() string { return n.socket }

// ProcRoot is the root of the procfs-like tree.
func (n *Node) ProcRoot() string { return n.procfs.root }

// Metadata returns the simulated Kubernetes metadata source.
func (n *Node) Metadata() kubemeta.Source { return n.meta }

// Close stops the pod-resources server and removes the temp directory.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	if n.server != nil {
		n.server.Stop()
		<-n.served
	}
	if n.dir == "" {
		return nil
	}
	if err := os.RemoveAll(n.dir); err != nil {
		return fmt.Errorf("cannot remove simulator directory: %w", err)
	}
	return nil
}
