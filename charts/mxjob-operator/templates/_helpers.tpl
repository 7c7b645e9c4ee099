{{/*
What the templates share. The chart adds no labels of Helm's own (helm.sh/chart, ...): every
object carries exactly the labels of the kustomize install (tests/e2e/test_helm_chart.py), and
Helm marks what it manages itself (app.kubernetes.io/managed-by and the meta.helm.sh annotations,
added at install time).
*/}}

{{/* The labels the base install selects a component's pods by: "webhook" or "controller". */}}
{{- define "mxjob.selectorLabels" -}}
app.kubernetes.io/name: mxjob-operator
app.kubernetes.io/component: {{ . }}
{{- end }}

{{/* The label kustomize's manifests/base gives every object of the base (not of an overlay or
a component). */}}
{{- define "mxjob.partOf" -}}
app.kubernetes.io/part-of: mxjob-operator
{{- end }}

{{/* The labels of a base object of a component: selector labels and part-of. */}}
{{- define "mxjob.componentLabels" -}}
{{ include "mxjob.selectorLabels" . }}
{{ include "mxjob.partOf" . }}
{{- end }}

{{/* The container image: images.<name> as repository:tag, and its pullPolicy when set.
Called with (dict "root" $ "name" "webhook"). */}}
{{- define "mxjob.image" -}}
{{- $image := index .root.Values.images .name -}}
image: {{ printf "%s:%s" $image.repository $image.tag | quote }}
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
    {{- include "mxjob.componentLabels" .component | nindent 4 }}
    {{- with $monitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
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
