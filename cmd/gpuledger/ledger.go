package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/support/outfile"
	"github.com/gpuledger/gpuledger/support/progress"
)

// clickhouseMigrate creates or upgrades the ClickHouse schema; the
// ClickHouse wiring sets it. Nil means this build cannot reach ClickHouse.
var clickhouseMigrate func(ctx context.Context, dsn ledger.DSN, cluster string) error

// clickhousePrices stores a price book in the ClickHouse ledger for the
// dashboards (ledger migrate --prices); set by the ClickHouse wiring.
var clickhousePrices func(ctx context.Context, dsn ledger.DSN, book *pricebook.Book) error

// storeOpeners open the ledgers that reading commands use, by DSN scheme;
// the ClickHouse wiring adds its own. Reading a file that does not exist is
// an error, not a new empty ledger; a file is opened read-only, so it may
// sit on a read-only volume and never waits for the writer's lock.
var storeOpeners = map[string]ledger.Opener{
	ledger.SchemeFile: filestore.ReadingOpener(filestore.FileOptions{}),
}

const ledgerUsageText = `usage: gpuledger ledger <subcommand> [flags]

subcommands:
  export   --from T --to T [--format csv|jsonl] [--ledger DSN] [--out FILE]
           stream the ledger rows of [from, to) as ledger.csv or JSON lines
  migrate  [--ledger DSN] [--clickhouse-cluster NAME] [--prices FILE]
           create or upgrade the ledger schema; with --prices (ClickHouse
           only) also store the price book the dashboards price with
  backup   --out DIR [--ledger DSN]
           copy the rows, findings, prices, quota changes, node labels and
           recorded price books of a ClickHouse ledger into the new
           directory DIR: one gzipped TSV per table and a manifest with
           each file's SHA-256
           (docs/ledger-format.md, "Backup and restore")
  restore  --from DIR [--ledger DSN] [--force] [--check]
           verify a backup, then load it into a database with no ledger
           data (--force: truncate its ledger tables first), migrate it and
           rebuild its rollups; --check verifies only

DSN (--ledger or env GPULEDGER_LEDGER): PATH, file:PATH or
clickhouse://user:password@host:9000/database?secure=true
Times: RFC 3339 or YYYY-MM-DD (midnight UTC).
Quantities (GPU-seconds, MiB-seconds, joules) are rounded to 6 decimals, a
micro-unit, and written without trailing zeros: 50.2, not 50.200000000000074.
`

func runLedger(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return &usageError{err: errors.New("ledger needs a subcommand: export, migrate, backup or restore"), usage: ledgerUsageText}
	}
	switch args[0] {
	case "export":
		return runLedgerExport(ctx, args[1:], stdout)
	case "migrate":
		return runLedgerMigrate(ctx, args[1:], stdout)
	case "backup":
		return runLedgerBackup(ctx, args[1:], stdout)
	case "restore":
		return runLedgerRestore(ctx, args[1:], stdout)
	case "-h", "-help", "--help", "help":
		return &helpRequested{usage: ledgerUsageText}
	}
	return &usageError{err: fmt.Errorf("unknown ledger subcommand %q (want export, migrate, backup or restore)", args[0]), usage: ledgerUsageText}
}

type exportFlags struct {
	from, to       time.Time
	format, ledger string
	out            string
}

func parseExportFlags(args []string) (exportFlags, error) {
	var f exportFlags
	fs := flag.NewFlagSet("ledger export", flag.ContinueOnError)
	from := fs.String("from", "", "start of the range, inclusive (RFC 3339 or YYYY-MM-DD)")
	to := fs.String("to", "", "end of the range, exclusive (RFC 3339 or YYYY-MM-DD)")
	fs.StringVar(&f.format, "format", ledger.FormatCSV, "csv (the ledger CSV, docs/ledger-format.md) or jsonl")
	fs.StringVar(&f.ledger, "ledger", envDefault("GPULEDGER_LEDGER", ""), "ledger DSN (env GPULEDGER_LEDGER)")
	fs.StringVar(&f.out, "out", "", "output file; default stdout")
	if err := parseFlags(fs, args, ""); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("ledger export: unexpected argument %q", fs.Arg(0))
	}
	if *from == "" || *to == "" {
		return f, errors.New("ledger export needs --from and --to")
	}
	if f.ledger == "" {
		return f, errors.New("ledger export needs --ledger DSN or GPULEDGER_LEDGER")
	}
	if f.format != ledger.FormatCSV && f.format != ledger.FormatJSONL {
		return f, fmt.Errorf("ledger export: --format %q: want csv or jsonl", f.format)
	}
	var err error
	if f.from, err = calendar.ParseTime(*from); err != nil {
		return f, fmt.Errorf("ledger export --from: %w", err)
	}
	if f.to, err = calendar.ParseTime(*to); err != nil {
		return f, fmt.Errorf("ledger export --to: %w", err)
	}
	if !f.from.Before(f.to) {
		return f, fmt.Errorf("ledger export: --from %s is not before --to %s", ledger.FormatTime(f.from), ledger.FormatTime(f.to))
	}
	return f, nil
}

