// SPDX-License-Identifier: GPL-2.0
/*
 * symbolize_test - the libelf symbolizer on real objects: a PIE (this
 * program) and a dlopen'ed C++ shared object (load bias, demangling), a
 * build-id mismatch (never trusted: the frame keeps its address), and a
 * stripped copy whose names come from /usr/lib/debug/.build-id/ (rooted at
 * $KPPROF_DEBUG_ROOT here) or from its .gnu_debuglink file.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sched.h>
#include <time.h>
#include <zlib.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <kselftest_harness.h>
#include <unistd.h>

#include "objopen.h"
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
	return access("build/selftests/collector/libcxx_demo.so", R_OK) == 0 ?
	       "build/selftests/collector/libcxx_demo.so" : "./libcxx_demo.so";
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
	return access("build/selftests/collector/names", X_OK) == 0 ?
	       "build/selftests/collector/names" : "names";
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

/* ---------------------------------------------------- hostile producers */

/* A .gnu_debuglink section naming @link with @crc, added to @obj. */
static int add_debuglink(const char *dir, const char *obj, const char *link, uint32_t crc)
{
	char blob[600], cmd[2048];
	size_t n = strlen(link) + 1;
	FILE *f;

	n = (n + 3) & ~3UL;
	memset(blob, 0, sizeof(blob));
	memcpy(blob, link, strlen(link));
	memcpy(blob + n, &crc, 4);
	snprintf(cmd, sizeof(cmd), "%s/dl.blob", dir);
	f = fopen(cmd, "w");
	if (!f || fwrite(blob, 1, n + 4, f) != n + 4)
		return -1;
	fclose(f);
	snprintf(cmd, sizeof(cmd), "objcopy --add-section .gnu_debuglink=%s/dl.blob %s", dir, obj);
	return system(cmd);
}

static uint32_t crc_of(const char *path)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		crc = crc32(crc, buf, n);
	fclose(f);
	return crc;
}

/*
 * Review H2: the debuglink name comes from the producer's ELF.  "../x"
 * leads out of the object's directory (to /etc/shadow in the review): it
 * must not be followed, even when the file there has the right CRC.
 */
TEST_F(sym, debuglink_not_a_basename_refused)
{
	void *(*hidden)(void) = (void *(*)(void))dlsym(self->lib, "cxx_demo_hidden");
	char real[4096], cmd[8192], obj[4096], dbg[4096];
	uint64_t pc;
	struct kpp_map m;
	struct kpp_sym out;

	ASSERT_NE(NULL, hidden);
	pc = (uintptr_t)hidden() + 8;
	m = *map_of(self->a, pc);
	ASSERT_NE(NULL, realpath(lib_path(), real));
	snprintf(cmd, sizeof(cmd), "cd %s && mkdir sub && objcopy --only-keep-debug %s outside.debug && "
		 "objcopy --strip-all %s sub/stripped.so", self->dir, real, real);
	ASSERT_EQ(0, system(cmd));
	snprintf(obj, sizeof(obj), "%s/sub/stripped.so", self->dir);
	snprintf(dbg, sizeof(dbg), "%s/outside.debug", self->dir);
	ASSERT_EQ(0, add_debuglink(self->dir, obj, "../outside.debug", crc_of(dbg)));
	m.path = obj;
	setenv("KPPROF_DEBUG_ROOT", self->dir, 1);
	EXPECT_FALSE(kpp_symbolizer__lookup(self->s, &m, pc, &out) == 0 &&
		     !strcmp(out.name, "hidden_helper")) TH_LOG("../outside.debug was read");
	unsetenv("KPPROF_DEBUG_ROOT");
}

/*
 * Review H2: a debuglink to a huge sparse file (or /proc/kcore) was CRC-read
 * to its end: minutes for one frame.  Refused unread now: the lookup ends
 * at once.  Run in a child with a bound, so a regression fails, not hangs.
 */
