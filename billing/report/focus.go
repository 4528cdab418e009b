package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	catalogue "github.com/gpuledger/gpuledger/gpu"
)

// The FOCUS 1.3 export (docs/focus.md): one row per line of the finance
// CSV, with the same amounts, so BilledCost adds up to the CSV's total to
// the minor unit. Each GPU model's capacity is the origin charge the
// split cost allocation columns describe: its lines (team charges, idle
// shares and the platform's unallocated part) are the allocated charges.

// FOCUSHeader is the FOCUS export's header: the FOCUS columns gpuledger
// fills, in alphabetical order, then its x_ extension columns.
var FOCUSHeader = []string{
	"AllocatedMethodDetails", "AllocatedMethodId", "AllocatedResourceId", "AllocatedResourceName", "AllocatedTags",
	"BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart",
	"ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart",
	"ConsumedQuantity", "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost",
	"HostProviderName", "InvoiceId", "InvoiceIssuerName", "ListCost", "ListUnitPrice",
	"PricingCategory", "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ResourceId", "ResourceName", "ResourceType",
	"ServiceCategory", "ServiceName", "ServiceProviderName", "ServiceSubcategory",
	"SkuId", "SkuMeter", "SkuPriceDetails", "SkuPriceId", "Tags",
	"x_AllocatedGpuHours", "x_BorrowedGpuHours", "x_DataEnd", "x_DataStart", "x_Efficiency", "x_EnergyKwh", "x_LineType",
	"x_NamespaceName", "x_Partial", "x_SharingMode", "x_TeamName", "x_UsedGpuHours", "x_WorkloadName",
}

// The FOCUS versions WriteFOCUS writes (Report.FOCUSVersion).
const (
	FOCUSVersion13 = "1.3"
	FOCUSVersion14 = "1.4"
)

// focusHeaderFor is FOCUSHeader for a FOCUS version: 1.4 removed the
// deprecated ProviderName and PublisherName; HostProviderName, which 1.4
// makes mandatory, is in both.
func focusHeaderFor(version string) ([]string, error) {
	switch version {
	case FOCUSVersion13, "":
		return FOCUSHeader, nil
	case FOCUSVersion14:
		h := make([]string, 0, len(FOCUSHeader))
		for _, col := range FOCUSHeader {
			if col != "ProviderName" && col != "PublisherName" {
				h = append(h, col)
			}
		}
		return h, nil
	}
	return nil, fmt.Errorf("cannot write FOCUS %q: want %s or %s", version, FOCUSVersion13, FOCUSVersion14)
}

// focusEnergyColumns join the x_ columns, in their alphabetical places,
// when the price book has an energy section (withEnergyColumns): the row's
// energy cost in the billing currency and its CO2e in kg, informational
// (not part of any cost column).
var focusEnergyColumns = []string{"x_Co2eKg", "x_EnergyCost"}

// withEnergyColumns is the header h of r's FOCUS file with the energy
// columns when the book names an energy rate or a carbon intensity.
func withEnergyColumns(r *Report, h []string) []string {
	if !r.HasEnergy() {
		return h
	}
	h = slices.Clone(h)
	for _, col := range focusEnergyColumns {
		i := slices.IndexFunc(h, func(c string) bool { return strings.HasPrefix(c, "x_") && c > col })
		if i < 0 {
			i = len(h)
		}
		h = slices.Insert(h, i, col)
	}
	return h
}

// focusEnergyCells fills the energy columns of a row, as the book names
// them.
func focusEnergyCells(c map[string]string, r *Report, cost, grams int64) {
	if r.HasEnergyCost() {
		c["x_EnergyCost"] = r.Money(cost)
	}
	if r.HasCarbon() {
		c["x_Co2eKg"] = Kg(grams)
	}
}

// Fixed values of the export. The chargeback is internal: the GPU
// platform provides the service, runs it on infrastructure gpuledger
// cannot see (so HostProviderName equals ServiceProviderName, as FOCUS
// allows), and issues the bill.
const (
	focusProvider        = "GPU platform"
	focusBillingAccount  = "gpu-platform"
	focusBillingName     = "GPU platform chargeback"
	focusServiceName     = "Kubernetes GPU"
	focusServiceCategory = "Compute"
	focusServiceSubcat   = "Containers"
	focusUnit            = "GPU-Hours"
	focusResourceType    = "GPU Pool"
	// focusTagPrefix prefixes the tags gpuledger defines, as FOCUS asks of
	// data generator-defined tag keys; the team label is the user's own
	// tag and keeps its key.
	focusTagPrefix = "gpuledger/"
	// ratioDecimals: AllocatedRatio is line hours / model capacity hours,
	// written to 12 places.
	ratioDecimals = 12
)

