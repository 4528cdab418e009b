package report

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/quota"
)

// storeOnly wraps a real ledger and passes on only the Store contract, as
// a careless wrapper (a read counter, a tracker) would: it hides the
// quota changes and node labels the store keeps.
type storeOnly struct{ ledger.Store }

// Coverage is passed on by both wrappers: this test is about the other
// abilities (ledger.Covered is required the same way).
func (s storeOnly) Coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	return s.Store.(ledger.CoverageReader).Coverage(ctx, from, to)
}

// withQuota passes on the store's quota changes too, but not its node
// labels.
type withQuota struct {
	ledger.Store
	q ledger.QuotaReader
}

func (w withQuota) Coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	return w.Store.(ledger.CoverageReader).Coverage(ctx, from, to)
}

func (w withQuota) QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	return w.q.QuotaChanges(ctx, from, to, fn)
}

// A source that does not keep what the bill needs is an error naming it,
// never a bill quietly without its quota section or with every node at
// the default carbon intensity.
func TestBuildRequiresQuotaAndNodeLabels(t *testing.T) {
	from := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	to := from.Add(24 * time.Hour)
	st := fileLedger(t, energyDayThreeNodes(), nil)
	ctx := context.Background()

	plain := book(t, "currency: USD\npolicy: allocation\ndefaultRate: 2\n")
	_, err := Build(ctx, storeOnly{st}, plain, from, to)
	if err == nil || !strings.Contains(err.Error(), "cannot read quota: ledger report.storeOnly does not keep quota changes") {
		t.Errorf("store without quota changes: err %v, want one naming the store and the quota changes", err)
	}
	_, err = Build(ctx, withQuota{st, st}, book(t, labelBookYAML), from, to)
	if err == nil || !strings.Contains(err.Error(), "cannot read the nodes' topology.kubernetes.io/region: ledger report.withQuota does not keep node labels") {
		t.Errorf("store without node labels: err %v, want one naming the store, the label and the node labels", err)
	}
	_, err = Build(ctx, coverageHidden{st}, plain, from, to)
	if err == nil || !strings.Contains(err.Error(), "cannot find the period's coverage gaps: ledger report.coverageHidden does not list its coverage") {
		t.Errorf("store without coverage: err %v, want one naming the store and its coverage", err)
	}
	// The store itself has all three: the same bill builds.
	if _, err := Build(ctx, st, book(t, labelBookYAML), from, to); err != nil {
		t.Fatal(err)
	}
}

// coverageHidden passes on quota changes and node labels but hides the
// store's coverage.
type coverageHidden struct{ *filestore.FileStore }

// Coverage with another signature hides the file store's own.
func (coverageHidden) Coverage() {}
