package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/billing/tokencost"
	"github.com/gpuledger/gpuledger/ledger"
)

// The report formats --advice and --prometheus add a section to
// (report.Format's names, as the flags hold them).
const (
	reportJSON = string(report.FormatJSON)
	reportHTML = string(report.FormatHTML)
)

const reportUsageText = `usage: gpuledger report (--period YYYY-MM | --from T --to T) --prices FILE
                        [--format csv|json|html|focus|focus-jsonl] [--out FILE] [--ledger DSN]
                        [--advice [--pods FILE]] [--focus-version 1.3|1.4]
                        [--prometheus URL [--prometheus-timeout D]] [--recompute]
                        [--cluster NAME]

Writes the chargeback for one period from the ledger and a price book
(docs/report.md): the finance CSV, the same numbers as JSON, a
self-contained HTML report, or a FOCUS 1.3 (or 1.4) cost and usage file
(CSV, or JSON lines; docs/focus.md).

  --period   a calendar month in the price book's time zone
  --from/--to  any other range: RFC 3339, or YYYY-MM-DD for the start of that
             day in the price book's time zone (--to is exclusive)
  --prices   the price book, prices.yaml (env GPULEDGER_PRICES)
  --format   csv (default, or from --out's extension), json, html, focus or focus-jsonl;
             an --out whose extension disagrees with it is refused
  --out      output file, written only once complete; default stdout
  --ledger   ledger DSN (env GPULEDGER_LEDGER): PATH, file:PATH or
             clickhouse://user:password@host:9000/database
  --advice   json and html: add a "savings" section, what gpuledger advise
             recommends for the same period, ledger and price book (it reads
             every container row: seconds for a month, docs/advisor.md)
  --pods     with --advice: kubectl get pods -A -o json output, as for advise
  --prometheus  json and html: add a "tokens" section, each inference
             workload's exact GPU cost per million input and output tokens,
             its servers' token counters read from this Prometheus at the
             period's end (docs/tokens.md); unreachable is an error
  --prometheus-timeout  bound on all of the token queries together (default 60s)
  --focus-version  focus and focus-jsonl: the FOCUS version, 1.3 (default)
             or 1.4 (no ProviderName or PublisherName columns)
  --recompute  a closed month: write it as it would be billed today, and
             the difference per team from its stored bill on stderr
  --cluster  one cluster's bill (env GPULEDGER_CLUSTER): its rows only,
             built from the ledger even for a closed month; default the
             fleet's, each cluster billed on its own and added, with a
             cluster column and a per-cluster split (docs/report.md)

A closed month (gpuledger close) is written as stored when it closed, byte
for byte, whatever the price book says now; an open month bills the
adjustments of the closed months before it (docs/report.md).

A period the ledger covers only in part (the current month, a collector
installed mid-month) is partial: every file says so (the finance CSV's partial, data_start and
data_end columns, appended after the others; FOCUS x_Partial; "partial" in
the JSON and the HTML title), and so does a warning on stderr. A period with
no ledger data, or one that has not started, is an error (exit 1).
`

type reportFlags struct {
	periodFlags
	format, out string
	advice      bool
	advicePods  string
	// prometheus and promTimeout: the cost per token section.
	prometheus  string
	promTimeout time.Duration
	// focusVersion: the FOCUS version of focus and focus-jsonl.
	focusVersion string
	// recompute: a closed month as it would be billed today.
	recompute bool
	// cluster: one cluster's bill; empty, the fleet's.
	cluster string
}

// periodFlags are what every command that prices a period of the ledger
// takes (report, advise): the period, the price book and the ledger.
type periodFlags struct {
	period, from, to string
	prices, ledger   string
}

func (p *periodFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.period, "period", "", "calendar month YYYY-MM in the price book's time zone")
	fs.StringVar(&p.from, "from", "", "start of the range, inclusive (RFC 3339 or YYYY-MM-DD)")
	fs.StringVar(&p.to, "to", "", "end of the range, exclusive (RFC 3339 or YYYY-MM-DD)")
	fs.StringVar(&p.prices, "prices", envDefault("GPULEDGER_PRICES", ""), "price book (env GPULEDGER_PRICES)")
	fs.StringVar(&p.ledger, "ledger", envDefault("GPULEDGER_LEDGER", ""), "ledger DSN (env GPULEDGER_LEDGER)")
}

// check names what is missing or contradictory, for command cmd.
func (p *periodFlags) check(cmd string) error {
	switch {
	case p.period != "" && (p.from != "" || p.to != ""):
		return errors.New(cmd + ": give --period or --from/--to, not both")
	case p.period == "" && (p.from == "" || p.to == ""):
		return errors.New(cmd + " needs --period YYYY-MM, or --from and --to")
	case p.prices == "":
		return errors.New(cmd + " needs --prices FILE (or GPULEDGER_PRICES)")
	case p.ledger == "":
		return errors.New(cmd + " needs --ledger DSN or GPULEDGER_LEDGER")
	}
	return nil
}