// focusTime writes an instant as FOCUS wants it: UTC, seconds, a Z.
func focusTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// focusTimeOrNull is focusTime, or null (empty) for the zero time.
func focusTimeOrNull(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return focusTime(t)
}

// WriteFOCUS writes the report as a FOCUS 1.3 cost and usage CSV. A period
// with no ledger data is an error: a FOCUS file of no charges would read
// as a month that cost nothing.
// r.FOCUSVersion picks the version: 1.3 (the default) or 1.4, the same
// rows and amounts in the version's columns.
func WriteFOCUS(w io.Writer, r *Report) error {
	header, err := focusHeaderFor(r.FOCUSVersion)
	if err != nil {
		return err
	}
	header = withClusterColumns(r, withPriceBookColumns(r, withEnergyColumns(r, header)))
	rows, err := focusRows(r, header)
	if err != nil {
		return err
	}
	header, rows = withExampleColumn(r, header, rows)
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("cannot write FOCUS file: %w", err)
	}
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("cannot write FOCUS file: %w", err)
	}
	return nil
}

// focusRows are the report's lines as FOCUS rows, cells in header's
// order.
func focusRows(r *Report, header []string) ([][]string, error) {
	if r.Empty() {
		return nil, fmt.Errorf("cannot write FOCUS file: the ledger has no data from %s to %s", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339))
	}
	if len(r.pieces) > 0 {
		return focusPieceRows(r, header)
	}
	capacity := map[string]*big.Rat{}
	for _, m := range r.Models {
		capacity[m.Model] = m.CapacityHours
	}
	if r.Devices != nil && r.Book.Policy != pricebook.PolicyQuota {
		// Quota lines are what a team was promised, not what a device
		// did: under policy quota the file has a row per line.
		rows, err := focusDeviceRows(r, header)
		if err != nil {
			return nil, err
		}
		return append(rows, focusAdjustmentRows(r, header)...), nil
	}
	rows := make([][]string, 0, len(r.Lines))
	for _, l := range r.Lines {
		c, err := focusCells(r, l, capacity[l.GPUModel])
		if err != nil {
			return nil, err
		}
		rows = append(rows, focusOrder(c, header))
	}
	return append(rows, focusAdjustmentRows(r, header)...), nil
}

// focusOrder puts cells in header's order. An empty cell is null.
func focusOrder(c map[string]string, header []string) []string {
	row := make([]string, len(header))
	for i, col := range header {
		row[i] = c[col]
	}
	return row
}

