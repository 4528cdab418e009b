package quotaservice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/quota"
)

// The ledger is opened again, with backoff, until it answers (as
// ClickHouse starting after serve), each failed open counted as a failed
// record; a ledger that never answers holds the service only until its
// context ends.
func TestOpenLedgerRetriesUntilItAnswers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-yet")
	s := newService(Config{Open: func(ctx context.Context) (io.Closer, error) {
		return filestore.OpenFile(ctx, filepath.Join(dir, "ledger.db"), filestore.FileOptions{})
	}}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	type opened struct {
		st  io.Closer
		err error
	}
	got := make(chan opened, 1)
	go func() {
		st, err := s.openLedger(ctx)
		got <- opened{st, err}
	}()
	testenv.Eventually(t, 10*time.Second, failedOnce(t, s))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-got:
		if o.err != nil {
			t.Fatalf("open once the ledger's directory is there: %v", o.err)
		}
		defer o.st.Close()
		if _, ok := o.st.(quota.Store); !ok {
			t.Errorf("opened %T, not a quota.Store", o.st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ledger was not opened again within 10 s of answering (the first backoff is at most 1 s)")
	}
	if n := value(t, s.failures); n != 1 {
		t.Errorf("%v failures counted, want 1", n)
	}

	never := newService(Config{Open: func(context.Context) (io.Closer, error) { return nil, errors.New("connection refused") }},
		slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_ = testenv.EventuallyErr(10*time.Second, failedOnce(t, never))
		cancel()
	}()
	if _, err := never.openLedger(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a ledger that never answers, once the context ended: %v, want context.Canceled", err)
	}
}

// value is a counter's or gauge's value.
func value(t testing.TB, m prometheus.Metric) float64 {
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatal(err)
	}
	if c := pb.GetCounter(); c != nil {
		return c.GetValue()
	}
	return pb.GetGauge().GetValue()
}

// failedOnce says whether s counted its first failure.
func failedOnce(t testing.TB, s *Service) func() error {
	return func() error {
		if n := value(t, s.failures); n < 1 {
			return fmt.Errorf("%v failures counted, want the first", n)
		}
		return nil
	}
}

// Each record's outcome is on /metrics: changes written and the time of
// the last full record, or one more failure.
func TestRecordedHealth(t *testing.T) {
	s := newService(Config{NodeLabel: "topology.kubernetes.io/region"}, slog.New(slog.DiscardHandler))
	before := time.Now()
	s.recorded(3, nil)
	s.recorded(2, nil)
	s.recorded(0, errors.New("ledger down"))
	if c, f := value(t, s.changes), value(t, s.failures); c != 5 || f != 1 {
		t.Errorf("changes %v, failures %v; want 5 and 1", c, f)
	}
	if at := value(t, s.success); at < float64(before.Unix()) || at > float64(time.Now().Unix()+1) {
		t.Errorf("success at %v, want the time of the second record (about %d)", at, before.Unix())
	}
	if s.nodeFailures == nil || s.nodeChanges == nil {
		t.Error("with a node label, its health series are missing")
	}
}
