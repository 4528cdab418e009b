package dashboards

import "strconv"

// Stable dashboard UIDs: alert annotations and links between dashboards
// name them, so they never change.
const (
	UIDFleet      = "gpuledger-fleet"
	UIDChargeback = "gpuledger-chargeback"
	UIDDrilldown  = "gpuledger-node-gpu"
	UIDSharing    = "gpuledger-sharing"
	UIDFindings   = "gpuledger-findings"
	// UIDChargebackCH is the chargeback on the ClickHouse ledger.
	UIDChargebackCH = "gpuledger-ch-chargeback"
	UIDAdvice       = "gpuledger-advice"
)

// Stable panel IDs of the panels that alerts and other dashboards link to
// (viewPanel). Every other panel has a fixed ID as well; these are named
// because something outside the dashboard depends on them.
const (
	// Fleet overview: collector health.
	PanelFleetCollectorsUp = 20
	PanelFleetSourcesUp    = 21
	PanelFleetCycles       = 22
	PanelFleetOutbox       = 23
	PanelFleetOutboxAge    = 24
	PanelFleetShipping     = 28
	PanelFleetLedgerErrors = 29

	// Drill-down.
	PanelDrillUsage       = 1
	PanelDrillUnattribute = 4

	// Team chargeback: quota, held and used.
	PanelChargebackQuota = 8

	// Findings.
	PanelFindingsNoisy   = 1
	PanelFindingsStarved = 2
	PanelFindingsIdle    = 3
)

// slugs are the URL slugs of the dashboards' titles.
var slugs = map[string]string{
	UIDFleet:        "gpuledger-fleet-overview",
	UIDChargeback:   "gpuledger-team-chargeback",
	UIDDrilldown:    "gpuledger-node-and-gpu-drill-down",
	UIDSharing:      "gpuledger-sharing-efficiency",
	UIDFindings:     "gpuledger-findings",
	UIDChargebackCH: "gpuledger-chargeback-from-the-ledger-clickhouse",
	UIDAdvice:       "gpuledger-sharing-advice",
}

// Path is the Grafana path of a dashboard, relative to Grafana's root URL.
func Path(uid string) string {
	return "/d/" + uid + "/" + slugs[uid]
}

// PanelPath is the Grafana path that opens one panel of a dashboard.
func PanelPath(uid string, panelID int) string {
	return Path(uid) + "?viewPanel=" + strconv.Itoa(panelID)
}
