package web

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
)

// FuzzMonthPath: the month in a URL comes from outside. Any file name is
// a month of [from, to) or a 400/404 with a message; never a panic or
// another status.
func FuzzMonthPath(f *testing.F) {
	for _, s := range []string{"2026-11", "2026-11.csv", "2026-11.focus.csv", "2026-13.json", "0000-01", "9999-12", "2026-1", "../etc", "2026-11.csv.json", ""} {
		f.Add(s)
	}
	book, err := pricebook.Parse("b.yaml", []byte(testBook))
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{}
	f.Fuzz(func(t *testing.T, name string) {
		month, _ := splitFile(name)
		from, to, err := s.period(month, book, testNow)
		var he *httpError
		switch {
		case err == nil:
			if !from.Before(to) || !from.Before(testNow) || to.Sub(from) > 32*24*time.Hour || to.Sub(from) < 27*24*time.Hour {
				t.Fatalf("%q: [%s, %s) is not a started month", name, from, to)
			}
		case errors.As(err, &he):
			if (he.code != http.StatusBadRequest && he.code != http.StatusNotFound) || he.msg == "" {
				t.Fatalf("%q: %d %q", name, he.code, he.msg)
			}
		default:
			t.Fatalf("%q: %v", name, err)
		}
	})
}
