package report

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// TestFOCUS14HasTheVersionsColumns: the same month written as FOCUS 1.3
// and 1.4, per line and per device. Each file passes its version's rules
// and fails the other's (1.3 needs ProviderName and PublisherName, 1.4
// removed them); 1.4's header is 1.3's without those two columns, and
// every other cell, the money included, is the same text.
func TestFOCUS14HasTheVersionsColumns(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	st := fileLedger(t, migFleet(t, from, to), nil)
	b := monthBook(t, "UTC", "allocation", "shared")
	for _, perDevice := range []bool{false, true} {
		r := mustBuild(t, st, b, from, to)
		if perDevice {
			if err := LoadDevices(context.Background(), st, r); err != nil {
				t.Fatal(err)
			}
		}
		var f13, f14 bytes.Buffer
		if err := WriteFOCUS(&f13, r); err != nil {
			t.Fatal(err)
		}
		r.FOCUSVersion = FOCUSVersion14
		if err := WriteFOCUS(&f14, r); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			data           []byte
			version, wrong string
		}{{f13.Bytes(), focusvalidate.Version13, focusvalidate.Version14}, {f14.Bytes(), focusvalidate.Version14, focusvalidate.Version13}} {
			if vs, err := focusvalidate.ValidateVersion(bytes.NewReader(c.data), c.version); err != nil || len(vs) > 0 {
				t.Errorf("per device %v: FOCUS %s file, %s rules: %v %v", perDevice, c.version, c.version, vs, err)
			}
			if vs, _ := focusvalidate.ValidateVersion(bytes.NewReader(c.data), c.wrong); len(vs) == 0 {
				t.Errorf("per device %v: FOCUS %s file passes the %s rules", perDevice, c.version, c.wrong)
			}
		}
		h13 := strings.Split(strings.SplitN(f13.String(), "\n", 2)[0], ",")
		h14 := strings.Split(strings.SplitN(f14.String(), "\n", 2)[0], ",")
		want := slices.DeleteFunc(slices.Clone(h13), func(c string) bool { return c == "ProviderName" || c == "PublisherName" })
		if !slices.Equal(h14, want) || len(h14) != len(h13)-2 || !slices.Contains(h14, "HostProviderName") {
			t.Errorf("per device %v: 1.4 header %v, want 1.3's %v without ProviderName and PublisherName", perDevice, h14, h13)
		}
		rows13, rows14 := readTable(t, f13.Bytes()), readTable(t, f14.Bytes())
		if len(rows13) != len(rows14) {
			t.Fatalf("per device %v: %d rows in 1.3, %d in 1.4", perDevice, len(rows13), len(rows14))
		}
		for i := range rows13 {
			if rows13[i]["ProviderName"] == "" || rows13[i]["PublisherName"] == "" {
				t.Errorf("per device %v row %d: 1.3 ProviderName %q, PublisherName %q", perDevice, i+1, rows13[i]["ProviderName"], rows13[i]["PublisherName"])
			}
			for _, col := range h14 {
				if rows13[i][col] != rows14[i][col] {
					t.Errorf("per device %v row %d: %s is %q in 1.3, %q in 1.4", perDevice, i+1, col, rows13[i][col], rows14[i][col])
				}
			}
		}
		// The JSON lines follow the version too.
		var jl bytes.Buffer
		if err := WriteFOCUSJSONL(&jl, r); err != nil {
			t.Fatal(err)
		}
		var first map[string]any
		if err := json.Unmarshal([]byte(strings.SplitN(jl.String(), "\n", 2)[0]), &first); err != nil {
			t.Fatal(err)
		}
		if _, ok := first["ProviderName"]; ok || len(first) != len(h14) {
			t.Errorf("per device %v: 1.4 JSON line has %d keys (want %d), ProviderName %v", perDevice, len(first), len(h14), ok)
		}
		r.FOCUSVersion = "1.2"
		if err := WriteFOCUS(&bytes.Buffer{}, r); err == nil || !strings.Contains(err.Error(), "1.2") {
			t.Errorf("FOCUS 1.2: %v, want an error naming it", err)
		}
	}
}

