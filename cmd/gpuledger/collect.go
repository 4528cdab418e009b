package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/dcgmsource"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/collector/kubemeta"
	"github.com/gpuledger/gpuledger/collector/nvmlsource"
	"github.com/gpuledger/gpuledger/collector/podresources"
	"github.com/gpuledger/gpuledger/collector/procfs"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/outbox"
	"github.com/gpuledger/gpuledger/ledger/outbox/shipper"
)

type collectFlags struct {
	// cluster names the Kubernetes cluster every row is stamped with
	// (docs/ledger-format.md, "A fleet of clusters on one ledger").
	// clusterID is the cluster's identity its name is claimed with in
	// the ledger (default: the UID of its kube-system namespace).
	cluster, clusterID                                string
	node, kubeletSocket, procRoot, kubeconfig, listen string
	dcgmMode, dcgmAddress, teamLabel, dataDir         string
	ledgerDSN, webConfig, prices                      string
	podLabels                                         string
	teamFromPodLabel                                  bool
	outboxMaxBytes                                    int64
	// The shipper's pacing (shipper.Options): a fleet's inserts per
	// second into ClickHouse are nodes / shipMinInterval at most.
	shipMinInterval, shipWakeJitter, rollupDelay, rollupJitter time.Duration
	poll, ledgerInterval, retention, shutdownTimeout           time.Duration
}

// defaultListen is the collector's and the demo's port: its own, not
// dcgm-exporter's 9400, which runs on the same GPU nodes.
const defaultListen = ":9753"

// maxShutdownTimeout bounds --shutdown-timeout: a pod's grace period is
// seconds to minutes, and a stuck drain must not hold a node's drain for
// longer.
const maxShutdownTimeout = 10 * time.Minute

