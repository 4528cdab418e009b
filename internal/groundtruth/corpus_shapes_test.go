package groundtruth

import "testing"

// Hand-worked expectations for the scenarios of real clusters' shapes,
// from each story as the generator writes it.

func wantMethod(t *testing.T, tr *Truth, key, want string) {
	t.Helper()
	c, ok := tr.Containers[key]
	if !ok {
		t.Errorf("%s: no truth", key)
		return
	}
	if c.Method != want {
		t.Errorf("%s: method %q, want %q", key, c.Method, want)
	}
}

func TestCorpusHAMiInitContainers(t *testing.T) {
	sc, tr := loadCorpus(t, "hami-initcontainers")
	// Entries: istio-init, istio-proxy (empty), warm-cache 50, model 30.
	wantNear(t, "warm-cache allocated", tr.Containers["llm/rag-server/warm-cache"].Allocated, 0.5*(40-2))
	// The model starts when warm-cache, the last plain init container, ends
	// at 40 s.
	wantNear(t, "model allocated", tr.Containers["llm/rag-server/model"].Allocated, 0.3*(300-40))
	// Older HAMi: two entries for one init and two regular containers; the
	// worker starts when migrate ends at 5 s.
	wantNear(t, "old worker allocated", tr.Containers["legacy/batch-worker/worker"].Allocated, 0.4*(300-5))
	for _, k := range []string{"llm/rag-server/istio-init", "llm/rag-server/istio-proxy", "legacy/batch-worker/migrate"} {
		if _, ok := tr.Containers[k]; ok {
			t.Errorf("%s holds no GPU, yet has a truth", k)
		}
	}
	wantNear(t, "GPU 0 unallocated", *tr.GPUs[sc.GPUs[0].UUID].Unallocated, 300-19-78)
}

func TestCorpusHAMiKubeletMismatch(t *testing.T) {
	sc, tr := loadCorpus(t, "hami-kubelet-mismatch")
	wantNear(t, "trainer allocated", tr.Containers["research/train-2gpu/trainer"].Allocated, 2*0.6*300)
	wantNear(t, "infer allocated", tr.Containers["serving/infer/server"].Allocated, 0.25*300)
	// The job's 30% of GPU 3, and on GPU 0, which its annotation does not
	// name, at least its use there: 10% from 60 s to 240 s.
	wantNear(t, "job allocated", tr.Containers["batch/nightly/job"].Allocated, 0.3*300+0.1*180)
	wantMethod(t, tr, "research/train-2gpu/trainer", "")
	wantMethod(t, tr, "serving/infer/server", "")
	wantMethod(t, tr, "batch/nightly/job", MethodEstimated)
	// GPU 0: only infer's quarter and the job's use, although kubelet
	// named it for the trainer.
	for i, want := range []float64{225 - 18, 120, 120, 210} {
		wantNear(t, "unallocated", *tr.GPUs[sc.GPUs[i].UUID].Unallocated, want)
	}
	job := tr.Containers["batch/nightly/job"]
	if len(tr.InstanceGroups) != 1 || tr.InstanceGroups[0].Used != job.Used || job.Used < 0.1*180 {
		t.Errorf("groups %+v, want the job alone with its used %v (GPU 0 included)", tr.InstanceGroups, job.Used)
	}
}

func TestCorpusHAMiAnnotationEdit(t *testing.T) {
	sc, tr := loadCorpus(t, "hami-annotation-edit")
	wantNear(t, "tenant-a allocated", tr.Containers["team-a/tenant-a/model"].Allocated, 0.25*300)
	wantNear(t, "tenant-b allocated", tr.Containers["team-b/tenant-b/model"].Allocated, 16384.0/81920*300)
	wantNear(t, "GPU 1 unallocated", *tr.GPUs[sc.GPUs[1].UUID].Unallocated, 300)
}

