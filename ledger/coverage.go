package ledger

import (
	"github.com/gpuledger/gpuledger/attribution"

	"context"
	"time"
)

// FindingNodeLeft is the kind of the finding a collector appends when
// it stops on a signal (attribution.FindingNodeLeft): no gap follows it.
const FindingNodeLeft = attribution.FindingNodeLeft

// MaxCoverageHoles bounds the holes one Coverage call returns, whatever
// the range: a collector that crash-loops every minute for a month would
// otherwise hand a report tens of thousands of holes per GPU.
const MaxCoverageHoles = 20000

// Hole is a stretch [From, To) of one GPU's time with no ledger row
// between two of its rows.
type Hole struct {
	From, To time.Time
}

// DeviceCoverage is what the ledger holds of one GPU (one cluster, node
// and GPU UUID) in a range: from the start of its first row whose
// interval starts in the range to the end of its last, and the holes
// between.
type DeviceCoverage struct {
	Cluster       string
	Node, GPUUUID string
	First, Last   time.Time
	Holes         []Hole
}

// Coverage is every GPU the ledger saw in a range.
type Coverage struct {
	Devices []DeviceCoverage // by cluster, node, then GPU UUID
	// Truncated is set when the range had more than MaxCoverageHoles
	// holes: the first ones (by node, GPU, time) are listed.
	Truncated bool
}

// CoverageReader is a store that finds its own holes: the embedded file
// and ClickHouse both are one, and run the search where the rows are.
type CoverageReader interface {
	// Coverage lists the GPUs with rows whose interval starts in
	// [from, to), each with its first row's start, its last row's end and
	// the holes between. A hole is where the next interval (by start)
	// starts after every earlier interval of the GPU has ended.
	Coverage(ctx context.Context, from, to time.Time) (Coverage, error)
}

// Covered asks s for its coverage: an error naming s when it cannot list
// its holes. The report requires it, so a wrapped store that forgets the
// method fails loudly instead of billing a short month as whole.
func Covered(s any) (CoverageReader, error) {
	return need[CoverageReader](s, "does not list its coverage")
}