TEST_F(sym, debuglink_huge_file_not_read)
{
	void *(*hidden)(void) = (void *(*)(void))dlsym(self->lib, "cxx_demo_hidden");
	char real[4096], cmd[8192], obj[4096], big[4096];
	struct timespec t0, t1;
	struct kpp_map m;
	int status = 0;
	uint64_t pc;
	pid_t child;

	ASSERT_NE(NULL, hidden);
	pc = (uintptr_t)hidden() + 8;
	ASSERT_NE(NULL, map_of(self->a, pc));
	m = *map_of(self->a, pc);
	ASSERT_NE(NULL, realpath(lib_path(), real));
	snprintf(cmd, sizeof(cmd), "cd %s && objcopy --strip-all %s stripped.so && truncate -s 200G big.debug",
		 self->dir, real);
	ASSERT_EQ(0, system(cmd));
	snprintf(obj, sizeof(obj), "%s/stripped.so", self->dir);
	snprintf(big, sizeof(big), "%s/big.debug", self->dir);
	ASSERT_EQ(0, add_debuglink(self->dir, obj, "big.debug", 0x12345678));
	m.path = obj;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		struct kpp_sym out;

		setenv("KPPROF_DEBUG_ROOT", self->dir, 1);
		kpp_symbolizer__lookup(self->s, &m, pc, &out);
		_exit(0);
	}
	/* Generous: a 200 GB read takes minutes; a refusal, milliseconds. */
	for (int i = 0; i < 200 && waitpid(child, &status, WNOHANG) == 0; i++)
		usleep(100000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (waitpid(child, &status, WNOHANG) == 0) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		ASSERT_TRUE(false) TH_LOG("lookup still reading %s after 20 s", big);
	}
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("status %#x", status);
	TH_LOG("lookup took %.2f s", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
}

/*
 * Review M1: build-ids are not authenticated.  A file forging this
 * library's build-id, symbolized first, must not name the real library's
 * frames (for this process or any other).
 */
TEST_F(sym, forged_build_id_names_nothing_else)
{
	void *f = dlsym(self->lib, "_ZN8kpp_demo4Shop8checkoutEi");
	char cmd[8192], fake[4096], hex[2 * KPPROF_BUILD_ID_MAX + 1];
	uint64_t pc = (uintptr_t)f + 8;
	struct kpp_map m, forged;
	struct kpp_sym out;
	FILE *src;

	ASSERT_NE(NULL, f);
	m = *map_of(self->a, pc);
	ASSERT_NE(0, m.build_id_len);
	for (int i = 0; i < m.build_id_len; i++)
		sprintf(hex + 2 * i, "%02x", m.build_id[i]);
	snprintf(fake, sizeof(fake), "%s/fake.c", self->dir);
	src = fopen(fake, "w");
	ASSERT_NE(NULL, src);
	/* One function covering every address the real library has. */
	fputs("void attacker_named(void) { __asm__ volatile(\".skip 1048576\"); }\n", src);
	fclose(src);
	snprintf(fake, sizeof(fake), "%s/libfake.so", self->dir);
	snprintf(cmd, sizeof(cmd), "cc -shared -fPIC -O0 -Wl,--build-id=0x%s -o %s %s/fake.c", hex, fake,
		 self->dir);
	ASSERT_EQ(0, system(cmd));
	forged = m;
	forged.path = fake;
	/* The forger's own frame is its business... */
	ASSERT_EQ(0, kpp_symbolizer__lookup(self->s, &forged, pc, &out));
	EXPECT_STREQ("attacker_named", out.name);
	/* ...but the real library, in this process and by path, keeps its names. */
	ASSERT_EQ(0, kpp_symbolizer__lookup_pid(self->s, getpid(), &m, pc, &out));
	EXPECT_STREQ("kpp_demo::Shop::checkout", out.name);
	ASSERT_EQ(0, kpp_symbolizer__lookup(self->s, &m, pc, &out));
	EXPECT_STREQ("kpp_demo::Shop::checkout", out.name);
}

/* A child running as nobody (once this returns), waiting for @wr to close. */
static pid_t start_nobody(int *wr)
{
	int p[2], q[2];
	pid_t pid;
	char c;

	if (pipe(p) || pipe(q))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		close(q[0]);
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(1);
		(void)!write(q[1], "u", 1);
		(void)!read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	close(q[1]);
	if (read(q[0], &c, 1) != 1)
		pid = -1;
	close(q[0]);
	*wr = p[1];
	return pid;
}

