package report

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/quota"
)

// Line types of policy quota (docs/quota.md).
const (
	// LineQuota: a team's quota-hours of one resource, at the quota rate,
	// whether it held them or not.
	LineQuota LineType = "quota"
	// LineAboveQuota: the GPU-hours a team held above its quota, hour by
	// hour, at the above-quota rate.
	LineAboveQuota LineType = "above_quota"
)

// QuotaSection is what teams were promised beside what they held and
// used: the report's quota section, one row per team and source.
type QuotaSection struct {
	// Billed is the source policy quota bills; "" under other policies.
	Billed string
	Rows   []QuotaRow
}

// QuotaRow is one team's quota from one source over the period. Hours
// are GPU-hours (MIG quotas weighted by their slices). Held and used are
// the team's, whatever source: its containers' allocated and used hours.
// Unheld quota and above quota are summed hour by hour (calendar hours in
// the book's zone): in each hour, quota the team did not hold, and what
// it held beyond its quota.
type QuotaRow struct {
	Team, Source                 string
	Resources                    []QuotaResource
	QuotaHours                   *big.Rat
	HeldHours, UsedHours         *big.Rat
	UnheldQuotaHours, AboveHours *big.Rat
}

// QuotaResource is the quota-hours of one resource ("gpu", a GPU model,
// or "mig-<profile>").
type QuotaResource struct {
	Resource string
	Hours    *big.Rat
}

// maxQuotaHours bounds the hour buckets of one quota section (ten years).
const maxQuotaHours = 10 * 366 * 24

