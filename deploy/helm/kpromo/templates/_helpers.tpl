{{/* Base name: "<release>" when it contains the chart name, else "<release>-<chart>". */}}
{{- define "kpromo.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kpromo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Controller Deployment, Service, ConfigMap, Role(Binding)s and leader Lease. */}}
{{- define "kpromo.controllerName" -}}
{{- printf "%s-controller" (include "kpromo.fullname" .) -}}
{{- end -}}

{{- define "kpromo.exporterName" -}}
{{- printf "%s-exporter" (include "kpromo.fullname" .) -}}
{{- end -}}

{{- define "kpromo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kpromo.controllerName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kpromo.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "kpromo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kpromo
{{- end -}}

{{- define "kpromo.controllerSelectorLabels" -}}
app.kubernetes.io/name: {{ include "kpromo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "kpromo.exporterSelectorLabels" -}}
app.kubernetes.io/name: {{ include "kpromo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: exporter
{{- end -}}

{{/* image reference from {repository, tag, digest}; tag defaults to appVersion. */}}
{{- define "kpromo.image" -}}
{{- $img := index . 0 -}}
{{- $root := index . 1 -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* JSON list of the namespaces the controller reconciles (config.namespaces, default: the release namespace). */}}
{{- define "kpromo.namespaces" -}}
{{- if .Values.config.shard.name -}}
{{- list | toJson -}}
{{- else if .Values.config.namespaces -}}
{{- .Values.config.namespaces | uniq | toJson -}}
{{- else -}}
{{- list .Release.Namespace | toJson -}}
{{- end -}}
{{- end -}}

{{- define "kpromo.tokensMountPath" -}}/etc/kpromo-tokens{{- end -}}
{{- define "kpromo.kubeconfigMountPath" -}}/etc/kpromo-kubeconfig{{- end -}}

{{- define "kpromo.staticTokensSecret" -}}
{{- $t := .Values.config.auth.staticTokens -}}
{{- if $t.existingSecret -}}
{{- $t.existingSecret -}}
{{- else if $t.tokens -}}
{{- printf "%s-api-tokens" (include "kpromo.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The controller's config.yaml (controller/src/config.ts ConfigSchema). */}}
{{- define "kpromo.config" -}}
{{- $c := .Values.config -}}
{{- $namespaces := include "kpromo.namespaces" . | fromJsonArray -}}
{{- $svc := include "kpromo.controllerName" . -}}
{{- $auth := dict "tokenReview" $c.auth.tokenReview "tokenAudiences" $c.auth.tokenAudiences "anonymousMetrics" $c.auth.anonymousMetrics -}}
{{- if $c.auth.jwt -}}
{{- $_ := set $auth "jwt" $c.auth.jwt -}}
{{- end -}}
{{- with ($c.auth.agents | default dict).identities -}}
{{- $_ := set $auth "agents" (dict "identities" .) -}}
{{- end -}}
{{- range $k := list "perSource" "tokenReviews" "reviewClient" "tokenCache" "refusalLog" -}}
{{- with index $c.auth $k -}}
{{- $_ := set $auth $k . -}}
{{- end -}}
{{- end -}}
{{- if include "kpromo.staticTokensSecret" . -}}
{{- $_ := set $auth "staticTokensFile" (printf "%s/%s" (include "kpromo.tokensMountPath" .) $c.auth.staticTokens.key) -}}
{{- end -}}
{{- $le := dict "enabled" $c.leaderElection.enabled "namespace" .Release.Namespace "name" $svc "leaseDurationSeconds" (int $c.leaderElection.leaseDurationSeconds) -}}
{{- if not (kindIs "invalid" $c.leaderElection.renewIntervalMs) -}}
{{- $_ := set $le "renewIntervalMs" (int $c.leaderElection.renewIntervalMs) -}}
{{- end -}}
{{- if not (kindIs "invalid" $c.leaderElection.renewDeadlineMs) -}}
{{- $_ := set $le "renewDeadlineMs" (int $c.leaderElection.renewDeadlineMs) -}}
{{- end -}}
{{- $mcpPort := int $c.mcp.port -}}
{{- $hosts := list -}}
{{- range $h := list (printf "%s.%s.svc" $svc $.Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc $.Release.Namespace) -}}
{{- $hosts = append $hosts $h -}}
{{- $hosts = append $hosts (printf "%s:%d" $h $mcpPort) -}}
{{- end -}}
{{- $mcp := dict "enabled" $c.mcp.enabled "host" "0.0.0.0" "port" $mcpPort "path" $c.mcp.path "allowedHosts" (concat $hosts $c.mcp.allowedHosts | uniq) "allowedOrigins" $c.mcp.allowedOrigins "write" $c.mcp.write "maxSessions" (int $c.mcp.maxSessions) "maxSessionsPerCaller" (int $c.mcp.maxSessionsPerCaller) "sessionIdleSeconds" (int $c.mcp.sessionIdleSeconds) -}}
{{- $o := $c.mcp.oauth | default dict -}}
{{- $oauth := dict "authorizationServers" (default (list) $o.authorizationServers) "resourceName" (default "kpromo" $o.resourceName) -}}
{{- range $k := list "resource" "scopesSupported" "resourceDocumentation" -}}
{{- with index $o $k -}}
{{- $_ := set $oauth $k . -}}
{{- end -}}
{{- end -}}
{{- $_ := set $mcp "oauth" $oauth -}}
{{- $lsa := $c.lineStopAlerts | default dict -}}
{{- $access := list -}}
{{- $accessDefault := $namespaces -}}
{{- if $c.shard.name -}}
{{- $accessDefault = list "*" -}}
{{- end -}}
{{- range $r := $c.clusterAccess -}}
{{- $access = append $access (dict "namespaces" (default $accessDefault $r.namespaces) "contexts" (default (list) $r.contexts) "kubeconfigSecrets" (default (list) $r.kubeconfigSecrets) "inCluster" (default false $r.inCluster) "targetNamespaces" (default (list) $r.targetNamespaces)) -}}
{{- end -}}
{{- $supplyChain := dict "namespace" .Release.Namespace "trustedKeys" list "signingKeys" list -}}
{{- range $kind, $default := dict "trustedKeys" "cosign.pub" "signingKeys" "key.pem" -}}
{{- range $a := (index ($c.supplyChain | default dict) $kind) | default list -}}
{{- $_ := set $supplyChain $kind (append (index $supplyChain $kind) (dict "name" $a.name "secret" $a.secret "key" (default $default $a.key) "namespaces" (default (list) $a.namespaces))) -}}
{{- end -}}
{{- end -}}
{{- $cfg := dict
  "namespaces" $namespaces
  "defaultNamespace" (default .Release.Namespace $c.defaultNamespace)
  "lineStopAlerts" (dict "label" (default "kpromo_stop_line" $lsa.label) "liftOnResolve" (default false $lsa.liftOnResolve))
  "workers" (int $c.workers)
  "kubeClient" (dict "qps" (int $c.kubeClient.qps) "burst" (int $c.kubeClient.burst))
  "logLevel" $c.logLevel
  "server" (dict "host" "0.0.0.0" "port" (int $c.server.port))
  "auth" $auth
  "leaderElection" $le
  "mcp" $mcp
  "egress" (dict "allowedCidrs" $c.egress.allowedCidrs)
  "clusterAccess" $access
  "supplyChain" $supplyChain
  "persons" (dict "identities" (default (dict) $c.persons.identities) "prefixes" (default (list) $c.persons.prefixes))
  "maxAttempts" (int $c.maxAttempts)
  "resourceKinds" (default (list) $c.resourceKinds)
  "shutdownGraceSeconds" (int $c.shutdownGraceSeconds)
-}}
{{- if $c.shard.name -}}
{{- $shard := dict "name" $c.shard.name -}}
{{- if $c.shard.namespaceSelector -}}
{{- $_ := set $shard "namespaceSelector" $c.shard.namespaceSelector -}}
{{- end -}}
{{- $_ := set $cfg "shard" $shard -}}
{{- end -}}
{{- if $c.lineStopNamespace -}}
{{- $_ := set $cfg "lineStopNamespace" $c.lineStopNamespace -}}
{{- end -}}
{{- if $c.orgPolicyNamespace -}}
{{- $_ := set $cfg "orgPolicyNamespace" $c.orgPolicyNamespace -}}
{{- end -}}
{{- if $c.planURL -}}
{{- $_ := set $cfg "planURL" $c.planURL -}}
{{- end -}}
{{- if $c.tracing.otlpEndpoint -}}
{{- $_ := set $cfg "tracing" (dict "otlpEndpoint" $c.tracing.otlpEndpoint) -}}
{{- end -}}
{{- if $c.kubeconfig.context -}}
{{- fail "config.kubeconfig.context: the control cluster is the cluster kpromo is installed in, reached as its ServiceAccount; the kubeconfig Secret supplies Environment clusters only (Environments name its contexts in spec.cluster.context): unset config.kubeconfig.context" -}}
{{- end -}}
{{- if $c.kubeconfig.existingSecret -}}
{{- /* Environment contexts only: the controller refuses a kubeconfig in a pod unless told so. */ -}}
{{- $_ := set $cfg "kubeconfig" (printf "%s/%s" (include "kpromo.kubeconfigMountPath" .) $c.kubeconfig.key) -}}
{{- $_ := set $cfg "controlCluster" (dict "inCluster" true) -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* JSON list of the key Secrets config.supplyChain names (in the release namespace). */}}
{{- define "kpromo.keySecrets" -}}
{{- $names := list -}}
{{- range $kind := list "trustedKeys" "signingKeys" -}}
{{- range $a := (index ($.Values.config.supplyChain | default dict) $kind) | default list -}}
{{- $names = append $names $a.secret -}}
{{- end -}}
{{- end -}}
{{- $names | uniq | sortAlpha | toJson -}}
{{- end -}}

{{/* What the controller does with kpromo objects in the namespaces it reconciles (rbac.yaml). */}}
{{- define "kpromo.controllerRules" -}}
- apiGroups: [promotions.kpromo.dev]
  resources: [applications, environments, promotionflows, notifications]
  verbs: [get, list, watch]
- apiGroups: [promotions.kpromo.dev]
  # What agents may do alone (and the kill switch): read when an agent calls, never written.
  resources: [agentpolicies]
  verbs: [get, list]
- apiGroups: [promotions.kpromo.dev]
  # Stop the line: watched to hold plans; created/deleted for callers RBAC allowed, and for Alertmanager.
  resources: [linestops]
  verbs: [get, list, watch, create, delete]
- apiGroups: [promotions.kpromo.dev]
  # Org-level gates: read (in the orgPolicyNamespace) to judge every plan; never written.
  resources: [orgpolicies]
  verbs: [get, list, watch]
- apiGroups: [promotions.kpromo.dev]
  # create/patch: automatic plans, and the plans and approvals of people RBAC allowed (checked as them
  # with SubjectAccessReview). Automatic labels, status and recording another user as requester or
  # approver need no verb: admission accepts them from the controller's username alone
  # (<release>-controller-identity ConfigMap). No impersonation.
  resources: [promotionplans]
  verbs: [get, list, watch, create, patch]
- apiGroups: [promotions.kpromo.dev]
  resources: [promotionplans/status, applications/status, promotionflows/status, environments/status, notifications/status]
  verbs: [get, update, patch]
- apiGroups: [""]
  # Recorded on kpromo objects; watched (only those about kpromo objects) for MCP `state`.
  resources: [events]
  verbs: [create, patch, list, watch]
- apiGroups: [""]
  # Registry, git and webhook credentials and workload-cluster kubeconfigs referenced by CRs.
  resources: [secrets]
  verbs: [get]
- apiGroups: [""]
  # Release history log (controller/src/history): ConfigMaps labelled promotions.kpromo.dev/history, one per environment and month.
  resources: [configmaps]
  verbs: [get, list, create, update, delete]
{{- end -}}

{{- /*
Rules for config.resourceKinds ("<plural>.<group>"): resource actions write exactly those kinds for
callers RBAC allowed, with the controller's identity. kpromo's own kinds and Kubernetes built-ins (a
group without a dot, such as apps, batch, policy, or *.k8s.io) are refused here as the controller
refuses them (admission must judge their writer).
*/ -}}
{{- define "kpromo.resourceKindRules" -}}
{{- range $k := .Values.config.resourceKinds | uniq }}
{{- $parts := regexSplit "\\." $k 2 }}
{{- $group := index $parts 1 }}
{{- if or (eq $group "promotions.kpromo.dev") (not (contains "." $group)) (eq $group "k8s.io") (hasSuffix ".k8s.io" $group) }}
{{- fail (printf "config.resourceKinds: %s cannot be opened to resource actions (kpromo kinds and Kubernetes built-ins are written by people as themselves, never with the controller identity)" $k) }}
{{- end }}
- apiGroups: [{{ $group | quote }}]
  # config.resourceKinds: written for callers RBAC allowed (resource actions).
  resources: [{{ index $parts 0 | quote }}]
  verbs: [create, patch, delete]
{{- end }}
{{- end -}}
