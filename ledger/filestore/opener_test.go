package filestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/ledger"
)

func TestOpenDispatchesAndScrubs(t *testing.T) {
	ctx := context.Background()
	cause := errors.New("auth failed for user u with password hunter22")
	openers := map[string]ledger.Opener{
		ledger.SchemeClickHouse: func(ctx context.Context, d ledger.DSN) (ledger.Store, error) {
			if d.Host != "ch" || d.Password != "hunter22" {
				return nil, fmt.Errorf("opener got %+v", d)
			}
			return nil, cause
		},
	}
	_, err := ledger.Open(ctx, "clickhouse://u:hunter22@ch/db", openers)
	if err == nil || strings.Contains(err.Error(), "hunter22") || !errors.Is(err, cause) {
		t.Fatalf("Open error %q: want the cause wrapped with the password scrubbed", err)
	}
	if _, err := ledger.Open(ctx, "x.db", openers); err == nil || !strings.Contains(err.Error(), "file ledgers are not supported") {
		t.Fatalf("missing opener: %v", err)
	}
	openers[ledger.SchemeFile] = Opener(FileOptions{})
	st, err := ledger.Open(ctx, "file:"+t.TempDir()+"/l.db", openers)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*FileStore); !ok {
		t.Fatalf("file DSN opened a %T", st)
	}
	st.Close()
}
