package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/advisor/whatif"
)

const whatifUsageText = `usage: gpuledger whatif [--tenants N] [--rate RPS] [--service D] [--duration D]
                      [--runs N] [--seed S] [--mode all|mig|mps|timeslicing]
                      [--mig-slices 1,1,...] [--mps-contention C] [--switch D]
                      [--hostile] [--hostile-contention C] [--format text|json]
                      [--out FILE]

Simulates N identical tenants (Poisson arrivals at --rate, each request
--service of compute on the whole card) on one GPU shared by MIG (one 1/N
slice each), MPS (soft contention) and time-slicing (switch cost), and
prints the requests served and the p50 and p99 latency of each mechanism,
averaged over --runs independent runs (docs/advisor.md).

  --tenants          tenants (default 7)
  --rate             requests per second per tenant (default 12)
  --service          compute per request on the whole card (default 10ms)
  --duration         simulated time per run (default 60s)
  --runs             independent runs to average (default 50)
  --seed             fixes the random stream (default 7)
  --mode             all (default) or one mechanism
  --mig-slices       each tenant's MIG compute slices out of 7 (default 7/N each)
  --mps-contention   MPS slowdown per busy co-tenant (default 0.18)
  --switch           time-slicing context-switch cost (default 0.8ms)
  --hostile          also run a hostile tenant: the last tenant sends 2x
                     the requests at 10x the service; report what it does to
                     the others' p99 under each mechanism
  --hostile-contention  MPS coefficient while the hostile tenant is busy (default 1.0)
  --format           text (default) or json
  --out              write to FILE instead of standard output (- for standard
                     output); written whole or not at all, and never over a
                     device, FIFO, socket or directory
`

type whatifFlags struct {
	tenants, runs     int
	rate              float64
	service, duration time.Duration
	seed              uint64
	mode, migSlices   string
	contention, hostC float64
	sw                time.Duration
	hostile           bool
	format, out       string
}

func parseWhatifFlags(args []string) (whatifFlags, whatif.Config, []whatif.Mode, error) {
	f := whatifFlags{}
	fs := flag.NewFlagSet("whatif", flag.ContinueOnError)
	fs.IntVar(&f.tenants, "tenants", 7, "tenants")
	fs.Float64Var(&f.rate, "rate", 12, "requests per second per tenant")
	fs.DurationVar(&f.service, "service", 10*time.Millisecond, "compute per request on the whole card")
	fs.DurationVar(&f.duration, "duration", time.Minute, "simulated time per run")
	fs.IntVar(&f.runs, "runs", 50, "independent runs")
	fs.Uint64Var(&f.seed, "seed", 7, "random seed")
	fs.StringVar(&f.mode, "mode", "all", "all, mig, mps or timeslicing")
	fs.StringVar(&f.migSlices, "mig-slices", "", "MIG compute slices out of 7 per tenant, comma-separated")
	fs.Float64Var(&f.contention, "mps-contention", whatif.DefaultMPSContention, "MPS contention coefficient")
	fs.Float64Var(&f.hostC, "hostile-contention", whatif.DefaultHostileContention, "MPS coefficient while a hostile tenant is busy")
	fs.DurationVar(&f.sw, "switch", whatif.DefaultSwitch, "time-slicing switch cost")
	fs.BoolVar(&f.hostile, "hostile", false, "run the hostile-tenant exercise")
	fs.StringVar(&f.format, "format", string(whatif.FormatText), "text or json")
	fs.StringVar(&f.out, "out", "", "output file; default stdout")
	if err := parseFlags(fs, args, whatifUsageText); err != nil {
		return f, whatif.Config{}, nil, err
	}
	if fs.NArg() > 0 {
		return f, whatif.Config{}, nil, fmt.Errorf("whatif: unexpected argument %q", fs.Arg(0))
	}
	if _, err := whatif.ParseFormat(f.format); err != nil {
		return f, whatif.Config{}, nil, fmt.Errorf("whatif: --format %q: want %s", f.format, whatif.FormatNames())
	}
	if f.tenants < 1 || f.tenants > 1024 {
		return f, whatif.Config{}, nil, fmt.Errorf("whatif: --tenants %d: want 1 to 1024", f.tenants)
	}
	if f.hostile && f.tenants < 2 {
		return f, whatif.Config{}, nil, errors.New("whatif: --hostile needs at least 2 tenants")
	}
	if !(f.contention > 0) || !(f.hostC > 0) {
		return f, whatif.Config{}, nil, fmt.Errorf("whatif: contention coefficients must be positive (got %v and %v)", f.contention, f.hostC)
	}
	if f.sw < 0 {
		return f, whatif.Config{}, nil, fmt.Errorf("whatif: --switch %s is negative", f.sw)
	}
	if err := f.checkBounds(); err != nil {
		return f, whatif.Config{}, nil, err
	}
	var modes []whatif.Mode
	if f.mode != "all" {
		m, err := whatif.ParseMode(f.mode)
		if err != nil {
			return f, whatif.Config{}, nil, fmt.Errorf("whatif: --mode: %w (or all)", err)
		}
		modes = []whatif.Mode{m}
	}
	cfg := whatif.Config{Duration: f.duration, Seed: f.seed, Tenants: make([]whatif.Tenant, f.tenants),
		Layout: whatif.Layout{MPSContention: f.contention, HostileContention: f.hostC, Switch: f.sw}}
	if f.sw == 0 {
		cfg.Layout.Switch = whatif.NoSwitch
	}
	for i := range cfg.Tenants {
		cfg.Tenants[i] = whatif.Tenant{Name: fmt.Sprintf("tenant-%d", i), Rate: f.rate, Service: f.service}
	}
	if f.migSlices != "" {
		parts := strings.Split(f.migSlices, ",")
		if len(parts) != f.tenants {
			return f, cfg, nil, fmt.Errorf("whatif: --mig-slices names %d instances for %d tenants", len(parts), f.tenants)
		}
		for _, p := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 1 || n > 7 {
				return f, cfg, nil, fmt.Errorf("whatif: --mig-slices %q: each want 1 to 7 compute slices", p)
			}
			cfg.Layout.MIGFractions = append(cfg.Layout.MIGFractions, float64(n)/7)
		}
	}
	return f, cfg, modes, nil
}