/*
 * claim_files - the test library twice: @pub/lib.so, anyone's to read, in
 * a fresh 0755 directory of /tmp (@pub: its path, the caller removes it);
 * and, when @secret is not NULL, @dir/secret/lib.so, root's only (0600 in
 * a 0700 directory), its path into @secret.  0, or -1.
 */
static int claim_files(const char *dir, char pub[64], char *secret, size_t len)
{
	char real[4096], cmd[8192];

	if (!realpath(lib_path(), real))
		return -1;
	strcpy(pub, "/tmp/kpprof-sym-pub.XXXXXX");
	if (!mkdtemp(pub))
		return -1;
	snprintf(cmd, sizeof(cmd), "chmod 755 %s && cp %s %s/lib.so && chmod 644 %s/lib.so",
		 pub, real, pub, pub);
	if (system(cmd))
		return -1;
	if (!secret)
		return 0;
	snprintf(cmd, sizeof(cmd), "mkdir -m 700 %s/secret && cp %s %s/secret/lib.so && "
		 "chmod 600 %s/secret/lib.so", dir, real, dir, dir);
	if (system(cmd))
		return -1;
	snprintf(secret, len, "%s/secret/lib.so", dir);
	return 0;
}

/*
 * Review M2: a record naming a range the producer never mapped, with a
 * path it cannot read (root-only), made root open it and read its symbols
 * for the producer.  Now a claim is opened with the producer's own
 * credentials: refused here, while a file it may read still works.
 */
TEST_F(sym, path_claim_opened_with_producer_rights)
{
	char cmd[8192], secret[4096], pub[64];
	struct kpp_map m = { .start = 0x7f0000000000ULL, .end = 0x7f0000100000ULL };
	struct kpp_sym out;
	int wr, status;
	pid_t child;

	if (geteuid())
		SKIP(return, "needs root (a child runs as nobody)");
	ASSERT_EQ(0, claim_files(self->dir, pub, secret, sizeof(secret)));
	child = start_nobody(&wr);
	ASSERT_LT(0, child);
	m.uid = 65534;		/* the producer: its records' uid */
	m.path = secret;
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup_pid(self->s, child, &m, m.start + 0x1200, &out))
		TH_LOG("root-only %s was read for a nobody process: %s", secret, out.name);
	snprintf(cmd, sizeof(cmd), "%s/lib.so", pub);
	m.path = cmd;
	m.start += 0x100000;
	m.end += 0x100000;
	EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, child, &m, m.start + 0x1200, &out))
		TH_LOG("a file nobody may read was refused");
	close(wr);
	waitpid(child, &status, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", pub);
	EXPECT_EQ(0, system(cmd));
}

/*
 * A loaded run of hostile_files_test: 2 x 5000 records naming one
 * root-only path, each a range never mapped, were each an attempt (a
 * helper thread, four opens) while the uid's token bucket refilled, and it
 * refills with wall time: the slower the collector, the more attempts.  A
 * refused (process, path) is now remembered: 1000 records of it cost one
 * attempt, so the uid's burst (KPP_SYM_CLAIMS_BURST) is still there for a
 * file it may read.  Before, the 1000 refusals spent the burst and the
 * readable claim was refused too.
 */
TEST_F(sym, refused_claim_tried_once)
{
	char cmd[8192], secret[4096], pub[64];
	struct kpp_map m = { .uid = 65534 };
	struct kpp_sym_stats st;
	struct kpp_sym out;
	int wr, status;
	pid_t child;

	if (geteuid())
		SKIP(return, "needs root (a child runs as nobody)");
	ASSERT_EQ(0, claim_files(self->dir, pub, secret, sizeof(secret)));
	child = start_nobody(&wr);
	ASSERT_LT(0, child);
	m.path = secret;
	for (int i = 0; i < 1000; i++) {
		m.start = 0x7e0000000000ULL + (uint64_t)i * 0x10000;
		m.end = m.start + 0x1000;
		kpp_symbolizer__prefetch(self->s, child, &m);
	}
	kpp_symbolizer__stats(self->s, &st);
	EXPECT_EQ(1000u, st.claims_refused);
	snprintf(cmd, sizeof(cmd), "%s/lib.so", pub);
	m.path = cmd;
	m.start = 0x7f0000000000ULL;
	m.end = m.start + 0x100000;
	EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, child, &m, m.start + 0x1200, &out))
		TH_LOG("a file nobody may read was refused after 1000 refusals of one path: "
		       "each refusal was tried and spent the uid's claims");
	close(wr);
	waitpid(child, &status, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", pub);
	EXPECT_EQ(0, system(cmd));
}

