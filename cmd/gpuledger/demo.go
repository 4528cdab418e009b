package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/deploy"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/sim"
	"github.com/gpuledger/gpuledger/sim/scenario"
	"github.com/gpuledger/gpuledger/web"
)

// The demo fleet: one simulated node per sharing mechanism, because the
// device plugin's sharing strategy is a node-wide setting.
//
//go:embed demo/*.yaml
var demoFS embed.FS

func loadDemoScenarios() ([]*scenario.Scenario, error) {
	names, err := fs.Glob(demoFS, "demo/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*scenario.Scenario
	for _, n := range names {
		data, err := demoFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		sc, err := scenario.Parse(data, path.Dir(n))
		if err != nil {
			return nil, fmt.Errorf("built-in scenario %s: %w", n, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

func runDemo(ctx context.Context, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("demo", flag.ContinueOnError)
	out := fl.String("out", "out/demo", "directory for the fleet's ledger.db and the chargeback of the backfilled days (chargeback.csv, chargeback.html)")
	days := fl.Int("days", 30, "days of history to backfill")
	listen := fl.String("listen", envDefault("GPULEDGER_LISTEN", "127.0.0.1"+defaultListen), "address to serve live /metrics on; empty to exit after the report")
	if err := parseFlags(fl, args, ""); err != nil {
		return err
	}
	if *days < 1 {
		return fmt.Errorf("--days %d: need at least one day", *days)
	}
	// Bind before the backfill: an address another process holds is an
	// error now, not after minutes of work.
	var ln net.Listener
	if *listen != "" {
		var err error
		if ln, err = listenTCP(*listen); err != nil {
			return err
		}
		defer ln.Close()
	}
	book, err := demoPrices()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", *out, err)
	}
	logPath, closeLog, err := demoLog(*out)
	if err != nil {
		return err
	}
	defer closeLog()
	dbPath := filepath.Join(*out, "ledger.db")
	_ = os.Remove(dbPath) // a fresh month each run
	_ = os.Remove(dbPath + "-wal")
	_ = os.Remove(dbPath + "-shm")
	store, err := filestore.OpenFile(ctx, dbPath, filestore.FileOptions{})
	if err != nil {
		return err
	}
	defer store.Close()

	to := now().UTC().Truncate(24 * time.Hour)
	from := to.AddDate(0, 0, -*days)
	sum, err := backfill(ctx, store, from, *days)
	if err != nil {
		return err
	}
	if err := store.AppendQuota(ctx, demoQuota(from, *days)); err != nil {
		return err
	}
	csvPath, htmlPath := filepath.Join(*out, "chargeback.csv"), filepath.Join(*out, "chargeback.html")
	var rep *report.Report
	for _, f := range []struct{ format, path string }{{"csv", csvPath}, {"html", htmlPath}} {
		if rep, err = writeReport(ctx, store, book, from, to, f.format, f.path, io.Discard); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "Backfilled %d days (%s to %s) of 4 simulated nodes: MIG, time-slicing, MPS and HAMi.\n\n",
		*days, from.Format("2006-01-02"), to.Format("2006-01-02"))
	sum.print(stdout, rep)
	fmt.Fprintf(stdout, "\nLedger:            %s\nFinance CSV:       %s\nChargeback report: %s\n", dbPath, csvPath, htmlPath)
	fmt.Fprintf(stdout, "Diagnostics:       %s\n", logPath)
	fmt.Fprintf(stdout, "Reproduce the CSV: %s\n", reproduceCommand(dbPath, from, to, book.Location))
	if *listen == "" {
		return nil
	}
	scs, err := loadDemoScenarios()
	if err != nil {
		return err
	}
	app, err := newWebServer(dbPath, web.FixedBook(book), web.DefaultMonths, time.Hour)
	if err != nil {
		return err
	}
	defer app.Close()
	return serveLiveDemo(ctx, scs, ln, exportedPrices(book), stdout, app)
}

// demoLog sends the demo's log (the simulated nodes' start-up lines,
// what their GPUs do not report) to DIR/demo.log, so that the terminal
// shows the summary alone; warnings and errors still reach stderr too.
// The returned func restores the previous logger and closes the file.
func demoLog(dir string) (string, func(), error) {
	p := filepath.Join(dir, "demo.log")
	f, err := os.Create(p)
	if err != nil {
		return "", nil, fmt.Errorf("cannot create the demo's log: %w", err)
	}
	prev := slog.Default()
	// A MultiHandler passes a record to each handler that is enabled for
	// it; the caller's handler only for warnings and up.
	slog.SetDefault(slog.New(slog.NewMultiHandler(
		slog.NewTextHandler(f, &slog.HandlerOptions{Level: logLevel()}),
		minLevel{prev.Handler(), slog.LevelWarn},
	)))
	return p, func() { slog.SetDefault(prev); f.Close() }, nil
}

// minLevel passes on records at or above min only.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(as), m.min}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{m.Handler.WithGroup(name), m.min}
}

// now is the clock the demo's backfill ends on and reports are checked
// against; tests fix it.
var now = time.Now

// reproduceCommand is the `gpuledger report` command that writes the
// demo's finance CSV again, byte for byte, from its ledger and the shipped
// price book.
func reproduceCommand(dbPath string, from, to time.Time, loc *time.Location) string {
	return fmt.Sprintf("%s report --ledger %s --prices %s --from %s --to %s --format csv",
		progName, dbPath, deploy.PricesPath, boundArg(from, loc), boundArg(to, loc))
}

// boundArg writes a report bound as a date where it is a midnight in the
// price book's zone (how --from/--to read dates), else as RFC 3339.
func boundArg(t time.Time, loc *time.Location) string {
	l := t.In(loc)
	if y, m, d := l.Date(); calendar.DayStart(y, m, d, loc).Equal(t) {
		return l.Format(time.DateOnly)
	}
	return t.Format(time.RFC3339)
}

// backfill simulates the demo fleet over [from, from+days) into store,
// with a progress line when a person watches stderr.
func backfill(ctx context.Context, store *filestore.FileStore, from time.Time, days int) (*teamSummary, error) {
	scs, err := backfillScenarios(from, days)
	if err != nil {
		return nil, err
	}
	sum := newTeamSummary()
	show := isTerminal(os.Stderr)
	began := time.Now()
	for i, sc := range scs {
		opt := simOptions{TeamLabel: "team"}
		if show {
			opt.Progress = func(done, total time.Duration) {
				if done%(6*time.Hour) == 0 {
					f := (float64(i) + float64(done)/float64(total)) / float64(len(scs))
					fmt.Fprintf(os.Stderr, "\rbackfilling [%-30s] %3.0f%%  %s  %s ", strings.Repeat("#", int(f*30)), f*100, sc.Node.Name, time.Since(began).Round(time.Second))
				}
			}
		}
		if err := simulateScenario(ctx, sc, opt, []collector.Sink{store, sum}, nil); err != nil {
			return nil, fmt.Errorf("node %s: %w", sc.Node.Name, err)
		}
	}
	if show {
		fmt.Fprintf(os.Stderr, "\rbackfilled  [%s] 100%%  %s\n", strings.Repeat("#", 30), time.Since(began).Round(time.Second))
	}
	return sum, nil
}

// serveLiveDemo replays the demo fleet from now on wall time and serves its
// metrics until interrupted, with app (gpuledger serve over the demo's
// ledger) on every other path.
func serveLiveDemo(ctx context.Context, scs []*scenario.Scenario, ln net.Listener, prices []exposition.Price, stdout io.Writer, app *web.Server) error {
	start := time.Now().UTC().Truncate(time.Second)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var wg sync.WaitGroup
	errc := make(chan error, len(scs))
	for _, base := range scs {
		sc := *base
		sc.Start = start
		exp := exposition.New(sc.Node.Name, exposition.Options{BuildVersion: version, BuildRevision: revision, Prices: prices})
		if err := reg.Register(exp); err != nil {
			return fmt.Errorf("cannot register metrics of %s: %w", sc.Node.Name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := runLiveNode(ctx, &sc, exp); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("live node %s: %w", sc.Node.Name, err)
			}
		}()
	}
	mux := metricsMux(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	if app != nil {
		mux.Handle("/", app.Handler())
		go app.Run(ctx)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.WithoutCancel(ctx))
	}()
	fmt.Fprintf(stdout, "\nServing live metrics of the simulated fleet on http://%s/metrics (Ctrl-C to stop)\n", ln.Addr())
	if app != nil {
		fmt.Fprintf(stdout, "The chargeback, month by month, as gpuledger serve shows it: http://%s/\n", ln.Addr())
	}
	err := srv.Serve(ln)
	wg.Wait()
	close(errc)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(append([]error{err}, drain(errc)...)...)
}

func drain(c chan error) []error {
	var out []error
	for e := range c {
		out = append(out, e)
	}
	return out
}

// runLiveNode cycles a simulated node on wall time (the scenario's activity
// loops every hour).
func runLiveNode(ctx context.Context, sc *scenario.Scenario, exp *exposition.Exporter) error {
	for {
		node, err := sim.New(ctx, sc, sim.Options{})
		if err != nil {
			return err
		}
		c, closeSrc, err := simulatedCollector(ctx, sc, node, simOptions{TeamLabel: "team"}, nil, exp)
		if err != nil {
			node.Close()
			return err
		}
		err = cycleOnWallTime(ctx, sc, node, c)
		closeSrc()
		node.Close()
		if err != nil {
			return err
		}
		sc.Start = sc.Start.Add(sc.Duration)
	}
}

func cycleOnWallTime(ctx context.Context, sc *scenario.Scenario, node *sim.Node, c *collector.Collector) error {
	end := sc.Start.Add(sc.Duration)
	t := time.NewTicker(sc.PollInterval)
	defer t.Stop()
	for {
		now := time.Now().UTC()
		if now.After(end) {
			now = end
		}
		if err := node.Advance(now); err != nil {
			return err
		}
		if _, err := c.Cycle(ctx); err != nil {
			slog.Warn("live demo cycle", "err", err)
		}
		if !now.Before(end) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
