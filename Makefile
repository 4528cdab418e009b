# gpuledger: `make demo` runs the main job, `make test` runs every test.
GO        ?= go
BIN       ?= bin/gpuledger
SHARED    ?= ../shared
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.revision=$(REVISION)
PKGS      := ./...

.PHONY: all build demo test unit race contract lint fmt vet bench fuzz dashboards clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gpuledger

demo: build
	$(BIN) demo --out out/demo

## test: vet, unit and end-to-end tests (simulator), race tests of the
## concurrent parts, then the contract scorer on the shared examples and on
## our own scenarios.
test: vet unit race contract

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -count=1 $(PKGS)

race:
	$(GO) test -count=1 -race ./collector/ ./collector/exposition/ ./collector/podresources/ ./collector/kubemeta/ ./billing/ledger/ ./billing/shipper/

contract: build
	python3 $(SHARED)/contracts/check_ledger.py $(BIN) $(SHARED)/contracts/examples $$(mktemp -d)
	python3 $(SHARED)/contracts/check_ledger.py $(BIN) testdata/scenarios $$(mktemp -d)

lint: fmt vet
	@if command -v golangci-lint >/dev/null 2>&1; then golangci-lint run ./...; \
	else echo "golangci-lint not installed; ran gofmt and go vet only"; fi

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

DENSE ?= $(CURDIR)/out/dense
bench:
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

clean:
	rm -rf bin out

include deploy/deploy.mk
