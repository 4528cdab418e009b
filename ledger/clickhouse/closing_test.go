package clickhouse

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

// heldHours is n hours of one whole A100 held by team ml from start.
func heldHours(start time.Time, n int) []attribution.Row {
	var rows []attribution.Row
	for i := range n {
		s := start.Add(time.Duration(i) * time.Hour)
		base := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1", SliceID: "GPU-1",
			GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Method: attribution.MethodMeasured}
		c := base
		c.Kind, c.Team, c.Namespace, c.Pod, c.PodUID, c.Container = attribution.KindContainer, "ml", "ml", "train", "uid-1", "c"
		c.AllocatedGPUSeconds, c.UsedGPUSeconds = 3600, 1800
		id := base
		id.Kind, id.UsedGPUSeconds = attribution.KindIdle, 1800
		rows = append(rows, c, id)
	}
	return rows
}

// On a real ClickHouse server: October (10 h of an A100 at 2.40, 24.00)
// closes with its files byte for byte, once; five late hours are billed
// in November at 2.40 (12.00), 21.00 once 3.00 is posted; the history
// keeps the closing through a reopening; a retried insert of one record
// reads once.
func TestClosingsClickHouse(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	appendAll(t, s, append(heldHours(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), 10), heldHours(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 4)...), 1000)
	bookOf := func(rate string) ([]byte, *pricebook.Book) {
		b := []byte("currency: USD\ntimezone: UTC\npolicy: allocation\nidle: shared\nrates:\n  A100-SXM4-80GB: " + rate + "\ndefaultRate: 1\n")
		book, err := pricebook.Parse("prices.yaml", b)
		if err != nil {
			t.Fatal(err)
		}
		return b, book
	}
	b240, book240 := bookOf("2.40")
	b300, book300 := bookOf("3.00")
	c, err := report.CloseMonth(ctx, s, s, book240, b240, "2026-10", time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := report.CloseMonth(ctx, s, s, book300, b300, "2026-10", time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ledger.ErrAlreadyClosed) {
		t.Fatalf("closing twice: %v", err)
	}
	got, err := report.ClosedMonth(ctx, s, "2026-10")
	if err != nil || got == nil {
		t.Fatalf("closed October: %v %v", got, err)
	}
	for _, name := range ledger.ClosedFiles {
		if !bytes.Equal(got.Files[name], c.Files[name]) {
			t.Errorf("stored %s differs", name)
		}
	}
	if !bytes.Contains(got.Files["json"], []byte(`"total": 24.00`)) || !bytes.Equal(got.PriceBook, b240) {
		t.Fatalf("October stored %s with book %q", got.Files["json"][:200], got.PriceBook)
	}

	if err := s.Append(ctx, heldHours(time.Date(2026, 10, 1, 10, 0, 0, 0, time.UTC), 5), nil); err != nil {
		t.Fatal(err)
	}
	nov := func() int64 {
		from, to, _ := report.Month("2026-11", book300.Location)
		rep, err := report.BuildOpen(ctx, s, s, book300, "2026-11", from, to, to)
		if err != nil {
			t.Fatal(err)
		}
		return rep.AdjustmentsTotal()
	}
	if a := nov(); a != 1200 {
		t.Fatalf("November's adjustments %d cents, want 1200 (5 late h x 2.40)", a)
	}
	if err := report.PostAdjustment(ctx, s, "2026-10", b300, "contract rate", time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if a := nov(); a != 2100 {
		t.Fatalf("November's adjustments after the post %d cents, want 2100 (15 h x 3.00 - 24.00)", a)
	}

	if err := report.Reopen(ctx, s, "2026-10", "labels", time.Date(2026, 11, 6, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	// A retried insert of the same record (same seq) reads once.
	dup := ledger.Closing{Period: "2026-10", Action: ledger.ActionReopen, At: time.Date(2026, 11, 6, 0, 0, 0, 0, time.UTC), Reason: "labels"}
	if err := s.insert(ctx, tableClosings, closingColumns, []any{[]string{dup.Period}, []int64{dup.At.UnixNano()}, []string{dup.Action},
		[]string{dup.Reason}, []string{""}, []string{""}, []string{""}, []string{""}, []string{""}, []string{""}, []string{""}, []string{""}}, 1); err != nil {
		t.Fatal(err)
	}
	h, err := s.ClosingHistory(ctx, "2026-10", false)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, x := range h {
		actions = append(actions, x.Action)
	}
	if strings.Join(actions, ",") != "close,post,reopen" || ledger.Closed(h) != nil {
		t.Fatalf("history %v", actions)
	}
	if _, err := s.ClosingHistory(ctx, "2026-10' OR 1=1 --", false); err == nil {
		t.Fatal("a period that is no month was spliced into a query")
	}
}
