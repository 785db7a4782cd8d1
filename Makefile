# STB — status transport bridge. `make` (or `make help`) lists the targets.
#
# Everything the project checks runs through here (docs/conventions.md): fmt, vet and lint (staticcheck,
# installed by this Makefile from the Go module proxy at a pinned version), test (always -race, against
# a real PostgreSQL that `make postgres` makes sure is running, docs/design.md "Testing"), bench and demo.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

GO      ?= go
BIN_DIR := bin
STB     := ./$(BIN_DIR)/stb

# confluent-kafka-go links its bundled librdkafka through cgo; -race needs cgo as well.
export CGO_ENABLED := 1

# Build information stamped into the binary (internal/buildinfo; `stb version`, stb_build_info): the
# release tag or `git describe` between tags, and the commit, "-dirty" with uncommitted changes.
# Recursive (=), so git runs only for the targets that link a binary.
BUILDINFO_PKG := github.com/stbridge/stb/internal/buildinfo
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
VERSION_LDFLAGS = -X $(BUILDINFO_PKG).version=$(VERSION) -X $(BUILDINFO_PKG).revision=$(REVISION)

# Database the tests (and the demo) use; each test creates its own throwaway database from it.
STB_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
export STB_TEST_DATABASE_URL

# Extra flags: `make test TESTFLAGS='-run TestUnit -v'`, `make bench BENCHFLAGS='-count 6'`,
# `make demo DEMOFLAGS='--hubs 50'`.
TESTFLAGS  ?=
TEST_TIMEOUT ?= 20m
BENCHFLAGS ?= -run '^$$' -bench . -benchmem
DEMOFLAGS  ?=
PKGS       ?= ./...

# staticcheck, pinned; 2026.2.2 (module version v0.8.2) is built for Go 1.26. Installed into a
# versioned directory under bin/ so bumping the pin reinstalls it.
STATICCHECK_VERSION := v0.8.2
STATICCHECK_DIR     := $(BIN_DIR)/tools/staticcheck-$(STATICCHECK_VERSION)
STATICCHECK         := ./$(STATICCHECK_DIR)/staticcheck

# Go files subject to gofmt: everything but build output, vendored code and testdata.
FIND_GO_FILES := find . \( -path ./.git -o -path ./bin -o -path ./vendor -o -name testdata \) -prune \
	-o -name '*.go' -type f -print0

# The container image (deploy/Dockerfile): a static binary linked against musl, built here and copied
# into an image FROM scratch by podman (no daemon, no registry needed). IMAGE_TAG defaults to the
# version; deploy/kubernetes pins the release tag it deploys.
IMAGE     ?= ghcr.io/stbridge/stb
IMAGE_TAG ?= $(VERSION)
IMAGE_DIR := $(BIN_DIR)/image
# podman as it runs on this kind of machine (a container without systemd, hybrid cgroups): vfs storage,
# runc (crun refuses hybrid cgroups), cgroupfs, and a containers.conf without default ulimits, which
# an unprivileged container may not raise. Override PODMAN to use another engine's podman CLI.
PODMAN_CONF := $(IMAGE_DIR)/containers.conf
PODMAN      ?= CONTAINERS_CONF=$(CURDIR)/$(PODMAN_CONF) podman --storage-driver vfs --runtime runc --cgroup-manager cgroupfs
# `make image-test` runs the demo inside the container against the local PostgreSQL (host network). A
# short run; the HTTP listeners are off so that nothing else on the machine's 8080/8081 gets in the way.
IMAGE_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
IMAGE_TEST_DEMOFLAGS    ?= --hubs 20 --duration 5s --http-addr= --admin-addr= --database-name stb_image_test

.PHONY: help build fmt fmt-fix vet lint staticcheck docs-check tools postgres chromium test fuzz-short bench demo clean \
	image image-tools image-test

## help: list the targets (the default)
help:
	@echo 'Usage: make <target> [VAR=value ...]'
	@echo
	@grep -E '^## [a-z-]+:' $(MAKEFILE_LIST) | sed -e 's/^## /  /' -e 's/: /\t/' | expand -t 16
	@echo
	@echo 'Variables: STB_TEST_DATABASE_URL, TESTFLAGS, TEST_TIMEOUT, BENCHFLAGS, DEMOFLAGS, PKGS'

## build: build the stb binary into bin/stb (cgo: bundled librdkafka), stamped with VERSION and REVISION
build:
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $(STB) ./cmd/stb

## fmt: fail if any Go file is not gofmt-formatted
fmt:
	@unformatted="$$($(FIND_GO_FILES) | xargs -0 -r gofmt -l)"; \
	if [[ -n "$$unformatted" ]]; then \
		echo 'gofmt: these files need formatting (run: make fmt-fix):' >&2; \
		echo "$$unformatted" >&2; \
		exit 1; \
	fi

## fmt-fix: rewrite Go files with gofmt
fmt-fix:
	$(FIND_GO_FILES) | xargs -0 -r gofmt -w

## vet: go vet on every package
vet:
	$(GO) vet $(PKGS)

## lint: fmt + vet + staticcheck (pinned, installed into bin/tools on first use) + docs-check
lint: fmt vet staticcheck docs-check

## docs-check: fail if a tracked file refers to a document outside the repository (docs/ holds the design)
docs-check:
	$(GO) test -count=1 -run '^(TestSelfContained|TestMatches)$$' ./docs/

