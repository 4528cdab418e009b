package dashboards

import "strings"

// The panels' SQL of the ClickHouse chargeback (see clickhouse_sql.go).

// money turns minor units into the currency's units for display: the
// integer amounts are exact, the division only places the decimal point.
func money(minorUnits string) string { return "(" + minorUnits + ") / " + minorScale }

// sqlCostByTeam is each team's money per calendar month: its charge lines
// plus its idle_share lines, exactly the report's amounts. Filters narrow
// the rows shown, never the computation: the apportionment always runs
// over the whole month's invoice.
func sqlCostByTeam() string {
	return `SELECT month AS "Month", team AS "Team",
	` + money("sumIf(amount, ltype = 0)") + ` AS "Charge",
	` + money("sumIf(amount, ltype = 1)") + ` AS "Share of uncharged capacity",
	` + money("sum(amount)") + ` AS "Cost",
	toFloat64(sum(us) / 3600000000) AS "Charged GPU-h",
	` + book("currency") + ` AS "Currency"
FROM (` + invoiceLines() + `)
WHERE sect = 0 AND ` + utcBook + ` AND ` + labelFilters() + `
GROUP BY month, team
ORDER BY month, "Cost" DESC, team`
}

// sqlInvoiceTotals is each month's invoice: total, what teams pay, the
// platform line (uncharged capacity no team pays for) and the rounding
// line, as in the finance CSV.
func sqlInvoiceTotals() string {
	return `SELECT month AS "Month",
	` + money("total") + ` AS "Total",
	` + money("teams") + ` AS "Teams",
	` + money("platform") + ` AS "Platform (uncharged capacity)",
	` + money("total - models") + ` AS "Rounding",
	` + book("currency") + ` AS "Currency",
	` + book("policy") + ` AS "Policy", ` + book("idle") + ` AS "Idle"
FROM (
	SELECT month, toInt64(sum(toDecimal128(exact_text, 20)) + toDecimal128('0.5', 20)) AS total, sum(target) AS models,
		sum(teams) AS teams, sum(platform) AS platform
	FROM (
		SELECT month, gpu_model, any(exact_text) AS exact_text, any(target) AS target,
			sumIf(amount, sect = 0) AS teams, sumIf(amount, sect = 1) AS platform
		FROM (` + invoiceLines() + `)
		GROUP BY month, gpu_model
	)
	GROUP BY month
)
WHERE ` + utcBook + `
ORDER BY month`
}

// sqlHoursByTeam is GPU-hours per team and month over the time range:
// held (allocated), used, efficiency and held but unused.
func sqlHoursByTeam() string {
	return `SELECT toStartOfMonth(hour) AS "Month", team AS "Team",
	sum(alloc_s) / 3600 AS "Held GPU-h", sum(used_s) / 3600 AS "Used GPU-h",
	if(sum(alloc_s) > 0, sum(used_s) / sum(alloc_s), NULL) AS "Efficiency",
	greatest(sum(alloc_s) - sum(used_s), 0) / 3600 AS "Held but unused GPU-h"
FROM (` + hourGroups(rangeCond) + `)
WHERE kind = 'container' AND ` + labelFilters() + `
GROUP BY "Month", team
ORDER BY "Month", "Held GPU-h" DESC, team`
}

// sqlHeldVsUsed is held and used GPUs per day (GPU-hours per hour).
func sqlHeldVsUsed() string {
	return `SELECT toStartOfDay(hour) AS time,
	sum(alloc_s) / 3600 / 24 AS "Held GPUs", sum(used_s) / 3600 / 24 AS "Used GPUs"
FROM (` + hourGroups(rangeCond) + `)
WHERE kind = 'container' AND ` + labelFilters() + `
GROUP BY time ORDER BY time`
}

// sqlUncharged is, per month and model, the capacity no container used:
// never allocated, idle device time, unattributed, and held but unused,
// in GPU-hours and at the model's rate (a value, not an invoice line: the
// invoice charges some of it to teams, see the cost panels).
func sqlUncharged() string {
	h := func(x string) string { return x + " / 3600000000" }
	v := func(x string) string { return "toFloat64(" + amountOf(x, "rate") + ") / " + minorScale }
	return `SELECT month AS "Month", gpu_model AS "Model",
	` + h("never") + ` AS "Never allocated GPU-h", ` + h("idle_us") + ` AS "Idle device time GPU-h",
	` + h("unattr") + ` AS "Unattributed GPU-h", ` + h("unused") + ` AS "Held but unused GPU-h",
	` + v("never") + ` AS "Never allocated value", ` + v("idle_us") + ` AS "Idle device time value",
	` + v("unused") + ` AS "Held but unused value",
	` + book("currency") + ` AS "Currency"
FROM (` + withRates(`SELECT toStartOfMonth(day) AS month, gpu_model,
		sumIf(alloc_us, kind = 'unallocated') AS never, sumIf(used_us, kind = 'idle') AS idle_us,
		sumIf(used_us, kind = 'unattributed') AS unattr,
		sumIf(greatest(alloc_us - used_us, 0), kind = 'container') AS unused
	FROM (`+dayGroups(monthsCond)+`)
	WHERE `+varFilter("model", "gpu_model")+`
	GROUP BY month, gpu_model`) + `)
WHERE ` + utcBook + `
ORDER BY month, gpu_model`
}

// sqlSharingMix is held GPUs per day by sharing mode.
func sqlSharingMix() string {
	return `SELECT toStartOfDay(hour) AS time, sharing_mode,
	sum(alloc_s) / 3600 / 24 AS "Held GPUs"
FROM (` + hourGroups(rangeCond) + `)
WHERE kind = 'container' AND ` + labelFilters() + `
GROUP BY time, sharing_mode ORDER BY time, sharing_mode`
}