func TestCorpusMIGRenamed(t *testing.T) {
	sc, tr := loadCorpus(t, "mig-renamed")
	half1g := 300.0 / 7 / 2 // the 1g label's 2 replicas, not gpu.replicas' 4
	for _, k := range []string{"chat-0", "chat-1", "embed", "rerank"} {
		wantNear(t, k+" allocated", tr.Containers["serving/"+k+"/srv"].Allocated, half1g)
	}
	wantMethod(t, tr, "serving/embed/srv", "")
	wantMethod(t, tr, "serving/chat-0/srv", MethodEstimated)
	wantNear(t, "finetune allocated", tr.Containers["training/finetune/main"].Allocated, 300*3.0/7)
	wantNear(t, "pretrain allocated", tr.Containers["training/pretrain/main"].Allocated, 300)
	wantNear(t, "MIG GPU unallocated", *tr.GPUs[sc.GPUs[0].UUID].Unallocated, 300*4.0/14)
	if m := tr.Containers["training/pretrain/main"].SharingMode; m != "exclusive" {
		t.Errorf("pretrain mode %q, want exclusive", m)
	}
}

func TestCorpusDRAClaims(t *testing.T) {
	sc, tr := loadCorpus(t, "dra-claims")
	wantNear(t, "trainer allocated", tr.Containers["research/trainer/main"].Allocated, 300)
	wantNear(t, "mig-infer allocated", tr.Containers["serving/mig-infer/server"].Allocated, 300*3.0/7)
	// gpu-0: a+b to 150.5, a alone to 200.5, a+preload to 230.5 (shared-c's
	// worker starts when its init container preload ends), then a+c.
	wantNear(t, "shared-a allocated", tr.Containers["serving/shared-a/worker"].Allocated, 150.5/2+50+30.0/2+69.5/2)
	wantNear(t, "shared-b allocated", tr.Containers["serving/shared-b/worker"].Allocated, 150.5/2)
	wantNear(t, "preload allocated", tr.Containers["serving/shared-c/preload"].Allocated, 30.0/2)
	wantNear(t, "shared-c allocated", tr.Containers["serving/shared-c/worker"].Allocated, 69.5/2)
	for k, c := range tr.Containers {
		if c.SharingMode != "dra" || c.Method != "" {
			t.Errorf("%s: mode/method %q/%q, want dra/measured", k, c.SharingMode, c.Method)
		}
	}
	if len(tr.Containers) != 6 {
		t.Errorf("%d containers with a truth, want 6 (no-uuid and elsewhere hold nothing)", len(tr.Containers))
	}
	wantNear(t, "gpu-3 (no uuid) unallocated", *tr.GPUs[sc.GPUs[3].UUID].Unallocated, 300)
	if tr.GPUs[sc.GPUs[0].UUID].Unallocated != nil {
		t.Error("the shared GPU has unallocated seconds")
	}
}

func TestCorpusGKESharing(t *testing.T) {
	sc, tr := loadCorpus(t, "gke-sharing")
	for _, k := range []string{"web-0", "web-1", "web-2"} {
		wantNear(t, k+" allocated", tr.Containers["apps/"+k+"/app"].Allocated, 100)
	}
	wantNear(t, "trainer allocated", tr.Containers["ml/trainer/main"].Allocated, 300)
	wantNear(t, "mig-train (gi2 is the 3g) allocated", tr.Containers["ml/mig-train/main"].Allocated, 300*3.0/7)
	wantNear(t, "mig-web-0 allocated", tr.Containers["apps/mig-web-0/app"].Allocated, 300.0/7/3)
	wantNear(t, "mig-solo (gi3 is the 2g) allocated", tr.Containers["apps/mig-solo/app"].Allocated, 300*2.0/7/3)
	wantMethod(t, tr, "apps/mig-solo/app", "")
	wantMethod(t, tr, "apps/mig-web-0/app", MethodEstimated)
	modes := map[string]string{"apps/web-0/app": "timeslicing", "ml/trainer/main": "exclusive",
		"ml/mig-train/main": "mig", "apps/mig-web-1/app": "mig+timeslicing"}
	for k, want := range modes {
		if got := tr.Containers[k].SharingMode; got != want {
			t.Errorf("%s: mode %q, want %q", k, got, want)
		}
	}
	// nvidia2 is index 0 (minor 2): fully held by the three clients.
	if tr.GPUs[sc.GPUs[0].UUID].Unallocated != nil || tr.GPUs[sc.GPUs[1].UUID].Unallocated != nil {
		t.Error("the time-shared or the whole GPU has unallocated seconds")
	}
	wantNear(t, "MIG GPU unallocated", *tr.GPUs[sc.GPUs[2].UUID].Unallocated, 300*8.0/21)
}
