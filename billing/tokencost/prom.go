package tokencost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Bounds on what a Prometheus answer may cost us.
const (
	// DefaultTimeout bounds all of one Count's queries together (and so
	// each of them; Prometheus's own default query timeout is 2 minutes,
	// and a month of token counters answers in well under a second,
	// BENCHMARKS.md).
	DefaultTimeout = 60 * time.Second
	// MaxResponseBytes bounds one answer's body; it is decoded as it
	// arrives, never held whole.
	MaxResponseBytes = 64 << 20
	// MaxSeries bounds the series of one answer (one per pod and model).
	MaxSeries = 200_000
	// MaxConcurrentQueries bounds the queries one Client has in flight,
	// across every Count that shares it (serve's concurrent pages), and
	// the queries one Count runs at once.
	MaxConcurrentQueries = 2
	// maxErrorText bounds the text of Prometheus's own error we repeat.
	maxErrorText = 300
)

// Client queries one Prometheus server's HTTP API.
type Client struct {
	base    *url.URL
	http    *http.Client
	timeout time.Duration
	// slots holds a token per query in flight (MaxConcurrentQueries).
	slots chan struct{}
}

// NewClient checks rawURL (http or https, a host, no query) and returns
// a client whose Counts time out after timeout (DefaultTimeout when zero
// or negative). Its errors never repeat the URL's userinfo or query.
func NewClient(rawURL string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Not wrapped: the parser's errors quote the URL or the piece it
		// choked on, which may be a password ("http://user:pa/ss@host"
		// reads as an invalid port ":pa").
		return nil, errors.New("cannot use the Prometheus URL (not repeated here): it does not parse as a URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("cannot use Prometheus URL %s: want http(s)://host[:port][/path], without a query or fragment", redactURL(rawURL))
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{base: u, http: &http.Client{}, timeout: timeout, slots: make(chan struct{}, MaxConcurrentQueries)}, nil
}

// redactURL is raw without what may be a credential: its userinfo is
// dropped and its query and fragment are replaced by "?REDACTED"; a URL
// that does not parse is not repeated at all.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL, not repeated)"
	}
	redacted := u.RawQuery != "" || u.ForceQuery || u.Fragment != ""
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	s := u.String()
	if redacted {
		s += "?REDACTED"
	}
	return s
}

// String is the URL without credentials, for reports and messages.
func (c *Client) String() string { return redactURL(c.base.String()) }

// Timeout is the bound on all of one Count's queries together.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Sample is one element of an instant vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query evaluates expr at t (POST /api/v1/query) and returns the vector.
// Values are returned as Prometheus wrote them, NaN and infinities
// included: judging them is the caller's.
func (c *Client) Query(ctx context.Context, expr string, t time.Time) ([]Sample, error) {
	var out []Sample
	if err := c.stream(ctx, expr, t, sampleElem(&out)); err != nil {
		return nil, err
	}
	return out, nil
}

// sampleElem decodes a series with all its labels onto *out.
func sampleElem(out *[]Sample) func(*json.Decoder) (float64, error) {
	return func(dec *json.Decoder) (float64, error) {
		var e vectorElem[map[string]string]
		if err := dec.Decode(&e); err != nil {
			return 0, err
		}
		v, err := e.value()
		if err == nil {
			*out = append(*out, Sample{Labels: e.Metric, Value: v})
		}
		return v, err
	}
}

// tokenLabels are the labels of a token query's series; the query groups
// by them, so a conforming answer carries no others.
type tokenLabels struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	ModelName string `json:"model_name"`
	Model     string `json:"model"`
}

func (l *tokenLabels) model(label string) string {
	switch label {
	case "model_name":
		return l.ModelName
	case "model":
		return l.Model
	}
	return ""
}

