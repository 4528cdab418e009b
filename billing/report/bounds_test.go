package report

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// boundedFile is a ledger that finds the bounds of its edge hours itself
// (as ClickHouse does in the server) and refuses to stream rows: a report
// at 10,000 GPUs must not pull the ~700,000 rows of each edge hour.
type boundedFile struct {
	*filestore.FileStore
	t     *testing.T
	asked int
	// hourReads counts the hour aggregates read.
	hourReads int
}

func (b *boundedFile) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.Bucket == ledger.BucketHour {
		b.hourReads++
	}
	return b.FileStore.Aggregate(ctx, q)
}

func (b *boundedFile) Rows(context.Context, time.Time, time.Time, func(attribution.Row) error) error {
	b.t.Error("the report streamed ledger rows from a source that finds its own row bounds")
	return errors.New("rows streamed")
}

func (b *boundedFile) FirstRowStart(ctx context.Context, from, to time.Time) (time.Time, error) {
	b.asked++
	return streamedBounds{b.FileStore}.FirstRowStart(ctx, from, to)
}

func (b *boundedFile) LastRowEnd(ctx context.Context, from, to time.Time) (time.Time, error) {
	b.asked++
	return streamedBounds{b.FileStore}.LastRowEnd(ctx, from, to)
}

// The ledger of a month that starts at 06:20 on the 20th and stops at
// 14:37 on the 24th (Los Angeles): the report's data bounds are those
// instants, asked of the source, with no row streamed.
func TestDataBoundsAreAskedNotStreamed(t *testing.T) {
	b := bookFor(t, "USD", "America/Los_Angeles", "allocation", "platform", map[string]string{"A100": "2"}, "2")
	from, to, _ := Month("2026-11", b.Location)
	start := time.Date(2026, 11, 20, 6, 20, 0, 0, b.Location)
	end := time.Date(2026, 11, 24, 14, 37, 0, 0, b.Location)
	gpus := []gpu{{node: "n", uuid: "GPU-1", model: "A100", mode: "exclusive", from: start, to: end}}
	tenants := []tenant{{gpu: 0, ns: "ads", pod: "p", container: "c", team: "ads", share: 1, busy: 0.5, start: start, end: end}}
	src := &boundedFile{FileStore: fileLedger(t, ledgerRows(gpus, tenants, time.Minute), nil), t: t}

	r := mustBuild(t, src, b, from, to)
	if !r.DataStart.Equal(start) || !r.DataEnd.Equal(end) {
		t.Errorf("data %s to %s, want %s to %s", r.DataStart, r.DataEnd, start, end)
	}
	if src.asked != 2 {
		t.Errorf("the source was asked for %d bounds, want 2 (the first and the last hour)", src.asked)
	}
}

// A day's report (its data in one day) reads that day's hours once, not
// once for its first hour and again for its last, and still finds both
// instants; a month whose data spans days reads its two edge days.
func TestOneDayReadsItsHoursOnce(t *testing.T) {
	b := bookFor(t, "USD", "America/Los_Angeles", "allocation", "platform", map[string]string{"A100": "2"}, "2")
	start := time.Date(2026, 11, 20, 6, 20, 0, 0, b.Location)
	end := time.Date(2026, 11, 20, 14, 37, 0, 0, b.Location)
	gpus := []gpu{{node: "n", uuid: "GPU-1", model: "A100", mode: "exclusive", from: start, to: end}}
	tenants := []tenant{{gpu: 0, ns: "ads", pod: "p", container: "c", team: "ads", share: 1, busy: 0.5, start: start, end: end}}
	src := &boundedFile{FileStore: fileLedger(t, ledgerRows(gpus, tenants, time.Minute), nil), t: t}
	for _, c := range []struct {
		name      string
		from, to  time.Time
		hourReads int
	}{
		{"the day", time.Date(2026, 11, 20, 0, 0, 0, 0, b.Location), time.Date(2026, 11, 21, 0, 0, 0, 0, b.Location), 1},
		{"the month", time.Date(2026, 11, 1, 0, 0, 0, 0, b.Location), time.Date(2026, 12, 1, 0, 0, 0, 0, b.Location), 1},
		{"two days", time.Date(2026, 11, 19, 0, 0, 0, 0, b.Location), time.Date(2026, 11, 21, 0, 0, 0, 0, b.Location), 1},
	} {
		src.hourReads, src.asked = 0, 0
		r := mustBuild(t, src, b, c.from, c.to)
		if !r.DataStart.Equal(start) || !r.DataEnd.Equal(end) {
			t.Errorf("%s: data %s to %s, want %s to %s", c.name, r.DataStart, r.DataEnd, start, end)
		}
		if src.hourReads != c.hourReads || src.asked != 2 {
			t.Errorf("%s: %d hour reads and %d bounds asked, want %d and 2", c.name, src.hourReads, src.asked, c.hourReads)
		}
	}
	// Data over two days: each edge day's hours.
	late := time.Date(2026, 11, 21, 3, 0, 0, 0, b.Location)
	gpus[0].to, tenants[0].end = late, late
	src = &boundedFile{FileStore: fileLedger(t, ledgerRows(gpus, tenants, time.Minute), nil), t: t}
	from, to, _ := Month("2026-11", b.Location)
	r := mustBuild(t, src, b, from, to)
	if !r.DataStart.Equal(start) || !r.DataEnd.Equal(late) {
		t.Errorf("two days: data %s to %s, want %s to %s", r.DataStart, r.DataEnd, start, late)
	}
	if src.hourReads != 2 {
		t.Errorf("two days of data: %d hour reads, want 2", src.hourReads)
	}
}
