package dcgmsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// Modes of NewDCGMClient.
const (
	ModeEmbedded = "embedded" // host engine inside this process
	ModeRemote   = "remote"   // connect to a running nv-hostengine
)

// defaultRemoteAddress is nv-hostengine's default listening address.
const defaultRemoteAddress = "localhost:5555"

// dcgmClient is the Client over go-dcgm. go-dcgm keeps one process-wide
// connection, so there is at most one useful dcgmClient per process.
type dcgmClient struct {
	log     *slog.Logger
	cleanup func()

	mu       sync.Mutex
	watching bool
	group    dcgm.GroupHandle
	fields   dcgm.FieldHandle
	entities []dcgm.GroupEntityPair
	ents     map[dcgm.GroupEntityPair]Entity
}

var _ Client = (*dcgmClient)(nil)

// NewDCGMClient starts DCGM: mode "embedded" runs the host engine in this
// process, "remote" connects to nv-hostengine at address (host:port, a
// unix socket path, or a tcp://, unix:// or vsock:// connection string;
// empty means localhost:5555). It builds without libdcgm and returns an
// error when the library cannot be loaded.
func NewDCGMClient(ctx context.Context, mode, address string, log *slog.Logger) (Client, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var args []string
	switch mode {
	case ModeEmbedded:
	case ModeRemote:
		args = remoteArgs(address)
	default:
		return nil, fmt.Errorf("cannot start DCGM: unknown mode %q (want %q or %q)", mode, ModeEmbedded, ModeRemote)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cannot start DCGM: %w", err)
	}
	cleanup, err := startDCGM(ctx, mode, args)
	if err != nil {
		return nil, err
	}
	log.Info("DCGM started", "mode", mode, "address", strings.Join(args, " "))
	return &dcgmClient{log: log, cleanup: cleanup}, nil
}

// remoteArgs turns an address into go-dcgm's Standalone arguments:
// connection strings as they are, otherwise address and "is a unix
// socket" flag.
func remoteArgs(address string) []string {
	switch lower := strings.ToLower(address); {
	case address == "":
		return []string{defaultRemoteAddress, "0"}
	case strings.HasPrefix(lower, "tcp://"), strings.HasPrefix(lower, "unix://"), strings.HasPrefix(lower, "vsock://"):
		return []string{address}
	case strings.HasPrefix(address, "/"), strings.HasPrefix(address, "@"):
		return []string{address, "1"}
	default:
		return []string{address, "0"}
	}
}

type startResult struct {
	cleanup func()
	err     error
}

// startDCGM runs dcgm.Init, which cannot be cancelled, in a goroutine so
// ctx bounds the wait; a start that completes after ctx gave up is shut
// down again.
func startDCGM(ctx context.Context, mode string, args []string) (func(), error) {
	done := make(chan startResult, 1)
	go func() { done <- initDCGM(mode, args) }()
	select {
	case res := <-done:
		return res.cleanup, res.err
	case <-ctx.Done():
		go func() {
			if res := <-done; res.err == nil {
				res.cleanup()
			}
		}()
		return nil, fmt.Errorf("cannot start DCGM: %w", ctx.Err())
	}
}

// initDCGM calls dcgm.Init, turning a panic (go-dcgm dlopens libdcgm and
// has panicked on loader failures in some versions) into an error.
func initDCGM(mode string, args []string) (res startResult) {
	defer func() {
		if p := recover(); p != nil {
			res = startResult{err: fmt.Errorf("cannot start DCGM: libdcgm not found: %v", p)}
		}
	}()
	m := dcgm.Embedded
	if mode == ModeRemote {
		m = dcgm.Standalone
	}
	cleanup, err := dcgm.Init(m, args...)
	switch {
	case err == nil:
		return startResult{cleanup: cleanup}
	case strings.Contains(err.Error(), "libdcgm") && strings.Contains(err.Error(), "not found"):
		return startResult{err: fmt.Errorf("cannot start DCGM: libdcgm not found: %w", err)}
	default:
		return startResult{err: fmt.Errorf("cannot start DCGM (%s mode): %w", mode, err)}
	}
}

