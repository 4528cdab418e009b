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
	// An interrupted backfill still leaves a ledger: its chargeback is
	// written and summed up, the report saying which nodes stopped
	// sending, and the demo then exits with the interrupt. Those last
	// steps no longer follow ctx (it is done) but a bound of their own.
	var stopped *backfillInterrupted
	if errors.As(err, &stopped) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), interruptedReportTimeout)
		defer cancel()
	} else if err != nil {
		return err
	}
	if err := store.AppendQuota(ctx, demoQuota(from, *days)); err != nil {
		return errors.Join(err, stopped.orNil())
	}
	csvPath, htmlPath := filepath.Join(*out, "chargeback.csv"), filepath.Join(*out, "chargeback.html")
	var rep *report.Report
	for _, f := range []struct{ format, path string }{{"csv", csvPath}, {"html", htmlPath}} {
		if rep, err = writeReport(ctx, store, book, from, to, f.format, f.path, io.Discard); err != nil {
			return errors.Join(err, stopped.orNil())
		}
	}
	if stopped != nil {
		fmt.Fprintf(stdout, "Backfill interrupted: %d days (%s to %s) of 4 simulated nodes were asked for; the nodes stopped at %s.\n"+
			"The chargeback below bills what the ledger holds: the time after a node stopped is a gap, never billed.\n\n",
			*days, from.Format("2006-01-02"), to.Format("2006-01-02"), stopped.where())
	} else {
		fmt.Fprintf(stdout, "Backfilled %d days (%s to %s) of 4 simulated nodes: MIG, time-slicing, MPS and HAMi.\n\n",
			*days, from.Format("2006-01-02"), to.Format("2006-01-02"))
	}
	sum.print(stdout, rep)
	fmt.Fprintf(stdout, "\nLedger:            %s\nFinance CSV:       %s\nChargeback report: %s\n", dbPath, csvPath, htmlPath)
	fmt.Fprintf(stdout, "Diagnostics:       %s\n", logPath)
	fmt.Fprintf(stdout, "Reproduce the CSV: %s\n", reproduceCommand(dbPath, from, to, book.Location))
	if stopped != nil {
		return stopped
	}
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

// backfillSlice is how far each node of the backfill runs before the next
// takes its turn: one ledger interval (the scenarios write hourly rows).
// The nodes advance together, so an interrupt leaves every node within an
// hour of the others, each with its rows up to where it stopped, and the
// report names those behind as stopped sending (billing/report/gaps.go).
// Turns, not goroutines: one node at a time writes the shared sinks (the
// summary is not safe for concurrent use), in the same order on every run,
// and an interrupt lands at a point the progress callback can name; the
// ledger is one SQLite writer, so running nodes at once would gain little.
const backfillSlice = time.Hour

// backfillCycled, when set, is called after each cycle of the backfill
// with the node and its simulated time: tests interrupt the demo from it
// at a simulated instant, which sleeping could not.
var backfillCycled func(node string, at time.Time)

// backfillNode is one node of the backfill: its simulated node and
// collector, kept across its turns.
type backfillNode struct {
	sc       *scenario.Scenario
	node     *sim.Node
	c        *collector.Collector
	closeSrc func()
	next     time.Time // the next cycle's simulated time
	cycled   bool      // a cycle ran
	done     bool      // the last cycle ran and the engine was flushed
}

// reached is the simulated time of the node's last cycle: its data's end.
func (n *backfillNode) reached() time.Time {
	if !n.cycled {
		return n.sc.Start
	}
	if n.done {
		return n.sc.Start.Add(n.sc.Duration)
	}
	return n.next.Add(-n.sc.PollInterval)
}

// runUntil runs the node's cycles up to and including simulated time
// until, as simulateScenario runs them: every poll interval from the
// start and once more exactly at the end, then a flush. A cycle runs to
// its end whatever ctx says (it is short); ctx is checked between cycles.
func (n *backfillNode) runUntil(ctx context.Context, until time.Time, cycled func(*backfillNode)) error {
	end := n.sc.Start.Add(n.sc.Duration)
	for !n.done && !n.next.After(until) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t, last := n.next, false
		if !t.Before(end) {
			t, last = end, true
		}
		if err := n.node.Advance(t); err != nil {
			return fmt.Errorf("cannot advance simulated node: %w", err)
		}
		if _, err := n.c.Cycle(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		n.next, n.cycled = t.Add(n.sc.PollInterval), true
		if last {
			n.done = true
			if _, err := n.c.Flush(context.WithoutCancel(ctx)); err != nil {
				return err
			}
		}
		cycled(n)
	}
	return nil
}

// backfillInterrupted is the error of a backfill stopped by its context
// (SIGINT, SIGTERM): where each node's data ends.
type backfillInterrupted struct {
	reached []nodeReached
	err     error
}

type nodeReached struct {
	node string
	at   time.Time
	sent bool // the node cycled at least once past its start
}

// where says where each node's data ends.
func (e *backfillInterrupted) where() string {
	parts := make([]string, len(e.reached))
	for i, r := range e.reached {
		parts[i] = r.node + " " + r.at.Format("2006-01-02 15:04 MST")
		if !r.sent {
			parts[i] = r.node + " before sending anything"
		}
	}
	return strings.Join(parts, ", ")
}

