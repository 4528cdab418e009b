package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/web"
)

const followBook = "currency: USD\npolicy: allocation\nidle: platform\nrates:\n  A100-SXM4-80GB: 2.00\ndefaultRate: 1\n"

// hoursLedger writes an embedded ledger at path: one A100 held by team
// ml's trainer for the first hours hours of October 2026, so October
// bills hours x 2.00 under followBook.
func hoursLedger(t *testing.T, path string, hours int) {
	t.Helper()
	st, err := filestore.OpenFile(context.Background(), path, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rows []attribution.Row
	from := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	for h := range hours {
		start := from.Add(time.Duration(h) * time.Hour)
		rows = append(rows, attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1",
			GPUModel: "A100-SXM4-80GB", SliceID: "GPU-1", SharingMode: "exclusive", Method: "measured", Kind: attribution.KindContainer,
			Namespace: "ml", Pod: "trainer-0", PodUID: "uid-1", Container: "main", Team: "ml", AllocatedGPUSeconds: 3600, UsedGPUSeconds: 3600})
	}
	if err := st.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
}

// serve follows its files: a ledger file replaced by another is billed
// from the new one on the next request (744 h x 2.00 = 1,488.00, then
// 100 h x 2.00 = 200.00), a deleted one is unavailable on /readyz and
// every page (not billed from the copy the server still holds open), and
// a price book edited with its size and modification time kept is read
// again (3.00: 100 h x 3.00 = 300.00).
func TestServeFollowsItsFiles(t *testing.T) {
	now = func() time.Time { return serveNow }
	t.Cleanup(func() { now = time.Now })
	dir := t.TempDir()
	db, other, prices := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "other.db"), filepath.Join(dir, "prices.yaml")
	hoursLedger(t, db, 744)
	hoursLedger(t, other, 100)
	if err := os.WriteFile(prices, []byte(followBook), 0o644); err != nil {
		t.Fatal(err)
	}
	hs := startServe(t, db, prices)
	want := func(what, total, grouped string) {
		t.Helper()
		if resp, body := getBody(t, hs.URL+"/reports/2026-10.csv"); resp.StatusCode != 200 || !bytes.Contains(body, []byte(","+total+",USD")) {
			t.Errorf("%s: October %d, want %s\n%s", what, resp.StatusCode, total, body)
		}
		if resp, body := getBody(t, hs.URL+"/"); resp.StatusCode != 200 || !bytes.Contains(body, []byte("<b>"+grouped+"</b>")) {
			t.Errorf("%s: the index %d, want %s", what, resp.StatusCode, grouped)
		}
	}
	want("the first ledger", "1488.00", "1,488.00")
	if err := os.Rename(other, db); err != nil {
		t.Fatal(err)
	}
	want("the ledger replaced", "200.00", "200.00")

	gone := db + ".away"
	if err := os.Rename(db, gone); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/readyz", "/", "/reports/2026-10", "/reports/2026-10.csv"} {
		if resp, body := getBody(t, hs.URL+p); resp.StatusCode != 503 || !bytes.Contains(body, []byte("missing")) {
			t.Errorf("%s with the ledger file gone: %d %.200q, want 503", p, resp.StatusCode, body)
		}
	}
	if err := os.Rename(gone, db); err != nil {
		t.Fatal(err)
	}
	if resp, _ := getBody(t, hs.URL+"/readyz"); resp.StatusCode != 200 {
		t.Errorf("/readyz once the file is back: %d", resp.StatusCode)
	}

	fi, err := os.Stat(prices)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prices, []byte(strings.Replace(followBook, "2.00", "3.00", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(prices, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	want("the book edited in place", "300.00", "300.00")
}

// hangUps runs honest readers of every kind of page beside readers that
// hang up mid-answer (after 0 to 40 ms, as curl --max-time 0.04 does),
// and wants every honest request answered 200, /metrics with its
// month-to-date charges.
func hangUps(t *testing.T, base string) {
	t.Helper()
	paths := []string{"/", "/reports/2026-11", "/reports/2026-11.csv", "/reports/2026-10.json", "/reports/2026-11.focus.csv", "/metrics", "/readyz"}
	stop := make(chan struct{})
	var rude sync.WaitGroup
	for range 4 {
		rude.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(40))*time.Millisecond)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+paths[rand.IntN(len(paths))], nil)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				cancel()
			}
		})
	}
	var honest sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for c := range 4 {
		honest.Go(func() {
			for i := range 25 {
				p := paths[(c+i)%len(paths)]
				resp, err := http.Get(base + p)
				if err != nil {
					mu.Lock()
					failures = append(failures, p+": "+err.Error())
					mu.Unlock()
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || p == "/metrics" && !bytes.Contains(body, []byte("gpuledger_charge_month_to_date{")) {
					mu.Lock()
					failures = append(failures, p+": "+resp.Status+" "+string(body[:min(len(body), 200)]))
					mu.Unlock()
				}
			}
		})
	}
	honest.Wait()
	close(stop)
	rude.Wait()
	if len(failures) > 0 {
		t.Errorf("%d of 100 honest requests failed beside readers hanging up, want 0:\n%s", len(failures), strings.Join(failures[:min(len(failures), 10)], "\n"))
	}
}

