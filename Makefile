# SPDX-License-Identifier: GPL-2.0
# kpprof: top-level build.  Targets:
#   deps     install every dependency from Debian's packages (idempotent)
#   all      the module (against Debian's packaged headers) and user space
#   module   build/module/<release>/kpprof.ko only (KERNELRELEASE);
#            module-debug: with -DDEBUG (in-module self-tests), build/module-debug/
#   module-matrix  kpprof.ko for every kernel of scripts/kernels, in
#            build/module/<release>/kpprof.ko
#   debug-kernel  build (once, cached) the KASAN + lockdep kernel (scripts/vm/debug-kernel)
#   module-debug-kernel  kpprof.ko against it: build/module/debug/kpprof.ko
#   check-debug  the kmod selftests and the collector's end-to-end tests on it
#   user     libkpprof.so and the kpprof collector
#   check    every test: host tests, then the VM tests on every kernel of the
#            matrix and on the debug kernel, one closing line
#   bench    benchmarks that print figures (in the VM), per kernel
#   demo     boot the VM, profile a demo workload, leave profiles in demo-out/
#   style    checkpatch --strict on kmod/ and ioctl/
#   sparse   the module under sparse (C=2) and W=1
#   clean
#   install, uninstall, deb   see mk/install.mk

# The kernel whose headers we build against: Debian's packaged one, taken
# from the package, never from uname -r (the host may run another kernel).
KERNELRELEASE ?= $(shell scripts/kernels --default 2>/dev/null)
KERNELDIR ?= /lib/modules/$(KERNELRELEASE)/build
KPPROF_VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)
V ?= 0

export KERNELRELEASE KERNELDIR

all: module user

deps:
	@scripts/deps

# Every output goes under build/ (mk/build.mk); the module's Kbuild trees are
# build/module/<release>/ (below).
include mk/build.mk

# build/module/$(KERNELRELEASE)/kpprof.ko: the same tree module-matrix
# builds for that kernel, so the two never build the default kernel twice.
module:
	@$(MAKE) --no-print-directory module-in MODULE_DIR=build/module/$(KERNELRELEASE) \
		MODULE_KDIR=$(KERNELDIR)

# A tree of its own, so the debug module (with in-module self-tests) never
# overwrites the normal one: build/module-debug/kpprof.ko.
module-debug:
	@$(MAKE) --no-print-directory module-in MODULE_DIR=build/module-debug \
		MODULE_KDIR=$(KERNELDIR) MODULE_VERSION=$(KPPROF_VERSION)-debug \
		MODULE_FLAGS=KPPROF_DEBUG=y

# build/module/<release>/kpprof.ko for each kernel of the matrix (the default
# one too), so builds for different kernels never overwrite each other.
# After 'module', whose tree is the default kernel's: under make -j the two
# would otherwise build the same tree at once.
module-matrix: module
	@set -e; for r in $$(scripts/kernels); do \
		$(MAKE) --no-print-directory module-in MODULE_DIR=build/module/$$r \
			MODULE_KDIR=/lib/modules/$$r/build; \
	done

debug-kernel:
	@scripts/vm/debug-kernel >/dev/null

module-debug-kernel: debug-kernel
	@$(MAKE) --no-print-directory module-in MODULE_DIR=build/module/debug \
		MODULE_KDIR=$$(scripts/vm/debug-kernel --cached)

# module-in MODULE_DIR=... MODULE_KDIR=... [MODULE_FLAGS=...]: kpprof.ko
# built in MODULE_DIR against the kernel build tree MODULE_KDIR.
# Kbuild of 6.1 and 6.12 writes objects beside the sources M= names (MO=
# came in 6.13), so MODULE_DIR is a tree of symbolic links, one per source
# file of KPP_KSRC (mk/install.mk) and never one per directory (the
# objects would land in the source directory), built with M=MODULE_DIR.
# The links are made again on every build: a new source is linked, the
# link of a removed one goes; make follows them, so an edit rebuilds.
MODULE_VERSION ?= $(KPPROF_VERSION)
module-in:
	@mkdir -p $(MODULE_DIR)
	@find $(MODULE_DIR) -xtype l -delete
	@for f in $(KPP_KSRC); do \
		mkdir -p $(MODULE_DIR)/$$(dirname $$f) && ln -sfn $(CURDIR)/$$f $(MODULE_DIR)/$$f || exit 1; \
	done
	@env -u KERNELRELEASE -u KERNELDIR $(MAKE) -C $(MODULE_KDIR) M=$(CURDIR)/$(MODULE_DIR) \
		V=$(V) KPPROF_VERSION=$(MODULE_VERSION) $(MODULE_FLAGS) modules

user:
	@$(MAKE) -C user/shim
	@$(MAKE) -C user/kpprof

# The debug kernel (and kpprof.ko for it) is built by scripts/check, in the
# background while the other tests run.
# KPPROF_CHECK_T0: when make started, so the run's wall time in the summary
# includes the builds above.
check: KPPROF_CHECK_T0 := $(shell date +%s)
check: all module-debug module-matrix
	@KPPROF_CHECK_T0=$(KPPROF_CHECK_T0) scripts/check

check-debug: all module-debug-kernel
	@scripts/check --debug-only

bench: all module-matrix
	@scripts/bench

demo: all
	@scripts/demo

style:
	@cp=$$(scripts/linux-source-extract scripts/checkpatch.pl scripts/spelling.txt \
		scripts/const_structs.checkpatch)/scripts/checkpatch.pl; \
	$$cp --strict --no-tree --terse --ignore MACRO_ARG_REUSE \
		-f kmod/*.c kmod/*.h ioctl/kpprof.h
# MACRO_ARG_REUSE: format.c's field-table macros take struct and member
# names, which cannot have side effects.

# In a tree of its own: C=2 checks every file, and its objects are not
# those of 'make module'.
sparse:
	@$(MAKE) --no-print-directory module-in MODULE_DIR=build/module-sparse \
		MODULE_KDIR=$(KERNELDIR) MODULE_FLAGS="C=2 W=1"

# Everything the build writes is under build/ (tests: selftests/vm/outputs_test.sh).
clean:
	@rm -rf build

.PHONY: all deps module module-debug module-matrix debug-kernel module-debug-kernel module-in \
	user check check-debug bench demo style sparse clean

# install, uninstall, deb: mk/install.mk
include mk/install.mk
