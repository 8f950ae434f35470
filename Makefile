# kubediff — see README.md. Every target works from a fresh clone.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The Dockerfile builds with exactly these flags.
LDFLAGS  := -s -w -X github.com/kubediff/kubediff/internal/cli.version=$(VERSION) -X github.com/kubediff/kubediff/internal/cli.commit=$(COMMIT)
TESTENV  := .testenv/bin
export KUBEBUILDER_ASSETS := $(abspath $(TESTENV))

.PHONY: all build install chart-schema dist testenv peers helm browser shells postgres tools test unit demo bench microbench vet lint tidy-check lint-dockerfile fmt clean

all: build

## build: static kubediff binary in bin/, version stamped
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/kubediff ./cmd/kubediff

## install: bin/kubediff into $(PREFIX)/bin (default /usr/local), with kubectl-kubediff and kubectl_complete-kubediff beside it for kubectl, and bash completion in $(PREFIX)/share/bash-completion/completions
PREFIX  ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/kubediff $(DESTDIR)$(PREFIX)/bin/kubediff
	ln -sf kubediff $(DESTDIR)$(PREFIX)/bin/kubectl-kubediff
	install -m 0755 hack/plugin/kubectl_complete-kubediff $(DESTDIR)$(PREFIX)/bin/kubectl_complete-kubediff
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	bin/kubediff completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/kubediff

## chart-schema: the config part of charts/kubediff/values.schema.json, generated from pkg/config's types
chart-schema:
	$(GO) run ./hack/chartschema charts/kubediff/values.schema.json

## testenv: local control plane (etcd, kube-apiserver, kubectl, controller manager, scheduler, KWOK) built from Go modules
TESTENV_BINS := $(addprefix $(TESTENV)/,etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kwok)
testenv: $(TESTENV_BINS)

$(TESTENV_BINS) &: hack/testenv/go.mod hack/testenv/go.sum hack/testenv/build.sh
	hack/testenv/build.sh
	@touch $(TESTENV_BINS)

## dist: release archives for linux, darwin and windows on amd64 and arm64, checksums, the krew manifest (dist/plugins/kubediff.yaml) and the Helm chart package
dist: helm
	hack/dist.sh $(VERSION) "$(LDFLAGS)" dist

## peers: kubewatch, which the living-cluster test runs beside kubediff for comparison (hack/peers)
$(TESTENV)/kubewatch: hack/peers/go.mod hack/peers/go.sum hack/peers/build.sh
	hack/peers/build.sh
	@touch $@
peers: $(TESTENV)/kubewatch

## test: every test, with the race detector, against the local control plane
# The living-cluster test runs after the others, alone: it measures what a
# real cluster's controllers make kubediff print, step by step, and on two
# cores the browser and control planes of test/e2e beside it slowed its
# Pods enough to split a Deployment's creation into one record more.
test: testenv peers helm browser shells postgres vet
	$(GO) test -race -count=1 -timeout 45m $$($(GO) list ./... | grep -v /test/living)
	$(GO) test -race -count=1 -timeout 25m ./test/living/

## browser: Debian's chromium, which the timeline page's tests drive headless (hack/browser.sh)
browser:
	hack/browser.sh

## postgres: Debian's PostgreSQL 15, which the history store's tests start in a temporary directory (hack/postgres.sh)
postgres:
	hack/postgres.sh

## shells: Debian's bash-completion and zsh, which the completion tests drive (hack/shells.sh)
shells:
	hack/shells.sh

## unit: tests that need no control plane and build no release (everything but test/e2e, test/living and test/dist); the history store's start a PostgreSQL
UNIT_PKGS = $$($(GO) list ./... | grep -v -e /test/e2e -e /test/living -e /test/dist)
unit: postgres
	$(GO) test -race -count=1 $(UNIT_PKGS)

## bench: end-to-end benchmark against the local control plane (BENCH_FLAGS=-quick: under two minutes; -scale: 300,000 objects, about 20 minutes), then the peers' table: kubediff (plain, with history, with 20 rules), kubectl get -w and kubewatch side by side on the same updates, PEERS_FLAGS rounds, medians and ratios (about 5 minutes)
BENCH_FLAGS ?= -quick
PEERS_FLAGS ?= -quick -rounds 3 -idle 60s
bench: build testenv peers
	$(GO) run ./hack/bench $(BENCH_FLAGS) -out bench-results.json
	$(GO) run ./hack/bench -compare -peers $(PEERS_FLAGS) -variant 'kubediff|||' \
		-variant 'history|||--state-dir $$STATEDIR' -variant 'rules20|||--config hack/bench/rules20-cel.yaml'

## microbench: hot-path benchmarks (ns/op, B/op, allocs/op)
microbench:
	$(GO) test -run XXX -bench . -benchmem ./pkg/diff/ ./pkg/watcher/

## demo: watch the cluster KUBECONFIG names; without one, start a local control plane, watch it, and drive a few changes
demo: build
	hack/demo.sh

vet:
	$(GO) vet ./...

## tools: developer tools pinned in hack/tools (golangci-lint), built into .tools/bin
TOOLS := .tools/bin
$(TOOLS)/golangci-lint: hack/tools/go.mod hack/tools/go.sum hack/tools/build.sh
	hack/tools/build.sh golangci-lint
	@touch $@

$(TOOLS)/helm: hack/helm/go.mod hack/helm/go.sum hack/tools/build.sh
	hack/tools/build.sh -m hack/helm helm
	@touch $@

## helm: Helm, pinned in hack/helm, built into .tools/bin (the chart's tests use it)
helm: $(TOOLS)/helm

## lint: golangci-lint with .golangci.yml, at the version pinned in hack/tools
lint: $(TOOLS)/golangci-lint
	$(TOOLS)/golangci-lint run ./...

## tidy-check: fail when go mod tidy would change a go.mod or go.sum (the tool modules' too)
tidy-check:
	$(GO) mod tidy -diff
	cd hack/tools && $(GO) mod tidy -diff
	cd hack/testenv && $(GO) mod tidy -diff
	cd hack/peers && $(GO) mod tidy -diff
	cd hack/helm && $(GO) mod tidy -diff

## lint-dockerfile: lint the Dockerfile (no Docker engine needed)
lint-dockerfile:
	npx --yes dockerfilelint@1.8.0 Dockerfile

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin .testenv .tools
