package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

const testBook = "currency: USD\npolicy: allocation\nidle: platform\nrates:\n  A100-SXM4-80GB: 2.00\ndefaultRate: 1\n"

// testLedger holds one A100 held by team ml's trainer every hour from 1
// October 2026 to 15 November 2026, half used: October is a whole month,
// 744 GPU-hours x 2.00 = 1,488.00; November to date 14 days, 336 x 2.00
// = 672.00.
func testLedger(t *testing.T) (db, prices string) {
	t.Helper()
	dir := t.TempDir()
	db, prices = filepath.Join(dir, "ledger.db"), filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, []byte(testBook), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rows []attribution.Row
	for h := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC); h.Before(time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)); h = h.Add(time.Hour) {
		base := attribution.Row{IntervalStart: h, IntervalEnd: h.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1", GPUModel: "A100-SXM4-80GB",
			SliceID: "GPU-1", SharingMode: "exclusive", Method: "measured"}
		c := base
		c.Kind, c.Namespace, c.Pod, c.PodUID, c.Container, c.Team = attribution.KindContainer, "ml", "trainer-0", "uid-1", "main", "ml"
		c.AllocatedGPUSeconds, c.UsedGPUSeconds = 3600, 1800
		idle := base
		idle.Kind, idle.UsedGPUSeconds = attribution.KindIdle, 1800
		rows = append(rows, c, idle)
	}
	if err := st.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
	return db, prices
}

var testNow = time.Date(2026, 11, 15, 6, 0, 0, 0, time.UTC)

func newTestServer(t *testing.T, open func(context.Context) (ledger.Store, error), prices string, opts ...func(*Config)) *httptest.Server {
	t.Helper()
	cfg := Config{Open: open, Prices: BookFile(prices), Now: func() time.Time { return testNow }, AdviceRefresh: -1}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs
}

func fileOpener(db string) func(context.Context) (ledger.Store, error) {
	return func(ctx context.Context) (ledger.Store, error) {
		return ledger.Open(ctx, db, map[string]ledger.Opener{ledger.SchemeFile: filestore.Opener(filestore.FileOptions{MustExist: true})})
	}
}

func fetch(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A whole month's file is named as such and carries no partial header;
// the month to date is marked partial in both. The index shows each
// month's total as the hours times the rate.
func TestWholeAndPartialMonths(t *testing.T) {
	db, prices := testLedger(t)
	hs := newTestServer(t, fileOpener(db), prices)
	resp, body := fetch(t, hs.URL+"/reports/2026-10.csv")
	if resp.StatusCode != 200 || resp.Header.Get("X-Gpuledger-Partial") != "" ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="gpuledger-chargeback-2026-10.csv"` || !strings.Contains(body, "1488.00") {
		t.Errorf("October: %d %q %q\n%s", resp.StatusCode, resp.Header.Get("X-Gpuledger-Partial"), resp.Header.Get("Content-Disposition"), body)
	}
	resp, body = fetch(t, hs.URL+"/reports/2026-11.json")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("X-Gpuledger-Partial"), "partial: ledger data 2026-11-01 to 2026-11-15") ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "gpuledger-chargeback-2026-11-partial.json") || !strings.Contains(body, `"total": 672.00`) {
		t.Errorf("November: %d %q %q\n%.400s", resp.StatusCode, resp.Header.Get("X-Gpuledger-Partial"), resp.Header.Get("Content-Disposition"), body)
	}
	if resp.Header.Get("Content-Security-Policy") == "" || strings.Contains(resp.Header.Get("Content-Security-Policy"), "script") {
		t.Errorf("policy header %q", resp.Header.Get("Content-Security-Policy"))
	}
	_, index := fetch(t, hs.URL+"/")
	for _, want := range []string{`href="reports/2026-10"><b>October 2026</b>`, "<b>1,488.00</b>", "<b>672.00</b>", `<th class="num">ml</th>`, "Oct 2026", "<svg"} {
		if !strings.Contains(index, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if strings.Contains(index, "<script") {
		t.Error("index has a script")
	}
}

// A ledger that fails to open answers 503 and is opened again by the next
// request; a price book edit shows on the next request.
func TestReopenAndBookChange(t *testing.T) {
	db, prices := testLedger(t)
	var opens, fail atomic.Int32
	fail.Store(1)
	open := func(ctx context.Context) (ledger.Store, error) {
		opens.Add(1)
		if fail.Load() == 1 {
			return nil, errors.New("connection refused")
		}
		return fileOpener(db)(ctx)
	}
	hs := newTestServer(t, open, prices)
	if resp, body := fetch(t, hs.URL+"/reports/2026-10"); resp.StatusCode != 503 || !strings.Contains(body, "connection refused") {
		t.Errorf("ledger down: %d %.300q", resp.StatusCode, body)
	}
	fail.Store(0)
	if resp, _ := fetch(t, hs.URL+"/reports/2026-10.csv"); resp.StatusCode != 200 {
		t.Errorf("ledger back: %d", resp.StatusCode)
	}
	if resp, _ := fetch(t, hs.URL+"/readyz"); resp.StatusCode != 200 || opens.Load() != 2 {
		t.Errorf("readyz %d after %d opens, want 200 after 2", resp.StatusCode, opens.Load())
	}
	if err := os.WriteFile(prices, []byte(strings.Replace(testBook, "2.00", "3.00", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	_ = os.Chtimes(prices, later, later)
	if _, body := fetch(t, hs.URL+"/reports/2026-10.csv"); !strings.Contains(body, "2232.00") {
		t.Errorf("after the book changed to 3.00, October is not 744 x 3.00 = 2232.00:\n%s", body)
	}
	if err := os.WriteFile(prices, []byte("currency: USD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later = later.Add(time.Second)
	_ = os.Chtimes(prices, later, later)
	if resp, body := fetch(t, hs.URL+"/reports/2026-10"); resp.StatusCode != 500 || !strings.Contains(body, "price book") {
		t.Errorf("a broken book: %d %.300q", resp.StatusCode, body)
	}
}

func TestChartScale(t *testing.T) {
	for _, c := range []struct {
		in, want float64
	}{{0, 1}, {0.3, 0.5}, {1840, 2000}, {2000, 2000}, {2001, 5000}, {7, 10}} {
		if got := niceStep(c.in); got != c.want {
			t.Errorf("niceStep(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	for in, want := range map[float64]string{0: "0", 950: "950", 12500: "12.5k", 2000: "2k", 1.2e6: "1.2M"} {
		if got := compact(in); got != want {
			t.Errorf("compact(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"9240.00": "9,240.00", "-1234567.5": "-1,234,567.5", "12": "12", "123": "123", "1234": "1,234"} {
		if got := grouped(in); got != want {
			t.Errorf("grouped(%q) = %q, want %q", in, got, want)
		}
	}
}
