package web

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/ledger"
)

// deviceStore is the real ledger whose per-device aggregates (read only
// for the FOCUS file) fail to read, or read back a row kind no FOCUS row
// can be written for.
type deviceStore struct {
	fullStore
	fail bool
}

func (d deviceStore) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if !q.ByDevice {
		return d.fullStore.Aggregate(ctx, q)
	}
	if d.fail {
		return nil, errors.New("disk gone")
	}
	aggs, err := d.fullStore.Aggregate(ctx, q)
	for i := range aggs {
		aggs[i].Kind = "bogus"
	}
	return aggs, err
}

// The FOCUS file reads the ledger: a read that fails is the ledger's
// (503, counted, the message saying what was read), while a file that
// cannot be written from what was read is the page's own 500 and no
// ledger failure.
func TestFOCUSReadAndWriteFailures(t *testing.T) {
	db, prices := testLedger(t)
	for _, c := range []struct {
		fail     bool
		code     int
		body     string
		failures string
	}{
		{true, 503, "The ledger cannot be read right now (cannot read per-device ledger aggregates: disk gone)", "1"},
		{false, 500, `unknown row kind "bogus"`, "0"},
	} {
		open := func(ctx context.Context) (ledger.Store, error) {
			st, err := fileOpener(db)(ctx)
			if err != nil {
				return nil, err
			}
			f, err := full(st)
			if err != nil {
				return nil, err
			}
			return deviceStore{f, c.fail}, nil
		}
		hs := newTestServer(t, open, prices)
		resp, body := fetch(t, hs.URL+"/reports/2026-10.focus.csv")
		if resp.StatusCode != c.code || !strings.Contains(body, c.body) {
			t.Errorf("fail %v: %d %q, want %d with %q", c.fail, resp.StatusCode, body, c.code, c.body)
		}
		_, metrics := fetch(t, hs.URL+"/metrics")
		if m := ledgerFailuresPattern.FindStringSubmatch(metrics); m == nil || m[1] != c.failures {
			t.Errorf("fail %v: ledger failures %v, want %s", c.fail, m, c.failures)
		}
	}
}
