package exposition

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// counterMetric and gaugeMetric wrap a snapshot sample as a const metric
// for client_golang (Collect, the registry path). Their label pairs and
// created timestamp are the sample's cached label set, so wrapping costs
// one allocation per series and scrape, and only the registry path pays
// it. Both are immutable: the registry treats what Write hands out as
// read-only, and so may any number of concurrent scrapes.
type counterMetric struct {
	desc  *prometheus.Desc
	value float64
	c     dto.Counter
	ls    *labelSet
}

type gaugeMetric struct {
	desc  *prometheus.Desc
	value float64
	g     dto.Gauge
	ls    *labelSet
}

var (
	_ prometheus.Metric = (*counterMetric)(nil)
	_ prometheus.Metric = (*gaugeMetric)(nil)
)

// newMetric wraps one series of family f.
func newMetric(f *family, s sample) prometheus.Metric {
	if f.typ == counterType {
		m := &counterMetric{desc: f.desc, value: s.v, ls: s.ls}
		m.c.Value = &m.value
		m.c.CreatedTimestamp = s.ls.created
		return m
	}
	m := &gaugeMetric{desc: f.desc, value: s.v, ls: s.ls}
	m.g.Value = &m.value
	return m
}

func (m *counterMetric) Desc() *prometheus.Desc { return m.desc }

func (m *counterMetric) Write(out *dto.Metric) error {
	out.Label = m.ls.pairs
	out.Counter = &m.c
	return nil
}

func (m *gaugeMetric) Desc() *prometheus.Desc { return m.desc }

func (m *gaugeMetric) Write(out *dto.Metric) error {
	out.Label = m.ls.pairs
	out.Gauge = &m.g
	return nil
}
