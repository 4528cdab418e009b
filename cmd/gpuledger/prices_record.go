package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/web"
)

const pricesUsageText = `usage: gpuledger prices record --ledger DSN --prices FILE [--effective T]
       gpuledger prices list --ledger DSN

Records price books in the ledger with the instant their rates hold from,
so that a report prices each hour at the book in force then and a price
change never reprices hours before it (docs/report.md, "Price books over
time").

  record       records the book: its bytes, SHA-256 and effective instant.
               A book that is already the last recorded one is not recorded
               again. Refused, naming the field, when it would take effect
               before the last recorded book, in a closed month, or more
               than 400 days from now
  list         the recorded books in force order
  --ledger     ledger DSN (env GPULEDGER_LEDGER): PATH, file:PATH or
               clickhouse://user:password@host:9000/database
  --prices     the price book (env GPULEDGER_PRICES)
  --effective  the instant its rates hold from: RFC 3339 or YYYY-MM-DD (the
               start of that day in the book's time zone), a whole hour;
               default the book's effectiveFrom, else the next whole hour
`

const pricesListUsageText = `usage: gpuledger prices list --ledger DSN

Lists the price books recorded in the ledger in force order: the instant
each took effect, its SHA-256's first 12 hex digits, when it was recorded
and the file it was read from (docs/report.md, "Price books over time").

  --ledger     ledger DSN (env GPULEDGER_LEDGER): PATH, file:PATH or
               clickhouse://user:password@host:9000/database
`

func runPrices(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return &usageError{err: errors.New("prices needs a subcommand: record or list"), usage: pricesUsageText}
	}
	switch args[0] {
	case "record":
		return runPricesRecord(ctx, args[1:], stdout)
	case "list":
		return runPricesList(ctx, args[1:], stdout)
	case "-h", "-help", "--help", "help":
		return &helpRequested{usage: pricesUsageText}
	}
	return &usageError{err: fmt.Errorf("unknown prices subcommand %q (want record or list)", args[0]), usage: pricesUsageText}
}

// writableOpeners open a ledger to record in: an embedded file
// writable (it must exist: recording never creates a ledger), else as
// every command opens it.
func writableOpeners() map[string]ledger.Opener {
	out := map[string]ledger.Opener{}
	for k, v := range storeOpeners {
		out[k] = v
	}
	out[ledger.SchemeFile] = filestore.Opener(filestore.FileOptions{MustExist: true})
	return out
}

// bookRecorder records a book in the ledger at dsn, opened for the one
// record and closed: serve reads through a read-only open.
func bookRecorder(dsn string) func(ctx context.Context, book *pricebook.Book, at time.Time) (ledger.PriceBookRecord, bool, error) {
	return func(ctx context.Context, book *pricebook.Book, at time.Time) (ledger.PriceBookRecord, bool, error) {
		st, pst, err := openPriceBooks(ctx, dsn, true)
		if err != nil {
			return ledger.PriceBookRecord{}, false, err
		}
		defer st.Close()
		return report.RecordBook(ctx, pst, book, time.Time{}, at)
	}
}

// openPriceBooks opens the ledger at dsn as a store of price books,
// writable for recording.
func openPriceBooks(ctx context.Context, dsn string, write bool) (ledger.Store, ledger.PriceBookStore, error) {
	openers := storeOpeners
	if write {
		openers = writableOpeners()
	}
	st, err := ledger.Open(ctx, dsn, openers)
	if err != nil {
		return nil, nil, err
	}
	pst, ok := st.(ledger.PriceBookStore)
	if !ok {
		st.Close()
		return nil, nil, errors.New("this ledger records no price books")
	}
	return st, pst, nil
}

func runPricesRecord(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("prices record", flag.ContinueOnError)
	dsn := fs.String("ledger", envDefault("GPULEDGER_LEDGER", ""), "ledger DSN (env GPULEDGER_LEDGER)")
	path := fs.String("prices", envDefault("GPULEDGER_PRICES", ""), "price book (env GPULEDGER_PRICES)")
	eff := fs.String("effective", "", "instant the book's rates hold from (RFC 3339 or YYYY-MM-DD)")
	if err := parseFlags(fs, args, pricesUsageText); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("prices record: unexpected argument %q", fs.Arg(0))
	case *dsn == "":
		return errors.New("prices record needs --ledger DSN or GPULEDGER_LEDGER")
	case *path == "":
		return errors.New("prices record needs --prices FILE or GPULEDGER_PRICES")
	}
	book, err := pricebook.Load(*path)
	if err != nil {
		return err
	}
	var effective time.Time
	if *eff != "" {
		if effective, err = pricebook.ParseEffective(*eff, book.Location); err != nil {
			return fmt.Errorf("prices record --effective: %w", err)
		}
	}
	st, pst, err := openPriceBooks(ctx, *dsn, true)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := checkFirstBook(ctx, st, pst, effective); err != nil {
		return err
	}
	rec, recorded, err := report.RecordBook(ctx, pst, book, effective, now())
	if err != nil {
		return err
	}
	if !recorded {
		_, err = fmt.Fprintf(stdout, "price book %s (%s) is already the last recorded one: nothing recorded\n", rec.Short(), book.Source)
		return err
	}
	slog.Info("price book recorded", "prices", book.Source, "sha256", rec.Short(), "effective_from", ledger.FormatTime(rec.EffectiveFrom))
	_, err = fmt.Fprintf(stdout, "recorded price book %s (%s), effective %s\n", rec.Short(), book.Source, ledger.FormatTime(rec.EffectiveFrom))
	return err
}

