package nodelabel

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const region = "topology.kubernetes.io/region"

func at(day, hour int) time.Time { return time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC) }

// Diff: a new node and a relabelled one are set, a node that lost the
// label is a removal, and a node deleted from the cluster is no change.
func TestDiff(t *testing.T) {
	recorded := map[string]string{"a": "eu-north-1", "b": "us-east-1", "c": "us-east-1", "gone": "eu-north-1"}
	now := map[string]string{"a": "eu-north-1", "b": "eu-north-1", "d": "ap-south-1"}
	present := map[string]bool{"a": true, "b": true, "c": true, "d": true} // gone was deleted
	got := Diff(region, recorded, now, func(n string) bool { return present[n] }, at(3, 0))
	want := []Change{
		{Node: "b", Key: region, Value: "eu-north-1", At: at(3, 0)},
		{Node: "c", Key: region, At: at(3, 0), Deleted: true},
		{Node: "d", Key: region, Value: "ap-south-1", At: at(3, 0)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff:\n got %+v\nwant %+v", got, want)
	}
	if d := Diff(region, now, now, func(string) bool { return true }, at(3, 0)); len(d) != 0 {
		t.Errorf("no change: %+v", d)
	}
}

// State: the last change at or before the instant, a removal leaving
// none, other keys ignored.
func TestState(t *testing.T) {
	h := []Change{
		{Node: "a", Key: region, Value: "us-east-1", At: at(2, 0)},
		{Node: "a", Key: region, Value: "eu-north-1", At: at(1, 0)},
		{Node: "b", Key: region, Value: "us-east-1", At: at(1, 0)},
		{Node: "b", Key: region, At: at(5, 0), Deleted: true},
		{Node: "c", Key: "zone", Value: "z1", At: at(1, 0)},
	}
	for _, c := range []struct {
		t    time.Time
		want map[string]string
	}{
		{at(1, 0).Add(-time.Second), map[string]string{}},
		{at(1, 0), map[string]string{"a": "eu-north-1", "b": "us-east-1"}},
		{at(4, 0), map[string]string{"a": "us-east-1", "b": "us-east-1"}},
		{at(5, 0), map[string]string{"a": "us-east-1"}},
	} {
		if got := State(h, region, c.t); !reflect.DeepEqual(got, c.want) {
			t.Errorf("at %s: %v, want %v", c.t, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	lo, hi := time.Unix(0, 0), time.Unix(1<<32-1, 0)
	ok := Change{Node: "n1", Key: region, Value: "eu-north-1", At: at(1, 0)}
	if err := Validate([]Change{ok, {Node: "n1", Key: region, At: at(2, 0), Deleted: true}, {Node: "n2", Key: "zone", Value: "", At: at(1, 0)}}, lo, hi); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Change)
		want string
	}{
		{"no time", func(c *Change) { c.At = time.Time{} }, "node label change 0 (node \"n1\" key \"topology.kubernetes.io/region\" at 0001-01-01T00:00:00Z): at is not set"},
		{"too early", func(c *Change) { c.At = time.Unix(-10, 0) }, "at is outside 1970-2106"},
		{"no node", func(c *Change) { c.Node = "" }, "node name is empty or longer than 253"},
		{"long node", func(c *Change) { c.Node = strings.Repeat("n", 254) }, "node name is empty or longer than 253"},
		{"bad key", func(c *Change) { c.Key = "Region Name" }, "key is not a Kubernetes label key"},
		{"bad value", func(c *Change) { c.Value = "eu north" }, `value "eu north" is not a Kubernetes label value`},
		{"long value", func(c *Change) { c.Value = strings.Repeat("v", 64) }, "is not a Kubernetes label value"},
		{"removal with value", func(c *Change) { c.Deleted = true }, "a removal carries no value"},
	} {
		bad := ok
		c.mod(&bad)
		err := Validate([]Change{bad}, lo, hi)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	err := Validate([]Change{ok, ok}, lo, hi)
	if err == nil || !strings.Contains(err.Error(), "changes 0 and 1 set the same node's label in the same second") {
		t.Errorf("twice: %v", err)
	}
}
