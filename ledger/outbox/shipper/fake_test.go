package shipper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

var _ Outbox = (*fakeOutbox)(nil)

// fakeOutbox is an in-memory outbox: rows and findings with increasing
// sequence numbers and one shipped mark.
type fakeOutbox struct {
	mu        sync.Mutex
	rows      []attribution.Row
	rowSeq    []int64
	findings  []attribution.Finding
	fSeq      []int64
	next      int64
	mark      int64
	delivered map[int64]int // seq -> times handed out in a batch
	calls     int
	onNext    func(call int) // runs before a batch is handed out
	failMarks int            // MarkShipped calls left to fail
	marks     []int64        // successful MarkShipped arguments
}

func newFakeOutbox(rows []attribution.Row, findings []attribution.Finding) *fakeOutbox {
	o := &fakeOutbox{delivered: map[int64]int{}}
	// Interleave: a finding after every 97 rows, as a collector would.
	fi := 0
	for i, r := range rows {
		o.next++
		o.rows, o.rowSeq = append(o.rows, r), append(o.rowSeq, o.next)
		if i%97 == 96 && fi < len(findings) {
			o.next++
			o.findings, o.fSeq = append(o.findings, findings[fi]), append(o.fSeq, o.next)
			fi++
		}
	}
	for ; fi < len(findings); fi++ {
		o.next++
		o.findings, o.fSeq = append(o.findings, findings[fi]), append(o.fSeq, o.next)
	}
	return o
}

// add appends rows as a collector's commit would.
func (o *fakeOutbox) add(rows []attribution.Row) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range rows {
		o.next++
		o.rows, o.rowSeq = append(o.rows, r), append(o.rowSeq, o.next)
	}
}

func (o *fakeOutbox) NextBatch(ctx context.Context, sink string, max int) (filestore.OutboxBatch, error) {
	o.mu.Lock()
	o.calls++
	call, hook := o.calls, o.onNext
	o.mu.Unlock()
	if hook != nil {
		hook(call)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var b filestore.OutboxBatch
	i, j := 0, 0
	for i < len(o.rowSeq) && o.rowSeq[i] <= o.mark {
		i++
	}
	for j < len(o.fSeq) && o.fSeq[j] <= o.mark {
		j++
	}
	for n := 0; n < max && (i < len(o.rowSeq) || j < len(o.fSeq)); n++ {
		var seq int64
		if j >= len(o.fSeq) || (i < len(o.rowSeq) && o.rowSeq[i] < o.fSeq[j]) {
			seq = o.rowSeq[i]
			b.Rows = append(b.Rows, o.rows[i])
			i++
		} else {
			seq = o.fSeq[j]
			b.Findings = append(b.Findings, o.findings[j])
			j++
		}
		if b.FirstSeq == 0 {
			b.FirstSeq = seq
		}
		b.LastSeq = seq
		o.delivered[seq]++
	}
	return b, nil
}

func (o *fakeOutbox) MarkShipped(ctx context.Context, sink string, lastSeq int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failMarks > 0 {
		o.failMarks--
		return errors.New("injected: outbox disk full")
	}
	if lastSeq > o.next {
		return fmt.Errorf("seq %d was never written", lastSeq)
	}
	o.mark = max(o.mark, lastSeq)
	o.marks = append(o.marks, lastSeq)
	return nil
}

func (o *fakeOutbox) OutboxStats(ctx context.Context, sink string) (int64, time.Time, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var pending int64
	var oldest time.Time
	var oldestSeq int64
	for i, s := range o.rowSeq {
		if s > o.mark {
			pending++
			if oldestSeq == 0 || s < oldestSeq {
				oldestSeq, oldest = s, o.rows[i].IntervalEnd
			}
		}
	}
	for i, s := range o.fSeq {
		if s > o.mark {
			pending++
			if oldestSeq == 0 || s < oldestSeq {
				oldestSeq, oldest = s, o.findings[i].End
			}
		}
	}
	return pending, oldest, nil
}

func (o *fakeOutbox) replays() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.delivered {
		if c > 1 {
			n++
		}
	}
	return n
}

// memSink stores rows by their deterministic key, like the real sinks.
type memSink struct {
	mu       sync.Mutex
	rows     map[string]attribution.Row
	findings map[string]attribution.Finding
	appends  int
	at       []time.Time // when each stored Append came
	fail     int         // Append calls left to fail
	rebuilds [][2]time.Time
}

func newMemSink() *memSink {
	return &memSink{rows: map[string]attribution.Row{}, findings: map[string]attribution.Finding{}}
}

func rowKey(r attribution.Row) string {
	return fmt.Sprint(r.Node, "|", r.GPUUUID, "|", r.SliceID, "|", r.PodUID, "|", r.Container, "|", r.Kind, "|", r.IntervalStart.UnixNano())
}

func (m *memSink) Append(ctx context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail > 0 {
		m.fail--
		return errors.New("injected: sink down")
	}
	m.appends++
	m.at = append(m.at, time.Now())
	for _, r := range rows {
		m.rows[rowKey(r)] = r
	}
	for _, f := range fs {
		m.findings[fmt.Sprint(f.Kind, f.Node, f.GPUUUID, f.Namespace, f.Pod, f.Container, f.Start.UnixNano())] = f
	}
	return nil
}

// rollupSink is a memSink with rollups.
type rollupSink struct{ *memSink }

func (r rollupSink) RebuildRollups(ctx context.Context, from, to time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rebuilds = append(r.rebuilds, [2]time.Time{from, to})
	return nil
}
