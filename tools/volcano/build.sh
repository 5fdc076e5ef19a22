#!/usr/bin/env bash
# Builds the real Volcano for the tests, from the source snapshots beside the repository:
# - vc-scheduler with Huawei's ascend plugin compiled in, the way Huawei's
#   component/ascend-for-volcano/build/build.sh does it (plugin copied to
#   pkg/scheduler/plugins/ascend-volcano-plugin/ of Volcano's tree, Huawei's two source patches
#   applied): topology A, the MindCluster stack;
# - vc-scheduler-stock, the same Volcano without the plugin and without the patches: topology B;
# - vc-controller-manager (unpatched: Huawei's job-controller patch changes nothing in v1.12.0).
# Each in a scratch folder outside the repository, cached keyed by versions and the snapshots'
# commits. Nothing of Volcano or MindCluster enters this repository.
#
# Sources: ../shared/volcano (volcano.sh/volcano and volcano.sh/apis, which the module proxy
# refuses) and ../shared/mindcluster beside the repository, as CI lays them out; every other module
# from the Go module proxy. Honours MINDCLUSTER_SRC, VOLCANO_SRC, CLUSTERD_TS_CACHE, GOFLAGS
# (default -p=1).
# Prints the folder holding the binaries on its last line of stdout; beside them: crds/ (Volcano's
# CRDs from the same source tree), volcano-scheduler.conf (the scheduler configuration of Huawei's
# build/volcano-$VOLCANO_VERSION.yaml, plugin name substituted as Huawei's build.sh does),
# volcano-scheduler-stock.conf (Volcano's own default configuration from its Helm chart) and
# ascend-plugin-name.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/versions.env"
SHARED=$(cd "$HERE/../../.." && pwd)/shared
SRC=${MINDCLUSTER_SRC:-$SHARED/mindcluster}
VSRC=${VOLCANO_SRC:-$SHARED/volcano}
CACHE_ROOT=${CLUSTERD_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterd-ts}
log() { echo "[volcano] $*" >&2; }

PLUGIN_SRC="$SRC/component/ascend-for-volcano"
[[ -f "$PLUGIN_SRC/npu.go" ]] || { log "no ascend plugin source in $PLUGIN_SRC"; exit 3; }
# The snapshot is an export without .git; its README names the commit.
COMMIT=$(tr -s "\n" " " < "$SRC/README.md" | grep -oE "commit [0-9a-f]{40}" | head -1 | cut -d" " -f2 || true)
[[ -n "$COMMIT" ]] || { log "cannot read the snapshot commit from $SRC/README.md"; exit 1; }
VDIR="$VSRC/volcano-$VOLCANO_VERSION"
[[ -f "$VDIR/go.mod" ]] || { log "no Volcano $VOLCANO_VERSION source in $VDIR"; exit 3; }
# The Volcano snapshot's README names each folder's commit.
VCOMMIT=$(grep -E "^\| \`volcano-$VOLCANO_VERSION/\`" "$VSRC/README.md" | grep -oE "[0-9a-f]{40}" | head -1 || true)
[[ -n "$VCOMMIT" ]] || { log "cannot read the commit of volcano-$VOLCANO_VERSION from $VSRC/README.md"; exit 1; }
GLUE_SUM=$(cat "$HERE/ascend_register.go" "$HERE/ascend_import.go" "$HERE/versions.env" "$0" | sha256sum | cut -c1-8)
KEY="volcano-${VOLCANO_VERSION}-${VCOMMIT:0:8}_mindcluster-${COMMIT:0:12}_${GLUE_SUM}"
OUT="$CACHE_ROOT/bin/$KEY"
if [[ -x "$OUT/vc-scheduler" && -x "$OUT/vc-scheduler-stock" && -x "$OUT/vc-controller-manager" && -e "$OUT/.built" && -s "$OUT/volcano-scheduler.conf" ]]; then
  echo "$OUT"
  exit 0
fi

WORK="$CACHE_ROOT/work/$KEY"
START=$(date +%s)
rm -rf "$WORK"
mkdir -p "$WORK" "$OUT"

