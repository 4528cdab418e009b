package exposition

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Escaping of the text formats, as expfmt does it: label values (in both
// formats) and OpenMetrics HELP escape backslash, newline and double quote;
// HELP in the text format 0.0.4 leaves double quotes alone.
var (
	labelValueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	textHelpEscaper   = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// labelSet is the cached, validated label set of one series key, in every
// shape a scrape needs: label pairs for client_golang, the rendered
// `{name="value",...}` text for the fast writer, and a sort key. Every
// family it is used with must have the same variable and const label names
// as the one it was built for. It is immutable once built.
type labelSet struct {
	pairs   []*dto.LabelPair
	created *timestamppb.Timestamp // nil when unknown
	text    string                 // label pairs as both text formats write them; "" without labels
	key     string                 // orders series as client_golang does: see sortKey
	err     error                  // the label values are invalid: emit nothing
}

// newLabelSet validates the label values against desc and builds their
// pairs through client_golang itself, so they are sorted and checked exactly
// as NewConstMetric would; the text is rendered from those pairs, so both
// scrape paths agree on names, order and values.
func newLabelSet(desc *prometheus.Desc, created time.Time, lv []string) *labelSet {
	m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, 0, lv...)
	if err != nil {
		return &labelSet{err: fmt.Errorf("cannot build series %s: %w", desc, err)}
	}
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		return &labelSet{err: fmt.Errorf("cannot build series %s: %w", desc, err)}
	}
	ls := &labelSet{pairs: d.Label, text: labelText(d.Label), key: sortKey(d.Label)}
	if !created.IsZero() {
		ls.created = timestamppb.New(created)
	}
	return ls
}

// labelText renders label pairs as expfmt does in both text formats: a
// name outside the legacy alphabet is quoted, values are escaped.
func labelText(pairs []*dto.LabelPair) string {
	if len(pairs) == 0 {
		return ""
	}
	n := 1
	for _, p := range pairs {
		n += len(p.GetName()) + len(p.GetValue()) + 4
	}
	b := make([]byte, 0, n)
	for i, p := range pairs {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		if name := p.GetName(); model.LegacyValidation.IsValidMetricName(name) {
			b = append(b, name...)
		} else {
			b = append(b, '"')
			b = appendEscaped(b, name)
			b = append(b, '"')
		}
		b = append(b, '=', '"')
		b = appendEscaped(b, p.GetValue())
		b = append(b, '"')
	}
	b = append(b, '}')
	return string(b)
}

// appendEscaped appends a label value escaped as both text formats require
// (the same escaping as labelValueEscaper, without its overhead on values
// that need none, which is nearly all of them).
func appendEscaped(b []byte, v string) []byte {
	if !strings.ContainsAny(v, "\\\n\"") {
		return append(b, v...)
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '"':
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// sortKey encodes the label values, in label name order, so that comparing
// two keys as strings compares the value lists element by element, which is
// how client_golang orders the series of a family (they all have the same
// label names). Each value is terminated by 0x00 0x00 and a 0x00 inside a
// value is written 0x00 0x01, so a value that is a prefix of another still
// sorts first.
func sortKey(pairs []*dto.LabelPair) string {
	n := 0
	for _, p := range pairs {
		n += len(p.GetValue()) + 2
	}
	b := make([]byte, 0, n)
	for _, p := range pairs {
		v := p.GetValue()
		if strings.IndexByte(v, 0) < 0 {
			b = append(b, v...)
		} else {
			for i := 0; i < len(v); i++ {
				b = append(b, v[i])
				if v[i] == 0 {
					b = append(b, 1)
				}
			}
		}
		b = append(b, 0, 0)
	}
	return string(b)
}
