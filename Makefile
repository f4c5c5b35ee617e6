# netdevd: `make run` and `make test` work on a fresh Debian 12 machine with Swift 6.3.
# They install what the build needs (Debian packages) when it is missing, then build.

SWIFT ?= swift
# Debian packages the build needs; installed with apt-get when missing.
APT_PACKAGES ?= pkg-config libsystemd-dev libudev-dev udev iproute2

.PHONY: all deps build run test test-tsan lint format benchmark clean

all: build

deps:
	@missing=""; for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq $$missing; fi; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "swift is not on PATH: install Swift 6.3 (https://swift.org/install)"; exit 1; }

build: deps
	$(SWIFT) build

# Until the netdevd daemon exists, `make run` runs the MobiusCore example: a controller counting timer ticks.
run: deps
	$(SWIFT) run mobius-counter

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# ThreadSanitizer over the MobiusCore and MobiusTest tests, in a build folder of its own.
test-tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan

lint:
	$(SWIFT) format lint --strict --recursive Sources Tests Examples Benchmarks

format:
	$(SWIFT) format format --in-place --recursive Sources Tests Examples Benchmarks

# Release-mode benchmarks (Benchmarks/, ordo-one/benchmark); NETDEVD_BENCHMARKS adds them to the package.
benchmark: deps
	NETDEVD_BENCHMARKS=1 $(SWIFT) package --scratch-path .build-bench benchmark --no-progress

clean:
	rm -rf .build .build-tsan .build-bench