// focusCells is one line as a FOCUS row, by column.
func focusCells(r *Report, l Line, capacity *big.Rat) (map[string]string, error) {
	f := lineFields(r, l)
	book := r.Book
	start, end := r.DataBounds()
	c := map[string]string{
		"BilledCost": f.Amount, "EffectiveCost": f.Amount, "ListCost": f.Amount, "ContractedCost": f.Amount,
		"BillingAccountId": focusBillingAccount, "BillingAccountName": focusBillingName, "BillingCurrency": f.Currency,
		"BillingPeriodStart": focusTime(r.From), "BillingPeriodEnd": focusTime(r.To),
		// One row covers the line's whole period, as the finance CSV does.
		"ChargePeriodStart": focusTime(r.From), "ChargePeriodEnd": focusTime(r.To),
		"HostProviderName": focusProvider, "InvoiceIssuerName": focusProvider, "ServiceProviderName": focusProvider,
		// Deprecated in FOCUS 1.3 but mandatory there: the provider that
		// made the service available, and the one that produced it.
		"ProviderName": focusProvider, "PublisherName": focusProvider,
		"InvoiceId":  focusInvoiceID(r),
		"x_TeamName": neutralise(l.Team), "x_NamespaceName": neutralise(l.Namespace),
		"ServiceCategory": focusServiceCategory, "ServiceName": focusServiceName, "ServiceSubcategory": focusServiceSubcat,
		"x_LineType": string(l.Type), "x_SharingMode": neutralise(l.SharingMode),
		"x_AllocatedGpuHours": f.Allocated, "x_UsedGpuHours": f.Used, "x_Efficiency": f.Efficiency, "x_EnergyKwh": f.Energy,
		// What the ledger covers of the billing period: a partial period
		// (month to date) is marked in the file, not only on stderr.
		"x_DataStart": focusTimeOrNull(start), "x_DataEnd": focusTimeOrNull(end), "x_Partial": f.Partial,
		"x_BorrowedGpuHours": f.Borrowed,
	}
	c["x_EnergyCost"], c["x_Co2eKg"] = f.EnergyCost, f.Co2eKg
	focusPriceBookCells(c, l)
	if r.HasClusters() {
		// docs/focus.md, "Clusters": the cluster is the sub account.
		cl := r.LineCluster(l)
		c["SubAccountId"], c["SubAccountName"] = cl, cl
	}
	if l.Type == LineRounding {
		// Not usage of any SKU or resource, and not split from a charge:
		// the one adjustment that makes the file add up to its total
		// rounded once.
		c["ChargeCategory"], c["ChargeFrequency"] = "Adjustment", "One-Time"
		c["ChargeDescription"] = "Rounding: the period's total rounded once, less the lines rounded one by one (largest remainder)"
	} else if book.Policy == pricebook.PolicyQuota {
		focusQuotaCells(c, r, l, f)
	} else {
		charged := l.ChargedHours(book.Policy)
		qty := decimal(charged, hoursDecimals)
		sku := catalogue.NormaliseModel(l.GPUModel)
		c["ChargeCategory"], c["ChargeFrequency"], c["PricingCategory"] = "Usage", "Usage-Based", "Standard"
		c["ChargeDescription"] = focusDescription(book, l.GPUModel)
		c["PricingQuantity"], c["PricingUnit"], c["ConsumedQuantity"], c["ConsumedUnit"] = qty, focusUnit, qty, focusUnit
		c["ListUnitPrice"], c["ContractedUnitPrice"] = f.Rate, f.Rate
		c["SkuId"], c["SkuMeter"] = neutralise(sku), focusMeter(book)
		c["SkuPriceId"] = neutralise(sku + "/" + f.Currency + "/" + f.Rate)
		details, err := focusSkuPriceDetails(book, sku, "")
		if err != nil {
			return nil, err
		}
		c["SkuPriceDetails"] = details
		c["ResourceId"] = neutralise("gpu-pool/" + l.GPUModel)
		c["ResourceName"], c["ResourceType"] = neutralise(l.GPUModel+" GPUs"), focusResourceType
		tags, err := focusJSON(map[string]any{focusTagPrefix + "gpu-model": l.GPUModel})
		if err != nil {
			return nil, err
		}
		c["Tags"] = tags
		if err := focusAllocation(c, book, l, charged, qty, capacity); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// focusAllocation fills the split cost allocation columns: the method is
// the book's policy and idle rule, the ratio the line's share of its
// model's capacity hours, and the allocated resource the namespace.
// Platform lines are the origin charge's unallocated part, so they name
// no allocated resource.
func focusAllocation(c map[string]string, book *pricebook.Book, l Line, charged *big.Rat, qty string, capacity *big.Rat) error {
	c["AllocatedMethodId"] = fmt.Sprintf("gpuledger/%s/idle-%s", book.Policy, book.Idle)
	if capacity != nil && capacity.Sign() > 0 {
		ratio := decimal(new(big.Rat).Quo(charged, capacity), ratioDecimals)
		details, err := focusJSON(map[string]any{
			"Elements": []map[string]any{{"AllocatedRatio": json.Number(ratio), "UsageUnit": focusUnit, "UsageQuantity": json.Number(qty)}},
			"x_Policy": string(book.Policy), "x_Idle": string(book.Idle),
		})
		if err != nil {
			return err
		}
		c["AllocatedMethodDetails"] = details
	}
	if l.Type == LinePlatform || l.Namespace == "" {
		return nil
	}
	c["AllocatedResourceId"], c["AllocatedResourceName"] = neutralise(l.Namespace), neutralise(l.Namespace)
	tags := map[string]any{focusTagPrefix + "namespace": l.Namespace, focusTagPrefix + "sharing-mode": l.SharingMode}
	if l.Team != "" {
		tags[book.TeamLabel] = l.Team
	}
	at, err := focusJSON(tags)
	if err != nil {
		return err
	}
	c["AllocatedTags"] = at
	return nil
}

// focusMeter names what the SKU meters: the policy's column.
func focusMeter(book *pricebook.Book) string {
	if book.Policy == pricebook.PolicyUsage {
		return "Used " + focusUnit
	}
	return "Allocated " + focusUnit
}

// focusDescription describes the origin charge a line is split from, a
// GPU model's capacity: every allocated charge repeats it, as FOCUS asks
// of dimensions. Who the charge was split to is in AllocatedTags and the
// x_TeamName, x_NamespaceName and x_WorkloadName columns.
func focusDescription(book *pricebook.Book, model string) string {
	verb := "held"
	if book.Policy == pricebook.PolicyUsage {
		verb = "used"
	}
	return fmt.Sprintf("%s GPU capacity, split by GPU-hours %s (policy %s, idle %s)", model, verb, book.Policy, book.Idle)
}

// focusSkuPriceDetails describes a SKU price: the GPU model (normalised,
// as in SkuId), the MIG profile when the SKU is one, and the price book's
// policy. Every key is the generator's own (x_), since FOCUS's predefined
// keys do not fit a GPU-hour: its GpuCount would be a fraction on a MIG
// instance.
func focusSkuPriceDetails(book *pricebook.Book, model, profile string) (string, error) {
	d := map[string]any{"x_GpuModel": model, "x_PricingPolicy": string(book.Policy)}
	if profile != "" {
		d["x_MigProfile"] = profile
	}
	return focusJSON(d)
}

// focusInvoiceID names the chargeback statement a file is: the billing
// account and the period, a calendar month as YYYY-MM in the price book's
// time zone, any other range as its two ends.
func focusInvoiceID(r *Report) string {
	from, to := r.From, r.To
	if loc := r.Book.Location; loc != nil {
		from, to = from.In(loc), to.In(loc)
	}
	midnight := func(t time.Time) bool {
		return t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0
	}
	switch {
	case midnight(from) && from.Day() == 1 && to.Equal(from.AddDate(0, 1, 0)):
		return focusBillingAccount + "/" + from.Format("2006-01")
	case midnight(from) && midnight(to):
		return focusBillingAccount + "/" + from.Format("2006-01-02") + "_" + to.Format("2006-01-02")
	}
	return focusBillingAccount + "/" + focusTime(from) + "_" + focusTime(to)
}

// focusJSON writes a JSON cell; encoding/json sorts map keys, so a cell's
// text depends only on its content.
func focusJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("cannot write FOCUS JSON cell: %w", err)
	}
	return string(b), nil
}

