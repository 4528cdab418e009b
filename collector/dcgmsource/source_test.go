package dcgmsource

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type fakeClient struct {
	vals    []Values
	err     error
	watched time.Duration
	closed  bool
}

var _ Client = (*fakeClient)(nil)

func (f *fakeClient) Watch(_ context.Context, p time.Duration) error { f.watched = p; return f.err }
func (f *fakeClient) Read(context.Context) ([]Values, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.vals, nil
}
func (f *fakeClient) Close() error { f.closed = true; return nil }

func logger() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

const unavailableMsg = "DCGM unavailable, running on NVML alone"

func TestSourceWithoutClient(t *testing.T) {
	log, buf := logger()
	s := NewSource(nil, log)
	ctx := context.Background()
	if err := s.Watch(ctx, time.Second); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	for range 3 {
		vals, err := s.Read(ctx)
		if vals != nil || err != nil {
			t.Fatalf("Read = %v, %v; want nothing", vals, err)
		}
	}
	if s.Available() {
		t.Fatal("Available without a client")
	}
	if n := strings.Count(buf.String(), unavailableMsg); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, buf)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSourceFailingClientLogsOncePerOutage(t *testing.T) {
	log, buf := logger()
	boom := errors.New("connection refused")
	c := &fakeClient{err: boom, vals: []Values{gpuVal(0, 0.5)}}
	s := NewSource(c, log)
	ctx := context.Background()

	for range 3 {
		if _, err := s.Read(ctx); !errors.Is(err, boom) {
			t.Fatalf("Read error %v, want it to wrap %v", err, boom)
		}
	}
	if s.Available() || strings.Count(buf.String(), unavailableMsg) != 1 {
		t.Fatalf("available=%v, log:\n%s", s.Available(), buf)
	}

	c.err = nil
	vals, err := s.Read(ctx)
	if err != nil || len(vals) != 1 || !s.Available() {
		t.Fatalf("after recovery: %v, %v, available=%v", vals, err, s.Available())
	}
	if !strings.Contains(buf.String(), "DCGM available again") {
		t.Fatalf("recovery not logged:\n%s", buf)
	}

	c.err = boom
	_, _ = s.Read(ctx)
	_, _ = s.Read(ctx)
	if n := strings.Count(buf.String(), unavailableMsg); n != 2 {
		t.Fatalf("second outage: logged %d times in all, want 2:\n%s", n, buf)
	}
}

func TestSourceWatchAndClosePassThrough(t *testing.T) {
	c := &fakeClient{}
	s := NewSource(c, nil)
	if err := s.Watch(context.Background(), 2*time.Second); err != nil || c.watched != 2*time.Second {
		t.Fatalf("Watch: %v, client saw %v", err, c.watched)
	}
	if err := s.Close(); err != nil || !c.closed {
		t.Fatalf("Close: %v, closed=%v", err, c.closed)
	}
}
