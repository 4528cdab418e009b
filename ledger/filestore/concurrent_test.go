package filestore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// readWhileWriting runs one writer committing a fresh interval of a 100-GPU
// fleet in a loop while readers, each opening the file on its own
// connections, open, read and close it again and again; a second writer opens
// the file and appends now and then. It returns every error any of them saw.
func readWhileWriting(t *testing.T, open func(ctx context.Context, path string) (ledger.Store, error), readers, rounds int) []error {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	w, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Append(ctx, fleetRows(t0, 5, time.Minute, 100), nil); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	fail := func(who string, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, fmt.Errorf("%s: %w", who, err))
	}
	stop := make(chan struct{})
	var writes, held atomic.Int64
	next := 5 // the next minute the writer appends, once it has stopped
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for k := 5; ; k++ {
			select {
			case <-stop:
				next = k
				return
			default:
			}
			// The second writer competes for the write lock, and SQLite's
			// busy handler is not fair: on a loaded machine the writer can
			// wait out its busy timeout behind it. Then its rows are held
			// and committed with its next write, as a collector's are;
			// that they all arrive is checked below. Any other error is a
			// failure.
			if err := w.Append(ctx, fleetRows(t0.Add(time.Duration(k)*time.Minute), 1, time.Minute, 100), nil); err != nil {
				if !strings.Contains(err.Error(), "is being written by") {
					fail("writer", err)
					return
				}
				held.Add(1)
				continue
			}
			writes.Add(1)
			// A collector commits once a cycle; the pause lets a second
			// writer's busy handler find the lock free now and then.
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	// A second writer: its appends queue behind the first writer's commits.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 3; i++ {
			s, err := OpenFile(ctx, path, FileOptions{MustExist: true})
			if err != nil {
				fail("second writer open", err)
				continue
			}
			row := fleetRows(t0.Add(-time.Duration(i+1)*time.Hour), 1, time.Minute, 1)
			// A second writer waits on the busy timeout; where the first
			// writer's commits keep the lock busy for all of it (SQLite's
			// busy handler is not fair, and under -race a commit takes
			// hundreds of milliseconds), it fails naming the holder. Any
			// other error is a failure.
			if err := s.Append(ctx, row, nil); err != nil && !strings.Contains(err.Error(), "is being written by") {
				fail("second writer append", err)
			}
			if err := s.Close(); err != nil {
				fail("second writer close", err)
			}
		}
	}()
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				s, err := open(ctx, path)
				if err != nil {
					fail("reader open", err)
					continue
				}
				n := 0
				if err := s.Rows(ctx, t0, t0.Add(3*time.Minute), func(attribution.Row) error { n++; return nil }); err != nil {
					fail("reader rows", err)
				} else if n != 3*100*5 {
					fail("reader rows", fmt.Errorf("read %d rows of 3 intervals, want %d", n, 3*100*5))
				}
				if _, err := s.Aggregate(ctx, ledger.AggregateQuery{From: t0, To: t0.Add(24 * time.Hour), Bucket: ledger.BucketDay}); err != nil {
					fail("reader aggregate", err)
				}
				if err := s.Close(); err != nil {
					fail("reader close", err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-writerDone
	if writes.Load() == 0 {
		t.Fatal("the writer committed nothing while the readers ran")
	}
	// Alone now, the writer's next append commits whatever it held.
	if err := w.Append(ctx, fleetRows(t0.Add(time.Duration(next)*time.Minute), 1, time.Minute, 100), nil); err != nil {
		t.Fatalf("writer alone: %v", err)
	}
	minutes := map[time.Time]bool{}
	if err := w.Rows(ctx, t0, t0.Add(time.Duration(next+1)*time.Minute), func(r attribution.Row) error {
		minutes[r.IntervalStart] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(minutes) != next+1 {
		t.Errorf("the ledger has %d of the writer's %d minutes: rows it held were lost", len(minutes), next+1)
	}
	t.Logf("%d commits (%d waited out the busy timeout, rows held) while %d readers opened the file %d times each",
		writes.Load(), held.Load(), readers, rounds)
	return errs
}

// Readers that open the file as the reporting commands do, while a writer
// commits, never fail: no SQLITE_BUSY, whatever moment they open at.
func TestReadersWhileWriterCommits(t *testing.T) {
	for name, open := range map[string]func(ctx context.Context, path string) (ledger.Store, error){
		"OpenFile": func(ctx context.Context, path string) (ledger.Store, error) {
			return OpenFile(ctx, path, FileOptions{MustExist: true})
		},
		"OpenReadOnly": func(ctx context.Context, path string) (ledger.Store, error) {
			return OpenReadOnly(ctx, path, FileOptions{})
		},
		"OpenForReading": func(ctx context.Context, path string) (ledger.Store, error) {
			return OpenForReading(ctx, path, FileOptions{})
		},
	} {
		t.Run(name, func(t *testing.T) {
			errs := readWhileWriting(t, open, 4, 5)
			for _, err := range errs {
				t.Error(err)
			}
		})
	}
}
