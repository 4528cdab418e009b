package progress

import (
	"strings"
	"testing"
	"time"
)

// The bar says how far through the range the last row is, the rows done
// and their rate, redraws at most every 200 ms, and ends full, on its
// own line, when the export succeeded.
func TestBar(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var out strings.Builder
	b := New(&out, from, from.Add(10*time.Hour))
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clock := start
	b.began, b.now = start, func() time.Time { return clock }

	b.Observe(from.Add(5 * time.Hour)) // half way
	clock = start.Add(2 * time.Second)
	b.Update(100) // 100 rows in 2 s: 50 rows/s
	clock = start.Add(2*time.Second + 100*time.Millisecond)
	b.Observe(from.Add(6 * time.Hour))
	b.Update(120) // within 200 ms of the last draw: not drawn
	clock = start.Add(3 * time.Second)
	b.Update(150)
	b.Finish(true) // 150 rows in 3 s
	want := "\rexporting [###############...............]  50%  100 rows  50 rows/s " +
		"\rexporting [##################............]  60%  150 rows  50 rows/s " +
		"\rexporting [##############################] 100%  150 rows  50 rows/s \n"
	if out.String() != want {
		t.Errorf("bar drew\n%q\nwant\n%q", out.String(), want)
	}

	// A failed export with no row yet ends where it was: empty.
	out.Reset()
	b = New(&out, from, from.Add(time.Hour))
	b.Finish(false)
	if got := out.String(); !strings.HasPrefix(got, "\rexporting [..............................]   0%  0 rows  0 rows/s ") || !strings.HasSuffix(got, "\n") {
		t.Errorf("failed export with no rows: %q", got)
	}
}
