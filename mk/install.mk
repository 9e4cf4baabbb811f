# SPDX-License-Identifier: Apache-2.0
# make install / make uninstall, included by the top-level Makefile.
#
#   make install [DESTDIR=...] [PREFIX=/usr/local] [BINDIR=...] [MANDIR=...]
#   make uninstall (same variables)
#   make install-dkms    the module's source tree for DKMS (DKMSDIR)
#   make uninstall-dkms
#   make install-nvme-dkms   the patched nvme.ko's DKMS tree (NVMEDKMSDIR):
#                        kernel/patches, built by DKMS from the target
#                        kernel's linux-source-SERIES (kernel/nvme-dkms)
#   make uninstall-nvme-dkms
#
# install builds what is missing first (the tools), then copies:
#   BINDIR          hmb-trace-daemon hmb-trace-analyze hmb-trace-agent hmb-fwsim
#                   hmb-trace-conform
#   MANDIR          man1, man4, man5, man8 pages (docs/man/NAME.N, roff
#                   committed beside the Markdown: no pandoc needed)
#   PKGDATADIR      hmb-events.dict (the event dictionary hmb-fwsim reads)
#   DOCDIR          format.md, events.md, formats.md, kernel.md, agent.md
#   BASHCOMPDIR     bash completion for every tool
#   UNITDIR         hmb-trace-daemon@.service (ExecStart in BINDIR)
#   UDEVRULESDIR    60-nvme-hmb-trace.rules
#   LOGROTATEDIR    hmb-trace (logrotate snippet)
#   PYTHONDIR       the hmb_trace Python package
#   LIBINSTALLDIR   libhmbtrace.so.0 (soname) and the libhmbtrace.so link
#                   (not LIBDIR: the build's own output directory, mk/common.mk)
#   INCLUDEDIR      hmbtrace/: the library's public headers, and
#                   hmbtrace/linux/nvme_hmb_trace.h (the UAPI header they use)
#   PKGCONFIGDIR    hmbtrace.pc (pkg-config --cflags --libs hmbtrace)
# Every directory is a variable (GNU names where there is one) and DESTDIR
# prefixes them all.  Defaults follow PREFIX, except the configuration
# files that only /etc is read for: LOGROTATEDIR under SYSCONFDIR=/etc.
# systemd and udev also read PREFIX/lib/{systemd/system,udev/rules.d} for
# PREFIX=/usr/local.
PREFIX ?= /usr/local
EXEC_PREFIX ?= $(PREFIX)
BINDIR ?= $(EXEC_PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
PKGDATADIR ?= $(DATADIR)/nvme-hmb-trace
DOCDIR ?= $(DATADIR)/doc/nvme-hmb-trace
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
SYSCONFDIR ?= /etc
LOGROTATEDIR ?= $(SYSCONFDIR)/logrotate.d
UNITDIR ?= $(PREFIX)/lib/systemd/system
UDEVRULESDIR ?= $(PREFIX)/lib/udev/rules.d
PYTHONDIR ?= $(PREFIX)/lib/python3/dist-packages
LIBINSTALLDIR ?= $(EXEC_PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBINSTALLDIR)/pkgconfig
DKMSDIR ?= /usr/src/nvme-hmb-trace-$(shell cat $(TOP)/VERSION)
NVMEDKMSDIR ?= /usr/src/nvme-hmb-trace-nvme-$(shell cat $(TOP)/VERSION)
INSTALL ?= install

INSTALL_TOOLS := hmb-trace-daemon hmb-trace-analyze hmb-trace-agent hmb-fwsim hmb-trace-conform
INSTALL_DOCS := format.md events.md formats.md kernel.md agent.md
COMPLETIONS := $(wildcard $(TOP)/packaging/bash-completion/hmb-*)
PY_FILES := $(wildcard $(TOP)/python/hmb_trace/*.py)
UNIT := hmb-trace-daemon@.service
LIB_HEADERS := $(wildcard $(TOP)/user/lib/include/*.h)
LIB_SO := libhmbtrace.so.0
VERSION_STR := $(shell cat $(TOP)/VERSION)

MAN_PAGES := $(wildcard docs/man/*.[1-9])

.PHONY: install uninstall install-dkms uninstall-dkms install-nvme-dkms uninstall-nvme-dkms

install: all
	$(INSTALL) -d $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 0755 $(addprefix build/bin/,$(INSTALL_TOOLS)) $(DESTDIR)$(BINDIR)/
	@for p in $(MAN_PAGES); do \
		s=man$${p##*.}; \
		echo "$(INSTALL) -m 0644 $$p $(DESTDIR)$(MANDIR)/$$s/"; \
		$(INSTALL) -d $(DESTDIR)$(MANDIR)/$$s && $(INSTALL) -m 0644 $$p $(DESTDIR)$(MANDIR)/$$s/ || exit 1; \
	done
	$(INSTALL) -d $(DESTDIR)$(PKGDATADIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(BASHCOMPDIR)
	$(INSTALL) -m 0644 share/hmb-events.dict $(DESTDIR)$(PKGDATADIR)/
	$(INSTALL) -m 0644 $(addprefix docs/,$(INSTALL_DOCS)) $(DESTDIR)$(DOCDIR)/
	$(INSTALL) -m 0644 $(COMPLETIONS) $(DESTDIR)$(BASHCOMPDIR)/
	$(INSTALL) -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(UDEVRULESDIR) $(DESTDIR)$(LOGROTATEDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' packaging/systemd/$(UNIT) > $(DESTDIR)$(UNITDIR)/$(UNIT)
	chmod 0644 $(DESTDIR)$(UNITDIR)/$(UNIT)
	$(INSTALL) -m 0644 packaging/udev/60-nvme-hmb-trace.rules $(DESTDIR)$(UDEVRULESDIR)/
	$(INSTALL) -m 0644 packaging/logrotate/hmb-trace $(DESTDIR)$(LOGROTATEDIR)/hmb-trace
	$(INSTALL) -d $(DESTDIR)$(PYTHONDIR)/hmb_trace
	$(INSTALL) -m 0644 $(PY_FILES) $(DESTDIR)$(PYTHONDIR)/hmb_trace/
	$(INSTALL) -d $(DESTDIR)$(LIBINSTALLDIR) $(DESTDIR)$(INCLUDEDIR)/hmbtrace/linux $(DESTDIR)$(PKGCONFIGDIR)
	$(INSTALL) -m 0644 build/lib/$(LIB_SO) $(DESTDIR)$(LIBINSTALLDIR)/
	ln -sf $(LIB_SO) $(DESTDIR)$(LIBINSTALLDIR)/libhmbtrace.so
	$(INSTALL) -m 0644 $(LIB_HEADERS) $(DESTDIR)$(INCLUDEDIR)/hmbtrace/
	$(INSTALL) -m 0644 include/uapi/linux/nvme_hmb_trace.h $(DESTDIR)$(INCLUDEDIR)/hmbtrace/linux/
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBINSTALLDIR)' 'includedir=$(INCLUDEDIR)' '' \
		'Name: hmbtrace' 'Description: NVMe HMB firmware trace format, rings, dumps and command model' \
		'Version: $(VERSION_STR)' 'Libs: -L$${libdir} -lhmbtrace' 'Libs.private: -lcurl -lm' \
		'Cflags: -I$${includedir}/hmbtrace' > $(DESTDIR)$(PKGCONFIGDIR)/hmbtrace.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/hmbtrace.pc

# Only what install put there; directories only where they are ours.
uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(INSTALL_TOOLS))
	@for p in $(MAN_PAGES); do \
		b=$${p##*/}; rm -f "$(DESTDIR)$(MANDIR)/man$${b##*.}/$$b"; \
	done
	rm -f $(DESTDIR)$(PKGDATADIR)/hmb-events.dict $(addprefix $(DESTDIR)$(DOCDIR)/,$(INSTALL_DOCS))
	-rmdir $(DESTDIR)$(PKGDATADIR) $(DESTDIR)$(DOCDIR) 2>/dev/null
	rm -f $(addprefix $(DESTDIR)$(BASHCOMPDIR)/,$(notdir $(COMPLETIONS)))
	rm -f $(DESTDIR)$(UNITDIR)/$(UNIT) $(DESTDIR)$(UDEVRULESDIR)/60-nvme-hmb-trace.rules \
		$(DESTDIR)$(LOGROTATEDIR)/hmb-trace
	rm -f $(addprefix $(DESTDIR)$(PYTHONDIR)/hmb_trace/,$(notdir $(PY_FILES)))
	rm -rf $(DESTDIR)$(PYTHONDIR)/hmb_trace/__pycache__
	-rmdir $(DESTDIR)$(PYTHONDIR)/hmb_trace 2>/dev/null
	rm -f $(DESTDIR)$(LIBINSTALLDIR)/$(LIB_SO) $(DESTDIR)$(LIBINSTALLDIR)/libhmbtrace.so $(DESTDIR)$(PKGCONFIGDIR)/hmbtrace.pc
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/hmbtrace/,$(notdir $(LIB_HEADERS))) \
		$(DESTDIR)$(INCLUDEDIR)/hmbtrace/linux/nvme_hmb_trace.h
	-rmdir $(DESTDIR)$(INCLUDEDIR)/hmbtrace/linux $(DESTDIR)$(INCLUDEDIR)/hmbtrace 2>/dev/null

