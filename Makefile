# SPDX-License-Identifier: GPL-2.0
# kpprof: top-level build.  Targets:
#   deps     install every dependency from Debian's packages (idempotent)
#   all      the module (against Debian's packaged headers) and user space
#   module   kpprof.ko only;  module-debug: with -DDEBUG (in-module self-tests)
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
PWD := $(shell pwd)
V ?= 0

export KERNELRELEASE KERNELDIR

all: module user

deps:
	@scripts/deps

module:
	@$(MAKE) -C $(KERNELDIR) M=$(PWD) V=$(V) KPPROF_VERSION=$(KPPROF_VERSION) modules

# A second build tree, so the debug module (with in-module self-tests)
# never overwrites ./kpprof.ko: build/module-debug/kpprof.ko.
module-debug:
	@rm -rf build/module-debug && mkdir -p build/module-debug
	@cp -r Kbuild kmod ioctl build/module-debug/
	@$(MAKE) -C $(KERNELDIR) M=$(PWD)/build/module-debug V=$(V) \
		KPPROF_VERSION=$(KPPROF_VERSION)-debug KPPROF_DEBUG=y modules

# build/module/<release>/kpprof.ko for each kernel of the matrix (the default
# one too), so builds for different kernels never overwrite each other.
module-matrix:
	@set -e; for r in $$(scripts/kernels); do \
		$(MAKE) --no-print-directory module-in MODULE_DIR=build/module/$$r \
			MODULE_KDIR=/lib/modules/$$r/build; \
	done

debug-kernel:
	@scripts/vm/debug-kernel >/dev/null

module-debug-kernel: debug-kernel
	@$(MAKE) --no-print-directory module-in MODULE_DIR=build/module/debug \
		MODULE_KDIR=$$(scripts/vm/debug-kernel --cached)

# module-in MODULE_DIR=... MODULE_KDIR=...: kpprof.ko built in MODULE_DIR
# (a copy of the sources; cp -u keeps the build incremental) against the
# kernel build tree MODULE_KDIR.
module-in:
	@mkdir -p $(MODULE_DIR)
	@cp -r -u Kbuild kmod ioctl $(MODULE_DIR)/
	@env -u KERNELRELEASE -u KERNELDIR $(MAKE) -C $(MODULE_KDIR) M=$(PWD)/$(MODULE_DIR) \
		V=$(V) KPPROF_VERSION=$(KPPROF_VERSION) modules

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

sparse:
	@$(MAKE) -C $(KERNELDIR) M=$(PWD) V=$(V) KPPROF_VERSION=$(KPPROF_VERSION) \
		C=2 W=1 modules

clean:
	@$(MAKE) -C $(KERNELDIR) M=$(PWD) clean >/dev/null 2>&1 || true
	@$(MAKE) -C user/shim clean 2>/dev/null || true
	@$(MAKE) -C user/kpprof clean 2>/dev/null || true
	@rm -rf build

.PHONY: all deps module module-debug module-matrix debug-kernel module-debug-kernel module-in \
	user check check-debug bench demo style sparse clean

# install, uninstall, deb: mk/install.mk
include mk/install.mk
