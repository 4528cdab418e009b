#!/usr/bin/env python3
"""Hand-computed ground truth for the review scenarios (arithmetic spelled out; see NOTES.md).
Writes <name>/truth.json in the examples' shape."""
import json, os

def C(alloc, used, mode, team, method=None, **kw):
    d = {"allocated": alloc, "used": used, "sharing_mode": mode, "team": team, "method": method}
    d.update(kw)
    return d

T = {}
# init-ts: replicas 4 -> 1/4 per ::n ID. wait-db 0-10 (no GPU); fetch 10-40; proxy sidecar from 40 (no GPU);
# warm 40-70; mesh sidecar 70-180; server 70-180.
q = 0.25
T["init-ts"] = dict(
    containers={
        "ml/serve-0/fetch": C(30 * q, 30 * 0.5, "timeslicing", "vision", edge_tol=2 * q + 1e-6),
        "ml/serve-0/warm": C(30 * q, 30 * 0.2, "timeslicing", "vision", edge_tol=2 * q + 1e-6),
        "ml/serve-0/mesh": C(110 * q, 110 * 0.1, "timeslicing", "vision", edge_tol=q + 1e-6),
        "ml/serve-0/server": C(110 * q, 110 * 0.4, "timeslicing", "vision", edge_tol=q + 1e-6),
    },
    gpus={"GPU-a1000000-0000-4000-8000-000000000001": {"model": "A100-SXM4-80GB",
          "unallocated": 10 * 1 + 60 * 0.75 + 110 * 0.5}},
)
# hami-init
G0, G1 = "GPU-b2000000-0000-4000-8000-000000000000", "GPU-b2000000-0000-4000-8000-000000000001"
T["hami-init"] = dict(
    containers={
        "llm/h1/a": C(160 * 0.3, 160 * 0.3, "hami", "genai", edge_tol=0.3 + 1e-6),
        "llm/h1/b": C(160 * 0.5, 160 * 0.5, "hami", "genai", edge_tol=0.5 + 1e-6),
        "llm/h2/c": C(170 * 0.4, 170 * 0.2, "hami", "genai", edge_tol=0.4 + 1e-6),
        "llm/h3/loader": C(30 * 0.2, 30 * 0.4, "hami", "genai", edge_tol=0.2 + 1e-6),
        "llm/h3/e": C(150 * 0.3, 150 * 0.1, "hami", "genai", edge_tol=0.3 + 1e-6),
    },
    gpus={G0: {"model": "A100-SXM4-80GB", "unallocated": 10 * 1 + 10 * 0.6 + 160 * 0.3},
          G1: {"model": "A100-SXM4-80GB", "unallocated": 20 * 0.8 + 10 * 0.3 + 150 * 0.2}},
)
# hami-edit
T["hami-edit"] = dict(
    containers={
        "llm/e1/m": C(180 * 0.3, 180 * 0.3, "hami", "genai"),
        "llm/e2/m": C(140 * 0.5, 140 * 0.5, "hami", "genai", edge_tol=0.5 + 1e-6),
    },
    gpus={"GPU-c3000000-0000-4000-8000-000000000000": {"model": "H100-SXM5-80GB",
          "unallocated": 40 * 0.7 + 140 * 0.2}},
)
# dra-shared: gpu-0@node-a held by s1/w, s1/m, s2/w (1/3 each) until 120 s, then s1/w, s1/m (1/2 each)
D = lambda n: "GPU-d4000000-0000-4000-8000-00000000000%d" % n
T["dra-shared"] = dict(
    containers={
        "research/s1/w": C(120 / 3 + 60 / 2, 180 * 0.3, "dra", "research"),
        "research/s1/m": C(120 / 3 + 60 / 2, 180 * 0.1, "dra", "research"),
        "research/s2/w": C(120 / 3, 120 * 0.4, "dra", "research"),
        "infra/s3/x": C(180.0, 180 * 0.6, "dra", "platform"),
        "research/s5/w": C(180 * 3 / 7, 180 * 3 / 7 * 0.7, "dra", "research"),
    },
    gpus={D(0): {"model": "A100-SXM4-80GB", "unallocated": 0.0},
          D(1): {"model": "A100-SXM4-80GB", "unallocated": 180.0},
          D(2): {"model": "A100-SXM4-80GB", "unallocated": 0.0},
          D(3): {"model": "A100-SXM4-80GB", "unallocated": 180 * 4 / 7}},
)
# gke-ts: minor 0 = index 3; minor 3 = index 0; max clients 4
E = lambda n: "GPU-e5000000-0000-4000-8000-00000000000%d" % n
T["gke-ts"] = dict(
    containers={
        "web/g1/app": C(45.0, 180 * 0.2, "timeslicing", "frontend"),
        "web/g2/app": C(45.0, 180 * 0.5, "timeslicing", "frontend"),
        "web/g3/app": C(180.0, 180 * 0.6, "exclusive", "frontend"),
    },
    gpus={E(0): {"model": "H100-SXM5-80GB", "unallocated": 0.0},
          E(1): {"model": "H100-SXM5-80GB", "unallocated": 180.0},
          E(2): {"model": "H100-SXM5-80GB", "unallocated": 180.0},
          E(3): {"model": "H100-SXM5-80GB", "unallocated": 90.0}},
)
# gke-mig: gi0 = the 3g.40gb (second in list); gi13 = the 1g.10gb; no max-clients label -> 2 distinct vgpu IDs, estimated
T["gke-mig"] = dict(
    containers={
        "batch/k1/job": C(180 * 3 / 7, 180 * 3 / 7 * 0.5, "mig", "data"),
        "batch/k2/job": C(180 / 7 / 2, 180 / 7 * 0.7 / 2, "mig+timeslicing", "data", "estimated"),
        "batch/k3/job": C(180 / 7 / 2, 180 / 7 * 0.7 / 2, "mig+timeslicing", "data", "estimated"),
    },
    gpus={"GPU-f6000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 180 * 3 / 7}},
    instance_groups=[{"members": ["batch/k2/job", "batch/k3/job"], "used": 180 / 7 * 0.7}],
)
# migmix-shared
T["migmix-shared"] = dict(
    containers={
        "serving/m1/srv": C(180 / 7 / 2, 180 / 7 * 0.9 / 2, "mig+timeslicing", "serving", "estimated"),
        "serving/m2/srv": C(180 / 7 / 2, 180 / 7 * 0.9 / 2, "mig+timeslicing", "serving", "estimated"),
        "serving/m3/srv": C(180 * 2 / 7 / 2, 180 * 2 / 7 * 0.5 / 2, "mig+timeslicing", "serving", "estimated"),
        "serving/m4/srv": C(180 * 2 / 7 / 2, 180 * 2 / 7 * 0.5 / 2, "mig+timeslicing", "serving", "estimated"),
        "serving/m5/srv": C(180 * 3 / 7, 180 * 3 / 7 * 0.6, "mig", "serving"),
        "serving/m6/srv": C(180 / 4, 180 * 0.3, "timeslicing", "serving"),
    },
    gpus={"GPU-a7000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 180 / 7},
          "GPU-a7000000-0000-4000-8000-000000000001": {"model": "A100-SXM4-80GB", "unallocated": 135.0}},
    instance_groups=[{"members": ["serving/m1/srv", "serving/m2/srv"], "used": 180 / 7 * 0.9},
                     {"members": ["serving/m3/srv", "serving/m4/srv"], "used": 180 * 2 / 7 * 0.5}],
)
# plain-seconds
T["plain-seconds"] = dict(
    containers={
        "ops/p1/main": C(105.0, 60 * 0.25 + 45 * 1.0, "exclusive", "sre", edge_tol=2.000001),
        "train/p2/main": C(180.0, 90 * 0.5, "exclusive", "ml-platform"),
    },
    gpus={"GPU-b8000000-0000-4000-8000-000000000000": {"model": "H100-SXM5-80GB", "unallocated": 75.0,
                                                          "unattributed": 30 * 0.05},
          "GPU-b8000000-0000-4000-8000-000000000001": {"model": "H100-SXM5-80GB", "unallocated": 0.0}},
)

here = os.path.dirname(os.path.abspath(__file__))

# Like the contract examples (churn-106), no exact `unallocated` where a container's
# holding starts or ends inside the run: the collector sees those edges only at polls.
EDGY = {"init-ts": ["GPU-a1000000-0000-4000-8000-000000000001"],
        "hami-init": ["GPU-b2000000-0000-4000-8000-000000000000", "GPU-b2000000-0000-4000-8000-000000000001"],
        "hami-edit": ["GPU-c3000000-0000-4000-8000-000000000000"],
        "plain-seconds": ["GPU-b8000000-0000-4000-8000-000000000000"],
        "init-reuse": ["GPU-cd000000-0000-4000-8000-000000000000", "GPU-cd000000-0000-4000-8000-000000000001"],
        "ts-noreplicas-churn": ["GPU-ce000000-0000-4000-8000-000000000000"]}


def edgy(name, t):
    for g in EDGY.get(name, []):
        t["gpus"][g].pop("unallocated", None)
for name, t in T.items():
    t.setdefault("expect_flags", [])
    t.setdefault("forbid_flags", [{"kind": "noisy_neighbour"}, {"kind": "idle_allocation"}])
    t.update(duration=180, ledgerInterval=60, scenario=name)
    edgy(name, t)
    json.dump(t, open(os.path.join(here, name, "truth.json"), "w"), indent=1, sort_keys=True)

# ---- second batch ----
T2 = {}
H0, H1 = "GPU-c9000000-0000-4000-8000-000000000000", "GPU-c9000000-0000-4000-8000-000000000001"
# GPU0 cores 30+50+50 = 130 > 100 -> scaled by 1/1.3; x4's process on GPU0 is not named by its annotation
T2["hami-scale"] = dict(
    containers={
        "llm/x1/c": C(180 * 0.3 / 1.3 + 180 * 0.6, 180 * (0.2 + 0.4), "hami", "genai"),
        "llm/x2/c": C(180 * 0.5 / 1.3, 180 * 0.3, "hami", "genai"),
        "llm/x3/c": C(180 * 0.5 / 1.3, 180 * 0.2, "hami", "genai"),
        "llm/x4/c": C(180 * 0.2, 180 * 0.1, "hami", "genai", "estimated"),
    },
    gpus={H0: {"model": "H100-SXM5-80GB", "unallocated": 0.0},
          H1: {"model": "H100-SXM5-80GB", "unallocated": 180 * 0.2}},
)
T2["gke-mps-noclients"] = dict(
    containers={f"web/a{i}/c": C(60.0, 180 * f, "mps", "frontend", "estimated") for i, f in ((1, .3), (2, .4), (3, .2))},
    gpus={"GPU-ca000000-0000-4000-8000-000000000000": {"model": "H100-SXM5-80GB", "unallocated": 0.0}},
)
T2["ts-noreplicas"] = dict(
    containers={f"dev/b{i}/c": C(60.0, 180 * f, "timeslicing", "dev", "estimated") for i, f in ((1, .3), (2, .4), (3, .2))},
    gpus={"GPU-cb000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 0.0}},
)
T2["mig-mps"] = dict(
    containers={f"inf/c{i}/c": C(180 * 3 / 7 / 3, 180 * 3 / 7 * 0.7 / 2, "mig+mps", "inference", "estimated") for i in (1, 2)},
    gpus={"GPU-cc000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 180 * (1 - 2 / 7)}},
    instance_groups=[{"members": ["inf/c1/c", "inf/c2/c"], "used": 180 * 3 / 7 * 0.7}],
)
for name, t in T2.items():
    t.setdefault("expect_flags", [])
    t.setdefault("forbid_flags", [{"kind": "noisy_neighbour"}, {"kind": "idle_allocation"}])
    t.update(duration=180, ledgerInterval=60, scenario=name)
    edgy(name, t)
    json.dump(t, open(os.path.join(here, name, "truth.json"), "w"), indent=1, sort_keys=True)

# ---- third batch ----
T3 = {}
# init container reuses the container's GPU (kubelet device reuse); containers hold from when they start (30 s)
T3["init-reuse"] = dict(
    containers={
        "train/job/warmup": C(30.0, 30 * 0.5, "exclusive", "ml", edge_tol=1.000001),
        "train/job/trainer": C(150.0, 150 * 0.9, "exclusive", "ml", edge_tol=1.000001),
        "train/job/sidecar-ish": C(150.0, 150 * 0.1, "exclusive", "ml", edge_tol=1.000001),
    },
    gpus={"GPU-cd000000-0000-4000-8000-000000000000": {"model": "H100-SXM5-80GB", "unallocated": 0.0},
          "GPU-cd000000-0000-4000-8000-000000000001": {"model": "H100-SXM5-80GB", "unallocated": 30.0}},
)
# no replicas label; distinct ::n IDs of the scenario on that GPU = 3 (::0, ::1, ::2), for the whole run
T3["ts-noreplicas-churn"] = dict(
    containers={
        "dev/b1/c": C(60.0, 180 * 0.3, "timeslicing", "dev", "estimated"),
        "dev/b2/c": C(60.0, 180 * 0.4, "timeslicing", "dev", "estimated"),
        "dev/b3/c": C(20.0, 60 * 0.2, "timeslicing", "dev", "estimated", edge_tol=1 / 3 + 1e-6),
    },
    gpus={"GPU-ce000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 120 / 3}},
)
# single strategy: the resource is nvidia.com/gpu, so nvidia.com/gpu.replicas (4) is its label
T3["mig-single-ts"] = dict(
    containers={
        "inf/s1/c": C(180 * 3 / 7 / 4, 180 * 3 / 7 * 0.5 / 2, "mig+timeslicing", "inference", "estimated"),
        "inf/s2/c": C(180 * 3 / 7 / 4, 180 * 3 / 7 * 0.5 / 2, "mig+timeslicing", "inference", "estimated"),
    },
    gpus={"GPU-cf000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 180 - 2 * 180 * 3 / 28}},
    instance_groups=[{"members": ["inf/s1/c", "inf/s2/c"], "used": 180 * 3 / 7 * 0.5}],
)
T3["hami-noisy"] = dict(
    containers={
        "llm/hog/c": C(180 * 0.2, 180 * 0.8, "hami", "genai"),
        "llm/victim/c": C(180 * 0.5, 180 * 0.15, "hami", "genai"),
    },
    gpus={"GPU-d0000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 180 * 0.3}},
    expect_flags=[{"kind": "noisy_neighbour", "namespace": "llm", "pod": "hog"},
                  {"kind": "starved", "namespace": "llm", "pod": "victim"}],
    forbid_flags=[{"kind": "noisy_neighbour", "pod": "victim"}, {"kind": "idle_allocation"}],
)
T3["dra-noisy"] = dict(
    containers={
        "ml/hog/c": C(90.0, 180 * 0.8, "dra", "ml"),
        "ml/victim/c": C(90.0, 180 * 0.15, "dra", "ml"),
    },
    gpus={"GPU-d1000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 0.0}},
    forbid_flags=[{"kind": "idle_allocation"}],
)
for name, t in T3.items():
    t.setdefault("expect_flags", [])
    t.setdefault("forbid_flags", [{"kind": "noisy_neighbour"}, {"kind": "idle_allocation"}])
    t.update(duration=180, ledgerInterval=60, scenario=name)
    edgy(name, t)
    json.dump(t, open(os.path.join(here, name, "truth.json"), "w"), indent=1, sort_keys=True)

# ---- fourth batch ----
T4 = {}
# cores 0: memMiB / device memory (A100-SXM4-80GB: 81920 MiB)
T4["hami-mem"] = dict(
    containers={
        # No core limit: at least its use, .3 > .25 (platforms.md, HAMi).
        "llm/hog/c": C(180 * max(20480 / 81920, 0.3), 180 * 0.3, "hami", "genai"),
        "llm/victim/c": C(180 * 40960 / 81920, 180 * 0.15, "hami", "genai"),
    },
    gpus={"GPU-d2000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 180 - 180 * 0.3 - 180 * 0.5}},
)
for name, t in T4.items():
    t.setdefault("expect_flags", [])
    t.setdefault("forbid_flags", [{"kind": "noisy_neighbour"}, {"kind": "idle_allocation"}])
    t.update(duration=180, ledgerInterval=60, scenario=name)
    edgy(name, t)
    json.dump(t, open(os.path.join(here, name, "truth.json"), "w"), indent=1, sort_keys=True)

# ---- fifth batch ----
T5 = {}
# H100 2g.20gb = 2/7; gi1 = 2nd instance (default gi = position); max clients 3
w = 2 / 7
T5["gke-mig-label"] = dict(
    containers={
        "web/v0/app": C(180 * w / 3, 180 * w * 0.61 * (1 / 2), "mig+timeslicing", "frontend", "estimated"),
        "web/v1/app": C(180 * w / 3, 180 * w * 0.61 * (1 / 2), "mig+timeslicing", "frontend", "estimated"),
        "web/w/app": C(180 * w, 180 * w * 0.5, "mig", "frontend"),
    },
    gpus={"GPU-d3000000-0000-4000-8000-000000000000": {"model": "H100-SXM5-80GB", "unallocated": 180 * (1 - 2 * w / 3 - w)}},
    instance_groups=[{"members": ["web/v0/app", "web/v1/app"], "used": 180 * w * 0.61}],
    # the MIG instance's measured busy time is split by allocation share (estimated), so v0 is
    # not idle by the ledger's numbers; MIG instances are never flagged for compute.
    forbid_flags=[{"kind": "noisy_neighbour"}, {"kind": "idle_allocation", "pod": "w"}, {"kind": "idle_allocation", "pod": "v1"}],
)
for name, t in T5.items():
    t.setdefault("expect_flags", [])
    t.update(duration=180, ledgerInterval=60, scenario=name)
    json.dump(t, open(os.path.join(here, name, "truth.json"), "w"), indent=1, sort_keys=True)

# ---- sixth batch ----
w = 2 / 7
T6 = {"mig-stray": dict(
    containers={
        "lab/a/c": C(180 * w, 180 * w * 0.5, "mig", "lab"),
        "lab/b/c": C(180 * w, 180 * w * 0.4, "mig", "lab"),
    },
    gpus={"GPU-d4100000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 180 * (1 - 2 * w),
                                                          "unattributed": 0.0}},
)}
for name, t in T6.items():
    t.setdefault("expect_flags", [])
    t.setdefault("forbid_flags", [{"kind": "noisy_neighbour"}, {"kind": "idle_allocation"}])
    t.update(duration=180, ledgerInterval=60, scenario=name)
    json.dump(t, open(os.path.join(here, name, "truth.json"), "w"), indent=1, sort_keys=True)

# ---- seventh batch ----
w = 3 / 7
T7 = {"dra-mig-shared": dict(
    containers={
        "ml/p1/c": C(180 * w / 2, 180 * w * 0.6, "dra", "ml", "estimated"),
        "ml/p2/c": C(180 * w / 2, 180 * w * 0.2, "dra", "ml", "estimated"),
    },
    gpus={"GPU-d5000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unallocated": 180 * (1 - w)}},
    instance_groups=[{"members": ["ml/p1/c", "ml/p2/c"], "used": 180 * w * 0.8}],
)}
for name, t in T7.items():
    t.setdefault("expect_flags", [])
    t.setdefault("forbid_flags", [{"kind": "noisy_neighbour"}, {"kind": "idle_allocation"}])
    t.update(duration=180, ledgerInterval=60, scenario=name)
    json.dump(t, open(os.path.join(here, name, "truth.json"), "w"), indent=1, sort_keys=True)

# ---- eighth batch: resource.k8s.io's typed attribute values ({string: ...}) ----
t = json.loads(json.dumps(T3["dra-noisy"]))
t.update(scenario="dra-typed-attrs")
json.dump(t, open(os.path.join(here, "dra-typed-attrs", "truth.json"), "w"), indent=1, sort_keys=True)

# ---- ninth batch: a PID reused 0.5 s after its first owner exited ----
T9 = {"pid-reuse-fast": dict(
    containers={
        "jobs/first/w": C(90 * 0.5, 89.5 * 0.3, "timeslicing", "batch", edge_tol=0.5 + 1e-6),
        "jobs/second/w": C(91 * 0.5, 90 * 0.5, "timeslicing", "batch", edge_tol=0.5 + 1e-6),
    },
    gpus={"GPU-d6000000-0000-4000-8000-000000000000": {"model": "A100-SXM4-80GB", "unattributed": 0.0}},
)}
for name, t in T9.items():
    t.setdefault("expect_flags", [])
    t.setdefault("forbid_flags", [{"kind": "noisy_neighbour"}, {"kind": "idle_allocation"}])
    t.update(duration=180, ledgerInterval=60, scenario=name)
    json.dump(t, open(os.path.join(here, name, "truth.json"), "w"), indent=1, sort_keys=True)

# ---- tenth batch: collector timing (poll interval not a multiple of the driver period, not dividing
# the duration, longer than our simulated driver's 10 s buffer; a start with fractional seconds) ----
T10 = {}
for name, uuid, f in (("poll-500ms-busy", "d7100000", 0.95), ("poll-7s-tail", "d7200000", 0.5), ("poll-15s", "d7300000", 0.5)):
    T10[name] = dict(
        containers={"a/p/c": C(180.0, 180 * f, "exclusive", "t")},
        gpus={"GPU-%s-0000-4000-8000-000000000000" % uuid: {"model": "A100-SXM4-80GB", "unallocated": 0.0, "unattributed": 0.0}},
        forbid_flags=[{"kind": "noisy_neighbour"}],
    )
t = json.loads(json.dumps(T3["hami-noisy"]))
t["gpus"] = {"GPU-d7400000-0000-4000-8000-000000000000": t["gpus"]["GPU-d0000000-0000-4000-8000-000000000000"]}
T10["start-fractional"] = t
for name, t in T10.items():
    t.setdefault("expect_flags", [])
    t.setdefault("forbid_flags", [{"kind": "noisy_neighbour"}, {"kind": "idle_allocation"}])
    t.update(duration=180, ledgerInterval=60, scenario=name)
    json.dump(t, open(os.path.join(here, name, "truth.json"), "w"), indent=1, sort_keys=True)