/*
 * A claim that failed for a reason of the moment (here EMFILE: the
 * collector out of descriptors; EAGAIN from pthread_create or ENOMEM
 * alike) says nothing about the path: it must not be remembered, or a
 * readable library's other mappings in that process stay nameless for
 * KPP_SYM_CLAIM_MEMO_S after the moment passed.
 */
TEST_F(sym, transient_claim_failure_not_remembered)
{
	char cmd[8192], pub[64];
	struct kpp_map m = { .uid = 65534 };
	struct rlimit old, low;
	struct kpp_sym out;
	int wr, status, fd;
	pid_t child;

	if (geteuid())
		SKIP(return, "needs root (a child runs as nobody)");
	ASSERT_EQ(0, claim_files(self->dir, pub, NULL, 0));
	child = start_nobody(&wr);
	ASSERT_LT(0, child);
	snprintf(cmd, sizeof(cmd), "%s/lib.so", pub);
	m.path = cmd;
	m.start = 0x7f0000000000ULL;
	m.end = m.start + 0x100000;
	/* No descriptor left: the lowest free one is the limit. */
	fd = dup(0);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	low = old;
	low.rlim_cur = fd;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &low));
	EXPECT_NE(0, kpp_symbolizer__lookup_pid(self->s, child, &m, m.start + 0x1200, &out));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	/* The moment passed: another mapping of the same library. */
	m.start += 0x200000;
	m.end += 0x200000;
	EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, child, &m, m.start + 0x1200, &out))
		TH_LOG("%s refused for 30 s after one EMFILE", m.path);
	close(wr);
	waitpid(child, &status, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", pub);
	EXPECT_EQ(0, system(cmd));
}

/*
 * Whom a mapping is charged to: its records' uid, stamped by the kernel.
 * The owner of /proc/PID is nobody's once the process is gone (the
 * collector reads records late), and every gone process shared one budget,
 * uid -1's: a user's records naming KPP_SYM_MAX_OBJECTS_UID build-ids,
 * read after its process exited, left no object for any other user's gone
 * process, and root's library, readable and of the right build-id, stayed
 * nameless (objects_refused).
 */
TEST_F(sym, gone_processes_charged_to_records_uid)
{
	uint64_t pc = (uintptr_t)dlsym(self->lib, "_ZN8kpp_demo4Shop8checkoutEi") + 8;
	struct kpp_map m = *map_of(self->a, pc), h = m;
	struct kpp_sym_stats st;
	char real[4096];
	struct kpp_sym out;
	pid_t gone[2];

	if (geteuid())
		SKIP(return, "needs root (nobody's rights are tried)");
	for (int i = 0; i < 2; i++) {
		gone[i] = fork();
		if (gone[i] == 0)
			_exit(0);
		ASSERT_LT(0, gone[i]);
		waitpid(gone[i], NULL, 0);
	}
	ASSERT_NE(0, m.build_id_len);
	ASSERT_NE(NULL, realpath(lib_path(), real));
	h.uid = 65534;
	h.path = "/nonexistent/lib.so";
	h.build_id_len = 20;
	for (int i = 0; i < KPP_SYM_MAX_OBJECTS_UID; i++) {
		memset(h.build_id, 0, sizeof(h.build_id));
		memcpy(h.build_id, &i, sizeof(i));
		h.start = 0x7e0000000000ULL + (uint64_t)i * 0x10000;
		h.end = h.start + 0x1000;
		kpp_symbolizer__prefetch(self->s, gone[0], &h);
	}
	kpp_symbolizer__stats(self->s, &st);
	EXPECT_EQ(0u, st.objects_refused);
	m.uid = 0;
	m.path = real;
	ASSERT_EQ(0, kpp_symbolizer__lookup_pid(self->s, gone[1], &m, pc, &out))
		TH_LOG("root's gone process left nameless: uid 65534's records spent its objects");
	EXPECT_STREQ("kpp_demo::Shop::checkout", out.name);
}

