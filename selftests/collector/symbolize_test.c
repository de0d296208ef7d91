// SPDX-License-Identifier: GPL-2.0
/*
 * symbolize_test - the libelf symbolizer on real objects: a PIE (this
 * program) and a dlopen'ed C++ shared object (load bias, demangling), a
 * build-id mismatch (never trusted: the frame keeps its address), and a
 * stripped copy whose names come from /usr/lib/debug/.build-id/ (rooted at
 * $KPPROF_DEBUG_ROOT here) or from its .gnu_debuglink file.
 */
#include <dlfcn.h>
#include <errno.h>
#include <kselftest_harness.h>
#include <unistd.h>

#include "profile_write.h"
#include "test_rec.h"

__attribute__((noinline)) int symbolize_me(int n)
{
	volatile int s = 0;

	for (int i = 0; i < n; i++)
		s += i;
	return s;
}

static const char *lib_path(void)
{
	return access("selftests/collector/libcxx_demo.so", R_OK) == 0 ?
	       "selftests/collector/libcxx_demo.so" : "./libcxx_demo.so";
}

FIXTURE(sym) {
	struct kpp_agg *a;
	struct kpp_symbolizer *s;
	void *lib;
	char dir[64];
};

FIXTURE_SETUP(sym)
{
	char real[4096];

	ASSERT_NE(NULL, realpath(lib_path(), real));
	self->lib = dlopen(real, RTLD_NOW);
	ASSERT_NE(NULL, self->lib) TH_LOG("%s", dlerror());
	self->a = kpp_agg__new(NULL);
	self->s = kpp_symbolizer__new();
	ASSERT_LT(0, kpp_proc__read_maps(self->a, getpid()));
	strcpy(self->dir, "/tmp/kpprof-sym-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(sym)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	if (system(cmd))
		TH_LOG("cannot remove %s", self->dir);
	kpp_symbolizer__free(self->s);
	kpp_agg__free(self->a);
	dlclose(self->lib);
}

static const struct kpp_map *map_of(struct kpp_agg *a, uint64_t pc)
{
	return kpp_proc__map_for(kpp_agg__proc(a, getpid()), pc);
}

TEST_F(sym, pie_executable)
{
	uint64_t pc = (uintptr_t)symbolize_me + 8;
	const struct kpp_map *m = map_of(self->a, pc);
	struct kpp_sym out;

	ASSERT_NE(NULL, m);
	ASSERT_NE(0, m->build_id_len);
	ASSERT_EQ(0, kpp_symbolizer__lookup(self->s, m, pc, &out));
	EXPECT_STREQ("symbolize_me", out.name);
}

TEST_F(sym, shared_object_and_demangling)
{
	void *f = dlsym(self->lib, "_ZN8kpp_demo4Shop8checkoutEi");
	uint64_t pc = (uintptr_t)f + 8;
	const struct kpp_map *m;
	struct kpp_sym out;

	ASSERT_NE(NULL, f);
	m = map_of(self->a, pc);
	ASSERT_NE(NULL, m);
	EXPECT_NE(NULL, strstr(m->path, "libcxx_demo.so"));
	ASSERT_EQ(0, kpp_symbolizer__lookup(self->s, m, pc, &out));
	EXPECT_STREQ("kpp_demo::Shop::checkout(int)", out.name);
	EXPECT_STREQ("_ZN8kpp_demo4Shop8checkoutEi", out.system_name);
}

TEST_F(sym, build_id_mismatch_not_trusted)
{
	uint64_t pc = (uintptr_t)symbolize_me + 8;
	struct kpp_map m = *map_of(self->a, pc);
	struct kpp_sym out;

	m.build_id[0] ^= 0xff;
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup(self->s, &m, pc, &out));
}

/* A stripped copy of the library, at the same place in memory as the original. */
static int make_stripped(const char *dir, const char *lib, bool debuglink)
{
	char cmd[16384];

	if (strlen(dir) + 2 * strlen(lib) + 200 > sizeof(cmd))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "cd %s && objcopy --only-keep-debug %s libcxx_demo.debug && "
		 "objcopy --strip-all %s stripped.so %s",
		 dir, lib, lib, debuglink ? "&& objcopy --add-gnu-debuglink=libcxx_demo.debug stripped.so" : "");
	return system(cmd);
}

TEST_F(sym, debug_file_by_build_id)
{
	void *(*hidden)(void) = (void *(*)(void))dlsym(self->lib, "cxx_demo_hidden");
	char real[8192], cmd[4096], hex[41];
	uint64_t pc;
	struct kpp_map m;
	struct kpp_sym out;

	ASSERT_NE(NULL, hidden);
	pc = (uintptr_t)hidden() + 8;
	m = *map_of(self->a, pc);
	ASSERT_NE(NULL, realpath(lib_path(), real));
	ASSERT_EQ(0, make_stripped(self->dir, real, false));
	snprintf(cmd, sizeof(cmd), "%s/stripped.so", self->dir);
	m.path = cmd;
	/* Stripped, no debug file yet: the hidden function has no name. */
	setenv("KPPROF_DEBUG_ROOT", self->dir, 1);
	EXPECT_FALSE(kpp_symbolizer__lookup(self->s, &m, pc, &out) == 0 &&
		     !strcmp(out.name, "hidden_helper(int)"));
	/* Put the debug file where /usr/lib/debug/.build-id/ would have it. */
	for (int i = 0; i < m.build_id_len; i++)
		sprintf(hex + 2 * i, "%02x", m.build_id[i]);
	snprintf(real, sizeof(real), "mkdir -p %s/.build-id/%.2s && mv %s/libcxx_demo.debug %s/.build-id/%.2s/%s.debug",
		 self->dir, hex, self->dir, self->dir, hex, hex + 2);
	ASSERT_EQ(0, system(real));
	/* A new symbolizer: the first one cached the stripped object. */
	kpp_symbolizer__free(self->s);
	self->s = kpp_symbolizer__new();
	ASSERT_EQ(0, kpp_symbolizer__lookup(self->s, &m, pc, &out));
	EXPECT_STREQ("hidden_helper(int)", out.name);
	unsetenv("KPPROF_DEBUG_ROOT");
}

TEST_F(sym, gnu_debuglink)
{
	void *(*hidden)(void) = (void *(*)(void))dlsym(self->lib, "cxx_demo_hidden");
	char real[4096], path[4096];
	uint64_t pc;
	struct kpp_map m;
	struct kpp_sym out;

	ASSERT_NE(NULL, hidden);
	pc = (uintptr_t)hidden() + 8;
	m = *map_of(self->a, pc);
	ASSERT_NE(NULL, realpath(lib_path(), real));
	ASSERT_EQ(0, make_stripped(self->dir, real, true));
	snprintf(path, sizeof(path), "%s/stripped.so", self->dir);
	m.path = path;
	/* No build-id in the mapping: only the debuglink can lead to names. */
	m.build_id_len = 0;
	setenv("KPPROF_DEBUG_ROOT", self->dir, 1);
	ASSERT_EQ(0, kpp_symbolizer__lookup(self->s, &m, pc, &out));
	EXPECT_STREQ("hidden_helper(int)", out.name);
	unsetenv("KPPROF_DEBUG_ROOT");
}

TEST_F(sym, unknown_object_keeps_address)
{
	struct kpp_map m = { .start = 0x1000, .end = 0x2000, .path = (char *)"/nonexistent/lib.so" };
	struct kpp_sym out;

	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup(self->s, &m, 0x1100, &out));
}

TEST_HARNESS_MAIN
