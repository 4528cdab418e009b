package web

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// loadGPUs and loadMonths are the load test's fleet: 10 A100s of ten
// teams at hourly rows for the last 13 months to now (about 190,000
// rows), so the index shows 13 months and the running month is partial.
const (
	loadGPUs   = 10
	loadMonths = 13
)

func loadLedger(b *testing.B, now time.Time) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "ledger.db")
	ctx := context.Background()
	st, err := filestore.OpenFile(ctx, path, filestore.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	y, m, _ := now.UTC().Date()
	from := time.Date(y, m-loadMonths+1, 1, 0, 0, 0, 0, time.UTC)
	end := now.UTC().Truncate(time.Hour)
	var rows []attribution.Row
	for h := from; h.Before(end); h = h.Add(time.Hour) {
		for g := range loadGPUs {
			gpu := fmt.Sprintf("GPU-%02d", g)
			team := fmt.Sprintf("team-%d", g)
			base := attribution.Row{IntervalStart: h, IntervalEnd: h.Add(time.Hour), Node: "n1", GPUUUID: gpu, GPUModel: "A100-SXM4-80GB",
				SliceID: gpu, SharingMode: "exclusive", Method: "measured"}
			c, idle := base, base
			c.Kind, c.Namespace, c.Team, c.Pod, c.PodUID, c.Container = attribution.KindContainer, team, team, gpu+"-pod", gpu+"-uid", "main"
			c.AllocatedGPUSeconds, c.UsedGPUSeconds = 3600, float64(360*g)
			idle.Kind, idle.UsedGPUSeconds = attribution.KindIdle, float64(3600-360*g)
			rows = append(rows, c, idle)
		}
		if len(rows) >= 50000 {
			if err := st.Append(ctx, rows, nil); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if err := st.Append(ctx, rows, nil); err != nil {
		b.Fatal(err)
	}
	return path
}

// peakRSS is the process's peak resident set (VmHWM), in MiB.
func peakRSS() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func quantile(d []time.Duration, q float64) time.Duration {
	slices.Sort(d)
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// loadPaths are the load test's pages: every month's page, CSV and
// JSON of the last loadMonths, the running month's page and FOCUS file
// most, the index, /readyz and an ended month's advice.
func loadPaths(now time.Time, months int) []string {
	var paths []string
	for i := range months {
		month := time.Date(now.Year(), now.Month()-time.Month(i), 1, 0, 0, 0, 0, time.UTC).Format("2006-01")
		paths = append(paths, "/reports/"+month, "/reports/"+month+".csv", "/reports/"+month+".json")
		if i == 0 {
			// The running month, the one most read.
			paths = append(paths, "/reports/"+month, "/reports/"+month, "/reports/"+month+".focus.csv")
		}
	}
	ended := time.Date(now.Year(), now.Month()-1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01")
	return append(paths, "/", "/", "/readyz", "/advice/"+ended)
}

// BenchmarkServeLoad: 8 clients send 1,000 requests over loopback (the
// index, every month's page and files, the running month's above all,
// the advice of an ended month, /readyz) while a scraper reads /metrics
// every 100 ms; it reports the pages' p50 and p99, /metrics' p50 and p99
// (and /healthz's p99, the machine's own floor) and the process's peak
// RSS (ledger included). Any answer but 200 fails it.
//
//	go test -run '^$' -bench 'ServeLoad$' -benchtime 1x ./web
func BenchmarkServeLoad(b *testing.B) {
	now := time.Now()
	db := loadLedger(b, now)
	for range b.N {
		runLoad(b, Config{Open: fileOpener(db), AdviceRefresh: -1, LedgerFile: db}, loadPaths(now, loadMonths))
	}
}

// runLoad serves cfg (with testBook) and runs the load on paths.
func runLoad(b *testing.B, cfg Config, paths []string) {
	b.Helper()
	prices := filepath.Join(b.TempDir(), "prices.yaml")
	if err := os.WriteFile(prices, []byte(testBook), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg.Prices = BookFile(prices)
	{
		s, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		// As serve does: Run builds the month-to-date charges first.
		s.Run(context.Background())
		hs := httptest.NewServer(s.Handler())
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		get := func(p string) (time.Duration, error) {
			start := time.Now()
			resp, err := client.Get(hs.URL + p)
			if err != nil {
				return 0, err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return time.Since(start), fmt.Errorf("%s: %s", p, resp.Status)
			}
			return time.Since(start), nil
		}
		const clients, requests = 8, 1000
		var next atomic.Int32
		var mu sync.Mutex
		var pages, scrapes, probes []time.Duration
		var failed error
		failures := 0
		stop := make(chan struct{})
		scraped := make(chan struct{})
		go func() {
			defer close(scraped)
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				d, err := get("/metrics")
				// /healthz does nothing: its latency is the machine's
				// (scheduling under load), the floor /metrics stands on.
				h, herr := get("/healthz")
				mu.Lock()
				if err = cmp.Or(err, herr); err != nil {
					failed = cmp.Or(failed, err)
					failures++
				}
				scrapes, probes = append(scrapes, d), append(probes, h)
				mu.Unlock()
			}
		}()
		// A second scraper runs in a process of its own, as Prometheus
		// does: its readings carry no wait of its own for this process's
		// goroutines, busy with the pages (the scraper above waits for
		// them twice: to send and to read).
		ext, err := startScraper(hs.URL)
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuTime()
		b.ResetTimer()
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= requests {
						return
					}
					d, err := get(paths[(i*7+c)%len(paths)])
					mu.Lock()
					if err != nil {
						failed = cmp.Or(failed, err)
						failures++
					}
					pages = append(pages, d)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		cpu := cpuTime() - cpu0
		close(stop)
		<-scraped
		extScrapes, extProbes, extErr := ext.stop()
		hs.Close()
		s.Close()
		ms := func(d []time.Duration, q float64) float64 { return float64(quantile(d, q).Microseconds()) / 1000 }
		figures := []struct {
			v    float64
			unit string
		}{
			{ms(pages, 0.5), "p50-ms"}, {ms(pages, 0.99), "p99-ms"},
			{ms(scrapes, 0.5), "metrics-p50-ms"}, {ms(scrapes, 0.99), "metrics-p99-ms"},
			{ms(probes, 0.99), "healthz-p99-ms"}, {float64(len(scrapes)), "scrapes"},
			{ms(extScrapes, 0.5), "ext-metrics-p50-ms"}, {ms(extScrapes, 0.99), "ext-metrics-p99-ms"},
			{ms(extProbes, 0.99), "ext-healthz-p99-ms"}, {float64(len(extScrapes)), "ext-scrapes"},
			{peakRSS(), "peak-rss-MiB"},
			// The CPU the process spent on the 1,000 requests (clients
			// and in-process scraper included): what the machine's load
			// does not change.
			{cpu.Seconds(), "cpu-s"},
		}
		if failed = cmp.Or(failed, extErr); failed != nil {
			// A failed run's figures still say where the time went.
			for _, f := range figures {
				b.Logf("%g %s", f.v, f.unit)
			}
			b.Fatalf("%d of the answers were not 200; the first: %v", failures, failed)
		}
		for _, f := range figures {
			b.ReportMetric(f.v, f.unit)
		}
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// scraperEnv names the server the load's outside scraper reads
// (TestLoadScraper, the test binary run again by startScraper).
const scraperEnv = "GPULEDGER_LOAD_SCRAPER_URL"

// scraper is the outside scraper's process.
type scraper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
}

// startScraper runs this test binary again as TestLoadScraper on url.
func startScraper(url string) (*scraper, error) {
	sc := &scraper{cmd: exec.Command(os.Args[0], "-test.run=^TestLoadScraper$", "-test.count=1", "-test.v")}
	sc.cmd.Env = append(os.Environ(), scraperEnv+"="+url)
	sc.cmd.Stdout, sc.cmd.Stderr = &sc.out, &sc.out
	var err error
	if sc.stdin, err = sc.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("cannot start the scraper: %w", err)
	}
	if err := sc.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start the scraper: %w", err)
	}
	return sc, nil
}

// stop ends the scraper and returns its /metrics and /healthz latencies.
func (sc *scraper) stop() (scrapes, probes []time.Duration, err error) {
	_ = sc.stdin.Close()
	if err := sc.cmd.Wait(); err != nil {
		return nil, nil, fmt.Errorf("the scraper failed: %w\n%s", err, sc.out.String())
	}
	for line := range strings.Lines(sc.out.String()) {
		var m, h int64
		if n, _ := fmt.Sscanf(strings.TrimSpace(line), "scrape %d %d", &m, &h); n == 2 {
			scrapes, probes = append(scrapes, time.Duration(m)), append(probes, time.Duration(h))
		}
	}
	if len(scrapes) == 0 {
		return nil, nil, fmt.Errorf("the scraper read nothing:\n%s", sc.out.String())
	}
	return scrapes, probes, nil
}

// TestLoadScraper is the load benchmark's outside scraper, run only by
// startScraper: every 100 ms it reads /metrics, then /healthz, of the
// server scraperEnv names, until its standard input closes, then prints
// each pair's latencies in nanoseconds. Any answer but 200 fails it.
func TestLoadScraper(t *testing.T) {
	url := os.Getenv(scraperEnv)
	if url == "" {
		t.Skip("run by BenchmarkServeLoad in a process of its own")
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	get := func(p string) time.Duration {
		start := time.Now()
		resp, err := http.Get(url + p)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", p, resp.Status)
		}
		return time.Since(start)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lines []string
	for {
		select {
		case <-done:
			for _, l := range lines {
				fmt.Println(l)
			}
			return
		case <-tick.C:
		}
		m := get("/metrics")
		lines = append(lines, fmt.Sprintf("scrape %d %d", m, get("/healthz")))
	}
}
