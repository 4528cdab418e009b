package clickhouse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/nodelabel"
)

const regionKey = "topology.kubernetes.io/region"

// nodeLabelHistory: two nodes labelled on 1 November, one relabelled, one
// losing the label, a change of another key, several in one second.
func nodeLabelHistory() []nodelabel.Change {
	c := func(day, hour int, node, key, value string, deleted bool) nodelabel.Change {
		return nodelabel.Change{Node: node, Key: key, Value: value, Deleted: deleted, At: qday(11, day, hour)}
	}
	return []nodelabel.Change{
		c(1, 0, "a", regionKey, "eu-north-1", false),
		c(1, 0, "b", regionKey, "us-east-1", false),
		c(1, 0, "a", "topology.kubernetes.io/zone", "z1", false),
		c(5, 12, "a", regionKey, "us-east-1", false),
		c(10, 0, "b", regionKey, "", true),
		c(20, 0, "b", regionKey, "ap-south-1", false),
		c(20, 0, "c", regionKey, "eu-north-1", false),
	}
}

func readLabels(t *testing.T, s nodelabel.Store, key string, at time.Time) map[string]string {
	t.Helper()
	got, err := s.NodeLabels(context.Background(), key, at)
	if err != nil {
		t.Fatalf("NodeLabels(%s, %s): %v", key, at, err)
	}
	return got
}

// The ClickHouse ledger stores node labels as the embedded one does: a
// replay reads once, a change replaced within its second reads as the
// later, bad input and a bad key are refused naming what.
func TestNodeLabelsClickHouse(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	h := nodeLabelHistory()
	for range 2 {
		if err := s.AppendNodeLabels(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		at   time.Time
		want map[string]string
	}{
		{qday(10, 31, 23), map[string]string{}},
		{qday(11, 1, 0), map[string]string{"a": "eu-north-1", "b": "us-east-1"}},
		{qday(11, 10, 0), map[string]string{"a": "us-east-1"}},
		{qday(12, 1, 0), map[string]string{"a": "us-east-1", "b": "ap-south-1", "c": "eu-north-1"}},
	} {
		if got := readLabels(t, s, regionKey, c.at); !reflect.DeepEqual(got, c.want) {
			t.Errorf("at %s: %v, want %v", c.at, got, c.want)
		}
	}
	if err := s.AppendNodeLabels(ctx, []nodelabel.Change{{Node: "c", Key: regionKey, Value: "us-east-1", At: qday(11, 20, 0)}}); err != nil {
		t.Fatal(err)
	}
	if got := readLabels(t, s, regionKey, qday(12, 1, 0)); got["c"] != "us-east-1" {
		t.Errorf("replaced change: %v", got)
	}
	err := s.AppendNodeLabels(ctx, []nodelabel.Change{{Node: "d", Key: regionKey, Value: "x", At: qday(11, 1, 0)}, {Key: regionKey, At: qday(11, 1, 0)}})
	if err == nil || !strings.Contains(err.Error(), "node label change 1") || !strings.Contains(err.Error(), "node name is empty") {
		t.Errorf("bad change: %v", err)
	}
	if _, err := s.NodeLabels(ctx, "region' OR 1=1 --", qday(12, 1, 0)); err == nil || !strings.Contains(err.Error(), "not a Kubernetes label key") {
		t.Errorf("bad key: %v", err)
	}
}

// Random histories written to both stores (with replays) read the same
// at every instant, and as nodelabel.State replays them.
func TestNodeLabelsMatchFileStore(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	f, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	values := []string{"eu-north-1", "us-east-1", "ap-south-1"}
	var all []nodelabel.Change
	seen := map[string]bool{}
	for range 200 {
		c := nodelabel.Change{Node: fmt.Sprintf("node-%d", rng.IntN(12)), Key: regionKey, At: qday(11, 1+rng.IntN(5), rng.IntN(24))}
		if rng.IntN(9) == 0 {
			c.Key = "zone"
		}
		if rng.IntN(6) == 0 {
			c.Deleted = true
		} else {
			c.Value = values[rng.IntN(len(values))]
		}
		k := fmt.Sprint(c.Node, c.Key, c.At.Unix())
		if seen[k] {
			continue
		}
		seen[k] = true
		all = append(all, c)
	}
	for _, st := range []nodelabel.Store{s, f} {
		for i := 0; i < len(all); i += 50 {
			batch := all[i:min(i+50, len(all))]
			for range 2 { // a replay
				if err := st.AppendNodeLabels(ctx, batch); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, key := range []string{regionKey, "zone"} {
		for hour := 0; hour < 6*24; hour += 7 {
			at := qday(11, 1, 0).Add(time.Duration(hour)*time.Hour + time.Duration(hour%2)*time.Second)
			want := nodelabel.State(all, key, at)
			if got := readLabels(t, s, key, at); !reflect.DeepEqual(got, want) {
				t.Errorf("%s at %s: ClickHouse %v, want %v", key, at, got, want)
			}
			if got := readLabels(t, f, key, at); !reflect.DeepEqual(got, want) {
				t.Errorf("%s at %s: file %v, want %v", key, at, got, want)
			}
		}
	}
}
