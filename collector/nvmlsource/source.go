// Package nvmlsource reads GPUs, MIG instances, running processes,
// per-process and device utilisation samples and energy counters through
// go-nvml's nvml.Interface. The same code runs against the real library
// (nvml.New()) and against the simulator's nvml.Interface.
//
// Utilisation samples are read "since last seen": each device keeps its own
// lastSeen timestamps, so every driver sample is returned exactly once, and
// the first Read of a device only sets the baseline.
package nvmlsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/attribution"
)

// topologyRefreshCycles is how often (in Reads) the device and MIG layout
// is read again even when no call hinted that it changed: MIG can be
// reconfigured without any handle becoming invalid.
const topologyRefreshCycles = 60

// Reading is what one Read found. Its slices are freshly allocated and may
// be kept by the caller.
type Reading struct {
	// GPUs has one entry per physical GPU, MIG instances filled in.
	GPUs []attribution.GPU
	// Processes are the running compute (and MPS client) processes. Owner
	// is left zero: the collector resolves PIDs through procfs.
	Processes []attribution.Process
	// Samples are the per-process utilisation samples newer than the
	// previous Read of the same GPU.
	Samples []attribution.ProcessSample
	// Errors are per-device problems; the rest of the Reading is still
	// valid. Read itself fails only if nothing could be read.
	Errors []error
}

// Source reads NVML. It is safe for use by one collector loop; a mutex
// keeps a concurrent Close from racing a Read.
type Source struct {
	lib nvml.Interface
	log *slog.Logger

	mu           sync.Mutex
	initialised  bool
	refreshEvery int
	cycles       int
	stale        bool // a call hinted that handles or the MIG layout changed

	devices  []*device
	topoErrs []error                 // enumeration problems of the last refresh
	state    map[string]*deviceState // by GPU UUID, survives topology refreshes

	// Reused between Reads to keep the once-per-second path allocation-light.
	utilBuf []nvml.ProcessUtilizationSample
	devBuf  []nvml.Sample
	pidIdx  map[uint32]int

	// Sizes of the previous Reading, to allocate the next one once.
	lastProcs, lastSamples, lastDevSamples int
}

// New returns a Source over lib. Call Init before Read.
func New(lib nvml.Interface, log *slog.Logger) *Source {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Source{
		lib:          lib,
		log:          log,
		refreshEvery: topologyRefreshCycles,
		state:        make(map[string]*deviceState),
		pidIdx:       make(map[uint32]int),
	}
}

// Init initialises NVML and enumerates the devices. Devices that cannot be
// enumerated are logged and retried on every Read; only a failure of the
// library itself is an error.
func (s *Source) Init(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cannot initialise NVML: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lib == nil {
		return errors.New("cannot initialise NVML: no library")
	}
	if ret := s.lib.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("cannot initialise NVML: %w", ret)
	}
	if err := s.refreshTopology(); err != nil {
		s.lib.Shutdown()
		return err
	}
	for _, err := range s.topoErrs {
		s.log.Warn("cannot enumerate GPU, will retry", "err", err)
	}
	s.initialised = true
	s.log.Info("NVML initialised", "gpus", len(s.devices))
	return nil
}

// Close shuts NVML down.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialised {
		return nil
	}
	s.initialised = false
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("cannot shut down NVML: %w", ret)
	}
	return nil
}

// Read reads every GPU once. now is the cycle time: samples newer than it
// are left for the next Read, and a device's first Read records now as its
// baseline and returns no samples.
func (s *Source) Read(ctx context.Context, now time.Time) (Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialised {
		return Reading{}, errors.New("cannot read NVML: source not initialised")
	}
	s.maybeRefresh()

	r := Reading{
		GPUs:      make([]attribution.GPU, 0, len(s.devices)),
		Processes: make([]attribution.Process, 0, s.lastProcs),
		Samples:   make([]attribution.ProcessSample, 0, s.lastSamples),
	}
	r.Errors = append(r.Errors, s.topoErrs...)
	devSamples := make([]attribution.UtilSample, 0, s.lastDevSamples)
	nowUS := micros(now)

	readable := 0
	for _, d := range s.devices {
		if err := ctx.Err(); err != nil {
			return r, fmt.Errorf("cannot read NVML: %w", err)
		}
		gpu, ok := s.readDevice(d, nowUS, &r, &devSamples)
		r.GPUs = append(r.GPUs, gpu)
		if ok {
			readable++
		}
	}
	s.lastProcs, s.lastSamples, s.lastDevSamples = len(r.Processes), len(r.Samples), len(devSamples)

	if readable == 0 && len(r.Errors) > 0 {
		return r, fmt.Errorf("cannot read any GPU: %w", errors.Join(r.Errors...))
	}
	return r, nil
}

// maybeRefresh re-reads the topology when it is due or a call hinted that
// it changed. A failed refresh keeps the old topology and is retried.
func (s *Source) maybeRefresh() {
	s.cycles++
	if !s.stale && (s.refreshEvery <= 0 || s.cycles%s.refreshEvery != 0) {
		return
	}
	if err := s.refreshTopology(); err != nil {
		s.topoErrs, s.stale = []error{err}, true // try again next Read
	}
}

// micros converts t to NVML's timestamp unit, µs since the epoch.
func micros(t time.Time) uint64 {
	us := t.UnixMicro()
	if us < 0 {
		return 0
	}
	return uint64(us)
}

// fromMicros is the inverse of micros, in UTC like the collector's clocks.
func fromMicros(us uint64) time.Time {
	return time.UnixMicro(int64(us)).UTC()
}
