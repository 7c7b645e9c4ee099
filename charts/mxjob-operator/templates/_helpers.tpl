{{/*
What the templates share. Every object carries the kustomize install's labels and, besides them,
Helm's recommended ones (mxjob.labels): app.kubernetes.io/name, instance, version, managed-by
and helm.sh/chart. tests/e2e/test_helm_chart.py compares the render with kustomize's, those
five labels being the only difference it allows. The selectors (the Deployments', the
Services', the PDBs', the spread's) and the pods' own labels stay the manifests': a Deployment's
selector is immutable, so an upgrade from an earlier chart must find it as it was, and a new
chart version alone does not roll the pods.
*/}}

{{/* The name every object of the operator carries: the selectors' and the chart's. */}}
{{- define "mxjob.name" -}}
mxjob-operator
{{- end }}

{{/* The labels the base install selects a component's pods by: "webhook" or "controller".
Never more: the Deployments' selectors are immutable. */}}
{{- define "mxjob.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mxjob.name" . }}
app.kubernetes.io/component: {{ . }}
{{- end }}

{{/* Helm's recommended labels, on every object the chart renders (not on the pods, whose
labels are the manifests'). Called with the root context. */}}
{{- define "mxjob.labels" -}}
app.kubernetes.io/name: {{ include "mxjob.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels of an object of kustomize's manifests/base (not of an overlay or a component):
the part-of label the base gives every object, and Helm's. Called with the root context. */}}
{{- define "mxjob.baseLabels" -}}
app.kubernetes.io/part-of: mxjob-operator
{{ include "mxjob.labels" . }}
{{- end }}

{{/* The labels of a base object of a component: its component, part-of and Helm's (whose
app.kubernetes.io/name is the selectors'). Called with (dict "root" $ "component" "webhook"). */}}
{{- define "mxjob.componentLabels" -}}
app.kubernetes.io/component: {{ .component }}
{{ include "mxjob.baseLabels" .root }}
{{- end }}

{{/* An object's labels and the ones a value gives (metrics.*.labels), as one map: a key given
replaces the chart's (e.g. another grafana_dashboard). Called with
(dict "labels" <include of a labels template> "given" <the value's map>). */}}
{{- define "mxjob.withLabels" -}}
{{- toYaml (merge (deepCopy (.given | default dict)) (fromYaml .labels)) }}
{{- end }}

{{/* An image's reference: repository@digest when its digest is set (what hack/release.sh
pushed), else repository:tag. Called with images.<name>. */}}
{{- define "mxjob.imageRef" -}}
{{- if .digest -}}
{{ printf "%s@%s" .repository .digest }}
{{- else -}}
{{ printf "%s:%s" .repository .tag }}
{{- end -}}
{{- end }}

{{/* The container image: images.<name> by reference (mxjob.imageRef), and its pullPolicy when set.
Called with (dict "root" $ "name" "webhook"). */}}
{{- define "mxjob.image" -}}
{{- $image := index .root.Values.images .name -}}
image: {{ include "mxjob.imageRef" $image | quote }}
{{- with $image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* Where a Deployment's pods may run: nodeSelector, tolerations, affinity, priorityClassName
of values.<name>, each only when set. Called with the Deployment's values. */}}
{{- define "mxjob.placement" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The webhook Service's DNS name in the release namespace: what the serving certificate
names and what the API server calls. */}}
{{- /* The controller's metrics port name: HTTPS under metrics.secure, plain HTTP without. */ -}}
{{- define "mxjob.controllerMetricsPort" -}}
{{- ternary "https-metrics" "http-metrics" .Values.metrics.secure -}}
{{- end }}

{{- define "mxjob.webhookHost" -}}
mxjob-webhook.{{ .Release.Namespace }}.svc
{{- end }}

{{/* The caBundle the API server trusts the webhook with, in mode existingSecret: the
certificates.existingSecret.caBundle given, checked to be the base64 of a PEM certificate. */}}
{{- define "mxjob.existingCABundle" -}}
{{- $bundle := .Values.certificates.existingSecret.caBundle | required "certificates.existingSecret.caBundle is required with certificates.mode=existingSecret: the base64 of the PEM CA that signed the Secret mxjob-webhook-tls (its ca.crt)" -}}
{{- if not (hasPrefix "-----BEGIN CERTIFICATE-----" (b64dec $bundle | trim)) -}}
{{- fail "certificates.existingSecret.caBundle must be the base64 of a PEM CA certificate (the Secret's data.ca.crt as stored), not the PEM itself" -}}
{{- end -}}
{{ $bundle }}
{{- end }}

{{/* The Certificate cert-manager's CA injector copies the CA from, in mode cert-manager: the
chart's own CA, or with certificates.certManager.issuerRef the serving certificate (its Secret's
ca.crt is the issuer's CA). */}}
{{- define "mxjob.caSource" -}}
{{- if .Values.certificates.certManager.issuerRef.name -}}
{{ .Release.Namespace }}/mxjob-webhook
{{- else -}}
{{ .Release.Namespace }}/mxjob-webhook-ca
{{- end -}}
{{- end }}

{{/* The annotation cert-manager's CA injector fills a caBundle by, in mode cert-manager. */}}
{{- define "mxjob.injectCA" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ include "mxjob.caSource" . }}
{{- end }}
{{- end }}

{{/* A metrics Service's ServiceMonitor. Called with (dict "root" $ "component" "webhook"
"service" "mxjob-webhook-metrics" "endpoint" (dict ...)). */}}
{{- define "mxjob.serviceMonitor" -}}
{{- $monitor := .root.Values.metrics.serviceMonitor -}}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .service }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "mxjob.withLabels" (dict "labels" (include "mxjob.componentLabels" (dict "root" .root "component" .component)) "given" $monitor.labels) | nindent 4 }}
spec:
  # The Service by its labels; of the Services these select, only the metrics one has the port.
  selector:
    matchLabels:
      {{- include "mxjob.selectorLabels" .component | nindent 6 }}
  namespaceSelector:
    matchNames:
      - {{ .root.Release.Namespace }}
  {{- $endpoint := deepCopy .endpoint }}
  {{- with $monitor.interval }}
  {{- $_ := set $endpoint "interval" . }}
  {{- end }}
  endpoints:
    {{- toYaml (list $endpoint) | nindent 4 }}
{{- end }}

{{/* A webhook's clientConfig: the webhook Service of the release namespace at .path, and in mode
existingSecret the caBundle given. Called with (dict "root" $ "path" "/..."). */}}
{{- define "mxjob.clientConfig" -}}
clientConfig:
  service:
    namespace: {{ .root.Release.Namespace }}
    name: mxjob-webhook
    path: {{ .path }}
    port: 443
  {{- if eq .root.Values.certificates.mode "existingSecret" }}
  caBundle: {{ include "mxjob.existingCABundle" .root }}
  {{- end }}
{{- end }}

{{/* A Deployment's pod template metadata: the selector labels, then values.<name>.podLabels
(the schema refuses the two selector keys) and .podAnnotations. Called with
(dict "component" "webhook" "values" .Values.webhook). */}}
{{- define "mxjob.podMetadata" -}}
labels:
  {{- include "mxjob.selectorLabels" .component | nindent 2 }}
  {{- with .values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .values.podAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The Secrets the kubelet pulls the images with (imagePullSecrets), when given. Called with
the root context. */}}
{{- define "mxjob.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* How a Deployment's pods spread: values.<name>.topologySpreadConstraints when given (an
empty list: none), else the manifests' spread over nodes. Called with
(dict "component" "webhook" "values" .Values.webhook). */}}
{{- define "mxjob.podSpread" -}}
{{- if kindIs "invalid" .values.topologySpreadConstraints }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "mxjob.selectorLabels" .component | nindent 8 }}
{{- else if .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml .values.topologySpreadConstraints | nindent 2 }}
{{- end }}
{{- end }}

{{/* The labels of the objects of `helm test` (templates/tests/): Helm's and their own
component, which no selector of the chart names. Called with the root context. */}}
{{- define "mxjob.testLabels" -}}
app.kubernetes.io/component: helm-test
{{ include "mxjob.labels" . }}
{{- end }}

{{/* What makes an object a `helm test` hook: made by each run at the weight given ("-1" before
"0"), replaced by the next run, deleted once the test passed. Called with the weight. */}}
{{- define "mxjob.testHook" -}}
helm.sh/hook: test
helm.sh/hook-weight: {{ . | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}
