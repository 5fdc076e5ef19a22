#!/usr/bin/env bash
# Builds the test control plane from Go modules: kube-apiserver, kube-scheduler, etcd, kwok, helm;
# and the operator's side for the kubectl plugin's test: kubectl and krew.
# Binaries land in a cache outside the repo keyed by version, so a second run costs seconds.
# Honours KUBEBUILDER_ASSETS: if it names a folder with kube-apiserver and etcd, nothing is built
# for those two. Prints the folder holding the binaries on its last line of stdout.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/versions.env"

CACHE_ROOT=${CLUSTERD_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterd-ts}
KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_helm-${HELM_VERSION}"
OUT="$CACHE_ROOT/bin/$KEY"
WORK="$CACHE_ROOT/work/$KEY"
mkdir -p "$OUT" "$WORK"

log() { echo "[control-plane] $*" >&2; }

# A wrapper module in $1 (name $2) that requires k8s.io/kubernetes at the pinned release, with its
# go/godebug lines and every ./staging module replaced by v0.35.x, and imports the packages $3...
k8s_module() {
  local dir=$1 name=$2; shift 2
  mkdir -p "$dir" && cd "$dir"
  local stg="v0.${K8S_VERSION#v1.}" gomod goline godebug_line m p
  log "reading k8s.io/kubernetes@$K8S_VERSION go.mod to generate the staging replace list"
  gomod=$(cd "$HERE" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  goline=$(grep -E '^go [0-9]' "$gomod" | head -1)
  godebug_line=$(grep -E '^godebug' "$gomod" | head -1 || true)
  {
    echo "module $name"
    echo
    echo "$goline"
    [[ -n "$godebug_line" ]] && echo "$godebug_line"
    echo
    echo "require ("
    echo "	k8s.io/kubernetes $K8S_VERSION"
    [[ " $* " == *" go.etcd.io/etcd/server/v3 "* ]] && echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
    echo ")"
  } > go.mod
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for p in "$@"; do printf '\t_ "%s"\n' "$p"; done
    printf ')\n'
  } > tools.go
  for m in $(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/.*#\1#p' "$gomod"); do
    go mod edit -replace="$m=$m@$stg"
  done
  log "resolving module graph"
  GOFLAGS=-mod=mod go mod tidy -e >&2 2>&1 | tail -5 >&2 || true
}

# The release's version ldflags (kwok picks flags by --version; kubectl version prints them).
k8s_ldflags() {
  local minor ldf="-s -w" p
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$ldf"
}

have_version() { # binary, expected substring of `--version`
  # Not `| grep -q`: with pipefail, grep exiting at the first line SIGPIPEs a binary that prints
  # more (etcd: 4 lines), and the check then fails at random (7 of 30 runs) and rebuilds everything.
  local v
  [[ -x "$OUT/$1" ]] && v=$("$OUT/$1" --version 2>/dev/null) && [[ "$v" == *"$2"* ]]
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
  log "using kube-apiserver and etcd from KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
  ln -sf "$KUBEBUILDER_ASSETS/kube-apiserver" "$OUT/kube-apiserver"
  ln -sf "$KUBEBUILDER_ASSETS/etcd" "$OUT/etcd"
  [[ -x "$KUBEBUILDER_ASSETS/kube-scheduler" ]] && ln -sf "$KUBEBUILDER_ASSETS/kube-scheduler" "$OUT/kube-scheduler"
fi

START=$(date +%s)
if ! have_version kube-apiserver "$K8S_VERSION" || ! have_version kube-scheduler "$K8S_VERSION" || ! have_version etcd "${ETCD_VERSION#v}"; then
  log "building kube-apiserver, kube-scheduler $K8S_VERSION and etcd $ETCD_VERSION (cold: ~15-25 min on 2 cores)"
  k8s_module "$WORK" local.test/k8sbins \
    go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler
  log "go build kube-apiserver kube-scheduler"
  CGO_ENABLED=0 go build -trimpath -tags notest -ldflags "$(k8s_ldflags)" -o "$OUT/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler
  log "go build etcd"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
fi

# kwok and helm have no replace directives, so plain `go install` works; a stamp file records
# which version sits in the folder.
if [[ ! -x "$OUT/kwok" || ! -e "$OUT/.kwok-$KWOK_VERSION" ]]; then
  log "go install kwok $KWOK_VERSION"
  GOBIN="$OUT" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  touch "$OUT/.kwok-$KWOK_VERSION"
fi

if [[ ! -x "$OUT/helm" || ! -e "$OUT/.helm-$HELM_VERSION" ]]; then
  log "go install helm $HELM_VERSION"
  GOBIN="$OUT" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  touch "$OUT/.helm-$HELM_VERSION"
fi

# kubectl from the same release, in a module of its own (a cached kube-apiserver is not rebuilt).
if [[ ! -x "$OUT/kubectl" || ! -e "$OUT/.kubectl-$K8S_VERSION" ]]; then
  log "go build kubectl $K8S_VERSION"
  k8s_module "$WORK/kubectl" local.test/kubectl k8s.io/kubernetes/cmd/kubectl
  CGO_ENABLED=0 go build -trimpath -ldflags "$(k8s_ldflags)" -o "$OUT/" k8s.io/kubernetes/cmd/kubectl
  touch "$OUT/.kubectl-$K8S_VERSION"
fi

# krew, to install the kubectl plugin from its manifest and archive as an operator does.
if [[ ! -x "$OUT/krew" || ! -e "$OUT/.krew-$KREW_VERSION" ]]; then
  log "go install krew $KREW_VERSION"
  GOBIN="$OUT" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION"
  touch "$OUT/.krew-$KREW_VERSION"
fi

log "binaries ready in $OUT ($(( $(date +%s) - START )) s)"
echo "$OUT"
