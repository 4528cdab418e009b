package tenancy

// Mode is how a container's slice shares its GPU: the ledger's
// sharing_mode column (docs/ledger-format.md). Its text is the contract;
// the ledger row keeps it as a plain string.
type Mode string

// Sharing modes of the ledger contract.
const (
	Exclusive      Mode = "exclusive"
	Timeslicing    Mode = "timeslicing"
	MPS            Mode = "mps"
	MIG            Mode = "mig"
	MIGTimeslicing Mode = "mig+timeslicing"
	MIGMPS         Mode = "mig+mps"
	HAMi           Mode = "hami"
	DRA            Mode = "dra"
)

// Props are what the code asks of a sharing mode. They live in one table
// so that a new mode is described once, not in every switch that tests it.
type Props struct {
	// MIG: the slice is (on) a MIG instance, a hardware partition of the
	// GPU with its own memory.
	MIG bool
	// Replicated: one device (a whole GPU or a MIG instance) is split
	// among replicas, by time-slicing or MPS, with no memory isolation
	// between them.
	Replicated bool
	// NoisyNeighbours: a whole GPU shared with no compute isolation, where
	// one tenant can starve another (the noisy-neighbour detector).
	NoisyNeighbours bool
	// MemoryGrowth: the memory-growth detector watches it. A leak hurts
	// the replicas sharing the device (Replicated), or on MIG alone only
	// the leaker's own instance. Exclusive has no neighbour; HAMi enforces
	// each vGPU's memory limit; DRA says nothing about how it is shared.
	MemoryGrowth bool
}

var props = map[Mode]Props{
	Exclusive:      {},
	Timeslicing:    {Replicated: true, NoisyNeighbours: true, MemoryGrowth: true},
	MPS:            {Replicated: true, NoisyNeighbours: true, MemoryGrowth: true},
	MIG:            {MIG: true, MemoryGrowth: true},
	MIGTimeslicing: {MIG: true, Replicated: true, MemoryGrowth: true},
	MIGMPS:         {MIG: true, Replicated: true, MemoryGrowth: true},
	HAMi:           {NoisyNeighbours: true},
	DRA:            {},
}

// Props returns the mode's properties; a mode not in the contract has
// none (the zero Props), so no detector watches it.
func (m Mode) Props() Props { return props[m] }

// Replicas is the mode of a slice shared among replicas on a whole GPU
// (mig false) or on a MIG instance, under MPS or time-slicing.
func Replicas(mig, mps bool) Mode {
	switch {
	case mig && mps:
		return MIGMPS
	case mig:
		return MIGTimeslicing
	case mps:
		return MPS
	}
	return Timeslicing
}
