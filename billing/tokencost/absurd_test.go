package tokencost

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
)

// The bounds on one series' count, worked out from their definitions.
func TestAbsurd(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string // "" when the count is kept
	}{
		{0, ""}, {0.5, ""}, {1, ""}, {42e6, ""}, {1e15, ""},
		{math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}, {-1, "negative"}, {math.Copysign(0, -1), ""},
		{1e15 * (1 + 1e-15), "above the maximum"}, {1e308, "above the maximum"}, {math.MaxFloat64, "above the maximum"},
		{5e-324, "below 0.5"}, {0.49, "below 0.5"}, {math.SmallestNonzeroFloat64 * 3, "below"},
	} {
		got := absurd(tc.v)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("absurd(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// Hostile counts, one case at a time, through the real client over HTTP
// (a server that answers as Prometheus writes, for the shapes a real one
// cannot return: duplicates, a thousand pods at the bound). A well-behaved
// pod (chat/llama-0: 400 in, 100 out, 10 EUR) is beside each; its row
// always stands, and the hostile pods are dropped or summed as
// docs/tokens.md defines.
func TestAbsurdCounts(t *testing.T) {
	const in, out = "vllm:prompt_tokens_total", "vllm:generation_tokens_total"
	okIn, okOut := series(`"namespace":"chat","pod":"llama-0","model_name":"m"`, "400"), series(`"namespace":"chat","pod":"llama-0","model_name":"m"`, "100")
	s := func(pod, v string) string { return series(`"namespace":"t","pod":"`+pod+`","model_name":"m"`, v) }
	many := func(pods int, v string) string {
		var b []string
		for i := range pods {
			b = append(b, s(fmt.Sprintf("w-%d", i), v))
		}
		return strings.Join(b, ",")
	}
	manyModels := func(n int) string {
		var b []string
		for i := range n {
			b = append(b, series(fmt.Sprintf(`"namespace":"t","pod":"w-0","model_name":"m%d"`, i), "1"))
		}
		return strings.Join(b, ",")
	}
	type row struct {
		pods    int
		in, out float64
	}
	for _, tc := range []struct {
		name    string
		in, out string // the hostile series of each query, beside chat's
		row     *row   // the t/w row, nil where it must be absent
		notes   int
		note    string // in every note
	}{
		{"1e308 input and output (sum +Inf)", s("w-0", "1e308"), s("w-0", "1e308"), nil, 2, "1e+308 is above the maximum of 1e+15"},
		{"two pods of one workload at 1e308", s("w-0", "1e308") + "," + s("w-1", "1e308"), s("w-0", "1"), nil, 2, "above the maximum"},
		{"one series returned twice at 1e308", s("w-0", "1e308") + "," + s("w-0", "1e308"), s("w-0", "1"), nil, 1, "above the maximum"},
		{"5e-324", s("w-0", "5e-324"), s("w-0", "1000"), nil, 1, "4.94066e-324 is positive but below 0.5"},
		{"NaN", s("w-0", "NaN"), s("w-0", "5"), nil, 1, "the count is NaN"},
		{"+Inf", s("w-0", "+Inf"), s("w-0", "5"), nil, 1, "the count is +Inf"},
		{"negative", s("w-0", "-3"), s("w-0", "5"), nil, 1, "-3 is negative"},
		{"identical series returned twice count once", s("w-0", "300") + "," + s("w-0", "300"), s("w-0", "100"), &row{1, 300, 100}, 0, ""},
		{"a series returned twice with two counts: the larger, noted", s("w-0", "300") + "," + s("w-0", "350"), s("w-0", "100"), &row{1, 350, 100}, 1,
			"returned twice with different counts (300 and 350); counted once, as 350"},
		{"two pods of one workload add", s("w-0", "1e15") + "," + s("w-1", "1e15"), s("w-0", "1") + "," + s("w-1", "2"), &row{2, 2e15, 3}, 0, ""},
		{"a workload above MaxWorkloadTokens", many(1001, "1e15"), "", nil, 1, "1001 pods sum 1.001e+18 tokens, above the maximum of 1e+18 per workload"},
		{"a pod counting more than MaxModelsPerPod models", manyModels(MaxModelsPerPod + 1), "", nil, 1, "more than 100 models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			join := func(a, b string) string {
				if b == "" {
					return a
				}
				return a + "," + b
			}
			c := fakeProm(t, map[string]string{in: join(okIn, tc.in), out: join(okOut, tc.out)})
			from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			counted, err := count(context.Background(), c, from, from.AddDate(0, 1, 0))
			if err != nil {
				t.Fatalf("a tenant's counts failed the count: %v", err)
			}
			costs := map[podKey]*big.Rat{{"chat", "llama-0"}: big.NewRat(10, 1)}
			for i := range 1001 {
				costs[podKey{"t", fmt.Sprintf("w-%d", i)}] = big.NewRat(10, 1)
			}
			got, err := joinCounted(counted, costs)
			if err != nil {
				t.Fatalf("a tenant's counts failed the join: %v", err)
			}
			var chat, w *report.TokenRow
			for i, r := range got.Rows {
				switch r.Namespace {
				case "chat":
					chat = &got.Rows[i]
				case "t":
					w = &got.Rows[i]
				}
			}
			if chat == nil || chat.InputTokens != 400 || chat.OutputTokens != 100 || chat.Cost.Cmp(big.NewRat(10, 1)) != 0 ||
				chat.PerMillionInput.Cmp(big.NewRat(10_000_000, 400)) != 0 || chat.PerMillion.Cmp(big.NewRat(10_000_000, 500)) != 0 {
				t.Errorf("the well-behaved row: %+v", chat)
			}
			switch {
			case tc.row == nil && w != nil:
				t.Errorf("hostile row kept: %+v", *w)
			case tc.row != nil && (w == nil || w.Pods != tc.row.pods || w.InputTokens != tc.row.in || w.OutputTokens != tc.row.out):
				t.Errorf("row %+v, want %d pods, %v in, %v out", w, tc.row.pods, tc.row.in, tc.row.out)
			}
			if len(got.Notes) != tc.notes {
				t.Errorf("%d notes, want %d: %+v", len(got.Notes), tc.notes, got.Notes)
			}
			for _, n := range got.Notes {
				if n.Namespace != "t" || n.Server != "vllm" || (n.Metric != in && n.Metric != out) || !strings.Contains(n.Note, tc.note) {
					t.Errorf("note %+v, want t/.../vllm/<metric> saying %q", n, tc.note)
				}
			}
		})
	}
}

