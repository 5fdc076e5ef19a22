#!/usr/bin/env bash
# Builds the real Volcano for the tests: vc-scheduler with Huawei's ascend plugin compiled in, and
# vc-controller-manager, the way Huawei's component/ascend-for-volcano/build/build.sh does it
# (plugin copied to pkg/scheduler/plugins/ascend-volcano-plugin/ of Volcano's tree, Huawei's two
# source patches applied), in a scratch folder outside the repository, cached keyed by versions and
# the snapshot's commit. Nothing of Volcano or the snapshot enters this repository.
#
# Volcano's source: the Go module volcano.sh/volcano (and volcano.sh/apis) from the module proxy;
# where the proxy refuses them, a git clone named by VOLCANO_GIT / VOLCANO_APIS_GIT (default: the
# session mirrors under /work/.mirror when present). Exit code 3 means "no source": callers skip.
# Honours MINDCLUSTER_SRC (default /work/shared/mindcluster), CLUSTERD_TS_CACHE, GOFLAGS (default -p=1).
# Prints the folder holding vc-scheduler and vc-controller-manager on its last line of stdout; beside
# them: crds/ (Volcano's CRDs from the same source tree), volcano-scheduler.conf (the scheduler
# configuration of Huawei's build/volcano-$VOLCANO_VERSION.yaml, plugin name substituted as Huawei's
# build.sh does) and ascend-plugin-name.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/versions.env"
SRC=${MINDCLUSTER_SRC:-/work/shared/mindcluster}
CACHE_ROOT=${CLUSTERD_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterd-ts}
log() { echo "[volcano] $*" >&2; }

PLUGIN_SRC="$SRC/component/ascend-for-volcano"
[[ -f "$PLUGIN_SRC/npu.go" ]] || { log "no ascend plugin source in $PLUGIN_SRC"; exit 3; }
# The snapshot is an export without .git; its README names the commit.
COMMIT=$(tr -s "\n" " " < "$SRC/README.md" | grep -oE "commit [0-9a-f]{40}" | head -1 | cut -d" " -f2 || true)
[[ -n "$COMMIT" ]] || { log "cannot read the snapshot commit from $SRC/README.md"; exit 1; }
GLUE_SUM=$(cat "$HERE/ascend_register.go" "$HERE/ascend_import.go" "$HERE/versions.env" | sha256sum | cut -c1-8)
KEY="volcano-${VOLCANO_VERSION}_mindcluster-${COMMIT:0:12}_${GLUE_SUM}"
OUT="$CACHE_ROOT/bin/$KEY"
if [[ -x "$OUT/vc-scheduler" && -x "$OUT/vc-controller-manager" && -e "$OUT/.built" && -s "$OUT/volcano-scheduler.conf" ]]; then
  echo "$OUT"
  exit 0
fi

WORK="$CACHE_ROOT/work/$KEY"
START=$(date +%s)
rm -rf "$WORK"
mkdir -p "$WORK" "$OUT"

# module_src MODULE VERSION GITDIR DEST: a writable copy of MODULE@VERSION's source in DEST.
module_src() {
  local mod=$1 ver=$2 git=$3 dest=$4 dir
  dir=$(cd "$WORK" && GOFLAGS=-mod=mod go mod download -json "$mod@$ver" 2>/dev/null | sed -n 's/.*"Dir": "\(.*\)".*/\1/p' || true)
  if [[ -n "$dir" && -d "$dir" ]]; then
    log "$mod@$ver from the module cache ($dir)"
    cp -a "$dir" "$dest" && chmod -R u+w "$dest"
  elif [[ -n "$git" && -d "$git" ]] && git --git-dir="$git" rev-parse -q --verify "refs/tags/$ver" >/dev/null 2>&1; then
    log "$mod@$ver: the module proxy does not serve it; git archive of $ver from $git"
    mkdir -p "$dest" && git --git-dir="$git" archive "$ver" | tar -x -C "$dest"
  else
    log "no source for $mod@$ver: the module proxy refuses it and no git clone with tag $ver (set ${5})"
    exit 3
  fi
}

VC="$WORK/volcano"
module_src volcano.sh/volcano "$VOLCANO_VERSION" "${VOLCANO_GIT:-/work/.mirror/volcano-sh+volcano/repo}" "$VC" VOLCANO_GIT
APIS_VERSION=$(sed -n 's#^[[:space:]]*volcano\.sh/apis \(v[^ ]*\)$#\1#p' "$VC/go.mod" | head -1)
if ! (cd "$WORK" && go mod download "volcano.sh/apis@$APIS_VERSION" 2>/dev/null); then
  module_src volcano.sh/apis "$APIS_VERSION" "${VOLCANO_APIS_GIT:-/work/.mirror/volcano-sh+apis/repo}" "$WORK/apis" VOLCANO_APIS_GIT
  (cd "$VC" && go mod edit -replace "volcano.sh/apis=../apis")
fi

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
PKG=volcano.sh/volcano/pkg
LDF="-s -w -X $PKG/version.Version=$VOLCANO_VERSION -X $PKG/version.GitSHA=$VOLCANO_VERSION -X $PKG/version.Built=1970-01-01T00:00:00Z"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:--p=1}"
log "building vc-controller-manager $VOLCANO_VERSION in $VC (cold: ~15 min on 2 cores)"
go build -mod=mod -trimpath -ldflags "$LDF" -o "$OUT/vc-controller-manager" ./cmd/controller-manager >&2
log "building vc-scheduler $VOLCANO_VERSION + ascend plugin ($ASCEND_PLUGIN_NAME, snapshot $COMMIT)"
go build -mod=mod -trimpath \
  -ldflags "$LDF -X $PKG/scheduler/plugins/ascend-volcano-plugin.PluginName=$ASCEND_PLUGIN_NAME" \
  -o "$OUT/vc-scheduler" ./cmd/scheduler >&2
echo "$ASCEND_PLUGIN_NAME" > "$OUT/ascend-plugin-name"
touch "$OUT/.built"
log "Volcano ready in $OUT ($(( $(date +%s) - START )) s)"
echo "$OUT"
