{{/*
One device class as a YAML flow mapping, its keys in the order apps/csi-driver/src/config.ts
documents them: { volumeGroup: lvstamp, wipe: discard, default: true }.
*/}}
{{- define "lvstamp.deviceClass" -}}
{{- $fields := list -}}
{{- range $key := list "volumeGroup" "type" "thinPool" "thinPoolSize" "overprovisionRatio" "fsTypes" "wipe" "default" -}}
{{- if hasKey $ $key -}}
{{- $value := get $ $key -}}
{{- if kindIs "float64" $value -}}{{- $value = int64 $value -}}{{- end -}}
{{- if not (kindIs "string" $value) -}}{{- $value = toJson $value -}}{{- end -}}
{{- $fields = append $fields (printf "%s: %s" $key $value) -}}
{{- end -}}
{{- end -}}
{ {{ join ", " $fields }} }
{{- end -}}

{{/*
The GC's wipe (LVSTAMP_GC_WIPE): gc.wipe when set, else the strongest wipe of the device classes
(none < discard < zero), as the driver picks the strongest wipe of a volume group's classes.
*/}}
{{- define "lvstamp.gcWipe" -}}
{{- if .Values.gc.wipe -}}
{{- .Values.gc.wipe -}}
{{- else -}}
{{- $strength := dict "none" 0 "discard" 1 "zero" 2 -}}
{{- $best := "none" -}}
{{- range $name, $class := .Values.deviceClasses -}}
{{- if gt (int (get $strength $class.wipe)) (int (get $strength $best)) -}}
{{- $best = $class.wipe -}}
{{- end -}}
{{- end -}}
{{- $best -}}
{{- end -}}
{{- end -}}

{{/*
Fails on device classes the driver would refuse at start, or StorageClasses naming a class that
is not there, the rules of apps/csi-driver/src/config.ts `parseConfig` that values.schema.json
cannot express: exactly one class with default: true; a thin class has thinPool and
overprovisionRatio and wipe: none; every StorageClass (and snapshots.storageClass when on) names
a class of deviceClasses. Helm merges maps, so a class added beside the shipped `default` keeps
it: replacing it takes `default: null` (docs/install.md "Values").
*/}}
{{- define "lvstamp.checkDeviceClasses" -}}
{{- $classes := .Values.deviceClasses -}}
{{- $defaults := list -}}
{{- range $name, $class := $classes -}}
{{- if $class.default -}}{{- $defaults = append $defaults $name -}}{{- end -}}
{{- if eq ($class.type | default "thick") "thin" -}}
{{- if or (not $class.thinPool) (not $class.overprovisionRatio) -}}
{{- fail (printf "deviceClasses.%s: a thin class needs thinPool and overprovisionRatio" $name) -}}
{{- end -}}
{{- if ne $class.wipe "none" -}}
{{- fail (printf "deviceClasses.%s.wipe: a thin class takes only wipe: none, not %s" $name $class.wipe) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if ne (len $defaults) 1 -}}
{{- fail (printf "deviceClasses: exactly one device class must have default: true, found %d (%s); to replace the shipped class `default`, set `default: null` beside yours" (len $defaults) (join ", " $defaults | default "none")) -}}
{{- end -}}
{{- $named := .Values.storageClasses -}}
{{- if .Values.snapshots.enabled -}}{{- $named = append $named .Values.snapshots.storageClass -}}{{- end -}}
{{- range $sc := $named -}}
{{- if not (hasKey $classes $sc.deviceClass) -}}
{{- fail (printf "StorageClass %s names deviceClass %s, which deviceClasses does not have (it has: %s); set storageClasses (or snapshots.storageClass) to your classes" $sc.name $sc.deviceClass (join ", " (keys $classes | sortAlpha))) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The placeholder owner ID of the kustomize base (ownerId: unset): not 32 hex digits, so the
driver and the GC refuse to start with it, and it says where to set one.
*/}}
{{- define "lvstamp.ownerIdPlaceholder" -}}
unset: openssl rand -hex 16, README "Deploying on a cluster" step 3
{{- end -}}

{{/*
The installation's owner ID (docs/DESIGN.md §3 "Owner ID"), resolved once per render and kept in
.Values._ownerId, so the ConfigMap and the DaemonSet's checksum name the same random ID. The
installed ID is the ConfigMap lvstamp-csi-config's, trimmed and lower-cased as the driver reads it
(a placeholder or 32 zeros there is none).
- "unset": the placeholder (refused over an installed ID);
- "": the installed ID, or else a new random one (the 32 hex digits of a version 4 UUID, 122
  random bits); on an upgrade whose ConfigMap holds no ID (deleted, emptied, garbled) the chart
  refuses rather than make a new one;
- 32 hex digits: that one. When it differs from the installed ID, the upgrade is refused unless
  .Values.ownerIdReplaces names the installed one (docs/upgrade.md "The owner ID"): a changed ID
  orphans every volume made under the old one from the driver and the GC.
- "" at install while PersistentVolumes of lvstamp.io exist (a reinstall): refused, since a new
  random ID would disown their volumes.
Without cluster access (helm template, client-side dry run) `lookup` finds nothing, so each such
render shows a fresh ID and no change is refused.
*/}}
{{- define "lvstamp.ownerId" -}}
{{- if not (hasKey .Values "_ownerId") -}}
{{- $_ := set .Values "_ownerId" (include "lvstamp.resolveOwnerId" .) -}}
{{- end -}}
{{- .Values._ownerId -}}
{{- end -}}