# staticcheck alone; `lint` is the target to run.
staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)

## tools: install the pinned tools (staticcheck) into bin/tools
tools: $(STATICCHECK)

$(STATICCHECK):
	@echo 'installing staticcheck $(STATICCHECK_VERSION) into $(STATICCHECK_DIR)'
	GOBIN=$(CURDIR)/$(STATICCHECK_DIR) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## postgres: make sure PostgreSQL answers at STB_TEST_DATABASE_URL (starts or installs it)
postgres:
	./scripts/ensure-postgres.sh

## chromium: make sure a headless Chromium is there for the console's browser test (installs it)
chromium:
	./scripts/ensure-chromium.sh

## test: all tests with -race against a real PostgreSQL and a real Chromium (never skipped); TESTFLAGS adds flags
test: postgres chromium
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)
	$(MAKE) --no-print-directory fuzz-short FUZZTIME=$(TEST_FUZZTIME)

# Each Fuzz target runs this many inputs inside `make test`; `make fuzz-short FUZZTIME=5m` fuzzes longer.
# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can fail a target with a bare
# "context deadline exceeded" when the time runs out while a worker is mid-input on a loaded machine
# (golang/go#75804, fixed in Go 1.27; it failed FuzzDecodeComplianceDelta here once). A count has no
# deadline to race; 10000 inputs take 1-2 s per target here, 20 s for FuzzScan (pkg/jsonscan).
TEST_FUZZTIME ?= 10000x

## fuzz-short: run each Fuzz target briefly (FUZZTIME, default 10s); no-op when there are none
FUZZTIME ?= 10s
fuzz-short: postgres
	@found=0; \
	for dir in $$(grep -rlE '^func Fuzz[A-Za-z0-9_]*\(' --include='*_test.go' . | xargs -r -n1 dirname | sort -u); do \
		for fn in $$(grep -hoE '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | sed 's/^func //' | sort -u); do \
			found=1; \
			echo "fuzz $$dir $$fn ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) "$$dir"; \
		done; \
	done; \
	if [[ $$found == 0 ]]; then echo 'fuzz-short: no Fuzz tests found'; fi

## bench: benchmarks for every package (override with BENCHFLAGS)
bench: postgres
	$(GO) test $(BENCHFLAGS) $(PKGS)

## demo: embedded Kafka + local Postgres + simulate + run + verify (DEMOFLAGS adds flags)
demo: build postgres
	$(STB) demo $(DEMOFLAGS)

## image-tools: make sure podman, runc, musl-gcc and CA certificates are there for the image (installs them)
image-tools:
	./scripts/ensure-image-tools.sh

# --no-cache: podman 4.3's build reused a cached COPY layer after the instruction's --chown changed;
# the layers are a CA bundle, an empty directory and the binary, so nothing is worth caching. The prune
# drops the image the tag named before.
## image: build the container image IMAGE:IMAGE_TAG (deploy/Dockerfile: static musl binary FROM scratch)
image: image-tools
	rm -rf $(IMAGE_DIR)
	mkdir -p $(IMAGE_DIR)
	mkdir -p $(IMAGE_DIR)/tmp
	cp /etc/ssl/certs/ca-certificates.crt $(IMAGE_DIR)/ca-certificates.crt
	printf '[containers]\ndefault_ulimits = []\n' > $(PODMAN_CONF)
	CC=musl-gcc $(GO) build -tags musl -trimpath \
		-ldflags '-s -w -linkmode external -extldflags -static $(VERSION_LDFLAGS)' \
		-o $(IMAGE_DIR)/stb ./cmd/stb
	@if readelf -l $(IMAGE_DIR)/stb | grep -q INTERP; then echo 'image: $(IMAGE_DIR)/stb wants a dynamic loader: not static' >&2; exit 1; fi
	$(PODMAN) build --no-cache -f deploy/Dockerfile -t $(IMAGE):$(IMAGE_TAG) $(IMAGE_DIR)
	$(PODMAN) image prune -f >/dev/null
	@echo "image: built $(IMAGE):$(IMAGE_TAG) ($$($(PODMAN) image inspect --format '{{.Size}}' $(IMAGE):$(IMAGE_TAG)) bytes)"

## image-test: build the image, then run `stb version` and the demo in it against the local PostgreSQL
image-test: image postgres
	@user="$$($(PODMAN) image inspect --format '{{.Config.User}}' $(IMAGE):$(IMAGE_TAG))"; \
	if [[ $$user != 10001:10001 ]]; then echo "image-test: the image runs as '$$user', want 10001:10001" >&2; exit 1; fi; \
	echo "image-test: runs as $$user"
	$(PODMAN) run --rm $(IMAGE):$(IMAGE_TAG) version | tee $(IMAGE_DIR)/version.out
	@grep -qxF 'stb $(VERSION)' $(IMAGE_DIR)/version.out || { echo 'image-test: `stb version` does not say $(VERSION)' >&2; exit 1; }
	$(PODMAN) run --rm --network host $(IMAGE):$(IMAGE_TAG) demo \
		--database-url '$(IMAGE_TEST_DATABASE_URL)' $(IMAGE_TEST_DEMOFLAGS)
	@echo 'image-test: ok — $(IMAGE):$(IMAGE_TAG) ran `stb version` and the demo'

## clean: remove build output, installed tools and test caches
clean:
	rm -rf $(BIN_DIR) coverage.out coverage.html *.coverprofile
	$(GO) clean -testcache
