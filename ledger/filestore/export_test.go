package filestore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
)

// rowFields renders a row the way ledger.md asks, written out here rather
// than through CSVWriter so the test checks the contract, not itself.
func rowFields(r attribution.Row) []string {
	// Six decimals (a micro-GPU-second), no trailing zeros, no "-0".
	f := func(v float64) string { return strconv.FormatFloat(math.Round(v*1e6)/1e6+0, 'f', -1, 64) }
	tm := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	return []string{tm(r.IntervalStart), tm(r.IntervalEnd), r.Node, r.GPUUUID, r.GPUModel, r.SliceID,
		r.SharingMode, string(r.Kind), r.Namespace, r.Pod, r.PodUID, r.Container, r.Team,
		f(r.AllocatedGPUSeconds), f(r.UsedGPUSeconds), f(r.MemoryMiBSeconds), f(r.EnergyJoules), r.Method}
}

const contractHeader = "interval_start,interval_end,node,gpu_uuid,gpu_model,slice_id,sharing_mode,kind,namespace,pod,pod_uid,container,team,allocated_gpu_seconds,used_gpu_seconds,memory_mib_seconds,energy_joules,method"

func exportFixture(t *testing.T) (*FileStore, []attribution.Row, time.Time, time.Time) {
	s := openTemp(t, FileOptions{})
	rows := fleetRows(t0, 30, time.Minute, 5)
	rows[3].Container = "odd, \"quoted\"\nname"
	rows[4].EnergyJoules = 1e21 // no exponent in either format
	for i := range rows {
		if rows[i].Kind == attribution.KindContainer && i%3 == 0 {
			rows[i].MIGProfile = "2g.20gb" // only JSONL shows it
		}
	}
	if err := s.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
	from, to := t0.Add(5*time.Minute), t0.Add(25*time.Minute)
	var want []attribution.Row
	for _, r := range rows {
		if !r.IntervalStart.Before(from) && r.IntervalStart.Before(to) {
			want = append(want, r)
		}
	}
	sortRows(want)
	return s, want, from, to
}

func TestExportCSV(t *testing.T) {
	s, want, from, to := exportFixture(t)
	var buf bytes.Buffer
	var calls []int64
	n, err := ledger.Export(context.Background(), s, from, to, ledger.FormatCSV, &buf, func(done int64) { calls = append(calls, done) })
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(want)) {
		t.Fatalf("exported %d rows, want %d", n, len(want))
	}
	if first, _, _ := strings.Cut(buf.String(), "\n"); first != contractHeader {
		t.Fatalf("header %q", first)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("export is not RFC 4180: %v", err)
	}
	if len(recs) != len(want)+1 {
		t.Fatalf("%d records, want %d", len(recs), len(want)+1)
	}
	for i, r := range want {
		if !reflect.DeepEqual(recs[i+1], rowFields(r)) {
			t.Fatalf("record %d:\n got %q\nwant %q", i, recs[i+1], rowFields(r))
		}
	}
	if len(calls) == 0 || calls[len(calls)-1] != n {
		t.Fatalf("progress calls %v: the last must report %d", calls, n)
	}
}

func TestExportJSONL(t *testing.T) {
	s, want, from, to := exportFixture(t)
	var buf bytes.Buffer
	n, err := ledger.Export(context.Background(), s, from, to, ledger.FormatJSONL, &buf, nil)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("Export: %d rows, %v; want %d", n, err, len(want))
	}
	header := strings.Split(contractHeader, ",")
	sc := bufio.NewScanner(&buf)
	i := 0
	for sc.Scan() {
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		wantLen := len(header)
		if p := want[i].MIGProfile; p != "" {
			wantLen++
			if m["mig_profile"] != p {
				t.Fatalf("line %d mig_profile = %v, want %q", i, m["mig_profile"], p)
			}
		}
		if len(m) != wantLen {
			t.Fatalf("line %d has %d fields, want %d", i, len(m), wantLen)
		}
		wantFields := rowFields(want[i])
		for k, name := range header {
			v, ok := m[name]
			if !ok {
				t.Fatalf("line %d lacks %q", i, name)
			}
			got := ""
			switch x := v.(type) {
			case string:
				got = x
			case json.Number:
				got = x.String()
				if k < 13 {
					t.Fatalf("line %d: %s is a number", i, name)
				}
			}
			if got != wantFields[k] {
				t.Fatalf("line %d %s = %q, want %q", i, name, got, wantFields[k])
			}
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("%d lines, want %d", i, len(want))
	}
}

func TestExportErrors(t *testing.T) {
	s, _, from, to := exportFixture(t)
	if _, err := ledger.Export(context.Background(), s, from, to, "xml", &bytes.Buffer{}, nil); err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Fatalf("unknown format: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ledger.Export(ctx, s, from, to, ledger.FormatCSV, &bytes.Buffer{}, nil); err == nil {
		t.Fatal("export with a cancelled context succeeded")
	}
	boom := errors.New("disk gone")
	if _, err := ledger.Export(context.Background(), s, from, to, ledger.FormatJSONL, failWriter{boom}, nil); !errors.Is(err, boom) {
		t.Fatalf("write failure: %v, want it wrapped", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestParseTime(t *testing.T) {
	cases := []struct {
		in   string
		want time.Time
	}{
		{"2026-03-01", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-03-01T10:20:30Z", time.Date(2026, 3, 1, 10, 20, 30, 0, time.UTC)},
		{"2026-03-01T10:20:30.5+02:00", time.Date(2026, 3, 1, 8, 20, 30, 5e8, time.UTC)},
	}
	for _, c := range cases {
		got, err := calendar.ParseTime(c.in)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("ParseTime(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-13-01", "2026-03-01 10:00", "1709251200"} {
		if _, err := calendar.ParseTime(bad); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("ParseTime(%q): %v", bad, err)
		}
	}
}
