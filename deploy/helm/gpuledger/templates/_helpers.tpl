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

{{/* ClickHouse is configured when a DSN or an existing Secret is given. */}}
{{- define "gpuledger.clickhouse" -}}
{{- if or .Values.clickhouse.dsn .Values.clickhouse.existingSecret -}}true{{- end -}}
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