VC="$WORK/volcano"
cp -a "$VDIR" "$VC" && chmod -R u+w "$VC"
APIS_VERSION=$(sed -n 's#^[[:space:]]*volcano\.sh/apis \(v[^ ]*\)$#\1#p' "$VC/go.mod" | head -1)
[[ -f "$VSRC/apis-$APIS_VERSION/go.mod" ]] || { log "no volcano.sh/apis $APIS_VERSION source in $VSRC/apis-$APIS_VERSION"; exit 3; }
cp -a "$VSRC/apis-$APIS_VERSION" "$WORK/apis" && chmod -R u+w "$WORK/apis"
(cd "$VC" && go mod edit -replace "volcano.sh/apis=../apis")

PKG=volcano.sh/volcano/pkg
LDF="-s -w -X $PKG/version.Version=$VOLCANO_VERSION -X $PKG/version.GitSHA=$VCOMMIT -X $PKG/version.Built=1970-01-01T00:00:00Z"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:--p=1}"
log "building vc-controller-manager $VOLCANO_VERSION in $VC (cold: ~15 min on 2 cores)"
(cd "$VC" && go build -mod=mod -trimpath -ldflags "$LDF" -o "$OUT/vc-controller-manager" ./cmd/controller-manager) >&2
log "building vc-scheduler-stock $VOLCANO_VERSION (no ascend plugin, no patches)"
(cd "$VC" && go build -mod=mod -trimpath -ldflags "$LDF" -o "$OUT/vc-scheduler-stock" ./cmd/scheduler) >&2
cp "$VC/installer/helm/chart/volcano/config/volcano-scheduler.conf" "$OUT/volcano-scheduler-stock.conf"

# The plugin, as Huawei's build.sh places it, renamed from package main to a library package and
# registered by our glue (compiled in; see ascend_register.go for why not -buildmode=plugin).
PLUGIN="$VC/pkg/scheduler/plugins/ascend-volcano-plugin"
mkdir -p "$PLUGIN"
(cd "$PLUGIN_SRC" && tar -c --exclude=./output --exclude='*_test.go' --exclude=./test --exclude=./testdata .) | tar -x -C "$PLUGIN"
sed -i 's/^package main$/package ascendvolcanoplugin/' "$PLUGIN"/*.go
cp "$HERE/ascend_register.go" "$PLUGIN/zz_clusterd_ts_register.go"
cp "$HERE/ascend_import.go" "$VC/cmd/scheduler/zz_clusterd_ts_ascend.go"

# Huawei's patch_all_source (build.sh), verbatim: the job controller's "Ignore" action in the Running
# state, and allocate scoring nodes even when one node fits.
F="$VC/pkg/controllers/job/state/running.go"
grep -q Ignore "$F" || sed -i 's/switch action {/switch action { case "Ignore" : return nil/g' "$F"
F="$VC/pkg/scheduler/actions/allocate/allocate.go"
sed -i '
/case len(nodes) == 1:/ {
    N
    N
    s/case len(nodes) == 1:.*\n.*\n.*/            default:/
}' "$F"

# What the harness needs beside the binaries, taken from the same sources.
rm -rf "$OUT/crds" && mkdir -p "$OUT/crds"
cp "$VC"/config/crd/volcano/bases/*.yaml "$VC"/config/crd/jobflow/bases/*.yaml "$OUT/crds/"
MANIFEST="$PLUGIN_SRC/build/volcano-$VOLCANO_VERSION.yaml"
[[ -f "$MANIFEST" ]] || { log "no $MANIFEST in the snapshot"; exit 1; }
awk '/^  volcano-scheduler.conf: \|/ { on = 1; next } on && /^---/ { exit } on { sub(/^    /, ""); print }' "$MANIFEST" \
  | sed "s/name: volcano-npu_.*/name: $ASCEND_PLUGIN_NAME/" > "$OUT/volcano-scheduler.conf"
grep -q "name: $ASCEND_PLUGIN_NAME" "$OUT/volcano-scheduler.conf" || { log "no ascend plugin in the scheduler configuration of $MANIFEST"; exit 1; }

cd "$VC"
log "building vc-scheduler $VOLCANO_VERSION + ascend plugin ($ASCEND_PLUGIN_NAME, snapshot $COMMIT)"
go build -mod=mod -trimpath \
  -ldflags "$LDF -X $PKG/scheduler/plugins/ascend-volcano-plugin.PluginName=$ASCEND_PLUGIN_NAME" \
  -o "$OUT/vc-scheduler" ./cmd/scheduler >&2
echo "$ASCEND_PLUGIN_NAME" > "$OUT/ascend-plugin-name"
touch "$OUT/.built"
log "Volcano ready in $OUT ($(( $(date +%s) - START )) s)"
echo "$OUT"
