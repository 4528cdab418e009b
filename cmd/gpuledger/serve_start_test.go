package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// serve with a file ledger that is not there refuses to start, naming it,
// instead of answering 503 "try again shortly" forever.
func TestServeRefusesAMissingLedgerFile(t *testing.T) {
	_, prices := serveFixture(t)
	missing := filepath.Join(t.TempDir(), "nope.db")
	var out bytes.Buffer
	err := runServe(context.Background(), []string{"--ledger", missing, "--prices", prices, "--listen", "127.0.0.1:0"}, &out)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("serve --ledger %s: %v", missing, err)
	}
	if out.Len() != 0 {
		t.Errorf("serve printed %q before refusing", out.String())
	}
}

// serve on an address another process holds fails without first saying it
// serves there.
func TestServeOnATakenPortSaysNothingFirst(t *testing.T) {
	db, prices := serveFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out bytes.Buffer
	err = runServe(context.Background(), []string{"--ledger", db, "--prices", prices, "--listen", ln.Addr().String(), "--quota=false"}, &out)
	if err == nil || !strings.Contains(err.Error(), "cannot listen") {
		t.Fatalf("serve on a taken port: %v", err)
	}
	if strings.Contains(out.String(), "Serving") {
		t.Errorf("serve said %q, then failed to listen", out.String())
	}
}
