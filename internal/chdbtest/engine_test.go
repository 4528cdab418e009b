package chdbtest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

var engine *Engine

func TestMain(m *testing.M) {
	engine = Setup()
	code := m.Run()
	engine.Close()
	os.Exit(code)
}

// The engine is the version deps.sh pins, keeps MergeTree tables between
// statements, and FINAL collapses rows two inserts wrote apart.
func TestEngineRunsStatements(t *testing.T) {
	engine.Require(t)
	ctx := context.Background()
	v, err := engine.Query(ctx, "SELECT version()", "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(v) != EngineVersion {
		t.Errorf("version %q, want %s", v, EngineVersion)
	}
	for _, q := range []string{
		"CREATE DATABASE e",
		"CREATE TABLE e.t (k UInt32, v String, ver UInt64) ENGINE = ReplacingMergeTree(ver) ORDER BY k",
		"SYSTEM STOP MERGES e.t",
		"INSERT INTO e.t FORMAT TabSeparated\n1\ta\t1\n2\tb\t1\n",
		"INSERT INTO e.t FORMAT TabSeparated\n1\tc\t2\n",
	} {
		if err := engine.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	got, err := engine.Query(ctx, "SELECT count(), (SELECT count() FROM e.t FINAL), (SELECT v FROM e.t FINAL WHERE k = 1) FROM e.t", "CSV")
	if err != nil {
		t.Fatal(err)
	}
	if want := "3,2,\"c\"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// An engine error comes back as an error naming the code, not a crash.
func TestEngineError(t *testing.T) {
	engine.Require(t)
	_, err := engine.Query(context.Background(), "SELECT * FROM no_such_table", "")
	if err == nil || !strings.Contains(err.Error(), "UNKNOWN_TABLE") {
		t.Errorf("error %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := engine.Query(ctx, "SELECT 1", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

// Without the library, Setup reports ErrNoEngine and tests skip (or
// fail under GPULEDGER_REQUIRE_INTEGRATION=1) instead of crashing.
func TestMissingLibrary(t *testing.T) {
	t.Setenv(EnvLib, t.TempDir()+"/libchdb.so")
	e := &Engine{}
	if err := e.open(); !errors.Is(err, ErrNoEngine) {
		t.Errorf("open: %v", err)
	}
}
