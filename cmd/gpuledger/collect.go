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
)

type collectFlags struct {
	node, kubeletSocket, procRoot, kubeconfig, listen string
	dcgmMode, dcgmAddress, teamLabel, dataDir         string
	ledgerDSN, webConfig, prices                      string
	podLabels                                         string
	teamFromPodLabel                                  bool
	outboxMaxBytes                                    int64
	poll, ledgerInterval, retention                   time.Duration
}

func parseCollectFlags(args []string) (collectFlags, error) {
	var f collectFlags
	fs := flag.NewFlagSet("collect", flag.ContinueOnError)
	fs.StringVar(&f.node, "node", envDefault("NODE_NAME", ""), "this node's name (env NODE_NAME, from the downward API)")
	fs.StringVar(&f.kubeletSocket, "kubelet-socket", envDefault("GPULEDGER_KUBELET_SOCKET", podresources.DefaultSocket), "kubelet pod-resources socket (env GPULEDGER_KUBELET_SOCKET)")
	fs.StringVar(&f.procRoot, "proc-root", envDefault("GPULEDGER_PROC_ROOT", "/proc"), "host procfs root; needs hostPID (env GPULEDGER_PROC_ROOT)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", envDefault("KUBECONFIG", ""), "kubeconfig; empty means in-cluster config")
	fs.StringVar(&f.listen, "listen", envDefault("GPULEDGER_LISTEN", ":9400"), "address for /metrics and /healthz (env GPULEDGER_LISTEN)")
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
	fs.DurationVar(&f.poll, "poll-interval", time.Second, "collection period")
	fs.DurationVar(&f.ledgerInterval, "ledger-interval", time.Minute, "ledger row interval")
	if err := parseFlags(fs, args, ""); err != nil {
		return f, err
	}
	if f.node == "" {
		return f, errors.New("collect needs --node (or NODE_NAME)")
	}
	if f.poll <= 0 || f.ledgerInterval < f.poll {
		return f, fmt.Errorf("--poll-interval %s must be positive and at most --ledger-interval %s", f.poll, f.ledgerInterval)
	}
	return f, nil
}

func runCollect(ctx context.Context, args []string, _ io.Writer) error {
	f, err := parseCollectFlags(args)
	if err != nil {
		return err
	}
	log := slog.Default().With("node", f.node)

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
	pins, err := out.store.Pins(ctx)
	if err != nil {
		return err
	}
	engine.RestorePins(pins)
	if len(pins) > 0 {
		log.Info("restored annotation pins from the node's ledger", "pins", len(pins))
	}
	c := collector.New(collector.Config{Node: f.node, Outbox: out.status}, collector.WallClock{}, collector.Sources{
		NVML: nv, DCGM: dcgm, Pods: pods, Meta: meta, Procs: procfs.NewResolver(f.procRoot),
	}, engine, exp, []collector.Sink{pinningOutbox{out}}, log)

	srv := &http.Server{Handler: serveMux(exp), ReadHeaderTimeout: 5 * time.Second}
	// A collector whose metrics cannot be served (bad web config, port in
	// use) stops rather than collecting blind.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := serveWithWebConfig(runCtx, srv, f.listen, f.webConfig)
		if err != nil {
			cancel()
		}
		served <- err
	}()
	log.Info("collecting", "poll", f.poll, "ledger_interval", f.ledgerInterval, "listen", f.listen)
	err = c.Run(runCtx, f.poll)
	cancel()
	return errors.Join(err, <-served)
}

// pinningOutbox saves annotation pins to the embedded ledger the outbox
// commits rows to, so the collector hands it the pins before the rows.
type pinningOutbox struct{ *outbox }

var _ collector.PinSink = pinningOutbox{}

func (o pinningOutbox) SavePins(ctx context.Context, pins []attribution.AnnotationPin) error {
	return o.store.SavePins(ctx, pins)
}

func (o pinningOutbox) ForgetPins(ctx context.Context, keep func(podUID string) bool) (int, error) {
	return o.store.ForgetPins(ctx, keep)
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
