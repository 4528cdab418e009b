package filestore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// BenchmarkAggregateRecent: the reads a report of the recent past makes
// of a ledger holding a year (13 months of 4 GPUs at hourly rows, about
// 190,000 rows, as serve's load benchmark): the last day by hour (what
// the report's data bounds ask) and the last month by day per device (the
// FOCUS file), read again and again from one open store, the file
// unchanged. The rollup is walked from its first row once per file
// generation; the reads after seek to their period.
//
//	go test -run '^$' -bench AggregateRecent -benchtime 20x ./ledger/filestore
func BenchmarkAggregateRecent(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "ledger.db")
	w, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	const hours = 13 * 30 * 24
	for h := 0; h < hours; h += 30 * 24 {
		if err := w.Append(ctx, fleetRows(t0.Add(time.Duration(h)*time.Hour), min(30*24, hours-h), time.Hour, 4), nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	s, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	end := t0.Add(hours * time.Hour)
	for _, q := range []struct {
		name string
		q    ledger.AggregateQuery
	}{
		{"last day by hour", ledger.AggregateQuery{From: end.Add(-24 * time.Hour), To: end, Bucket: ledger.BucketHour}},
		{"last month by day per device", ledger.AggregateQuery{From: end.Add(-30 * 24 * time.Hour), To: end, Bucket: ledger.BucketDay, ByDevice: true}},
	} {
		b.Run(q.name, func(b *testing.B) {
			for range b.N {
				if _, err := s.Aggregate(ctx, q.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
