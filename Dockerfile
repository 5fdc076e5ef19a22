# syntax=docker/dockerfile:1
# clusterd-ts image: docker build -t clusterd-ts:0.1.0 .
# (charts/clusterd-ts defaults to this image: repository clusterd-ts, tag = the chart's appVersion.)
# `make image` (tools/image/build.sh) builds this same file with podman from what a machine without
# a container registry reaches: NODE_IMAGE is then a local Debian bookworm base with the same Node
# binary (from the npm registry), and BUNDLE_STAGE=prebuilt takes the bundle `make bundle` wrote.
#
# Node is pinned to the version package.json pins (devDependency `node`, README "Toolchain").
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
# The stage the runtime takes dist-bundle/ from: `build` (bundled here) or `prebuilt` (the build
# context's dist-bundle/, which .dockerignore keeps out of a plain `docker build`).
ARG BUNDLE_STAGE=build

# ---- build: install every dependency from the lock, type-check, bundle ---------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# `npm ci` rejects this lock (it wants other platforms' optional swc packages, see the Makefile);
# `npm install` installs the locked versions. --ignore-scripts: the `node` devDependency would
# download a second Node binary; the image's own Node 24.21.0 runs tsc and esbuild (whose binary
# comes from its @esbuild/<platform> package, no install script needed).
RUN npm install --no-audit --no-fund --ignore-scripts
COPY . .
# tsc fails the build on a type error; esbuild (tools/bundle/build.ts) then writes the controller
# as one tree-shaken file, dist-bundle/main.mjs, with the gRPC .proto files beside it in
# dist-bundle/protos/ (docs/benchmarks.md "One bundled file": less RSS and less CPU to start than
# tsc's dist/ with node_modules). The JSON Schema validators are inside the bundle as the code ajv
# generated from them (schemas/**/*.validators.gen.ts; tools/gen-validators.ts fails here if one is stale).
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json --noEmit \
 && node tools/gen-validators.ts \
 && node tools/bundle/build.ts dist-bundle \
 && test -f dist-bundle/main.mjs && test -f dist-bundle/protos/recover.proto

# ---- prebuilt: a bundle built outside (tools/image/build.sh), the only file of its context ----
FROM scratch AS prebuilt
COPY dist-bundle /src/dist-bundle

FROM ${BUNDLE_STAGE} AS bundle

# ---- runtime: production dependencies only, non-root, read-only friendly -------------------
FROM ${NODE_IMAGE} AS runtime
LABEL org.opencontainers.image.title="clusterd-ts" \
      org.opencontainers.image.description="ClusterD-compatible fault-handling controller for Ascend NPU clusters" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0"
# V8 heap (docs/benchmarks.md "Where the memory goes" and "Idle memory: the breakdown"): a 1 MiB
# semi-space instead of V8's default (up to 16 MiB x 3 for the young generation, which an idle
# controller never needs but keeps resident; 4 MiB before: 6 MiB more at idle), and the old space
# capped at 3/4 of the chart's 1 GiB memory limit so V8 collects before the kernel kills. Change
# both with resources.limits.memory (extraEnv NODE_OPTIONS replaces this line). tools/bench runs
# the controller with this same environment and the ENTRYPOINT's node flags.
# glibc's allocator (docs/benchmarks.md "steady-state RSS band" and "Idle memory"): two arenas
# instead of 8 per core, a fixed trim threshold of 128 KiB, and blocks of 32 KiB and more in
# mmaps of their own. glibc otherwise raises both thresholds after the first large free, so the
# buffers of each device-plugin refresh (1,000 watch events at once) stay in the process: RSS crept
# up 156 -> 205 MiB over 4 refreshes at 1,000 nodes, and stays flat at 170-176 MiB with these
# settings. 32 KiB is the largest segment of V8's compiler zones: at 128 KiB those segments stayed
# behind in the arena as holes after each compilation (4 MiB at idle at 1,000 nodes).
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-semi-space-size=1 --max-old-space-size=768" \
    GLIBC_TUNABLES="glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072:glibc.malloc.mmap_threshold=32768"
WORKDIR /app
# uid/gid 9000 like ClusterD's hwMindX user; the chart runs the pod as 9000 as well.
RUN groupadd --system --gid 9000 hwMindX \
 && useradd --system --uid 9000 --gid 9000 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin hwMindX
# The bundle holds every dependency it uses: no node_modules in the image. No source maps either
# (hence no --enable-source-maps above): stack traces name the functions (identifiers are not
# minified) at a line:column of dist/main.mjs.
# Files stay owned by root and read-only for the runtime user.
COPY --from=bundle /src/dist-bundle ./dist
USER 9000:9000
# 8899: ClusterD gRPC (--grpc-port); 11253: /healthz /readyz /metrics (--http-port).
EXPOSE 8899 11253
# --no-maglev (a V8 flag, which NODE_OPTIONS does not accept): no mid-tier optimizing compiler;
# hot code still reaches TurboFan. Maglev compiled much of the bundle once and left its zone memory
# and code pages behind: 3-5 MiB less at idle at 1,000 nodes, fault -> cluster-info unchanged
# (docs/benchmarks.md "Idle memory").
ENTRYPOINT ["node", "--no-maglev", "dist/main.mjs"]
