# SPDX-License-Identifier: GPL-2.0
# kpprof: install, uninstall, the DKMS source tree and the Debian packages.
# Included by the top Makefile.  Targets:
#   install     copy what 'make' built, and the files of dist/ and man/, into
#               $(DESTDIR); builds nothing (run 'make' first, as yourself)
#   uninstall   remove exactly what install lays out
#   install-files  print that list, one path a line (for tests and packagers)
#   deb         build .debs with debhelper into build/deb/
# GNU conventions: DESTDIR, PREFIX (or prefix), BINDIR, LIBDIR, INCLUDEDIR,
# DATADIR, MANDIR, SYSCONFDIR; and UNITDIR (systemd), UDEVRULESDIR,
# DKMSDIR (the DKMS source tree, /usr/src: DKMS looks nowhere else).
# System paths that programs read at fixed places do not follow PREFIX:
# SYSCONFDIR is /etc (the shim reads /etc/kpprof/exclude, the loader
# /etc/ld.so.preload); udev, modprobe and systemd also read /usr/local/lib.

PREFIX      ?= /usr/local
prefix      ?= $(PREFIX)
MULTIARCH   ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || \
		 $(CC) -print-multiarch)
BINDIR      ?= $(prefix)/bin
LIBDIR      ?= $(prefix)/lib/$(MULTIARCH)
INCLUDEDIR  ?= $(prefix)/include
DATADIR     ?= $(prefix)/share
MANDIR      ?= $(DATADIR)/man
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(prefix)/lib/systemd/system
UDEVRULESDIR ?= $(prefix)/lib/udev/rules.d
DKMSDIR     ?= /usr/src
INSTALL     ?= install

# What 'make' builds and install copies.
KPP_BUILT   := build/user/kpprof/kpprof build/user/shim/libkpprof.so
# The module's sources for DKMS: every tracked source file (never objects).
KPP_KSRC    := Kbuild ioctl/kpprof.h $(wildcard kmod/*.[ch] kmod/*/*.[ch])
KPP_DKMS    := $(DKMSDIR)/kpprof-$(KPPROF_VERSION)

# Substitutions for the templates in dist/, done while copying (text only).
KPP_SUBST := sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@VERSION@|$(KPPROF_VERSION)|g'

# Every installed file; uninstall removes these and the directories of
# kpprof's own that end up empty.
KPP_FILES := $(BINDIR)/kpprof \
	$(LIBDIR)/kpprof/libkpprof.so \
	$(INCLUDEDIR)/kpprof/kpprof.h \
	$(UDEVRULESDIR)/60-kpprof.rules \
	$(SYSCONFDIR)/modprobe.d/kpprof.conf \
	$(SYSCONFDIR)/default/kpprof \
	$(SYSCONFDIR)/kpprof/exclude \
	$(UNITDIR)/kpprof.service \
	$(MANDIR)/man1/kpprof.1 \
	$(MANDIR)/man7/libkpprof.7 \
	$(KPP_DKMS)/dkms.conf \
	$(KPP_DKMS)/Makefile \
	$(addprefix $(KPP_DKMS)/,$(KPP_KSRC))
KPP_OWN_DIRS := $(LIBDIR)/kpprof $(INCLUDEDIR)/kpprof $(SYSCONFDIR)/kpprof \
	$(sort $(dir $(addprefix $(KPP_DKMS)/,$(KPP_KSRC)))) $(KPP_DKMS)

install-check-built:
	@for f in $(KPP_BUILT); do \
		[ -f "$$f" ] || { echo "install: $$f is missing: run 'make' (as yourself) first;" \
			"install builds nothing" >&2; exit 1; }; \
	done

