# sshdeck: `make run` serves it locally, `make test` checks everything.
# Both install what they need on a fresh machine: Go modules, and for the tests
# curl, ssh-keygen and zip (the README walk-through runs as a test; the
# Lambda bundles are zips), OpenSSH's sshd (the tunnel tests run real
# source and endpoint hosts on loopback), and the CDK CLI and cfn-guard from
# npm (infra/package.json; the CDK app's tests run them).

export PATH := $(PATH):/usr/local/go/bin
# go.mod names the Go toolchain to build with (its `toolchain` line, the
# newest 1.26 patch release): auto fetches it through the module proxy when
# the installed go is older, whatever GOTOOLCHAIN the environment says.
export GOTOOLCHAIN := auto
GO      ?= go
BIN     := bin

# One Lambda function per directory functions/<name>/main.go: every route
# of the route table (go generate ./functions) and the authorizer.
FUNCTIONS   := $(patsubst functions/%/main.go,%,$(wildcard functions/*/main.go))
LAMBDA_ENV  := GOOS=linux GOARCH=arm64 CGO_ENABLED=0
LAMBDA_ARGS := -tags lambda.norpc -trimpath -ldflags='-s -w'
# Lambda takes up to 50 MB zipped; we hold each bootstrap to 10 MB.
MAX_BOOTSTRAP_BYTES := 10000000

# The CDK app (infra/, its own module) and its npm tools.
CDK       := infra/node_modules/.bin/cdk
CONTEXT   ?=
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: run test bench build sshdeck tunnel-service deps fmt-check vet clean FORCE \
	synth diff deploy bootstrap infra-test docker-check vulncheck

## run: build the sshdeck command and serve the API on 127.0.0.1:8080 over ./.sshdeck
run: sshdeck
	$(BIN)/sshdeck serve

## sshdeck: the local sshdeck command into bin/
sshdeck:
	$(GO) build -o $(BIN)/sshdeck ./cmd/sshdeck

## tunnel-service: the tunnel service alone (the container's binary) into bin/
tunnel-service:
	$(GO) build -o $(BIN)/tunnel-service ./tunnel-service

## build: every Lambda function for linux/arm64, build/<name>/bootstrap and build/<name>.zip
build: $(FUNCTIONS:%=build/%.zip)
	@for f in $(FUNCTIONS); do \
		size=$$(stat -c %s build/$$f/bootstrap); zip=$$(stat -c %s build/$$f.zip); \
		awk -v f=$$f -v s=$$size -v z=$$zip 'BEGIN { printf "%-14s bootstrap %5.1f MB  zip %4.1f MB\n", f, s/1e6, z/1e6 }'; \
		if [ $$size -gt $(MAX_BOOTSTRAP_BYTES) ]; then echo "build/$$f/bootstrap is over 10 MB"; exit 1; fi; \
	done

# Go's build cache decides whether a bootstrap is out of date, so always ask
# it; and keep the bootstraps, which make would delete as intermediates.
.PRECIOUS: build/%/bootstrap
build/%/bootstrap: FORCE
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_ARGS) -o $@ ./functions/$*

build/%.zip: build/%/bootstrap
	@rm -f $@ && cd build/$* && zip -q -X ../$*.zip bootstrap

## test: formatting, go vet, the Lambda builds, every test with the race detector, the CDK app's tests
# -timeout 0: tests build binaries (sshdeck, tunnel-service, the functions)
# and start processes, which take what the machine gives them, cold caches
# and busy cores included; go test's default 10 minutes would be a deadline
# on them. Every wait that is not work has its own bound in the tests (a
# minute or more), and waits on a started process end when it exits.
test: deps fmt-check vet build infra-test
	$(GO) test -race -count=1 -timeout 0 ./...

## infra-test: the CDK app's tests (assertions, cdk-nag, cfn-guard's Control Tower rules)
# `.`, not ./...: infra/node_modules holds Go-looking templates of the CDK CLI.
# -timeout 0 as in test: the synth runs the CDK's jsii node process.
infra-test: build $(CDK)
	cd infra && $(GO) vet . && $(GO) test -count=1 -timeout 0 .

## synth: the CloudFormation template into cdk.out/, with no AWS account (CONTEXT='-c name=value ...')
synth: build $(CDK)
	$(CDK) synth --quiet $(CONTEXT)
	@echo "cdk.out/$$(cd cdk.out && ls *.template.json)"

## diff: what make deploy would change in the account of your AWS credentials
diff: build $(CDK)
	$(CDK) diff $(CONTEXT)

## deploy: deploy (or update) the stack, then print base_url and tunnel_url
deploy: docker-check build $(CDK)
	$(CDK) deploy --require-approval broadening --outputs-file cdk.out/outputs.json $(CONTEXT)
	@node -e 'const o = Object.values(require("./cdk.out/outputs.json"))[0]; \
		console.log("base_url=" + o.BaseUrl + "\ntunnel_url=" + o.TunnelUrl)'

## bootstrap: prepare an account and region for CDK deployments (once per account and region)
bootstrap: $(CDK)
	$(CDK) bootstrap $(CONTEXT)

$(CDK): infra/package.json infra/package-lock.json
	@command -v npm >/dev/null || { echo "installing nodejs and npm"; $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends nodejs npm; }
	cd infra && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

docker-check:
	@docker info >/dev/null 2>&1 || { echo "make deploy builds the tunnel service's image: it needs a running Docker engine (docker info failed)"; exit 1; }

## bench: measure the local API, the Lambda functions, the tunnels and the audit records' cost into BENCHMARKS.md (ONLY=api,lambda,tunnel,audit; BASELINE=REV adds an A/B of the API against sshdeck at git revision REV)
# The machine should be otherwise idle: every figure is wall-clock.
ONLY ?=
BASELINE ?=
bench: deps build
	$(GO) run ./bench -out BENCHMARKS.md $(if $(ONLY),-only $(ONLY)) $(if $(BASELINE),-baseline $(BASELINE))

## vulncheck: govulncheck over both modules, against the Go vulnerability database built from golang.org/x/vulndb
# vuln.go.dev is not needed: the database comes through the module proxy
# (the newest golang.org/x/vulndb, or VULNDB=VERSION) and
# internal/vulndb lays it out as govulncheck's -db file:// reads it. Not
# part of make test: it needs the network for the newest database, and a
# new advisory must not fail an unrelated change's tests.
GOVULNCHECK_VERSION ?= v1.9.0
VULNDB ?= latest
vulncheck:
	$(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)
	@mkdir -p build
	$(GO) mod download -json golang.org/x/vulndb@$(VULNDB) > build/vulndb.json
	$(GO) run ./internal/vulndb -download build/vulndb.json -out build/vulndb
	$$($(GO) env GOPATH)/bin/govulncheck -db file://$(CURDIR)/build/vulndb ./...
	cd infra && $$($(GO) env GOPATH)/bin/govulncheck -db file://$(CURDIR)/build/vulndb .

# apt-get needs root; use sudo when we are not.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

## deps: the system tools the tests use, installed from Debian when missing
deps:
	@missing=""; \
	command -v curl >/dev/null || missing="$$missing curl"; \
	command -v ssh-keygen >/dev/null || missing="$$missing openssh-client"; \
	command -v zip >/dev/null || missing="$$missing zip"; \
	test -x /usr/sbin/sshd || missing="$$missing openssh-server"; \
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
	rm -rf $(BIN) build cdk.out
