package dashboards

import "strings"

// The SQL of the ClickHouse chargeback dashboard. Every query reads the
// ledger's tables as ledger/clickhouse creates them, in the data source's
// default database, through the plugin's macros ($__timeFilter,
// $__fromTime, $__toTime) and template variables formatted with
// :percentencode (see varFilter). docs/dashboards.md explains the design.

// Tables of the ledger (ledger/clickhouse/schema.go, prices.go).
const (
	chHourly   = "ledger_rollup_hourly"
	chBuilds   = "ledger_rollup_builds"
	chCoverage = "ledger_rollup_coverage"
	chMarks    = "ledger_rollup_marks"
	chFindings = "ledger_findings"
	chPrices   = "gpuledger_prices"
)

// allValue is the variables' custom "All" value. Variable values are the
// hex of the label (hex() in SQL), so no real value can equal it.
const allValue = "__all"

// varList is the selected values of a variable as an SQL array of hex
// strings. Grafana's percentencode format (encodeURIComponent plus
// !'()*) leaves only [A-Za-z0-9-_.~%] in the literal, whatever the value
// holds, so neither a quote nor a backslash can end the string; the
// values themselves are hex, so the comma that joins several cannot occur
// inside one.
func varList(name string) string {
	v := "decodeURLComponent('${" + name + ":percentencode}')"
	return "splitByChar(',', replaceAll(replaceAll(" + v + ", '{', ''), '}', ''))"
}

// varFilter is true for rows whose column is among the variable's
// selected values, or for every row when All is selected.
func varFilter(name, col string) string {
	return "(decodeURLComponent('${" + name + ":percentencode}') = '" + allValue + "' OR has(" + varList(name) + ", hex(" + col + ")))"
}

// clusterFilter narrows rows to the clusters of the cluster variable (the
// ledger's cluster column: collect and serve --cluster). Unlike the label
// filters it applies before anything is computed: a cluster's invoice is
// that of its own rows, All the fleet's, which is the report's.
func clusterFilter() string { return varFilter("cluster", "cluster") }

// labelFilters narrows rows to the team, namespace and model variables.
func labelFilters() string {
	return varFilter("team", "team") + " AND " + varFilter("namespace", "namespace") + " AND " + varFilter("model", "gpu_model")
}

// newestBuilds selects, per UTC hour, the newest rollup build: the rows a
// report reads for that hour (ledger/clickhouse: a header is written after
// its rows, so its rows are visible once it is).
func newestBuilds(timeCond string) string {
	return "SELECT period, argMax(build, version) FROM " + chBuilds +
		" WHERE grain = 'h' AND " + strings.ReplaceAll(timeCond, "hour", "period") + " GROUP BY period"
}

// hourGroups are the hourly rollup's groups of the newest builds in the
// hours matching timeCond (a condition on the column hour), in the
// selected clusters: a group written twice by a retried insert counts
// once. The cluster is part of the group, so that two clusters' groups
// with the same team, namespace, model, mode and kind both count.
func hourGroups(timeCond string) string {
	return `SELECT hour, cluster, team, namespace, gpu_model, sharing_mode, kind,
		any(allocated_gpu_seconds) AS alloc_s, any(used_gpu_seconds) AS used_s, any(energy_joules) AS energy_j
	FROM ` + chHourly + `
	WHERE ` + timeCond + ` AND ` + clusterFilter() + ` AND (hour, build) IN (` + newestBuilds(timeCond) + `)
	GROUP BY hour, build, cluster, team, namespace, gpu_model, sharing_mode, kind`
}

// monthsCond is every hour of the calendar months (UTC) that the time
// range touches: invoices are whole months.
// The last two terms only let ClickHouse skip granules by the sort key.
const monthsCond = "toStartOfMonth(hour) >= toStartOfMonth($__fromTime, 'UTC') AND toStartOfMonth(hour) <= toStartOfMonth($__toTime, 'UTC')" +
	" AND hour >= $__fromTime - 2678400 AND hour <= $__toTime + 2678400"

// rangeCond is the hours inside the dashboard's time range. The plugin's
// $__timeFilter is inclusive at both ends; an hour bucket starting at the
// range's end is outside the range, so that end is excluded here.
const rangeCond = "$__timeFilter(hour) AND hour < $__toTime"

