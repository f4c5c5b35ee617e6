# netdevd: `make run` and `make test` work on a fresh Debian 12 machine with Swift 6.3.
# They install what the build needs (Debian packages) when it is missing, then build.

SWIFT ?= swift
SHELL := /bin/bash
# Debian packages the build needs; installed with apt-get when missing.
APT_PACKAGES ?= pkg-config libudev-dev libsystemd-dev udev iproute2

.PHONY: all deps build run test test-unit test-servers test-kernel test-tsan lint format docs benchmark benchmark-deps benchmark-daemon benchmark-paced benchmark-burst soak benchmark-dispatchers benchmark-handwritten benchmark-large-host benchmark-replay order-file fuzz clean

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

# netdevd in the foreground, with no configuration file (the defaults), logging readable lines to the terminal.
# Without root it still watches links and devices; hooks in /etc/netdevd/hooks.d run when it is root. It runs with
# the unit's Environment= settings (glibc's malloc tuning), as systemd runs it.
UNIT_ENVIRONMENT = $(shell sed -n 's/^Environment=//p' Packaging/systemd/netdevd.service)
run: deps
	$(SWIFT) build --product netdevd
	env $(UNIT_ENVIRONMENT) "$$($(SWIFT) build --show-bin-path)/netdevd" --log-target console \
		--config /etc/netdevd/netdevd.conf

# Unit tests (kernel tests skip themselves with a printed reason), then the kernel tests in the harness. Each pass
# is counted against the tests Tests/ declares (Tests/Harness/tally.py), so a test that silently stops running fails
# the run; the counts are in .build/test-results/*.tally.
RESULTS := $(CURDIR)/.build/test-results
test: deps test-servers
	$(SWIFT) build --build-tests
	@$(MAKE) --no-print-directory test-unit && $(MAKE) --no-print-directory test-kernel

# The count is made whether the tests passed or not (it lists what failed, skipped or went missing).
test-unit:
	@rm -rf $(RESULTS) && mkdir -p $(RESULTS)
	set -o pipefail; $(SWIFT) test --skip-build --event-stream-output-path $(RESULTS)/unit.jsonl \
		--event-stream-version 0 2>&1 | tee $(RESULTS)/unit.log; rc=$$?; \
		Tests/Harness/tally.py unit $(RESULTS) && exit $$rc

# The kernel tests' real servers (the metrics test reads netdevd's file through node_exporter and Prometheus):
# Debian's packages, unpacked into .build/test-servers rather than installed, so no service of theirs starts.
TEST_SERVER_PACKAGES ?= prometheus prometheus-node-exporter
TEST_SERVERS := $(CURDIR)/.build/test-servers
export NETDEVD_TEST_SERVERS := $(TEST_SERVERS)/usr/bin

