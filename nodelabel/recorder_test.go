package nodelabel

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// memStore is an in-memory Store: the changes appended, read as State.
type memStore struct {
	changes []Change
	fail    error
}

func (m *memStore) AppendNodeLabels(_ context.Context, cs []Change) error {
	if m.fail != nil {
		return m.fail
	}
	m.changes = append(m.changes, cs...)
	return nil
}

func (m *memStore) NodeLabels(_ context.Context, key string, at time.Time) (map[string]string, error) {
	return State(m.changes, key, at), nil
}

// The recorder appends what changed, nothing when nothing did, keeps a
// deleted node's value, repeats a failed append whole, and after a
// restart appends only what changed while it was down.
func TestRecorder(t *testing.T) {
	ctx := context.Background()
	st := &memStore{}
	now := at(1, 0)
	labels := map[string]string{"a": "eu-north-1", "b": "us-east-1"}
	nodes := map[string]bool{"a": true, "b": true, "c": true}
	snap := func() (map[string]string, func(string) bool, error) {
		return labels, func(n string) bool { return nodes[n] }, nil
	}
	r := &Recorder{Store: st, Key: region, Snapshot: snap, Now: func() time.Time { return now }}
	if n, err := r.Record(ctx); n != 2 || err != nil {
		t.Fatalf("first record: %d, %v", n, err)
	}
	now = at(2, 0)
	if n, err := r.Record(ctx); n != 0 || err != nil {
		t.Fatalf("no change: %d, %v", n, err)
	}
	// b relabelled while the store fails: the next record repeats it.
	labels = map[string]string{"a": "eu-north-1", "b": "ap-south-1"}
	st.fail = errors.New("disk full")
	if _, err := r.Record(ctx); err == nil {
		t.Fatal("a failed append reported no error")
	}
	st.fail = nil
	now = at(3, 0)
	if n, err := r.Record(ctx); n != 1 || err != nil {
		t.Fatalf("after the failure: %d, %v", n, err)
	}
	// a deleted from the cluster: no change; c labelled; a restart.
	delete(labels, "a")
	delete(nodes, "a")
	labels["c"] = "us-east-1"
	now = at(4, 0)
	r2 := &Recorder{Store: st, Key: region, Snapshot: snap, Now: func() time.Time { return now }}
	if n, err := r2.Record(ctx); n != 1 || err != nil {
		t.Fatalf("after a restart: %d, %v", n, err)
	}
	// b loses the label: a removal.
	delete(labels, "b")
	now = at(5, 0)
	if n, err := r2.Record(ctx); n != 1 || err != nil {
		t.Fatalf("label removed: %d, %v", n, err)
	}
	want := []Change{
		{Node: "a", Key: region, Value: "eu-north-1", At: at(1, 0)},
		{Node: "b", Key: region, Value: "us-east-1", At: at(1, 0)},
		{Node: "b", Key: region, Value: "ap-south-1", At: at(3, 0)},
		{Node: "c", Key: region, Value: "us-east-1", At: at(4, 0)},
		{Node: "b", Key: region, At: at(5, 0), Deleted: true},
	}
	if !reflect.DeepEqual(st.changes, want) {
		t.Errorf("recorded:\n got %+v\nwant %+v", st.changes, want)
	}
	if got := State(st.changes, region, at(6, 0)); !reflect.DeepEqual(got, map[string]string{"a": "eu-north-1", "c": "us-east-1"}) {
		t.Errorf("in force: %v", got)
	}
}
