# nslab: build, test and benchmark. Every target installs what it needs.
#   make run              build, then the forwarding benchmark: deploy examples/forwarding-benchmark.yaml,
#                         send through its router at full speed, print the report, destroy the lab
#   make test             the whole test suite (privileged tests need root), VM tests included:
#                         lint and test-unit beside test-kubernetes, test-root, docs-check, install-check, test-vm
#   make test-unit        the unit tests: no root, no namespace (go test -short -race, as nobody when
#                         root runs it); the inner loop, under a minute on a warm build cache
#   make test-root        the privileged tests: labs of real namespaces on this kernel (root)
#   make test-vm          the kernel tests in a VM (as make vmtest)
#   make test-kubernetes  nslab on a real Kubernetes cluster on this machine, its parts built once
#   make kube-cluster     that cluster, up for you (KUBE_DIR; make kube-cluster-down stops it)
#   make vmtest           the kernel tests (pktgen) in a VM on a Debian distribution kernel
#   make bench-topology   deploy/destroy speed against an equivalent iproute2 script, and start-up
#   make bench-peers      nslab against Mininet: the same chain and tree of 100 to 1000 nodes, up and down, ratios
#   make bench-forwarding MLRsearch's NDR and PDR of the placed router, 5 times, beside the old binary search, and reruns
#   make bench-nat        what NAT and a firewall cost a router: the NAT example's variants nat and plain, as a duet
#   make bench-compare    is B faster than A: A against A, the rule-count dose response, NAT, repeats, and the time each took
#   make bench-baseline   baselines: the same lab held to one 20 times, one rule more 10 times, another lab refused
#   make bench-engine     the userspace engine against trafgen (netsniff-ng), 64-byte frames
#   make bench-latency    what the receiver's reader costs, and latency at 10, 50 and 90% of the router's top rate
#   make bench-sampler    the counter sampler's own cost per sample of 10 interfaces
#   make bench-live       what one sample of 100 interfaces costs top, web and metrics, as a ratio to the sampler's
#   make fuzz             every fuzz target for FUZZTIME (60s; FUZZTIME=1h for a soak)
#   make soak             SIGKILL nslab at random moments, 50 times each in deploy, destroy and bench
#   make install          nslab, its helpers, man pages and completions under PREFIX (/usr/local)
#   make docs             docs/commands/ (and docs/commands.md's list), docs/lab-file.md and docs/lab.schema.json from the definitions
#   make man              the man pages (nslab.1, nslab-VERB.1, nslab-lab.5) under bin/man, checked with mandoc; read one with man -l
#   make tutorials        the tutorials' outputs, regenerated from today's code (the laptop lab's in the VM)
#   make benchdocs        the benchmark runs docs/benchmarking.md and docs/engines.md show, from today's code (about 25 minutes)
#   make release          static linux/amd64 and linux/arm64 binaries with SHA256SUMS, under dist/

GO      ?= go
# urfave_cli_no_docs drops the CLI library's markdown/man page generator,
# which costs ~9 ms of start-up in every nslab command.
TAGS    := urfave_cli_no_docs
BIN     := bin
EXAMPLE := examples/forwarding-benchmark.yaml
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
export GOFLAGS := -tags=$(TAGS)
# Static binaries: without cgo, nslab (which imports net) is not linked
# against libc, and skips the dynamic loader at every start.
export CGO_ENABLED := 0

PREFIX  ?= /usr/local
.PHONY: kube-image-podman test-kubernetes-podman test-untimed vm-prepare corpus-kathara man kube-parts kube-deps kube-image kube-cluster kube-cluster-down test-kubernetes test-unit test-root test-vm benchdocs tutorials docs-check docs-check-long install install-check docs release packages fuzz soak bench-latency all build test unit-test lint lint-deps vmtest walkthrough vm-deps run deps go-deps bench-topology bench-peers bench-forwarding bench-nat bench-compare bench-baseline bench-engine bench-sampler bench-live bench-fleet clean test-stress

all: build

# nslab-plot draws --plot files, nslab-capture writes pcap, nslab-web
# serves nslab web's page and nslab metrics and nslab-kube talks to
# Kubernetes; they are programs of their
# own so that their libraries stay out of nslab's start-up.
build: go-deps
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/nslab ./cmd/nslab
	$(GO) build -o $(BIN)/nslab-plot ./cmd/nslab-plot
	$(GO) build -o $(BIN)/nslab-capture ./cmd/nslab-capture
	$(GO) build -o $(BIN)/nslab-web ./cmd/nslab-web
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/nslab-kube ./cmd/nslab-kube

