package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
)

// clickhouseDSN parses a backup or restore --ledger: only ClickHouse
// ledgers are backed up this way (the embedded ledger is one SQLite file,
// copied with sqlite3's .backup or by stopping its writer).
func clickhouseDSN(cmd, raw string) (ledger.DSN, error) {
	if raw == "" {
		return ledger.DSN{}, fmt.Errorf("ledger %s needs --ledger DSN or GPULEDGER_LEDGER", cmd)
	}
	d, err := ledger.ParseDSN(raw)
	if err != nil {
		return d, err
	}
	if d.Scheme != ledger.SchemeClickHouse {
		return d, fmt.Errorf("ledger %s: %s is not a ClickHouse ledger; an embedded ledger is one SQLite file: copy it with sqlite3 %s '.backup COPY'",
			cmd, d.Redacted(), d.Path)
	}
	return withPasswordFile(d)
}

func runLedgerBackup(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ledger backup", flag.ContinueOnError)
	dsn := fs.String("ledger", envDefault("GPULEDGER_LEDGER", ""), "ClickHouse ledger DSN (env GPULEDGER_LEDGER)")
	out := fs.String("out", "", "the backup directory to create (it must not exist)")
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("ledger backup: unexpected argument %q", fs.Arg(0))
	}
	switch *out {
	case "":
		return errors.New("ledger backup needs --out DIR, a directory to create")
	case "-":
		return errors.New("ledger backup --out -: a backup is a directory of files and cannot go to standard output; name a directory (tar it to ship one file)")
	}
	d, err := clickhouseDSN("backup", *dsn)
	if err != nil {
		return err
	}
	began := time.Now()
	m, err := clickhouse.Backup(ctx, d, clickhouse.Options{}, *out, version)
	if err != nil {
		return fmt.Errorf("ledger backup %s: %w", d.Redacted(), err)
	}
	var rows uint64
	var bytes int64
	for _, t := range m.Tables {
		rows, bytes = rows+t.Rows, bytes+t.Bytes
	}
	_, err = fmt.Fprintf(stdout, "ledger %s: schema version %d, %d tables, %d rows, %d bytes backed up to %s in %s\n",
		d.Redacted(), m.SchemaVersion, len(m.Tables), rows, bytes, *out, time.Since(began).Round(time.Millisecond))
	return err
}

func runLedgerRestore(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ledger restore", flag.ContinueOnError)
	dsn := fs.String("ledger", envDefault("GPULEDGER_LEDGER", ""), "ClickHouse ledger DSN to restore into (env GPULEDGER_LEDGER)")
	from := fs.String("from", "", "the backup directory (written by ledger backup)")
	force := fs.Bool("force", false, "empty (TRUNCATE) every ledger table of a database that holds ledger data, then restore")
	check := fs.Bool("check", false, "only verify the backup (digests, rows, schema version); write nothing, need no --ledger")
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("ledger restore: unexpected argument %q", fs.Arg(0))
	}
	switch *from {
	case "":
		return errors.New("ledger restore needs --from DIR, a directory written by ledger backup")
	case "-":
		return errors.New("ledger restore --from -: a backup is a directory of files, not standard input; name the directory")
	}
	if st, err := os.Stat(*from); err != nil {
		return fmt.Errorf("ledger restore --from: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("ledger restore --from %s: not a directory (a tar of a backup must be unpacked first)", *from)
	}
	if *check {
		m, err := clickhouse.VerifyBackup(*from)
		if err != nil {
			return fmt.Errorf("ledger restore --check: %w", err)
		}
		_, err = fmt.Fprintf(stdout, "backup %s: intact: schema version %d, %d tables, taken %s by gpuledger %s from database %q\n",
			*from, m.SchemaVersion, len(m.Tables), m.CreatedAt.Format(time.RFC3339), m.GpuledgerVersion, m.Database)
		return err
	}
	d, err := clickhouseDSN("restore", *dsn)
	if err != nil {
		return err
	}
	began := time.Now()
	// A cluster's ledger is refused by name (Restore needs one server).
	res, err := clickhouse.Restore(ctx, d, clickhouse.Options{Cluster: os.Getenv("GPULEDGER_CLICKHOUSE_CLUSTER")}, *from, clickhouse.RestoreOptions{Force: *force})
	if err != nil {
		return fmt.Errorf("ledger restore %s: %w", d.Redacted(), err)
	}
	var rows uint64
	for _, n := range res.Rows {
		rows += n
	}
	_, err = fmt.Fprintf(stdout, "ledger %s: %d rows of %d tables restored from %s (schema version %d, taken %s), rollups of %d hours rebuilt, in %s\n",
		d.Redacted(), rows, len(res.Rows), *from, res.Manifest.SchemaVersion, res.Manifest.CreatedAt.Format(time.RFC3339), res.Hours,
		time.Since(began).Round(time.Millisecond))
	return err
}
