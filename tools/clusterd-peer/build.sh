#!/usr/bin/env bash
# Builds the real ClusterD (Huawei MindCluster, the snapshot in ../shared/mindcluster) as the
# conformance suite's reference peer. It is test input: copied to a scratch folder outside the
# repository (`go build -mod=mod` rewrites go.mod/go.sum in place, and the snapshot stays
# untouched), built there, and cached outside the repo keyed by the snapshot's commit, like the
# control-plane binaries. Nothing of it enters this repository or the product.
# Honours MINDCLUSTER_SRC (default ../shared/mindcluster beside the repository, as CI lays it out)
# and CLUSTERD_TS_CACHE.
# Prints the binary's path on its last line of stdout.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${MINDCLUSTER_SRC:-$(cd "$HERE/../../.." && pwd)/shared/mindcluster}
CACHE_ROOT=${CLUSTERD_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterd-ts}
log() { echo "[clusterd-peer] $*" >&2; }

[[ -d "$SRC/component/clusterd" ]] || { log "no ClusterD source in $SRC/component/clusterd"; exit 1; }
# The snapshot is an export without .git; its README names the commit.
COMMIT=$(tr -s "\n" " " < "$SRC/README.md" | grep -oE "commit [0-9a-f]{40}" | head -1 | cut -d" " -f2 || true)
[[ -n "$COMMIT" ]] || { log "cannot read the snapshot commit from $SRC/README.md"; exit 1; }
KEY="clusterd-$COMMIT"
OUT="$CACHE_ROOT/bin/$KEY"
BIN="$OUT/clusterd"

if [[ -x "$BIN" && -e "$OUT/.built" ]]; then
  echo "$BIN"
  exit 0
fi

WORK="$CACHE_ROOT/work/$KEY"
START=$(date +%s)
log "building ClusterD at $COMMIT in $WORK (cold: ~5 min on 2 cores)"
rm -rf "$WORK"
mkdir -p "$WORK/component" "$OUT"
# ClusterD's go.mod replaces these two with ../ paths, so they sit beside it.
for c in clusterd ascend-common ascend-faultdiag-online; do
  cp -a "$SRC/component/$c" "$WORK/component/"
done
cd "$WORK/component/clusterd"
# cgo: go-sqlite3 (through ascend-faultdiag-online). The ldflags are those of ClusterD's own build
# script. GOFLAGS=-p=1 keeps one compile at a time on a machine shared with other builds.
CGO_ENABLED=1 GOTOOLCHAIN=local go build -mod=mod -trimpath \
  -ldflags "-s -w -X main.BuildName=clusterd -X main.BuildVersion=v26.1.0_linux-x86_64" \
  -o "$BIN.tmp" . >&2
mv "$BIN.tmp" "$BIN"
touch "$OUT/.built"
log "ClusterD ready: $BIN ($(( $(date +%s) - START )) s)"
echo "$BIN"