// Watch discovers the GPU and GPU-instance entities, puts them in one
// group and watches the fields at the given period.
func (c *dcgmClient) Watch(ctx context.Context, period time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cannot watch DCGM fields: %w", err)
	}
	if period <= 0 {
		return fmt.Errorf("cannot watch DCGM fields: update period %v is not positive", period)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unwatch()

	entities, ents, err := c.discover()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("gpuledger-%d", os.Getpid())
	group, err := dcgm.CreateGroup(name)
	if err != nil {
		return fmt.Errorf("cannot create DCGM group: %w", err)
	}
	for _, e := range entities {
		if err := dcgm.AddEntityToGroup(group, e.EntityGroupId, e.EntityId); err != nil {
			_ = dcgm.DestroyGroup(group)
			return fmt.Errorf("cannot add DCGM %s entity %d to the group: %w", e.EntityGroupId, e.EntityId, err)
		}
	}
	fields, err := dcgm.FieldGroupCreate(name, watchedFields)
	if err != nil {
		_ = dcgm.DestroyGroup(group)
		return fmt.Errorf("cannot create DCGM field group: %w", err)
	}
	// Keep a few periods: only the latest value is read.
	keepAge := max(4*period, 10*time.Second).Seconds()
	if err := dcgm.WatchFieldsWithGroupEx(fields, group, period.Microseconds(), keepAge, 4); err != nil {
		_ = dcgm.FieldGroupDestroy(fields)
		_ = dcgm.DestroyGroup(group)
		return fmt.Errorf("cannot watch DCGM fields every %v: %w", period, err)
	}
	c.group, c.fields, c.entities, c.ents, c.watching = group, fields, entities, ents, true
	c.log.Info("watching DCGM fields", "entities", len(entities), "period", period)
	return nil
}

// discover lists the GPUs and GPU instances DCGM knows. The hierarchy
// gives each instance's NVML GPU index and GPU instance ID, which is what
// Attach joins on; it also maps DCGM GPU IDs to NVML indexes where they
// differ.
func (c *dcgmClient) discover() ([]dcgm.GroupEntityPair, map[dcgm.GroupEntityPair]Entity, error) {
	gpus, err := dcgm.GetSupportedDevices()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot list DCGM GPUs: %w", err)
	}
	nvmlIndex := make(map[uint]int, len(gpus))
	var instances []dcgm.MigHierarchyInfo_v2
	if h, err := dcgm.GetGPUInstanceHierarchy(); err != nil {
		c.log.Warn("cannot read the DCGM MIG hierarchy, watching whole GPUs only", "err", err)
	} else {
		for i := uint(0); i < h.Count && i < uint(len(h.EntityList)); i++ {
			info := h.EntityList[i]
			if info.Parent.EntityGroupId == dcgm.FE_GPU {
				nvmlIndex[info.Parent.EntityId] = int(info.Info.NvmlGpuIndex)
			}
			if info.Entity.EntityGroupId == dcgm.FE_GPU_I {
				instances = append(instances, info)
			}
		}
	}
	ents := make(map[dcgm.GroupEntityPair]Entity, len(gpus)+len(instances))
	entities := make([]dcgm.GroupEntityPair, 0, len(gpus)+len(instances))
	for _, id := range gpus {
		idx, ok := nvmlIndex[id]
		if !ok {
			idx = int(id) // DCGM numbers GPUs as NVML does unless told otherwise
		}
		e := dcgm.GroupEntityPair{EntityGroupId: dcgm.FE_GPU, EntityId: id}
		ents[e] = Entity{GPUIndex: idx, GPUInstanceID: -1}
		entities = append(entities, e)
	}
	for _, info := range instances {
		e := info.Entity
		ents[e] = Entity{GPUIndex: int(info.Info.NvmlGpuIndex), GPUInstanceID: int(info.Info.NvmlInstanceId)}
		entities = append(entities, e)
	}
	if len(entities) == 0 {
		return nil, nil, errors.New("cannot watch DCGM fields: DCGM reports no supported GPU")
	}
	return entities, ents, nil
}

// Read returns the latest values of every watched entity.
func (c *dcgmClient) Read(ctx context.Context) ([]Values, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cannot read DCGM fields: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching {
		return nil, errors.New("cannot read DCGM fields: not watching (Watch first)")
	}
	fvs, err := dcgm.EntitiesGetLatestValues(c.entities, watchedFields, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read DCGM fields of %d entities: %w", len(c.entities), err)
	}
	return valuesFrom(fvs, c.ents), nil
}

// Close stops watching and shuts DCGM down.
func (c *dcgmClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unwatch()
	if c.cleanup != nil {
		c.cleanup()
		c.cleanup = nil
	}
	return nil
}

// unwatch drops the current watch, if any. Errors only mean DCGM already
// forgot it.
func (c *dcgmClient) unwatch() {
	if !c.watching {
		return
	}
	_ = dcgm.UnwatchFields(c.fields, c.group)
	_ = dcgm.FieldGroupDestroy(c.fields)
	_ = dcgm.DestroyGroup(c.group)
	c.watching = false
}
