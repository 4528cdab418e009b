package tokencost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Bounds on what a Prometheus answer may cost us.
const (
	// DefaultTimeout bounds each query (Prometheus's own default query
	// timeout is 2 minutes; a month of token counters answers in well
	// under a second, BENCHMARKS.md).
	DefaultTimeout = 60 * time.Second
	// MaxResponseBytes bounds one answer's body.
	MaxResponseBytes = 64 << 20
	// MaxSeries bounds the series of one answer (one per pod and model).
	MaxSeries = 200_000
)

// Client queries one Prometheus server's HTTP API.
type Client struct {
	base    *url.URL
	http    *http.Client
	timeout time.Duration
}

// NewClient checks rawURL (http or https, a host, no query) and returns
// a client whose queries each time out after timeout (DefaultTimeout when
// zero or negative).
func NewClient(rawURL string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("cannot use Prometheus URL %q: %w", rawURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("cannot use Prometheus URL %q: want http(s)://host[:port][/path]", rawURL)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{base: u, http: &http.Client{}, timeout: timeout}, nil
}

// String is the URL without credentials, for reports and messages.
func (c *Client) String() string { return c.base.Redacted() }

// Sample is one element of an instant vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query evaluates expr at t (POST /api/v1/query) and returns the vector.
func (c *Client) Query(ctx context.Context, expr string, t time.Time) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	form := url.Values{}
	form.Set("query", expr)
	form.Set("time", strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64))
	form.Set("timeout", strconv.FormatFloat(c.timeout.Seconds(), 'f', -1, 64)+"s")
	endpoint := c.base.JoinPath("api", "v1", "query")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("cannot query Prometheus %s: %w", c, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot query Prometheus %s (is it reachable?): %w", c, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read Prometheus %s's answer: %w", c, err)
	}
	if len(body) > MaxResponseBytes {
		return nil, fmt.Errorf("cannot read Prometheus %s's answer to %s: larger than %d bytes", c, expr, MaxResponseBytes)
	}
	return parseVector(body, resp.StatusCode, expr)
}

// parseVector reads a /api/v1/query answer that must be an instant vector.
func parseVector(body []byte, status int, expr string) ([]Sample, error) {
	var a struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []json.RawMessage `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("cannot parse Prometheus's answer to %s (HTTP %d): %w", expr, status, err)
	}
	if a.Status != "success" {
		return nil, fmt.Errorf("prometheus refused %s (HTTP %d): %s: %s", expr, status, a.ErrorType, a.Error)
	}
	if a.Data.ResultType != "vector" {
		return nil, fmt.Errorf("prometheus answered %s with a %q, want a vector", expr, a.Data.ResultType)
	}
	if len(a.Data.Result) > MaxSeries {
		return nil, fmt.Errorf("prometheus answered %s with %d series, more than %d", expr, len(a.Data.Result), MaxSeries)
	}
	out := make([]Sample, 0, len(a.Data.Result))
	for i, r := range a.Data.Result {
		if len(r.Value) != 2 {
			return nil, fmt.Errorf("prometheus answered %s: series %d has %d value fields, want 2", expr, i, len(r.Value))
		}
		var s string
		if err := json.Unmarshal(r.Value[1], &s); err != nil {
			return nil, fmt.Errorf("prometheus answered %s: series %d: value is not a string: %w", expr, i, err)
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("prometheus answered %s: series %d: value %q: %w", expr, i, s, err)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("prometheus answered %s: series %v has value %v, want a finite count >= 0", expr, r.Metric, v)
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}

var errNoPrometheus = errors.New("no Prometheus client")
