package filestore

import (
	"context"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

func TestOutboxOrderAndMarks(t *testing.T) {
	s := openTemp(t, FileOptions{})
	ctx := context.Background()
	// Three cycles, each with rows and one finding; written order is the
	// shipping order.
	var written []any
	for c := 0; c < 3; c++ {
		rows := fleetRows(t0.Add(time.Duration(c)*time.Minute), 1, time.Minute, 2)
		f := attribution.Finding{Start: t0.Add(time.Duration(c) * time.Minute), End: t0.Add(time.Duration(c+1) * time.Minute), Kind: attribution.FindingNoisyNeighbour,
			Cluster: attribution.DefaultCluster, Node: "node-0", GPUUUID: "GPU-0001", Namespace: "ns", Pod: "p", Container: "c", Detail: string(rune('a' + c))}
		if err := s.Append(ctx, rows, []attribution.Finding{f}); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			written = append(written, r)
		}
		written = append(written, f)
	}
	pending, oldest, err := s.OutboxStats(ctx, "ch")
	if err != nil {
		t.Fatal(err)
	}
	if pending != int64(len(written)) || !oldest.Equal(t0.Add(time.Minute)) {
		t.Fatalf("stats: %d pending, oldest %s; want %d, %s", pending, oldest, len(written), t0.Add(time.Minute))
	}

	var shipped []any
	lastSeq := int64(0)
	for {
		b, err := s.NextBatch(ctx, "ch", 4)
		if err != nil {
			t.Fatal(err)
		}
		if b.Empty() {
			break
		}
		if n := len(b.Rows) + len(b.Findings); n > 4 {
			t.Fatalf("batch of %d, max 4", n)
		}
		if b.FirstSeq <= lastSeq || b.LastSeq < b.FirstSeq {
			t.Fatalf("batch seqs [%d, %d] after %d: not increasing", b.FirstSeq, b.LastSeq, lastSeq)
		}
		// A batch is the next n written items, rows and findings split.
		n := len(b.Rows) + len(b.Findings)
		var wantRows []attribution.Row
		var wantFindings []attribution.Finding
		for _, x := range written[len(shipped) : len(shipped)+n] {
			switch v := x.(type) {
			case attribution.Row:
				wantRows = append(wantRows, v)
			case attribution.Finding:
				wantFindings = append(wantFindings, v)
			}
		}
		if !reflect.DeepEqual(b.Rows, wantRows) || !reflect.DeepEqual(b.Findings, wantFindings) {
			t.Fatalf("batch after %d items is not the next %d written", len(shipped), n)
		}
		shipped = append(shipped, written[len(shipped):len(shipped)+n]...)
		lastSeq = b.LastSeq
		if err := s.MarkShipped(ctx, "ch", b.LastSeq); err != nil {
			t.Fatal(err)
		}
		// Idempotent and monotonic: repeating or going back changes nothing.
		if err := s.MarkShipped(ctx, "ch", b.LastSeq); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkShipped(ctx, "ch", b.FirstSeq-1); err != nil {
			t.Fatal(err)
		}
	}
	if len(shipped) != len(written) {
		t.Fatalf("shipped %d items, %d written", len(shipped), len(written))
	}
	if pending, oldest, err := s.OutboxStats(ctx, "ch"); err != nil || pending != 0 || !oldest.IsZero() {
		t.Fatalf("after shipping all: pending %d oldest %s err %v", pending, oldest, err)
	}
	// Another sink has its own mark.
	if pending, _, _ := s.OutboxStats(ctx, "other"); pending != int64(len(written)) {
		t.Fatalf("sink other: %d pending, want %d", pending, len(written))
	}
	if err := s.MarkShipped(ctx, "ch", lastSeq+1); err == nil {
		t.Fatal("marked a sequence number that was never written")
	}
	if _, err := s.NextBatch(ctx, "ch", 0); err == nil {
		t.Fatal("NextBatch with max 0 accepted")
	}
}

func TestOutboxKeepsOrderPerGPU(t *testing.T) {
	s := openTemp(t, FileOptions{})
	ctx := context.Background()
	// Cycles arrive out of interval order (a late interval after a later
	// one): shipping follows the write order, not the interval order.
	late := fleetRows(t0, 1, time.Minute, 1)
	early := fleetRows(t0.Add(time.Minute), 1, time.Minute, 1)
	for _, rows := range [][]attribution.Row{early, late} {
		if err := s.Append(ctx, rows, nil); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.NextBatch(ctx, "ch", 100)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]attribution.Row(nil), early...), late...)
	if !reflect.DeepEqual(b.Rows, want) {
		t.Fatalf("batch order differs from write order")
	}
}

