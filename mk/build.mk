# SPDX-License-Identifier: GPL-2.0
# Where build outputs go: every Makefile of the tree includes this file.
# Nothing is ever written beside the sources: the outputs of directory D
# (relative to the top) go to build/D, so selftests/shim/unit_test is
# build/selftests/shim/unit_test, user/shim/libkpprof.so is
# build/user/shim/libkpprof.so, and 'make clean' is 'rm -rf build'.
# The one exception is build/module/<release>/, the module's Kbuild trees
# (see the top Makefile).  selftests/lib/build.sh says the same for tests.

KPP_TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
BUILD   := $(KPP_TOP)/build
# The output directory of the Makefile that includes this one.
OUT     := $(BUILD)$(patsubst $(KPP_TOP)%,%,$(CURDIR))