// buildQuota computes the quota section: nil when the ledger records no
// quota in the period and the policy is not quota. Quota counts only over
// [dataStart, dataEnd), what the ledger's rows cover of the period: an hour
// the ledger knows nothing of (still to come in a running month, or before
// the ledger began) is neither quota-hours nor unheld quota, so no bill
// charges for it and the platform line, capacity less what teams pay, never
// shrinks for it.
func buildQuota(ctx context.Context, src Source, book *pricebook.Book, from, to, dataStart, dataEnd time.Time) (*QuotaSection, error) {
	billed := ""
	if book.Policy == pricebook.PolicyQuota {
		billed = book.Quota.Source
	}
	// Both stores keep quota changes (ledger.QuotaReader): a source
	// without them is an error, never a bill silently without its quota
	// section.
	qr, err := ledger.Quota(src)
	if err != nil {
		return nil, fmt.Errorf("cannot read quota: %w", err)
	}
	var changes []quota.Change
	err = qr.QuotaChanges(ctx, from, to, func(c quota.Change) error {
		// Two clusters' objects of one name are two objects: another
		// cluster's than the default is named "cluster/object" (as its
		// nodes are, ledger.NodeKey), so its changes never replace the
		// other's.
		c.Object = ledger.NodeKey(c.Cluster, c.Object)
		changes = append(changes, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read quota changes: %w", err)
	}
	var ivs []quota.Interval
	if qFrom, qTo := maxTime(from, dataStart), minTime(to, dataEnd); qFrom.Before(qTo) {
		ivs = quota.Intervals(changes, qFrom, qTo)
	}
	if len(ivs) == 0 && billed == "" {
		return nil, nil
	}
	if to.Sub(from) > maxQuotaHours*time.Hour {
		return nil, fmt.Errorf("cannot compute quota hour by hour over %s: split the period", to.Sub(from))
	}
	loc := book.Location
	held, used, err := heldByHour(ctx, src, from, to, loc)
	if err != nil {
		return nil, err
	}
	// promised[source][team][hour] is quota GPU-seconds; perRes the
	// period's quota GPU-seconds per source, team and resource.
	type st struct{ source, team string }
	promised := map[st]map[int64]*big.Rat{}
	perRes := map[st]map[string]*big.Rat{}
	for _, iv := range ivs {
		k := st{iv.Source, iv.Team}
		if promised[k] == nil {
			promised[k], perRes[k] = map[int64]*big.Rat{}, map[string]*big.Rat{}
		}
		w, err := quota.Weight(iv.Resource)
		if err != nil {
			return nil, err
		}
		gpus := new(big.Rat).Mul(big.NewRat(iv.Milli, 1000), w)
		for t := iv.From; t.Before(iv.To); {
			h := hourStart(t, loc)
			end := h.Add(time.Hour)
			if end.After(iv.To) {
				end = iv.To
			}
			secs := new(big.Rat).Mul(gpus, big.NewRat(end.Sub(t).Nanoseconds(), int64(time.Second)))
			addRat(promised[k], h.Unix(), secs)
			if perRes[k][iv.Resource] == nil {
				perRes[k][iv.Resource] = new(big.Rat)
			}
			perRes[k][iv.Resource].Add(perRes[k][iv.Resource], secs)
			t = end
		}
	}
	if billed != "" {
		// Under policy quota every team that held GPUs has a row of the
		// billed source: without quota, all it held is above it.
		for team := range held {
			if k := (st{billed, team}); promised[k] == nil {
				promised[k], perRes[k] = map[int64]*big.Rat{}, map[string]*big.Rat{}
			}
		}
	}
	sec := &QuotaSection{Billed: billed}
	perHour := big.NewRat(3600, 1)
	for k, byHour := range promised {
		row := QuotaRow{Team: k.team, Source: k.source, QuotaHours: new(big.Rat), HeldHours: new(big.Rat), UsedHours: new(big.Rat),
			UnheldQuotaHours: new(big.Rat), AboveHours: new(big.Rat)}
		hours := map[int64]bool{}
		for h := range byHour {
			hours[h] = true
		}
		for h := range held[k.team] {
			hours[h] = true
		}
		for h := range hours {
			q, hd := ratOr0(byHour[h]), ratOr0(held[k.team][h])
			row.QuotaHours.Add(row.QuotaHours, q)
			row.HeldHours.Add(row.HeldHours, hd)
			row.UsedHours.Add(row.UsedHours, ratOr0(used[k.team][h]))
			if d := new(big.Rat).Sub(q, hd); d.Sign() > 0 {
				row.UnheldQuotaHours.Add(row.UnheldQuotaHours, d)
			} else {
				row.AboveHours.Sub(row.AboveHours, d)
			}
		}
		for _, x := range []*big.Rat{row.QuotaHours, row.HeldHours, row.UsedHours, row.UnheldQuotaHours, row.AboveHours} {
			x.Quo(x, perHour)
		}
		for _, res := range sortedKeys(perRes[k]) {
			row.Resources = append(row.Resources, QuotaResource{Resource: res, Hours: new(big.Rat).Quo(perRes[k][res], perHour)})
		}
		sec.Rows = append(sec.Rows, row)
	}
	slices.SortFunc(sec.Rows, func(a, b QuotaRow) int {
		return cmp.Or(strings.Compare(a.Team, b.Team), cmp.Compare(sourceOrder(a.Source), sourceOrder(b.Source)))
	})
	return sec, nil
}

func sourceOrder(s string) int { return slices.Index(quota.Sources(), s) }

// heldByHour sums each team's container rows per calendar hour: allocated
// and used GPU-seconds, exactly from the integer micro-seconds the report
// fixes every aggregate to.
func heldByHour(ctx context.Context, src Source, from, to time.Time, loc *time.Location) (held, used map[string]map[int64]*big.Rat, err error) {
	aggs, err := src.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Location: loc, Bucket: ledger.BucketHour})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read hourly ledger aggregates: %w", err)
	}
	if err := checkTotals(aggs); err != nil {
		return nil, nil, err
	}
	held, used = map[string]map[int64]*big.Rat{}, map[string]map[int64]*big.Rat{}
	for _, a := range aggs {
		if a.Kind != attribution.KindContainer {
			continue
		}
		q, err := quantify(a)
		if err != nil {
			return nil, nil, err
		}
		h := hourStart(a.BucketStart, loc).Unix()
		if held[a.Team] == nil {
			held[a.Team], used[a.Team] = map[int64]*big.Rat{}, map[int64]*big.Rat{}
		}
		addRat(held[a.Team], h, big.NewRat(q.alloc, microPerSecond))
		addRat(used[a.Team], h, big.NewRat(q.used, microPerSecond))
	}
	return held, used, nil
}

// hourStart is the start of the calendar hour in loc that holds t: whole
// hours of local time, so a zone 5:30 or 5:45 from UTC has its hours at
// :30 or :15 UTC, as the ledger's hour buckets do.
func hourStart(t time.Time, loc *time.Location) time.Time {
	_, off := t.In(loc).Zone()
	s := (t.Unix() + int64(off)) % 3600
	if s < 0 {
		s += 3600
	}
	return time.Unix(t.Unix()-s, 0).In(loc)
}

func addRat(m map[int64]*big.Rat, k int64, x *big.Rat) {
	if m[k] == nil {
		m[k] = new(big.Rat)
	}
	m[k].Add(m[k], x)
}

func ratOr0(x *big.Rat) *big.Rat {
	if x == nil {
		return new(big.Rat)
	}
	return x
}