func parseReportFlags(args []string) (reportFlags, error) {
	var f reportFlags
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	f.periodFlags.register(fs)
	fs.StringVar(&f.format, "format", "", "csv, json, html, focus or focus-jsonl (default: from --out's extension, else csv)")
	fs.StringVar(&f.out, "out", "", "output file; default stdout")
	fs.BoolVar(&f.advice, "advice", false, "add the advisor's savings (json, html)")
	fs.StringVar(&f.advicePods, "pods", "", "pod metadata for --advice")
	fs.StringVar(&f.prometheus, "prometheus", "", "Prometheus URL for the cost per token section (json, html)")
	fs.DurationVar(&f.promTimeout, "prometheus-timeout", tokencost.DefaultTimeout, "bound on all of the token queries together")
	fs.StringVar(&f.focusVersion, "focus-version", report.FOCUSVersion13, "FOCUS version of focus and focus-jsonl: 1.3 or 1.4")
	fs.BoolVar(&f.recompute, "recompute", false, "a closed month as it would be billed today, and the difference")
	fs.StringVar(&f.cluster, "cluster", envDefault("GPULEDGER_CLUSTER", ""), "one cluster's bill (env GPULEDGER_CLUSTER); default the fleet's, split by cluster")
	if err := parseFlags(fs, args, reportUsageText); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("report: unexpected argument %q", fs.Arg(0))
	}
	if err := f.check("report"); err != nil {
		return f, err
	}
	if f.cluster != "" {
		if err := ledger.CheckClusterName(f.cluster); err != nil {
			return f, fmt.Errorf("report: --cluster: %w", err)
		}
	}
	if f.format == "" {
		f.format = formatFromName(f.out)
	}
	if _, err := report.ParseFormat(f.format); err != nil {
		return f, fmt.Errorf("report: --format %q: want %s", f.format, report.FormatNames())
	}
	if err := checkOutName(f.out, f.format); err != nil {
		return f, err
	}
	if err := f.checkAdvice(); err != nil {
		return f, err
	}
	if f.prometheus != "" && f.format != reportJSON && f.format != reportHTML {
		return f, fmt.Errorf("report: --prometheus adds a section to json and html only, not to %s", f.format)
	}
	if f.promTimeout <= 0 || f.promTimeout > 10*time.Minute {
		return f, fmt.Errorf("report: --prometheus-timeout %s: want more than 0 and at most 10m", f.promTimeout)
	}
	if !report.IsFOCUSVersion(f.focusVersion) {
		return f, fmt.Errorf("report: --focus-version %q: want %s or %s", f.focusVersion, report.FOCUSVersion13, report.FOCUSVersion14)
	}
	return f, nil
}

// formatFromName picks the format an output file's extension names.
func formatFromName(path string) string {
	return string(report.FormatFromName(path))
}

// checkOutName refuses an --out whose extension disagrees with the format
// (a finance CSV written into x.pdf or x.json reads as broken to whoever
// opens it). A name without an extension fits any format.
func checkOutName(path, format string) error {
	ext := strings.ToLower(filepath.Ext(path))
	if path == "" || path == "-" || ext == "" {
		return nil
	}
	f := report.Format(format)
	if f.Holds(ext) {
		return nil
	}
	return fmt.Errorf("report: --out %s: a %s file does not end in %s; name it *%s, or give the --format that %s files hold", path, format, ext, f.Ext(), ext)
}

