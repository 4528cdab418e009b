package report

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

func (b *boundedFile) LastRowStart(ctx context.Context, from, to time.Time) (last time.Time, err error) {
	b.asked++
	err = b.FileStore.Rows(ctx, from, to, func(r attribution.Row) error {
		if r.IntervalStart.After(last) {
			last = r.IntervalStart
		}
		return nil
	})
	return last, err
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
	// The first day searched from midnight in spans of 1, 2 and 4 hours
	// (rows from 06:20: the third), the last day from midnight back in
	// spans of 1, 2, 4 and 8 hours (rows until 14:37: the fourth), then
	// the last hour's end: 8 questions, and no hour aggregate.
	if src.asked != 8 || src.hourReads != 0 {
		t.Errorf("the source was asked for %d bounds and read %d hour aggregates, want 8 and none", src.asked, src.hourReads)
	}
}

// hourCounter is the embedded ledger as a source that streams its rows
// (no row bounds of its own), counting the hour aggregates read.
type hourCounter struct {
	*filestore.FileStore
	hourReads int
}

func (c *hourCounter) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.Bucket == ledger.BucketHour {
		c.hourReads++
	}
	return c.FileStore.Aggregate(ctx, q)
}

// A source that streams its rows finds its edge hours with an hour
// aggregate of the first and last day: a day's report (its data in one
// day) reads that day's hours once, not once for its first hour and again
// for its last, and still finds both instants; data over two days reads
// both edge days.
func TestOneDayReadsItsHoursOnce(t *testing.T) {
	b := bookFor(t, "USD", "America/Los_Angeles", "allocation", "platform", map[string]string{"A100": "2"}, "2")
	start := time.Date(2026, 11, 20, 6, 20, 0, 0, b.Location)
	end := time.Date(2026, 11, 20, 14, 37, 0, 0, b.Location)
	gpus := []gpu{{node: "n", uuid: "GPU-1", model: "A100", mode: "exclusive", from: start, to: end}}
	tenants := []tenant{{gpu: 0, ns: "ads", pod: "p", container: "c", team: "ads", share: 1, busy: 0.5, start: start, end: end}}
	src := &hourCounter{FileStore: fileLedger(t, ledgerRows(gpus, tenants, time.Minute), nil)}
	for _, c := range []struct {
		name     string
		from, to time.Time
	}{
		{"the day", time.Date(2026, 11, 20, 0, 0, 0, 0, b.Location), time.Date(2026, 11, 21, 0, 0, 0, 0, b.Location)},
		{"the month", time.Date(2026, 11, 1, 0, 0, 0, 0, b.Location), time.Date(2026, 12, 1, 0, 0, 0, 0, b.Location)},
		{"two days", time.Date(2026, 11, 19, 0, 0, 0, 0, b.Location), time.Date(2026, 11, 21, 0, 0, 0, 0, b.Location)},
	} {
		src.hourReads = 0
		r := mustBuild(t, src, b, c.from, c.to)
		if !r.DataStart.Equal(start) || !r.DataEnd.Equal(end) {
			t.Errorf("%s: data %s to %s, want %s to %s", c.name, r.DataStart, r.DataEnd, start, end)
		}
		if src.hourReads != 1 {
			t.Errorf("%s: %d hour reads, want 1", c.name, src.hourReads)
		}
	}
	late := time.Date(2026, 11, 21, 3, 0, 0, 0, b.Location)
	gpus[0].to, tenants[0].end = late, late
	src = &hourCounter{FileStore: fileLedger(t, ledgerRows(gpus, tenants, time.Minute), nil)}
	from, to, _ := Month("2026-11", b.Location)
	r := mustBuild(t, src, b, from, to)
	if !r.DataStart.Equal(start) || !r.DataEnd.Equal(late) {
		t.Errorf("two days: data %s to %s, want %s to %s", r.DataStart, r.DataEnd, start, late)
	}
	if src.hourReads != 2 {
		t.Errorf("two days of data: %d hour reads, want 2", src.hourReads)
	}
}

// The bounds a source finds itself (first start of the first day, last
// start of the last day, then the end of that hour's rows) are the bounds
// found by streaming the edge hours, on random ledgers: GPUs that start
// and stop anywhere, rows of a minute to two hours (rows that cross hours
// and days), periods that cut rows, in zones with DST, a half-hour offset
// and Lord Howe's half-hour DST.
func TestFoundBoundsAreStreamedBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	zones := []string{"UTC", "America/Los_Angeles", "Asia/Kolkata", "Australia/Lord_Howe"}
	steps := []time.Duration{time.Minute, 7 * time.Minute, 50 * time.Minute, 2 * time.Hour}
	for trial := 0; trial < 40; trial++ {
		zone := zones[trial%len(zones)]
		b := bookFor(t, "USD", zone, "allocation", "shared", map[string]string{"A100": "2"}, "2")
		// Around a DST change of each zone that has one in early April
		// or early October 2026.
		base := time.Date(2026, 4, 3, 0, 0, 0, 0, b.Location)
		if trial%2 == 1 {
			base = time.Date(2026, 10, 2, 0, 0, 0, 0, b.Location)
		}
		at := func(max time.Duration) time.Time {
			return base.Add(time.Duration(rng.Int64N(int64(max)/int64(time.Minute))) * time.Minute)
		}
		// Each GPU its own row length: a GPU of two-hour rows beside one
		// of minutes can end later than every row of the last hour.
		var rows []attribution.Row
		for g := 0; g < 1+rng.IntN(3); g++ {
			from := at(72 * time.Hour)
			to := from.Add(time.Duration(1+rng.IntN(3000)) * time.Minute)
			one := []gpu{{node: fmt.Sprintf("n%d", g), uuid: fmt.Sprintf("GPU-%d", g), model: "A100", mode: "exclusive", from: from, to: to}}
			tn := []tenant{{gpu: 0, ns: "ads", pod: fmt.Sprintf("p%d", g), container: "c", team: "ads", share: 1, busy: 0.5, start: from, end: to}}
			rows = append(rows, ledgerRows(one, tn, steps[rng.IntN(len(steps))])...)
		}
		st := fileLedger(t, rows, nil)
		found := &boundedFile{FileStore: st, t: t}
		streamed := &hourCounter{FileStore: st}
		from := at(48 * time.Hour)
		to := from.Add(time.Duration(60+rng.IntN(5000)) * time.Minute)
		if trial%3 == 0 {
			from, to = base.AddDate(0, 0, -3), base.AddDate(0, 0, 6)
		}
		rf, err := Build(context.Background(), found, b, from, to)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		rs := mustBuild(t, streamed, b, from, to)
		if !rf.DataStart.Equal(rs.DataStart) || !rf.DataEnd.Equal(rs.DataEnd) {
			t.Errorf("trial %d (%s, %s to %s): found %s to %s, streamed %s to %s", trial, zone,
				from.Format(time.RFC3339), to.Format(time.RFC3339), rf.DataStart, rf.DataEnd, rs.DataStart, rs.DataEnd)
		}
		if found.hourReads != 0 {
			t.Errorf("trial %d: a source that finds its bounds was asked for %d hour aggregates", trial, found.hourReads)
		}
	}
}