// finishQuota prices policy quota: a quota line per team and resource of
// the billed source at the quota rate, an above-quota line per team at
// the above rate, and one platform line that is what the GPUs cost at the
// book's rates less what the teams pay (negative when they pay more). The
// lines share out the fleet's capacity x rate rounded once, by largest
// remainder, so the file reconciles exactly as under every policy.
func (b *builder) finishQuota(r *Report) error {
	q := b.book.Quota
	var lines []Line
	paid := new(big.Rat)
	for _, row := range r.Quota.Rows {
		if row.Source != r.Quota.Billed {
			continue
		}
		for _, res := range row.Resources {
			if res.Hours.Sign() == 0 {
				continue // a quota of 0 (a Volcano queue with only a capability)
			}
			rate := q.Rate
			l := Line{Team: row.Team, GPUModel: res.Resource, Type: LineQuota, AllocatedHours: res.Hours,
				Charged: res.Hours, Rate: &rate, Exact: new(big.Rat).Mul(res.Hours, rate.Rat())}
			paid.Add(paid, l.Exact)
			lines = append(lines, l)
		}
		if row.AboveHours.Sign() > 0 {
			rate := q.AboveRate
			l := Line{Team: row.Team, Type: LineAboveQuota, AllocatedHours: row.AboveHours, UsedHours: nil,
				Charged: row.AboveHours, Rate: &rate, Exact: new(big.Rat).Mul(row.AboveHours, rate.Rat())}
			paid.Add(paid, l.Exact)
			lines = append(lines, l)
		}
	}
	scale := minorScale(b.book.Currency)
	fleet, targets, exacts, err := b.capacityAmounts(scale)
	if err != nil {
		return err
	}
	unalloc := new(big.Rat)
	for _, mt := range b.models {
		unalloc.Add(unalloc, hours(mt.unalloc))
	}
	lines = append(lines, Line{Type: LinePlatform, AllocatedHours: unalloc, Exact: new(big.Rat).Sub(fleet, paid)})
	total, err := roundHalfAway(new(big.Rat).Mul(fleet, scale))
	if err != nil {
		return err
	}
	idx := make([]int, len(lines))
	for i := range idx {
		idx[i] = i
	}
	if err := apportion(lines, idx, fleet, total, scale); err != nil {
		return err
	}
	r.Lines = append(lines, Line{Type: LineRounding, Exact: new(big.Rat)})
	r.Total = total
	b.modelSummaries(r, targets, exacts)
	summarise(r)
	// Held and used come from the quota section: quota lines are not
	// held hours.
	for i := range r.Teams {
		for _, row := range r.Quota.Rows {
			if row.Team == r.Teams[i].Team && row.Source == r.Quota.Billed {
				t := &r.Teams[i]
				t.AllocatedHours, t.UsedHours = row.HeldHours, row.UsedHours
				t.Efficiency = ratio(t.UsedHours, t.AllocatedHours)
			}
		}
	}
	return nil
}

// jsonQuota is the quota section in the JSON form: GPU-hours as decimal
// text, like every number there.
type jsonQuota struct {
	// BilledSource is the source policy quota bills ("" otherwise).
	BilledSource string         `json:"billed_source,omitempty"`
	Rows         []jsonQuotaRow `json:"rows"`
}

type jsonQuotaRow struct {
	Team             string              `json:"team"`
	Source           string              `json:"source"`
	Resources        []jsonQuotaResource `json:"resources"`
	QuotaHours       json.Number         `json:"quota_gpu_hours"`
	HeldHours        json.Number         `json:"held_gpu_hours"`
	UsedHours        json.Number         `json:"used_gpu_hours"`
	UnheldQuotaHours json.Number         `json:"unheld_quota_gpu_hours"`
	AboveHours       json.Number         `json:"above_quota_gpu_hours"`
}

type jsonQuotaResource struct {
	Resource   string      `json:"resource"`
	QuotaHours json.Number `json:"quota_gpu_hours"`
}

func quotaJSON(r *Report) *jsonQuota {
	if r.Quota == nil {
		return nil
	}
	j := &jsonQuota{BilledSource: r.Quota.Billed, Rows: []jsonQuotaRow{}}
	for _, row := range r.Quota.Rows {
		jr := jsonQuotaRow{Team: row.Team, Source: row.Source, Resources: []jsonQuotaResource{},
			QuotaHours: hoursNum(row.QuotaHours), HeldHours: hoursNum(row.HeldHours), UsedHours: hoursNum(row.UsedHours),
			UnheldQuotaHours: hoursNum(row.UnheldQuotaHours), AboveHours: hoursNum(row.AboveHours)}
		for _, res := range row.Resources {
			jr.Resources = append(jr.Resources, jsonQuotaResource{Resource: res.Resource, QuotaHours: hoursNum(res.Hours)})
		}
		j.Rows = append(j.Rows, jr)
	}
	return j
}