func runLedgerExport(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseExportFlags(args)
	if err != nil {
		return err
	}
	st, err := ledger.Open(ctx, f.ledger, storeOpeners)
	if err != nil {
		return err
	}
	defer st.Close()
	out, commit, err := exportTarget(f.out, stdout)
	if err != nil {
		return err
	}
	defer commit(false)

	var src ledger.Store = st
	var bar *progress.Bar
	var onProgress func(int64)
	if showProgress(f.out, stdout) {
		bar = progress.New(os.Stderr, f.from, f.to)
		src = observedStore{Store: st, seen: bar.Observe}
		onProgress = bar.Update
	}
	began := time.Now()
	n, err := ledger.Export(ctx, src, f.from, f.to, f.format, out, onProgress)
	if bar != nil {
		bar.Finish(err == nil)
	}
	if err != nil {
		return err
	}
	if err := commit(true); err != nil {
		return err
	}
	slog.Info("ledger exported", "rows", n, "format", f.format, "from", ledger.FormatTime(f.from), "to", ledger.FormatTime(f.to),
		"took", time.Since(began).Round(time.Millisecond))
	return nil
}

// exportTarget returns where the output of report, advise, whatif and
// ledger export goes: standard output for "" or "-", else a file written
// through outfile (renamed into place only when the output succeeded, so a
// failed run never leaves a truncated file that looks complete; never over
// a device, FIFO, socket or directory; links followed).
func exportTarget(path string, stdout io.Writer) (io.Writer, func(ok bool) error, error) {
	if path == "" || path == "-" {
		bw := bufio.NewWriterSize(stdout, 256<<10)
		return bw, func(ok bool) error {
			if !ok {
				return nil
			}
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("cannot write to standard output: %w", err)
			}
			return nil
		}, nil
	}
	f, err := outfile.Create(path)
	if err != nil {
		return nil, nil, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	done := false
	return bw, func(ok bool) error {
		if done {
			return nil
		}
		done = true
		if !ok {
			f.Abort()
			return nil
		}
		if err := bw.Flush(); err != nil {
			f.Abort()
			return fmt.Errorf("cannot write %s: %w", path, err)
		}
		return f.Commit()
	}, nil
}

// showProgress: a bar on stderr only when a person is watching it, and not
// when the export itself is scrolling through that same terminal.
func showProgress(outPath string, stdout io.Writer) bool {
	if !isTerminal(os.Stderr) {
		return false
	}
	if outPath != "" && outPath != "-" {
		return true
	}
	f, ok := stdout.(*os.File)
	return ok && !isTerminal(f)
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// observedStore lets the progress bar see each exported row's interval
// end.
type observedStore struct {
	ledger.Store
	seen func(time.Time)
}

func (o observedStore) Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	return o.Store.Rows(ctx, from, to, func(r attribution.Row) error {
		o.seen(r.IntervalEnd)
		return fn(r)
	})
}

func runLedgerMigrate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ledger migrate", flag.ContinueOnError)
	dsn := fs.String("ledger", envDefault("GPULEDGER_LEDGER", ""), "ledger DSN (env GPULEDGER_LEDGER)")
	cluster := fs.String("clickhouse-cluster", envDefault("GPULEDGER_CLICKHOUSE_CLUSTER", ""),
		"ClickHouse cluster: create Replicated and Distributed tables ON CLUSTER (env GPULEDGER_CLICKHOUSE_CLUSTER)")
	prices := fs.String("prices", "", "price book to store for the ClickHouse dashboards (docs/dashboards.md)")
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("ledger migrate: unexpected argument %q", fs.Arg(0))
	}
	// The book is read before anything changes, so a bad file fails alone.
	book, err := loadPrices(*prices)
	if err != nil {
		return fmt.Errorf("ledger migrate: %w", err)
	}
	if *dsn == "" {
		return errors.New("ledger migrate needs --ledger DSN or GPULEDGER_LEDGER")
	}
	d, err := ledger.ParseDSN(*dsn)
	if err != nil {
		return err
	}
	switch d.Scheme {
	case ledger.SchemeFile:
		if *cluster != "" {
			return fmt.Errorf("ledger migrate: --clickhouse-cluster applies to ClickHouse ledgers, not %s", d.Redacted())
		}
		if book != nil {
			return fmt.Errorf("ledger migrate: --prices applies to ClickHouse ledgers (the dashboards read it there), not %s", d.Redacted())
		}
		st, err := filestore.OpenFile(ctx, d.Path, filestore.FileOptions{})
		if err != nil {
			return err
		}
		if err := st.Close(); err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "ledger %s: schema version %d\n", d.Redacted(), filestore.FileSchemaVersion)
		return err
	case ledger.SchemeClickHouse:
		if clickhouseMigrate == nil {
			return fmt.Errorf("ledger migrate %s: this gpuledger was built without ClickHouse support", d.Redacted())
		}
		if err := clickhouseMigrate(ctx, d, *cluster); err != nil {
			return err
		}
		if _, err := fmt.Fprintf(stdout, "ledger %s: schema up to date\n", d.Redacted()); err != nil {
			return err
		}
		if book == nil {
			return nil
		}
		if err := clickhousePrices(ctx, d, book); err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "ledger %s: price book %s stored for the dashboards\n", d.Redacted(), book.Source)
		return err
	}
	return fmt.Errorf("ledger migrate: unsupported ledger %s", d.Redacted())
}