{{- define "lvstamp.resolveOwnerId" -}}
{{- $zeros := "00000000000000000000000000000000" -}}
{{- $placeholder := include "lvstamp.ownerIdPlaceholder" . -}}
{{- $wanted := .Values.ownerId | default "" -}}
{{- $replaces := .Values.ownerIdReplaces | default "" -}}
{{- $where := printf "ConfigMap %s/lvstamp-csi-config" .Release.Namespace -}}
{{- if eq $wanted $zeros -}}
{{- fail "ownerId: 32 zeros is the standalone owner ID of `lvstamp create` on a node, which the driver refuses: leave ownerId empty (a random one is made at install) or set your own (openssl rand -hex 16)" -}}
{{- end -}}
{{- if and $replaces (not $wanted) -}}
{{- fail (printf "ownerIdReplaces is %s, but ownerId is empty: set ownerId to the new ID as well, or leave ownerIdReplaces empty to keep the installed one; nothing changed" $replaces) -}}
{{- end -}}
{{- $existing := lookup "v1" "ConfigMap" .Release.Namespace "lvstamp-csi-config" -}}
{{- $found := dig "data" "owner-id" "" ($existing | default dict) | toString -}}
{{- $installed := $found | trim | lower -}}
{{- if or (not (regexMatch "^[0-9a-f]{32}$" $installed)) (eq $installed $zeros) -}}
{{- $installed = "" -}}
{{- end -}}
{{- /* lookup answers nothing without cluster access (helm template, client-side dry runs):
       kube-system, which every cluster has, tells the two apart (not the release's namespace,
       which --create-namespace makes only after the render) */ -}}
{{- $cluster := not (empty (lookup "v1" "Namespace" "" "kube-system")) -}}
{{- if and $cluster .Release.IsInstall (not $wanted) (not $installed) -}}
{{- $pvs := list -}}
{{- range (lookup "v1" "PersistentVolume" "" "").items | default list -}}
{{- if eq (dig "spec" "csi" "driver" "" .) "lvstamp.io" -}}{{- $pvs = append $pvs .metadata.name -}}{{- end -}}
{{- end -}}
{{- if $pvs -}}
{{- fail (printf "ownerId is empty, but %d PersistentVolume(s) of lvstamp.io exist (%s): their volumes carry the owner ID of an earlier installation, which a new random one would disown. Set ownerId to that ID (docs/uninstall.md: kept before the uninstall; lvstamp inspect of a volume on a node shows it), or to a new one on purpose (openssl rand -hex 16); nothing changed" (len $pvs) (join ", " (slice $pvs 0 (min 3 (len $pvs))))) -}}
{{- end -}}
{{- end -}}
{{- if and $cluster .Release.IsUpgrade (not $installed) (not $wanted) (ne $found $placeholder) -}}
{{- fail (printf "the release is installed, but %s holds no owner ID (%s): a new random one would disown every volume made under the old one. Set ownerId to the ID the drivers run with (the last revision's: helm get manifest %s -n %s | grep owner-id; or kubectl -n %s exec ds/lvstamp-csi-node -c lvstamp-csi -- printenv LVSTAMP_OWNER_ID); nothing changed" $where (ternary "the ConfigMap is missing" (printf "owner-id is %q" $found) (empty $existing)) .Release.Name .Release.Namespace .Release.Namespace) -}}
{{- end -}}
{{- if and $installed $wanted (ne $wanted $installed) -}}
{{- if eq $wanted "unset" -}}
{{- fail (printf "ownerId unset would replace the installed owner ID %s (%s) with the placeholder the driver refuses at start; leave ownerId empty to keep it; nothing changed" $installed $where) -}}
{{- else if and $replaces (ne $replaces $installed) -}}
{{- fail (printf "ownerIdReplaces is %s, but the installed owner ID (%s) is %s: nothing changed" $replaces $where $installed) -}}
{{- else if not $replaces -}}
{{- fail (printf "ownerId %s would replace the installed owner ID %s (%s): the driver and the GC would no longer own any volume made under it. Leave ownerId empty to keep it; to change it on purpose, also set ownerIdReplaces=%s (docs/upgrade.md %s); nothing changed" $wanted $installed $where $installed `"The owner ID"`) -}}
{{- end -}}
{{- end -}}
{{- if eq $wanted "unset" -}}
{{- $placeholder -}}
{{- else if $wanted -}}
{{- $wanted -}}
{{- else if $installed -}}
{{- $installed -}}
{{- else -}}
{{- uuidv4 | replace "-" "" -}}
{{- end -}}
{{- end -}}

{{/* An image reference: repository:tag. */}}
{{- define "lvstamp.image" -}}
{{ .repository }}:{{ .tag }}
{{- end -}}
