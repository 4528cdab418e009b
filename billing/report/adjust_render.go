package report

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// CSVAdjustmentColumns are appended to the finance CSV's header (after
// the energy columns) when the report bills adjustments: the closed month
// an adjustment line corrects and that month's line type. Other lines
// leave them empty; a report without adjustments has neither column.
var CSVAdjustmentColumns = []string{"adjusts_period", "adjusts_line_type"}

func withAdjustmentColumns(r *Report, header []string) []string {
	if len(r.Adjustments) == 0 {
		return header
	}
	return append(slices.Clip(header), CSVAdjustmentColumns...)
}

func withAdjustmentCells(r *Report, row []string) []string {
	if len(r.Adjustments) == 0 {
		return row
	}
	return append(row, "", "")
}

// adjustmentFields is an adjustment line as the files print it.
func adjustmentFields(r *Report, a Adjustment) fields {
	f := fields{
		PeriodStart: r.From.Format(time.RFC3339), PeriodEnd: r.To.Format(time.RFC3339),
		Allocated: decimal(a.AllocatedHours, hoursDecimals), Used: decimal(a.UsedHours, hoursDecimals),
		Amount: r.Money(a.Amount), Currency: r.Book.Currency.Code,
	}
	if start, end := r.DataBounds(); !start.IsZero() {
		f.DataStart, f.DataEnd = start.Format(time.RFC3339), end.Format(time.RFC3339)
	}
	f.Partial = strconv.FormatBool(r.Partial())
	return f
}

// csvAdjustmentRow is an adjustment line of the finance CSV: line_type
// adjustment, the differences of the closed month's line in the hours
// and amount columns, no rate, and the closed month in adjusts_period.
func csvAdjustmentRow(r *Report, a Adjustment) []string {
	f := adjustmentFields(r, a)
	row := []string{f.PeriodStart, f.PeriodEnd, neutralise(a.Team), neutralise(a.Namespace), neutralise(a.GPUModel),
		neutralise(a.SharingMode), string(LineAdjustment), f.Allocated, f.Used, "", "", "", f.Amount, f.Currency,
		f.DataStart, f.DataEnd, f.Partial, ""}
	if r.HasEnergy() {
		row = append(row, "", "")
	}
	if len(r.PriceBooks) > 0 {
		// An adjustment is priced by its closed month's book, named
		// in its own files, not by one of this period's.
		row = append(row, make([]string, len(CSVPriceBookColumns))...)
	}
	return append(row, a.Period, string(a.Type))
}

type jsonAdjustment struct {
	Period         string       `json:"adjusts_period"`
	Team           string       `json:"team"`
	Namespace      string       `json:"namespace"`
	GPUModel       string       `json:"gpu_model"`
	SharingMode    string       `json:"sharing_mode"`
	LineType       string       `json:"line_type"`
	AdjustsType    string       `json:"adjusts_line_type"`
	AllocatedHours *json.Number `json:"allocated_gpu_hours"`
	UsedHours      *json.Number `json:"used_gpu_hours"`
	Amount         json.Number  `json:"amount"`
}

func adjustmentsJSON(r *Report, j *jsonReport) {
	j.AdjustmentNotes = r.AdjustmentNotes
	if len(r.Adjustments) == 0 {
		return
	}
	for _, a := range r.Adjustments {
		f := adjustmentFields(r, a)
		j.Adjustments = append(j.Adjustments, jsonAdjustment{Period: a.Period, Team: a.Team, Namespace: a.Namespace,
			GPUModel: a.GPUModel, SharingMode: a.SharingMode, LineType: string(LineAdjustment), AdjustsType: string(a.Type),
			AllocatedHours: optNum(f.Allocated), UsedHours: optNum(f.Used), Amount: num(f.Amount)})
	}
	t := r.AdjustmentsTotal()
	j.AdjustmentsTotal, j.TotalWithAdjustments = optNum(r.Money(t)), optNum(r.Money(r.Total+t))
}

// adjustmentsPage is the HTML section of adjustments.
type adjustmentsPage struct {
	Notes            []string
	Lines            []adjustmentRow
	Total, WithTotal string
}

type adjustmentRow struct {
	Period, Team, Namespace, Model, Mode, Type string
	Label                                      string // the line type in the glossary's words
	Allocated, Used, Amount                    string
}

func adjustmentsHTML(r *Report) *adjustmentsPage {
	if len(r.Adjustments) == 0 && len(r.AdjustmentNotes) == 0 {
		return nil
	}
	t := r.AdjustmentsTotal()
	p := &adjustmentsPage{Notes: r.AdjustmentNotes, Total: formatMinor(t, r.Book.Currency.MinorUnit, true),
		WithTotal: formatMinor(r.Total+t, r.Book.Currency.MinorUnit, true)}
	for _, a := range r.Adjustments {
		f := adjustmentFields(r, a)
		p.Lines = append(p.Lines, adjustmentRow{Period: a.Period, Team: a.Team, Namespace: a.Namespace, Model: a.GPUModel,
			Mode: a.SharingMode, Type: string(a.Type), Label: LineLabel(a.Type), Allocated: f.Allocated, Used: f.Used, Amount: formatMinor(a.Amount, r.Book.Currency.MinorUnit, true)})
	}
	return p
}

// focusAdjustmentRows are the adjustment lines as FOCUS rows:
// ChargeCategory Adjustment, one-time, the closed month's InvoiceId, the
// amount in every cost column, no SKU or resource (a correction, not
// usage).
func focusAdjustmentRows(r *Report, header []string) [][]string {
	var rows [][]string
	for _, a := range r.Adjustments {
		f := adjustmentFields(r, a)
		c := map[string]string{
			"BilledCost": f.Amount, "EffectiveCost": f.Amount, "ListCost": f.Amount, "ContractedCost": f.Amount,
			"BillingAccountId": focusBillingAccount, "BillingAccountName": focusBillingName, "BillingCurrency": f.Currency,
			"BillingPeriodStart": focusTime(r.From), "BillingPeriodEnd": focusTime(r.To),
			"ChargePeriodStart": focusTime(r.From), "ChargePeriodEnd": focusTime(r.To),
			"ChargeCategory": "Adjustment", "ChargeFrequency": "One-Time",
			"ChargeDescription": "Adjustment of " + a.Period + " (" + string(a.Type) + " line): rows that arrived after the month closed, or a posted price change",
			"HostProviderName":  focusProvider, "InvoiceIssuerName": focusProvider, "ServiceProviderName": focusProvider,
			"ProviderName": focusProvider, "PublisherName": focusProvider,
			"InvoiceId":  focusBillingAccount + "/" + a.Period,
			"x_TeamName": neutralise(a.Team), "x_NamespaceName": neutralise(a.Namespace),
			"ServiceCategory": focusServiceCategory, "ServiceName": focusServiceName, "ServiceSubcategory": focusServiceSubcat,
			"x_LineType": string(LineAdjustment), "x_SharingMode": neutralise(a.SharingMode),
			"x_AllocatedGpuHours": f.Allocated, "x_UsedGpuHours": f.Used,
			"x_DataStart": f.DataStart, "x_DataEnd": f.DataEnd, "x_Partial": f.Partial,
		}
		if start, end := r.DataBounds(); !start.IsZero() {
			c["x_DataStart"], c["x_DataEnd"] = focusTimeOrNull(start), focusTimeOrNull(end)
		}
		rows = append(rows, focusOrder(c, header))
	}
	return rows
}
