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
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
	/* pprof's form: demangled, no parameter list; system_name mangled */
	EXPECT_STREQ("kpp_demo::Shop::checkout", out.name);
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
		     !strcmp(out.name, "hidden_helper"));
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
	EXPECT_STREQ("hidden_helper", out.name);
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
	/* No .build-id/ directory under the root: only the debuglink leads to names. */
	setenv("KPPROF_DEBUG_ROOT", self->dir, 1);
	ASSERT_EQ(0, kpp_symbolizer__lookup(self->s, &m, pc, &out));
	EXPECT_STREQ("hidden_helper", out.name);
	unsetenv("KPPROF_DEBUG_ROOT");
}

/*
 * A path the collector sees, in a record without a build-id, is not
 * trusted: the producer could name any file.
 */
TEST_F(sym, path_without_build_id_not_trusted)
{
	uint64_t pc = (uintptr_t)symbolize_me + 8;
	struct kpp_map m = *map_of(self->a, pc);
	struct kpp_sym out;

	m.build_id_len = 0;
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup(self->s, &m, pc, &out));
	/* ... but the same mapping of a live process, through /proc/PID/map_files, is. */
	ASSERT_EQ(0, kpp_symbolizer__lookup_pid(self->s, getpid(), &m, pc, &out));
	EXPECT_STREQ("symbolize_me", out.name);
}

/* A record naming a FIFO must not hang the collector, nor be read. */
TEST_F(sym, fifo_not_opened)
{
	uint64_t pc = (uintptr_t)symbolize_me + 8;
	struct kpp_map m = *map_of(self->a, pc);
	char fifo[128];
	struct kpp_sym out;

	snprintf(fifo, sizeof(fifo), "%s/fifo", self->dir);
	ASSERT_EQ(0, mkfifo(fifo, 0600));
	m.path = fifo;
	m.start = 0x10000;	/* nothing is mapped there: map_files has no entry */
	m.end = 0x11000;
	alarm(20);		/* a blocking open() would hang here */
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup(self->s, &m, 0x10100, &out));
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup_pid(self->s, getpid(), &m, 0x10100, &out));
	EXPECT_GT(0, kpp_elf__build_id(fifo, m.build_id, &m.build_id_len));
	alarm(0);
}

/* A child running one of names/sites-*, paused while we read its maps. */
struct child {
	pid_t pid;
	int in;
	uint64_t fill, other;
};

static int start_sites(const char *prog, struct child *c)
{
	int in[2], out[2];
	char buf[128];
	FILE *f;

	if (access(prog, X_OK) || pipe(in) || pipe(out))
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(prog, prog, "pause", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	f = fdopen(out[0], "r");
	if (!f || !fgets(buf, sizeof(buf), f) ||
	    sscanf(buf, "%" SCNx64 " %" SCNx64, &c->fill, &c->other) != 2)
		return -1;
	fclose(f);
	return 0;
}

static void stop_sites(struct child *c)
{
	close(c->in);
	waitpid(c->pid, NULL, 0);
}

static const char *names_dir(void)
{
	return access("selftests/collector/names", X_OK) == 0 ?
	       "selftests/collector/names" : "names";
}

/*
 * Finding 1: each linker's layout, PIE and not: the text segment's bias.
 * Before the fix, lld's and mold's text (which starts mid-page, after a
 * read-only segment sharing that page) was looked up a page off.
 */
TEST_F(sym, linkers)
{
	static const char *const progs[] = {
		"sites-lld", "sites-bfd", "sites-gold", "sites-mold", "sites-nopie",
	};

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		char prog[256];
		struct child c;
		struct kpp_agg *a = kpp_agg__new(NULL);
		struct kpp_sym out;
		const struct kpp_map *m;

		snprintf(prog, sizeof(prog), "%s/%s", names_dir(), progs[i]);
		ASSERT_EQ(0, start_sites(prog, &c)) TH_LOG("%s", prog);
		ASSERT_LT(0, kpp_proc__read_maps(a, c.pid));
		m = kpp_proc__map_for(kpp_agg__proc(a, c.pid), c.fill + 8);
		ASSERT_NE(NULL, m) TH_LOG("%s", prog);
		EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, c.pid, m, c.fill + 8, &out));
		EXPECT_STREQ("fill_sites", out.name) TH_LOG("%s", prog);
		EXPECT_TRUE(out.has_lines) TH_LOG("%s: no DWARF lines", prog);
		m = kpp_proc__map_for(kpp_agg__proc(a, c.pid), c.other + 8);
		ASSERT_NE(NULL, m);
		EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, c.pid, m, c.other + 8, &out));
		EXPECT_STREQ("other_sites", out.name) TH_LOG("%s", prog);
		stop_sites(&c);
		/* and after it exited, from the cache (by build-id) */
		EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, c.pid, m, c.other + 8, &out));
		EXPECT_STREQ("other_sites", out.name) TH_LOG("%s after exit", prog);
		kpp_agg__free(a);
	}
}

/*
 * Finding 9: a process whose path exists only in its own root (here: a
 * path that exists nowhere).  Its object is opened through
 * /proc/PID/map_files when its MMAP record arrives (prefetch), and still
 * symbolizes after it exited.
 */
