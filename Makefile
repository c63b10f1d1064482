# sshdeck: `make run` serves it locally, `make test` checks everything.
# Both install what they need on a fresh machine (Go modules; nothing else yet).

export PATH := $(PATH):/usr/local/go/bin
GO      ?= go
BIN     := bin

.PHONY: run test build fmt-check vet tidy-check clean

## run: build the sshdeck command and serve the API on 127.0.0.1:8080 over ./.sshdeck
run: build
	$(BIN)/sshdeck serve

## build: the local sshdeck command into bin/
build:
	$(GO) build -o $(BIN)/sshdeck ./cmd/sshdeck

## test: formatting, go vet, and every test with the race detector
test: fmt-check vet
	$(GO) test -race -count=1 ./...

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './node_modules/*' -not -path './infra/node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
