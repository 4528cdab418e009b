package tokencost

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// readCounter is a ledger that counts its per-pod reads.
type readCounter struct {
	ledger.Store
	reads int
}

func (r *readCounter) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	r.reads++
	return r.Store.Aggregate(ctx, q)
}

// Build is the one join of both front ends, and serve tells from its error
// whose failure it was: Prometheus not answering is a *PrometheusError
// with the failure's own text, and the ledger is then never read; the
// ledger failing once Prometheus answered is not one.
func TestBuildTellsPrometheusFromLedger(t *testing.T) {
	ctx := context.Background()
	book, err := pricebook.Parse("prices.yaml", []byte(bookYAML))
	if err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)

	down, err := NewClient("http://127.0.0.1:1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	src := &readCounter{Store: st}
	_, err = Build(ctx, down, src, book, from, to)
	var pe *PrometheusError
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "cannot count vllm tokens: cannot query Prometheus http://127.0.0.1:1") {
		t.Errorf("Prometheus down: %T %v, want a *PrometheusError saying it cannot query it", err, err)
	}
	if src.reads != 0 {
		t.Errorf("Prometheus down: the ledger was read %d times, want none", src.reads)
	}

	up := fakeProm(t, map[string]string{"vllm:prompt_tokens_total": series(`"namespace":"a","pod":"p-0","model_name":"x"`, "300")})
	if got, err := Build(ctx, up, src, book, from, to); err != nil || src.reads != 1 || got.Unpriced != 1 || len(got.Rows) != 0 {
		t.Errorf("an empty ledger: %+v, %v after %d reads; want the one pod unpriced after one read", got, err, src.reads)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Build(ctx, up, src, book, from, to)
	if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "cannot read the ledger's per-pod aggregates") {
		t.Errorf("ledger closed: %T %v, want the pricing's error, not Prometheus's", err, err)
	}
}