TEST_F(sym, prefetched_then_exited)
{
	char prog[256];
	struct kpp_agg *a = kpp_agg__new(NULL);
	struct kpp_map m;
	struct kpp_sym out;
	struct child c;

	snprintf(prog, sizeof(prog), "%s/sites-lld", names_dir());
	ASSERT_EQ(0, start_sites(prog, &c));
	ASSERT_LT(0, kpp_proc__read_maps(a, c.pid));
	m = *kpp_proc__map_for(kpp_agg__proc(a, c.pid), c.fill + 8);
	m.path = (char *)"/app/sites";
	kpp_symbolizer__prefetch(self->s, c.pid, &m);
	stop_sites(&c);
	ASSERT_EQ(0, kpp_symbolizer__lookup_pid(self->s, c.pid, &m, c.fill + 8, &out));
	EXPECT_STREQ("fill_sites", out.name);
	kpp_agg__free(a);
}

/*
 * Finding 1, debug-file path: the object itself is gone (or replaced), so
 * the segments come from the objcopy'd debug file, whose p_filesz are 0.
 */
TEST_F(sym, lld_debug_file_only)
{
	char prog[256], cmd[1024], hex[2 * KPPROF_BUILD_ID_MAX + 1];
	struct kpp_agg *a = kpp_agg__new(NULL);
	struct kpp_map m;
	struct kpp_sym out;
	struct child c;

	snprintf(prog, sizeof(prog), "%s/sites-lld", names_dir());
	ASSERT_EQ(0, start_sites(prog, &c));
	ASSERT_LT(0, kpp_proc__read_maps(a, c.pid));
	m = *kpp_proc__map_for(kpp_agg__proc(a, c.pid), c.fill + 8);
	ASSERT_NE(0, m.build_id_len);
	for (int i = 0; i < m.build_id_len; i++)
		sprintf(hex + 2 * i, "%02x", m.build_id[i]);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/.build-id/%.2s && objcopy --only-keep-debug %s %s/.build-id/%.2s/%s.debug",
		 self->dir, hex, prog, self->dir, hex, hex + 2);
	ASSERT_EQ(0, system(cmd));
	stop_sites(&c);
	m.path = (char *)"/nonexistent/sites-lld";
	setenv("KPPROF_DEBUG_ROOT", self->dir, 1);
	ASSERT_EQ(0, kpp_symbolizer__lookup(self->s, &m, c.fill + 8, &out));
	EXPECT_STREQ("fill_sites", out.name);
	EXPECT_TRUE(out.has_lines);
	unsetenv("KPPROF_DEBUG_ROOT");
	kpp_agg__free(a);
}

/*
 * Finding 4: at -O2 make_node() is inlined into fill_sites(); the frames of
 * the malloc call's return address are make_node at its line, then
 * fill_sites at the call's line, as `addr2line -i` says.
 */
TEST_F(sym, inlined_frames_match_addr2line)
{
	char prog[256], cmd[1024], want[4][256] = { { 0 } };
	struct kpp_agg *a = kpp_agg__new(NULL);
	const struct kpp_map *m;
	unsigned long long ra = 0, fill = 0;
	struct kpp_sym out;
	struct child c;
	FILE *f;

	snprintf(prog, sizeof(prog), "%s/sites-o2", names_dir());
	snprintf(cmd, sizeof(cmd),
		 "objdump -d --no-show-raw-insn %s | awk '/<fill_sites>:/ { print $1; on = 1 } "
		 "on && /call.*<malloc@plt>/ { getline; sub(\":\", \"\", $1); print $1; exit }'", prog);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(2, fscanf(f, "%llx %llx", &fill, &ra));
	pclose(f);
	snprintf(cmd, sizeof(cmd), "addr2line -i -f -e %s %#llx", prog, ra - 1);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	for (int i = 0; i < 4 && fgets(want[i], sizeof(want[i]), f); i++)
		want[i][strcspn(want[i], " \n")] = '\0';
	pclose(f);
	ASSERT_STREQ("make_node", want[0]);
	ASSERT_STREQ("fill_sites", want[2]);

	ASSERT_EQ(0, start_sites(prog, &c));
	ASSERT_LT(0, kpp_proc__read_maps(a, c.pid));
	m = kpp_proc__map_for(kpp_agg__proc(a, c.pid), c.fill);
	ASSERT_NE(NULL, m);
	/* the return address in the process: fill_sites moved as a whole */
	ASSERT_EQ(0, kpp_symbolizer__lookup_pid(self->s, c.pid, m, c.fill - fill + ra, &out));
	for (unsigned int i = 0; i < out.nr_frames; i++)
		TH_LOG("frame %u: %s %s:%lld", i, out.frames[i].name, out.frames[i].file, (long long)out.frames[i].line);
	ASSERT_EQ(2u, out.nr_frames);
	EXPECT_TRUE(out.has_lines);
	EXPECT_STREQ("make_node", out.frames[0].name);
	EXPECT_STREQ("fill_sites", out.frames[1].name);
	for (int i = 0; i < 2; i++) {
		char at[300];

		snprintf(at, sizeof(at), "%s:%lld", out.frames[i].file ? out.frames[i].file : "?",
			 (long long)out.frames[i].line);
		EXPECT_STREQ(want[2 * i + 1], at);
	}
	EXPECT_LT(0, out.frames[0].start_line);
	stop_sites(&c);
	kpp_agg__free(a);
}

TEST_F(sym, unknown_object_keeps_address)
{
	struct kpp_map m = { .start = 0x1000, .end = 0x2000, .path = (char *)"/nonexistent/lib.so" };
	struct kpp_sym out;

	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup(self->s, &m, 0x1100, &out));
}

TEST_HARNESS_MAIN