# install: the five programs (nslab finds its helpers next to itself), the
# man pages (written from the command definitions) and the completions.
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 755 $(BIN)/nslab $(BIN)/nslab-capture $(BIN)/nslab-plot $(BIN)/nslab-web $(BIN)/nslab-kube $(DESTDIR)$(PREFIX)/bin/
	$(BIN)/nslab gendocs --man $(DESTDIR)$(PREFIX)/share/man/man1
	mv $(DESTDIR)$(PREFIX)/share/man/man1/nslab-lab.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	$(BIN)/nslab completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/nslab
	$(BIN)/nslab completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_nslab
	$(BIN)/nslab completion fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/nslab.fish

# install-check: make install into a new prefix, then use the tool from
# there as a user would (part of make test).
install-check:
	.ci/install-check

docs: build
	$(BIN)/nslab gendocs --markdown docs/commands

# man: the man pages from the command definitions, as make install puts
# them under PREFIX, linted by mandoc (-T lint: errors and warnings).
man: build deps
	rm -rf $(BIN)/man && mkdir -p $(BIN)/man
	$(BIN)/nslab gendocs --man $(BIN)/man
	mandoc -T lint -W warning $(BIN)/man/*.1 $(BIN)/man/*.5
	@echo "man pages in $(BIN)/man: man -l $(BIN)/man/nslab.1"
	$(GO) test ./topology/spec -run TestLabFileDoc -update

# release: static binaries for both architectures, the version stamped
# in, .deb and .rpm packages of each, and their checksums.
release: go-deps
	@rm -rf dist; mkdir -p dist
	@for arch in amd64 arm64; do for p in nslab nslab-capture nslab-plot nslab-web nslab-kube; do \
		GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o dist/$$p-linux-$$arch ./cmd/$$p || exit 1; \
	done; done
	packaging/build amd64 arm64
	cd dist && sha256sum * > SHA256SUMS && cat SHA256SUMS

# packages: a .deb and an .rpm of this machine's build under dist/
# (packaging/build: make install's tree, packed by nfpm).
packages: build
	packaging/build $$($(GO) env GOARCH)

go-deps:
	@command -v $(GO) >/dev/null || { echo "Go is missing: install Go 1.26 or newer"; exit 1; }
	$(GO) mod download

# Debian packages: iproute2, procps (sysctl, pgrep), ethtool and
# util-linux (taskset) run the dry-run scripts, which a test compares with
# nslab's own deploy; graphviz checks that nslab graph --format dot parses;
# tcpdump reads back what nslab capture wrote; nftables (nft) runs the
# dry-run script's NAT and firewall lines; iputils-ping for checking by
# hand; tmux runs nslab top as a person would, headless chromium loads
# nslab web's page, and curl scrapes the installed nslab metrics;
# openssh-server is the real sshd of each simulated host a lab over
# several hosts is deployed to from one command (cmd/nslab/fleet_test.go);
# iptables, bridge-utils, apache2, bind9 and radvd are what Kathara's labs
# run in their nodes (make corpus-kathara), and ifupdown what their
# "networking restart" lines apply a node's /etc/network/interfaces with. Packages are installed with a
# policy-rc.d that says no (where the machine has none, for the install
# only): a service's package then starts nothing on the host, and nslab
# starts a service only in a node.
deps: go-deps
	@missing=""; \
	command -v ip     >/dev/null || missing="$$missing iproute2"; \
	command -v sysctl >/dev/null || missing="$$missing procps"; \
	command -v ethtool >/dev/null || missing="$$missing ethtool"; \
	command -v taskset >/dev/null || missing="$$missing util-linux"; \
	command -v dot    >/dev/null || missing="$$missing graphviz"; \
	command -v ping   >/dev/null || missing="$$missing iputils-ping"; \
	command -v tcpdump >/dev/null || missing="$$missing tcpdump"; \
	command -v nft    >/dev/null || missing="$$missing nftables"; \
	command -v mandoc >/dev/null || missing="$$missing mandoc"; \
	command -v man    >/dev/null || missing="$$missing man-db"; \
	command -v zsh    >/dev/null || missing="$$missing zsh"; \
	command -v fish   >/dev/null || missing="$$missing fish"; \
	command -v vtysh  >/dev/null || missing="$$missing frr"; \
	command -v bird   >/dev/null || missing="$$missing bird2"; \
	command -v tmux   >/dev/null || missing="$$missing tmux"; \
	command -v curl   >/dev/null || missing="$$missing curl"; \
	[ -x /usr/sbin/sshd ] || missing="$$missing openssh-server"; \
	command -v ssh    >/dev/null || missing="$$missing openssh-client"; \
	command -v xmllint >/dev/null || missing="$$missing libxml2-utils"; \
	command -v nsenter >/dev/null || missing="$$missing util-linux"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v iptables >/dev/null || missing="$$missing iptables"; \
	command -v brctl  >/dev/null || missing="$$missing bridge-utils"; \
	command -v apache2ctl >/dev/null || missing="$$missing apache2"; \
	command -v named  >/dev/null || missing="$$missing bind9"; \
	command -v radvd  >/dev/null || missing="$$missing radvd"; \
	command -v ifup   >/dev/null || missing="$$missing ifupdown"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		norc=""; [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; norc=1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; rc=$$?; \
		[ -z "$$norc" ] || rm -f /usr/sbin/policy-rc.d; \
		exit $$rc; \
	fi
	@# Mininet, the peer make bench-peers measures against, without the
	@# Open vSwitch it recommends (its hosts and links need none).
	@command -v mnexec >/dev/null || { echo "installing: mininet"; apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mininet; }

test: test-untimed test-root docs-check test-vm

# test-untimed: the checks that assert no time and no rate, side by side:
# lint and test-unit (at once), install-check, test-kubernetes (whose cluster
# test waits with timeouts and counts packets, never speed), and the
# making of the VM's initramfs (vm-prepare). They may
# share the CPUs; the VM's tests and the privileged ones may not (the
# VM's emulated router dropped at 30 kpps with the cluster beside it).
# The cluster's and install-check's output go to $(BIN)/test-kubernetes.log
# and $(BIN)/install-check.log, shown when all have ended: whole when it
# failed, a summary when it passed.
test-untimed: build kube-image deps
	@echo "make test-kubernetes and install-check run beside lint and test-unit; their output: $(BIN)/test-kubernetes.log, $(BIN)/install-check.log"
	@$(MAKE) --no-print-directory test-kubernetes > $(BIN)/test-kubernetes.log 2>&1 & kube=$$!; \
	$(MAKE) --no-print-directory install-check > $(BIN)/install-check.log 2>&1 & inst=$$!; \
	$(MAKE) --no-print-directory vm-prepare > $(BIN)/vm-prepare.log 2>&1 & vmp=$$!; \
	$(MAKE) -j2 --output-sync=target --no-print-directory lint test-unit; rest=$$?; \
	wait $$vmp || { echo "--- make vm-prepare failed (make test-vm makes the VM again):"; cat $(BIN)/vm-prepare.log; }; \
	wait $$inst; i=$$?; \
	echo "--- make install-check (beside lint and test-unit), exit $$i:"; \
	if [ $$i = 0 ]; then grep '^install-check:' $(BIN)/install-check.log; else cat $(BIN)/install-check.log; fi; \
	wait $$kube; k=$$?; \
	echo "--- make test-kubernetes (beside lint and test-unit), exit $$k:"; \
	if [ $$k = 0 ]; then grep -E '^(--- |    --- |ok |PASS)|^    kube_test' $(BIN)/test-kubernetes.log; else cat $(BIN)/test-kubernetes.log; fi; \
	[ $$rest = 0 ] && [ $$i = 0 ] && [ $$k = 0 ]

# test-unit: every test that needs neither root nor a network namespace,
# with the race detector (which needs cgo), in a minute on a warm cache.
# Tests that need root skip under -short with the reason
# (labtest.SkipUnlessRoot). Run by root, it runs as nobody, with a build
# and module cache of its own under /var/tmp (warm from the second run
# on, and outside the tree, where tools that walk it would find the
# modules' sources), so that no test can lean on root.
UNIT_DIR := /var/tmp/nslab-test-unit-$(shell id -u)
# GORACE=atexit_sleep_ms=0: a binary built with the race detector sleeps
# 1 s before it exits (to catch races at exit) unless told not to: a
# second for every package's test binary and every nslab the CLI tests
# start, half of the suite's time.
UNIT_ENV := env HOME=$(UNIT_DIR)/home GOCACHE=$(UNIT_DIR)/build GOMODCACHE=$(UNIT_DIR)/mod GOPATH=$(UNIT_DIR)/gopath \
	GOFLAGS="$(GOFLAGS) -buildvcs=false" CGO_ENABLED=1 PATH="$(PATH)" GORACE=atexit_sleep_ms=0
UNIT_AS := $(if $(filter 0,$(shell id -u)),setpriv --reuid=65534 --regid=65534 --clear-groups)
test-unit: go-deps
	@mkdir -p $(UNIT_DIR)/home $(UNIT_DIR)/build $(UNIT_DIR)/mod $(UNIT_DIR)/gopath
	@$(if $(UNIT_AS),chown -R 65534:65534 $(UNIT_DIR))
	$(UNIT_AS) $(UNIT_ENV) $(GO) test -short -race -count=1 ./...

test-root: unit-test
# test-vm, as make test runs it: the VM leaves out the tests of its
# packages that test-root has just run on this machine and that ask nothing
# of the VM's kernel (no pktgen, netem, VLAN, bond, VRF or SR-IOV: about 60 s
# of its emulated time); make vmtest runs them all.
space := $(subst ,, )
VM_HOST_TESTS := TestChangeStepsOtherInterfaces TestChangesReceiver TestCheckPrograms \
	TestDecodeStateDamaged TestDuetSameScheduling TestFailingStreamStopsTheOthers \
	TestFullLoadDuetReplaced TestIntervalDrops TestMissingFeature \
	TestNoChangeNeedsControl TestOnlyRefusedLines TestParseConntrack TestPlanApply \
	TestPrivilegedBenchAccountsExactly TestPrivilegedCancelRollsBack \
	TestPrivilegedCheckLinkKind TestPrivilegedCountThroughNAT \
	TestPrivilegedDestroyWithFileDeleted TestPrivilegedExamples \
	TestPrivilegedExecFails TestPrivilegedFreshSwitchBothWays \
	TestPrivilegedGlobalSysctlsAreGlobal TestPrivilegedGroupSweep \
	TestPrivilegedHalfGone TestPrivilegedInspect \
	TestPrivilegedKernelRefusalRollsBack TestPrivilegedKernelRefused \
	TestPrivilegedLeavesSameNamedHostLinkAlone TestPrivilegedLossIsNamed \
	TestPrivilegedPathUnreachable TestPrivilegedPlacementNeedsTheCPUs \
	TestPrivilegedRefusesExistingNamespace TestPrivilegedRouterLimited \
	TestPrivilegedSenderShaped TestPrivilegedServiceExitsAtOnce \
	TestPrivilegedSharedDrops TestPrivilegedSharedReceiver \
	TestPrivilegedTCPBesideUDPFlood TestPrivilegedTwoDirections TestRelativeCost \
	TestStartupMarks TestStatusLineOfARun TestStreamsSelection TestTrafficSelection \
	TestZebraAddresses
VM_SKIP := -skip '^($(subst $(space),|,$(strip $(VM_HOST_TESTS))))$$'
test-vm: go-deps vm-deps
	$(GO) build -o $(BIN)/nslab-vmtest ./cmd/nslab-vmtest
	$(BIN)/nslab-vmtest $(VM_SKIP)
# vm-prepare: test-vm's kernel and initramfs (its test binaries built),
# made while test-untimed runs, booted by test-vm when the tree is as it
# was (30 s less of make test).
vm-prepare: go-deps vm-deps
	$(GO) build -o $(BIN)/nslab-vmtest ./cmd/nslab-vmtest
	$(BIN)/nslab-vmtest -prepare $(VM_SKIP)

# -parallel 24: the tests that call t.Parallel (the imported labs', the
# OSPF and BGP ones and the simulated hosts', which wait for their daemons,
# most of the time idle; their benches take one lock, so never two at
# once) run all at once after the others: 21 of them (an apply killed at
# random moments among them, which sends nothing), 94 s where the 18
# before took 134 s 8 at a time, and 2 at a time (the default here) longer.
#
# -p 1: one package at a time. The privileged tests measure this machine
# (a router's backlog drops, softnet_stat, CPU use, all machine-wide), so
# two packages sending at once would measure each other.
#
# As root the tests start from a new machine's state, whatever ran here
# before: in a mount namespace of their own with private propagation (as
# `/` is on a new boot) and a fresh tmpfs over /run, so there is no
# /run/netns and no /run/nslab until the tests make them. A machine where
# `ip netns add` once ran has a shared /run/netns, and would hide a tool
# that only works there. Nothing the tests mount there reaches the host's
# mount namespace.
# test-kubernetes: nslab on a real Kubernetes cluster on this machine
# (deploy/kubernetes/local-cluster: three nodes as namespaces, each with
# its own containerd and kubelet; the control plane on node a), the
# agents run by the DaemonSet from the image built here (kube-image).
# The cluster's parts (Kubernetes $(KUBE_VERSION), containerd
# $(CONTAINERD_VERSION)) are built once per machine from the Go module
# proxy (kube-parts, about 25 minutes the first time), the image's Debian
# root once per package list.
KUBE_VERSION := v1.37.2
CONTAINERD_VERSION := v2.4.2
KUBE_PARTS := $(HOME)/.cache/nslab/kube-parts-$(KUBE_VERSION)-$(CONTAINERD_VERSION)
KUBE_DIR ?= /tmp/nslab-local-cluster
kube-parts: go-deps
	.ci/kube-parts $(KUBE_VERSION) $(CONTAINERD_VERSION) $(KUBE_PARTS)

kube-deps:
	@missing=""; \
	command -v etcd >/dev/null || missing="$$missing etcd-server"; \
	command -v runc >/dev/null || missing="$$missing runc"; \
	[ -x /usr/lib/cni/bridge ] || missing="$$missing containernetworking-plugins"; \
	command -v mmdebstrap >/dev/null || missing="$$missing mmdebstrap"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# kube-image: the agents' image (bin/nslab-image.tar, its reference on
# the last line) and the pause image, docker-archive tarballs.
kube-image: build kube-parts kube-deps
	.ci/kube-image $(BIN) $(KUBE_PARTS) $(HOME)/.cache/nslab

# kube-image-podman: the same image from deploy/kubernetes/Dockerfile,
# built by podman (installed from Debian), its base image imported from a
# Debian root mmdebstrap makes (no registry is reachable here);
# test-kubernetes-podman runs test-kubernetes on it.
kube-image-podman: build kube-deps
	.ci/kube-image-podman $(BIN) $(HOME)/.cache/nslab
test-kubernetes-podman: kube-image-podman kube-image
	NSLAB_KUBE_PARTS=$(KUBE_PARTS) NSLAB_KUBE_NSLAB=$(abspath $(BIN))/nslab \
		NSLAB_KUBE_IMAGES="$(abspath $(BIN))/nslab-image-podman.tar $(abspath $(BIN))/pause-image.tar" \
		$(PRISTINE) $(GO) test -count=1 -timeout 15m -run 'TestPrivilegedKubernetes' -v ./cmd/nslab

# kube-cluster: the local cluster, up in KUBE_DIR with the images
# imported (make kube-cluster-down stops it).
kube-cluster: kube-image deps
	KUBE_PARTS=$(KUBE_PARTS) deploy/kubernetes/local-cluster up $(KUBE_DIR) $(BIN)/nslab-image.tar $(BIN)/pause-image.tar
kube-cluster-down:
	KUBE_PARTS=$(KUBE_PARTS) deploy/kubernetes/local-cluster down $(KUBE_DIR)

test-kubernetes: deps kube-image
	NSLAB_KUBE_PARTS=$(KUBE_PARTS) NSLAB_KUBE_NSLAB=$(abspath $(BIN))/nslab \
		NSLAB_KUBE_IMAGES="$(abspath $(BIN))/nslab-image.tar $(abspath $(BIN))/pause-image.tar" \
		$(PRISTINE) $(GO) test -count=1 -timeout 15m -run 'TestPrivilegedKubernetes' -v ./cmd/nslab

PRISTINE = unshare --mount --propagation private -- \
	sh -c 'mount -t tmpfs -o mode=755,nosuid,nodev nslab-pristine /run && exec "$$@"' pristine
unit-test: deps
	$(if $(filter 0,$(shell id -u)),$(PRISTINE)) $(GO) test -p 1 -parallel 24 -count=1 ./...

# test-stress: the privileged suite (unit-test) while stress-ng keeps one
# CPU busy and the other at half (.ci/test-stress), listing every failure
# with what the test said. Not part of make test: it runs the suite again,
# slower.
test-stress: deps
	@command -v stress-ng >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng; }
	.ci/test-stress $(MAKE)

# docs-check: every transcript of the docs that runs here, run again in
# the pristine state: it fails when a command's output (figures masked)
# is not what the doc shows, or the prose quotes a figure its block does
# not show. make tutorials fixes the first; the second is fixed by hand.
#
# The two tutorials whose benchmarks take minutes (the queues tutorial's
# TCP variants, about 2 min here; the router optimizations' four
# variants, about 5 min) are checked by docs-check-long, not in make test.
LONG_DOCS := docs/tutorials/queues.md docs/tutorials/router-optimizations.md
docs-check: build deps
	$(GO) build -o $(BIN)/nslab-tutorials ./cmd/nslab-tutorials
	$(if $(filter 0,$(shell id -u)),$(PRISTINE)) $(BIN)/nslab-tutorials -check $(filter-out $(LONG_DOCS),$(HERE_DOCS))
docs-check-long: build deps
	$(GO) build -o $(BIN)/nslab-tutorials ./cmd/nslab-tutorials
	$(if $(filter 0,$(shell id -u)),$(PRISTINE)) $(BIN)/nslab-tutorials -check $(LONG_DOCS)

# golangci-lint v2, installed as a Go module into a directory of its
# version in the user's cache (see .golangci.yml for the linters and their
# limits): built once per machine, not once per clone (a clean clone
# spent 65 s building it).
LINT_VERSION := v2.15.0
LINT_BIN := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/nslab/golangci-lint-$(LINT_VERSION)
LINT := $(LINT_BIN)/golangci-lint
lint-deps: go-deps
	@[ -x $(LINT) ] && $(LINT) --version | grep -q "version $(LINT_VERSION:v%=%) " || \
		GOBIN=$(LINT_BIN) GOFLAGS= $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(LINT_VERSION)

lint: lint-deps
	$(GO) mod tidy -diff
	$(LINT) run ./...
	$(GO) vet -tags vmtest ./...

# Debian packages the VM harness needs: qemu (TCG), a static busybox for the
# VM's shell, cpio for the initramfs.
vm-deps:
	@missing=""; \
	command -v qemu-system-x86_64 >/dev/null || missing="$$missing qemu-system-x86"; \
	[ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q static || missing="$$missing busybox-static"; \
	command -v cpio >/dev/null || missing="$$missing cpio"; \
	command -v file >/dev/null || missing="$$missing file"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# Boots a Debian cloud kernel (cached under .cache/vm) under qemu and runs
# the pktgen and lab tests inside it; see cmd/nslab-vmtest.
# walkthrough: the laptop lab with a WAN's delay (examples/laptop-lab.sh),
# in the VM: the delay needs netem, which our machines' kernel lacks (the
# tutorial, docs/tutorials/laptop-lab.md, runs here without it).
# tutorials: regenerate the tutorials' outputs from today's code: every
# doc here, and the queues tutorial's fq_codel part (and plot) in the VM.
# The docs whose transcripts run on this machine, all of them (the queues
# tutorial's first blocks too).
HERE_DOCS := README.md docs/overview.md docs/tutorials/tour.md docs/tutorials/nat-router.md \
	docs/tutorials/forwarding-benchmark.md docs/tutorials/several-hosts.md \
	docs/tutorials/routing.md docs/tutorials/router-optimizations.md \
	docs/tutorials/laptop-lab.md \
	docs/export.md docs/imported-labs.md docs/lab-file-guide.md docs/testing-labs.md

tutorials: build vm-deps deps
	$(GO) build -o $(BIN)/nslab-tutorials ./cmd/nslab-tutorials
	$(GO) build -o $(BIN)/nslab-vmtest ./cmd/nslab-vmtest
	$(BIN)/nslab-vmtest -script examples/queues-vm.sh > $(BIN)/queues.transcript
	$(BIN)/nslab-tutorials $(HERE_DOCS)
	$(BIN)/nslab-tutorials -transcript $(BIN)/queues.transcript docs/tutorials/queues.md

# benchdocs: the benchmark runs the documentation shows, from today's code
# (docs/benchmarking.md and docs/engines.md: every "$ " line of
# their transcripts is run again, about 25 minutes; nothing else may run on
# the machine meanwhile).
benchdocs: build deps
	$(GO) build -o $(BIN)/nslab-tutorials ./cmd/nslab-tutorials
	$(BIN)/nslab-tutorials docs/benchmarking.md docs/engines.md

walkthrough: go-deps vm-deps deps
	$(GO) build -o $(BIN)/nslab-vmtest ./cmd/nslab-vmtest
	$(BIN)/nslab-vmtest -script examples/laptop-lab.sh

vmtest: go-deps vm-deps
	$(GO) build -o $(BIN)/nslab-vmtest ./cmd/nslab-vmtest
	$(BIN)/nslab-vmtest

# The main job: deploy the forwarding benchmark lab (client, router,
# server; the client's sender pinned to CPU 0, the router's receive work on
# CPU 1), send the forward run from the client through the router to the
# server at full speed with the best engine there is, print the report
# with its verdict, destroy the lab (bench deploys and destroys it
# itself). On a machine with one CPU the placement is left out and the
# report says so.
# run: the main job needs Go and nothing else (the example starts no other
# program): no Debian package is installed for it.
run: go-deps build
	$(BIN)/nslab bench --placement auto --duration 5s $(EXAMPLE)
	@echo "nslab is $(abspath $(BIN))/nslab; the docs type nslab. On this shell's PATH:"
	@echo "  export PATH=$(abspath $(BIN)):\$$PATH    (or make install: $(PREFIX)/bin, man pages, completion)"

bench-topology: deps build
	@command -v hyperfine >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine; }
	$(GO) build -o $(BIN)/nslab-bench-topology ./cmd/nslab-bench-topology
	$(BIN)/nslab-bench-topology -nslab $(BIN)/nslab

# nslab against Mininet: the same generated chain and tree of 100, 250 and
# 1000 nodes built by each alternately, 3 rounds, up and down, with the
# ratios' spreads (about 6 minutes).
bench-peers: deps build
	$(GO) build -o $(BIN)/nslab-bench-peers ./cmd/nslab-bench-peers
	$(BIN)/nslab-bench-peers -nslab $(BIN)/nslab

# MLRsearch's NDR and PDR of the placed router, 5 searches, beside 3 of
# the older binary search in the same run, each figure's spread; then the
# PDR found rerun as plain runs (about 8 minutes).
bench-forwarding: deps build
	$(GO) build -o $(BIN)/nslab-bench-forwarding ./cmd/nslab-bench-forwarding
	$(BIN)/nslab-bench-forwarding

# The NAT example's two variants (examples/nat-router.yaml: gw with its
# NAT and firewall, and without), measured at once in the lab and a twin
# of it (a duet) at 50 kpps with both senders on CPU 0, where the
# gateways' work runs too: their cost per packet, pair by pair, until a
# decision (about 15 s).
bench-nat: deps build
	$(BIN)/nslab bench -q --variants nat,plain --rate 50kpps --cpus 0 --duration 1s examples/nat-router.yaml

# How well nslab answers "is B faster than A" (cmd/nslab-bench-compare):
# a variant against itself 20 times (and once in sequential pairs, for
# the duet's gain), the cost of 1, 2, 4, 8 and 16 firewall rules against
# 1 (examples/rule-cost.yaml), 1 against 2 and 2 against 4 rules 10 times
# each, NAT against plain 5 times, the router's relative cost (the
# default figure) and cost per packet over 5 repeats, and the time each
# took (about 20 minutes).
bench-compare: deps build
	$(GO) build -o $(BIN)/nslab-bench-compare ./cmd/nslab-bench-compare
	$(BIN)/nslab-bench-compare

# How baselines decide (cmd/nslab-bench-baseline): a baseline of the placed
# lab with one firewall rule, then the same lab held to it 20 times and
# the lab with one rule more (about 2% of the router's cost) 10 times,
# the verdicts counted, each decision timed, and another lab refused.
bench-baseline: deps build
	$(GO) build -o $(BIN)/nslab-bench-baseline ./cmd/nslab-bench-baseline
	$(BIN)/nslab-bench-baseline -nslab $(BIN)/nslab

# What reading the receiver costs (the top rate without a reader, reading
# every packet, and sampled, alternating rounds) and the latency at 10, 50
# and 90% of the router's top rate.
bench-latency: deps build
	$(GO) build -o $(BIN)/nslab-bench-latency ./cmd/nslab-bench-latency
	$(BIN)/nslab-bench-latency

bench-engine: deps build
	@command -v trafgen >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq netsniff-ng; }
	$(GO) build -o $(BIN)/nslab-bench-engine ./cmd/nslab-bench-engine
	$(BIN)/nslab-bench-engine

# Fuzzing: each target for FUZZTIME (make fuzz FUZZTIME=1h for a soak).
# Their seed corpora (every example and validation case, the seed
# documents' pktgen outputs, damaged state files) run as ordinary tests in
# make test; a crash found here is fixed and its input kept under the
# package's testdata/fuzz/NAME, where go test runs it every time.
FUZZTIME ?= 60s
# Go minimizes every new interesting input for up to 60 s by default, and
# counts none of those runs: the lab file's target, whose inputs grow to
# kilobytes, spent whole 60-second runs minimizing (149 to 478 executions
# counted, against about 200,000 in 30 s with 3 s). A crash's input is
# still minimized, for FUZZMINIMIZE.
FUZZMINIMIZE ?= 3s
FUZZ_TARGETS := FuzzParse:./topology/spec FuzzValues:./topology/spec FuzzCPUList:./topology/spec \
	FuzzCPUMask:./topology/spec FuzzParseStatus:./pktgen/kernel FuzzParseThread:./pktgen/kernel \
	FuzzDecodeState:./topology/lab FuzzParseMountinfo:./topology/ns FuzzParse:./internal/units
# A target that fails with "context deadline exceeded" and writes no input
# under testdata/fuzz met Go 1.26's fuzz coordinator race at the end of
# FUZZTIME (golang/go#75804, fixed in Go 1.27): it is said, and does not
# fail the run; any other failure, or a new input, does.
fuzz: go-deps
	@log=$$(mktemp); for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; pkg=$${t#*:}; corpus=$$pkg/testdata/fuzz/$$name; echo "== $$name ($$pkg), $(FUZZTIME)"; \
		before=$$(ls $$corpus 2>/dev/null | wc -l); \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg >$$log 2>&1; rc=$$?; \
		grep '^fuzz: elapsed' $$log | tail -n 1; grep -v '^fuzz: elapsed' $$log; \
		if [ $$rc != 0 ] && [ $$(ls $$corpus 2>/dev/null | wc -l) = $$before ] && grep -q 'context deadline exceeded' $$log; then \
			echo "($$name: no failing input; Go's fuzz coordinator raced its own deadline, golang/go#75804)"; rc=0; \
		fi; \
		[ $$rc = 0 ] || { rm -f $$log; exit 1; }; \
	done; rm -f $$log

# The kill soak: SIGKILL at random moments, SOAK_KILLS times each in
# deploy, destroy and bench of a lab part with a service, NAT, an
# impairment, placement and a VXLAN link; after each, one destroy must
# leave nothing. make test runs it 3 times each.
SOAK_KILLS ?= 50
soak: deps
	$(if $(filter 0,$(shell id -u)),$(PRISTINE)) env NSLAB_SOAK_KILLS=$(SOAK_KILLS) $(GO) test -count=1 -timeout 60m -v -run '^TestPrivilegedKillSoak$$' ./cmd/nslab/

# bench-fleet: a chain of FLEET_CHAIN nodes deployed on one host, and over
# three simulated hosts (real sshd each) from one command, alternately.
FLEET_CHAIN ?= 3000
bench-fleet: deps
	$(if $(filter 0,$(shell id -u)),$(PRISTINE)) env NSLAB_FLEET_CHAIN=$(FLEET_CHAIN) $(GO) test -count=1 -timeout 30m -v -run '^TestPrivilegedFleetChainScale$$' ./cmd/nslab/

bench-sampler: go-deps
	$(GO) test -run '^$$' -bench Read10 -benchtime 5000x ./pktgen/sample/

# CPU time (user and system, every thread) per sample of a 51-node chain's
# 100 interfaces: the bench's sampler alone, then top, web and metrics,
# each with its ratio to the sampler's measured in the same run.
bench-live: go-deps
	$(if $(filter 0,$(shell id -u)),$(PRISTINE)) $(GO) test -run '^$$' -bench Cost100 -benchtime 300x -count 3 ./pktgen/web/

clean:
	rm -rf $(BIN)

# corpus-kathara: every Kathara lab under KATHARA_LABS (a checkout of
# KatharaFramework/Kathara-Labs, or another course's; nothing is
# downloaded) run as a teacher would: import, validate, deploy, check
# --wait, destroy; a table of each stage and the reason of each failure.
# KATHARA_SKIP leaves labs out (Kathara-Labs' P4 and OpenFlow labs need
# switches nslab does not run).
# KATHARA_PARALLEL runs that many labs at once, each under a random name.
KATHARA_SKIP ?= main-labs/(p4|sdn-openflow)/
KATHARA_PARALLEL ?= 1
corpus-kathara: deps build
	@test -n "$(KATHARA_LABS)" || { echo "give KATHARA_LABS=DIR, a checkout of the labs"; exit 2; }
	$(GO) build -o $(BIN)/nslab-corpus ./cmd/nslab-corpus
	$(BIN)/nslab-corpus -nslab $(BIN)/nslab -skip '$(KATHARA_SKIP)' -parallel $(KATHARA_PARALLEL) $(KATHARA_LABS)
