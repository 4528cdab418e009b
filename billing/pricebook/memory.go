package pricebook

import "github.com/gpuledger/gpuledger/gpu"

// builtinMemoryMiB is the device memory NVML reports (MiB) for the models
// of the gpu catalogue, so a memory-weighted book need not list them: the
// report divides by what the collector's devices hold. Any other model
// needs a memoryMiB entry once it has memory-weighted charges; guessing a
// size would misprice every container on it.
func builtinMemoryMiB(model string) (int64, bool) {
	m, err := gpu.ModelMemoryMiB(model)
	if err != nil {
		return 0, false
	}
	return int64(m), true
}

// maxMemoryMiB bounds a memoryMiB entry: 2^30 MiB is an exabyte, far past
// any GPU, and keeps MiB-seconds / MiB well inside float64's exact range.
const maxMemoryMiB = 1 << 30
