#!/usr/bin/env bash
# Builds tools/taskd-client (main.go: a TaskD client of our own) against MindCluster's generated
# Recover stubs (component/clusterd/pkg/interface/grpc/recover in the snapshot ../shared/mindcluster).
# The stubs are test input: copied into a scratch module outside the repository, next to a copy of
# main.go, built there with `go build -mod=mod`, and the binary cached outside the repo keyed by the
# snapshot's commit and a hash of this folder. Nothing of the snapshot enters this repository.
# Honours MINDCLUSTER_SRC (default ../shared/mindcluster beside the repository, as CI lays it out) and
# CLUSTERD_TS_CACHE.
# Prints the binary's path on its last line of stdout.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${MINDCLUSTER_SRC:-$(cd "$HERE/../../.." && pwd)/shared/mindcluster}
CACHE_ROOT=${CLUSTERD_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterd-ts}
log() { echo "[taskd-client] $*" >&2; }

STUBS="$SRC/component/clusterd/pkg/interface/grpc/recover"
[[ -f "$STUBS/recover_grpc.pb.go" ]] || { log "no Recover stubs in $STUBS"; exit 1; }
# The snapshot is an export without .git; its README names the commit.
COMMIT=$(tr -s "\n" " " < "$SRC/README.md" | grep -oE "commit [0-9a-f]{40}" | head -1 | cut -d" " -f2 || true)
[[ -n "$COMMIT" ]] || { log "cannot read the snapshot commit from $SRC/README.md"; exit 1; }
# grpc / protobuf: the versions ClusterD's own go.mod pins.
GRPC=$(awk '$1 == "google.golang.org/grpc" { print $2; exit }' "$SRC/component/clusterd/go.mod")
PROTO=$(awk '$1 == "google.golang.org/protobuf" { print $2; exit }' "$SRC/component/clusterd/go.mod")
HASH=$(cat "$HERE/main.go" "$HERE/build.sh" | sha256sum | cut -c1-12)
OUT="$CACHE_ROOT/taskd-client/$COMMIT-$HASH"
BIN="$OUT/taskd-client"

if [[ -x "$BIN" && -e "$OUT/.built" ]]; then
  echo "$BIN"
  exit 0
fi
# Parallel test runs may ask at once: one builds, the others wait and find it built.
mkdir -p "$(dirname "$OUT")"
exec 9>"$OUT.lock"
flock 9
if [[ -x "$BIN" && -e "$OUT/.built" ]]; then
  echo "$BIN"
  exit 0
fi

WORK="$OUT/src"
START=$(date +%s)
log "building at snapshot $COMMIT (grpc $GRPC, protobuf $PROTO) in $WORK"
rm -rf "$WORK"
mkdir -p "$WORK/client" "$WORK/stubs"
cp "$STUBS"/*.go "$WORK/stubs/"
cat > "$WORK/stubs/go.mod" <<MOD
module clusterd/pkg/interface/grpc/recover

go 1.21

require (
	google.golang.org/grpc $GRPC
	google.golang.org/protobuf $PROTO
)
MOD
cp "$HERE/main.go" "$WORK/client/"
cat > "$WORK/client/go.mod" <<MOD
module clusterd-ts/taskd-client

go 1.21

require (
	clusterd/pkg/interface/grpc/recover v0.0.0
	google.golang.org/grpc $GRPC
)

replace clusterd/pkg/interface/grpc/recover => ../stubs
MOD
cd "$WORK/client"
GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:--p=1}" go build -mod=mod -trimpath -o "$BIN.tmp" . >&2
mv "$BIN.tmp" "$BIN"
touch "$OUT/.built"
log "ready: $BIN ($(( $(date +%s) - START )) s)"
echo "$BIN"