func parseCollectFlags(args []string) (collectFlags, error) {
	var f collectFlags
	fs := flag.NewFlagSet("collect", flag.ContinueOnError)
	fs.StringVar(&f.node, "node", envDefault("NODE_NAME", ""), "this node's name (env NODE_NAME, from the downward API)")
	fs.StringVar(&f.cluster, "cluster", envDefault("GPULEDGER_CLUSTER", attribution.DefaultCluster), "this cluster's name in a ledger that several clusters ship to: a DNS label (env GPULEDGER_CLUSTER)")
	fs.StringVar(&f.clusterID, "cluster-id", envDefault("GPULEDGER_CLUSTER_ID", ""), "this cluster's identity, recorded with --cluster in the --ledger the first time the name ships; a collector whose identity differs from the recorded one is refused (env GPULEDGER_CLUSTER_ID; default the UID of the kube-system namespace)")
	fs.StringVar(&f.kubeletSocket, "kubelet-socket", envDefault("GPULEDGER_KUBELET_SOCKET", podresources.DefaultSocket), "kubelet pod-resources socket (env GPULEDGER_KUBELET_SOCKET)")
	fs.StringVar(&f.procRoot, "proc-root", envDefault("GPULEDGER_PROC_ROOT", "/proc"), "host procfs root; needs hostPID (env GPULEDGER_PROC_ROOT)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", envDefault("KUBECONFIG", ""), "kubeconfig; empty means in-cluster config")
	fs.StringVar(&f.listen, "listen", envDefault("GPULEDGER_LISTEN", defaultListen), "address for /metrics and /healthz (env GPULEDGER_LISTEN)")
	fs.StringVar(&f.dcgmMode, "dcgm", envDefault("GPULEDGER_DCGM", "embedded"), "DCGM mode: embedded, remote or off (env GPULEDGER_DCGM)")
	fs.StringVar(&f.dcgmAddress, "dcgm-address", envDefault("GPULEDGER_DCGM_ADDRESS", "localhost:5555"), "nv-hostengine address for --dcgm=remote")
	fs.StringVar(&f.teamLabel, "team-label", envDefault("GPULEDGER_TEAM_LABEL", "team"), "namespace/pod label that names the team")
	// Off by default on a real node: whoever deploys a pod writes its labels,
	// so only an operator who trusts them turns the fallback on.
	fs.BoolVar(&f.teamFromPodLabel, "team-from-pod-label", os.Getenv("GPULEDGER_TEAM_FROM_POD_LABEL") == "true", "where a namespace has no team label, take the pod's own team label (off by default: pod labels are forgeable by whoever deploys; even when on, one naming a team a namespace bills is refused); env GPULEDGER_TEAM_FROM_POD_LABEL=true")
	fs.StringVar(&f.dataDir, "data-dir", envDefault("GPULEDGER_DATA_DIR", "/var/lib/gpuledger"), "directory for the node's ledger files")
	fs.StringVar(&f.ledgerDSN, "ledger", envDefault("GPULEDGER_LEDGER", ""), "cluster ledger to ship to (clickhouse://user@host:9000/db?secure=true; password from GPULEDGER_CLICKHOUSE_PASSWORD_FILE); empty keeps the ledger on the node only")
	fs.Int64Var(&f.outboxMaxBytes, "outbox-max-bytes", 1<<30, "disk bound of the node's embedded ledger; shipped rows are pruned first, unshipped rows never")
	fs.Func("ledger-retention", "delete the node ledger's rows older than this (Prometheus duration: 400d, 9600h), once shipped when --ledger is set; 0 keeps them (default 0)", promDurationFlag(&f.retention))
	fs.StringVar(&f.prices, "prices", envDefault("GPULEDGER_PRICES", ""), "price book (prices.yaml) exported as gpuledger_price_per_gpu_hour for live cost panels")
	fs.StringVar(&f.webConfig, "web.config.file", envDefault("GPULEDGER_WEB_CONFIG", ""), "Prometheus exporter-toolkit web config file for TLS and basic auth on /metrics")
	fs.StringVar(&f.podLabels, "pod-label-allowlist", envDefault("GPULEDGER_POD_LABEL_ALLOWLIST", ""), "comma-separated pod labels copied onto container series as label_<name> (empty: none, so cardinality stays bounded)")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 25*time.Second, "on SIGTERM, how long to keep shipping pending rows to --ledger before exiting; keep it below the pod's terminationGracePeriodSeconds (25s for the default 30s). What is not shipped stays in the node's ledger and ships on the next start")
	fs.DurationVar(&f.shipMinInterval, "ship-min-interval", 30*time.Second, "with --ledger, the least time between two shipping rounds while less than a full batch is pending (a backlog ships at once): a fleet's inserts into ClickHouse are at most nodes / this a second; 0 to 10m")
	fs.DurationVar(&f.shipWakeJitter, "ship-wake-jitter", 20*time.Second, "with --ledger, a random delay of up to this before the round a closed ledger interval asks for, so a cluster's collectors do not all insert in the same second; 0 to 5m")
	fs.DurationVar(&f.rollupDelay, "rollup-delay", 5*time.Minute, "with --ledger, how long after an hour ends its ClickHouse rollups are rebuilt, so other nodes' rows are in by then; 0 to 1h")
	fs.DurationVar(&f.rollupJitter, "rollup-jitter", 5*time.Minute, "with --ledger, this collector's random share (drawn once) added to --rollup-delay, so one collector rebuilds an hour and the others find it current; 0 to 1h")
	fs.DurationVar(&f.poll, "poll-interval", time.Second, "collection period")
	fs.DurationVar(&f.ledgerInterval, "ledger-interval", time.Minute, "ledger row interval")
	if err := parseFlags(fs, args, ""); err != nil {
		return f, err
	}
	if f.node == "" {
		return f, errors.New("collect needs --node (or NODE_NAME)")
	}
	if err := ledger.CheckClusterName(f.cluster); err != nil {
		return f, fmt.Errorf("--cluster: %w", err)
	}
	if f.clusterID != "" {
		if err := ledger.CheckClusterID(f.clusterID); err != nil {
			return f, fmt.Errorf("--cluster-id: %w", err)
		}
	}
	for _, b := range []struct {
		name     string
		v, limit time.Duration
	}{{"ship-min-interval", f.shipMinInterval, 10 * time.Minute}, {"ship-wake-jitter", f.shipWakeJitter, 5 * time.Minute},
		{"rollup-delay", f.rollupDelay, time.Hour}, {"rollup-jitter", f.rollupJitter, time.Hour}} {
		if b.v < 0 || b.v > b.limit {
			return f, fmt.Errorf("--%s %s must be between 0 and %s", b.name, b.v, b.limit)
		}
	}
	if f.shutdownTimeout < 0 || f.shutdownTimeout > maxShutdownTimeout {
		return f, fmt.Errorf("--shutdown-timeout %s must be between 0 and %s", f.shutdownTimeout, maxShutdownTimeout)
	}
	// The same bounds as a scenario's: DCGM watches no faster than 100 ms,
	// and ledger rows are written to the second.
	if f.poll < 100*time.Millisecond || f.poll > time.Hour {
		return f, fmt.Errorf("--poll-interval %s must be between 100ms and 1h", f.poll)
	}
	if f.ledgerInterval < time.Second || f.ledgerInterval > 24*time.Hour {
		return f, fmt.Errorf("--ledger-interval %s must be between 1s and 24h", f.ledgerInterval)
	}
	if f.ledgerInterval < f.poll {
		return f, fmt.Errorf("--poll-interval %s must be at most --ledger-interval %s", f.poll, f.ledgerInterval)
	}
	return f, nil
}

