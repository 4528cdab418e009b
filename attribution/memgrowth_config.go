package attribution

import "time"

// Defaults of MemoryGrowthConfig (docs/alerts.md, "GPULedgerMemoryGrowth",
// says why each is what it is).
const (
	// DefaultMemoryWindow is long because leaks are slow and model
	// loading is not: a server that loads its weights for five minutes
	// has finished long before a 30-minute window ends.
	DefaultMemoryWindow = 30 * time.Minute
	// DefaultMemoryBuckets cuts the window into lower-envelope buckets;
	// a training step's sawtooth (seconds to a few minutes) fits in one
	// bucket of three minutes, so its minimum stays flat.
	DefaultMemoryBuckets = 10
	// DefaultMemoryMinGrowthMiB is the least rise of the lower envelope
	// over the window worth a finding: allocator caches and fragmentation
	// move memory by less.
	DefaultMemoryMinGrowthMiB = 256
	// DefaultMemoryMinR2 asks the lower envelope to follow a straight
	// line: a steady leak does, one late allocation does not.
	DefaultMemoryMinR2 = 0.8
	// DefaultMemoryMinRising is the share of bucket-to-bucket steps that
	// must rise: one allocation, or loading in a few stages, rises in
	// one or a few steps, a leak in most.
	DefaultMemoryMinRising = 0.5
	// DefaultMemoryMaxGiveBack is how much of its growth the lower
	// envelope may give back (the sum of its falls) and still count as
	// growing: a loop that frees what it takes gives back all of it.
	DefaultMemoryMaxGiveBack = 0.1
	// DefaultMemoryMinGrowthOverSwing asks the growth to be at least half
	// the container's typical swing within one bucket. Memory is sampled
	// once per poll, so the lowest sample of a bucket may miss a
	// sawtooth's floor by up to its rise over one poll; when the tooth's
	// period and the poll nearly divide each other, that miss drifts
	// steadily from bucket to bucket and looks like a slow leak. The
	// drift is at most swing x poll / period, under half the swing for
	// any tooth longer than two polls.
	DefaultMemoryMinGrowthOverSwing = 0.5
)

// MemoryGrowthConfig sets the memory-growth detector (memgrowth.go). Zero
// values take the defaults above.
type MemoryGrowthConfig struct {
	// Window is how far back the trend is judged. The container must
	// have held the device for all of it.
	Window time.Duration
	// Buckets is how many pieces the window is cut into; each keeps the
	// lowest memory sampled in it (the lower envelope).
	Buckets int
	// MinGrowthMiB is the least rise of the lower envelope, first bucket
	// to last.
	MinGrowthMiB float64
	// MinR2 is the least coefficient of determination of a straight line
	// fitted to the lower envelope.
	MinR2 float64
	// MinRising is the least share of steps between consecutive buckets
	// that rise.
	MinRising float64
	// MaxGiveBack is the most the envelope's falls may add up to, as a
	// share of its growth.
	MaxGiveBack float64
	// MinGrowthOverSwing is the least growth as a share of the median,
	// over the buckets, of the spread between a bucket's highest and
	// lowest sample.
	MinGrowthOverSwing float64
}

func (c MemoryGrowthConfig) withDefaults() MemoryGrowthConfig {
	if c.Window <= 0 {
		c.Window = DefaultMemoryWindow
	}
	if c.Buckets < 3 {
		c.Buckets = DefaultMemoryBuckets
	}
	if !(c.MinGrowthMiB > 0) {
		c.MinGrowthMiB = DefaultMemoryMinGrowthMiB
	}
	if !(c.MinR2 > 0) {
		c.MinR2 = DefaultMemoryMinR2
	}
	if !(c.MinRising > 0) {
		c.MinRising = DefaultMemoryMinRising
	}
	if !(c.MaxGiveBack > 0) {
		c.MaxGiveBack = DefaultMemoryMaxGiveBack
	}
	if !(c.MinGrowthOverSwing > 0) {
		c.MinGrowthOverSwing = DefaultMemoryMinGrowthOverSwing
	}
	return c
}
