package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"text/tabwriter"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

const closeUsageText = `usage: gpuledger close --ledger DSN --prices FILE --period YYYY-MM

Closes a month (docs/report.md, "Closing a month"): stores in the ledger the
month's finance CSV, JSON, HTML and FOCUS files (CSV and JSON lines) as
gpuledger report writes them now, the price book they were priced with
(its bytes and SHA-256), the time and a SHA-256 digest of the files. From
then on report --period and every serve page and file of that month are
the stored bytes, whatever the price book says. A month that has not ended
in the price book's time zone, or that the ledger has no data in, is
refused; closing a closed month changes nothing and says so.

  --ledger   ledger DSN (env GPULEDGER_LEDGER): PATH, file:PATH or
             clickhouse://user:password@host:9000/database
  --prices   the price book to bill the month with (env GPULEDGER_PRICES)
  --period   the month, YYYY-MM in the price book's time zone
`

const reopenUsageText = `usage: gpuledger reopen --ledger DSN --period YYYY-MM --reason TEXT

Reopens a closed month: from then on it is recomputed from the ledger and
the price book again, as before it was closed. The closing stays in the
month's history, which is append-only; the reopening is recorded with its
reason and logged. Adjustments of the month already billed in months
closed since are not taken back: close it again only if that is meant.

  --ledger   ledger DSN (env GPULEDGER_LEDGER)
  --period   the closed month, YYYY-MM
  --reason   why, for the history (required, at most 1000 bytes)
`

const adjustUsageText = `usage: gpuledger adjust --ledger DSN --prices FILE --period YYYY-MM [--post --reason TEXT]

Compares a closed month's stored bill with the month recomputed now at
--prices, per team: stored, recomputed, difference. With --post, records
--prices as the prices the month's corrections are billed at: the first
open month after it bills the difference as adjustment lines (rows that
arrived after the month closed are billed at its closing prices without a
post).

  --ledger   ledger DSN (env GPULEDGER_LEDGER)
  --prices   the price book to recompute with (env GPULEDGER_PRICES)
  --period   the closed month, YYYY-MM
  --post     record the difference to be billed as adjustments
  --reason   with --post: why, for the history (required)
`

// closingFlags are the flags of close, reopen and adjust.
type closingFlags struct {
	ledger, prices, period, reason string
	post                           bool
}

func parseClosingFlags(name string, args []string, usage string) (closingFlags, error) {
	var f closingFlags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&f.ledger, "ledger", envDefault("GPULEDGER_LEDGER", ""), "ledger DSN (env GPULEDGER_LEDGER)")
	fs.StringVar(&f.period, "period", "", "the month, YYYY-MM")
	if name != "reopen" {
		fs.StringVar(&f.prices, "prices", envDefault("GPULEDGER_PRICES", ""), "price book (env GPULEDGER_PRICES)")
	}
	if name != "close" {
		fs.StringVar(&f.reason, "reason", "", "why, for the history")
	}
	if name == "adjust" {
		fs.BoolVar(&f.post, "post", false, "record the difference to be billed as adjustments")
	}
	if err := parseFlags(fs, args, usage); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
	case f.ledger == "":
		return f, fmt.Errorf("%s needs --ledger DSN or GPULEDGER_LEDGER", name)
	case f.period == "":
		return f, fmt.Errorf("%s needs --period YYYY-MM", name)
	case !ledger.ValidPeriod(f.period):
		return f, fmt.Errorf("%s: --period %q: want a calendar month YYYY-MM", name, f.period)
	case name != "reopen" && f.prices == "":
		return f, fmt.Errorf("%s needs --prices FILE (or GPULEDGER_PRICES)", name)
	case name == "reopen" && f.reason == "":
		return f, errors.New("reopen needs --reason TEXT: the history says why a closed month was reopened")
	case name == "adjust" && f.post && f.reason == "":
		return f, errors.New("adjust --post needs --reason TEXT: the history says why a closed month's bill is corrected")
	case name == "adjust" && !f.post && f.reason != "":
		return f, errors.New("adjust: --reason goes with --post")
	case len(f.reason) > ledger.MaxClosingReason:
		return f, fmt.Errorf("%s: --reason is %d bytes, at most %d", name, len(f.reason), ledger.MaxClosingReason)
	}
	return f, nil
}

// openClosingStore opens the ledger for writing its closings: a file is
// opened writable (it must exist), ClickHouse as every command opens it.
func openClosingStore(ctx context.Context, dsn string) (ledger.Store, ledger.ClosingStore, error) {
	openers := maps.Clone(storeOpeners)
	openers[ledger.SchemeFile] = filestore.Opener(filestore.FileOptions{MustExist: true})
	st, err := ledger.Open(ctx, dsn, openers)
	if err != nil {
		return nil, nil, err
	}
	cs, err := ledger.Closings(st)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, cs, nil
}

// loadBook reads a price book and its bytes.
func loadBook(path string) (*pricebook.Book, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read price book %s: %w", path, err)
	}
	book, err := pricebook.Parse(path, b)
	if err != nil {
		return nil, nil, err
	}
	return book, b, nil
}

func runClose(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseClosingFlags("close", args, closeUsageText)
	if err != nil {
		return err
	}
	book, bookBytes, err := loadBook(f.prices)
	if err != nil {
		return err
	}
	st, cs, err := openClosingStore(ctx, f.ledger)
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := report.CloseMonth(ctx, st, cs, book, bookBytes, f.period, now())
	if errors.Is(err, ledger.ErrAlreadyClosed) {
		h, herr := cs.ClosingHistory(ctx, f.period, false)
		if herr != nil {
			return herr
		}
		if in := ledger.Closed(h); in != nil {
			_, err = fmt.Fprintf(stdout, "%s is already closed (at %s, digest %s): nothing changed\n", f.period, ledger.FormatTime(in.At), in.Digest)
			return err
		}
	}
	if err != nil {
		return err
	}
	slog.Info("month closed", "period", f.period, "digest", c.Digest, "prices", f.prices, "prices_sha256", c.PriceBookSHA256)
	_, err = fmt.Fprintf(stdout, "closed %s at %s: digest %s, price book %s (SHA-256 %s)\n", f.period, ledger.FormatTime(c.At), c.Digest, f.prices, c.PriceBookSHA256)
	return err
}

