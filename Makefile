# mxjob-operator: every command a newcomer needs. `make test` and `make demo` work on a fresh
# machine: they create the virtualenv and build the local control plane's binaries when missing.
# `make test` also needs root on a Debian-like machine and ../shared/third_party (CONTRIBUTING.md
# says what each target needs, and which run without root).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The kubeflow-training SDK lives in a virtualenv of its own: it needs an older kubernetes client
# than the operator (tests/e2e/sdk/requirements.txt says why).
SDK_VENV := .venv-sdk
SDK_REQUIREMENTS := tests/e2e/sdk/requirements.txt
SDK_STAMP := $(SDK_VENV)/.installed-stamp
# So does cyclonedx-py, which only make release runs (hack/sbom-requirements.txt says why).
SBOM_VENV := .venv-sbom
SBOM_REQUIREMENTS := hack/sbom-requirements.txt
SBOM_STAMP := $(SBOM_VENV)/.installed-stamp
LOCAL := .local
PYTEST_ARGS ?=
JOB ?= examples/v1/train/mx_job_dist_cpu.yaml
DEMO_ARGS ?=
DEV_ARGS ?=
# The plane's targets need the Kubernetes binaries alone (not every build of `make binaries`: in
# make test, a test runs `make cluster-up` while the late builds hold their locks). With
# --real-node, the demo and dev-up run the operator's images on the real node: they need its
# Debian packages, containerd and CoreDNS, and the images first.
REAL_NODE_NEEDS = $(if $(findstring --real-node,$(1)),node-packages build-node-binaries images)

.PHONY: help venv sdk-venv sbom-venv binaries build-kubernetes build-training-operator build-kwok build-node-binaries build-helm build-prometheus build-kube-network-policies build-registry build-cosign node-packages images test-compiles test-preparations release third-party builds cluster-up cluster-down dev-up dev-down demo demo-node demo-multikueue demo-gang demo-gang-50 crd generate lint typecheck docs unit e2e test bench bench-compare bench-recovery bench-progress fuzz chaos clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,examples]'
	# localkube (hack/localkube) is development tooling, not in the wheel: put hack/ on the path.
	echo "$(CURDIR)/hack" > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/mxjob-operator-hack.pth"
	touch $@

venv: $(STAMP) ## create .venv: the project (editable) with both processes' extras, localkube, test tools, examples' mxnet + TVM

$(SDK_STAMP): $(SDK_REQUIREMENTS)
	$(PYTHON) -m venv --clear $(SDK_VENV)
	$(SDK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SDK_VENV)/bin/python -m pip install --quiet -r $(SDK_REQUIREMENTS)
	touch $@

sdk-venv: $(SDK_STAMP) ## create .venv-sdk with kubeflow-training==1.8.1, the SDK the e2e tests drive

$(SBOM_STAMP): $(SBOM_REQUIREMENTS)
	$(PYTHON) -m venv --clear $(SBOM_VENV)
	$(SBOM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SBOM_VENV)/bin/python -m pip install --quiet -r $(SBOM_REQUIREMENTS)
	touch $@

sbom-venv: $(SBOM_STAMP) ## create .venv-sbom with cyclonedx-bom, the SBOM tool of make release

binaries: build-kubernetes build-training-operator build-kwok build-node-binaries build-helm build-prometheus build-kube-network-policies build-registry build-cosign ## build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet, kube-proxy, etcd, training-operator, kwok, containerd, CoreDNS, helm, prometheus, promtool, kube-network-policies, the distribution registry and cosign once per machine

# One target per build script, so that `make -j` (make builds) runs them side by side: each
# writes its own cache directory (hack/lib/build.sh), and Go's module and build caches take
# concurrent builds.
build-kubernetes:
	@hack/build-binaries.sh >/dev/null

build-training-operator:
	@hack/build-training-operator.sh >/dev/null
	@hack/build-training-operator.sh client-rate-limits.patch >/dev/null

build-kwok:
	@hack/build-kwok.sh >/dev/null

build-node-binaries:
	@hack/build-node-binaries.sh >/dev/null

build-helm:
	@hack/build-helm.sh >/dev/null

build-prometheus:
	@hack/build-prometheus.sh >/dev/null

