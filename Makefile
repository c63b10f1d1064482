# sshdeck: `make run` serves it locally, `make test` checks everything.
# Both install what they need on a fresh machine: Go modules, and for the tests
# curl and ssh-keygen (the README walk-through runs as a test).

export PATH := $(PATH):/usr/local/go/bin
GO      ?= go
BIN     := bin

.PHONY: run test bench build deps fmt-check vet clean

## run: build the sshdeck command and serve the API on 127.0.0.1:8080 over ./.sshdeck
run: build
	$(BIN)/sshdeck serve

## build: the local sshdeck command into bin/
build:
	$(GO) build -o $(BIN)/sshdeck ./cmd/sshdeck

## test: formatting, go vet, and every test with the race detector
test: deps fmt-check vet
	$(GO) test -race -count=1 ./...

## bench: the Go benchmarks (figures and their commands go in the closing notes)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# apt-get needs root; use sudo when we are not.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

## deps: the system tools the tests use, installed from Debian when missing
deps:
	@missing=""; \
	command -v curl >/dev/null || missing="$$missing curl"; \
	command -v ssh-keygen >/dev/null || missing="$$missing openssh-client"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './node_modules/*' -not -path './infra/node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
