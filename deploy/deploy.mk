# Image, chart and rendered manifests. Included from the Makefile.
#   make tools        build the pinned helm once into the tools cache
#   make manifests    refresh the chart's file copies, render deploy/gpuledger.yaml
#   make chart-test   helm lint/template, strict decoding, schema, stale check
#   make image-test   build the Dockerfile with buildah and smoke-test the image
.PHONY: tools manifests chart-test image-test

tools:
	scripts/tools.sh helm

manifests:
	scripts/manifests.sh

chart-test: tools
	$(GO) test -count=1 ./deploy/

image-test:
	$(GO) test -count=1 -v -timeout 30m ./deploy/image/