/*
 * The records' process is not the one under their pid any more: a reused
 * pid, or the producer exec'd a setuid program (ruid still the producer's).
 * Neither lends its credentials to the producer's claims: a root process
 * under the pid of a nobody producer opens nothing of its path.
 */
TEST_F(sym, path_claim_never_with_another_process_rights)
{
	char real[4096], cmd[8192], secret[4096];
	struct kpp_map m = { .start = 0x7f0000000000ULL, .end = 0x7f0000100000ULL, .uid = 65534 };
	struct kpp_sym out;
	int p[2], status;
	pid_t child;
	char c;

	if (geteuid())
		SKIP(return, "needs root (the pid's process runs as root)");
	ASSERT_NE(NULL, realpath(lib_path(), real));
	snprintf(cmd, sizeof(cmd), "mkdir -p -m 700 %s/secret && cp %s %s/secret/lib2.so && "
		 "chmod 600 %s/secret/lib2.so", self->dir, real, self->dir, self->dir);
	ASSERT_EQ(0, system(cmd));
	snprintf(secret, sizeof(secret), "%s/secret/lib2.so", self->dir);
	ASSERT_EQ(0, pipe(p));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		close(p[1]);
		(void)!read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	m.path = secret;
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup_pid(self->s, child, &m, m.start + 0x1200, &out))
		TH_LOG("root-only %s read for a nobody producer through a root process: %s",
		       secret, out.name);
	/* map_files too: the root process's own mapping of the test binary. */
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096], self_exe[4096];
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	struct kpp_map x = { .uid = 65534, .path = "/nonexistent/claim" };
	bool found = false;

	ASSERT_NE(NULL, f);
	ASSERT_LT(0, n);
	self_exe[n] = '\0';
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long a, b, off;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx", &a, &b, perms, &off) == 4 &&
		    perms[2] == 'x' && strstr(line, self_exe)) {
			x.start = a;
			x.end = b;
			x.offset = off;
			found = true;
		}
	}
	fclose(f);
	ASSERT_TRUE(found);
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup_pid(self->s, child, &x, x.start + 0x10, &out))
		TH_LOG("a root process's mapping named for a nobody producer: %s", out.name);
	close(p[1]);
	waitpid(child, &status, 0);
	/*
	 * The other way is no gain: a root producer's process that dropped to
	 * nobody (a daemon's worker) still has its mappings named.
	 */
	int wr;

	child = start_nobody(&wr);
	ASSERT_LT(0, child);
	x.uid = 0;
	EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, child, &x, x.start + 0x10, &out))
		TH_LOG("a worker that dropped root lost its names");
	close(wr);
	waitpid(child, &status, 0);
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 2;
}

/*
 * Review H3: every build-id-less MMAP record kept an fd open (20 000
 * records: 19 999 fds).  Prefetch 5000 claims of ranges never mapped,
 * naming one readable file, and 300 distinct real files: the fds stay
 * within the budget.
 */
TEST_F(sym, prefetch_flood_keeps_few_fds)
{
	char real[4096], cmd[8192], path[4096];
	struct kpp_map m = { 0 };
	int before = open_fds(), after;

	ASSERT_NE(NULL, realpath(lib_path(), real));
	m.path = real;
	for (int i = 0; i < 5000; i++) {
		m.start = 0x7e0000000000ULL + (uint64_t)i * 0x10000;
		m.end = m.start + 0x1000;
		kpp_symbolizer__prefetch(self->s, getpid(), &m);
	}
	snprintf(cmd, sizeof(cmd), "cd %s && for i in $(seq 300); do cp %s f$i.so; done", self->dir, real);
	ASSERT_EQ(0, system(cmd));
	for (int i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "%s/f%d.so", self->dir, i + 1);
		m.path = path;
		m.start = 0x7d0000000000ULL + (uint64_t)i * 0x10000;
		m.end = m.start + 0x1000;
		kpp_symbolizer__prefetch(self->s, getpid(), &m);
	}
	after = open_fds();
	TH_LOG("fds: %d before, %d after", before, after);
	EXPECT_GE(before + 257, after);
}