// dayGroups fixes each (UTC day, group) sum to integer micro-GPU-seconds,
// as the report does with its day aggregates (math.Round: half away from
// zero; the sums are never negative).
func dayGroups(timeCond string) string {
	return `SELECT toStartOfDay(hour) AS day, team, namespace, gpu_model, sharing_mode, kind,
		toInt64(floor(sum(alloc_s) * 1000000 + 0.5)) AS alloc_us,
		toInt64(floor(sum(used_s) * 1000000 + 0.5)) AS used_us
	FROM (` + hourGroups(timeCond) + `)
	GROUP BY day, team, namespace, gpu_model, sharing_mode, kind`
}

// book is a scalar setting of the newest price book. A scalar subquery is
// Nullable on ClickHouse 24+ (NULL when no book is stored), and a NULL
// there would turn every amount computed from it into NULL (an empty cell
// where the report shows 0): ifNull gives what 18.16 gives, any()'s value
// over no rows: empty text, or 0 for the minor unit.
func book(col string) string {
	zero := "''"
	if col == "minor_unit" {
		zero = "0"
	}
	return "ifNull((SELECT any(" + col + ") FROM " + chPrices + " WHERE version = (SELECT max(version) FROM " + chPrices + ")), " + zero + ")"
}

// charged is the policy's column: allocated under allocation, used under
// usage, by the newest price book's policy.
var charged = "if(" + book("policy") + " = 'usage', used_us, alloc_us)"

// chargeLines are the lines of each month before money: per month and GPU
// model, the charge lines (sect 0, ltype 0), the idle_share lines (sect 0,
// ltype 1; shared per day in proportion to the day's charged hours on the
// model, idle: shared only) and the platform lines (sect 1, ltype 2), with
// their charged micro-GPU-seconds as Decimal128(20), and per month and
// model one capacity row (ltype 9: every charged micro-GPU-second of the
// model, the report's capacity). Charge and platform amounts are exact
// integers; a share is its day's integer quotient plus the remainder over
// the day's weight (docs/dashboards.md, "Exactness").
//
// The day groups are read once: each (day, model) gathers its groups with
// the day's weight (containers' charged) and pool (everything else
// charged), and every group then emits the lines it contributes to.
func chargeLines() string {
	return `SELECT month, gpu_model, sect, team, namespace, sharing_mode, ltype, sum(us) AS us FROM (
	SELECT month, gpu_model, ltype,
		if(ltype = 2, 1, if(ltype = 9, 9, 0)) AS sect,
		if(ltype < 2, g_team, '') AS team, if(ltype < 2, g_ns, '') AS namespace, if(ltype = 9, '', g_mode) AS sharing_mode,
		if(ltype = 1,
			toDecimal128(intDiv(toDecimal128(pool, 0) * c, weight), 20)
				+ toDecimal128(toDecimal128(pool, 0) * c - intDiv(toDecimal128(pool, 0) * c, weight) * weight, 20) / weight,
			toDecimal128(c, 20)) AS us
	FROM (
		SELECT toStartOfMonth(day) AS month, gpu_model, weight, pool, shared,
			tupleElement(g, 1) AS g_team, tupleElement(g, 2) AS g_ns, tupleElement(g, 3) AS g_mode,
			tupleElement(g, 4) = 'container' AS is_ctr, tupleElement(g, 5) AS c,
			arrayJoin([0, 1, 2, 9]) AS ltype
		FROM (
			SELECT day, gpu_model, any(shared_book) AS shared,
				sumIf(c, kind = 'container') AS weight, sumIf(c, kind != 'container') AS pool,
				groupArray((team, namespace, sharing_mode, kind, c)) AS groups
			FROM (SELECT *, ` + charged + ` AS c, toUInt8(` + book("idle") + ` = 'shared') AS shared_book FROM (` + dayGroups(monthsCond) + `))
			GROUP BY day, gpu_model
		) ARRAY JOIN groups AS g
	)
	WHERE (ltype = 0 AND is_ctr) OR (ltype = 1 AND is_ctr AND shared = 1 AND weight > 0 AND c != 0)
		OR (ltype = 2 AND NOT is_ctr AND (shared = 0 OR weight <= 0)) OR ltype = 9
) GROUP BY month, gpu_model, sect, team, namespace, sharing_mode, ltype`
}