// focusJSONColumns are written as JSON objects in the JSON-lines variant,
// focusNumberColumns as JSON numbers (their decimal text, never a float).
var (
	focusJSONColumns   = map[string]bool{"AllocatedMethodDetails": true, "AllocatedTags": true, "Tags": true, "SkuPriceDetails": true}
	focusNumberColumns = map[string]bool{"BilledCost": true, "EffectiveCost": true, "ListCost": true, "ContractedCost": true,
		"ConsumedQuantity": true, "PricingQuantity": true, "ListUnitPrice": true, "ContractedUnitPrice": true,
		"x_AllocatedGpuHours": true, "x_UsedGpuHours": true, "x_Efficiency": true, "x_EnergyKwh": true,
		"x_EnergyCost": true, "x_Co2eKg": true}
)

// WriteFOCUSJSONL writes the FOCUS rows of WriteFOCUS as JSON lines: one
// object per row, keys in FOCUSHeader's order, null for an empty cell,
// costs and quantities as JSON numbers with the CSV's digits, and the
// key-value columns as objects.
func WriteFOCUSJSONL(w io.Writer, r *Report) error {
	header, err := focusHeaderFor(r.FOCUSVersion)
	if err != nil {
		return err
	}
	header = withClusterColumns(r, withPriceBookColumns(r, withEnergyColumns(r, header)))
	rows, err := focusRows(r, header)
	if err != nil {
		return err
	}
	header, rows = withExampleColumn(r, header, rows)
	var b []byte
	for _, row := range rows {
		b = append(b[:0], '{')
		for i, col := range header {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, col)
			b = append(b, ':')
			switch v := row[i]; {
			case v == "":
				b = append(b, "null"...)
			case focusJSONColumns[col] || focusNumberColumns[col] || col == focusExampleColumn:
				b = append(b, v...)
			default:
				s, err := json.Marshal(v)
				if err != nil {
					return fmt.Errorf("cannot write FOCUS JSON lines: %w", err)
				}
				b = append(b, s...)
			}
		}
		b = append(b, '}', '\n')
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("cannot write FOCUS JSON lines: %w", err)
		}
	}
	return nil
}
