{{/* Names, labels and shared snippets. */}}

{{- define "gpuledger.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpuledger.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gpuledger.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpuledger.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpuledger.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpuledger.labels" -}}
helm.sh/chart: {{ include "gpuledger.chart" . }}
{{ include "gpuledger.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpuledger
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "gpuledger.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gpuledger.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "gpuledger.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The chart runs its own ClickHouse when no DSN or existing Secret is given
and clickhouse.bundled.enabled is true. */}}
{{- define "gpuledger.clickhouseBundled" -}}
{{- if and .Values.clickhouse.bundled.enabled (not .Values.clickhouse.dsn) (not .Values.clickhouse.existingSecret) -}}true{{- end -}}
{{- end -}}

{{/* A cluster ledger exists: the user's (DSN or existing Secret) or the bundled one. */}}
{{- define "gpuledger.clickhouse" -}}
{{- if or .Values.clickhouse.dsn .Values.clickhouse.existingSecret (include "gpuledger.clickhouseBundled" .) -}}true{{- end -}}
{{- end -}}

{{/* The bundled server's Service (and StatefulSet) name. */}}
{{- define "gpuledger.clickhouseServer" -}}
{{- printf "%s-clickhouse" (include "gpuledger.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The DSN of the bundled server: its Service, the native port, no password. */}}
{{- define "gpuledger.clickhouseBundledDSN" -}}
{{- $b := .Values.clickhouse.bundled -}}
{{- printf "clickhouse://%s@%s.%s.svc:9000/%s" $b.user (include "gpuledger.clickhouseServer" .) .Release.Namespace $b.database -}}
{{- end -}}

{{- define "gpuledger.clickhouseImage" -}}
{{- $i := .Values.clickhouse.bundled.image -}}
{{- if $i.digest -}}
{{- printf "%s@%s" $i.repository $i.digest -}}
{{- else -}}
{{- printf "%s:%s" $i.repository $i.tag -}}
{{- end -}}
{{- end -}}

{{/* The bundled ClickHouse pods only. */}}
{{- define "gpuledger.clickhouseSelectorLabels" -}}
{{ include "gpuledger.selectorLabels" . }}
app.kubernetes.io/component: clickhouse
{{- end -}}

{{/* The serve pods only. */}}
{{- define "gpuledger.serveSelectorLabels" -}}
{{ include "gpuledger.selectorLabels" . }}
app.kubernetes.io/component: serve
{{- end -}}

{{/* With the bundled server, a Job's pod waits (bounded by the Job's
activeDeadlineSeconds) until the server answers /ping: the post-install
hooks start together with the StatefulSet. */}}
{{- define "gpuledger.waitForClickHouse" -}}
{{- if include "gpuledger.clickhouseBundled" . -}}
initContainers:
  - name: wait-clickhouse
    image: {{ include "gpuledger.clickhouseImage" . }}
    imagePullPolicy: {{ .Values.clickhouse.bundled.image.pullPolicy }}
    command:
      - /bin/sh
      - -c
      - until wget -q -T 5 -O /dev/null "http://{{ include "gpuledger.clickhouseServer" . }}.{{ .Release.Namespace }}.svc:8123/ping"; do echo "waiting for ClickHouse"; sleep 3; done
    resources:
      requests:
        cpu: 10m
        memory: 16Mi
      limits:
        memory: 64Mi
    securityContext:
      {{- include "gpuledger.jobSecurityContext" . | nindent 6 }}
{{- end }}
{{- end -}}

{{- define "gpuledger.clickhouseSecret" -}}
{{- default (printf "%s-clickhouse" (include "gpuledger.fullname" .)) .Values.clickhouse.existingSecret -}}
{{- end -}}

{{- define "gpuledger.pricesConfigMap" -}}
{{- default (printf "%s-prices" (include "gpuledger.fullname" .)) .Values.prices.existingConfigMap -}}
{{- end -}}

{{/* Environment for the ClickHouse ledger: DSN from the Secret, the password as a file. */}}
{{- define "gpuledger.clickhouseEnv" -}}
- name: GPULEDGER_LEDGER
  valueFrom:
    secretKeyRef:
      name: {{ include "gpuledger.clickhouseSecret" . }}
      key: {{ .Values.clickhouse.dsnKey }}
- name: GPULEDGER_CLICKHOUSE_PASSWORD_FILE
  value: /etc/gpuledger/clickhouse/password
{{- with .Values.clickhouse.cluster }}
- name: GPULEDGER_CLICKHOUSE_CLUSTER
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "gpuledger.clickhouseVolume" -}}
- name: clickhouse
  secret:
    secretName: {{ include "gpuledger.clickhouseSecret" . }}
    defaultMode: 0440
    items:
      - key: {{ .Values.clickhouse.passwordKey }}
        path: password
{{- end -}}

{{- define "gpuledger.clickhouseMount" -}}
- name: clickhouse
  mountPath: /etc/gpuledger/clickhouse
  readOnly: true
{{- end -}}

{{/* The pods of jobSecurityContext's containers: the ClickHouse password
file is mounted 0440 root-owned, so its group must be theirs. */}}
{{- define "gpuledger.jobPodSecurityContext" -}}
fsGroup: 65532
{{- end -}}

{{/* Jobs run as the image's non-root user: they touch no host path or socket. */}}
{{- define "gpuledger.jobSecurityContext" -}}
runAsUser: 65532
runAsGroup: 65532
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The advisor pods only. */}}
{{- define "gpuledger.advisorSelectorLabels" -}}
{{ include "gpuledger.selectorLabels" . }}
app.kubernetes.io/component: advisor
{{- end -}}

