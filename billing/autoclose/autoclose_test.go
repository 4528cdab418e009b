package autoclose

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

const berlinBook = "currency: USD\ntimezone: Europe/Berlin\npolicy: allocation\ndefaultRate: 2\n"

// ledgerWithOctober is a file ledger with October's last hours (Berlin
// time) of one GPU held by team ml.
func ledgerWithOctober(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "ledger.db")
	st, err := filestore.OpenFile(ctx, db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rows []attribution.Row
	for s := time.Date(2026, 10, 31, 18, 0, 0, 0, time.UTC); s.Before(time.Date(2026, 10, 31, 23, 0, 0, 0, time.UTC)); s = s.Add(time.Hour) {
		base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1", SliceID: "GPU-1",
			GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Method: attribution.MethodMeasured}
		c := base
		c.Kind, c.Team, c.Namespace, c.Pod, c.PodUID, c.Container = attribution.KindContainer, "ml", "ml", "train", "uid-1", "c"
		c.AllocatedGPUSeconds, c.UsedGPUSeconds = 3600, 1800
		un, ua, id := base, base, base
		un.Kind, ua.Kind = attribution.KindUnallocated, attribution.KindUnattributed
		id.Kind, id.UsedGPUSeconds = attribution.KindIdle, 1800
		rows = append(rows, c, un, ua, id)
	}
	if err := st.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	return db
}

func config(db string, open func(context.Context) (ledger.Store, error)) Config {
	if open == nil {
		open = func(ctx context.Context) (ledger.Store, error) {
			return filestore.OpenFile(ctx, db, filestore.FileOptions{MustExist: true})
		}
	}
	return Config{
		Open: open,
		Book: func() (*pricebook.Book, []byte, error) {
			b, err := pricebook.Parse("prices.yaml", []byte(berlinBook))
			return b, []byte(berlinBook), err
		},
		AfterDays: 1,
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// A month ends in the price book's time zone: Berlin's October ends at
// 31 October 23:00 UTC, so with one day of grace it is due at 1 November
// 23:00 UTC, not a minute before, and only once.
func TestOnceInTheBooksTimeZone(t *testing.T) {
	db := ledgerWithOctober(t)
	ctx := context.Background()
	cfg := config(db, nil)
	if got, err := Once(ctx, cfg, time.Date(2026, 11, 1, 22, 59, 0, 0, time.UTC)); err != nil || len(got) != 0 {
		t.Fatalf("1 November 22:59 UTC: closed %v (%v), want nothing yet", got, err)
	}
	got, err := Once(ctx, cfg, time.Date(2026, 11, 1, 23, 0, 0, 0, time.UTC))
	if err != nil || strings.Join(got, ",") != "2026-10" {
		t.Fatalf("1 November 23:00 UTC: closed %v (%v), want 2026-10", got, err)
	}
	if got, err := Once(ctx, cfg, time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)); err != nil || len(got) != 0 {
		t.Fatalf("a second check closed %v (%v)", got, err)
	}
}

// hidden is a store that does not pass on its closings.
type hidden struct{ ledger.Store }

// A store that keeps no closings is an error naming it, never a month
// quietly left open.
func TestOnceNeedsClosings(t *testing.T) {
	db := ledgerWithOctober(t)
	cfg := config(db, func(ctx context.Context) (ledger.Store, error) {
		st, err := filestore.OpenFile(ctx, db, filestore.FileOptions{MustExist: true})
		return hidden{st}, err
	})
	_, err := Once(context.Background(), cfg, time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC))
	if err == nil || !strings.Contains(err.Error(), "autoclose.hidden keeps no closed months") {
		t.Fatalf("err %v, want one naming the store without closings", err)
	}
}
