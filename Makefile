# clusterd-ts: the README's two commands are `make demo` and `make test`.
# Node 24 LTS is pinned in package.json (the `node` package) and used from node_modules/.bin, so the
# machine's own Node only bootstraps `npm ci`.
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
NODE := $(CURDIR)/node_modules/.bin/node
KUBECONFIG ?= $(CURDIR)/.cluster/kubeconfig

.PHONY: sim all deps validators control-plane clusterd-peer volcano ascend-operator conformance promtool image test test-unit test-integration typecheck build bundle cluster-up cluster-down run demo bench lint clean kubectl-clusterd

all: test

# Reinstall only when package.json or the lock changed.
node_modules/.installed: package.json package-lock.json
	@echo "==> npm install (Node 24 toolchain and dependencies, versions from package-lock.json)"
	@# npm 11.19's `npm ci` rejects this lock (it wants other platforms' optional swc packages), so
	@# install from the lock with `npm install`, which keeps the locked versions.
	npm install --no-audit --no-fund
	@touch $@

deps: node_modules/.installed

# kube-apiserver, kube-scheduler, etcd, kwok and helm built from Go modules into ~/.cache/clusterd-ts
# (keyed by version; a cached run takes seconds, a cold one ~10-15 min on 2 cores).
control-plane:
	@bash tools/k8s-bins/build.sh >/dev/null

# The real ClusterD, built from the MindCluster snapshot (../shared/mindcluster, or $MINDCLUSTER_SRC) in
# a scratch copy and cached in ~/.cache/clusterd-ts keyed by the snapshot's commit (~5 min cold).
clusterd-peer:
	@bash tools/clusterd-peer/build.sh >/dev/null

# The real Volcano (vc-scheduler with Huawei's ascend plugin compiled in, the stock vc-scheduler,
# vc-controller-manager) from ../shared/volcano and ../shared/mindcluster, and the real Ascend
# Operator; cached in ~/.cache/clusterd-ts keyed by versions and content (cold times in the README).
volcano:
	@bash tools/volcano/build.sh >/dev/null

ascend-operator:
	@bash tools/ascend-operator/build.sh >/dev/null

# The differential suite alone: every scenario on the real ClusterD and on clusterd-ts, compared.
conformance: deps control-plane clusterd-peer
	$(NODE) --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects conformance

# promtool (Debian's prometheus package) checks metric names and the shipped alert rules in the tests.
promtool:
	@command -v promtool >/dev/null || { echo "==> apt-get install prometheus (for promtool)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null) \
	  || echo "warning: could not install promtool (not root?); the metrics lint and alert rules tests will be skipped outside CI"; }

typecheck: deps
	$(NODE) node_modules/typescript/bin/tsc -p tsconfig.json --noEmit

# typescript-eslint over every source file (eslint.config.js); type-aware, ~40 s on 2 cores. Then the
# citation check: no comment cites an issue, a commit or a document outside the repository, and no
# product string cites one (tools/lint/comment-citations.ts; prints file:line per finding).
lint: deps
	$(NODE) node_modules/eslint/bin/eslint.js .
	$(NODE) tools/lint/comment-citations.ts

# The JSON Schema validators as code ajv generates (schemas/**/*.validators.gen.ts, committed; a unit
# test fails while one is stale): the product loads no schema compiler at run time.
validators: deps
	$(NODE) tools/gen-validators.ts --write

build: deps validators
	$(NODE) node_modules/typescript/bin/tsc -p tsconfig.build.json

# What the image runs (Dockerfile): the controller as one esbuild bundle, dist-bundle/main.mjs, with
# the gRPC protos beside it; needs no node_modules (`node dist-bundle/main.mjs --help`).
bundle: deps validators
	$(NODE) tools/bundle/build.ts dist-bundle

# The container image the chart runs (Dockerfile), built with podman without a container registry:
# a debootstrapped Debian bookworm base with the npm registry's Node binary, then the Dockerfile on
# it with the bundle built here (tools/image/build.sh; installs podman, runc and debootstrap with
# apt-get when missing, and docker-registry and containerd, with which the image tests carry it to a
# node as the README says). Tagged clusterd-ts:<chart appVersion> in podman's storage; the base cached
# in ~/.cache/clusterd-ts/image, the image rebuilt only when its inputs change (times in the README).
image: deps
	@bash tools/image/build.sh >/dev/null

# The README's test command: type check, lint, unit + integration on a real apiserver, conformance
# against the real ClusterD, the real-stack tests on the real Volcano and Ascend Operator.
test: deps control-plane clusterd-peer volcano ascend-operator promtool image
	$(NODE) test/run-tests.mjs

test-unit: deps
	$(NODE) --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects unit

test-integration: deps control-plane image
	$(NODE) --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects integration

# A local control plane in the background with kwok nodes; kubeconfig in .cluster/kubeconfig.
cluster-up: deps control-plane
	$(NODE) tools/cluster.ts up $(if $(NODES),--nodes $(NODES),)

cluster-down: deps
	$(NODE) tools/cluster.ts down

# The controller in the foreground against $(KUBECONFIG).
run: deps
	KUBECONFIG=$(KUBECONFIG) $(NODE) main.ts $(ARGS)

# The kubectl plugin (README "kubectl clusterd") as one executable that needs no Node: a Node single
# executable application (tools/kubectl-plugin/build.ts), packed with LICENSE into
# dist/kubectl-clusterd-linux-amd64.tar.gz, and dist/clusterd.yaml, the krew manifest with that
# archive's sha256 (KUBECTL_CLUSTERD_URI=<where it is published> sets its uri). The executable and
# archive are not rebuilt while their inputs are unchanged; the manifest is written every time.
kubectl-clusterd: deps
	$(NODE) tools/kubectl-plugin/build.ts dist

# The demo on the real Volcano. TOPOLOGY=stock (default): Volcano's own vc-scheduler, clusterd-ts
# reschedules; TOPOLOGY=mindcluster: vc-scheduler with Huawei's ascend plugin, which then deletes.
demo: deps control-plane volcano
	$(NODE) tools/demo.ts $(if $(TOPOLOGY),--topology $(TOPOLOGY),)

# PEER=clusterd also runs the real ClusterD beside clusterd-ts and prints <figure>_vs_clusterd ratios.
bench: deps control-plane $(if $(PEER),clusterd-peer,)
	$(NODE) tools/bench.ts $(ARGS) $(if $(PEER),--peer $(PEER),)

clean:
	rm -rf dist dist-bundle coverage .cluster

# The deterministic simulation suite alone (docs/simulation.md): seeded fault histories against the
# assembled controller in virtual time. SIM_SEED=<n> replays one history; SIM_HISTORIES, SIM_STEPS.
sim: deps
	$(NODE) --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects simulation
