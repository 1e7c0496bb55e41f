#!/bin/bash
# render-kustomize.sh: writes the kustomize files under deploy/kubernetes from the Helm chart
# deploy/helm/lvstamp, the one source of lvstamp's Kubernetes objects (docs/install.md "One source:
# the chart"). Each template templates/X becomes deploy/kubernetes/X:
#   - the driver's base and the GC's (gc/), the monitoring component's objects: the chart's
#     defaults with namespace.create=true, monitoring.enabled=true, ownerId=unset (the
#     placeholder the driver and the GC refuse, so that the kustomize path fails loudly until an
#     overlay sets an owner ID) and rollOnConfigChange=false (a checksum of the chart's defaults
#     would not follow an overlay's patch), in lvstamp-system;
#   - the snapshots component's objects: the same with snapshots.enabled=true.
# The kustomization.yaml files and the components' patches are written by hand; deploy/src tests
# check them against the chart. deploy/src/chart.test.ts fails when the checked-in files differ
# from a fresh render.
# Usage: render-kustomize.sh [OUT]   (default: deploy/kubernetes; the test renders into a
# temporary directory). HELM names the helm binary (default: the pinned one, test-e2e/parts).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/kubernetes}
HELM=${HELM:-}
if [ -z "$HELM" ]; then
  parts=$(bash "$HERE/../test-e2e/parts/build.sh" helm) ||
    { echo "render-kustomize.sh: test-e2e/parts/build.sh helm failed" >&2; exit 1; }
  HELM=$parts/helm
fi
[ -x "$HELM" ] || { echo "render-kustomize.sh: no helm at $HELM" >&2; exit 1; }
CHART=$HERE/helm/lvstamp
COMMON=(--namespace lvstamp-system --set namespace.create=true --set monitoring.enabled=true
  --set ownerId=unset --set rollOnConfigChange=false)

# split: helm template's stream ("---", "# Source: lvstamp/templates/X", the document) into
# OUT/X, documents of one template joined by "---" (in helm's install order of kinds), each file
# headed by where it comes from, without the empty lines helm leaves at the end of a document
split() {
  awk -v out="$OUT" '
    /^---$/ { blank = 0; next }
    /^$/ { blank++; next }
    /^# Source: lvstamp\/templates\// {
      file = substr($0, length("# Source: lvstamp/templates/") + 1)
      path = out "/" file
      if (path in seen) print "---" > path
      else {
        seen[path] = 1
        printf "# Rendered from deploy/helm/lvstamp/templates/%s by deploy/render-kustomize.sh:\n", file > path
        print "# edit the chart and run the script, not this file." > path
      }
      next
    }
    {
      for (; blank > 0; blank--) print "" > path
      print > path
    }
  '
}

(cd "$CHART/templates" && find . -mindepth 1 -type d) | while read -r d; do mkdir -p "$OUT/$d"; done
"$HELM" template lvstamp "$CHART" "${COMMON[@]}" | split
# the component's two objects; the chart refuses snapshots.enabled without the thin class they name
"$HELM" template lvstamp "$CHART" "${COMMON[@]}" --set snapshots.enabled=true \
  --set-json 'deviceClasses.thin={"volumeGroup":"lvstamp","type":"thin","thinPool":"pool0","overprovisionRatio":4,"wipe":"none"}' \
  --show-only templates/components/snapshots/volumesnapshotclass.yaml \
  --show-only templates/components/snapshots/storageclass-thin.yaml | split
