package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// boards are the dashboards, by UID, in the order they are generated.
var boards = []struct {
	uid   string
	build func() *dashboard.DashboardBuilder
}{
	{UIDFleet, fleet},
	{UIDChargeback, chargeback},
	{UIDDrilldown, drilldown},
	{UIDSharing, sharing},
	{UIDFindings, findings},
	{UIDChargebackCH, chargebackClickHouse},
	{UIDAdvice, advice},
}

// FileName is the file a dashboard is written to: its UID with .json.
func FileName(uid string) string { return uid + ".json" }

// Build builds every dashboard.
func Build() ([]dashboard.Dashboard, error) {
	out := make([]dashboard.Dashboard, 0, len(boards))
	for _, b := range boards {
		d, err := b.build().Build()
		if err != nil {
			return nil, fmt.Errorf("cannot build dashboard %s: %w", b.uid, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Render is a dashboard's JSON as committed: indented by two spaces, with
// a final newline, and no HTML escaping (PromQL's < and > stay readable).
func Render(d dashboard.Dashboard) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("cannot render dashboard %s: %w", deref(d.Uid), err)
	}
	return buf.Bytes(), nil
}

// Generate renders every dashboard, by file name.
func Generate() (map[string][]byte, error) {
	ds, err := Build()
	if err != nil {
		return nil, err
	}
	files := make(map[string][]byte, len(ds))
	for _, d := range ds {
		data, err := Render(d)
		if err != nil {
			return nil, err
		}
		files[FileName(deref(d.Uid))] = data
	}
	return files, nil
}

// WriteDir writes every dashboard into dir, which must exist.
func WriteDir(dir string) error {
	files, err := Generate()
	if err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("cannot write dashboard %s: %w", path, err)
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
