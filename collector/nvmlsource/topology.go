package nvmlsource

import (
	"fmt"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/gpu"
)

// device is one physical GPU as enumerated by the last topology refresh.
type device struct {
	index      int
	handle     nvml.Device
	uuid       string
	model      string
	memMiB     uint64
	minor      int
	hasMinor   bool
	migEnabled bool
	mig        []migDevice
	state      *deviceState
}

// migDevice is one MIG device handle and what it says about its instance.
type migDevice struct {
	index  int // MIG device index on its GPU, for error messages
	handle nvml.Device
	inst   attribution.MIGInstance
}

// deviceState is what must survive topology refreshes: the lastSeen
// timestamps and the observed sample period. Keyed by GPU UUID, so a GPU
// that comes back under another index keeps its history.
type deviceState struct {
	procBaseline   bool
	procLastSeen   uint64 // µs
	sampleBaseline bool
	sampleLastSeen uint64 // µs
	lastSampleTS   uint64 // µs, newest device sample seen so far
	periodUS       uint64 // smallest positive device sample spacing seen

	notedUtilUnsupported    bool
	notedSamplesUnsupported bool
	notedEnergyUnsupported  bool
	notedMinorMissing       bool
}

// refreshTopology enumerates the GPUs and their MIG devices again. It
// fails only when the GPUs cannot be counted; per-device problems go to
// s.topoErrs and make the next Read try again.
func (s *Source) refreshTopology() error {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("cannot count GPUs: %w", ret)
	}
	devices := make([]*device, 0, n)
	var errs []error
	for i := range n {
		d, soft, err := s.discoverDevice(i)
		errs = append(errs, soft...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		devices = append(devices, d)
	}
	s.pruneState(devices)
	s.devices, s.topoErrs = devices, errs
	s.stale = len(errs) > 0
	return nil
}

// discoverDevice reads one GPU's identity and MIG layout. err means the
// GPU cannot be used at all; soft errors leave it usable with less detail.
func (s *Source) discoverDevice(i int) (d *device, soft []error, err error) {
	defer func() {
		if p := recover(); p != nil {
			d, err = nil, fmt.Errorf("cannot enumerate GPU %d: NVML call panicked: %v", i, p)
		}
	}()
	h, ret := s.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return nil, nil, fmt.Errorf("cannot get handle of GPU %d: %w", i, ret)
	}
	uuid, ret := h.GetUUID()
	if ret != nvml.SUCCESS {
		return nil, nil, fmt.Errorf("cannot read UUID of GPU %d: %w", i, ret)
	}
	d = &device{index: i, handle: h, uuid: uuid, state: s.stateFor(uuid)}

	if name, ret := h.GetName(); ret == nvml.SUCCESS {
		d.model = gpu.NormaliseModel(name)
	} else {
		soft = append(soft, d.errorf("read the name", ret))
	}
	var totalBytes uint64
	if mem, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
		totalBytes, d.memMiB = mem.Total, mem.Total>>20
	} else {
		soft = append(soft, d.errorf("read the memory size", ret))
	}
	s.readMinor(d)
	switch current, _, ret := h.GetMigMode(); ret {
	case nvml.SUCCESS:
		d.migEnabled = current == nvml.DEVICE_MIG_ENABLE
	case nvml.ERROR_NOT_SUPPORTED:
		// Not MIG-capable.
	default:
		soft = append(soft, d.errorf("read the MIG mode", ret))
	}
	if d.migEnabled {
		var migErrs []error
		d.mig, migErrs = discoverMIG(d, totalBytes)
		soft = append(soft, migErrs...)
	}
	return d, soft, nil
}

// readMinor reads the GPU's minor number (/dev/nvidia<minor>), which GKE's
// device plugin names GPUs by. Without it only GKE IDs go unmatched, so a
// failure is said once per GPU and is not a topology error: a soft error
// would re-enumerate the GPUs every cycle for a value that never comes.
func (s *Source) readMinor(d *device) {
	minor, ret := d.handle.GetMinorNumber()
	if ret == nvml.SUCCESS && minor >= 0 {
		d.minor, d.hasMinor = minor, true
		return
	}
	if !d.state.notedMinorMissing {
		d.state.notedMinorMissing = true
		s.log.Info("GPU has no minor number; GKE device IDs naming it cannot be matched",
			"gpu", d.index, "uuid", d.uuid, "err", ret.Error(), "minor", minor)
	}
}

