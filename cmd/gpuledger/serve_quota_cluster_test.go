package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/quota"
)

// Two clusters' serve --quota record into one ledger: each records under
// its own name and compares its objects and nodes with its own alone, so
// neither takes the other's same-named objects for its own (a recorder
// that saw them would record them as removed, or as unchanged).
func TestServeQuotaRecordsUnderItsCluster(t *testing.T) {
	ctx := context.Background()
	st, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "l.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	east, def := clusterRecorder{Store: st, cluster: "east"}, clusterRecorder{Store: st, cluster: "default"}
	e := quota.Entry{Key: quota.Key{Source: quota.SourceResourceQuota, Object: "ml/gpu", Resource: "nvidia.com/gpu"}, Team: "ml", Milli: 2000, LimitMilli: 2000}
	if err := east.AppendQuota(ctx, []quota.Change{{At: at, Entry: e}}); err != nil {
		t.Fatal(err)
	}
	e.Milli = 1000
	if err := def.AppendQuota(ctx, []quota.Change{{At: at, Entry: e}}); err != nil {
		t.Fatal(err)
	}
	read := func(r clusterRecorder) []quota.Change {
		var out []quota.Change
		if err := r.QuotaChanges(ctx, at, at.Add(time.Hour), func(c quota.Change) error { out = append(out, c); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := read(east); len(got) != 1 || got[0].Cluster != "east" || got[0].Milli != 2000 {
		t.Errorf("east reads %+v, want its own 2000 alone, stored under east", got)
	}
	if got := read(def); len(got) != 1 || got[0].Cluster != "default" || got[0].Milli != 1000 {
		t.Errorf("default reads %+v, want its own 1000 alone", got)
	}
	for _, c := range []struct {
		r     clusterRecorder
		value string
	}{{east, "us"}, {def, "eu"}} {
		if err := c.r.AppendNodeLabels(ctx, []nodelabel.Change{{Node: "n1", Key: "region", Value: c.value, At: at}}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.NodeLabels(ctx, "region", at)
	if err != nil {
		t.Fatal(err)
	}
	if all["n1"] != "eu" || all["east/n1"] != "us" || len(all) != 2 {
		t.Errorf("the ledger holds %v, want n1=eu (default) and east/n1=us", all)
	}
	for _, c := range []struct {
		r    clusterRecorder
		want string
	}{{east, "us"}, {def, "eu"}} {
		got, err := c.r.NodeLabels(ctx, "region", at)
		if err != nil {
			t.Fatal(err)
		}
		if got["n1"] != c.want || len(got) != 1 {
			t.Errorf("%s sees %v, want its own n1=%s alone", c.r.cluster, got, c.want)
		}
	}
}