// TestFOCUSInvoiceId: every row of a file names one statement, the
// billing account and the period: a calendar month in the book's zone as
// YYYY-MM, another range as its two days.
func TestFOCUSInvoiceId(t *testing.T) {
	loc, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	month, next := time.Date(2026, 3, 1, 0, 0, 0, 0, loc), time.Date(2026, 4, 1, 0, 0, 0, 0, loc)
	gpus, tenants := monthFleet(month, next, loc)
	st := fileLedger(t, ledgerRows(gpus[:1], tenants[:2], time.Hour), nil)
	b := monthBook(t, "America/Los_Angeles", "allocation", "shared")
	for _, c := range []struct {
		from, to time.Time
		want     string
	}{
		{month, next, "gpu-platform/2026-03"},
		{time.Date(2026, 3, 5, 0, 0, 0, 0, loc), time.Date(2026, 3, 12, 0, 0, 0, 0, loc), "gpu-platform/2026-03-05_2026-03-12"},
		{time.Date(2026, 3, 5, 6, 0, 0, 0, loc), time.Date(2026, 3, 6, 0, 0, 0, 0, loc), "gpu-platform/2026-03-05T14:00:00Z_2026-03-06T08:00:00Z"},
	} {
		var fo bytes.Buffer
		if err := WriteFOCUS(&fo, mustBuild(t, st, b, c.from, c.to)); err != nil {
			t.Fatal(err)
		}
		for i, row := range readTable(t, fo.Bytes()) {
			if row["InvoiceId"] != c.want {
				t.Errorf("%s - %s row %d: InvoiceId %q, want %q", c.from, c.to, i+1, row["InvoiceId"], c.want)
			}
		}
	}
}

// TestFOCUSAllocatedRowsRepeatTheirOrigin: per device, the rows split from
// one origin charge (one resource, period and method) have the same text
// in every FOCUS column but the costs, quantities and allocation columns;
// who they were split to is in x_TeamName, x_NamespaceName and
// x_WorkloadName, which agree with AllocatedTags. SkuPriceDetails names
// the MIG profile SkuId names.
func TestFOCUSAllocatedRowsRepeatTheirOrigin(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	st := fileLedger(t, migFleet(t, from, to), nil)
	split := map[string]bool{"BilledCost": true, "EffectiveCost": true, "ListCost": true, "ContractedCost": true,
		"PricingQuantity": true, "ConsumedQuantity": true, "AllocatedMethodDetails": true, "AllocatedResourceId": true,
		"AllocatedResourceName": true, "AllocatedTags": true}
	for name, b := range focusDeviceBooks(t) {
		r := mustBuild(t, st, b, from, to)
		if err := LoadDevices(context.Background(), st, r); err != nil {
			t.Fatal(err)
		}
		var fo bytes.Buffer
		if err := WriteFOCUS(&fo, r); err != nil {
			t.Fatal(err)
		}
		first := map[string]map[string]string{}
		teams := 0
		for i, row := range readTable(t, fo.Bytes()) {
			if row["AllocatedMethodId"] == "" {
				continue
			}
			k := row["ResourceId"] + "|" + row["ChargePeriodStart"] + "|" + row["AllocatedMethodId"]
			f := first[k]
			if f == nil {
				first[k] = row
				f = row
			}
			for col, v := range row {
				if !strings.HasPrefix(col, "x_") && !split[col] && v != f[col] {
					t.Errorf("%s row %d: %s %q, the origin charge's first row has %q", name, i+1, col, v, f[col])
				}
			}
			if row["AllocatedTags"] != "" {
				var at map[string]string
				if err := json.Unmarshal([]byte(row["AllocatedTags"]), &at); err != nil {
					t.Fatal(err)
				}
				if at["team"] != row["x_TeamName"] || at["gpuledger/namespace"] != row["x_NamespaceName"] || at["gpuledger/workload"] != row["x_WorkloadName"] {
					t.Errorf("%s row %d: AllocatedTags %v, x_TeamName %q, x_NamespaceName %q, x_WorkloadName %q", name, i+1, at,
						row["x_TeamName"], row["x_NamespaceName"], row["x_WorkloadName"])
				}
				teams++
			}
			var d map[string]string
			if err := json.Unmarshal([]byte(row["SkuPriceDetails"]), &d); err != nil {
				t.Fatalf("%s row %d: SkuPriceDetails %q: %v", name, i+1, row["SkuPriceDetails"], err)
			}
			if _, profile, mig := strings.Cut(row["SkuId"], "/mig-"); d["x_MigProfile"] != profile || (mig && profile == "") {
				t.Errorf("%s row %d: SkuId %q, SkuPriceDetails %v", name, i+1, row["SkuId"], d)
			}
		}
		if teams == 0 || len(first) == 0 {
			t.Errorf("%s: %d origin charges, %d team rows", name, len(first), teams)
		}
	}
}
