{{/* Chart name, possibly overridden. */}}
{{- define "clusterd-ts.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the release name, with the chart name appended unless it already contains it. */}}
{{- define "clusterd-ts.fullname" -}}
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

{{- define "clusterd-ts.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels: stable across upgrades. */}}
{{- define "clusterd-ts.selectorLabels" -}}
app.kubernetes.io/name: {{ include "clusterd-ts.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "clusterd-ts.labels" -}}
helm.sh/chart: {{ include "clusterd-ts.chart" . }}
{{ include "clusterd-ts.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: mindcluster
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "clusterd-ts.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Namespace of the leader-election Lease (and of the Role that covers it). */}}
{{- define "clusterd-ts.leaseNamespace" -}}
{{- default .Release.Namespace .Values.controller.leaderElectionNamespace -}}
{{- end -}}

{{/* The label the leader puts on its own pod: LEADER_LABEL in actions/leader-label.action.ts. */}}
{{- define "clusterd-ts.leaderLabel" -}}clusterd-ts.io/leader{{- end -}}

{{/* The Service in front of every replica's http port (metrics and probes). */}}
{{- define "clusterd-ts.metricsServiceName" -}}
{{- printf "%s-metrics" (include "clusterd-ts.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Lease the replicas compete for: LEADER_LEASE_NAME in controllers/manager.ts. */}}
{{- define "clusterd-ts.leaseName" -}}clusterd-ts-leader{{- end -}}

{{/*
Where the controller keeps its own state ConfigMaps and deletes them when a job is gone:
JOB_STATE_NAMESPACE (schemas/job-state) and RECOVERY_STATE_NAMESPACE (controllers/recovery-state-store.ts).
*/}}
{{- define "clusterd-ts.stateNamespace" -}}mindx-dl{{- end -}}

{{- define "clusterd-ts.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
Controller arguments, one per flag of controllers/options.ts. Flags with an env fallback that the
downward API provides (--grpc-host <- POD_IP, --node-name <- NODE_NAME) are only passed when set.
*/}}
{{- define "clusterd-ts.args" -}}
{{- $c := .Values.controller -}}
- {{ printf "--log-level=%s" $c.logLevel | quote }}
- {{ printf "--http-port=%d" (int64 $c.httpPort) | quote }}
- {{ printf "--http-host=%s" $c.httpHost | quote }}
- {{ printf "--grpc-port=%d" (int64 $c.grpcPort) | quote }}
{{- if $c.grpcHost }}
- {{ printf "--grpc-host=%s" $c.grpcHost | quote }}
{{- end }}
{{- if .Values.grpc.tls.enabled }}
- {{ printf "--grpc-tls-cert=%s/%s" (trimSuffix "/" .Values.grpc.tls.mountPath) .Values.grpc.tls.certKey | quote }}
- {{ printf "--grpc-tls-key=%s/%s" (trimSuffix "/" .Values.grpc.tls.mountPath) .Values.grpc.tls.keyKey | quote }}
{{- end }}
- {{ printf "--grpc-unary-qps=%d" (int64 $c.grpcUnaryQps) | quote }}
- {{ printf "--max-served-jobs=%d" (int64 $c.maxServedJobs) | quote }}
- {{ printf "--grpc-caller-check=%s" $c.grpcCallerCheck | quote }}
- {{ printf "--grpc-system-namespaces=%s" $c.grpcSystemNamespaces | quote }}
- {{ printf "--grpc-max-roles-per-job=%d" (int64 $c.grpcMaxRolesPerJob) | quote }}
- {{ printf "--grpc-max-publishers-per-client=%d" (int64 $c.grpcMaxPublishersPerClient) | quote }}
- {{ printf "--grpc-max-fault-publishers=%d" (int64 $c.grpcMaxFaultPublishers) | quote }}
- {{ printf "--grpc-stream-max-pending=%d" (int64 $c.grpcStreamMaxPending) | quote }}
- {{ printf "--recovery-report-timeout-seconds=%d" (int64 $c.recoveryReportTimeoutSeconds) | quote }}
{{- if $c.recoveryTimings }}
- {{ printf "--recovery-timings=%s" $c.recoveryTimings | quote }}
{{- end }}
- {{ printf "--recovery-feed-window-ms=%d" (int64 $c.recoveryFeedWindowMs) | quote }}
- {{ printf "--hot-switch-new-pod-timeout-seconds=%d" (int64 $c.hotSwitchNewPodTimeoutSeconds) | quote }}
- {{ printf "--hot-switch-backup-pods=%t" $c.hotSwitchBackupPods | quote }}
- {{ printf "--rescheduling=%t" $c.rescheduling | quote }}
- {{ printf "--reschedule-beside-ascend-plugin=%t" $c.rescheduleBesideAscendPlugin | quote }}
- {{ printf "--dry-run=%t" $c.dryRun | quote }}
- {{ printf "--leader-elect=%t" $c.leaderElect | quote }}
- {{ printf "--leader-election-namespace=%s" (include "clusterd-ts.leaseNamespace" .) | quote }}
- {{ printf "--lease-duration-seconds=%d" (int64 $c.leaseDurationSeconds) | quote }}
- {{ printf "--grace-over-time-seconds=%d" (int64 $c.graceOverTimeSeconds) | quote }}
- {{ printf "--pending-escalation-seconds=%d" (int64 $c.pendingEscalationSeconds) | quote }}
- {{ printf "--rack-escalation-ms=%d" (int64 $c.rackEscalationMs) | quote }}
- {{ printf "--super-pod-escalation-ms=%d" (int64 $c.superPodEscalationMs) | quote }}
- {{ printf "--cluster-info-refresh-seconds=%d" (int64 $c.clusterInfoRefreshSeconds) | quote }}
- {{ printf "--cluster-info-refresh-annotation=%t" $c.clusterInfoRefreshAnnotation | quote }}
- {{ printf "--node-taints=%t" $c.nodeTaints | quote }}
- {{ printf "--node-taint-hold-seconds=%d" (int64 $c.nodeTaintHoldSeconds) | quote }}
- {{ printf "--refuse-malformed-job-identity=%t" $c.refuseMalformedJobIdentity | quote }}
- {{ printf "--breaker-window-seconds=%d" (int64 $c.breakerWindowSeconds) | quote }}
- {{ printf "--breaker-domain-nodes=%d" (int64 $c.breakerDomainNodes) | quote }}
- {{ printf "--breaker-domain-chips=%d" (int64 $c.breakerDomainChips) | quote }}
- {{ printf "--breaker-domain-jobs=%d" (int64 $c.breakerDomainJobs) | quote }}
- {{ printf "--breaker-cluster-nodes=%d" (int64 $c.breakerClusterNodes) | quote }}
- {{ printf "--breaker-cluster-chips=%d" (int64 $c.breakerClusterChips) | quote }}
- {{ printf "--breaker-cluster-jobs=%d" (int64 $c.breakerClusterJobs) | quote }}
- {{ printf "--breaker-auto-reset-seconds=%d" (int64 $c.breakerAutoResetSeconds) | quote }}
- {{ printf "--flap-damping-seconds=%d" (int64 $c.flapDampingSeconds) | quote }}
- {{ printf "--flap-damping-recoveries=%d" (int64 $c.flapDampingRecoveries) | quote }}
- {{ printf "--flap-damping-window-seconds=%d" (int64 $c.flapDampingWindowSeconds) | quote }}
- {{ printf "--breaker-domain-label=%s" $c.breakerDomainLabel | quote }}
- {{ printf "--link-down-memory-seconds=%d" (int64 $c.linkDownMemorySeconds) | quote }}
- {{ printf "--relation-fault-config-dir=%s" $c.relationFaultConfigDir | quote }}
- {{ printf "--device-plugin-rules=%t" $c.devicePluginRules | quote }}
- {{ printf "--trust-pod-npu-annotations=%t" $c.trustPodNpuAnnotations | quote }}
- {{ printf "--persist-policy-state=%t" $c.persistPolicyState | quote }}
- {{ printf "--burst-window-ms=%d" (int64 $c.burstWindowMs) | quote }}
- {{ printf "--decision-history-per-job=%d" (int64 $c.decisionHistoryPerJob) | quote }}
- {{ printf "--decision-history-max-records=%d" (int64 $c.decisionHistoryMaxRecords) | quote }}
- {{ printf "--decision-history-ttl-hours=%d" (int64 $c.decisionHistoryTtlHours) | quote }}
- {{ printf "--cluster-system-namespace=%s" $c.clusterSystemNamespace | quote }}
- {{ printf "--pingmesh=%t" $c.pingmesh | quote }}
- {{ printf "--pingmesh-check-interval-ms=%d" (int64 $c.pingmeshCheckIntervalMs) | quote }}
- {{ printf "--max-public-faults=%d" (int64 $c.maxPublicFaults) | quote }}
- {{ printf "--public-fault-namespaces=%s" $c.publicFaultNamespaces | quote }}
- {{ printf "--public-fault-unknown-nodes=%t" $c.publicFaultUnknownNodes | quote }}
- {{ printf "--output-limits=%t" $c.outputLimits | quote }}
- {{ printf "--max-series-per-metric=%d" (int64 $c.maxSeriesPerMetric) | quote }}
{{- if $c.kubeconfig }}
- {{ printf "--kubeconfig=%s" $c.kubeconfig | quote }}
{{- end }}
{{- range $c.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Fails rendering on combinations the schema cannot express. */}}
{{- define "clusterd-ts.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.controller.leaderElect) -}}
{{- fail "replicas > 1 requires controller.leaderElect=true (only the Lease holder may write)" -}}
{{- end -}}
{{- if eq (int .Values.controller.httpPort) (int .Values.controller.grpcPort) -}}
{{- fail "controller.httpPort and controller.grpcPort must differ" -}}
{{- end -}}
{{- if hasKey .Values.podLabels (include "clusterd-ts.leaderLabel" .) -}}
{{- fail "podLabels must not set clusterd-ts.io/leader: the leader sets it on its own pod (the gRPC Service selects it)" -}}
{{- end -}}
{{- if and .Values.grpc.tls.enabled (not .Values.grpc.tls.secretName) -}}
{{- fail "grpc.tls.enabled=true requires grpc.tls.secretName" -}}
{{- end -}}
{{- end -}}
