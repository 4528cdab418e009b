package exposition

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// counterSample and gaugeSample are const metrics like those of
// prometheus.NewConstMetric, except that their label pairs and created
// timestamp are built once per label set and shared by every snapshot the
// series lives in. Per series and cycle that is one allocation instead of
// about thirty, which is what keeps Update cheap on a dense node. Both are
// immutable once built: the registry treats what Write hands out as
// read-only, and so may any number of concurrent scrapes.
type counterSample struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	c      dto.Counter
}

type gaugeSample struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	g      dto.Gauge
}

var (
	_ prometheus.Metric = (*counterSample)(nil)
	_ prometheus.Metric = (*gaugeSample)(nil)
)

func newCounterSample(desc *prometheus.Desc, ls *labelSet, v float64) *counterSample {
	s := &counterSample{desc: desc, labels: ls.pairs, value: v}
	s.c.Value = &s.value
	s.c.CreatedTimestamp = ls.created
	return s
}

func newGaugeSample(desc *prometheus.Desc, ls *labelSet, v float64) *gaugeSample {
	s := &gaugeSample{desc: desc, labels: ls.pairs, value: v}
	s.g.Value = &s.value
	return s
}

func (s *counterSample) Desc() *prometheus.Desc { return s.desc }

func (s *counterSample) Write(out *dto.Metric) error {
	out.Label = s.labels
	out.Counter = &s.c
	return nil
}

func (s *gaugeSample) Desc() *prometheus.Desc { return s.desc }

func (s *gaugeSample) Write(out *dto.Metric) error {
	out.Label = s.labels
	out.Gauge = &s.g
	return nil
}

// labelSet is the cached, validated label pairs of one series key. Every
// descriptor it is used with must have the same variable and const label
// names as the one it was built for.
type labelSet struct {
	pairs   []*dto.LabelPair
	created *timestamppb.Timestamp // nil when unknown
	err     error                  // the label values are invalid: emit nothing
}

// newLabelSet validates the label values against desc and builds their
// pairs through client_golang itself, so they are sorted and checked exactly
// as NewConstMetric would.
func newLabelSet(desc *prometheus.Desc, created time.Time, lv []string) *labelSet {
	m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, 0, lv...)
	if err != nil {
		return &labelSet{err: fmt.Errorf("cannot build series %s: %w", desc, err)}
	}
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		return &labelSet{err: fmt.Errorf("cannot build series %s: %w", desc, err)}
	}
	ls := &labelSet{pairs: d.Label}
	if !created.IsZero() {
		ls.created = timestamppb.New(created)
	}
	return ls
}