// eachToken calls fn for each series of a token query's answer, decoding
// only the labels a token count reads: a large answer costs its
// aggregate, not its text.
func (c *Client) eachToken(ctx context.Context, expr string, t time.Time, modelLabel string, fn func(namespace, pod, model string, v float64)) error {
	// One element, reused: its strings are fresh each time, the struct
	// need not be.
	var e vectorElem[tokenLabels]
	return c.stream(ctx, expr, t, func(dec *json.Decoder) (float64, error) {
		e = vectorElem[tokenLabels]{}
		if err := dec.Decode(&e); err != nil {
			return 0, err
		}
		v, err := e.value()
		if err == nil {
			fn(e.Metric.Namespace, e.Metric.Pod, e.Metric.model(modelLabel), v)
		}
		return v, err
	})
}

// stream evaluates expr at t and decodes the answer as it arrives, up to
// MaxResponseBytes and MaxSeries, calling elem for each series.
func (c *Client) stream(ctx context.Context, expr string, t time.Time, elem func(*json.Decoder) (float64, error)) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return fmt.Errorf("cannot query Prometheus %s: waiting for a free query slot: %w", c, ctx.Err())
	}
	// Prometheus stops evaluating when our deadline passes, too.
	left := c.timeout
	if d, ok := ctx.Deadline(); ok {
		left = max(time.Until(d), time.Millisecond)
	}
	form := url.Values{}
	form.Set("query", expr)
	form.Set("time", strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64))
	form.Set("timeout", strconv.FormatInt(left.Milliseconds(), 10)+"ms")
	endpoint := c.base.JoinPath("api", "v1", "query")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("cannot query Prometheus %s: %w", c, unwrapURL(err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot query Prometheus %s (is it reachable?): %w", c, unwrapURL(err))
	}
	defer resp.Body.Close()
	body := &cappedReader{r: resp.Body, left: MaxResponseBytes}
	if err := decodeVector(body, resp.StatusCode, expr, elem); err != nil {
		if body.over {
			return fmt.Errorf("cannot read Prometheus %s's answer to %s: larger than %d bytes", c, expr, MaxResponseBytes)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("cannot read Prometheus %s's answer to %s: %w", c, expr, ctx.Err())
		}
		return fmt.Errorf("cannot read Prometheus %s's answer: %w", c, unwrapURL(err))
	}
	return nil
}

// unwrapURL drops the url.Error around a transport error: it repeats the
// request's URL, userinfo included.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

var errTooLarge = errors.New("answer too large")

// cappedReader reads at most left bytes, then fails: a body is never read
// past the cap, and the error says why.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One more byte tells a body of exactly the cap from a larger one.
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			c.over = true
			return 0, errTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// vectorElem is one series of an instant vector: its labels, read into
// M, and its [time, "value"] pair.
type vectorElem[M any] struct {
	Metric M          `json:"metric"`
	Value  pointValue `json:"value"`
}

func (e *vectorElem[M]) value() (float64, error) {
	if !e.Value.set {
		return 0, errors.New("no value")
	}
	return e.Value.v, e.Value.err
}

// pointValue is a series' [time, "value"] pair, parsed in place: any
// float Prometheus writes, NaN and infinities included (the caller judges
// them); anything else is garbage, reported by value.
type pointValue struct {
	v   float64
	err error
	set bool
}

func (p *pointValue) UnmarshalJSON(b []byte) error {
	p.set = true
	p.v, p.err = parsePoint(b)
	return nil
}

// parsePoint reads `[<number>, "<float>"]` without allocating in the
// common case; other shapes go through encoding/json, to the same
// result.
func parsePoint(b []byte) (float64, error) {
	in := bytes.TrimSpace(b)
	if len(in) > 2 && in[0] == '[' && in[len(in)-1] == ']' {
		body := in[1 : len(in)-1]
		if i := bytes.IndexByte(body, ','); i > 0 {
			ts, val := bytes.TrimSpace(body[:i]), bytes.TrimSpace(body[i+1:])
			if isNumber(ts) && len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' && !bytes.ContainsAny(val[1:len(val)-1], "\\\"") {
				return parseValue(string(val[1 : len(val)-1]))
			}
		}
	}
	var fields []json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return 0, fmt.Errorf("value is not a [time, value] pair: %w", err)
	}
	if len(fields) != 2 {
		return 0, fmt.Errorf("%d value fields, want 2", len(fields))
	}
	var s string
	if err := json.Unmarshal(fields[1], &s); err != nil {
		return 0, fmt.Errorf("value is not a string: %w", err)
	}
	return parseValue(s)
}

