# SPDX-License-Identifier: Apache-2.0
# What a directory needs to build, by Debian package: every Makefile that
# needs more than make and a C compiler lists it in NEED, and its `need`
# target says what is missing, with the command that installs it, instead
# of a bare "not found" from the shell half-way through the build:
#
#   NEED += $(call need_prog,clang,clang) $(call need_pc,libbpf,libbpf-dev)
#   NEED_GROUP := bpf                  # scripts/deps.sh group
#   ALL := $(PROG)                     # what `all` builds
#   include $(TOP)/mk/need.mk          # after NEED and ALL: defines `all`
#
# need_prog COMMAND,PACKAGE: PACKAGE when COMMAND is not on PATH.
# need_pc MODULE,PACKAGE: PACKAGE when pkg-config does not know MODULE
# (pkg-config itself missing: pkg-config).  The top-level `make` builds
# every directory whose `need` passes and names the others.
need_prog = $(if $(shell command -v $(1) 2>/dev/null),,$(2))
need_pc = $(if $(shell command -v pkg-config 2>/dev/null),$(if $(shell pkg-config --exists $(1) && echo y),,$(2)),pkg-config)

NEED_MISSING := $(sort $(strip $(NEED)))
.DEFAULT_GOAL := all

.PHONY: all
ifeq ($(NEED_MISSING),)
all: $(ALL)
else
all: need
endif

.PHONY: need need-list need-say
# need: fail with the message when something is missing (the `all` of a
# directory that lacks something); need-list: the missing packages, if
# any; need-say: the message alone.
need-list:
	@echo $(NEED_MISSING)

need-say:
ifneq ($(NEED_MISSING),)
	@echo "$(patsubst $(TOP)/%,%,$(CURDIR)): cannot build: missing Debian package(s) $(NEED_MISSING)" >&2
	@echo "  install: apt-get install -y $(NEED_MISSING)   (or: scripts/deps.sh $(NEED_GROUP))" >&2
endif

need: need-say
ifneq ($(NEED_MISSING),)
	@exit 1
else
	@:
endif
