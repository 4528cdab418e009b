package chcheck_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/dashboards/dashprices"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/dashboards/chcheck"
)

// shippedBook is deploy/prices.yaml, the price book the chart ships,
// with its policy and idle rule replaced, and with odd rates (many
// decimals, so that models' totals need the rounding line) when asked.
func shippedBook(t testing.TB, policy, idle string, odd bool) *pricebook.Book {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data = regexp.MustCompile(`(?m)^policy: *\w+`).ReplaceAll(data, []byte("policy: "+policy))
	data = regexp.MustCompile(`(?m)^idle: *\w+`).ReplaceAll(data, []byte("idle: "+idle))
	if odd {
		for old, rate := range map[string]string{"A100-SXM4-80GB: 2.40": "A100-SXM4-80GB: 2.4037", "H100-SXM5-80GB: 4.10": "H100-SXM5-80GB: 4.123456789",
			"defaultRate: 2.00": "defaultRate: 1.999999999999"} {
			if !bytes.Contains(data, []byte(old)) {
				t.Fatalf("deploy/prices.yaml has no %q", old)
			}
			data = bytes.Replace(data, []byte(old), []byte(rate), 1)
		}
	}
	b, err := pricebook.Parse("prices.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func minor(t testing.TB, v any, unit int) int64 {
	t.Helper()
	return int64(math.Round(asFloat(t, v) * math.Pow10(unit)))
}

// TestCostPanelsEqualReport: for every policy and idle rule, the cost
// panels show, to the minor unit, what `gpuledger report` computes for the
// same month from the same ClickHouse ledger: every team's charge, share
// of uncharged capacity and total, and the invoice's total, platform and
// rounding lines.
func TestCostPanelsEqualReport(t *testing.T) {
	db := simulatedMonth(t)
	b := loadBoard(t)
	for _, tc := range []struct {
		policy, idle string
		odd          bool
	}{
		{"allocation", "shared", false}, // the chart's deploy/prices.yaml
		{"allocation", "platform", false},
		{"usage", "shared", false},
		{"usage", "platform", false},
		{"allocation", "shared", true},
		{"allocation", "platform", true},
		{"usage", "shared", true},
		{"usage", "platform", true},
	} {
		t.Run(fmt.Sprintf("%s-%s-odd=%v", tc.policy, tc.idle, tc.odd), func(t *testing.T) {
			book := shippedBook(t, tc.policy, tc.idle, tc.odd)
			want := checkCostPanels(t, db, b, book)
			t.Logf("%s/%s: total %d, platform %d, rounding %d, %d teams", tc.policy, tc.idle, want.Total, want.Platform, want.Rounding, len(want.Teams))
		})
	}
}

// TestCostPanelsCarryTheRoundingLine: with rates whose models' rounded
// totals do not add up to the rounded total, the invoice panel's rounding
// line is the report's (found by trying default rates, the report being
// the judge).
func TestCostPanelsCarryTheRoundingLine(t *testing.T) {
	db := simulatedMonth(t)
	b := loadBoard(t)
	ctx := context.Background()
	for i := 1; i <= 60; i++ {
		book := shippedBook(t, "usage", "shared", true)
		rate, err := pricebook.ParseRate(fmt.Sprintf("1.%07d", 1000003*i%10000000))
		if err != nil {
			t.Fatal(err)
		}
		book.DefaultRate = rate
		r, err := report.Build(ctx, db.store, book, monthStart, monthEnd)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rounding == 0 {
			continue
		}
		want := checkCostPanels(t, db, b, book)
		t.Logf("default rate %s: rounding line %d", rate, want.Rounding)
		return
	}
	t.Fatal("no default rate among 60 gave a rounding line")
}

// checkCostPanels stores book as the newest and compares the cost panels
// with the report of the simulated month, to the minor unit, on the 18.16
// server and on ClickHouse 26.7 (chDB, a copy of the same ledger).
func checkCostPanels(t *testing.T, db *ledgerDB, b board, book *pricebook.Book) *report.Report {
	t.Helper()
	ctx := context.Background()
	// Each load is a newer version: the panels use the newest.
	if err := db.store.WritePrices(ctx, dashprices.Of(book), time.Now()); err != nil {
		t.Fatal(err)
	}
	want, err := report.Build(ctx, db.store, book, monthStart, monthEnd)
	if err != nil {
		t.Fatal(err)
	}
	if want.Total == 0 || len(want.Teams) < 4 {
		t.Fatalf("report of the simulated month: total %d, %d teams", want.Total, len(want.Teams))
	}
	t.Run("18.16", func(t *testing.T) { compareCostPanels(t, db.run, b, book, want) })
	t.Run("26.7", func(t *testing.T) {
		c := chdbMonth(t)
		c.syncPrices(t)
		compareCostPanels(t, c.run, b, book, want)
	})
	return want
}

// compareCostPanels compares the cost panels, run by run, with want.
func compareCostPanels(t *testing.T, run runner, b board, book *pricebook.Book, want *report.Report) {
	unit := book.Currency.MinorUnit
	cols, rows := run(t, b.panelSQL(t, "Cost per team and month"), month(), all())
	got := map[string][3]int64{}
	for _, r := range rows {
		if m := r[col(t, cols, "Month")]; asString(m)[:10] != "2026-10-01" {
			t.Errorf("cost row for month %v, want only 2026-10", m)
		}
		got[asString(r[col(t, cols, "Team")])] = [3]int64{
			minor(t, r[col(t, cols, "Charge")], unit),
			minor(t, r[col(t, cols, "Share of uncharged capacity")], unit),
			minor(t, r[col(t, cols, "Cost")], unit)}
	}
	if len(got) != len(want.Teams) {
		t.Errorf("panel shows %d teams, report has %d", len(got), len(want.Teams))
	}
	shares := int64(0)
	for _, tm := range want.Teams {
		shares += tm.IdleShare
		w := [3]int64{tm.Charge, tm.IdleShare, tm.Total}
		if got[tm.Team] != w {
			t.Errorf("team %q: panel charge/share/total %v, report %v (minor units)", tm.Team, got[tm.Team], w)
		}
	}

	if (book.Idle == pricebook.IdleShared) != (shares > 0) {
		t.Errorf("idle %s: teams' shares of uncharged capacity add up to %d: the month does not exercise the rule", book.Idle, shares)
	}

	cols, rows = run(t, b.panelSQL(t, "Invoice per month"), month(), all())
	if len(rows) != 1 {
		t.Fatalf("invoice panel: %d rows, want 1", len(rows))
	}
	r := rows[0]
	var teams int64
	for _, tm := range want.Teams {
		teams += tm.Total
	}
	for name, w := range map[string]int64{"Total": want.Total, "Platform (uncharged capacity)": want.Platform,
		"Rounding": want.Rounding, "Teams": teams} {
		if g := minor(t, r[col(t, cols, name)], unit); g != w {
			t.Errorf("invoice %s: panel %d, report %d", name, g, w)
		}
	}
	if g := asString(r[col(t, cols, "Policy")]); g != string(book.Policy) {
		t.Errorf("invoice policy %q, want %q", g, string(book.Policy))
	}
}

// A newest price book in another time zone cuts months elsewhere than the
// dashboards do: the money panels fail loudly instead of showing other
// amounts than the report.
func TestCostPanelsRefuseANonUTCBook(t *testing.T) {
	db := simulatedMonth(t)
	b := loadBoard(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	la, err := pricebook.Parse("prices.yaml", regexp.MustCompile(`(?m)^timezone: *\S+`).ReplaceAll(data, []byte("timezone: America/Los_Angeles")))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.store.WritePrices(ctx, dashprices.Of(la), time.Now()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.store.WritePrices(ctx, dashprices.Of(shippedBook(t, "allocation", "shared", false)), time.Now()); err != nil {
			t.Error(err)
		}
	})
	for _, title := range []string{"Cost per team and month", "Invoice per month", "Capacity no container used, per month and model"} {
		q, err := chcheck.Expand(b.panelSQL(t, title), month(), all())
		if err != nil {
			t.Fatal(err)
		}
		if _, rows, err := db.query(q); err == nil || !strings.Contains(err.Error(), "throwIf") {
			t.Errorf("%s with a Los Angeles book: %d rows, err %v", title, len(rows), err)
		}
	}
}
