package tokencost

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeProm answers each token query from a table keyed by metric name,
// through the real client and HTTP: only the server side is scripted.
func fakeProm(t *testing.T, answers map[string]string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		q := r.Form.Get("query")
		for name, result := range answers {
			if strings.Contains(q, "increase("+name+"[") {
				fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, result)
				return
			}
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func series(labels string, v string) string {
	return `{"metric":{` + labels + `},"value":[1700000000,"` + v + `"]}`
}

// A pod serving two models has its cost split by token share; a pod that
// exports both vLLM's and NIM's names is counted once, as vLLM; a pod with
// tokens but no GPU is counted as unpriced.
func TestJoinSplitsAndCountsOnce(t *testing.T) {
	c := fakeProm(t, map[string]string{
		"vllm:prompt_tokens_total": series(`"namespace":"a","pod":"p-0","model_name":"x"`, "300") + "," +
			series(`"namespace":"a","pod":"p-0","model_name":"y"`, "100") + "," +
			series(`"namespace":"cpu","pod":"c-0","model_name":"x"`, "5"),
		"vllm:generation_tokens_total": series(`"namespace":"a","pod":"p-0","model_name":"x"`, "100") + "," +
			series(`"namespace":"a","pod":"p-0","model_name":"y"`, "0"),
		// NIM's unprefixed names on the same pod: must not add.
		"prompt_tokens_total": series(`"namespace":"a","pod":"p-0","model_name":"x"`, "999"),
		// No pod label: not joinable, ignored.
		"sglang:prompt_tokens_total": series(`"namespace":"a","model_name":"z"`, "7"),
	})
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	toks, err := countTokens(context.Background(), c, from, from.AddDate(0, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	costs := map[podKey]*big.Rat{{"a", "p-0"}: big.NewRat(10, 1)}
	got, err := join("prom", from, "allocated", toks, costs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Unpriced != 1 || len(got.Rows) != 2 {
		t.Fatalf("unpriced %d, rows %+v", got.Unpriced, got.Rows)
	}
	// x: (300+100)/500 of 10 = 8, y: 100/500 = 2.
	x, y := got.Rows[0], got.Rows[1]
	if x.Model != "x" || x.Server != "vllm" || x.Workload != "p" || x.Cost.Cmp(big.NewRat(8, 1)) != 0 || x.InputTokens != 300 || x.OutputTokens != 100 {
		t.Errorf("x: %+v", x)
	}
	if x.PerMillionInput.Cmp(big.NewRat(8_000_000, 300)) != 0 || x.PerMillionOutput.Cmp(big.NewRat(8_000_000, 100)) != 0 ||
		x.PerMillion.Cmp(big.NewRat(8_000_000, 400)) != 0 {
		t.Errorf("x per million: %v %v %v", x.PerMillionInput, x.PerMillionOutput, x.PerMillion)
	}
	if y.Model != "y" || y.Cost.Cmp(big.NewRat(2, 1)) != 0 || y.PerMillionOutput != nil || y.PerMillionInput.Cmp(big.NewRat(2_000_000, 100)) != 0 {
		t.Errorf("y: %+v", y)
	}
}

// The query counts a month's increase at the period's end, by pod and
// model where the server labels it.
func TestTokenQuery(t *testing.T) {
	if got, want := TokenQuery("vllm:prompt_tokens_total", "model_name", 2592000),
		"sum by (namespace, pod, model_name) (increase(vllm:prompt_tokens_total[2592000s]))"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := TokenQuery("tgi_request_input_length_sum", "", 60), "sum by (namespace, pod) (increase(tgi_request_input_length_sum[60s]))"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Prometheus unreachable, refusing, or answering what is not a vector of
// finite counts: a clear error naming what, never a silent zero.
func TestPrometheusErrors(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c, err := NewClient("http://127.0.0.1:1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Query(ctx, "up", at); err == nil || !strings.Contains(err.Error(), "cannot query Prometheus http://127.0.0.1:1") {
		t.Errorf("unreachable: %v", err)
	}
	for _, bad := range []string{"", "ftp://x", "http://", "http://x/?q=1", "::"} {
		if _, err := NewClient(bad, 0); err == nil {
			t.Errorf("NewClient(%q) accepted", bad)
		}
	}
	c, err = NewClient("http://user:secret@x:9090", 0)
	if err != nil || strings.Contains(c.String(), "secret") {
		t.Errorf("client %v shows its password (%v)", c, err)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"status":"error","errorType":"bad_data","error":"parse error"}`, "bad_data: parse error"},
		{`{"status":"success","data":{"resultType":"matrix","result":[]}}`, `"matrix", want a vector`},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}}`, "want a finite count"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"-3"]}]}}`, "want a finite count"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}`, "2"},
		{`<html>`, "cannot parse"},
	} {
		if _, err := parseVector([]byte(tc.body), 200, "q"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}

func FuzzParseVector(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"p"},"value":[1,"3"]}]}}`))
	f.Add([]byte(`{"status":"error"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := parseVector(body, 200, "q")
		if err != nil {
			return
		}
		for _, x := range s {
			if !(x.Value >= 0) || math.IsInf(x.Value, 0) {
				t.Fatalf("accepted value %v", x.Value)
			}
		}
	})
}