func runCollect(ctx context.Context, args []string, _ io.Writer) error {
	f, err := parseCollectFlags(args)
	if err != nil {
		return err
	}
	log := slog.Default().With("node", f.node)

	// Bind first: a port another process holds fails the start at once,
	// and the probes are answered while the node's ledger migrates.
	ln, err := bindWithWebConfig(f.listen, f.webConfig)
	if err != nil {
		return err
	}
	boot := exposition.NewStartup("starting")
	srv := &http.Server{Handler: boot.Mux(), ReadHeaderTimeout: 5 * time.Second}
	// A collector whose metrics cannot be served (bad web config) stops
	// rather than collecting blind.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := serveListener(runCtx, srv, ln, f.webConfig)
		if err != nil {
			cancel()
		}
		served <- err
	}()
	err = runCollector(runCtx, f, boot, log)
	cancel()
	return errors.Join(err, <-served)
}

// runCollector is collect once its HTTP surface is up: it runs until ctx
// ends, then stops at that instant and drains the outbox.
func runCollector(ctx context.Context, f collectFlags, boot *exposition.Startup, log *slog.Logger) error {
	nv := nvmlsource.New(nvml.New(), log)
	if err := nv.Init(ctx); err != nil {
		return fmt.Errorf("cannot initialise NVML (is the NVIDIA driver mounted?): %w", err)
	}
	defer nv.Close()

	var dcgm *dcgmsource.Source
	if f.dcgmMode != "off" {
		client, err := dcgmsource.NewDCGMClient(ctx, f.dcgmMode, f.dcgmAddress, log)
		if err == nil {
			err = client.Watch(ctx, f.poll)
		}
		if err != nil {
			log.Warn("DCGM unavailable, running on NVML alone (MIG instance activity is blind without it)", "err", err)
			client = nil
		}
		dcgm = dcgmsource.NewSource(client, log)
	}

	kube, err := kubeClient(f.kubeconfig)
	if err != nil {
		return err
	}
	watches := kubemeta.NodeWatches(kube, f.node)
	// DRA is optional: a cluster without resource.k8s.io/v1, or RBAC
	// without the ResourceSlice rule, reports no DRA devices (logged once).
	dra, err := kubemeta.ResourceClient(f.kubeconfig)
	if err != nil {
		return err
	}
	watches.ResourceSlices = kubemeta.ResourceSliceWatch(dra, f.node)
	meta, err := kubemeta.NewInformerSource(ctx, watches, f.node, log)
	if err != nil {
		return fmt.Errorf("cannot start Kubernetes metadata informers: %w", err)
	}
	defer meta.Close()
	pods := podresources.NewClient(f.kubeletSocket, log)
	defer pods.Close()

	if err := os.MkdirAll(f.dataDir, 0o750); err != nil {
		return fmt.Errorf("cannot create data directory: %w", err)
	}
	if f.ledgerDSN != "" && f.clusterID == "" {
		if f.clusterID, err = kubeSystemUID(ctx, kube); err != nil {
			return fmt.Errorf("cannot find this cluster's identity (or pass --cluster-id): %w", err)
		}
	}
	boot.SetPhase("migrating")
	out, err := openOutbox(ctx, f, log)
	if err != nil {
		return err
	}
	defer out.Close()

	book, err := loadPrices(f.prices)
	if err != nil {
		return err
	}
	exp := exposition.New(f.node, exposition.Options{BuildVersion: version, BuildRevision: revision,
		PodLabelAllowlist: splitList(f.podLabels), Prices: exportedPrices(book)})
	engine := attribution.NewEngine(attribution.Config{Node: f.node, LedgerInterval: f.ledgerInterval, PollInterval: f.poll, TeamLabel: f.teamLabel, IgnorePodTeamLabel: !f.teamFromPodLabel})
	// The annotation values the previous collector on this node pinned: a
	// tenant's edit while we were down must not move cost.
	pins, err := out.Store().Pins(ctx)
	if err != nil {
		return err
	}
	engine.RestorePins(pins)
	if len(pins) > 0 {
		log.Info("restored annotation pins from the node's ledger", "pins", len(pins))
	}
	mark := &collector.LeaveMark{}
	c := collector.New(collector.Config{Node: f.node, Cluster: f.cluster, Outbox: outboxStatus(out)}, collector.WallClock{}, collector.Sources{
		NVML: nv, DCGM: dcgm, Pods: pods, Meta: meta, Procs: procfs.NewResolver(f.procRoot),
	}, engine, exp, []collector.Sink{out, mark}, log)
	boot.Ready(exp.Handler())

	log.Info("collecting", "poll", f.poll, "ledger_interval", f.ledgerInterval, "listen", f.listen)
	err = c.Run(ctx, f.poll) // on ctx's end: a last cycle and the open interval closed at that instant
	if ctx.Err() != nil {
		// Stopped by a signal: the node leaves cleanly, and says so before
		// the drain ships it.
		err = errors.Join(err, collector.RecordLeave(ctx, f.node, mark, []collector.Sink{out}, log))
	}
	return errors.Join(err, drainOutbox(ctx, out, f.shutdownTimeout, log))
}