build-kube-network-policies:
	@hack/build-kube-network-policies.sh >/dev/null

build-registry:
	@hack/build-registry.sh >/dev/null

build-cosign:
	@hack/build-cosign.sh >/dev/null

node-packages: ## the Debian packages of the real node and the image builds (runc, CNI plugins, nftables, buildah, debootstrap); root
	@hack/install-node-packages.sh

images: venv node-packages ## the webhook, controller, training-example and pause images (buildah, cached per machine); root
	@$(PY) -m localkube.images

release: venv sbom-venv node-packages build-helm build-cosign ## push both images (by digest, cosign-signed, CycloneDX SBOM attested) and the chart to REGISTRY=<host:port/prefix> (RELEASE_CA=<its CA file>); root
	@REGISTRY="$(REGISTRY)" RELEASE_CA="$(RELEASE_CA)" RELEASE_OUT="$(RELEASE_OUT)" hack/release.sh

cluster-up: venv build-kubernetes ## start etcd, kube-apiserver, kube-controller-manager on loopback
	@$(PY) -m localkube up --state-dir $(LOCAL)

cluster-down: venv ## stop the local control plane
	@$(PY) -m localkube down --state-dir $(LOCAL)

dev-up: venv build-kubernetes $(call REAL_NODE_NEEDS,$(DEV_ARGS)) ## control plane + CRD + webhook (TLS, registered) + controller, in the background (DEV_ARGS=--real-node: installed as images on the real node, root)
	@$(PY) -m localkube dev-up --state-dir $(LOCAL) $(DEV_ARGS)

dev-down: venv ## stop what dev-up, demo and demo-node started (test kubelet, operator, control plane, real node)
	@$(PY) -m localkube dev-down --state-dir $(LOCAL)

demo: venv build-kubernetes $(call REAL_NODE_NEEDS,$(DEMO_ARGS)) ## run an MXJob end to end on this machine (JOB=<file>, default the CPU train; DEMO_ARGS=--real-scheduling for kube-scheduler, --real-node for containers)
	@$(PY) -m localkube.scenarios.demo --state-dir $(LOCAL) --job $(JOB) $(DEMO_ARGS)

demo-node: venv binaries node-packages images ## the demo in containers on the real node: the operator's images and the job's (root; first run builds ~5 min)
	@$(PY) -m localkube.scenarios.demo --state-dir $(LOCAL) --job $(JOB) --real-node $(DEMO_ARGS)

demo-multikueue: venv binaries node-packages images third-party ## an MXJob queued on a manager cluster and run by MultiKueue on the real node (root; Kueue v0.19.2)
	@$(PY) -m localkube.scenarios.multikueue_demo --state-dir $(LOCAL) --job $(JOB)

demo-gang: venv binaries ## two GPU jobs on 6 GPUs under kube-scheduler, without and with native gang scheduling
	@$(PY) -m localkube.scenarios.gang_demo --state-dir $(LOCAL)/gang-demo

demo-gang-50: venv binaries ## 50 GPU jobs compete for 6 GPUs under native gang scheduling (not in make test; a 9-job version is)
	@$(PY) -m localkube.scenarios.gang_competition --jobs 50 --state-dir $(LOCAL)/gang-competition

crd: venv binaries ## regenerate manifests/crd/ (and the Helm chart's copy) from the pinned kube-apiserver's OpenAPI
	$(PY) hack/gen_crd.py
	$(PY) -m chartsync

# No build: the reference pages are read from the sources, the CRD included (make crd writes it).
# The chart's copies of manifests/ (the CRD, the alert rules, the dashboard) are the list in
# hack/chartsync.py; tests/hack/test_chartsync.py fails when one is stale.
generate: venv ## write docs/reference/ from the sources (hack/docgen) and the chart's copies of manifests/ (hack/chartsync.py)
	$(PY) -m docgen
	$(PY) -m chartsync

lint: venv ## ruff (lint + format check), hadolint (Dockerfiles)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/hadolint Dockerfile.webhook Dockerfile.controller examples/Dockerfile examples/Dockerfile.tvm

# NO_MKDOCS_2_WARNING: mkdocs-material's banner about its end of life, not a warning of the build.
docs: venv ## build the documentation site (mkdocs.yml) in strict mode into .local/site: a broken link or anchor fails it
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir $(LOCAL)/site

