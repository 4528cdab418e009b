package main

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/sim"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// fullDisk fails every write while full is set, as a full or read-only
// disk under the embedded ledger does, and forwards to the real store once
// space returns.
type fullDisk struct {
	full  bool
	store *filestore.FileStore
}

func (f *fullDisk) Write(ctx context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	if f.full {
		return errors.New("disk full")
	}
	return f.store.Write(ctx, rows, fs)
}

// While the ledger cannot be written the collector keeps cycling and
// serving metrics, counts the failures in a metric, and goes on writing
// when space returns.
func TestCollectorSurvivesAFullDisk(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("..", "..", "testdata", "scenarios", "exclusive-basic", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	node, err := sim.New(ctx, sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	store, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	disk := &fullDisk{full: true, store: store}
	exp := exposition.New(sc.Node.Name, exposition.Options{})
	c, closeSrc, err := simulatedCollector(ctx, sc, node, simOptions{TeamLabel: "team", ContinueOnWriteError: true}, []collector.Sink{disk}, exp)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrc()
	failures := 0
	for at := time.Duration(0); at <= 3*time.Minute; at += sc.PollInterval {
		if at == 150*time.Second {
			disk.full = false
		}
		if err := node.Advance(sc.Start.Add(at)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Cycle(ctx); err != nil {
			failures++
		}
	}
	if failures != 2 {
		t.Errorf("%d cycles failed to write, want 2 (the intervals that closed while the disk was full)", failures)
	}
	body := scrape(t, exp)
	for _, want := range []string{"gpuledger_ledger_write_errors_total{node=\"" + sc.Node.Name + "\"} 2", "gpuledger_gpu_capacity_seconds_total{"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q while the disk was full", want)
		}
	}
	n := countRows(t, store, sc.Start, sc.Start.Add(time.Hour))
	if n == 0 {
		t.Error("nothing was written after space returned")
	}
}

func scrape(t *testing.T, exp *exposition.Exporter) string {
	t.Helper()
	rec := httptest.NewRecorder()
	exp.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