// The outbox keeps the collector's annotation pins beside its rows, so the
// collector hands it the pins before the rows.
var _ collector.PinSink = (*outbox.Outbox)(nil)

// shipperPacing is the shipper's pacing from the flags. The shipper reads
// 0 as its default and a negative value as none, so a flag's 0 (none) is
// passed as -1.
func shipperPacing(f collectFlags) shipper.Options {
	none := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	return shipper.Options{MinInterval: none(f.shipMinInterval), WakeJitter: none(f.shipWakeJitter),
		RollupDelay: none(f.rollupDelay), RollupJitter: none(f.rollupJitter)}
}

// openOutbox opens the node's embedded ledger and, with --ledger, the
// cluster ledger its rows ship to.
func openOutbox(ctx context.Context, f collectFlags, log *slog.Logger) (*outbox.Outbox, error) {
	opts := outbox.Options{Path: filepath.Join(f.dataDir, "ledger.db"), MaxBytes: f.outboxMaxBytes, Retention: f.retention, Logger: log,
		Shipper: shipperPacing(f)}
	if f.ledgerDSN != "" {
		d, err := ledger.ParseDSN(f.ledgerDSN)
		if err != nil {
			return nil, err
		}
		if d.Scheme != ledger.SchemeClickHouse {
			return nil, fmt.Errorf("--ledger %s: collect ships to ClickHouse; the node's own ledger is always %s", d.Redacted(), opts.Path)
		}
		if opts.Remote, err = openClickHouse(ctx, d); err != nil {
			return nil, err
		}
		// Two clusters shipping under one name would mix their nodes'
		// rows: the name is the first identity's that shipped with it.
		if err := ledger.ClaimClusterName(ctx, opts.Remote, f.cluster, f.clusterID, time.Now()); err != nil {
			opts.Remote.Close()
			return nil, fmt.Errorf("--cluster %s: %w", f.cluster, err)
		}
		log.Info("cluster name claimed in the ledger", "cluster", f.cluster, "cluster_id", f.clusterID)
	}
	return outbox.Open(ctx, opts)
}

func outboxStatus(out *outbox.Outbox) func() collector.OutboxStatus {
	return func() collector.OutboxStatus {
		s := out.Status()
		return collector.OutboxStatus{Pending: s.Pending, OldestAge: s.OldestAge,
			BatchesShipped: s.BatchesShipped, BatchesFailed: s.BatchesFailed, RowsDropped: s.RowsDropped}
	}
}

// drainOutbox is the shutdown path collect and simulate share once their
// last rows are written: ship what is pending for at most timeout (from
// now, moments after the signal); what is left stays in the node's file
// for the next start.
func drainOutbox(ctx context.Context, out *outbox.Outbox, timeout time.Duration, log *slog.Logger) error {
	if !out.Shipping() {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	began := time.Now()
	if err := out.Drain(dctx); err != nil {
		return err
	}
	log.Info("shipped every pending row before stopping", "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