test-servers:
	@if [ ! -x $(TEST_SERVERS)/usr/bin/prometheus ] || [ ! -x $(TEST_SERVERS)/usr/bin/prometheus-node-exporter ]; then \
		echo "unpacking $(TEST_SERVER_PACKAGES) into $(TEST_SERVERS) for the metrics tests"; \
		rm -rf $(TEST_SERVERS).debs && mkdir -p $(TEST_SERVERS).debs && \
		{ (cd $(TEST_SERVERS).debs && apt-get download -qq $(TEST_SERVER_PACKAGES)) >/dev/null 2>&1 || \
			{ [ "$$(id -u)" = 0 ] && apt-get update -qq && \
				(cd $(TEST_SERVERS).debs && apt-get download -qq $(TEST_SERVER_PACKAGES)); }; } && \
		for deb in $(TEST_SERVERS).debs/*.deb; do dpkg-deb -x $$deb $(TEST_SERVERS) || exit 1; done || \
			echo "could not fetch $(TEST_SERVER_PACKAGES); the metrics tests will say they are skipped"; \
		rm -rf $(TEST_SERVERS).debs; \
	fi

# The tests that need the real kernel, udevd and journald (tagged `.kernel`; the unit pass lists them), run one at a
# time inside Tests/Harness/in-netns.sh (a throw-away network namespace with its own /run, /dev, udevd and journald),
# as root. The host's links, addresses, routes, namespaces, /run and /dev are compared before and after. Without
# root they are skipped with the reason printed; with NETDEVD_REQUIRE_KERNEL_TESTS=1 (CI) not being able to run
# them, a skipped test, or fewer tests than are tagged, is a failure.
test-kernel: test-servers
	@[ -f $(RESULTS)/unit.jsonl ] || { echo "make test-kernel selects the tests the unit pass saw tagged .kernel: run make test-unit first"; exit 1; }
	@[ $(RESULTS)/unit.jsonl -nt "$$($(SWIFT) build --show-bin-path)/netdevdPackageTests.xctest" ] || \
		{ echo "the unit pass's list of .kernel tests is older than the test binary: run make test-unit first"; exit 1; }
	@rm -f $(RESULTS)/kernel.jsonl $(RESULTS)/kernel.tally
	@if [ "$$(id -u)" != 0 ]; then \
		echo "kernel tests skipped: they need root to create a network namespace (run make test as root)"; \
		echo "skipped: not root" > $(RESULTS)/kernel.tally; \
		[ -z "$$NETDEVD_REQUIRE_KERNEL_TESTS" ] || exit 1; exit 0; \
	fi; \
	if ! python3 -c 'import varlink' 2>/dev/null && ! python3 -m pip install --quiet varlink; then \
		echo "the reference Python Varlink client could not be installed (pip install varlink); its test will be skipped"; \
		[ -z "$$NETDEVD_REQUIRE_KERNEL_TESTS" ] || exit 1; \
	fi; \
	filter=$$(Tests/Harness/tally.py kernel-filter $(RESULTS)) || exit 1; \
	before=$$(Tests/Harness/host-state.sh) || exit 1; \
	Tests/Harness/in-netns.sh $(SWIFT) test --skip-build --no-parallel --filter "$$filter" \
		--event-stream-output-path $(RESULTS)/kernel.jsonl --event-stream-version 0; rc=$$?; \
	after=$$(Tests/Harness/host-state.sh) || exit 1; \
	if [ "$$before" != "$$after" ]; then \
		echo "kernel tests changed the host:"; diff <(echo "$$before") <(echo "$$after"); exit 1; \
	fi; \
	if [ $$rc = 77 ]; then \
		echo "kernel tests skipped: the harness cannot run here (see its message above)"; \
		echo "skipped: the harness cannot run here" > $(RESULTS)/kernel.tally; \
		[ -z "$$NETDEVD_REQUIRE_KERNEL_TESTS" ] || exit 1; exit 0; \
	fi; \
	Tests/Harness/tally.py kernel $(RESULTS) || exit 1; \
	exit $$rc

# ThreadSanitizer over every unit test (kernel tests skip themselves), in a build folder of its own.
test-tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan

lint:
	$(SWIFT) format lint --strict --recursive Sources Tests Examples Benchmarks Fuzz

format:
	$(SWIFT) format format --in-place --recursive Sources Tests Examples Benchmarks Fuzz

# The DocC documentation of MobiusCore and MobiusTest (their .docc catalogs: concepts, getting started, migrating
# from Mobius.swift), with swift-docc-plugin; a broken link or an unknown symbol fails the build. The archives are
# written to .build/plugins/Swift-DocC/outputs.
docs: deps
	$(SWIFT) package generate-documentation --target MobiusCore --target MobiusTest --warnings-as-errors

# Release-mode benchmarks (Benchmarks/, ordo-one/benchmark); NETDEVD_BENCHMARKS adds them to the package.
benchmark: deps
	NETDEVD_BENCHMARKS=1 $(SWIFT) package --scratch-path .build-bench benchmark --no-progress \
		--target MobiusBenchmarks --target SessionBenchmarks

# The load harness (Benchmarks/Daemon/load.py): the release netdevd, linked as the package links it, in a throw-away
# namespace with its own udevd and journald, through a create and delete burst of LINKS links (veth pairs, one
# ip -batch each; LINKS=20000 for a large host); prints every figure of docs/PERFORMANCE.md's table. As root.
# LOAD_ARGS passes options (--idle-seconds 10, --rounds 2, --no-hooks, --monitors 10, --json FILE).
LINKS ?= 1000
# As debian/rules links it: the Swift runtime, libstdc++ (through a linker script naming the static library,
# found first on -L) and libgcc linked statically.
STATIC_CXX = $(CURDIR)/.build/static-cxx
RELEASE_FLAGS = -c release --static-swift-stdlib -Xswiftc -L -Xswiftc $(STATIC_CXX) \
	-Xswiftc -Xclang-linker -Xswiftc -static-libgcc
$(STATIC_CXX)/libstdc++.so:
	mkdir -p $(STATIC_CXX)
	echo "INPUT($$(clang -print-file-name=libstdc++.a))" > $@

# The load benchmarks drop the test links' own IPv6 packets with nftables (Benchmarks/Daemon/load.py, ipv6_ingress).
benchmark-deps:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(APT_PACKAGES) nftables"

benchmark-daemon: benchmark-deps test-servers $(STATIC_CXX)/libstdc++.so
	$(SWIFT) build $(RELEASE_FLAGS) --product netdevd
	Tests/Harness/in-netns.sh python3 Benchmarks/Daemon/load.py --binary .build/release/netdevd --links $(LINKS) $(LOAD_ARGS)

# netdevd's CPU per kernel message when the messages trickle in (Benchmarks/Daemon/paced.py): PAIRS veth pairs made
# one `ip` at a time. PACED_ARGS="--delete --interval 33": deleted one at a time too, a pair every 33 ms or more (as
# the kernel sends them with 20,000 links present); "--present 5000" with 5,000 pairs made before netdevd starts;
# "--monitors 10" with ten `netdevctl monitor` clients attached. As root.
PAIRS ?= 300
benchmark-paced: benchmark-deps $(STATIC_CXX)/libstdc++.so
	$(SWIFT) build $(RELEASE_FLAGS) --product netdevd
	Tests/Harness/in-netns.sh python3 Benchmarks/Daemon/paced.py --binary .build/release/netdevd --pairs $(PAIRS) $(PACED_ARGS)

# One burst alone (Benchmarks/Daemon/burst.py): BURST_PAIRS veth pairs made and deleted, with each burst's CPU and
# context switches per thread and the anonymous RSS after it; BURST_ARGS passes --monitors N, --perf FILE (the loop's
# thread over the delete), --tunables T. Quicker than benchmark-daemon, for comparing builds. As root.
BURST_PAIRS ?= 2500
benchmark-burst: benchmark-deps $(STATIC_CXX)/libstdc++.so
	$(SWIFT) build $(RELEASE_FLAGS) --product netdevd
	Tests/Harness/in-netns.sh python3 Benchmarks/Daemon/burst.py --binary .build/release/netdevd --pairs $(BURST_PAIRS) $(BURST_ARGS)

# The soak (Benchmarks/Daemon/soak.py): the release netdevd, built as for benchmark-daemon, in the namespace harness,
# through DURATION (300s, 5m, 1h) of seeded random churn over 2,000 links (veth pairs added and deleted, links up and
# down, renamed, addresses and routes added and deleted) with 10 monitors attached, one of them too slow on purpose.
# Every 10 minutes (a fifth of DURATION below 50m) it pauses and checks drift, the monitors, RSS, descriptors and
# threads; PASS when none grew more than 5% and nothing drifted. As root. SOAK_ARGS passes options (--seed N,
# --check-every 10m, --batches-per-second 0.05, --json FILE).
DURATION ?= 1h
SOAK_ARGS ?=
soak: deps $(STATIC_CXX)/libstdc++.so
	$(SWIFT) build $(RELEASE_FLAGS) --product netdevd
	Tests/Harness/in-netns.sh python3 Benchmarks/Daemon/soak.py --binary .build/release/netdevd \
		--duration $(DURATION) $(SOAK_ARGS)

# Hook dispatchers side by side under systemd 252 in a container (netdevd with a link-state.d hook, Debian's
# networkd-dispatcher, netdevd running networkd-dispatcher's scripts): PAIRS veth pairs, RUNS runs (as root).
PAIRS ?= 500
RUNS ?= 3
benchmark-dispatchers: deps
	deb=$$(Packaging/build-deb.sh | tail -n 1) && Benchmarks/Daemon/dispatchers.sh "$$deb" $(PAIRS) $(RUNS)

# The parts netdevd writes itself against the libraries they stand in for (JSONCoding against FoundationEssentials'
# coders, CommandOptions against swift-argument-parser): time, stripped size, private memory, help and errors, in
# one run (Benchmarks/HandWritten/compare.sh), built as the package builds netdevd. docs/PERFORMANCE.md's "What we write
# ourselves, and why" holds its figures.
benchmark-handwritten: deps $(STATIC_CXX)/libstdc++.so
	Benchmarks/HandWritten/compare.sh $(RELEASE_FLAGS)

# Packaging/netdevd.order: the functions netdevd runs at start and on a link change, which the release link
# places together (Package.swift). Run it (as root) after changes that rename or add much of that code.
order-file: deps $(STATIC_CXX)/libstdc++.so
	$(SWIFT) build $(RELEASE_FLAGS) --product netdevd
	Benchmarks/OrderFile/generate.sh .build/release/netdevd
	rm -f .build/release/netdevd   # linked with the old list: the next build links again

# What a host's size costs netdevd's code without a kernel (Benchmarks/LargeHost): at 1,000 and 20,000 links, the
# heap per link, the session's update and a monitor's change report per event, a ListLinks reply, a metrics render.
benchmark-large-host: deps $(STATIC_CXX)/libstdc++.so
	$(SWIFT) build $(RELEASE_FLAGS) --product LargeHost
	.build/release/LargeHost

# The recorded 500-pair burst (Benchmarks/ReplayLoop/Fixtures) replayed through a loop under callgrind: the
# instructions per kernel message of MobiusCore and the session, repeatable on a noisy machine.
benchmark-replay: deps
	$(SWIFT) build -c release --product ReplayLoop
	@command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
	gunzip -c Benchmarks/ReplayLoop/Fixtures/burst-500-pairs.jsonl.gz > .build/burst-500-pairs.jsonl
	.build/release/ReplayLoop .build/burst-500-pairs.jsonl
	valgrind --tool=callgrind --collect-atstart=no --toggle-collect=netdevd_replay_measured \
		--callgrind-out-file=.build/replay.callgrind .build/release/ReplayLoop .build/burst-500-pairs.jsonl 2>&1 | \
		awk '/Collected/ { printf "callgrind: %s instructions, %.0f per kernel message (10,000 messages)\n", $$4, $$4 / 10000 }'

# The libFuzzer targets (Fuzz/): a release build with -sanitize=fuzzer,address of its own (swiftc honours only its
# last -sanitize= flag, and --sanitize given twice passes two in no fixed order, so the pair is passed as one; the
# --sanitize=fuzzer makes SwiftPM link libFuzzer's main), then every target for
# 10 million executions, two at a time, starting from Fuzz/Corpus; prints executions, coverage and crashes per
# target. FUZZ_ARGS passes options to Fuzz/run.sh (--seconds 30, --runs N, --jobs J, --merge, target names).
FUZZ_ARGS ?=
fuzz: deps
	NETDEVD_FUZZ=1 $(SWIFT) build -c release --scratch-path .build-fuzz --product netdevd-fuzz \
		--sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address
	Fuzz/run.sh .build-fuzz/release/netdevd-fuzz $(FUZZ_ARGS)

clean:
	rm -rf .build .build-tsan .build-bench .build-fuzz