// bounds resolves the flags to [from, to) in the book's zone.
func (f reportFlags) bounds(loc *time.Location) (from, to time.Time, err error) {
	if f.period != "" {
		return report.Month(f.period, loc)
	}
	if from, err = report.ParseBound(f.from, loc); err != nil {
		return from, to, fmt.Errorf("report --from: %w", err)
	}
	if to, err = report.ParseBound(f.to, loc); err != nil {
		return from, to, fmt.Errorf("report --to: %w", err)
	}
	if !from.Before(to) {
		return from, to, fmt.Errorf("report: --from %s is not before --to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	return from, to, nil
}

func runReport(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseReportFlags(args)
	if err != nil {
		return err
	}
	book, err := pricebook.Load(f.prices)
	if err != nil {
		return err
	}
	from, to, err := f.bounds(book.Location)
	if err != nil {
		return err
	}
	st, err := ledger.Open(ctx, f.ledger, storeOpeners)
	if err != nil {
		return err
	}
	defer st.Close()
	began := time.Now()
	var attach func(*report.Report) error
	// A closed month's stored bill is the fleet's: one cluster's is
	// built from the ledger.
	if f.cluster == "" {
		var handled bool
		handled, attach, err = reportMonth(ctx, st, book, f, stdout)
		if handled || err != nil {
			return err
		}
	}
	if f.advice {
		advice, err := adviceAttacher(ctx, st, book, f.advicePods)
		if err != nil {
			return err
		}
		attach = chainAttach(attach, advice)
	}
	if f.prometheus != "" {
		prom, err := tokencost.NewClient(f.prometheus, f.promTimeout)
		if err != nil {
			return fmt.Errorf("report --prometheus: %w", err)
		}
		attach = chainAttach(attach, func(r *report.Report) error {
			t, err := tokencost.Build(ctx, prom, st, book, from, to)
			if err != nil {
				return fmt.Errorf("report --prometheus: %w", err)
			}
			r.Tokens = t
			return nil
		})
	}
	if advice := attach; f.focusVersion != report.FOCUSVersion13 {
		attach = func(r *report.Report) error {
			r.FOCUSVersion = f.focusVersion
			if advice != nil {
				return advice(r)
			}
			return nil
		}
	}
	rep, err := writeReportWith(ctx, st, book, from, to, f.cluster, f.format, f.out, stdout, attach)
	if err != nil {
		return err
	}
	slog.Info("report written", "period", rep.PeriodLabel(), "format", f.format, "lines", len(rep.Lines),
		"total", rep.Money(rep.Total), "currency", book.Currency.Code, "took", time.Since(began).Round(time.Millisecond))
	if f.out != "" && f.out != "-" {
		_, err = fmt.Fprintf(stdout, "%s: chargeback %s, %s %s, %d lines, %d teams\n", f.out, rep.PeriodLabel(),
			rep.Money(rep.Total), book.Currency.Code, len(rep.Lines), len(rep.Teams))
	}
	return err
}

// periodText names [from, to) as a report does.
func periodText(from, to time.Time, book *pricebook.Book) string {
	return (&report.Report{From: from, To: to, Book: book}).PeriodLabel()
}

// writeReport builds the chargeback of [from, to) from st and writes it in
// format to out (stdout when out is "" or "-"); a file appears only once
// complete. The demo writes its month's reports through it too.
func writeReport(ctx context.Context, st report.Source, book *pricebook.Book, from, to time.Time, format, out string, stdout io.Writer) (*report.Report, error) {
	return writeReportWith(ctx, st, book, from, to, "", format, out, stdout, nil)
}

// writeReportWith is writeReport with attach (when not nil) run on the
// built report before it is written: report --advice adds its savings.
// A ledger store's bill is the fleet's, split by cluster, or cluster's
// alone when cluster is set (report.BuildFleet).
func writeReportWith(ctx context.Context, st report.Source, book *pricebook.Book, from, to time.Time, cluster, format, out string, stdout io.Writer,
	attach func(*report.Report) error) (*report.Report, error) {
	generated := now()
	if !from.Before(generated) {
		return nil, fmt.Errorf("cannot report %s: the period has not started yet (it starts %s)", periodText(from, to, book), from.Format(time.RFC3339))
	}
	var rep *report.Report
	var err error
	if s, ok := st.(ledger.Store); ok {
		rep, err = report.BuildFleet(ctx, s, book, from, to, generated, cluster)
	} else if cluster != "" {
		err = fmt.Errorf("cannot bill cluster %s: the source is not a ledger", cluster)
	} else {
		rep, err = report.BuildDated(ctx, st, book, from, to, generated)
	}
	if err != nil {
		return nil, err
	}
	warnUnrecorded(ctx, st, book, generated)
	rep.GeneratedAt = generated
	if unknown := rep.UnknownModels(); len(unknown) > 0 {
		names := make([]string, len(unknown))
		for i, m := range unknown {
			names[i] = m.Model
		}
		slog.Warn("GPU models missing from the price book are charged at its defaultRate", "models", strings.Join(names, ","),
			"defaultRate", book.DefaultRate.Format(book.Currency.MinorUnit), "prices", book.Source)
	}
	// An empty period is a wrong ledger or period, not a zero bill: a
	// running collector writes rows for every GPU, used or not.
	if rep.Empty() {
		return nil, fmt.Errorf("cannot report %s: the ledger has no data in it (%s)", rep.PeriodLabel(), report.NoUsageMessage)
	}
	if note := rep.PartialNote(); note != "" {
		slog.Warn("the report covers only part of its period: not the whole period's bill", "period", rep.PeriodLabel(), "note", note)
	}
	if attach != nil {
		if err := attach(rep); err != nil {
			return nil, err
		}
	}
	w, commit, err := exportTarget(out, stdout)
	if err != nil {
		return nil, err
	}
	defer commit(false)
	if err := report.Write(ctx, w, st, rep, report.Format(format)); err != nil {
		return nil, err
	}
	return rep, commit(true)
}

// chainAttach runs first (when not nil), then next, on a report.
func chainAttach(first, next func(*report.Report) error) func(*report.Report) error {
	if first == nil {
		return next
	}
	return func(r *report.Report) error {
		if err := first(r); err != nil {
			return err
		}
		return next(r)
	}
}
