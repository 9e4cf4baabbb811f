# SPDX-License-Identifier: Apache-2.0
# nvme-hmb-trace top-level Makefile: delegates to each directory.
#
#   make            build the user-space tools and library (build/bin, build/lib)
#   make check      install missing packages, build, run every test suite and
#                   print "N passed, N failed, N skipped"; T=PATTERN only the
#                   suites it names (TESTING.md)
#   make demo       the main job on an embedded default: the VM bench, the
#                   module, the agent and the analyzer on real NVMe commands
#   make demo-host  the classic path only (simulator, daemon, analyzer), no VM
#   make bench      benchmarks (results: docs/benchmarks.md)
#   make fuzz       every libFuzzer harness FUZZ_TIME seconds (default 300),
#                   two at a time (docs/fuzzing.md)
#   make vectors    regenerate docs/test-vectors/v1 byte for byte
#   make module     build kernel/nvme-hmb-trace.ko (KDIR= overridable)
#   make install    tools, man pages, completion, systemd/udev/logrotate
#                   files, Python package (PREFIX=/usr/local, DESTDIR,
#                   BINDIR, MANDIR...; mk/install.mk); make uninstall
#   make deb        Debian packages into build/deb/ (packaging/build-deb)
#   make clean

TOP := $(CURDIR)
export HMB_TEST_RESULTS := $(TOP)/build/test-results

# User-space directories in build order (each has a Makefile with all/check).
USER_DIRS := user/lib user/nvme mock/hmb-fwsim user/daemon user/analyze user/agent user/conform
USER_DIRS := $(foreach d,$(USER_DIRS),$(if $(wildcard $(d)/Makefile),$(d)))
# Directories that only contribute tests.
CHECK_DIRS := $(USER_DIRS) \
	$(foreach d,docs/test-vectors python tests tests/formats tests/fleet fuzz kernel bpf selftests docs/man packaging scripts/vm,$(if $(wildcard $(d)/Makefile),$(d)))

# make check T=PATTERN: only the TAP suites whose name matches PATTERN
# (shell globs, space-separated), e.g. T=lib-t_live or T='formats-*'.
T ?=
export HMB_TEST_ONLY := $(T)

# Every TAP suite a directory's check writes is named with one of its
# prefixes (scripts/tap-run fails one that is not), so that T= enters only
# the directories whose suites can match it.
SUITES_user/lib := lib-
SUITES_mock/hmb-fwsim := fwsim
SUITES_user/daemon := daemon-
SUITES_user/analyze := analyze
SUITES_user/agent := agent-
SUITES_user/conform := conform-
SUITES_user/nvme := nvme-
SUITES_docs/test-vectors := test-vectors
SUITES_python := python
SUITES_tests := classic- make-missing-tools usage-errors
SUITES_tests/formats := formats-
SUITES_tests/fleet := fleet-
SUITES_fuzz := fuzz-
SUITES_kernel := kernel-
SUITES_bpf := bpf-
SUITES_selftests := selftests-
SUITES_docs/man := man-
SUITES_packaging := pkg-
SUITES_scripts/vm := vm-

.PHONY: all check check-run demo demo-host bench fuzz vectors module deb clean deps-check deps-demo $(USER_DIRS)

# Every directory whose tools are there is built; the others are named,
# with the Debian packages they lack and the command that installs them
# (mk/need.mk), and make fails after building the rest.
SKIPPED := $(TOP)/build/.skipped

all:
	@mkdir -p $(TOP)/build && rm -f $(SKIPPED)
	@$(MAKE) --no-print-directory build-dirs
	@if [ -s $(SKIPPED) ]; then \
		echo "make: built what could be built; skipped: $$(tr '\n' ' ' < $(SKIPPED))(missing packages above)" >&2; \
		rm -f $(SKIPPED); exit 1; \
	fi

.PHONY: build-dirs
build-dirs: $(USER_DIRS)