// rates joins each line's model to its rate in the newest book: the
// model's own, else the default rate. Rates are Decimal128(12), refused at
// load time when written with more decimals (ledger/clickhouse.PriceRows).
func withRates(inner string) string {
	// The default rate comes through a scalar subquery as text: 18.16
	// cannot return a Decimal from a scalar subquery. ifNull as in book: a
	// book without a default rate prices unlisted models at 0 on every
	// version (18.16's any() over no rows is '', which toDecimal128 reads
	// as 0 there but refuses on 24+).
	// Both sides of the join are named: ClickHouse 24+ refuses a join of
	// unnamed subqueries (joined_subquery_requires_alias).
	return `SELECT *, if(rated = 1, model_rate, toDecimal128(ifNull((SELECT any(rate) FROM ` + chPrices +
		` WHERE version = (SELECT max(version) FROM ` + chPrices + `) AND is_default = 1), '0'), 12)) AS rate
	FROM (` + inner + `) AS unrated ANY LEFT JOIN (
		SELECT model AS gpu_model, toDecimal128(rate, 12) AS model_rate, toUInt8(1) AS rated
		FROM ` + chPrices + ` WHERE version = (SELECT max(version) FROM ` + chPrices + `) AND is_default = 0
	) AS model_rates USING (gpu_model)`
}

// utcBook refuses (ClickHouse's throwIf error) a newest price book whose
// time zone is not UTC: the dashboards cut days and months in UTC, so a
// book cutting them elsewhere would show other money than its report.
var utcBook = "throwIf(" + book("timezone") + " != 'UTC') = 0"

// minorScale is 10^minor unit of the book's currency.
var minorScale = "toInt64(pow(10, " + book("minor_unit") + "))"

// amountOf is the money of us micro-GPU-seconds at rate, in minor units,
// as Decimal128(20). Decimal products add scales: us at scale 8 times the
// rate at 12 is scale 20, and dividing by the micro-seconds of an hour
// before scaling to minor units keeps every intermediate under 38 digits
// for a month of 1,000 GPUs. For an integer us the result is the exact
// amount truncated at 20 decimals, which never moves it across a minor
// unit (docs/dashboards.md, "Exactness").
func amountOf(us, rate string) string {
	return "toDecimal128(" + us + ", 8) * " + rate + " / 3600000000 * " + minorScale
}

// invoiceLines are every line of each month with its amount in minor
// units, apportioned as the report does (billing/report/rounding.go): per
// month and model, each line gets its exact amount rounded down and the
// minor units still missing to round(capacity x rate) go to the largest
// remainders, ties to the earlier line in the report's order.
//
// 18.16 crashes on groupArray over tuples holding a Decimal, so the
// sorted lines carry decimals as text: the remainder as 1 - frac, whose
// fixed 20-decimal text sorts like the number, and the charged
// micro-seconds.
func invoiceLines() string {
	return `SELECT month, gpu_model, target, exact_text,
		tupleElement(l, 2) AS sect, tupleElement(l, 3) AS team, tupleElement(l, 4) AS namespace,
		tupleElement(l, 5) AS sharing_mode, tupleElement(l, 6) AS ltype, toDecimal128(tupleElement(l, 7), 20) AS us,
		tupleElement(l, 8) + if(i <= target - floors, 1, 0) AS amount
	FROM (
		SELECT month, gpu_model, target, exact_text, floors, arraySort(lines) AS sorted
		FROM (
			SELECT month, gpu_model,
				groupArrayIf((key, sect, team, namespace, sharing_mode, ltype, us_text, fl), ltype != 9) AS lines,
				sumIf(fl, ltype != 9) AS floors,
				toString(sumIf(amt, ltype = 9)) AS exact_text,
				toInt64(sumIf(amt, ltype = 9) + toDecimal128('0.5', 20)) AS target
			FROM (
				SELECT month, gpu_model, sect, team, namespace, sharing_mode, ltype, toString(us) AS us_text,
					` + amountOf("us", "rate") + ` AS amt, toInt64(amt) AS fl,
					toString(toDecimal128(1, 20) - (amt - toDecimal128(fl, 20))) AS key
				FROM (` + withRates(chargeLines()) + `)
			)
			GROUP BY month, gpu_model
		)
	) ARRAY JOIN sorted AS l, arrayEnumerate(sorted) AS i`
}