{{/* The collector pods only (the Jobs' pods share the instance labels). */}}
{{- define "gpuledger.collectorSelectorLabels" -}}
{{ include "gpuledger.selectorLabels" . }}
app.kubernetes.io/component: collector
{{- end -}}

{{/* The collector's GPU nodes by platform, when collector.nodeSelector and
collector.affinity are both empty. Each names a label the platform (or
GPU Feature Discovery) puts on GPU nodes by itself. */}}
{{- define "gpuledger.platformNodeSelection" -}}
{{- $p := .Values.platform -}}
{{- if eq $p "gke" -}}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - key: cloud.google.com/gke-accelerator
              operator: Exists
{{- else if eq $p "eks" -}}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      # Any one term: Karpenter, EKS Auto Mode, a node group labelled for
      # Cluster Autoscaler, or GPU Feature Discovery (GPU Operator).
      nodeSelectorTerms:
        - matchExpressions:
            - key: karpenter.k8s.aws/instance-gpu-manufacturer
              operator: In
              values: [nvidia]
        - matchExpressions:
            - key: eks.amazonaws.com/instance-gpu-manufacturer
              operator: In
              values: [nvidia]
        - matchExpressions:
            - key: k8s.amazonaws.com/accelerator
              operator: Exists
        - matchExpressions:
            - key: nvidia.com/gpu.present
              operator: In
              values: ["true"]
{{- else if eq $p "aks" -}}
nodeSelector:
  kubernetes.azure.com/accelerator: nvidia
{{- else -}}
nodeSelector:
  nvidia.com/gpu.present: "true"
{{- end -}}
{{- end -}}

{{/*
"true" when the price book the chart installs is an example one (a
top-level `example: true`, as billing/pricebook reads it): by default the
chart's copy of deploy/prices.yaml. A ConfigMap of the user's
(prices.existingConfigMap) is theirs to vouch for.
*/}}
{{- define "gpuledger.examplePrices" -}}
{{- if not .Values.prices.existingConfigMap -}}
{{- if regexMatch "(?m)^example:[ \t]*true[ \t]*(#.*)?$" (default (.Files.Get "files/prices.yaml") .Values.prices.book) -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/*
This Kubernetes cluster's name in the ledger (collect and serve --cluster).
Where the ledger is shared or external (a DSN or an existing Secret, or the
bundled server off) "default" is refused: two clusters left at the default
would write one cluster's rows, and neither bill nor dashboard could tell
them apart again.
*/}}
{{- define "gpuledger.clusterName" -}}
{{- $c := .Values.clickhouse -}}
{{- if and (eq .Values.cluster.name "default") (or $c.dsn $c.existingSecret (not $c.bundled.enabled)) -}}
{{- fail "cluster.name is required when the ledger is shared or external (clickhouse.dsn or clickhouse.existingSecret set, or clickhouse.bundled.enabled false): set it to this Kubernetes cluster's own name, not \"default\", so that its rows stay apart from other clusters' in the ledger (docs/install.md, \"A fleet of clusters\")" -}}
{{- end -}}
{{- .Values.cluster.name -}}
{{- end -}}

{{/* The metricRelabelings rule that labels every scraped series with the
cluster's name (cluster.metricsLabel); nothing while the name is "default". */}}
{{- define "gpuledger.clusterRelabeling" -}}
{{- if and .Values.cluster.metricsLabel (ne .Values.cluster.name "default") -}}
- action: replace
  targetLabel: cluster
  replacement: {{ include "gpuledger.clusterName" . | quote }}
{{- end -}}
{{- end -}}
