package main

import (
	"context"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// BenchmarkLedgerOpenCheck: what the integrity checks cost on a month of a
// 100-GPU fleet (adviseFleetLedger, 1.7 GB): a read-only open (SQLite's
// quick_check of everything but the raw rows, what report pays), the first
// read of raw rows after it (quick_check of the raw rows and their index,
// what export and advise pay once), and a writable open (quick_check of the
// whole file, what a collector, simulate or migrate pays at start).
//
//	go test -run '^$' -bench LedgerOpenCheck -benchtime 1x -timeout 30m ./cmd/gpuledger
func BenchmarkLedgerOpenCheck(b *testing.B) {
	path, from, _ := adviseFleetLedger(b)
	ctx := context.Background()
	b.Run("read-only-open", func(b *testing.B) {
		for b.Loop() {
			s, err := filestore.OpenReadOnly(ctx, path, filestore.FileOptions{})
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	b.Run("read-only-open+first-raw-read", func(b *testing.B) {
		for b.Loop() {
			s, err := filestore.OpenReadOnly(ctx, path, filestore.FileOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.ContainerRows(ctx, from, from.Add(time.Minute), func(attribution.Row) error { return nil }); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	// The advisor's read of the month through one read-only store: the
	// first read pays the raw-rows check, the second does not.
	b.Run("container-rows-month", func(b *testing.B) {
		_, _, to := adviseFleetLedger(b)
		for b.Loop() {
			s, err := filestore.OpenReadOnly(ctx, path, filestore.FileOptions{})
			if err != nil {
				b.Fatal(err)
			}
			for _, pass := range []string{"first-read-s", "second-read-s"} {
				began := time.Now()
				if err := s.ContainerRows(ctx, from, to, func(attribution.Row) error { return nil }); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(began).Seconds(), pass)
			}
			s.Close()
		}
	})
	b.Run("writable-open", func(b *testing.B) {
		for b.Loop() {
			s, err := filestore.OpenFile(ctx, path, filestore.FileOptions{MustExist: true})
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
}
