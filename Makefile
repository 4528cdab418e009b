# gpuledger: `make demo` runs the main job, `make test` runs every test.
GO        ?= go
BIN       ?= bin/gpuledger
SCORECARD ?= bin/scorecard
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.revision=$(REVISION)
PKGS      := ./...

# Go's default C flags (-O2 -g) plus one switch: the NVML bindings' cgo
# prologue calls functions that nvml.h marks deprecated, and gcc prints
# about 150 lines of warnings for them whenever the package is rebuilt. Only
# that warning is silenced; errors and every other warning still show.
# Exported so the go test runs below are as quiet as the build.
CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_CFLAGS

.PHONY: screenshot all build demo install chdb axe deps test test-fresh unit race contract lint arch fmt vet bench fuzz dashboards clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gpuledger

demo: build
	$(BIN) demo --out out/demo

## install: copy the binary to $(PREFIX)/bin (default ~/.local/bin, which
## needs no root; PREFIX=/usr/local for /usr/local/bin). DESTDIR prefixes
## it for packaging.
PREFIX ?= $(HOME)/.local
install: build
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 $(BIN) "$(DESTDIR)$(PREFIX)/bin/gpuledger"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on PATH";; esac

## test: vet, race tests of the concurrent parts, the scorer on the
## reference examples and on our own scenarios, then every unit and
## end-to-end test (last, so its summary of skipped integration tests is
## the last thing make test prints).
test: vet race contract unit

## test-fresh: what CI does on a machine that has never run the project:
## make test in a fresh clone of HEAD (committed files only), with an empty
## Go build cache and an empty tool directory, integration required. Run it
## before a change to the Makefile, .ci/run or scripts/, or one that adds a
## package whose tests start a real server. It builds etcd, kube-apiserver,
## kubectl and helm afresh: 72 minutes on a loaded 2-core machine (README).
## The module cache is kept: the proxy serves it anyway.
test-fresh:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	git clone -q . "$$tmp/src" && cd "$$tmp/src" && \
	start=$$(date +%s) && \
	GOCACHE=$$tmp/go-build GPULEDGER_TOOLS_DIR=$$tmp/tools GPULEDGER_REQUIRE_INTEGRATION=1 $(MAKE) test && \
	echo "test-fresh: make test passed from empty caches in $$(( $$(date +%s) - start ))s"

vet:
	$(GO) vet $(PKGS)

## unit: every package's tests through internal/testsummary, which prints
## what go test prints and ends with one block naming every integration
## test that was skipped and how to bring what it lacked (make deps).
## The 30-minute limit per package is a guard for a loaded machine (the
## end-to-end packages start real servers); go test's default is 10.
unit: kube-tools tools chdb axe
	$(GO) build -o bin/testsummary ./internal/testsummary
	GO=$(GO) bin/testsummary -count=1 -timeout 30m $(PKGS)

## chdb: the pinned chDB library (ClickHouse 26.7 in process) in the tool
## cache, fetched once with npm (scripts/deps.sh --chdb, no root): the
## tests comparing the ClickHouse SQL on 18.16 and 26.7 load it.
chdb:
	GO=$(GO) scripts/deps.sh --chdb

## axe: the pinned axe-core script in the tool cache (scripts/deps.sh
## --axe, no root): the serve pages' Chromium test runs it on every page.
axe:
	GO=$(GO) scripts/deps.sh --axe

## deps: install the Debian packages the integration tests use (the one
## list, scripts/deps.sh; CI runs it too). Needs root or sudo.
deps:
	scripts/deps.sh

# The ledger's concurrent paths (readers beside a writer, appends while
# streaming, the outbox, prune and retention): its single-goroutine
# property tests gain nothing under -race and take over ten minutes there.
LEDGER_RACE_TESTS ?= Readers|Writer|Outbox|Append|Prune|Retention|Streaming|Pins|Crash|SIGKILL
# The report reads its data's bounds, findings, coverage and quota while it
# prices the lines: builds over the embedded ledger, every policy's order
# (quota's lines wait for the reads), gaps, an error and a panic on the
# way; a large report's lines priced in parts (TestBuiltLinesAreInOrder);
# and, in the allocation API, a large answer's entries written in parts, a
# series' steps built at once, and a panic in a step.
REPORT_RACE_TESTS ?= ^(TestBuiltLinesAreInOrder|TestDataBoundsAreAskedNotStreamed|TestQuotaPolicyByHand|TestCoverageGapsMatchAWalkAndAreNeverBilled|TestBuildRequiresQuotaAndNodeLabels|TestPartialMonthIsMarkedPartial|TestAPanicInTheReadsIsTheCallers)$$
# kube-tools: quota/kubequota and nodelabel/kubenode test against a real
# kube-apiserver (internal/kubetest/make_test.go keeps every test target's
# prerequisites in step with the packages it runs).
race: kube-tools
	$(GO) test -count=1 -race ./collector/ ./collector/exposition/ ./collector/podresources/ ./collector/kubemeta/ ./ledger/outbox/shipper/ ./ledger/outbox/ ./quota/ ./quota/kubequota/ ./nodelabel/ ./nodelabel/kubenode/
	$(GO) test -count=1 -race -run '$(LEDGER_RACE_TESTS)' ./ledger/filestore/
	$(GO) test -count=1 -race -run '$(REPORT_RACE_TESTS)' ./billing/report/
	$(GO) test -count=1 -short -race -run '^(TestEntriesWrittenInPartsAreTheSame|TestSeriesBuiltAtOnceIsOneAtATime|TestAPanicInAStepIsTheCallers)$$' ./billing/allocation/

## contract: simulate every scenario with ground truth (testdata/examples,
## testdata/scenarios, and testdata/review: an independent reviewer's
## scenarios with hand-computed truth) and score the ledger against its truth.json.
contract: build
	$(GO) build -o $(SCORECARD) ./internal/scorecard/cmd/scorecard
	$(SCORECARD) $(BIN) testdata/examples out/contract/examples
	$(SCORECARD) $(BIN) testdata/scenarios out/contract/scenarios
	$(SCORECARD) $(BIN) testdata/review out/contract/review

lint: fmt vet arch actionlint
	@if command -v golangci-lint >/dev/null 2>&1; then golangci-lint run ./...; \
	else echo "golangci-lint not installed; ran gofmt and go vet only"; fi

## arch: every package's imports (this module's and outside modules') are
## exactly what its row of docs/ARCHITECTURE.md's table lists, and follow
## the layer picture there.
arch:
	$(GO) test -count=1 ./internal/archtest/

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

DENSE ?= $(CURDIR)/out/dense
bench: kube-tools
	$(GO) run ./internal/groundtruth/cmd/genscenarios -dense $(DENSE) -dense-duration 1h
	GPULEDGER_DENSE_SCENARIO=$(DENSE)/scenario.yaml $(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## fuzz: a short run of every fuzz target (each FUZZTIME).
FUZZTIME ?= 20s
fuzz:
	@for p in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$p 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$p $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
	  done; done

## dashboards: regenerate the Grafana JSON and the PrometheusRule from code
## (make test fails when the committed files are stale).
dashboards:
	$(GO) run ./dashboards/cmd/gendashboards -out dashboards/json
	$(GO) run ./alerts/cmd/genrules

## screenshot: regenerate docs/report-screenshot.png from the demo's real report.
screenshot:
	scripts/report-screenshot.sh

clean:
	rm -rf bin out

include deploy/deploy.mk
include internal/tools/kube.mk
