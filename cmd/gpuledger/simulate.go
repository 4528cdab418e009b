package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/dcgmsource"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/collector/nvmlsource"
	"github.com/gpuledger/gpuledger/collector/podresources"
	"github.com/gpuledger/gpuledger/collector/procfs"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/ledger/outbox"
	"github.com/gpuledger/gpuledger/sim"
	"github.com/gpuledger/gpuledger/sim/scenario"
	"github.com/gpuledger/gpuledger/support/outfile"
)

func runSimulate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	path := fs.String("scenario", "", "scenario file (docs/scenario-format.md)")
	out := fs.String("out", "", "output directory for ledger.csv and flags.csv")
	teamLabel := fs.String("team-label", envDefault("GPULEDGER_TEAM_LABEL", "team"), "namespace/pod label that names the team")
	teamFromPod := fs.Bool("team-from-pod-label", os.Getenv("GPULEDGER_TEAM_FROM_POD_LABEL") != "false", "where a namespace has no team label, take the pod's own unless it names a team a namespace bills (forgeable; see collect)")
	listen := fs.String("listen", "", "serve the collector's /metrics on this address while simulating (with --speed, for a real Prometheus to scrape)")
	speed := fs.Float64("speed", 0, "pace the virtual clock at this many simulated seconds per wall second (0: as fast as possible)")
	linger := fs.Duration("linger", 0, "with --listen, keep serving this long after the scenario ends")
	prices := fs.String("prices", envDefault("GPULEDGER_PRICES", ""), "price book whose rates /metrics exports as gpuledger_price_per_gpu_hour (with --listen)")
	ledgerDSN := fs.String("ledger", envDefault("GPULEDGER_LEDGER", ""), "also send the rows to this ledger (file path, file:PATH or clickhouse://...); ClickHouse is shipped to through --out's ledger.db as the collector's outbox")
	cluster := fs.String("cluster", envDefault("GPULEDGER_CLUSTER", attribution.DefaultCluster), "the simulated node's cluster, stamped on its rows (env GPULEDGER_CLUSTER): a DNS label")
	clusterID := fs.String("cluster-id", envDefault("GPULEDGER_CLUSTER_ID", ""), "the simulated cluster's identity, claimed with --cluster in --ledger (env GPULEDGER_CLUSTER_ID; default sim-<cluster>, the same for every node of a simulated cluster)")
	shutdownTimeout := fs.Duration("shutdown-timeout", 25*time.Second, "at the end or on SIGTERM, how long to keep shipping pending rows to a ClickHouse --ledger; what is not shipped stays in --out's ledger.db and ships on the next run")
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	if *path == "" || *out == "" {
		return fmt.Errorf("simulate needs --scenario and --out")
	}
	if err := ledger.CheckClusterName(*cluster); err != nil {
		return fmt.Errorf("--cluster: %w", err)
	}
	if *clusterID == "" {
		*clusterID = "sim-" + *cluster
	}
	if *out == "-" {
		return fmt.Errorf("simulate writes two files, ledger.csv and flags.csv: --out names a directory, not standard output")
	}
	if *shutdownTimeout < 0 || *shutdownTimeout > maxShutdownTimeout {
		return fmt.Errorf("--shutdown-timeout %s must be between 0 and %s", *shutdownTimeout, maxShutdownTimeout)
	}
	// Bind first, so a taken address fails before a long run.
	var ln net.Listener
	if *listen != "" {
		var err error
		if ln, err = listenTCP(*listen); err != nil {
			return err
		}
		defer ln.Close()
	}
	sc, err := scenario.Load(*path)
	if err != nil {
		return err
	}
	// Parsing a large scenario makes far more garbage than the simulation
	// ever holds, with the scenario scattered through it: collect it, pack
	// the scenario into fresh memory and hand the rest back before the long
	// run.
	runtime.GC()
	sc = sc.Clone()
	debug.FreeOSMemory()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("cannot create output directory: %w", err)
	}
	files, err := newCSVSink(*out)
	if err != nil {
		return err
	}
	defer files.Close()
	// A ClickHouse ledger is shipped to as the collector does: through the
	// node file as its outbox, drained at the end and on SIGTERM.
	var ship *outbox.Outbox
	var extra ledger.Store
	if *ledgerDSN != "" {
		d, err := ledger.ParseDSN(*ledgerDSN)
		if err != nil {
			return err
		}
		if d.Scheme == ledger.SchemeClickHouse {
			remote, err := openClickHouse(ctx, d)
			if err != nil {
				return err
			}
			if err := ledger.ClaimClusterName(ctx, remote, *cluster, *clusterID, time.Now()); err != nil {
				remote.Close()
				return fmt.Errorf("--cluster %s: %w", *cluster, err)
			}
			if ship, err = outbox.Open(ctx, outbox.Options{Path: filepath.Join(*out, "ledger.db"), Remote: remote}); err != nil {
				return err
			}
			defer ship.Close()
		} else {
			if extra, err = ledger.Open(ctx, *ledgerDSN, storeOpenersForWrite()); err != nil {
				return err
			}
			defer extra.Close()
			if err := ledger.ClaimClusterName(ctx, extra, *cluster, *clusterID, time.Now()); err != nil {
				return fmt.Errorf("--cluster %s: %w", *cluster, err)
			}
		}
	}
	var store *filestore.FileStore
	if ship != nil {
		store = ship.Store()
	} else {
		var err error
		if store, err = filestore.OpenFile(ctx, filepath.Join(*out, "ledger.db"), filestore.FileOptions{}); err != nil {
			return err
		}
		defer store.Close()
	}
	// A ledger left by an earlier run holds the annotation values that run
	// pinned: a rerun into the same directory is a restarted collector.
	pins, err := store.Pins(ctx)
	if err != nil {
		return err
	}
	sinks := []collector.Sink{files, store}
	switch {
	case ship != nil:
		sinks = []collector.Sink{files, ship}
	case extra != nil:
		sinks = append(sinks, storeSink{extra})
	}
	book, err := loadPrices(*prices)
	if err != nil {
		return err
	}
	var exp *exposition.Exporter
	if *listen != "" {
		exp = exposition.New(sc.Node.Name, exposition.Options{BuildVersion: version, BuildRevision: revision, Prices: exportedPrices(book)})
		defer serveMetrics(ctx, ln, exp)()
	}
	started := time.Now()
	opt := simOptions{Cluster: *cluster, TeamLabel: *teamLabel, IgnorePodTeamLabel: !*teamFromPod, Speed: *speed, Pins: pins}
	mark := &collector.LeaveMark{}
	err = simulateScenario(ctx, sc, opt, append(sinks, mark), exp)
	stopped := err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
	if err != nil && !stopped {
		return err
	}
	if stopped {
		// SIGTERM: the open interval is closed at the signal's instant;
		// ship it and stop as a collector does.
		slog.Info("simulation stopped by signal", "scenario", sc.Name)
		// And records the clean leave in its ledgers, not in flags.csv.
		if err := collector.RecordLeave(ctx, sc.Node.Name, mark, sinks[1:], slog.Default()); err != nil {
			return err
		}
	}
	if ship != nil {
		if err := drainOutbox(ctx, ship, *shutdownTimeout, slog.Default()); err != nil {
			return err
		}
	}
	if *listen != "" && *linger > 0 && !stopped {
		select {
		case <-ctx.Done():
		case <-time.After(*linger):
		}
	}
	if err := files.Commit(); err != nil {
		return err
	}
	if ship != nil {
		err = ship.Close()
	} else {
		err = store.Close()
	}
	if err != nil {
		return err
	}
	slog.Info("simulation done", "scenario", sc.Name, "simulated", sc.Duration, "took", time.Since(started).Round(time.Millisecond),
		"rows", files.rows, "findings", files.findings, "out", *out)
	return nil
}