/*
 * Review H3: the mapping entries of one uid are capped, and what is
 * refused is counted (the profile comment shows kpp_symbolizer__stats).
 */
TEST_F(sym, mapping_cap_counted)
{
	struct kpp_map m = { .path = (char *)"/nonexistent/x.so" };
	struct kpp_sym_stats st;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < KPP_SYM_MAX_MAPPINGS_UID + 1000; i++) {
		m.start = 0x100000000ULL + (uint64_t)i * 0x1000;
		m.end = m.start + 0x1000;
		kpp_symbolizer__prefetch(self->s, 0, &m);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	kpp_symbolizer__stats(self->s, &st);
	TH_LOG("%d prefetches in %.2f s: %llu entries, %llu refused", KPP_SYM_MAX_MAPPINGS_UID + 1000,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	       (unsigned long long)st.mappings, (unsigned long long)st.mappings_refused);
	EXPECT_EQ(KPP_SYM_MAX_MAPPINGS_UID, st.mappings);
	EXPECT_EQ(1000u, st.mappings_refused);
}

/*
 * Review H3: MMAP records grew a process's mappings without bound (and the
 * dedupe scanned them all: quadratic).  Now at most 4096 are kept, the rest
 * counted in maps_refused (reported in the profile comment).
 */
TEST_F(sym, mappings_per_process_capped)
{
	struct kpp_agg *a = kpp_agg__new(NULL);
	const struct kpp_proc *p;
	struct timespec t0, t1;
	uint8_t no_id[1] = { 0 };

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 20000; i++)
		ASSERT_EQ(0, kpp_agg__add_map(a, 77, 0x10000000ULL + (uint64_t)i * 0x1000,
					      0x10001000ULL + (uint64_t)i * 0x1000, 0, no_id, 0,
					      "/x.so", false));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	p = kpp_agg__proc(a, 77);
	ASSERT_NE(NULL, p);
	TH_LOG("20000 MMAP records in %.2f s: %zu kept, %u refused",
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, p->nr_maps,
	       (unsigned int)p->maps_refused);
	EXPECT_EQ(4096u, p->nr_maps);
	EXPECT_EQ(20000u - 4096u, p->maps_refused);
	kpp_agg__free(a);
}

/*
 * A process already gone when its records are read: its mapping's path is
 * used only with the record's build-id and only if anyone may read the
 * file (a public library); a root-only copy is not.
 */
TEST_F(sym, gone_process_opened_as_its_uid)
{
	uint64_t pc = (uintptr_t)dlsym(self->lib, "_ZN8kpp_demo4Shop8checkoutEi") + 8;
	char real[4096], cmd[8192], secret[4096];
	struct kpp_map m = *map_of(self->a, pc);
	struct kpp_sym out;
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	ASSERT_LT(0, gone);
	waitpid(gone, NULL, 0);
	if (geteuid())
		SKIP(return, "needs root (nobody's rights are tried)");
	ASSERT_NE(0, m.build_id_len);
	ASSERT_NE(NULL, realpath(lib_path(), real));
	snprintf(cmd, sizeof(cmd), "mkdir -m 700 %s/s && cp %s %s/s/lib.so", self->dir, real, self->dir);
	ASSERT_EQ(0, system(cmd));
	snprintf(secret, sizeof(secret), "%s/s/lib.so", self->dir);
	m.path = secret;
	m.uid = 65534;	/* a producer that could not read it */
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup_pid(self->s, gone, &m, pc, &out));
	/* root's process could: opened with its records' uid (kpprof record's case) */
	m.uid = 0;
	m.end += 0x2000;	/* another mapping entry */
	EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, gone, &m, pc, &out));
	EXPECT_STREQ("kpp_demo::Shop::checkout", out.name);
	m.uid = 65534;
	m.end -= 0x2000;
	/* the public library itself (the worktree is readable by all here) */
	m.path = real;
	m.end += 0x1000;	/* another mapping entry */
	if (access(real, R_OK) == 0 && !system("su nobody -s /bin/sh -c 'true' 2>/dev/null")) {
		EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, gone, &m, pc, &out));
		EXPECT_STREQ("kpp_demo::Shop::checkout", out.name);
	}
}