# The DKMS source tree: the module's sources, its UAPI header, dkms.conf.
# dkms builds it from there (Kbuild's HMB_TOP is the tree itself).
DKMS_KSRC := $(wildcard kernel/*.c kernel/*.h) kernel/Kbuild kernel/include/linux/nvme-hmb-trace.h
install-dkms:
	$(INSTALL) -d $(DESTDIR)$(DKMSDIR)/include/linux $(DESTDIR)$(DKMSDIR)/include/uapi/linux
	$(INSTALL) -m 0644 $(filter-out kernel/include/%,$(DKMS_KSRC)) $(DESTDIR)$(DKMSDIR)/
	$(INSTALL) -m 0644 kernel/include/linux/nvme-hmb-trace.h $(DESTDIR)$(DKMSDIR)/include/linux/
	$(INSTALL) -m 0644 include/uapi/linux/nvme_hmb_trace.h $(DESTDIR)$(DKMSDIR)/include/uapi/linux/
	sed 's|#MODULE_VERSION#|$(shell cat $(TOP)/VERSION)|g' kernel/dkms.conf > $(DESTDIR)$(DKMSDIR)/dkms.conf
	chmod 0644 $(DESTDIR)$(DKMSDIR)/dkms.conf

uninstall-dkms:
	rm -rf $(DESTDIR)$(DKMSDIR)

# The patched nvme.ko's DKMS tree: its build script, the patch series (and
# the series' variants), the headers pci.c then includes, dkms.conf.
NVME_PATCHES := $(wildcard kernel/patches/*.patch)
NVME_PATCH_SERIES := $(notdir $(patsubst %/,%,$(dir $(wildcard kernel/patches/*/*.patch))))
install-nvme-dkms:
	$(INSTALL) -d $(DESTDIR)$(NVMEDKMSDIR)/patches $(DESTDIR)$(NVMEDKMSDIR)/include/linux \
		$(DESTDIR)$(NVMEDKMSDIR)/include/uapi/linux
	$(INSTALL) -m 0755 kernel/nvme-dkms/nvme-dkms-build $(DESTDIR)$(NVMEDKMSDIR)/
	$(INSTALL) -m 0755 kernel/tools/nvme-patches.sh $(DESTDIR)$(NVMEDKMSDIR)/nvme-patches
	$(INSTALL) -m 0644 $(NVME_PATCHES) $(DESTDIR)$(NVMEDKMSDIR)/patches/
	for s in $(sort $(NVME_PATCH_SERIES)); do \
		$(INSTALL) -d $(DESTDIR)$(NVMEDKMSDIR)/patches/$$s && \
		$(INSTALL) -m 0644 kernel/patches/$$s/*.patch $(DESTDIR)$(NVMEDKMSDIR)/patches/$$s/ || exit 1; done
	$(INSTALL) -m 0644 kernel/include/linux/nvme-hmb-trace.h $(DESTDIR)$(NVMEDKMSDIR)/include/linux/
	$(INSTALL) -m 0644 include/uapi/linux/nvme_hmb_trace.h $(DESTDIR)$(NVMEDKMSDIR)/include/uapi/linux/
	sed 's|#MODULE_VERSION#|$(shell cat $(TOP)/VERSION)|g' kernel/nvme-dkms/dkms.conf > $(DESTDIR)$(NVMEDKMSDIR)/dkms.conf
	chmod 0644 $(DESTDIR)$(NVMEDKMSDIR)/dkms.conf

uninstall-nvme-dkms:
	rm -rf $(DESTDIR)$(NVMEDKMSDIR)