func TestPruneDeletesOnlyShippedOldestFirst(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{Sinks: []string{"ch", "s3"}})
	var all []attribution.Row
	for c := 0; c < 40; c++ {
		rows := fleetRows(t0.Add(time.Duration(c)*time.Minute), 1, time.Minute, 100)
		if err := s.Append(ctx, rows, nil); err != nil {
			t.Fatal(err)
		}
		all = append(all, rows...)
	}
	full, err := s.usedBytes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	diskBefore := diskBytes(t, s.path)
	// Half shipped to ch, a quarter to s3: only the quarter may go.
	quarter, half := int64(len(all)/4), int64(len(all)/2)
	if err := s.MarkShipped(ctx, "ch", half); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkShipped(ctx, "s3", quarter); err != nil {
		t.Fatal(err)
	}

	// Bound reachable by pruning part of the shipped quarter.
	s.opts.MaxBytes = full * 9 / 10
	deleted, err := s.Prune(ctx)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if deleted == 0 || deleted > quarter {
		t.Fatalf("pruned %d rows, want 1..%d", deleted, quarter)
	}
	if used, _ := s.usedBytes(ctx); used > s.opts.MaxBytes {
		t.Fatalf("still %d bytes, bound %d", used, s.opts.MaxBytes)
	}
	// Oldest first: what is left is exactly the written suffix.
	left := readAll(t, s, time.Time{}, time.Time{})
	want := append([]attribution.Row(nil), all[deleted:]...)
	sortRows(want)
	if !reflect.DeepEqual(left, want) {
		t.Fatalf("after pruning %d rows, the rest is not the newest %d rows", deleted, len(want))
	}
	var free int64
	if err := s.w.QueryRow("PRAGMA freelist_count").Scan(&free); err != nil || free != 0 {
		t.Errorf("after pruning: %d free pages (%v), want 0 (incremental vacuum)", free, err)
	}
	if diskAfter := diskBytes(t, s.path); diskAfter >= diskBefore {
		t.Errorf("file and WAL did not shrink: %d -> %d bytes", diskBefore, diskAfter)
	}

	// Bound below what the unshipped rows need: everything shipped by both
	// sinks goes, no unshipped row does, and the caller hears about it.
	s.opts.MaxBytes = full / 10
	more, err := s.Prune(ctx)
	if !errors.Is(err, ErrOutboxFull) {
		t.Fatalf("Prune over bound with unshipped rows: err %v, want ErrOutboxFull", err)
	}
	if deleted+more != quarter {
		t.Fatalf("pruned %d in all, want exactly the %d rows both sinks shipped", deleted+more, quarter)
	}
	if n := countRows(t, s); n != int64(len(all))-quarter {
		t.Fatalf("%d rows left, want %d", n, int64(len(all))-quarter)
	}
	if pending, _, _ := s.OutboxStats(ctx, "s3"); pending != int64(len(all))-quarter {
		t.Fatalf("s3 pending %d, want %d", pending, int64(len(all))-quarter)
	}
}

func TestPruneWithoutSinksKeepsEverything(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{MaxBytes: 1})
	rows := fleetRows(t0, 5, time.Minute, 4)
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkShipped(ctx, "unregistered", int64(len(rows))); err != nil {
		t.Fatal(err)
	}
	n, err := s.Prune(ctx)
	if !errors.Is(err, ErrOutboxFull) || n != 0 {
		t.Fatalf("Prune with no registered sinks: deleted %d, err %v", n, err)
	}
	if got := countRows(t, s); got != int64(len(rows)) {
		t.Fatalf("%d rows left, want %d", got, len(rows))
	}
	unbounded := openTemp(t, FileOptions{Sinks: []string{"ch"}})
	if n, err := unbounded.Prune(ctx); n != 0 || err != nil {
		t.Fatalf("unbounded Prune: %d, %v", n, err)
	}
}

// diskBytes is the size of the ledger file and its WAL.
func diskBytes(t *testing.T, path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n
}
