package dashboards

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// board is the part of a dashboard's JSON these tests read.
type board struct {
	UID    string       `json:"uid"`
	Title  string       `json:"title"`
	Panels []boardPanel `json:"panels"`
	Links  []struct {
		Type string `json:"type"`
	} `json:"links"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			IncludeAll bool   `json:"includeAll"`
			AllValue   string `json:"allValue"`
			Multi      bool   `json:"multi"`
		} `json:"list"`
	} `json:"templating"`
}

type boardPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Repeat     string `json:"repeat"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr       string `json:"expr"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit   string                 `json:"unit"`
			Max    *float64               `json:"max"`
			Links  []struct{ URL string } `json:"links"`
			Custom struct {
				Stacking struct {
					Mode string `json:"mode"`
				} `json:"stacking"`
			} `json:"custom"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

func loadBoards(t *testing.T) map[string]board {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(jsonDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]board{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var b board
		if err := json.Unmarshal(data, &b); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if filepath.Base(f) != b.UID+".json" {
			t.Errorf("%s holds dashboard %s", f, b.UID)
		}
		out[b.UID] = b
	}
	return out
}

// TestStableUIDs: the dashboards keep these UIDs; alert annotations
// and bookmarks depend on them.
func TestStableUIDs(t *testing.T) {
	bs := loadBoards(t)
	want := []string{"gpuledger-advice", "gpuledger-ch-chargeback", "gpuledger-chargeback", "gpuledger-findings", "gpuledger-fleet", "gpuledger-node-gpu", "gpuledger-sharing"}
	var got []string
	for uid := range bs {
		got = append(got, uid)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("dashboards = %v, want %v", got, want)
	}
}

// TestLinkedPanels: the panels alerts link to are where the links say.
func TestLinkedPanels(t *testing.T) {
	bs := loadBoards(t)
	for _, tc := range []struct {
		uid   string
		id    int
		title string
	}{
		{"gpuledger-fleet", 20, "Collector scrape targets"},
		{"gpuledger-fleet", 21, "Sources up by node"},
		{"gpuledger-fleet", 22, "Collection cycles per second"},
		{"gpuledger-fleet", 23, "Ledger outbox: rows pending"},
		{"gpuledger-fleet", 24, "Ledger outbox: oldest pending row age"},
		{"gpuledger-fleet", 28, "Ledger: rows written, batches shipped and failed"},
		{"gpuledger-fleet", 29, "Embedded ledger: write errors and dropped rows"},
		{"gpuledger-node-gpu", 1, "GPU ${gpu}: where its time went"},
		{"gpuledger-node-gpu", 4, "Unattributed share of busy time"},
		{"gpuledger-findings", 1, "Noisy neighbours"},
		{"gpuledger-findings", 2, "Starved containers and their noisy neighbour"},
		{"gpuledger-findings", 3, "Held but unused"},
	} {
		i := slices.IndexFunc(bs[tc.uid].Panels, func(p boardPanel) bool { return p.ID == tc.id })
		if i < 0 {
			t.Errorf("%s has no panel %d (%q)", tc.uid, tc.id, tc.title)
			continue
		}
		if got := bs[tc.uid].Panels[i].Title; got != tc.title {
			t.Errorf("%s panel %d is %q, want %q", tc.uid, tc.id, got, tc.title)
		}
	}
}

func TestPanelsAndVariables(t *testing.T) {
	for uid, b := range loadBoards(t) {
		if uid == UIDChargebackCH {
			continue // SQL on the ledger: TestClickHouseBoard and dashboards/chcheck
		}
		ids := map[int]bool{}
		for _, p := range b.Panels {
			if ids[p.ID] || p.ID == 0 {
				t.Errorf("%s: panel id %d (%q) is zero or repeated", uid, p.ID, p.Title)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				continue
			}
			if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
				t.Errorf("%s panel %q: datasource %q with %d targets, want ${datasource} and some", uid, p.Title, p.Datasource.UID, len(p.Targets))
			}
			for _, tg := range p.Targets {
				if tg.Datasource.UID != "${datasource}" {
					t.Errorf("%s panel %q: a target queries %q", uid, p.Title, tg.Datasource.UID)
				}
				// Every query follows the cluster filter; every query of
				// collector series follows the node filter (advise's
				// series are per workload, serve's quota per team, not
				// per node).
				if !strings.Contains(tg.Expr, `cluster=~"$cluster"`) ||
					(strings.Contains(tg.Expr, "gpuledger_") && !strings.Contains(tg.Expr, "gpuledger_advice_") &&
						!strings.HasPrefix(tg.Expr, "sum by (team, source) (gpuledger_team_quota_gpus{") && !strings.Contains(tg.Expr, `node=~"$node"`)) {
					t.Errorf("%s panel %q: query ignores the cluster or node variable: %s", uid, p.Title, tg.Expr)
				}
			}
			for _, l := range p.FieldConfig.Defaults.Links {
				if !strings.HasPrefix(l.URL, Path(UIDDrilldown)+"?") {
					t.Errorf("%s panel %q links to %s, want the drill-down", uid, p.Title, l.URL)
				}
			}
		}
		vars := map[string]bool{}
		for _, v := range b.Templating.List {
			vars[v.Name] = true
			if v.Type == "query" && (!v.IncludeAll || v.AllValue != ".*" || !v.Multi) {
				t.Errorf("%s variable %s: includeAll %v allValue %q multi %v, want true .* true", uid, v.Name, v.IncludeAll, v.AllValue, v.Multi)
			}
		}
		for _, want := range []string{"datasource", "cluster", "node", "team", "namespace"} {
			if !vars[want] {
				t.Errorf("%s has no %s variable", uid, want)
			}
		}
		if len(b.Links) == 0 {
			t.Errorf("%s links to no other dashboard", uid)
		}
	}
}

// TestDrilldownStacksToOneHundredPercent: the per-GPU usage panel is a
// stack of shares of capacity (containers, unattributed, idle) capped at
// 100%, repeated per GPU.
func TestDrilldownStacksToOneHundredPercent(t *testing.T) {
	b := loadBoards(t)[UIDDrilldown]
	i := slices.IndexFunc(b.Panels, func(p boardPanel) bool { return p.ID == PanelDrillUsage })
	if i < 0 {
		t.Fatal("no usage panel")
	}
	p := b.Panels[i]
	d := p.FieldConfig.Defaults
	if d.Custom.Stacking.Mode != "normal" || d.Unit != "percentunit" || d.Max == nil || *d.Max != 1 || p.Repeat != "gpu" {
		t.Errorf("usage panel: stacking %q unit %q max %v repeat %q, want normal percentunit 1 gpu", d.Custom.Stacking.Mode, d.Unit, d.Max, p.Repeat)
	}
	parts := map[string]bool{}
	for _, tg := range p.Targets {
		for _, m := range []string{mUsed, mUnattributed, mIdle} {
			if strings.Contains(tg.Expr, m) && strings.Contains(tg.Expr, "/ on (cluster, node, gpu) group_left () sum by (cluster, node, gpu) (rate("+mCapacity) {
				parts[m] = true
			}
		}
	}
	if len(parts) != 3 {
		t.Errorf("usage panel shows %v of capacity, want used, unattributed and idle", parts)
	}
}