/*
 * A process reaped while the symbolizer asks whether it is gone: its
 * /proc/PID/stat, opened before the reap, reads ESRCH after it.  That is
 * gone (its mapping is then opened by path, with the record's build-id);
 * taken for alive, the process's objects stayed nameless (startup_vm_test
 * "chain", 1 run in 20 after safety_vm_test: the grandchild's parent reaps
 * it just as its last records are read).
 */
TEST(proc_gone_reaped_while_asked)
{
	char path[64];
	siginfo_t si;
	pid_t child = fork();
	int fd;

	if (child == 0)
		_exit(0);
	ASSERT_LT(0, child);
	/* a zombie, not reaped yet */
	ASSERT_EQ(0, waitid(P_PID, child, &si, WEXITED | WNOWAIT));
	snprintf(path, sizeof(path), "/proc/%d/stat", child);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_TRUE(kpp_proc_stat_gone(fd)) TH_LOG("a zombie is gone");
	EXPECT_TRUE(kpp_proc_gone(child));
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	EXPECT_TRUE(kpp_proc_stat_gone(fd)) TH_LOG("reaped after its stat was opened: taken for alive");
	EXPECT_TRUE(kpp_proc_gone(child));
	close(fd);
	/* and a live one is not */
	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_FALSE(kpp_proc_stat_gone(fd));
	close(fd);
	EXPECT_FALSE(kpp_proc_gone(getpid()));
}

/*
 * A live process hidden from us (/proc mounted hidepid=invisible with a
 * gid= group we are not in, and no CAP_SYS_PTRACE) has no /proc/PID/stat
 * to open: that is not gone.  Taken for gone (review rgone2 B), its
 * claimed path was opened in our root.
 * The child that asks runs in a mount namespace of its own, so the host's
 * /proc is untouched.
 */
TEST(proc_gone_not_when_hidden)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	int go[2], st;
	pid_t victim, asker;

	if (geteuid())
		SKIP(return, "needs root (a process of another uid, a proc mount)");
	ASSERT_EQ(0, pipe(go));
	victim = fork();
	if (victim == 0) {
		char c;

		close(go[1]);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(1);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	ASSERT_LT(0, victim);
	close(go[0]);
	asker = fork();
	if (asker == 0) {
		struct stat sb;
		char path[64];

		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("proc", "/proc", "proc", 0, "hidepid=invisible,gid=65533"))
			_exit(10);
		if (syscall(SYS_capget, &h, d))
			_exit(11);
		d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
		d[CAP_SYS_PTRACE / 32].permitted &= ~(1u << (CAP_SYS_PTRACE % 32));
		if (syscall(SYS_capset, &h, d))
			_exit(11);
		snprintf(path, sizeof(path), "/proc/%d", victim);
		if (!stat(path, &sb) || kill(victim, 0))
			_exit(12);	/* not hidden, or not ours to signal: cannot ask */
		_exit(kpp_proc_gone(victim) ? 1 : 0);
	}
	ASSERT_LT(0, asker);
	ASSERT_EQ(asker, waitpid(asker, &st, 0));
	close(go[1]);
	ASSERT_EQ(victim, waitpid(victim, NULL, 0));
	ASSERT_TRUE(WIFEXITED(st));
	if (WEXITSTATUS(st) >= 10)
		SKIP(return, "cannot hide a process here (step %d: unshare/mount, capset, not hidden)",
		     WEXITSTATUS(st) - 9);
	EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("a live process hidden by hidepid taken for gone");
}

TEST_HARNESS_MAIN