// discoverMIG lists the MIG devices of a MIG-enabled GPU. Indexes are
// sparse: NOT_FOUND and INVALID_ARGUMENT mark holes, not errors.
func discoverMIG(d *device, totalBytes uint64) ([]migDevice, []error) {
	count, ret := d.handle.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, []error{d.errorf("count MIG devices", ret)}
	}
	var (
		migs []migDevice
		errs []error
	)
	for i := range count {
		h, ret := d.handle.GetMigDeviceHandleByIndex(i)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_FOUND, nvml.ERROR_INVALID_ARGUMENT:
			continue
		default:
			errs = append(errs, d.errorf(fmt.Sprintf("get MIG device %d", i), ret))
			continue
		}
		m, soft, err := readMIG(d, i, h, totalBytes)
		errs = append(errs, soft...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		migs = append(migs, m)
	}
	slices.SortFunc(migs, func(a, b migDevice) int { return a.inst.GPUInstanceID - b.inst.GPUInstanceID })
	return migs, errs
}

// readMIG reads one MIG device. Its UUID and GPU instance ID are required
// (they are what allocations and DCGM are joined on); the profile can come
// from the name or the attributes.
func readMIG(d *device, i int, h nvml.Device, totalBytes uint64) (m migDevice, soft []error, err error) {
	what := func(call string) string { return fmt.Sprintf("%s of MIG device %d", call, i) }
	uuid, ret := h.GetUUID()
	if ret != nvml.SUCCESS {
		return m, nil, d.errorf(what("read the UUID"), ret)
	}
	gi, ret := h.GetGpuInstanceId()
	if ret != nvml.SUCCESS {
		return m, nil, d.errorf(what("read the GPU instance ID"), ret)
	}
	name, nameRet := h.GetName()
	if nameRet != nvml.SUCCESS {
		name = ""
	}
	attrs, attrRet := h.GetAttributes()
	profile, slices := migProfile(name, attrs, attrRet == nvml.SUCCESS, totalBytes)
	if attrRet != nvml.SUCCESS && slices == 0 {
		soft = append(soft, d.errorf(what("read the attributes"), attrRet))
	}
	if profile == "" {
		soft = append(soft, fmt.Errorf("cannot tell the MIG profile of %s on GPU %d (%s) from name %q", uuid, d.index, d.uuid, name))
	}
	return migDevice{
		index:  i,
		handle: h,
		inst:   attribution.MIGInstance{UUID: uuid, Profile: profile, Slices: slices, GPUInstanceID: gi},
	}, soft, nil
}

// stateFor returns the persistent state of the GPU with this UUID.
func (s *Source) stateFor(uuid string) *deviceState {
	st, ok := s.state[uuid]
	if !ok {
		st = &deviceState{}
		s.state[uuid] = st
	}
	return st
}

// pruneState forgets GPUs that are gone, so a long-running collector on a
// node whose GPUs come and go does not grow without bound.
func (s *Source) pruneState(devices []*device) {
	if len(s.state) <= len(devices) {
		return
	}
	keep := make(map[string]bool, len(devices))
	for _, d := range devices {
		keep[d.uuid] = true
	}
	for uuid := range s.state {
		if !keep[uuid] {
			delete(s.state, uuid)
		}
	}
}

// gpu returns the topology part of this GPU's reading. The MIG slice is a
// copy: the DCGM join writes into it.
func (d *device) gpu() attribution.GPU {
	g := attribution.GPU{
		Index:      d.index,
		UUID:       d.uuid,
		Model:      d.model,
		MemoryMiB:  d.memMiB,
		Minor:      d.minor,
		HasMinor:   d.hasMinor,
		MIGEnabled: d.migEnabled,
	}
	if len(d.mig) > 0 {
		g.MIG = make([]attribution.MIGInstance, len(d.mig))
		for i := range d.mig {
			g.MIG[i] = d.mig[i].inst
		}
	}
	return g
}

// errorf names the GPU and the call in an error.
func (d *device) errorf(what string, err error) error {
	return fmt.Errorf("cannot %s of GPU %d (%s): %w", what, d.index, d.uuid, err)
}