# The SDK driver is checked against the packages it runs with (.venv-sdk), not the operator's.
typecheck: venv sdk-venv ## mypy (strict on shared/, webhook/, controller/, certs/)
	$(VENV)/bin/mypy shared webhook controller certs hack/localkube hack/docgen hack/docs_hooks.py \
		hack/docs_links.py hack/chartsync.py hack/generated.py tests bench examples/scripts \
		--exclude tests/e2e/sdk/
	$(VENV)/bin/mypy --python-executable $(SDK_VENV)/bin/python tests/e2e/sdk

unit: venv ## the tests that need no control plane
	$(VENV)/bin/pytest -m "not e2e" $(PYTEST_ARGS)

e2e: venv sdk-venv binaries images third-party ## the tests against the local control plane
	$(VENV)/bin/pytest -m e2e $(PYTEST_ARGS)

# The builds take half of a fresh `make test`, and they are compiles: on a 2-core machine three
# side by side (BUILD_JOBS=3) gained nothing measurable over one after another (measured cold:
# 34 min with one build more, against 30). One at a time by default; raise it with more cores.
BUILD_JOBS ?= 1
# What make test builds while its first tests run (hack/run-tests.sh): the components only some
# tests need, in the order the real-node tests first need them, and the images only some
# real-node tests run right after what they pack (late-images-*). Volcano, which only a test beside
# the real node needs, comes last: cold, these builds end after the real-node tests reach the last
# of them, so each build placed before one they wait for adds its time to the run. A test that comes before its build has ended waits
# on the build's lock (hack/lib/build.sh, the image cache's lock). A test module that needs some
# of them names them in its late_builds marker, and runs after the others, in the order of its
# last build (tests/helpers/late_builds.py).
LATE_BUILDS := build-helm build-kwok build-training-operator third-party-katib late-images-tvm-examples \
	late-images-katib third-party-kueue-current late-images-kueue-current build-prometheus \
	build-kube-network-policies build-registry build-cosign third-party-cert-manager \
	third-party-kueue late-images-kueue third-party-volcano

builds: ## every build and check make test needs, BUILD_JOBS (1) at a time: the virtualenvs, binaries, images, third-party components, lint and typecheck
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) venv sdk-venv binaries images third-party lint typecheck

# What make test needs before its first test, as two chains side by side: the compiles of the
# control plane (the Kubernetes binaries), which keep both cores busy, and the rest (the
# virtualenvs, the node's packages and the images, ruff and mypy, then containerd and CoreDNS),
# which is mostly downloads, debootstrap and one core's work until its own compile, and fills the
# cores the Kubernetes compile leaves idle while it downloads modules and links. Each chain makes
# its targets one after another. kwok, which only a benchmark's smoke run and the Kueue topology
# test need, is a late build.
TEST_COMPILES := build-kubernetes
TEST_PREPARATIONS := venv sdk-venv sbom-venv images lint typecheck build-node-binaries

test-compiles:
	@for target in $(TEST_COMPILES); do $(MAKE) --no-print-directory "$$target" || exit; done

test-preparations:
	@for target in $(TEST_PREPARATIONS); do $(MAKE) --no-print-directory "$$target" || exit; done

test: ## lint, typecheck, then every test (unit and e2e): the real-node tests in one pytest process, the others beside it, while the components only later tests need are built
	@MXJOB_FIRST_BUILDS="$(MAKE) --no-print-directory -j2 test-compiles test-preparations" \
		MXJOB_LATE_BUILDS="$(MAKE) --no-print-directory $(LATE_BUILDS)" \
		hack/run-tests.sh $(PYTEST_ARGS)

third-party: third-party-cert-manager third-party-kueue third-party-kueue-current third-party-volcano third-party-katib ## cert-manager (controller, cainjector), Kueue v0.10 and the newest Kueue (kueue), Volcano (vc-scheduler, vc-controller-manager) and Katib (controller, db-manager, goptuna, file metrics collector), each with its CRDs or manifests, from its release source in ../shared/third_party (cached)

third-party-%:
	@hack/build-third-party.sh $* >/dev/null

late-images-%: venv node-packages
	@$(PY) -m localkube.scenarios.late_images $* >/dev/null

