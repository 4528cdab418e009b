package sim

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// Versions the simulated driver reports.
const (
	simDriverVersion = "550.54.15"
	simNVMLVersion   = "12.550.54.15"
	simCUDAVersion   = 12040
)

// nvmlLib is the simulated NVML library. Methods defined here override the
// embedded mock; every other call answers ERROR_NOT_SUPPORTED, or, for
// library wrappers of handle methods (DeviceGetUUID(d)), calls the handle.
type nvmlLib struct {
	mock.Interface
	n *Node
}

var _ nvml.Interface = (*nvmlLib)(nil)

func newNVMLLib(n *Node) *nvmlLib {
	l := &nvmlLib{n: n}
	fillUnset(&l.Interface)
	return l
}

// Init succeeds: the simulated driver is always loaded.
func (l *nvmlLib) Init() nvml.Return { return nvml.SUCCESS }

// InitWithFlags succeeds like Init.
func (l *nvmlLib) InitWithFlags(uint32) nvml.Return { return nvml.SUCCESS }

// Shutdown succeeds.
func (l *nvmlLib) Shutdown() nvml.Return { return nvml.SUCCESS }

// ErrorString names a return code without the native library.
func (l *nvmlLib) ErrorString(r nvml.Return) string { return r.Error() }

// Extensions has no symbols to look up.
func (l *nvmlLib) Extensions() nvml.ExtendedInterface {
	return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
		return fmt.Errorf("symbol %s: %w", s, errNotSupported)
	}}
}

// SystemGetDriverVersion reports the simulated driver version.
func (l *nvmlLib) SystemGetDriverVersion() (string, nvml.Return) {
	return simDriverVersion, nvml.SUCCESS
}

// SystemGetNVMLVersion reports the simulated NVML version.
func (l *nvmlLib) SystemGetNVMLVersion() (string, nvml.Return) { return simNVMLVersion, nvml.SUCCESS }

// SystemGetCudaDriverVersion reports the simulated CUDA driver version.
func (l *nvmlLib) SystemGetCudaDriverVersion() (int, nvml.Return) {
	return simCUDAVersion, nvml.SUCCESS
}

// SystemGetCudaDriverVersion_v2 reports the simulated CUDA driver version.
func (l *nvmlLib) SystemGetCudaDriverVersion_v2() (int, nvml.Return) {
	return simCUDAVersion, nvml.SUCCESS
}

// SystemGetProcessName returns the comm of a live process.
func (l *nvmlLib) SystemGetProcessName(pid int) (string, nvml.Return) {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	if pid < 0 || uint64(pid) > uint64(^uint32(0)) {
		return "", nvml.ERROR_INVALID_ARGUMENT
	}
	p, ok := l.n.pidOwner[uint32(pid)]
	if !ok {
		return "", nvml.ERROR_NOT_FOUND
	}
	return p.comm, nvml.SUCCESS
}

// DeviceGetCount is the number of physical GPUs.
func (l *nvmlLib) DeviceGetCount() (int, nvml.Return) { return len(l.n.gpus), nvml.SUCCESS }

// DeviceGetHandleByIndex returns the GPU with that NVML index.
func (l *nvmlLib) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	for _, g := range l.n.gpus {
		if g.index == i {
			return g.dev, nvml.SUCCESS
		}
	}
	return nil, nvml.ERROR_INVALID_ARGUMENT
}

// DeviceGetHandleByUUID returns the GPU or MIG device with that UUID.
func (l *nvmlLib) DeviceGetHandleByUUID(uuid string) (nvml.Device, nvml.Return) {
	if d, ok := l.n.devByUUID[uuid]; ok {
		return d, nvml.SUCCESS
	}
	if !strings.HasPrefix(uuid, "GPU-") && !strings.HasPrefix(uuid, "MIG-") {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return nil, nvml.ERROR_NOT_FOUND
}
