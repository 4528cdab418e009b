package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestBackupCronJob: with backup.enabled the ClickHouse ledger is backed
// up on schedule to the chart's PVC (kept on uninstall), checked, and the
// newest `keep` kept; the pod runs as every other Job does.
func TestBackupCronJob(t *testing.T) {
	objs := render(t, "-f", "testdata/all-features.yaml")
	cj := named[*batchv1.CronJob](t, objs, "gpuledger-backup")
	if cj.Spec.Schedule != "15 1 * * *" || cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("schedule %q, concurrency %q", cj.Spec.Schedule, cj.Spec.ConcurrencyPolicy)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	c := pod.Containers[0]
	script := strings.Join(c.Command, " ")
	for _, s := range []string{`gpuledger ledger backup --out "/backups/$name"`, `gpuledger ledger restore --check --from "/backups/$name"`, "KEEP + 1"} {
		if !strings.Contains(script, s) {
			t.Errorf("backup command lacks %q:\n%s", s, script)
		}
	}
	if e := env(t, c, "KEEP"); e.Value != "14" {
		t.Errorf("KEEP %q, want backup.keep 14", e.Value)
	}
	checkClickHouseEnv(t, "backup", c, pod.Volumes, "gpuledger-clickhouse")
	checkNonRoot(t, "backup", c)
	report := named[*batchv1.CronJob](t, objs, "gpuledger-report").Spec.JobTemplate.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken ||
		pod.SecurityContext.String() != report.SecurityContext.String() ||
		c.SecurityContext.String() != report.Containers[0].SecurityContext.String() {
		t.Errorf("backup pod securityContext %v / %v, want the report Job's %v / %v", pod.SecurityContext, c.SecurityContext,
			report.SecurityContext, report.Containers[0].SecurityContext)
	}
	pvc := named[*corev1.PersistentVolumeClaim](t, objs, "gpuledger-backups")
	if claim := volume(t, pod.Volumes, "backups").PersistentVolumeClaim; claim == nil || claim.ClaimName != pvc.Name {
		t.Errorf("backups volume %+v, want the PVC %s", volume(t, pod.Volumes, "backups"), pvc.Name)
	}
	if pvc.Annotations["helm.sh/resource-policy"] != "keep" || *pvc.Spec.StorageClassName != "standard" ||
		pvc.Spec.Resources.Requests.Storage().String() != "50Gi" {
		t.Errorf("backups PVC %+v", pvc)
	}

	// An existing claim: used, and no PVC of the chart's own.
	objs = render(t, "--set", "backup.enabled=true", "--set", "backup.persistence.existingClaim=ledger-backups")
	pod = named[*batchv1.CronJob](t, objs, "gpuledger-backup").Spec.JobTemplate.Spec.Template.Spec
	if claim := volume(t, pod.Volumes, "backups").PersistentVolumeClaim; claim == nil || claim.ClaimName != "ledger-backups" {
		t.Errorf("backups volume %+v, want the existing claim", volume(t, pod.Volumes, "backups"))
	}
	for _, o := range objs {
		if o.Kind == "PersistentVolumeClaim" {
			t.Errorf("PVC %s rendered beside an existing claim", o.Name)
		}
	}
	for _, bad := range []string{"backup.keep=0", "backup.keep=1001", "backup.schedule=", "backup.persistence.accessModes={Sometimes}"} {
		if _, err := helm(t, "template", "gpuledger", chartDir, "--set", "backup.enabled=true", "--set", bad); err == nil {
			t.Errorf("--set %s accepted", bad)
		}
	}
}

// The CronJob's retention, run by /bin/sh on a directory: a partial
// backup left by a killed pod is removed, the newest `keep` complete
// backups stay, nothing else on the volume is touched. The two gpuledger
// commands are replaced by making the new backup's directory: what they
// do is tested in cmd/gpuledger against a real ClickHouse.
func TestBackupRetention(t *testing.T) {
	objs := render(t, "--set", "backup.enabled=true", "--set", "backup.keep=3")
	c := named[*batchv1.CronJob](t, objs, "gpuledger-backup").Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	script := c.Command[len(c.Command)-1]
	var lines []string
	for _, l := range strings.Split(script, "\n") {
		switch {
		case strings.HasPrefix(l, "gpuledger ledger backup"):
			l = `mkdir "/backups/$name"`
		case strings.HasPrefix(l, "gpuledger ledger restore --check"):
			l = `test -d "/backups/$name"`
		}
		lines = append(lines, l)
	}
	dir := t.TempDir()
	script = strings.ReplaceAll(strings.Join(lines, "\n"), "/backups", dir)
	for _, d := range []string{"ledger-20261101T023000Z", "ledger-20261102T023000Z", "ledger-20261103T023000Z", "ledger-20261104T023000Z",
		".ledger-20261105T023000Z.partial-123", "lost+found", "notes"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-ec", script)
	cmd.Env = append(os.Environ(), "KEEP="+env(t, c, "KEEP").Value)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	// The new backup is named by today's time: it sorts after the others.
	if len(got) != 5 || !slices.Equal(got[:4], []string{"ledger-20261103T023000Z", "ledger-20261104T023000Z", got[2], "lost+found"}) ||
		!strings.HasPrefix(got[2], "ledger-2") || got[4] != "notes" {
		t.Errorf("left %v, want the two newest old backups, the new one, lost+found and notes", got)
	}
}