// quotaPage is the quota section of the HTML report.
type quotaPage struct {
	Billed, Rate, AboveRate, Currency string
	Rows                              []quotaPageRow
}

type quotaPageRow struct {
	Team, Source, Resources          string
	Quota, Held, Used, Unheld, Above string
}

func quotaSection(r *Report) *quotaPage {
	if r.Quota == nil {
		return nil
	}
	p := &quotaPage{Billed: r.Quota.Billed, Currency: r.Book.Currency.Code}
	if q := r.Book.Quota; q != nil {
		p.Rate, p.AboveRate = q.Rate.Format(r.Book.Currency.MinorUnit), q.AboveRate.Format(r.Book.Currency.MinorUnit)
	}
	for _, row := range r.Quota.Rows {
		var res []string
		for _, x := range row.Resources {
			res = append(res, x.Resource+" "+hoursText(x.Hours)+" h")
		}
		p.Rows = append(p.Rows, quotaPageRow{Team: row.Team, Source: row.Source, Resources: strings.Join(res, ", "),
			Quota: hoursText(row.QuotaHours), Held: hoursText(row.HeldHours), Used: hoursText(row.UsedHours),
			Unheld: hoursText(row.UnheldQuotaHours), Above: hoursText(row.AboveHours)})
	}
	return p
}

//go:embed quota.html.tmpl
var quotaHTML string

// The section is its own template in the page's set, as tokens is.
var _ = template.Must(pageTemplate.New("quota").Parse(quotaHTML))

// focusQuotaCells fills a policy quota line's FOCUS cells. Quota and
// above-quota lines are charges of their own, not split from a GPU
// model's capacity, so they carry no allocation columns: the SKU is the
// quota resource (or the above-quota meter), the quantity the line's
// GPU-hours at its rate. The platform line is the capacity cost the teams
// do not pay: an adjustment, negative when they pay more.
func focusQuotaCells(c map[string]string, r *Report, l Line, f fields) {
	q := r.Book.Quota
	tags := map[string]any{}
	if l.Team != "" {
		tags[r.Book.TeamLabel] = l.Team
	}
	switch l.Type {
	case LinePlatform:
		c["ChargeCategory"], c["ChargeFrequency"] = "Adjustment", "Usage-Based"
		c["ChargeDescription"] = "GPU capacity at the book's rates less what the teams' quota and above-quota lines pay (policy quota)"
		return
	case LineQuota:
		c["ChargeDescription"] = fmt.Sprintf("GPU quota (%s) of %s, per quota GPU-hour whether held or not (policy quota)", q.Source, l.GPUModel)
		c["SkuId"] = neutralise("gpu-quota/" + l.GPUModel)
		c["ResourceId"], c["ResourceName"] = neutralise("quota/"+q.Source+"/"+l.Team+"/"+l.GPUModel), neutralise(l.GPUModel+" quota of "+l.Team)
		tags[focusTagPrefix+"quota-resource"] = l.GPUModel
	case LineAboveQuota:
		c["ChargeDescription"] = fmt.Sprintf("GPU-hours held above the %s quota, hour by hour (policy quota)", q.Source)
		c["SkuId"] = "gpu-above-quota"
		c["ResourceId"], c["ResourceName"] = neutralise("quota/"+q.Source+"/"+l.Team+"/above"), neutralise("GPUs held above quota by "+l.Team)
	}
	qty := decimal(l.Charged, hoursDecimals)
	c["ChargeCategory"], c["ChargeFrequency"], c["PricingCategory"] = "Usage", "Usage-Based", "Standard"
	c["PricingQuantity"], c["PricingUnit"], c["ConsumedQuantity"], c["ConsumedUnit"] = qty, focusUnit, qty, focusUnit
	c["ListUnitPrice"], c["ContractedUnitPrice"] = f.Rate, f.Rate
	c["SkuMeter"] = "Quota " + focusUnit
	if l.Type == LineAboveQuota {
		c["SkuMeter"] = "Above-quota " + focusUnit
	}
	c["SkuPriceId"] = neutralise(c["SkuId"] + "/" + f.Currency + "/" + f.Rate)
	c["ResourceType"] = "GPU quota"
	if t, err := focusJSON(tags); err == nil {
		c["Tags"] = t
	}
}