// sqlSharingTable is held and used GPU-hours and efficiency by sharing
// mode over the time range; modes that held as much stay in one order.
func sqlSharingTable() string {
	return `SELECT sharing_mode AS "Sharing mode",
	sum(alloc_s) / 3600 AS "Held GPU-h", sum(used_s) / 3600 AS "Used GPU-h",
	if(sum(alloc_s) > 0, sum(used_s) / sum(alloc_s), NULL) AS "Efficiency"
FROM (` + hourGroups(rangeCond) + `)
WHERE kind = 'container' AND ` + labelFilters() + `
GROUP BY sharing_mode ORDER BY "Held GPU-h" DESC, sharing_mode`
}

// sqlTopWorkloads is the 20 workloads, namespaces with their team, that
// held the most GPU-hours in the time range, from the rollups. Pods are
// only in the raw rows, and deduplicating a month of them (FINAL, or a
// GROUP BY on the row key) took 31 s for 100 GPUs on 18.16: far over a
// dashboard's budget (docs/dashboards.md).
func sqlTopWorkloads() string {
	return `SELECT namespace AS "Namespace", team AS "Team",
	sum(alloc_s) / 3600 AS "Held GPU-h", sum(used_s) / 3600 AS "Used GPU-h",
	if(sum(alloc_s) > 0, sum(used_s) / sum(alloc_s), NULL) AS "Efficiency",
	greatest(sum(alloc_s) - sum(used_s), 0) / 3600 AS "Held but unused GPU-h",
	arrayStringConcat(arraySort(groupUniqArray(gpu_model)), ', ') AS "Models",
	arrayStringConcat(arraySort(groupUniqArray(sharing_mode)), ', ') AS "Sharing modes"
FROM (` + hourGroups(rangeCond) + `)
WHERE kind = 'container' AND ` + labelFilters() + `
GROUP BY namespace, team
ORDER BY "Held GPU-h" DESC, namespace, team
LIMIT 20`
}

// sqlFindingsOverTime counts findings per day by kind (an episode counts
// on the day it started).
func sqlFindingsOverTime() string {
	return `SELECT toStartOfDay(start_time) AS time, kind, count() AS "Findings"
FROM ` + chFindings + ` FINAL
WHERE $__timeFilter(start_time) AND start_time < $__toTime AND ` + clusterFilter() + " AND " +
		varFilter("team", "team") + " AND " + varFilter("namespace", "namespace") + `
GROUP BY time, kind ORDER BY time, kind`
}

// sqlFindingsTable lists the range's findings, newest first.
func sqlFindingsTable() string {
	return `SELECT start_time AS "Start", end_time AS "End", kind AS "Kind", team AS "Team",
	namespace AS "Namespace", pod AS "Pod", container AS "Container", cluster AS "Cluster", node AS "Node", gpu_uuid AS "GPU",
	noisy_pod AS "Noisy pod", detail AS "Detail"
FROM ` + chFindings + ` FINAL
WHERE $__timeFilter(start_time) AND start_time < $__toTime AND ` + clusterFilter() + " AND " +
		varFilter("team", "team") + " AND " + varFilter("namespace", "namespace") + `
ORDER BY start_time DESC LIMIT 200`
}

// Variable queries: the label as text, its hex as the value.
// Containers' rows only for team and namespace (platform rows have
// neither); every row for the model and the cluster. The cluster
// narrows the others' choices.
func sqlVariable(col string, containers bool) string {
	cond := monthsCond
	if containers {
		cond += " AND kind = 'container'"
	}
	if col != "cluster" {
		cond += " AND " + clusterFilter()
	}
	return `SELECT DISTINCT ` + col + ` AS __text, hex(` + col + `) AS __value FROM ` + chHourly + `
WHERE ` + cond + `
ORDER BY __text`
}

// sqlStaleHours counts the hours of the months shown whose newest hourly
// rollup build does not cover every write (ledger/clickhouse: a mark per
// writer and hour, a build's coverage per writer): the panels show such an
// hour as last rolled up, while the report reads it from the raw rows.
// Zero means the money panels equal the report. Every joined subquery is
// named (ClickHouse 24+ refuses unnamed ones).
func sqlStaleHours() string {
	return `SELECT countIf(stale) AS "Hours not yet rolled up" FROM (
	SELECT hour, max(has_hdr = 0 OR has_cov = 0 OR cbuild != hbuild OR cseq < seq) AS stale
	FROM (
		SELECT hour, writer, seq, has_cov, cbuild, cseq FROM (
			SELECT hour, writer, max(seq) AS seq FROM ` + chMarks + ` WHERE ` + monthsCond + ` GROUP BY hour, writer
		) AS marks ANY LEFT JOIN (
			SELECT hour, writer, argMax(build, version) AS cbuild, argMax(max_seq, version) AS cseq, toUInt8(1) AS has_cov
			FROM ` + chCoverage + ` WHERE grain = 'h' AND ` + monthsCond + ` GROUP BY hour, writer
		) AS coverage USING (hour, writer)
	) AS covered ANY LEFT JOIN (
		SELECT period AS hour, argMax(build, version) AS hbuild, toUInt8(1) AS has_hdr
		FROM ` + chBuilds + ` WHERE grain = 'h' AND ` + strings.ReplaceAll(monthsCond, "hour", "period") + ` GROUP BY period
	) AS headers USING (hour)
	GROUP BY hour
)`
}
