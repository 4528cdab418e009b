package pricebook

// builtinMemoryMiB is the device memory NVML reports (MiB) for the models
// the simulator and the docs use, so a memory-weighted book need not list
// them. They match sim/scenario's model table (TestBuiltinMemory
// checks): the report must divide by what the collector's devices hold.
// Any other model needs a memoryMiB entry once it has memory-weighted
// charges; guessing a size would misprice every container on it.
var builtinMemoryMiB = map[string]int64{
	"A100-SXM4-40GB": 40960,
	"A100-SXM4-80GB": 81920,
	"H100-SXM5-80GB": 81920,
	"H200-141GB":     143771,
}

// maxMemoryMiB bounds a memoryMiB entry: 2^30 MiB is an exabyte, far past
// any GPU, and keeps MiB-seconds / MiB well inside float64's exact range.
const maxMemoryMiB = 1 << 30