// joinCounted joins a count with costs as Build does with the ledger's.
func joinCounted(c *counted, costs map[podKey]*big.Rat) (*report.Tokens, error) {
	return join(c.source, c.to, "allocated", c.pods, c.notes, costs)
}

// Notes are bounded: a thousand absurd pods give MaxTokenNotes notes, the
// first in order, and count the rest.
func TestNotesBounded(t *testing.T) {
	var b []string
	for i := range 1000 {
		b = append(b, series(fmt.Sprintf(`"namespace":"t","pod":"p-%04d","model_name":"m"`, i), "NaN"))
	}
	c := fakeProm(t, map[string]string{"vllm:prompt_tokens_total": strings.Join(b, ",")})
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	counted, err := count(context.Background(), c, from, from.AddDate(0, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := joinCounted(counted, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Notes) != report.MaxTokenNotes || got.NotesMore != 1000-report.MaxTokenNotes || got.Notes[0].Pod != "p-0000" || got.Notes[99].Pod != "p-0099" {
		t.Errorf("%d notes (%d more), first %+v", len(got.Notes), got.NotesMore, got.Notes[0])
	}
}

// No error or String of the client repeats the URL's userinfo or query.
func TestCredentialsRedacted(t *testing.T) {
	for _, raw := range []string{"http://alice:hunter2@prom.example:9090/?token=s3cr3t", "http://prom.example/?token=s3cr3t", "ftp://alice:hunter2@x/?token=s3cr3t",
		"http://alice:hunter2@x/%zz?token=s3cr3t", "http://alice:hunter2@x#s3cr3t", "http://alice:hunter2/s3cr3t@x"} {
		_, err := NewClient(raw, time.Second)
		if err == nil {
			t.Errorf("%s accepted", raw)
			continue
		}
		for _, secret := range []string{"alice", "hunter2", "s3cr3t"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("NewClient(%s): %v repeats %q", raw, err, secret)
			}
		}
	}
	// Reachable and not: neither the client's name nor its errors carry
	// the userinfo.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `<html>`) }))
	defer srv.Close()
	for _, base := range []string{strings.Replace(srv.URL, "http://", "http://alice:hunter2@", 1), "http://alice:hunter2@127.0.0.1:1"} {
		c, err := NewClient(base, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		_, err = count(context.Background(), c, from, from.AddDate(0, 1, 0))
		if err == nil {
			t.Fatalf("%s: no error", c)
		}
		for _, s := range []string{c.String(), err.Error()} {
			if strings.Contains(s, "alice") || strings.Contains(s, "hunter2") {
				t.Errorf("%q repeats the userinfo", s)
			}
		}
	}
}

// A Prometheus that answers each query in 400 ms: the count's ten
// queries would take 2 s two at a time (4 s one by one, each within its
// timeout), and the client's 1 s bounds all of them together.
func TestCountTotalDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(400 * time.Millisecond):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	began := time.Now()
	_, err = count(context.Background(), c, from, from.AddDate(0, 1, 0))
	took := time.Since(began)
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("Count: %v after %s, want the 1 s deadline exceeded", err, took)
	}
	if took > 1900*time.Millisecond {
		t.Errorf("Count took %s, want about its 1 s deadline", took)
	}
}

// One client (serve's, shared by concurrent pages) has at most
// MaxConcurrentQueries queries in flight.
func TestQueriesConcurrencyBounded(t *testing.T) {
	var now, most atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := now.Add(1)
		defer now.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := count(context.Background(), c, from, from.AddDate(0, 1, 0)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > MaxConcurrentQueries || m < 1 {
		t.Errorf("%d queries in flight at once, want at most %d", m, MaxConcurrentQueries)
	}
}

// An answer beyond MaxSeries, or an endless one, is an error once the
// bound is passed, read as it arrives.
func TestAnswerBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(w http.ResponseWriter)
		want  string
	}{
		{"series", func(w http.ResponseWriter) {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
			for i := range MaxSeries + 1 {
				if i > 0 {
					fmt.Fprint(w, ",")
				}
				fmt.Fprint(w, `{"metric":{},"value":[1,"1"]}`)
			}
			fmt.Fprint(w, `]}}`)
		}, "more than 200000 series"},
		{"bytes", func(w http.ResponseWriter) {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"`)
			chunk := strings.Repeat("x", 1<<20)
			for range MaxResponseBytes>>20 + 2 {
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
		}, "larger than 67108864 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.write(w) }))
			defer srv.Close()
			c, err := NewClient(srv.URL, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			if _, err := count(context.Background(), c, from, from.AddDate(0, 1, 0)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}
