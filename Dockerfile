# Static kubediff on a distroless non-root base. `make build` uses the same
# flags, so CI proves this build on machines without a Docker engine.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/kubediff/kubediff/internal/cli.version=${VERSION} -X github.com/kubediff/kubediff/internal/cli.commit=${COMMIT}" \
    -o /out/kubediff ./cmd/kubediff

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/kubediff /kubediff
USER 65532:65532
ENTRYPOINT ["/kubediff"]
CMD ["watch"]