bench: venv binaries ## measure webhook, admission and controller at full size, and the before/after/peer comparison; writes docs/explanation/performance.md (no root)
	$(PY) -m bench

COMPARE_JOBS ?= 100 500
bench-compare: venv binaries ## this operator before/after against training-operator at its best, A B C B A per size (COMPARE_JOBS="100 500 2000"; no root); JSON in .local/bench/compare.json
	$(PY) -m bench.creation_compare --jobs $(COMPARE_JOBS) --output $(LOCAL)/bench/compare.json

# The real-node cases whose figures docs/explanation/recovery.md quotes, and the same cases under
# training-operator v1.8.1 (a bench module: make test never collects it). Their figures go to
# the JSON (tests/helpers/figures.py), the tables into the page (bench/recovery.py).
RECOVERY_CASES := tests/e2e/test_real_node_failures.py tests/e2e/test_real_node_restarts.py \
	tests/e2e/test_real_node_recovery.py tests/e2e/test_real_node_disruptions.py \
	tests/e2e/test_real_node_tune_recovery.py tests/e2e/test_real_node_progress_deadline.py \
	tests/e2e/bench_training_operator_failures.py
bench-recovery: venv binaries node-packages images late-images-tvm-examples ## the real-node recovery cases and the same under training-operator v1.8.1 side by side (root, ~25 min); JSON in .local/bench/recovery.json, tables in docs/explanation/recovery.md
	rm -f $(LOCAL)/bench/recovery.json
	MXJOB_FIGURES=$(LOCAL)/bench/recovery.json $(VENV)/bin/pytest -p no:cacheprovider \
		$(RECOVERY_CASES) $(PYTEST_ARGS)
	$(PY) -m bench.recovery $(LOCAL)/bench/recovery.json --page docs/explanation/recovery.md

bench-progress: venv binaries ## the progress endpoint flooded by 8 pods' real tokens against a real kube-apiserver (a minute); JSON in .local/bench/progress.json, the table in docs/how-to/monitor.md
	rm -f $(LOCAL)/bench/progress.json
	MXJOB_FIGURES=$(LOCAL)/bench/progress.json $(VENV)/bin/pytest -p no:cacheprovider \
		tests/e2e/test_progress_endpoint.py $(PYTEST_ARGS)
	$(PY) -m bench.recovery $(LOCAL)/bench/progress.json --page docs/how-to/monitor.md

# The address-space cap turns an input that makes the webhook allocate without bound into a
# MemoryError the property reports, instead of the kernel's OOM killer on a shared machine.
fuzz: venv ## fuzz the webhook's review endpoints with >= 100,000 generated inputs (minutes)
	ulimit -v 4000000 && MXJOB_FUZZ_EXAMPLES=11000 MXJOB_FUZZ_MIN_INPUTS=100000 \
		$(VENV)/bin/pytest tests/fuzz --timeout=1800 -q -p no:cacheprovider $(PYTEST_ARGS)

chaos: venv binaries ## 50 MXJobs through controller kills, API server and etcd restarts; docs/explanation/recovery.md
	$(PY) -m localkube.scenarios.chaos --state-dir $(LOCAL)/chaos --report docs/explanation/recovery.md

# clean never builds .venv only to remove it: without a finished one (no stamp, so localkube is not
# on its path) nothing make started can be running, and there is nothing to stop.
clean: ## stop what dev-up, demo and demo-node started (if .venv is installed), then remove .local and the virtualenvs
	@if [ -f $(STAMP) ]; then $(PY) -m localkube dev-down --state-dir $(LOCAL); fi
	rm -rf $(LOCAL) $(VENV) $(SDK_VENV) $(SBOM_VENV)

# Not in make test: the first run builds kube-apiserver once per release (about 6 minutes each).
KUBE_VERSIONS ?= v1.28.15 v1.37.2
.PHONY: test-kube-versions
test-kube-versions: venv build-kubernetes build-helm ## the Helm install and an MXJob on kube-apiserver v1.28.15 (the chart's floor) and v1.37.2 (KUBE_VERSIONS=...; root)
	$(PY) -m localkube.scenarios.kube_versions $(foreach v,$(KUBE_VERSIONS),--version $(v)) \
		--state-dir $(LOCAL)/kube-versions
