#!/usr/bin/env bash
# Builds the real Ascend Operator (Huawei MindCluster, component/ascend-operator of the snapshot in
# ../shared/mindcluster) as a test peer: the controller that turns AscendJobs into PodGroups and pods
# and handles their faults and hot switch. It is test input: copied to a scratch folder outside the
# repository with its sibling module ascend-common, and volcano.sh/apis v1.7.0 (its go.mod's
# version, which the module proxy refuses) from ../shared/volcano/apis-v1.7.0 through a replace;
# built there with the flags of Huawei's build/build.sh and cached keyed by both snapshots' commits.
# Nothing of it enters this repository or the product.
# Honours MINDCLUSTER_SRC, VOLCANO_SRC, CLUSTERD_TS_CACHE, GOFLAGS (default -p=1).
# Prints the folder holding `ascend-operator` on its last line of stdout; beside it `crds/` (the
# AscendJob CRD of Huawei's build/ascend-operator.yaml).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=$(cd "$HERE/../../.." && pwd)/shared
SRC=${MINDCLUSTER_SRC:-$SHARED/mindcluster}
VSRC=${VOLCANO_SRC:-$SHARED/volcano}
CACHE_ROOT=${CLUSTERD_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterd-ts}
log() { echo "[ascend-operator] $*" >&2; }

OP="$SRC/component/ascend-operator"
[[ -f "$OP/main.go" ]] || { log "no Ascend Operator source in $OP"; exit 3; }
COMMIT=$(tr -s "\n" " " < "$SRC/README.md" | grep -oE "commit [0-9a-f]{40}" | head -1 | cut -d" " -f2 || true)
[[ -n "$COMMIT" ]] || { log "cannot read the snapshot commit from $SRC/README.md"; exit 1; }
APIS_VERSION=$(sed -n 's#^[[:space:]]*volcano\.sh/apis \(v[^ ]*\)$#\1#p' "$OP/go.mod" | head -1)
APIS="$VSRC/apis-$APIS_VERSION"
[[ -f "$APIS/go.mod" ]] || { log "no volcano.sh/apis $APIS_VERSION source in $APIS"; exit 3; }
ACOMMIT=$(grep -E "^\| \`apis-$APIS_VERSION/\`" "$VSRC/README.md" | grep -oE "[0-9a-f]{40}" | head -1 || true)
[[ -n "$ACOMMIT" ]] || { log "cannot read the commit of apis-$APIS_VERSION from $VSRC/README.md"; exit 1; }
SELF_SUM=$(sha256sum < "$0" | cut -c1-8)
KEY="ascend-operator_mindcluster-${COMMIT:0:12}_apis-$APIS_VERSION-${ACOMMIT:0:8}_$SELF_SUM"
OUT="$CACHE_ROOT/bin/$KEY"
if [[ -x "$OUT/ascend-operator" && -e "$OUT/.built" ]]; then
  echo "$OUT"
  exit 0
fi

WORK="$CACHE_ROOT/work/$KEY"
START=$(date +%s)
log "building the Ascend Operator at $COMMIT in $WORK"
rm -rf "$WORK"
mkdir -p "$WORK/component" "$OUT/crds"
# Its go.mod replaces ascend-common with ../ascend-common, so the two sit side by side.
for c in ascend-operator ascend-common; do cp -a "$SRC/component/$c" "$WORK/component/"; done
cp -a "$APIS" "$WORK/apis" && chmod -R u+w "$WORK"
cd "$WORK/component/ascend-operator"
go mod edit -replace "volcano.sh/apis=../../apis"
# Huawei's build/build.sh: CGO off, these ldflags (PIE and -bindnow left out: they need cgo's linker).
CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:--p=1}" go build -mod=mod -trimpath \
  -ldflags "-s -w -X main.BuildName=ascend-operator -X main.BuildVersion=v26.1.0_linux-x86_64" \
  -o "$OUT/ascend-operator.tmp" . >&2
mv "$OUT/ascend-operator.tmp" "$OUT/ascend-operator"
# The CRD as Huawei installs it (the document of kind CustomResourceDefinition in their manifest).
awk 'BEGIN { RS = "\n---\n" } /\nkind: CustomResourceDefinition\n/ || /^kind: CustomResourceDefinition\n/ { print; exit }' \
  "$OP/build/ascend-operator.yaml" > "$OUT/crds/ascendjobs.mindxdl.gitee.com.yaml"
grep -q "name: ascendjobs.mindxdl.gitee.com" "$OUT/crds/ascendjobs.mindxdl.gitee.com.yaml" || { log "no AscendJob CRD in build/ascend-operator.yaml"; exit 1; }
touch "$OUT/.built"
log "Ascend Operator ready in $OUT ($(( $(date +%s) - START )) s)"
echo "$OUT"
