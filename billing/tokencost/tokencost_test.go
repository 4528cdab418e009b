package tokencost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
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
	toks, ns, err := countTokens(context.Background(), c, from, from.AddDate(0, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	costs := map[podKey]*big.Rat{{"a", "p-0"}: big.NewRat(10, 1)}
	got, err := join("prom", from, "allocated", toks, ns, costs)
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
		{`{"status":"error","errorType":"bad_data","error":"parse error"}`, `"bad_data": "parse error"`},
		{`{"status":"success","data":{"resultType":"matrix","result":[]}}`, `"matrix", want a vector`},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"many"]}]}}`, `value "many" is not a number`},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,3]}]}}`, "not a string"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}`, "2"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}`, "no value"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":null}]}}`, "0 value fields"},
		{`{"status":"success","data":{"resultType":"vector","result":[]}} {}`, "data after the answer"},
		{`{"status":"success","data":{"resultType":"vector"}}`, "want a vector"},
		{`<html>`, "cannot parse"},
	} {
		if _, err := parseVector([]byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
	// NaN, infinities and negative counts are a tenant's numbers, not
	// Prometheus answering garbage: the parser hands them over, and the
	// count drops them (TestAbsurdCounts).
	s, err := parseVector([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]},{"metric":{},"value":[1,"-Inf"]},{"metric":{},"value":[1,"1e400"]},{"metric":{},"value":[1,"-3"]}]}}`))
	if err != nil || len(s) != 4 || !math.IsNaN(s[0].Value) || !math.IsInf(s[1].Value, -1) || !math.IsInf(s[2].Value, 1) || s[3].Value != -3 {
		t.Errorf("absurd values: %+v, %v", s, err)
	}
}

// parseVector decodes a whole answer the way Client.Query does.
func parseVector(body []byte) ([]Sample, error) {
	var out []Sample
	err := decodeVector(bytes.NewReader(body), 200, "q", sampleElem(&out))
	return out, err
}

// The parser never panics or hangs on an answer, holds at most MaxSeries
// series, and the two decoders of a series (all labels for Query, the
// token labels for a count) agree; whatever values it hands over, the
// section is built without an error and its counts are within bounds.
func FuzzParseVector(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"p"},"value":[1,"3"]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"namespace":"a","pod":"p-1","model_name":"m"},"value":[1,"1e308"]},{"metric":{"namespace":"a","pod":"p-1","model_name":"m"},"value":[1,"5e-324"]},{"metric":{"namespace":"a","pod":"p-2","model_name":"m"},"value":[1,"7"]}]}}`))
	f.Add([]byte(`{"status":"error"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := parseVector(body)
		if err != nil {
			return
		}
		if len(s) > MaxSeries {
			t.Fatalf("%d series accepted", len(s))
		}
		var streamed []Sample
		err = decodeVector(bytes.NewReader(body), 200, "q", func(dec *json.Decoder) (float64, error) {
			var e vectorElem[tokenLabels]
			if err := dec.Decode(&e); err != nil {
				return 0, err
			}
			v, err := e.value()
			streamed = append(streamed, Sample{Labels: map[string]string{"namespace": e.Metric.Namespace, "pod": e.Metric.Pod, "model_name": e.Metric.ModelName}, Value: v})
			return v, err
		})
		if err != nil || len(streamed) != len(s) {
			t.Fatalf("token decoder: %d series, %v; label decoder: %d", len(streamed), err, len(s))
		}
		for i := range s {
			if math.Float64bits(s[i].Value) != math.Float64bits(streamed[i].Value) {
				t.Fatalf("series %d: %v and %v", i, s[i].Value, streamed[i].Value)
			}
		}
		from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		toks, ns, err := countTokens(context.Background(), vectorQuerier(streamed), from, from.AddDate(0, 1, 0))
		if err != nil {
			t.Fatal(err)
		}
		costs := map[podKey]*big.Rat{}
		for k := range toks {
			costs[k] = big.NewRat(7, 3)
		}
		sec, err := join("prom", from, "allocated", toks, ns, costs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range sec.Rows {
			if !(r.InputTokens >= 0 && r.InputTokens <= MaxWorkloadTokens && r.OutputTokens >= 0 && r.OutputTokens <= MaxWorkloadTokens) {
				t.Fatalf("row %+v out of bounds", r)
			}
		}
		if len(sec.Notes) > report.MaxTokenNotes {
			t.Fatalf("%d notes", len(sec.Notes))
		}
	})
}

// vectorQuerier answers every query with the same series: a Querier
// without Prometheus for the fuzzer, whose input is the answer itself.
type vectorQuerier []Sample

func (v vectorQuerier) Query(context.Context, string, time.Time) ([]Sample, error) { return v, nil }
func (v vectorQuerier) String() string                                             { return "fuzz" }