func runReopen(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseClosingFlags("reopen", args, reopenUsageText)
	if err != nil {
		return err
	}
	st, cs, err := openClosingStore(ctx, f.ledger)
	if err != nil {
		return err
	}
	defer st.Close()
	at := now()
	if err := report.Reopen(ctx, cs, f.period, f.reason, at); err != nil {
		return err
	}
	slog.Warn("closed month reopened", "period", f.period, "reason", f.reason)
	_, err = fmt.Fprintf(stdout, "reopened %s at %s: %s (its closing stays in the history)\n", f.period, ledger.FormatTime(at), f.reason)
	return err
}

func runAdjust(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseClosingFlags("adjust", args, adjustUsageText)
	if err != nil {
		return err
	}
	book, bookBytes, err := loadBook(f.prices)
	if err != nil {
		return err
	}
	st, cs, err := openClosingStore(ctx, f.ledger)
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := report.ClosedMonth(ctx, cs, f.period)
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("adjust: %s is not closed: an open month is recomputed on every report, nothing to adjust", f.period)
	}
	rep, diffs, err := report.Recompute(ctx, st, c, book)
	if err != nil {
		return err
	}
	if err := writeDifferences(stdout, rep, diffs); err != nil {
		return err
	}
	if !f.post {
		return nil
	}
	if err := report.PostAdjustment(ctx, cs, f.period, bookBytes, f.reason, now()); err != nil {
		return err
	}
	slog.Info("adjustment posted", "period", f.period, "prices", f.prices, "reason", f.reason)
	_, err = fmt.Fprintf(stdout, "posted: the first open month after %s bills the difference as adjustment lines\n", f.period)
	return err
}

// writeDifferences prints a closed month's stored and recomputed totals
// per team.
func writeDifferences(w io.Writer, rep *report.Report, diffs []report.TeamDifference) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "team\tstored\trecomputed\tdifference\t\n")
	var s, r int64
	for _, d := range diffs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", d.Team, rep.Money(d.Stored), rep.Money(d.Recomputed), rep.Money(d.Difference()))
		s, r = s+d.Stored, r+d.Recomputed
	}
	fmt.Fprintf(tw, "total %s\t%s\t%s\t%s\t\n", rep.Book.Currency.Code, rep.Money(s), rep.Money(r), rep.Money(r-s))
	return tw.Flush()
}

// reportMonth is what report --period does about closings: a closed
// month's file is written from the ledger as stored (handled true); an
// open month gets the adjustments it bills (attach); --recompute prints a
// closed month's differences per team on stderr and lets the month be
// recomputed.
func reportMonth(ctx context.Context, st ledger.Store, book *pricebook.Book, f reportFlags, stdout io.Writer) (handled bool, attach func(*report.Report) error, err error) {
	cs, err := ledger.Closings(st)
	if err != nil {
		return false, nil, err
	}
	if f.period == "" {
		if f.recompute {
			return false, nil, errors.New("report --recompute needs --period YYYY-MM of a closed month")
		}
		return false, nil, nil
	}
	c, err := report.ClosedMonth(ctx, cs, f.period)
	if err != nil {
		return false, nil, err
	}
	switch {
	case c == nil && f.recompute:
		return false, nil, fmt.Errorf("report --recompute: %s is not closed: its report is recomputed anyway", f.period)
	case c == nil:
		return false, func(r *report.Report) error {
			set, err := report.Adjustments(ctx, st, cs, book, f.period)
			if err != nil {
				return err
			}
			r.Adjustments, r.AdjustmentNotes = set.Lines, set.Notes
			return nil
		}, nil
	case f.recompute:
		rep, diffs, err := report.Recompute(ctx, st, c, book)
		if err != nil {
			return false, nil, err
		}
		fmt.Fprintf(os.Stderr, "%s is closed (at %s): recomputed now at %s; the difference per team:\n", f.period, ledger.FormatTime(c.At), f.prices)
		return false, nil, writeDifferences(os.Stderr, rep, diffs)
	}
	if f.advice || f.prometheus != "" || f.focusVersion != report.FOCUSVersion13 {
		return false, nil, fmt.Errorf("report: %s is closed: its files are the ones stored when it closed, which --advice, --prometheus and --focus-version cannot change (--recompute writes it as it would be today)", f.period)
	}
	b, err := report.StoredFile(c, report.Format(f.format))
	if err != nil {
		return false, nil, err
	}
	w, commit, err := exportTarget(f.out, stdout)
	if err != nil {
		return false, nil, err
	}
	defer commit(false)
	if _, err := w.Write(b); err != nil {
		return false, nil, fmt.Errorf("cannot write the stored %s of %s: %w", f.format, f.period, err)
	}
	if err := commit(true); err != nil {
		return false, nil, err
	}
	slog.Info("closed month: the stored report written", "period", f.period, "closed_at", ledger.FormatTime(c.At), "digest", c.Digest, "format", f.format)
	if f.out != "" && f.out != "-" {
		_, err = fmt.Fprintf(stdout, "%s: chargeback %s as closed at %s (digest %s)\n", f.out, f.period, ledger.FormatTime(c.At), c.Digest)
	}
	return true, nil, err
}
