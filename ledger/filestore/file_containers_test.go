package filestore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// ContainerRows must be Rows' container rows, field for field, less the
// energy and method it leaves out.
func TestContainerRowsMatchRows(t *testing.T) {
	s := openTemp(t, FileOptions{})
	ctx := context.Background()
	rows := fleetRows(t0, 30, time.Minute, 6)
	for i := range rows { // empty and non-ASCII fields
		if rows[i].IntervalStart.Equal(t0.Add(5*time.Minute)) && rows[i].Kind == attribution.KindContainer {
			rows[i].Pod, rows[i].Container, rows[i].Node = "pöd-ü", "", "node:with:colons"
			break
		}
	}
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	from, to := t0.Add(3*time.Minute), t0.Add(27*time.Minute)
	key := func(r attribution.Row) string {
		return r.IntervalStart.String() + "|" + r.Node + "|" + r.GPUUUID + "|" + r.SliceID + "|" + r.PodUID + "|" + r.Container
	}
	var want, got []attribution.Row
	if err := s.Rows(ctx, from, to, func(r attribution.Row) error {
		if r.Kind == attribution.KindContainer {
			r.Method = ""
			want = append(want, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.ContainerRows(ctx, from, to, func(r attribution.Row) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cmp := func(a, b attribution.Row) int { return strings.Compare(key(a), key(b)) }
	slices.SortFunc(want, cmp)
	slices.SortFunc(got, cmp)
	if len(want) != 24*6*2 || len(got) != len(want) {
		t.Fatalf("got %d container rows, want %d (%d expected)", len(got), len(want), 24*6*2)
	}
	for i := range want {
		if !want[i].IntervalStart.Equal(got[i].IntervalStart) || !want[i].IntervalEnd.Equal(got[i].IntervalEnd) {
			t.Fatalf("row %d: times %v-%v, want %v-%v", i, got[i].IntervalStart, got[i].IntervalEnd, want[i].IntervalStart, want[i].IntervalEnd)
		}
		got[i].IntervalStart, got[i].IntervalEnd = want[i].IntervalStart, want[i].IntervalEnd
		if got[i] != want[i] {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if !slices.ContainsFunc(got, func(r attribution.Row) bool { return r.Pod == "pöd-ü" && r.Container == "" }) {
		t.Fatal("the row with an empty container and a non-ASCII pod is missing")
	}
}

func TestContainerRowsErrors(t *testing.T) {
	s := openTemp(t, FileOptions{})
	ctx := context.Background()
	rows := fleetRows(t0, 2, time.Minute, 1)
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	if err := s.ContainerRows(ctx, t0, t0.Add(time.Hour), func(attribution.Row) error { return stop }); err != stop {
		t.Fatalf("callback error came back as %v, want it unchanged", err)
	}
	bad := rows[0]
	bad.Pod = "a\x1fb"
	if err := s.Append(ctx, []attribution.Row{bad}, nil); err != nil {
		t.Fatal(err)
	}
	err := s.ContainerRows(ctx, t0, t0.Add(time.Hour), func(attribution.Row) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "U+001F") {
		t.Fatalf("a pod name holding the separator gave %v, want an error naming it", err)
	}
}

func TestParseContainerKey(t *testing.T) {
	k, err := parseContainerKey("60000000000\x1f12\x1fn\x1fg\x1fs\x1fp\x1fu\x1f")
	if err != nil || k != (containerKey{60e9, 12, "n", "g", "s", "p", "u", ""}) {
		t.Fatalf("parseContainerKey = %+v, %v", k, err)
	}
	for _, bad := range []string{"", "a\x1fb", "1\x1f1\x1fa\x1fb\x1fc\x1fd\x1fe\x1ff\x1fg", "1\x1fx\x1fa\x1fb\x1fc\x1fd\x1fe\x1ff",
		"x\x1f1\x1fa\x1fb\x1fc\x1fd\x1fe\x1ff"} {
		if _, err := parseContainerKey(bad); err == nil {
			t.Errorf("parseContainerKey(%q) succeeded", bad)
		}
	}
}
