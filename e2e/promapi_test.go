package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// promAPI is a small client of Prometheus's HTTP API (v1).
type promAPI struct {
	base string
}

// sample is one series of an instant vector, or the last point of a range
// series.
type sample struct {
	Metric map[string]string
	Value  float64
}

type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

func (p promAPI) get(ctx context.Context, path string, params url.Values, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot call %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("%s answered %s: %.200s", path, resp.Status, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, r.ErrorType, r.Error)
	}
	if err := json.Unmarshal(r.Data, into); err != nil {
		return fmt.Errorf("cannot decode %s: %w", path, err)
	}
	return nil
}

// query evaluates an instant query at t; it must return a vector or a
// scalar (as one sample without labels).
func (p promAPI) query(ctx context.Context, expr string, t time.Time) ([]sample, error) {
	var d struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	params := url.Values{"query": {expr}, "time": {formatTime(t)}}
	if err := p.get(ctx, "/api/v1/query", params, &d); err != nil {
		return nil, err
	}
	switch d.ResultType {
	case "vector":
		var vs []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(d.Result, &vs); err != nil {
			return nil, err
		}
		out := make([]sample, 0, len(vs))
		for _, v := range vs {
			f, err := parseValue(v.Value[1])
			if err != nil {
				return nil, err
			}
			out = append(out, sample{Metric: v.Metric, Value: f})
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(d.Result, &v); err != nil {
			return nil, err
		}
		f, err := parseValue(v[1])
		return []sample{{Value: f}}, err
	default:
		return nil, fmt.Errorf("query %q returned a %s", expr, d.ResultType)
	}
}

// queryRange evaluates a range query and returns, per series, its last
// point.
func (p promAPI) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]sample, error) {
	var d struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	params := url.Values{"query": {expr}, "start": {formatTime(start)}, "end": {formatTime(end)}, "step": {step.String()}}
	if err := p.get(ctx, "/api/v1/query_range", params, &d); err != nil {
		return nil, err
	}
	var out []sample
	for _, s := range d.Result {
		if len(s.Values) == 0 {
			continue
		}
		f, err := parseValue(s.Values[len(s.Values)-1][1])
		if err != nil {
			return nil, err
		}
		out = append(out, sample{Metric: s.Metric, Value: f})
	}
	return out, nil
}

// alert is one entry of /api/v1/alerts.
type alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

func (p promAPI) alerts(ctx context.Context) ([]alert, error) {
	var d struct {
		Alerts []alert `json:"alerts"`
	}
	err := p.get(ctx, "/api/v1/alerts", url.Values{}, &d)
	return d.Alerts, err
}

// ruleState is one rule of /api/v1/rules.
type ruleState struct {
	Name      string `json:"name"`
	Query     string `json:"query"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
	Type      string `json:"type"`
}

func (p promAPI) rules(ctx context.Context) ([]ruleState, error) {
	var d struct {
		Groups []struct {
			Rules []ruleState `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get(ctx, "/api/v1/rules", url.Values{}, &d); err != nil {
		return nil, err
	}
	var out []ruleState
	for _, g := range d.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

func parseValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	return strconv.ParseFloat(s, 64)
}
