# SPDX-License-Identifier: GPL-2.0
# kpprof: top-level build.  Targets:
#   deps     install every dependency from Debian's packages (idempotent)
#   all      the module (against Debian's packaged headers) and user space
#   module   kpprof.ko only;  module-debug: with -DDEBUG (in-module self-tests)
#   user     libkpprof.so and the kpprof collector
#   check    every test: host tests, then the VM tests, one closing line
#   bench    benchmarks that print figures (in the VM)
#   demo     boot the VM, profile a demo workload, leave profiles in demo-out/
#   style    checkpatch --strict on kmod/ and ioctl/
#   sparse   the module under sparse (C=2) and W=1
#   clean
#   install, uninstall, deb   see mk/install.mk

# The kernel whose headers we build against: Debian's packaged one, taken
# from the package, never from uname -r (the host may run another kernel).
KERNELRELEASE ?= $(shell dpkg-query -W -f='$${Depends}' linux-image-amd64 2>/dev/null | \
		   sed -E 's/^linux-image-([^ ,]+).*/\1/')
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

user:
	@$(MAKE) -C user/shim
	@$(MAKE) -C user/kpprof

check: all module-debug
	@scripts/check

bench: all
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

.PHONY: all deps module module-debug user check bench demo style sparse clean

# install, uninstall, deb: mk/install.mk
include mk/install.mk