$(USER_DIRS):
	@if [ -z "$$($(MAKE) -s --no-print-directory -C $@ need-list)" ]; then \
		$(MAKE) -C $@ all; \
	else \
		$(MAKE) -s --no-print-directory -C $@ need-say; \
		echo "$@" >> $(SKIPPED); \
	fi

# Library first; everything else links against it.
$(filter-out user/lib,$(USER_DIRS)): user/lib

deps-check:
	@$(TOP)/scripts/deps.sh build test kernel kernel-bpo bpf vm qemu report pkg fleet chdb fuzz

deps-demo:
	@$(TOP)/scripts/deps.sh build bpf vm kernel qemu

# Every suite runs even if an earlier one failed; the summary decides.
# With T= the results of the other suites stay, and a build error stops.
check: deps-check
ifeq ($(T),)
	@rm -rf $(HMB_TEST_RESULTS)
	@mkdir -p $(HMB_TEST_RESULTS)
	@$(MAKE) all || $(TOP)/scripts/tap-run build -- false
else
	@mkdir -p $(HMB_TEST_RESULTS)
	@cd $(HMB_TEST_RESULTS) && set -f && for p in $(T); do \
		set +f; rm -f ./$$p.tap ./$$p.stderr; set -f; done
	@$(MAKE) all
endif
	@$(TOP)/scripts/tap-run tree-spdx -- python3 $(TOP)/scripts/check-source.py spdx
	@$(TOP)/scripts/tap-run tree-size -- python3 $(TOP)/scripts/check-source.py size
	@$(TOP)/scripts/tap-run tree-embedded -- python3 $(TOP)/scripts/check-source.py embedded
	@$(TOP)/scripts/tap-run tree-check-source-test -- python3 $(TOP)/scripts/tests/test_check_source.py
	@$(TOP)/scripts/tap-run tree-decision-codes -- $(TOP)/scripts/check-decision-codes.sh
	@$(TOP)/scripts/tap-run tree-comments -- python3 $(TOP)/scripts/check-comments.py
	@$(TOP)/scripts/tap-run tree-check-comments-test -- python3 $(TOP)/scripts/tests/test_check_comments.py
	@$(TOP)/scripts/tap-run tree-commits -- $(TOP)/scripts/check-commits
	@$(TOP)/scripts/tap-run tree-check-commits-test -- python3 $(TOP)/scripts/tests/test_check_commits.py
	@$(TOP)/scripts/tap-run tree-tap-select-test -- python3 $(TOP)/scripts/tests/test_tap_select.py
	@$(TOP)/scripts/tap-run tree-vm-kernels -- $(TOP)/scripts/check-vm-kernels --check
	@$(TOP)/scripts/tap-run tree-check-vm-kernels-test -- python3 $(TOP)/scripts/tests/test_check_vm_kernels.py
	@$(TOP)/scripts/tap-run tree-bench-test -- python3 $(TOP)/scripts/tests/test_bench.py
	@$(TOP)/scripts/tap-run tree-vm-programs -- python3 $(TOP)/scripts/tests/test_vm_programs.py
	@fail=0; $(foreach d,$(CHECK_DIRS),MAKE='$(MAKE)' $(TOP)/scripts/check-dir $(d) $(SUITES_$(d)) || fail=1;) \
		$(TOP)/scripts/tap-summary && [ $$fail = 0 ]

demo: deps-demo all
	@$(TOP)/scripts/demo.sh

demo-host: all
	@$(TOP)/scripts/demo-host.sh

bench: all
	@$(TOP)/scripts/bench.sh

fuzz:
	@$(TOP)/scripts/deps.sh fuzz
	$(MAKE) -C fuzz run

vectors: all
	$(MAKE) -C docs/test-vectors vectors

module:
	$(MAKE) -C kernel module

# make install / uninstall / install-dkms (PREFIX, DESTDIR, BINDIR, MANDIR, ...)
include mk/install.mk

deb:
	$(MAKE) -C packaging deb

clean:
	rm -rf build
	@for d in kernel; do [ -f $$d/Makefile ] && $(MAKE) -C $$d clean || true; done
