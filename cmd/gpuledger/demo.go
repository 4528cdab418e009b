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
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/ledger"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/collector/scenario"
	"github.com/gpuledger/gpuledger/collector/sim"
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
	out := fl.String("out", "out/demo", "directory for the fleet's ledger.db and the month's chargeback report")
	days := fl.Int("days", 30, "days of history to backfill")
	listen := fl.String("listen", envDefault("GPULEDGER_LISTEN", "127.0.0.1:9400"), "address to serve live /metrics on; empty to exit after the report")
	if err := parseFlags(fl, args, ""); err != nil {
		return err
	}
	if *days < 1 {
		return fmt.Errorf("--days %d: need at least one day", *days)
	}
	book, err := pricebook.Parse("demo prices", []byte(demoPrices))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", *out, err)
	}
	dbPath := filepath.Join(*out, "ledger.db")
	_ = os.Remove(dbPath) // a fresh month each run
	_ = os.Remove(dbPath + "-wal")
	_ = os.Remove(dbPath + "-shm")
	store, err := ledger.OpenFile(ctx, dbPath, ledger.FileOptions{})
	if err != nil {
		return err
	}
	defer store.Close()

	to := time.Now().UTC().Truncate(24 * time.Hour)
	from := to.AddDate(0, 0, -*days)
	sum, err := backfill(ctx, store, from, *days)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Backfilled %d days (%s to %s) of 4 simulated nodes: MIG, time-slicing, MPS and HAMi.\n\n",
		*days, from.Format("2006-01-02"), to.Format("2006-01-02"))
	sum.print(stdout)

	csvPath, htmlPath := filepath.Join(*out, "chargeback.csv"), filepath.Join(*out, "chargeback.html")
	for _, f := range []struct{ format, path string }{{"csv", csvPath}, {"html", htmlPath}} {
		if _, err := writeReport(ctx, store, book, from, to, f.format, f.path, io.Discard); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nLedger:            %s\nFinance CSV:       %s\nChargeback report: %s\n", dbPath, csvPath, htmlPath)
	if *listen == "" {
		return nil
	}
	scs, err := loadDemoScenarios()
	if err != nil {
		return err
	}
	return serveLiveDemo(ctx, scs, *listen, exportedPrices(book), stdout)
}

// backfill simulates the demo fleet over [from, from+days) into store,
// with a progress line when a person watches stderr.
func backfill(ctx context.Context, store *ledger.FileStore, from time.Time, days int) (*teamSummary, error) {
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
// metrics until interrupted.
func serveLiveDemo(ctx context.Context, scs []*scenario.Scenario, listen string, prices []exposition.Price, stdout io.Writer) error {
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
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.WithoutCancel(ctx))
	}()
	fmt.Fprintf(stdout, "\nServing live metrics of the simulated fleet on http://%s/metrics (Ctrl-C to stop)\n", listen)
	err := srv.ListenAndServe()
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

// teamSummary is a sink that totals GPU-hours per team for the demo's table.
type teamSummary struct {
	teams    map[string]*teamTotals
	findings map[string]int
}

type teamTotals struct{ allocated, used float64 }

func newTeamSummary() *teamSummary {
	return &teamSummary{teams: map[string]*teamTotals{}, findings: map[string]int{}}
}

func (s *teamSummary) Write(_ context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	for _, r := range rows {
		team := r.Team
		if r.Kind != attribution.KindContainer {
			team = "(" + string(r.Kind) + ")"
		}
		t := s.teams[team]
		if t == nil {
			t = &teamTotals{}
			s.teams[team] = t
		}
		t.allocated += r.AllocatedGPUSeconds
		t.used += r.UsedGPUSeconds
	}
	for _, f := range fs {
		s.findings[f.Team+"\x00"+f.Kind]++
	}
	return nil
}

func (s *teamSummary) print(w io.Writer) {
	names := make([]string, 0, len(s.teams))
	for n := range s.teams {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "team\tallocated GPU-h\tused GPU-h\tefficiency\tidle allocations\tnoisy\tstarved\t")
	for _, n := range names {
		t := s.teams[n]
		eff := "-"
		if t.allocated > 0 && !strings.HasPrefix(n, "(") {
			eff = fmt.Sprintf("%.0f%%", 100*t.used/t.allocated)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%s\t%d\t%d\t%d\t\n", n, t.allocated/3600, t.used/3600, eff,
			s.findings[n+"\x00"+attribution.FindingIdleAllocation], s.findings[n+"\x00"+attribution.FindingNoisyNeighbour],
			s.findings[n+"\x00"+attribution.FindingStarved])
	}
	tw.Flush()
}
