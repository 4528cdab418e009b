package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// TestMIGProfilesShipToClickHouse: `simulate --ledger clickhouse://...` of
// the migmix example (three MIG instances of distinct profiles) ships
// every row, MIG profile included, through the node's outbox: ClickHouse
// holds exactly the embedded ledger's rows, and the profile of each
// instance is the one the scenario gives it.
func TestMIGProfilesShipToClickHouse(t *testing.T) {
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	ctx := context.Background()
	dsn := h.DSN(t)
	d, err := ledger.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := clickhouse.Migrate(ctx, d, ""); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	path := filepath.Join("..", "..", "testdata", "examples", "migmix-107", "scenario.yaml")
	if err := run(ctx, []string{"simulate", "--scenario", path, "--ledger", dsn, "--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	local, err := filestore.OpenFile(ctx, filepath.Join(out, "ledger.db"), filestore.FileOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	remote, err := clickhouse.Open(ctx, d, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()

	type key struct {
		start       time.Time
		gpu, slice  string
		uid, ctr, k string
	}
	rows := func(st ledger.Store) map[key]attribution.Row {
		m := map[key]attribution.Row{}
		err := st.Rows(ctx, time.Time{}, time.Time{}, func(r attribution.Row) error {
			m[key{r.IntervalStart, r.GPUUUID, r.SliceID, r.PodUID, r.Container, string(r.Kind)}] = r
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	want, got := rows(local), rows(remote)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("ClickHouse holds %d rows, the embedded ledger %d", len(got), len(want))
	}
	// The scenario's instances (MIG UUID -> profile), as the file says.
	profiles := map[string]string{
		"MIG-4ed253d4-dd4e-584a-9e29-010e012e9496": "3g.40gb",
		"MIG-0af17cfa-57dd-5884-b3af-6e540a7978cf": "2g.20gb",
		"MIG-72cddd4c-4ded-56bf-9499-15dcfbb74424": "1g.10gb",
	}
	seen := map[string]bool{}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("row %v:\nClickHouse %+v\nembedded   %+v", k, got[k], w)
		}
		if w.Kind != attribution.KindContainer {
			if w.MIGProfile != "" {
				t.Errorf("%s row of %s has profile %q", w.Kind, w.GPUUUID, w.MIGProfile)
			}
			continue
		}
		sid, err := attribution.ParseDeviceID(w.SliceID)
		if err != nil {
			t.Fatal(err)
		}
		if w.MIGProfile != profiles[sid.UUID] {
			t.Errorf("row of slice %s: profile %q, want %q", w.SliceID, w.MIGProfile, profiles[sid.UUID])
		}
		seen[sid.UUID] = true
	}
	if len(seen) != len(profiles) {
		t.Errorf("container rows on %d of the %d instances", len(seen), len(profiles))
	}
}