// isNumber says whether b is one JSON number (its characters only: the
// decoder has checked the answer is JSON).
func isNumber(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	return true
}

func parseValue(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return v, nil // ±Inf or 0 as ParseFloat rounds it: the caller judges it
		}
		return 0, fmt.Errorf("value %s is not a number", quoteBounded(s))
	}
	return v, nil
}

// decodeVector reads a /api/v1/query answer that must be an instant
// vector, token by token: each series is handed to elem as it is read
// (which decodes it and returns its value), so an answer of MaxSeries
// series is never held whole. An answer that is not a successful vector
// is an error, whatever elem was handed before: the caller keeps nothing
// of a failed answer.
func decodeVector(r io.Reader, status int, expr string, elem func(*json.Decoder) (float64, error)) error {
	dec := json.NewDecoder(r)
	var (
		st, errType, errText, resultType string
		sawResult                        bool
	)
	garbage := func(err error) error {
		return fmt.Errorf("cannot parse Prometheus's answer to %s (HTTP %d): %w", expr, status, err)
	}
	if err := expectDelim(dec, '{'); err != nil {
		return garbage(err)
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return garbage(err)
		}
		switch key {
		case "status":
			err = dec.Decode(&st)
		case "errorType":
			err = dec.Decode(&errType)
		case "error":
			err = dec.Decode(&errText)
		case "data":
			err = decodeData(dec, expr, &resultType, &sawResult, elem)
		default:
			err = skipValue(dec)
		}
		if err != nil {
			return garbage(err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return garbage(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return garbage(errors.New("data after the answer"))
	}
	if st != "success" {
		return fmt.Errorf("prometheus refused %s (HTTP %d): %s: %s", expr, status, quoteBounded(errType), quoteBounded(errText))
	}
	if resultType != "vector" {
		return fmt.Errorf("prometheus answered %s with a %s, want a vector", expr, quoteBounded(resultType))
	}
	if !sawResult {
		return fmt.Errorf("prometheus answered %s with no result after its resultType, want a vector", expr)
	}
	return nil
}

func decodeData(dec *json.Decoder, expr string, resultType *string, sawResult *bool, elem func(*json.Decoder) (float64, error)) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return err
		}
		switch key {
		case "resultType":
			if err := dec.Decode(resultType); err != nil {
				return err
			}
		case "result":
			// Prometheus writes resultType first; a result of another
			// type (or of none yet) is not read as series.
			if *resultType != "vector" {
				if err := skipValue(dec); err != nil {
					return err
				}
				continue
			}
			*sawResult = true
			if err := expectDelim(dec, '['); err != nil {
				return err
			}
			for i := 0; dec.More(); i++ {
				if i == MaxSeries {
					return fmt.Errorf("more than %d series answer %s; bound the token series' cardinality (a scrape sample_limit on inference targets)", MaxSeries, expr)
				}
				if _, err := elem(dec); err != nil {
					return fmt.Errorf("series %d: %w", i, err)
				}
			}
			if err := expectDelim(dec, ']'); err != nil {
				return err
			}
		default:
			if err := skipValue(dec); err != nil {
				return err
			}
		}
	}
	return expectDelim(dec, '}')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, got %v", tok)
	}
	return k, nil
}

// skipValue reads past one value of any shape without keeping it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// quoteBounded quotes s, cut to maxErrorText bytes, with what does not
// print escaped: text from Prometheus or a tenant goes into errors and
// notes on one bounded line.
func quoteBounded(s string) string {
	if len(s) > maxErrorText {
		s = strings.ToValidUTF8(s[:maxErrorText], "") + "..."
	}
	return strconv.Quote(s)
}

// printable is s on one line of at most n bytes, for labels in notes.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "..."
	}
	return s
}

var errNoPrometheus = errors.New("no Prometheus client")