func (e *backfillInterrupted) Error() string {
	return "the backfill was interrupted (nodes stopped: " + e.where() + "): " + e.err.Error()
}

func (e *backfillInterrupted) Unwrap() error { return e.err }

// orNil is e as an error, nil (not a typed nil) when e is.
func (e *backfillInterrupted) orNil() error {
	if e == nil {
		return nil
	}
	return e
}

// interruptedReportTimeout bounds the chargeback an interrupted demo still
// writes (its context is done by then): seconds for a month's ledger.
const interruptedReportTimeout = 2 * time.Minute

// backfill simulates the demo fleet over [from, from+days) into store,
// the nodes taking turns a backfillSlice at a time, with a progress line
// when a person watches stderr. Interrupted by ctx, it stops every node
// where it stands (its collector closes the open interval, as collect's
// does on a signal, without a clean leave: the demo did not finish) and
// returns the summary of what was written with a *backfillInterrupted.
func backfill(ctx context.Context, store *filestore.FileStore, from time.Time, days int) (sum *teamSummary, err error) {
	scs, err := backfillScenarios(from, days)
	if err != nil {
		return nil, err
	}
	sum = newTeamSummary()
	sinks := []collector.Sink{store, sum}
	opt := simOptions{TeamLabel: "team"}
	var nodes []*backfillNode
	defer func() {
		for _, n := range nodes {
			n.closeSrc()
			n.node.Close()
		}
	}()
	for _, sc := range scs {
		node, err := sim.New(ctx, sc, sim.Options{})
		if err != nil {
			return nil, fmt.Errorf("node %s: cannot start simulated node: %w", sc.Node.Name, err)
		}
		c, closeSrc, err := simulatedCollector(ctx, sc, node, opt, sinks, nil)
		if err != nil {
			node.Close()
			return nil, fmt.Errorf("node %s: %w", sc.Node.Name, err)
		}
		nodes = append(nodes, &backfillNode{sc: sc, node: node, c: c, closeSrc: closeSrc, next: sc.Start})
	}
	show := isTerminal(os.Stderr)
	began := time.Now()
	total := time.Duration(days) * 24 * time.Hour
	var simulated time.Duration // all nodes' simulated time, for the bar
	cycled := func(n *backfillNode) {
		simulated += n.sc.PollInterval
		at := n.reached()
		if backfillCycled != nil {
			backfillCycled(n.sc.Node.Name, at)
		}
		if show && at.Sub(from)%(6*time.Hour) == 0 {
			f := min(float64(simulated)/float64(total)/float64(len(nodes)), 1)
			fmt.Fprintf(os.Stderr, "\rbackfilling [%-30s] %3.0f%%  %s  %s ", strings.Repeat("#", int(f*30)), f*100, at.Format("2006-01-02 15:04"), time.Since(began).Round(time.Second))
		}
	}
	for until := from; until.Before(from.Add(total)); {
		until = until.Add(backfillSlice)
		for _, n := range nodes {
			err := n.runUntil(ctx, until, cycled)
			// runUntil returns ctx's own error when interrupted; any other
			// is a failure, not a stop.
			if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return sum, stopBackfill(ctx, nodes)
			}
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", n.sc.Node.Name, err)
			}
		}
	}
	if show {
		fmt.Fprintf(os.Stderr, "\rbackfilled  [%s] 100%%  %s\n", strings.Repeat("#", 30), time.Since(began).Round(time.Second))
	}
	return sum, nil
}

// stopBackfill stops each node of an interrupted backfill at its last
// cycle, writing its open interval, and says where each one's data ends.
func stopBackfill(ctx context.Context, nodes []*backfillNode) error {
	if isTerminal(os.Stderr) {
		fmt.Fprintln(os.Stderr)
	}
	e := &backfillInterrupted{}
	errs := []error{ctx.Err()}
	for _, n := range nodes {
		if !n.done {
			if _, err := n.c.Stop(context.WithoutCancel(ctx)); err != nil {
				errs = append(errs, fmt.Errorf("node %s: cannot stop: %w", n.sc.Node.Name, err))
			}
		}
		e.reached = append(e.reached, nodeReached{node: n.sc.Node.Name, at: n.reached(), sent: n.reached().After(n.sc.Start)})
	}
	e.err = errors.Join(errs...)
	return e
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
	// The app's refreshes read the ledger: the demo returns once they are
	// done, so nothing opens its files after the demo closed them.
	appDone := make(chan struct{})
	if app != nil {
		mux.Handle("/", app.Handler())
		go func() { defer close(appDone); app.Run(ctx) }()
	} else {
		close(appDone)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	// Serve returns as Shutdown begins; Shutdown returns once the requests
	// in flight (which may read the ledger) are done.
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		<-ctx.Done()
		_ = srv.Shutdown(context.WithoutCancel(ctx))
	}()
	fmt.Fprintf(stdout, "\nServing live metrics of the simulated fleet on http://%s/metrics (Ctrl-C to stop)\n", ln.Addr())
	if app != nil {
		fmt.Fprintf(stdout, "The chargeback, month by month, as gpuledger serve shows it: http://%s/\n", ln.Addr())
	}
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-shut
		err = nil
	}
	wg.Wait()
	<-appDone
	close(errc)
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