// No reader that hangs up breaks another's request: the embedded ledger.
// The running month is rebuilt on every request here, so the hang-ups
// land in the middle of reads of the shared store.
func TestServeHangUpsBreakNoOne(t *testing.T) {
	db, prices := serveFixture(t)
	hangUps(t, startServe(t, db, prices, rebuildRunningMonth).URL)
}

// The same with a real ClickHouse.
func TestServeHangUpsBreakNoOneClickHouse(t *testing.T) {
	db, prices := serveFixture(t)
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	dsn := h.DSN(t)
	if err := runLedger(context.Background(), []string{"migrate", "--ledger", dsn}, io.Discard); err != nil {
		t.Fatal(err)
	}
	copyLedger(t, db, dsn)
	hangUps(t, startServe(t, dsn, prices, rebuildRunningMonth).URL)
}

// slowStore is the real ledger, its first aggregate read 6 s late: a
// slow page.
type slowStore struct {
	fullStore
	slept *atomic.Bool
}

// fullStore is a store with the abilities a report requires of it, which
// a wrapper must pass on (report.Build reads quota changes, node labels
// and coverage, and fails naming a store without them).
type fullStore interface {
	ledger.Store
	ledger.QuotaReader
	ledger.NodeLabelReader
	ledger.CoverageReader
	ledger.ClosingStore
}

func (s slowStore) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if s.slept.CompareAndSwap(false, true) {
		select {
		case <-time.After(6 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.fullStore.Aggregate(ctx, q)
}

// Told to stop with a slow page in flight (6 s, longer than the
// listener's own 5 s), serve finishes the page before it returns.
func TestServeDrainsSlowPages(t *testing.T) {
	now = func() time.Time { return serveNow }
	t.Cleanup(func() { now = time.Now })
	dir := t.TempDir()
	db, prices := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "prices.yaml")
	hoursLedger(t, db, 744)
	if err := os.WriteFile(prices, []byte(followBook), 0o644); err != nil {
		t.Fatal(err)
	}
	var slept atomic.Bool
	slow := func(c *web.Config) {
		open := c.Open
		c.Open = func(ctx context.Context) (ledger.Store, error) {
			st, err := open(ctx)
			if err != nil {
				return nil, err
			}
			f, ok := st.(fullStore)
			if !ok {
				st.Close()
				return nil, fmt.Errorf("ledger %T lacks quota changes or node labels", st)
			}
			return slowStore{f, &slept}, nil
		}
	}
	srv, err := newWebServer(db, web.BookFile(prices), 24, 0, slow)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serveWeb(ctx, srv, addr, "", io.Discard) }()
	type answer struct {
		code int
		body []byte
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		var resp *http.Response
		var err error
		for range 50 { // until the listener is up
			if resp, err = http.Get("http://" + addr + "/reports/2026-10.csv"); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- answer{resp.StatusCode, b, err}
	}()
	time.Sleep(time.Second) // the page is in flight
	cancel()
	a := <-got
	if a.err != nil || a.code != 200 || !bytes.Contains(a.body, []byte(",1488.00,USD")) {
		t.Errorf("the page in flight at stop: %d %v, want 200 with October's 1488.00\n%s", a.code, a.err, a.body)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// A --prometheus URL with credentials is refused without echoing them.
func TestServePrometheusFlagHidesCredentials(t *testing.T) {
	_, err := parseServeFlags([]string{"--ledger", "ledger.db", "--prices", "p.yaml", "--prometheus", "http://alice:s3cret@prom:9090/?token=t0ken"})
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "t0ken") || strings.Contains(err.Error(), "alice") {
		t.Errorf("error %v: want a refusal without the credentials", err)
	}
}
