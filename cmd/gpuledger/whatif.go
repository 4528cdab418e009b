package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
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
	fs.StringVar(&f.format, "format", "text", "text or json")
	fs.StringVar(&f.out, "out", "", "output file; default stdout")
	if err := parseFlags(fs, args, whatifUsageText); err != nil {
		return f, whatif.Config{}, nil, err
	}
	if fs.NArg() > 0 {
		return f, whatif.Config{}, nil, fmt.Errorf("whatif: unexpected argument %q", fs.Arg(0))
	}
	if f.format != "text" && f.format != "json" {
		return f, whatif.Config{}, nil, fmt.Errorf("whatif: --format %q: want text or json", f.format)
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
	if f.format == "json" {
		err = writeWhatifJSON(w, f, sums, hostile)
	} else {
		err = writeWhatifText(w, f, sums, hostile)
	}
	if err != nil {
		return err
	}
	return commit(true)
}

// whatifMode is one mechanism in the JSON output; latencies in ms, means
// over the runs, null where no request was served.
type whatifMode struct {
	Mode      string         `json:"mode"`
	ServedPct *float64       `json:"served_pct"`
	P50       *float64       `json:"p50_ms"`
	P99       *float64       `json:"p99_ms"`
	P50SD     *float64       `json:"p50_sd_ms"`
	P99SD     *float64       `json:"p99_sd_ms"`
	Tenants   []whatifTenant `json:"tenants"`
}

type whatifTenant struct {
	Name      string   `json:"name"`
	Hostile   bool     `json:"hostile,omitempty"`
	ServedPct *float64 `json:"served_pct"`
	P50       *float64 `json:"p50_ms"`
	P99       *float64 `json:"p99_ms"`
}

type whatifHostile struct {
	Tenant string              `json:"tenant"`
	Modes  []whatifHostileMode `json:"modes"`
	// GapMs is the well-behaved tenants' p99 under MPS minus under MIG,
	// with the hostile tenant.
	GapMs        *float64 `json:"gap_ms"`
	MIGUnchanged bool     `json:"mig_unchanged"`
}

type whatifHostileMode struct {
	Mode       string   `json:"mode"`
	BenignP99  *float64 `json:"well_behaved_p99_ms"`
	HostileP99 *float64 `json:"well_behaved_p99_with_hostile_ms"`
	Change     *float64 `json:"change_ms"`
}

type whatifDoc struct {
	Tenants   int            `json:"tenants"`
	RateRPS   float64        `json:"rate_rps"`
	ServiceMs float64        `json:"service_ms"`
	DurationS float64        `json:"duration_s"`
	Runs      int            `json:"runs"`
	Seed      uint64         `json:"seed"`
	Modes     []whatifMode   `json:"modes"`
	Hostile   *whatifHostile `json:"hostile,omitempty"`
}

// num is x*scale for JSON, nil when undefined.
func num(x, scale float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	v := x * scale
	return &v
}

func writeWhatifJSON(w io.Writer, f whatifFlags, sums []whatif.Summary, h *whatif.HostileReport) error {
	doc := whatifDoc{Tenants: f.tenants, RateRPS: f.rate, ServiceMs: f.service.Seconds() * 1e3, DurationS: f.duration.Seconds(),
		Runs: f.runs, Seed: f.seed, Modes: []whatifMode{}}
	for _, s := range sums {
		m := whatifMode{Mode: string(s.Mode), ServedPct: num(s.ServedFraction.Mean, 100), P50: num(s.P50.Mean, 1e3), P99: num(s.P99.Mean, 1e3),
			P50SD: num(s.P50.SD, 1e3), P99SD: num(s.P99.SD, 1e3)}
		for _, t := range s.Tenants {
			m.Tenants = append(m.Tenants, whatifTenant{Name: t.Name, Hostile: t.Hostile, ServedPct: num(t.ServedFraction.Mean, 100),
				P50: num(t.P50.Mean, 1e3), P99: num(t.P99.Mean, 1e3)})
		}
		doc.Modes = append(doc.Modes, m)
	}
	if h != nil {
		dh := &whatifHostile{Tenant: fmt.Sprintf("tenant-%d", h.Index), GapMs: num(h.Gap, 1e3), MIGUnchanged: h.MIGUnchanged}
		for _, m := range h.Modes {
			dh.Modes = append(dh.Modes, whatifHostileMode{Mode: string(m.Mode), BenignP99: num(m.BenignP99.Mean, 1e3),
				HostileP99: num(m.HostileP99.Mean, 1e3), Change: num(m.Change, 1e3)})
		}
		doc.Hostile = dh
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("cannot write whatif JSON: %w", err)
	}
	return nil
}

// ms writes seconds as milliseconds, "-" when undefined.
func ms(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(x*1e3, 'f', 2, 64)
}

func writeWhatifText(w io.Writer, f whatifFlags, sums []whatif.Summary, h *whatif.HostileReport) error {
	fmt.Fprintf(w, "%d tenants x %g rps, %s of compute per request, %s per run, %d runs (seed %d)\n",
		f.tenants, f.rate, f.service, f.duration, f.runs, f.seed)
	fmt.Fprintf(w, "percentiles are means over the runs, ± the run-to-run standard deviation\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tserved%\tp50 ms\t± \tp99 ms\t± \t")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%s\t%s\t\n", s.Mode, s.ServedFraction.Mean*100, ms(s.P50.Mean), ms(s.P50.SD), ms(s.P99.Mean), ms(s.P99.SD))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if h == nil {
		return nil
	}
	fmt.Fprintf(w, "\nhostile tenant-%d (2x the requests, 10x the service): p99 of the other %d tenants\n\n", h.Index, f.tenants-1)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\twithout ms\twith ms\tchange ms\t")
	for _, m := range h.Modes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", m.Mode, ms(m.BenignP99.Mean), ms(m.HostileP99.Mean), ms(m.Change))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	unchanged := "unchanged, run by run"
	if !h.MIGUnchanged {
		unchanged = "CHANGED (isolation broken)"
	}
	_, err := fmt.Fprintf(w, "\nMIG: well-behaved p99 %s. Gap, MPS minus MIG, with the hostile tenant: %s ms\n", unchanged, ms(h.Gap))
	return err
}
