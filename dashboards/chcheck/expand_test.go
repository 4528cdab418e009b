package chcheck

import (
	"strings"
	"testing"
	"time"
)

// Grafana's documented percentencode examples (variable syntax docs) and
// the characters encodeURIComponentStrict adds to encodeURIComponent.
func TestPercentEncode(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"foo()bar BAZ", "test2"}, "%7Bfoo%28%29bar%20BAZ%2Ctest2%7D"},
		{[]string{"foo()bar BAZ"}, "foo%28%29bar%20BAZ"},
		{[]string{"A-Z_a.z~09"}, "A-Z_a.z~09"},
		{[]string{`o'brien\`}, "o%27brien%5C"},
		{[]string{"!*"}, "%21%2A"},
		{[]string{"é"}, "%C3%A9"},
		{[]string{AllValue}, AllValue}, // the custom All value, formatted or not
	} {
		if got := PercentEncode(tc.in); got != tc.want {
			t.Errorf("PercentEncode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The plugin's own macro tests: 2014-11-12T11:45:26.371Z to
// 2015-11-12T11:45:26.371Z gives toDateTime(1415792726) and
// toDateTime(1447328726); a 20 s interval gives INTERVAL 20 second.
func TestExpandMacros(t *testing.T) {
	from, _ := time.Parse(time.RFC3339Nano, "2014-11-12T11:45:26.371Z")
	to, _ := time.Parse(time.RFC3339Nano, "2015-11-12T11:45:26.371Z")
	r := Range{From: from, To: to}
	got, err := ExpandMacros("SELECT $__timeInterval(col) FROM t WHERE $__timeFilter(col) AND x > $__fromTime AND x < $__toTime", r, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := "SELECT toStartOfInterval(toDateTime(col), INTERVAL 20 second) FROM t WHERE col >= toDateTime(1415792726) AND col <= toDateTime(1447328726) AND x > toDateTime(1415792726) AND x < toDateTime(1447328726)"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{"$__timeFilter(a, b)", "$__timeFilter()", "$__unknown", "$__dateFilter(d)"} {
		if _, err := ExpandMacros(bad, r, time.Second); err == nil {
			t.Errorf("ExpandMacros(%q): no error", bad)
		}
	}
}

func TestInterpolate(t *testing.T) {
	vars := map[string]Value{"team": {Values: []string{"A1", "B2"}}, "ns": {All: true}}
	got, err := Interpolate("'${team:percentencode}' '${ns:percentencode}'", vars)
	if err != nil {
		t.Fatal(err)
	}
	if want := "'%7BA1%2CB2%7D' '" + AllValue + "'"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, bad := range []string{"$team", "${team}", "${team:singlequote}", "${nope:percentencode}"} {
		if _, err := Interpolate(bad, vars); err == nil || !strings.Contains(err.Error(), "team") && !strings.Contains(err.Error(), "nope") {
			t.Errorf("Interpolate(%q): error %v", bad, err)
		}
	}
}
