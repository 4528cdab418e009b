package chdbcompat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/dashboards/dashprices"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/dashboards"
	"github.com/gpuledger/gpuledger/dashboards/chcheck"
	"github.com/gpuledger/gpuledger/internal/chdbtest"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/quota"
)

var engine *chdbtest.Engine

func TestMain(m *testing.M) {
	engine = chdbtest.Setup()
	code := m.Run()
	engine.Close()
	os.Exit(code)
}

// db is the ledger database both engines hold.
const db = "compat"

// The captured day: two UTC days, so day and month buckets have work.
var (
	from = time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
	to   = from.AddDate(0, 0, 2)
)

// parseOnly are the statements only a server can run, each parsed on chDB
// with EXPLAIN AST instead, and why.
var parseOnly = []struct{ marker, why string }{
	{"ON CLUSTER", "distributed DDL needs a cluster of servers and ZooKeeper"},
	{"Replicated", "Replicated* tables need ZooKeeper/Keeper and a server's macros"},
	{"Distributed(", "Distributed tables need a cluster definition in a server's config"},
	{"INSERT INTO", "the rows of a client INSERT travel beside the statement (Native blocks) and are not in query_log: the tables' contents are compared instead"},
}

// TestStatementsAgreeOnClickHouse26 runs the store's real code against an
// 18.16 server with query logging on, then replays on chDB every statement
// the server logged: the DDL in order (the database is created by the
// migrations' own statements), the rows copied part by part (unmerged
// duplicates included, so FINAL has work), then every read on both engines,
// comparing column names, types and values (floats to 1e-6).
func TestStatementsAgreeOnClickHouse26(t *testing.T) {
	engine.Require(t)
	ctx := context.Background()
	// The engine lives as long as the test binary: a second run (-count)
	// starts from no database, as the first.
	if err := engine.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	srv, dir := startLoggingServer(t)
	defer os.RemoveAll(dir)
	defer srv.Kill()
	user := chdbtest.Server{Addr: srv.HTTPAddr(), User: chtest.User, Password: chtest.Password}
	admin := chdbtest.Server{Addr: srv.HTTPAddr(), User: "default"}

	reads := workload(ctx, t, srv.DSN(db), admin)
	logged, err := loggedStatements(ctx, user, admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) < 20 {
		t.Fatalf("query_log holds %d statements of the store: is query logging on?", len(logged))
	}

	// Cluster mode's DDL, which no single server runs.
	clusterDDL, err := clickhouse.MigrationDDL(db, "gpuledger")
	if err != nil {
		t.Fatal(err)
	}
	var ddl, selects, parsed []string
	for _, q := range append(logged, clusterDDL...) {
		switch {
		case reason(q) != "":
			parsed = append(parsed, q)
		case isDDL(q):
			ddl = append(ddl, q)
		case isRead(q):
			selects = append(selects, q)
		default:
			t.Errorf("statement of no known kind: %s", q)
		}
	}
	selects = append(selects, reads...)

	for _, q := range parsed {
		if _, err := engine.Query(ctx, "EXPLAIN AST "+q, ""); err != nil {
			t.Errorf("chDB cannot parse (%s): %v\n%s", reason(q), err, q)
		}
	}
	for _, q := range orderDDL(ddl) {
		if err := engine.Exec(ctx, q); err != nil {
			t.Fatalf("DDL on chDB: %v\n%s", err, q)
		}
	}
	if err := engine.Mirror(ctx, user, db, false); err != nil {
		t.Fatal(err)
	}

	// The copied tables: every row, and FINAL collapsing the duplicates.
	tables, err := user.Tables(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	replacing, err := user.Query(ctx, "SELECT name FROM system.tables WHERE database = '"+db+"' AND engine LIKE 'Replacing%'")
	if err != nil {
		t.Fatal(err)
	}
	// The copies must be exact, to the bit of every float (a float read
	// back from either engine's JSON is the same float64 only then).
	exact := map[string]bool{}
	for _, tb := range tables {
		q := "SELECT * FROM " + db + "." + tb + " ORDER BY tuple(*)"
		selects, exact[q] = append(selects, q), true
	}
	for _, tb := range strings.Fields(replacing) {
		q := "SELECT * FROM " + db + "." + tb + " FINAL ORDER BY tuple(*)"
		selects, exact[q] = append(selects, q), true
	}
	dup := "SELECT count() > (SELECT count() FROM " + db + ".ledger_rows FINAL) FROM " + db + ".ledger_rows"
	for name, run := range map[string]func(string) (result, error){"18.16": serverRun(ctx, user), "26.7": chdbRun(ctx)} {
		r, err := run(dup)
		if err != nil || len(r.Data) != 1 || fmt.Sprint(r.Data[0][0]) != "1" {
			t.Errorf("%s: ledger_rows holds no rows that FINAL collapses (%v, %v)", name, r.Data, err)
		}
	}

	seen := map[string]bool{}
	n := 0
	for _, q := range selects {
		if seen[q] {
			continue
		}
		seen[q] = true
		n++
		want, err := serverRun(ctx, user)(q)
		if err != nil {
			t.Errorf("18.16: %v\n%s", err, q)
			continue
		}
		got, err := chdbRun(ctx)(q)
		if err != nil {
			t.Errorf("26.7: %v\n%s", err, q)
			continue
		}
		tol := 1e-6
		if exact[q] {
			tol = 0
		}
		if d := compare(want, got, strings.Contains(strings.ToUpper(q), "ORDER BY"), tol); d != "" {
			t.Errorf("%s\n%s", d, q)
		}
	}
	t.Logf("%d statements logged by 18.16 (+%d of cluster mode): %d DDL replayed, %d parsed only, %d reads compared on %s rows in %d tables; %s",
		len(logged), len(clusterDDL), len(ddl), len(parsed), n, countRows(ctx, t, user), len(tables), time.Since(start).Round(time.Millisecond))
}

// startLoggingServer starts the 18.16 server of ledger/clickhouse/chtest
// with query_log on: the server reads config.d and users.d beside its
// configuration files.
func startLoggingServer(t *testing.T) (*chtest.Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gpuledger-chcompat-")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"config.d/query_log.xml": `<?xml version="1.0"?><yandex><query_log><database>system</database><table>query_log</table>` +
			`<flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log></yandex>`,
		"users.d/log_queries.xml": `<?xml version="1.0"?><yandex><profiles><default><log_queries>1</log_queries></default></profiles></yandex>`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := chtest.Start(context.Background(), dir)
	if err != nil {
		os.RemoveAll(dir)
		how := "install clickhouse-server (make deps)"
		testenv.RequireIntegration(t, "ClickHouse 18.16 unavailable: "+err.Error(), how)
		t.FailNow()
	}
	return srv, dir
}

// workload runs the store's code against the server: migrations, appends
// (a day twice, as a retried shipment writes it), prices, quota and node
// label changes, rollups, and every read: the report as serve builds it,
// the aggregates of each bucket, rows, findings, labels and quota. It
// returns the dashboards' statements, expanded as Grafana sends them.
func workload(ctx context.Context, t *testing.T, rawDSN string, admin chdbtest.Server) []string {
	t.Helper()
	dsn, err := ledger.ParseDSN(rawDSN)
	if err != nil {
		t.Fatal(err)
	}
	if err := clickhouse.Migrate(ctx, dsn, ""); err != nil {
		t.Fatal(err)
	}
	// Merges off, so the duplicates stay in their own parts.
	if _, err := admin.Query(ctx, "SYSTEM STOP MERGES"); err != nil {
		t.Fatal(err)
	}
	s, err := clickhouse.Open(ctx, dsn, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, findings := scenario()
	if err := s.Append(ctx, rows, findings); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, rows[:len(rows)/2], findings[:1]); err != nil { // the retry
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	book, err := pricebook.Parse("prices.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WritePrices(ctx, dashprices.Of(book), from); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendQuota(ctx, []quota.Change{
		{At: from, Entry: quota.Entry{Key: quota.Key{Source: "resourcequota", Object: "ml/gpu", Resource: "nvidia.com/gpu"}, Team: "ml", Milli: 2000}},
		{At: from.Add(time.Hour), Entry: quota.Entry{Key: quota.Key{Source: "resourcequota", Object: "ml/gpu", Resource: "nvidia.com/gpu"}, Team: "ml", Milli: 3000}},
		{At: from.Add(2 * time.Hour), Entry: quota.Entry{Key: quota.Key{Source: "kueue", Object: "ads", Resource: "nvidia.com/gpu"}, Team: "ads", Milli: 1000, LimitMilli: 2000}, Deleted: true},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendNodeLabels(ctx, []nodelabel.Change{
		{Node: "node-a", Key: "region", Value: "eu-west", At: from},
		{Node: "node-b", Key: "region", Value: "us-east", At: from},
		{Node: "node-b", Key: "region", At: from.Add(time.Hour), Deleted: true},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.RebuildRollups(ctx, from, to); err != nil {
		t.Fatal(err)
	}

	if _, err := report.Build(ctx, s, book, from, to); err != nil {
		t.Fatal(err)
	}
	la, _ := time.LoadLocation("America/Los_Angeles")
	for _, q := range []ledger.AggregateQuery{
		{From: from, To: to, Bucket: ledger.BucketNone},
		{From: from, To: to, Bucket: ledger.BucketHour},
		{From: from, To: to, Bucket: ledger.BucketDay},
		{From: from, To: to, Bucket: ledger.BucketMonth},
		{From: from, To: to, Bucket: ledger.BucketDay, Location: la},
		{From: from, To: to, Bucket: ledger.BucketMonth, Location: la}, // serve's month index
		{From: from, To: to, Bucket: ledger.BucketDay, ByDevice: true},
		{From: from, To: to, Bucket: ledger.BucketNone, ByNode: true},
		{From: from.Add(90 * time.Minute), To: to.Add(-7 * time.Minute), Bucket: ledger.BucketHour},
	} {
		if _, err := s.Aggregate(ctx, q); err != nil {
			t.Fatalf("aggregate %+v: %v", q, err)
		}
	}
	each := func(name string, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	each("rows", s.Rows(ctx, from, to, func(attribution.Row) error { return nil }))
	each("container rows", s.ContainerRows(ctx, from, to, func(attribution.Row) error { return nil }))
	each("findings", s.Findings(ctx, from, to, func(attribution.Finding) error { return nil }))
	each("quota", s.QuotaChanges(ctx, from, to, func(quota.Change) error { return nil }))
	_, err = s.NodeLabels(ctx, "region", from.Add(2*time.Hour))
	each("node labels", err)
	// The coverage rollup joined in the server, and raw chunks at the
	// edges of a window that cuts hours.
	_, err = s.Coverage(ctx, from, to)
	each("coverage", err)
	_, err = s.Coverage(ctx, from.Add(90*time.Minute), to.Add(-7*time.Minute))
	each("coverage of cut hours", err)

	return dashboardStatements(t)
}

// dashboardStatements are the ClickHouse dashboard's panels and variables
// for the two days with All selected, as Grafana's plugin sends them; the
// tables are those of the data source's default database.
func dashboardStatements(t *testing.T) []string {
	t.Helper()
	files, err := dashboards.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Panels []struct {
			Targets []struct{ RawSQL string } `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(files[dashboards.FileName(dashboards.UIDChargebackCH)], &b); err != nil {
		t.Fatal(err)
	}
	var raw []string
	for _, p := range b.Panels {
		for _, tg := range p.Targets {
			raw = append(raw, tg.RawSQL)
		}
	}
	for _, v := range b.Templating.List {
		if m, ok := v.Query.(map[string]any); ok {
			if s, _ := m["rawSql"].(string); s != "" {
				raw = append(raw, s)
			}
		}
	}
	all := map[string]chcheck.Value{"cluster": {All: true}, "team": {All: true}, "namespace": {All: true}, "model": {All: true}}
	var out []string
	for _, sql := range raw {
		q, err := chcheck.Expand(sql, chcheck.Range{From: from, To: to.Add(-time.Millisecond)}, all)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "/* dashboard */ USE_DB "+q)
	}
	if len(out) < 10 {
		t.Fatalf("%d dashboard statements", len(out))
	}
	return out
}

// scenario is two days of three GPUs at 15-minute intervals: containers
// of three teams (one on a MIG slice), unallocated and idle capacity, and
// a finding a day.
func scenario() ([]attribution.Row, []attribution.Finding) {
	var rows []attribution.Row
	const step = 900.0
	gpus := []struct{ node, uuid, model, mode, profile string }{
		{"node-a", "GPU-a0", "A100-SXM4-80GB", "exclusive", ""},
		{"node-a", "GPU-a1", "A100-SXM4-80GB", "mig", "3g.40gb"},
		{"node-b", "GPU-b0", "L4", "time-slicing", ""},
	}
	teams := []struct{ team, ns, pod string }{{"ml", "train", "trainer-0"}, {"ads", "ctr", "ctr-7"}, {"search", "rank", "ranker-3"}}
	for ts := from; ts.Before(to); ts = ts.Add(step * time.Second) {
		for gi, g := range gpus {
			base := attribution.Row{IntervalStart: ts, IntervalEnd: ts.Add(step * time.Second), Node: g.node, GPUUUID: g.uuid,
				GPUModel: g.model, SharingMode: g.mode, Method: attribution.MethodMeasured, SliceID: g.uuid}
			alloc, used := 0.0, 0.0
			if (ts.Hour()+gi)%5 != 0 {
				tm := teams[(ts.Hour()/6+gi)%len(teams)]
				r := base
				r.Kind, r.Team, r.Namespace, r.Pod, r.Container = attribution.KindContainer, tm.team, tm.ns, tm.pod, "main"
				r.PodUID, r.MIGProfile = "uid-"+tm.pod, g.profile
				r.SliceID = fmt.Sprintf("%s::%d", g.uuid, gi)
				r.AllocatedGPUSeconds = step * 0.75
				r.UsedGPUSeconds = step * 0.75 * (0.3 + 0.5*math.Abs(math.Sin(float64(ts.Unix())/3607)))
				r.MemoryMiBSeconds, r.EnergyJoules = 2048*step, 240*r.UsedGPUSeconds
				alloc, used = r.AllocatedGPUSeconds, r.UsedGPUSeconds
				rows = append(rows, r)
			}
			r := base
			r.Kind, r.AllocatedGPUSeconds = attribution.KindUnallocated, step-alloc
			rows = append(rows, r)
			r = base
			r.Kind, r.UsedGPUSeconds, r.EnergyJoules = attribution.KindIdle, step-used, 60*(step-used)
			rows = append(rows, r)
		}
	}
	var findings []attribution.Finding
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		findings = append(findings, attribution.Finding{Start: d.Add(3 * time.Hour), End: d.Add(5 * time.Hour),
			Kind: attribution.FindingIdleAllocation, Node: "node-a", GPUUUID: "GPU-a0", Namespace: "train", Pod: "trainer-0",
			Container: "main", Team: "ml", Detail: "held but idle"})
	}
	return rows, findings
}

// endMark is the statement the test sends last as the store's user: the
// server logs a statement when it has finished, possibly after its answer
// went out, so the log is read once the mark is in it.
const endMark = "SELECT 'chdbcompat: end of the workload'"

// loggedStatements are the statements the store's user sent, as 18.16's
// query_log holds them (type 2: finished), each once, in the order they
// finished.
func loggedStatements(ctx context.Context, user, admin chdbtest.Server) ([]string, error) {
	if _, err := user.Query(ctx, endMark); err != nil {
		return nil, err
	}
	var out string
	err := testenv.EventuallyErr(30*time.Second, func() error {
		if _, err := admin.Query(ctx, "SYSTEM FLUSH LOGS"); err != nil {
			return err
		}
		var err error
		out, err = admin.Query(ctx, "SELECT query FROM system.query_log WHERE type = 2 AND user = '"+chtest.User+
			"' ORDER BY event_time, query_start_time FORMAT JSONEachRow")
		if err != nil {
			return fmt.Errorf("cannot read query_log: %w", err)
		}
		if !strings.Contains(out, "end of the workload") {
			return errors.New("query_log lacks the workload's last statement")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var qs []string
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r struct{ Query string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("cannot read query_log row %q: %w", line, err)
		}
		q := strings.TrimSpace(r.Query)
		if q != endMark && !seen[q] {
			seen[q] = true
			qs = append(qs, q)
		}
	}
	return qs, nil
}

func reason(q string) string {
	for _, p := range parseOnly {
		if strings.Contains(q, p.marker) {
			return p.why
		}
	}
	return ""
}

func firstWord(q string) string {
	f := strings.Fields(strings.ToUpper(q))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func isDDL(q string) bool {
	switch firstWord(q) {
	case "CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE":
		return true
	}
	return false
}

func isRead(q string) bool {
	switch firstWord(q) {
	case "SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXISTS":
		return true
	}
	return false
}

// orderDDL puts the database first, the tables before their ALTERs, and
// the renames after both, then the drops:
// query_log's times are in whole seconds, so its order within one second
// is not the order sent.
func orderDDL(qs []string) []string {
	rank := func(q string) int {
		u := strings.ToUpper(q)
		switch {
		case strings.HasPrefix(u, "CREATE DATABASE"):
			return 0
		case strings.HasPrefix(u, "CREATE"):
			return 1
		case strings.HasPrefix(u, "ALTER"):
			return 2
		case strings.HasPrefix(u, "RENAME"):
			// Migration 8 renames a table away once its columns are
			// there, and its copy into the name; query_log orders the
			// statements of one second arbitrarily.
			return 3
		}
		return 4
	}
	out := append([]string(nil), qs...)
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	// A column added AFTER a column another ALTER adds goes in after
	// that ALTER (migration 10's after migration 9's), whatever order
	// the log gave two statements of one second: each pass moves one
	// such ALTER behind the one it needs, n passes at most.
	for pass := 0; pass < len(out); pass++ {
		moved := false
		for i, q := range out {
			m := addedAfter.FindStringSubmatch(q)
			if m == nil {
				continue
			}
			for j := i + 1; j < len(out); j++ {
				n := addedAfter.FindStringSubmatch(out[j])
				if n != nil && n[1] == m[1] && n[2] == m[3] {
					out = slices.Insert(slices.Delete(out, i, i+1), j, q)
					moved = true
					break
				}
			}
			if moved {
				break
			}
		}
		if !moved {
			break
		}
	}
	return out
}

// addedAfter matches an ALTER that adds a column after another: the
// table, the column added and the column it goes after.
var addedAfter = regexp.MustCompile(`(?i)^ALTER TABLE (\S+)(?: ON CLUSTER \S+)? ADD COLUMN (\w+) .* AFTER (\w+)`)

// result is a JSONCompact answer.
type result struct {
	Meta []struct{ Name, Type string }
	Data [][]any
}

// useDB strips the mark of a dashboard statement, whose tables are those
// of the data source's default database: both engines get them qualified
// with the ledger's (qualify), the one form both take.
func useDB(q string) (string, bool) {
	const p = "/* dashboard */ USE_DB "
	if strings.HasPrefix(q, p) {
		return q[len(p):], true
	}
	return q, false
}

func serverRun(ctx context.Context, s chdbtest.Server) func(string) (result, error) {
	return func(q string) (result, error) {
		var r result
		if body, ok := useDB(q); ok {
			q = qualify(body)
		}
		out, err := s.Query(ctx, q+"\nFORMAT JSONCompact")
		if err != nil {
			return r, err
		}
		return decode(out)
	}
}

// decode reads a JSONCompact answer, numbers as their text: 18.16 quotes
// 64-bit integers and chDB does not, and a float64 would round them.
func decode(out string) (result, error) {
	var r result
	d := json.NewDecoder(strings.NewReader(out))
	d.UseNumber()
	if err := d.Decode(&r); err != nil {
		return r, fmt.Errorf("cannot read JSONCompact: %w", err)
	}
	return r, nil
}

func chdbRun(ctx context.Context) func(string) (result, error) {
	return func(q string) (result, error) {
		var r result
		if body, ok := useDB(q); ok {
			q = qualify(body)
		}
		out, err := engine.Query(ctx, q, "JSONCompact")
		if err != nil {
			return r, err
		}
		return decode(out)
	}
}

// qualify names the ledger database before each of the dashboard's tables.
func qualify(q string) string {
	for _, tb := range []string{"ledger_rollup_hourly", "ledger_rollup_builds", "ledger_rollup_coverage", "ledger_rollup_marks", "ledger_findings", "gpuledger_prices"} {
		q = strings.ReplaceAll(q, " "+tb, " "+db+"."+tb)
	}
	return q
}

// compare says how got differs from want: names, types, row count, values
// (numbers to tol, relative beyond 1; exactly when tol is 0), in
// order when the statement orders its rows, as sets otherwise.
func compare(want, got result, ordered bool, tol float64) string {
	if len(want.Meta) != len(got.Meta) {
		return fmt.Sprintf("columns: 18.16 %v, 26.7 %v", want.Meta, got.Meta)
	}
	for i := range want.Meta {
		if want.Meta[i] != got.Meta[i] {
			return fmt.Sprintf("column %d: 18.16 %+v, 26.7 %+v", i, want.Meta[i], got.Meta[i])
		}
	}
	if len(want.Data) != len(got.Data) {
		return fmt.Sprintf("rows: 18.16 %d, 26.7 %d", len(want.Data), len(got.Data))
	}
	w, g := want.Data, got.Data
	if !ordered {
		w, g = sorted(w), sorted(g)
	}
	// Only fractional numbers may differ by tol: integers, times and text
	// must be equal.
	tols := make([]float64, len(want.Meta))
	for j, m := range want.Meta {
		typ := strings.TrimPrefix(m.Type, "Nullable(")
		if strings.HasPrefix(typ, "Float") || strings.HasPrefix(typ, "Decimal") {
			tols[j] = tol
		}
	}
	for i := range w {
		for j := range w[i] {
			if !same(w[i][j], g[i][j], tols[j]) {
				return fmt.Sprintf("row %d column %s: 18.16 %v, 26.7 %v", i, want.Meta[j].Name, w[i][j], g[i][j])
			}
		}
	}
	return ""
}

func sorted(rows [][]any) [][]any {
	out := append([][]any(nil), rows...)
	key := func(r []any) string { b, _ := json.Marshal(r); return string(b) }
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

func same(a, b any, tol float64) bool {
	if fmt.Sprint(a) == fmt.Sprint(b) {
		return true
	}
	if tol == 0 {
		return false
	}
	x, okx := number(a)
	y, oky := number(b)
	if !okx || !oky {
		return false
	}
	return math.Abs(x-y) <= tol*math.Max(1, math.Abs(x))
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

func countRows(ctx context.Context, t *testing.T, s chdbtest.Server) string {
	out, err := s.Query(ctx, "SELECT sum(rows) FROM system.parts WHERE active AND database = '"+db+"'")
	if err != nil {
		t.Error(err)
	}
	return strings.TrimSpace(out)
}
