package collector

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// findingSink keeps the findings written to it.
type findingSink struct{ got []attribution.Finding }

func (s *findingSink) Write(_ context.Context, _ []attribution.Row, f []attribution.Finding) error {
	s.got = append(s.got, f...)
	return nil
}

// A clean leave is recorded at the end of the latest row written, whatever
// the order the rows came in; a collector that wrote nothing records none.
func TestRecordLeave(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var mark LeaveMark
	sink := &findingSink{}
	if err := RecordLeave(ctx, "n1", &mark, []Sink{sink}, log); err != nil || len(sink.got) != 0 {
		t.Fatalf("nothing written: recorded %v (%v), want no leave", sink.got, err)
	}
	t0 := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	_ = mark.Write(ctx, []attribution.Row{{IntervalStart: t0.Add(time.Minute), IntervalEnd: t0.Add(2 * time.Minute)}, {IntervalStart: t0, IntervalEnd: t0.Add(time.Minute)}}, nil)
	if err := RecordLeave(ctx, "n1", &mark, []Sink{sink}, log); err != nil {
		t.Fatal(err)
	}
	want := attribution.Finding{Kind: attribution.FindingNodeLeft, Node: "n1", Start: t0.Add(2 * time.Minute), End: t0.Add(2 * time.Minute)}
	if len(sink.got) != 1 || sink.got[0] != want {
		t.Fatalf("recorded %+v, want %+v", sink.got, want)
	}
}