# Configuration files the administrator may have edited are kept if present
# (as dpkg keeps conffiles); everything else is replaced.
install: install-check-built
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/kpprof \
		$(DESTDIR)$(INCLUDEDIR)/kpprof $(DESTDIR)$(UDEVRULESDIR) \
		$(DESTDIR)$(SYSCONFDIR)/modprobe.d $(DESTDIR)$(SYSCONFDIR)/default \
		$(DESTDIR)$(SYSCONFDIR)/kpprof $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(KPP_DKMS)
	$(INSTALL) -m 0755 build/user/kpprof/kpprof $(DESTDIR)$(BINDIR)/kpprof
	$(INSTALL) -m 0644 build/user/shim/libkpprof.so $(DESTDIR)$(LIBDIR)/kpprof/libkpprof.so
	$(INSTALL) -m 0644 ioctl/kpprof.h $(DESTDIR)$(INCLUDEDIR)/kpprof/kpprof.h
	$(INSTALL) -m 0644 dist/60-kpprof.rules $(DESTDIR)$(UDEVRULESDIR)/60-kpprof.rules
	@for f in modprobe.d/kpprof.conf:kpprof-modprobe.conf default/kpprof:kpprof.default \
		  kpprof/exclude:exclude; do \
		dst=$(DESTDIR)$(SYSCONFDIR)/$${f%%:*}; \
		if [ -e "$$dst" ]; then echo "install: keeping $$dst"; \
		else echo "$(INSTALL) -m 0644 dist/$${f#*:} $$dst"; \
			$(INSTALL) -m 0644 dist/$${f#*:} "$$dst" || exit 1; fi; \
	done
	$(KPP_SUBST) dist/kpprof.service.in >$(DESTDIR)$(UNITDIR)/kpprof.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/kpprof.service
	$(INSTALL) -m 0644 man/kpprof.1 $(DESTDIR)$(MANDIR)/man1/kpprof.1
	$(INSTALL) -m 0644 man/libkpprof.7 $(DESTDIR)$(MANDIR)/man7/libkpprof.7
	@for f in $(KPP_KSRC); do \
		$(INSTALL) -D -m 0644 $$f $(DESTDIR)$(KPP_DKMS)/$$f || exit 1; done
	$(KPP_SUBST) dist/dkms.conf.in >$(DESTDIR)$(KPP_DKMS)/dkms.conf
	$(KPP_SUBST) dist/dkms.Makefile.in >$(DESTDIR)$(KPP_DKMS)/Makefile
	chmod 0644 $(DESTDIR)$(KPP_DKMS)/dkms.conf $(DESTDIR)$(KPP_DKMS)/Makefile
	@echo "install: done.  Not enabled: modprobe kpprof; kpprof enable;" \
		"systemctl enable --now kpprof (see README.md, 'On a real machine')"

uninstall:
	rm -f $(addprefix $(DESTDIR),$(KPP_FILES))
	@printf '%s\n' $(addprefix $(DESTDIR),$(KPP_OWN_DIRS)) | sort -ru | \
		while read -r d; do [ ! -d "$$d" ] || rmdir --ignore-fail-on-non-empty "$$d"; done

install-files:
	@printf '%s\n' $(KPP_FILES)

.PHONY: install install-check-built uninstall install-files

# Debian packages, built with debhelper from a copy of the source (tracked
# and new files, not build outputs) in build/deb/src, so that every output,
# the .debs included, stays under build/.
KPP_DEB_VERSION = $(shell dpkg-parsechangelog -l debian/changelog -S Version)
deb:
	@rm -rf build/deb && mkdir -p build/deb/src/kpprof-$(KPP_DEB_VERSION)
	@{ git ls-files -z --cached --others --exclude-standard 2>/dev/null || \
	   find . -path ./build -prune -o -type f -print0; } | \
		xargs -0 -I{} sh -c '[ ! -f "{}" ] || cp --parents "{}" build/deb/src/kpprof-$(KPP_DEB_VERSION)/'
	cd build/deb/src/kpprof-$(KPP_DEB_VERSION) && \
		dpkg-buildpackage -b -us -uc >../../build.log 2>&1 || \
		{ tail -30 ../../build.log; echo "deb: failed; build/deb/build.log" >&2; exit 1; }
	@mv build/deb/src/*.deb build/deb/src/*.buildinfo build/deb/src/*.changes build/deb/
	@ls -1 build/deb/*.deb

print-version:
	@echo $(KPPROF_VERSION)

.PHONY: deb print-version
