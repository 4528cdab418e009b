# syntax=docker/dockerfile:1
# gpuledger: the node collector, `report` and `ledger` in one image.
#
#   docker build -t gpuledger .        (or: podman build / buildah bud)
#   docker run --rm gpuledger version
#
# The base images are build arguments so that an air-gapped build can name
# local ones (deploy/image_test.go builds from a debootstrapped Debian).
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm
# A small glibc base: the NVIDIA container toolkit injects the driver's
# libnvidia-ml.so into the container, and go-nvml/go-dcgm dlopen it, so the
# runtime needs glibc (no static/musl image). /bin/sh and GNU date are used
# by the chart's monthly report CronJob to name the previous month.
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${GO_IMAGE} AS build
ARG GOPROXY
ARG GOFLAGS
ARG GONOSUMDB
ARG VERSION=dev
ARG REVISION=unknown
# cgo for the NVML/DCGM bindings; their headers use deprecated declarations,
# which are warnings only.
ENV CGO_ENABLED=1 \
    CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" \
    GOPROXY=${GOPROXY} GOFLAGS=${GOFLAGS} GONOSUMDB=${GONOSUMDB}
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
      -o /out/gpuledger ./cmd/gpuledger \
 && mkdir -p /out/data

FROM ${BASE_IMAGE}
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=""
LABEL org.opencontainers.image.title="gpuledger" \
      org.opencontainers.image.description="Attributes every GPU-second of a Kubernetes node to the containers that held and used it; ledger, chargeback, Prometheus metrics" \
      org.opencontainers.image.source="https://github.com/gpuledger/gpuledger" \
      org.opencontainers.image.url="https://github.com/gpuledger/gpuledger" \
      org.opencontainers.image.documentation="https://github.com/gpuledger/gpuledger/blob/main/docs/install.md" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="gpuledger" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
COPY --from=build /out/gpuledger /usr/bin/gpuledger
# The collector's default data directory, owned by the non-root user for
# `docker run` without a volume; the DaemonSet mounts a hostPath here.
COPY --from=build --chown=65532:65532 /out/data /var/lib/gpuledger
COPY deploy/prices.yaml /etc/gpuledger/prices.yaml
# Non-root by default (distroless "nonroot" uid). `report`, `ledger` and the
# chart's Jobs run as this user. The collector DaemonSet runs as uid 0: the
# kubelet pod-resources socket is root-owned with no write bit for anyone
# else, and a unix socket needs write permission to connect (docs/install.md).
USER 65532:65532
EXPOSE 9753
ENTRYPOINT ["/usr/bin/gpuledger"]
CMD ["collect"]