func runPricesList(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("prices list", flag.ContinueOnError)
	dsn := fs.String("ledger", envDefault("GPULEDGER_LEDGER", ""), "ledger DSN (env GPULEDGER_LEDGER)")
	if err := parseFlags(fs, args, pricesListUsageText); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("prices list: unexpected argument %q", fs.Arg(0))
	case *dsn == "":
		return errors.New("prices list needs --ledger DSN or GPULEDGER_LEDGER")
	}
	st, pst, err := openPriceBooks(ctx, *dsn, false)
	if err != nil {
		return err
	}
	defer st.Close()
	books, err := pst.PriceBooks(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EFFECTIVE FROM\tSHA-256\tRECORDED AT\tSOURCE")
	for _, b := range books {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ledger.FormatTime(b.EffectiveFrom), b.Short(), ledger.FormatTime(b.RecordedAt), b.Source)
	}
	return tw.Flush()
}

// warnUnrecorded says, when the ledger records price books but not book,
// that book prices no hour before it would take effect.
func warnUnrecorded(ctx context.Context, st report.Source, book *pricebook.Book, at time.Time) {
	pst, ok := st.(ledger.PriceBookStore)
	if !ok {
		return
	}
	books, err := pst.PriceBooks(ctx)
	if err != nil || len(books) == 0 {
		return // the report has read them already: an error there was its
	}
	for _, b := range books {
		if b.SHA256 == book.SHA256 {
			return
		}
	}
	last := books[len(books)-1]
	slog.Warn("the price book is not recorded in the ledger: the recorded books price the period, and it would price only hours from "+
		ledger.FormatTime(report.UnrecordedFrom(at, last.EffectiveFrom))+"; record it with gpuledger prices record",
		"prices", book.Source, "sha256", ledger.ShortSHA(book.SHA256), "last_recorded", last.Short())
}

// recordServedPrices records serve's price book at start: a book the
// ledger refuses stops serve with the reason; a ledger not up yet is
// retried by the first report.
func recordServedPrices(ctx context.Context, srv *web.Server) error {
	err := srv.RecordPrices(ctx)
	switch {
	case err == nil:
		return nil
	case web.IsRefusedBook(err):
		return fmt.Errorf("serve: %w", err)
	}
	slog.Warn("the price book is not recorded yet: the first report records it", "err", web.RedactURLs(err.Error()))
	return nil
}

// firstBookLookBack is how far before a first book's effective instant
// checkFirstBook looks for rows: longer than a year of retention.
const firstBookLookBack = 400 * 24 * time.Hour

// checkFirstBook refuses a first recorded book dated after rows the
// ledger holds: the first book also prices every hour before it, so a
// change dated today would reprice the open month's past. The book in
// force then is recorded first (dated at or before the ledger's first
// row, or without --effective), the change after it.
func checkFirstBook(ctx context.Context, st ledger.Store, pst ledger.PriceBookStore, effective time.Time) error {
	if effective.IsZero() {
		return nil // takes effect from the next hour: it is the book in force
	}
	books, err := pst.PriceBooks(ctx)
	if err != nil || len(books) > 0 {
		return err
	}
	aggs, err := st.Aggregate(ctx, ledger.AggregateQuery{From: effective.Add(-firstBookLookBack), To: effective, Bucket: ledger.BucketNone})
	if err != nil {
		return fmt.Errorf("cannot check the ledger's rows before %s: %w", ledger.FormatTime(effective), err)
	}
	for _, a := range aggs {
		if a.Rows > 0 {
			return fmt.Errorf("prices record --effective %s: the ledger records no price book yet and holds rows before that instant, which the first book recorded would price too; "+
				"record the book that priced them first (with --effective at or before the ledger's first row), then this one", ledger.FormatTime(effective))
		}
	}
	return nil
}
