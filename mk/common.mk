# SPDX-License-Identifier: Apache-2.0
# Shared settings for every user-space Makefile.  Include it after setting
# nothing; it finds the top of the tree itself.
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)

# SAN=1 builds everything into build/asan with ASan+UBSan.
ifeq ($(SAN),1)
OUT := $(TOP)/build/asan
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=all
else
OUT := $(TOP)/build
SANFLAGS :=
endif

BINDIR := $(OUT)/bin
LIBDIR := $(OUT)/lib
OBJDIR := $(OUT)/obj/$(patsubst $(TOP)/%,%,$(CURDIR))

CC ?= gcc
OPT ?= -O2
CPPFLAGS += -D_GNU_SOURCE -I$(TOP)/include/uapi -I$(TOP)/user/lib/include
# The project's one version (VERSION; debian/changelog follows it).
HMB_VERSION := $(shell cat $(TOP)/VERSION)
CPPFLAGS += -DHMB_VERSION='"$(HMB_VERSION)"'
CFLAGS += -std=gnu11 $(OPT) -g -Wall -Wextra -Werror -MMD -MP $(SANFLAGS)
LDFLAGS += $(SANFLAGS)
LIBHMB := $(LIBDIR)/libhmbtrace.a

# What every C directory needs (mk/need.mk checks it, with the rest).
NEED = $(call need_prog,$(firstword $(CC)),gcc)
NEED_GROUP := build

# Run a test command and record its TAP output:
#   $(call tap,NAME,COMMAND)
TAP_RUN := $(TOP)/scripts/tap-run
tap = $(TAP_RUN) $(1) -- $(2)
# Exit 0 if a suite is to run (make check T=...): to skip its build steps.
TAP_WANT := $(TOP)/scripts/tap-want

$(OBJDIR)/%.o: %.c $(TOP)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