type simOptions struct {
	// Cluster is stamped on the rows (simulate --cluster).
	Cluster   string
	TeamLabel string

	// IgnorePodTeamLabel: the namespace name pays where the namespace has
	// no team label (simulate --team-from-pod-label=false).
	IgnorePodTeamLabel bool

	// PodResourcesSocket overrides the simulated kubelet's socket (tests of
	// a kubelet that is not there).
	PodResourcesSocket string
	// Progress, when set, is called after every cycle with the simulated offset.
	Progress func(done, total time.Duration)
	// Speed paces the virtual clock at this many simulated seconds per
	// wall second; 0 runs as fast as the machine allows.
	Speed float64
	// Pins are annotation values an earlier run pinned (from its ledger),
	// restored into the engine before the first cycle.
	Pins []attribution.AnnotationPin
	// ContinueOnWriteError: the caller keeps cycling after a failed write,
	// as the DaemonSet's collector does (simulate stops).
	ContinueOnWriteError bool
}

// simulateScenario runs the real collector pipeline against a simulated node
// on a virtual clock, as fast as the machine allows.
func simulateScenario(ctx context.Context, sc *scenario.Scenario, opt simOptions, sinks []collector.Sink, exp *exposition.Exporter) error {
	node, err := sim.New(ctx, sc, sim.Options{})
	if err != nil {
		return fmt.Errorf("cannot start simulated node: %w", err)
	}
	defer node.Close()
	c, closeSrc, err := simulatedCollector(ctx, sc, node, opt, sinks, exp)
	if err != nil {
		return err
	}
	defer closeSrc()
	end := sc.Start.Add(sc.Duration)
	wallStart := time.Now()
	var lastCycle time.Time // the last cycle's virtual time
	// stop ends a run cut short by ctx: paced, the virtual clock stands
	// where the wall clock says it is (between two cycles), and the
	// collector stops at that instant, closing the open interval there,
	// as collect does on SIGTERM.
	stop := func() error {
		if opt.Speed > 0 && !lastCycle.IsZero() {
			at := sc.Start.Add(time.Duration(float64(time.Since(wallStart)) * opt.Speed)).Truncate(time.Microsecond)
			if at.After(end) {
				at = end
			}
			if at.After(lastCycle) {
				if err := node.Advance(at); err != nil {
					return fmt.Errorf("cannot advance simulated node: %w", err)
				}
			}
		}
		if _, err := c.Stop(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		return ctx.Err()
	}
	// Cycles run every pollInterval from the start and once more exactly at
	// the end when pollInterval does not divide the duration, so the last
	// (duration mod pollInterval) seconds are covered too.
	for t, last := sc.Start, false; !last; t = t.Add(sc.PollInterval) {
		if !t.Before(end) {
			t, last = end, true
		}
		if ctx.Err() != nil {
			return stop()
		}
		if opt.Speed > 0 {
			due := wallStart.Add(time.Duration(float64(t.Sub(sc.Start)) / opt.Speed))
			select {
			case <-ctx.Done():
				return stop()
			case <-time.After(time.Until(due)):
			}
		}
		if err := node.Advance(t); err != nil {
			return fmt.Errorf("cannot advance simulated node: %w", err)
		}
		if _, err := c.Cycle(ctx); err != nil {
			return err
		}
		lastCycle = t
		if opt.Progress != nil {
			opt.Progress(t.Sub(sc.Start), sc.Duration)
		}
	}
	_, err = c.Flush(ctx)
	return err
}

// simulatedCollector wires the production sources to a simulated node: the
// same NVML reader, DCGM join, pod-resources gRPC client and procfs parser
// that run in the DaemonSet.
func simulatedCollector(ctx context.Context, sc *scenario.Scenario, node *sim.Node, opt simOptions, sinks []collector.Sink, exp *exposition.Exporter) (*collector.Collector, func(), error) {
	log := slog.Default()
	nv := nvmlsource.New(node.NVML(), log)
	if err := nv.Init(ctx); err != nil {
		return nil, nil, fmt.Errorf("cannot initialise NVML: %w", err)
	}
	dc := node.DCGM()
	if err := dc.Watch(ctx, sc.PollInterval); err != nil {
		return nil, nil, fmt.Errorf("cannot watch DCGM fields: %w", err)
	}
	socket := node.PodResourcesSocket()
	if opt.PodResourcesSocket != "" {
		socket = opt.PodResourcesSocket
	}
	pods := podresources.NewClient(socket, log)
	engine := attribution.NewEngine(attribution.Config{
		Node:           sc.Node.Name,
		LedgerInterval: sc.LedgerInterval,
		PollInterval:   sc.PollInterval,
		TeamLabel:      opt.TeamLabel,
		IdleWindow:     sc.Detection.IdleWindow,
		IdleThreshold:  sc.Detection.IdleThreshold,
		NoisyWindow:    sc.Detection.NoisyWindow,
		MemoryGrowth:   attribution.MemoryGrowthConfig{Window: sc.Detection.MemoryWindow},

		IgnorePodTeamLabel: opt.IgnorePodTeamLabel,
	})
	engine.RestorePins(opt.Pins)
	c := collector.New(collector.Config{Node: sc.Node.Name, Cluster: opt.Cluster, StopsOnWriteError: !opt.ContinueOnWriteError}, node.Clock(), collector.Sources{
		NVML:  nv,
		DCGM:  dcgmsource.NewSource(dc, log),
		Pods:  pods,
		Meta:  node.Metadata(),
		Procs: procfs.NewResolver(node.ProcRoot()),
	}, engine, exp, sinks, log)
	return c, func() { pods.Close(); nv.Close() }, nil
}

// The embedded ledger keeps the annotation pins of a simulated collector.
var _ collector.PinSink = (*filestore.FileStore)(nil)

// csvSink writes ledger.csv and flags.csv into a directory. Both are
// written through outfile, as temporary files beside their final names
// renamed into place only by Commit, once the run succeeded: a failed write
// (a full disk) never leaves a file cut mid-row that reads as a whole
// ledger, and neither name is ever replaced when it is a device, a FIFO or
// anything but a regular file.
type csvSink struct {
	dir            string
	lf, ff         *outfile.File
	rows, findings int
	ledger         *ledger.CSVWriter
	flags          *ledger.FlagsWriter
	closed         bool
}

func newCSVSink(dir string) (*csvSink, error) {
	lf, err := outfile.Create(filepath.Join(dir, "ledger.csv"))
	if err != nil {
		return nil, err
	}
	ff, err := outfile.Create(filepath.Join(dir, "flags.csv"))
	if err != nil {
		lf.Abort()
		return nil, err
	}
	s := &csvSink{dir: dir, lf: lf, ff: ff}
	if s.ledger, err = ledger.NewCSVWriter(lf); err == nil {
		s.flags, err = ledger.NewFlagsWriter(ff)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *csvSink) Write(_ context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	s.rows += len(rows)
	s.findings += len(fs)
	if err := s.ledger.Write(rows); err != nil {
		return err
	}
	return s.flags.Write(fs)
}

// Commit flushes both files to disk and renames them to ledger.csv and
// flags.csv. On any error neither file is left half-written.
func (s *csvSink) Commit() error {
	if s.closed {
		return errors.New("cannot write ledger.csv: the CSV files are already closed")
	}
	s.closed = true
	err := errors.Join(s.ledger.Flush(), s.flags.Flush())
	if err == nil {
		err = s.lf.Commit()
	}
	if err == nil {
		err = s.ff.Commit()
	}
	if err != nil {
		s.lf.Abort()
		s.ff.Abort()
		return fmt.Errorf("cannot write ledger.csv and flags.csv in %s: %w", s.dir, err)
	}
	return nil
}

// Close abandons files not committed: the temporary files are removed and
// an earlier run's ledger.csv and flags.csv, if any, stay as they were.
func (s *csvSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.lf.Abort()
	s.ff.Abort()
	if s.rows+s.findings > 0 {
		slog.Warn("simulation did not finish: ledger.csv and flags.csv not written", "out", s.dir)
	}
	return nil
}

// serveMetrics serves exp's /metrics (and /healthz) on the bound ln until
// stop is called.
func serveMetrics(ctx context.Context, ln net.Listener, exp *exposition.Exporter) (stop func()) {
	srv := &http.Server{Handler: serveMux(exp), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("metrics server failed", "err", err)
		}
	}()
	return func() { _ = srv.Shutdown(context.WithoutCancel(ctx)) }
}

// storeSink adapts any ledger.Store to a collector sink.
type storeSink struct{ ledger.Store }

func (s storeSink) Write(ctx context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	return s.Append(ctx, rows, fs)
}

// storeOpenersForWrite opens ledgers that commands write to: a file that
// does not exist yet is created.
func storeOpenersForWrite() map[string]ledger.Opener {
	m := map[string]ledger.Opener{}
	for k, v := range storeOpeners {
		m[k] = v
	}
	m[ledger.SchemeFile] = filestore.Opener(filestore.FileOptions{})
	return m
}
