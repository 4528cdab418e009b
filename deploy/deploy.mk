# Image, chart and rendered manifests. Included from the Makefile.
#   make tools        build the pinned helm once into the tools cache
#   make manifests    refresh the chart's file copies, render deploy/gpuledger.yaml
#   make chart-test   helm lint/template, strict decoding, schema, stale check
#   make image-test   build the Dockerfile with buildah and smoke-test the image
#   make image        build the image the chart deploys by default
#   make image-push   build it and push it (IMAGE_REPOSITORY=your registry)
#   make actionlint   check .github/workflows with the pinned actionlint
.PHONY: tools manifests chart-test image-test image image-push actionlint

# The image `make image` builds is the chart's default: values.yaml's
# image.repository, tagged with Chart.yaml's appVersion (image.tag is empty,
# so the chart takes appVersion). deploy/image_ref_test.go checks they
# agree. To run your own build, push it and point the chart at it
# (docs/install.md, "Your own image"):
#   make image-push IMAGE_REPOSITORY=registry.example.com/gpuledger
IMAGE_REPOSITORY ?= ghcr.io/gpuledger/gpuledger
IMAGE_TAG        ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' deploy/helm/gpuledger/Chart.yaml)
IMAGE            ?= $(IMAGE_REPOSITORY):$(IMAGE_TAG)
# docker, or podman (same arguments).
CONTAINER        ?= docker

image:
	$(CONTAINER) build -f Dockerfile -t $(IMAGE) \
	  --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
	  --build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) .

image-push: image
	$(CONTAINER) push $(IMAGE)

tools:
	scripts/tools.sh helm

manifests:
	scripts/manifests.sh

chart-test: tools
	$(GO) test -count=1 ./deploy/

image-test:
	$(GO) test -count=1 -v -timeout 30m ./deploy/image/

# actionlint checks the workflows (.github/workflows/release.yml); go run
# builds the pinned version once into Go's cache. deploy/workflow_test.go
# runs the same version.
ACTIONLINT_VERSION ?= v1.7.12
actionlint:
	$(GO) run github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION) .github/workflows/*.yml
