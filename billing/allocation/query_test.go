package allocation

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func berlin(t testing.TB) *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestWindows(t *testing.T) {
	loc := berlin(t)
	// Wednesday 2026-11-25 23:30 UTC is Thursday 00:30 in Berlin.
	at := time.Date(2026, 11, 25, 23, 30, 0, 0, time.UTC)
	day := func(y int, m time.Month, d int) string {
		return time.Date(y, m, d, 0, 0, 0, 0, loc).Format(time.RFC3339)
	}
	cases := []struct{ in, from, to string }{
		{"2026-11", day(2026, 11, 1), day(2026, 12, 1)},
		{"2026-11-01T00:00:00Z,2026-11-08T00:00:00Z", "2026-11-01T01:00:00+01:00", "2026-11-08T01:00:00+01:00"},
		{"2026-11-01,2026-11-08", day(2026, 11, 1), day(2026, 11, 8)},
		{"today", day(2026, 11, 26), day(2026, 11, 27)},
		{"7d", day(2026, 11, 20), day(2026, 11, 27)},
		{"week", day(2026, 11, 23), day(2026, 11, 30)},
		{"lastweek", day(2026, 11, 16), day(2026, 11, 23)},
		{"month", day(2026, 11, 1), day(2026, 12, 1)},
		{"lastmonth", day(2026, 10, 1), day(2026, 11, 1)},
		// October 25th has 25 hours in Berlin: the window is still days.
		{"2026-10", day(2026, 10, 1), day(2026, 11, 1)},
	}
	for _, c := range cases {
		from, to, err := ParseWindow(c.in, loc, at)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if from.Format(time.RFC3339) != c.from || to.Format(time.RFC3339) != c.to {
			t.Errorf("%s: %s to %s, want %s to %s", c.in, from.Format(time.RFC3339), to.Format(time.RFC3339), c.from, c.to)
		}
	}
}

// TestBadParameters: every bad parameter is a ParamError naming it.
func TestBadParameters(t *testing.T) {
	loc := berlin(t)
	cases := map[string]string{
		"window=yesterday":                       "window",
		"window=0d":                              "window",
		"window=401d":                            "window",
		"window=99999999999999999999d":           "window",
		"window=2026-11-08,2026-11-01":           "window",
		"window=2026-01-01,2027-06-01":           "window",
		"window=2026-13":                         "window",
		"window=3000-01":                         "window",
		"window=2026-11-01,nope":                 "window",
		"aggregate=team,team":                    "aggregate",
		"aggregate=owner":                        "aggregate",
		"aggregate=":                             "",
		"step=minute":                            "step",
		"step=hour&window=2026-01-01,2026-03-01": "step",
		"filter=team":                            "filter",
		"filter=colour:red":                      "filter",
		"filter=team:%25ZZ":                      "filter",
		"filter=team:":                           "filter",
		"filter=" + strings.Repeat("team:a,", 33) + "team:b": "filter",
		"format=csv":                             "format",
		"window=2026-11&window=2026-10":          "window",
		"aggregate=" + strings.Repeat("x", 2000): "aggregate",
	}
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for in, param := range cases {
		v, err := url.ParseQuery(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		_, err = Parse(v, loc, at)
		if param == "" {
			if err != nil {
				t.Errorf("%s: %v", in, err)
			}
			continue
		}
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%s: %v, want an error naming %s", in, err, param)
		}
	}
}

func TestFilterRoundTrip(t *testing.T) {
	f := map[Dim][]string{Team: {"ads", "a,b:c%d"}, Pod: {"p-1"}}
	s := FormatFilter(f)
	g, err := ParseFilter(s)
	if err != nil {
		t.Fatal(err)
	}
	if FormatFilter(g) != s || len(g[Team]) != 2 || g[Team][1] != "a,b:c%d" || g[Pod][0] != "p-1" {
		t.Errorf("%s read back as %v", s, g)
	}
}

// FuzzParse: whatever the query string, Parse answers a query within the
// bounds or a ParamError naming a parameter, never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"window=2026-11&aggregate=team,pod&step=day&filter=team:ads",
		"window=7d", "window=2026-11-01T00:00:00Z,2026-11-08T00:00:00Z&step=hour", "filter=pod:a%2Cb", "aggregate=,,"} {
		f.Add(s)
	}
	loc, _ := time.LoadLocation("Europe/Berlin")
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := url.ParseQuery(s)
		if err != nil {
			return
		}
		q, err := Parse(v, loc, at)
		if err != nil {
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param == "" || !utf8.ValidString(pe.Param) || len(pe.Param) > 64 {
				t.Fatalf("%q: %v is not a ParamError naming a parameter", s, err)
			}
			return
		}
		if !q.From.Before(q.To) || q.To.Sub(q.From) > (MaxWindowDays+1)*24*time.Hour {
			t.Fatalf("%q: window %s to %s", s, q.From, q.To)
		}
		if len(q.Aggregate) == 0 || len(q.Aggregate) > len(Dims) {
			t.Fatalf("%q: %d fields", s, len(q.Aggregate))
		}
		n := 0
		for _, vs := range q.Filter {
			n += len(vs)
		}
		if n > MaxFilters {
			t.Fatalf("%q: %d filter values", s, n)
		}
	})
}

// Weeks start on Monday in the book's zone: 1 November 2026 is a Sunday.
func TestWeekSteps(t *testing.T) {
	loc := berlin(t)
	v := url.Values{"window": {"2026-11-01,2026-11-16"}, "step": {"week"}}
	q, err := Parse(v, loc, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	steps, _, err := stepRanges(q, loc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.From.Format("01-02")+"/"+s.To.Format("01-02"))
	}
	if strings.Join(got, " ") != "11-01/11-02 11-02/11-09 11-09/11-16" {
		t.Errorf("weeks %v", got)
	}
}

// Every field has its own place in a line's keys, in Dims' order.
func TestDimIndexIsDimsOrder(t *testing.T) {
	if len(Dims) != len(lineKeys{}) {
		t.Fatalf("%d fields, %d places in lineKeys", len(Dims), len(lineKeys{}))
	}
	for i, d := range Dims {
		if got := dimIndex(d); got != i {
			t.Errorf("dimIndex(%s) = %d, want %d", d, got, i)
		}
	}
}