// Bounds of the whatif flags: each keeps one figure sane, and together
// they keep the simulated requests, every run and the hostile exercise
// included, within whatif.MaxRequests (about a minute of work).
const (
	maxWhatifRate     = 1e6 // requests per second per tenant
	maxWhatifService  = time.Hour
	maxWhatifDuration = 366 * 24 * time.Hour
	maxWhatifRuns     = 100_000
	maxWhatifSwitch   = time.Hour
	maxWhatifCoeff    = 100.0
)

// checkBounds refuses a flag outside its bounds, naming it, and a
// combination that would simulate more than whatif.MaxRequests.
func (f *whatifFlags) checkBounds() error {
	switch {
	case !(f.rate > 0 && f.rate <= maxWhatifRate):
		return fmt.Errorf("whatif: --rate %v: the arrival rate must be above 0 and at most %g requests per second", f.rate, maxWhatifRate)
	case f.service <= 0 || f.service > maxWhatifService:
		return fmt.Errorf("whatif: --service %s: the service time must be above 0 and at most %s", f.service, maxWhatifService)
	case f.duration <= 0 || f.duration > maxWhatifDuration:
		return fmt.Errorf("whatif: --duration %s: the duration must be above 0 and at most 366 days (%s)", f.duration, maxWhatifDuration)
	case f.runs < 1 || f.runs > maxWhatifRuns:
		return fmt.Errorf("whatif: --runs %d: want 1 to %d runs", f.runs, maxWhatifRuns)
	case f.sw > maxWhatifSwitch:
		return fmt.Errorf("whatif: --switch %s: at most %s", f.sw, maxWhatifSwitch)
	case f.contention > maxWhatifCoeff || f.hostC > maxWhatifCoeff:
		return fmt.Errorf("whatif: contention coefficients %v and %v: at most %g", f.contention, f.hostC, maxWhatifCoeff)
	}
	// The hostile exercise runs the tenants twice more, one of them at
	// twice the rate.
	per := float64(f.tenants) * f.rate * f.duration.Seconds() * float64(f.runs)
	total, with := per, ""
	if f.hostile {
		total += 2*per + per*(whatif.HostileRateFactor-1)/float64(f.tenants)
		with = " with --hostile"
	}
	if total > whatif.MaxRequests {
		return fmt.Errorf("whatif: --tenants %d x --rate %g x --duration %s x --runs %d is %.3g simulated requests%s, at most %.0g: lower one of them",
			f.tenants, f.rate, f.duration, f.runs, total, with, whatif.MaxRequests)
	}
	return nil
}

func runWhatif(ctx context.Context, args []string, stdout io.Writer) error {
	f, cfg, modes, err := parseWhatifFlags(args)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sums, err := whatif.Compare(ctx, cfg, f.runs, modes...)
	if err != nil {
		return fmt.Errorf("whatif: %w", err)
	}
	var hostile *whatif.HostileReport
	if f.hostile {
		rep, err := whatif.HostileExercise(ctx, cfg, len(cfg.Tenants)-1, f.runs)
		if err != nil {
			return fmt.Errorf("whatif: %w", err)
		}
		hostile = &rep
	}
	w, commit, err := exportTarget(f.out, stdout)
	if err != nil {
		return err
	}
	defer commit(false)
	res := &whatif.Result{Tenants: f.tenants, Rate: f.rate, Service: f.service, Duration: f.duration, Runs: f.runs, Seed: f.seed,
		Summaries: sums, Hostile: hostile}
	if err := whatif.Write(w, res, whatif.Format(f.format)); err != nil {
		return err
	}
	return commit(true)
}
