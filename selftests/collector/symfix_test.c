// SPDX-License-Identifier: GPL-2.0
/*
 * symfix_test - the symbolizer on programs laid out as real ones are
 * (symfix/: 128 KiB of read-only tables, relocations before the text,
 * functions 64 KiB apart, an inlined call site, a shared library), linked
 * by GNU ld, gold, lld and mold, PIE and not, with each linker's layouts,
 * and found four ways:
 *   with_symbols        the binaries themselves (.symtab, DWARF);
 *   stripped_build_id   stripped binaries, their debug files under a debug
 *                       root's .build-id/ ($KPPROF_DEBUG_ROOT);
 *   stripped_debuglink  stripped binaries with .gnu_debuglink (the debug
 *                       file beside the program, in .debug/ for the library);
 *   debug_file_only     the process exited and its files were deleted:
 *                       only the mapping records and the debug files by
 *                       build-id are left (and, refused and counted, a
 *                       mapping whose bias the debug file cannot prove).
 * Each fixture prints the return addresses of calls made at known lines of
 * known functions and the addresses of its functions (symfix/probe.h: the
 * compiler's __func__ and __LINE__); every one must come back with that
 * function's name, and the calls with that file:line, the inlined one as
 * two frames (the inlined function at its line, then its caller at the
 * line of the call).
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <kselftest_harness.h>
#include <unistd.h>

#include "profile_write.h"
#include "test_rec.h"

#define MAX_RECS 32

/* One line of the fixture's output (symfix/probe.h). */
struct rec {
	bool call;		/* call RA FILE FUNC LINE [OUTER OUTER_LINE]; else addr ADDR FUNC */
	uint64_t addr;
	char file[PATH_MAX], fn[64], outer[64];
	int line, outer_line;
	struct kpp_map m;	/* the mapping holding addr, as read while it ran */
	char path[PATH_MAX];
};

enum way { WITH_SYMBOLS, STRIPPED_BUILD_ID, STRIPPED_DEBUGLINK, DEBUG_FILE_ONLY };

FIXTURE(symfix) {
	char fix[PATH_MAX];	/* symfix/out/NAME */
	char tmp[64];
	struct kpp_symbolizer *s;
	struct rec recs[MAX_RECS];
	int nr;
	pid_t pid;
	int in;		/* the fixture's stdin while it runs, else -1 */
};

FIXTURE_VARIANT(symfix) {
	const char *name;
	/*
	 * The layout the fixture must have, or the test proves less than it
	 * says: the program's text mapping starts past 64 KiB of its file
	 * (read-only data or relocations before it), and how many PT_LOAD
	 * segments it has.
	 */
	bool text_past_64k;
	int loads;
};

#define V(id, n, far, l) \
	FIXTURE_VARIANT_ADD(symfix, id) { .name = n, .text_past_64k = far, .loads = l }
V(bfd_pie, "bfd-pie", true, 4);
V(bfd_pie_nosep, "bfd-pie-nosep", false, 2);
V(bfd_nopie, "bfd-nopie", false, 4);
V(bfd_nopie_nosep, "bfd-nopie-nosep", false, 2);
V(gold_pie, "gold-pie", false, 2);
V(gold_pie_roseg, "gold-pie-roseg", false, 3);
V(gold_nopie, "gold-nopie", false, 2);
V(lld_pie, "lld-pie", true, 4);
V(lld_pie_sep, "lld-pie-sep", true, 4);
V(lld_nopie, "lld-nopie", true, 4);
V(lld_nopie_sep, "lld-nopie-sep", true, 4);
V(mold_pie, "mold-pie", true, 4);
V(mold_pie_sep, "mold-pie-sep", true, 4);
V(mold_nopie, "mold-nopie", true, 4);

FIXTURE_SETUP(symfix)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	ASSERT_LT(0, n);
	exe[n] = '\0';
	/* The fixtures are built beside this program (the Makefile). */
	snprintf(self->fix, sizeof(self->fix), "%s/symfix/out/%s", dirname(exe), variant->name);
	snprintf(exe, sizeof(exe), "%s/prog", self->fix);
	ASSERT_EQ(0, access(exe, X_OK)) TH_LOG("%s not built (make -C selftests/collector)", exe);
	strcpy(self->tmp, "/tmp/kpprof-symfix.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->tmp));
	snprintf(exe, sizeof(exe), "%s/empty", self->tmp);
	ASSERT_EQ(0, mkdir(exe, 0755));
	unsetenv("DEBUGINFOD_URLS");
	self->s = kpp_symbolizer__new();
	ASSERT_NE(NULL, self->s);
	self->pid = -1;
	self->in = -1;
}

static void stop_fixture(FIXTURE_DATA(symfix) *self)
{
	if (self->in < 0)
		return;
	close(self->in);
	self->in = -1;
	waitpid(self->pid, NULL, 0);
}

FIXTURE_TEARDOWN(symfix)
{
	char cmd[128];

	stop_fixture(self);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->tmp);
	if (system(cmd))
		TH_LOG("cannot remove %s", self->tmp);
	kpp_symbolizer__free(self->s);
	unsetenv("KPPROF_DEBUG_ROOT");
}

static int parse(const char *line, struct rec *r)
{
	char kind[8], outer[64];
	unsigned long long a;
	int n;

	memset(r, 0, sizeof(*r));
	if (sscanf(line, "%7s %llx", kind, &a) != 2)
		return -1;
	r->addr = a;
	if (!strcmp(kind, "addr"))
		return sscanf(line, "%*s %*s %63s", r->fn) == 1 ? 0 : -1;
	if (strcmp(kind, "call"))
		return -1;
	r->call = true;
	n = sscanf(line, "%*s %*s %4095s %63s %d %63s %d", r->file, r->fn, &r->line, outer,
		   &r->outer_line);
	if (n == 5)
		strcpy(r->outer, outer);
	return n == 3 || n == 5 ? 0 : -1;
}

/*
 * Run @prog; read its records up to "end", and each one's mapping from its
 * /proc/PID/maps while it waits (until stop_fixture()).
 */
static int run_fixture(struct __test_metadata *_metadata, FIXTURE_DATA(symfix) *self,
		       const char *prog)
{
	int in[2], out[2];
	struct kpp_agg *a;
	const struct kpp_proc *p;
	char line[PATH_MAX + 256];
	FILE *f;

	if (pipe(in) || pipe(out))
		return -1;
	self->pid = fork();
	if (self->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(prog, prog, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	self->in = in[1];
	f = fdopen(out[0], "r");
	if (!f)
		return -1;
	self->nr = 0;
	while (fgets(line, sizeof(line), f) && strncmp(line, "end ", 4)) {
		if (self->nr == MAX_RECS || parse(line, &self->recs[self->nr])) {
			TH_LOG("%s: bad line %s", prog, line);
			fclose(f);
			return -1;
		}
		self->nr++;
	}
	fclose(f);
	a = kpp_agg__new(NULL);
	if (!a || kpp_proc__read_maps(a, self->pid) <= 0) {
		kpp_agg__free(a);
		return -1;
	}
	p = kpp_agg__proc(a, self->pid);
	for (int i = 0; i < self->nr; i++) {
		struct rec *r = &self->recs[i];
		const struct kpp_map *m = kpp_proc__map_for(p, r->addr);

		if (!m) {
			TH_LOG("%s: no mapping holds %#" PRIx64, prog, r->addr);
			kpp_agg__free(a);
			return -1;
		}
		r->m = *m;
		snprintf(r->path, sizeof(r->path), "%s", m->path);
		r->m.path = r->path;
	}
	kpp_agg__free(a);
	return 0;
}

static const char *base(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;

	return b ? b + 1 : path ? path : "(null)";
}

/* The layout the variant promises (see FIXTURE_VARIANT): from the real program. */
static void check_layout(struct __test_metadata *_metadata, FIXTURE_DATA(symfix) *self,
			 const FIXTURE_VARIANT(symfix) *variant)
{
	char cmd[PATH_MAX + 64];
	int loads = -1;
	FILE *f;

	for (int i = 0; i < self->nr; i++) {
		const struct rec *r = &self->recs[i];

		if (!r->call || strcmp(base(r->path), "prog") || strcmp(r->fn, "prog_last"))
			continue;
		TH_LOG("%s: prog_last at file offset %#" PRIx64 " + %#" PRIx64, variant->name,
		       r->m.offset, r->addr - r->m.start);
		EXPECT_EQ(variant->text_past_64k, r->m.offset >= 0x10000);
		/* 64 KiB of text before it: it is far from the start of its mapping */
		EXPECT_LE(0x10000, r->addr - r->m.start);
	}
	snprintf(cmd, sizeof(cmd), "readelf -lW %s/prog | grep -c '^ *LOAD'", self->fix);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(1, fscanf(f, "%d", &loads));
	pclose(f);
	EXPECT_EQ(variant->loads, loads);
}

/* Every record's address must come back with its function (and call's line). */
static void check_names(struct __test_metadata *_metadata, FIXTURE_DATA(symfix) *self,
			const char *how)
{
	for (int i = 0; i < self->nr; i++) {
		const struct rec *r = &self->recs[i];
		/* kpp_symbolizer__lookup_pid looks up addr - 1 (a return address) */
		uint64_t a = r->call ? r->addr : r->addr + 1;
		const char *want = r->outer[0] ? r->outer : r->fn;
		struct kpp_sym out;
		int err;

		memset(&out, 0, sizeof(out));
		err = kpp_symbolizer__lookup_pid(self->s, self->pid, &r->m, a, &out);
		EXPECT_EQ(0, err) TH_LOG("%s: %s %#" PRIx64 " (%s): not found", how, r->fn,
					 r->addr, base(r->path));
		if (err)
			continue;
		EXPECT_STREQ(want, out.name) TH_LOG("%s: %#" PRIx64 " in %s", how, r->addr,
						    base(r->path));
		if (!r->call)
			continue;
		EXPECT_TRUE(out.has_lines) TH_LOG("%s: %s: no DWARF lines", how, r->fn);
		for (unsigned int k = 0; k < out.nr_frames; k++)
			TH_LOG("%s: %s frame %u: %s %s:%lld", how, r->fn, k, out.frames[k].name,
			       base(out.frames[k].file), (long long)out.frames[k].line);
		EXPECT_EQ(r->outer[0] ? 2u : 1u, out.nr_frames) TH_LOG("%s: %s", how, r->fn);
		if (out.nr_frames != (r->outer[0] ? 2u : 1u))
			continue;
		EXPECT_STREQ(r->fn, out.frames[0].name);
		EXPECT_STREQ(base(r->file), base(out.frames[0].file));
		EXPECT_EQ(r->line, out.frames[0].line) TH_LOG("%s: %s", how, r->fn);
		if (r->outer[0]) {
			EXPECT_STREQ(r->outer, out.frames[1].name);
			EXPECT_STREQ(base(r->file), base(out.frames[1].file));
			EXPECT_EQ(r->outer_line, out.frames[1].line) TH_LOG("%s: %s", how, r->outer);
		}
	}
}

static const char *const how[] = { "with symbols", "stripped + build-id debug file",
				   "stripped + .gnu_debuglink", "debug file only" };

/*
 * Run the fixture as @way says and read its records and mappings; for
 * DEBUG_FILE_ONLY, then end it and delete its files.
 */
static void run_way(struct __test_metadata *_metadata, FIXTURE_DATA(symfix) *self,
		    const FIXTURE_VARIANT(symfix) *variant, enum way way)
{
	char prog[PATH_MAX + 64], root[PATH_MAX + 64], cmd[3 * PATH_MAX];

	switch (way) {
	case WITH_SYMBOLS:
		snprintf(prog, sizeof(prog), "%s/prog", self->fix);
		snprintf(root, sizeof(root), "%s/empty", self->tmp);
		break;
	case STRIPPED_BUILD_ID:
		snprintf(prog, sizeof(prog), "%s/stripped/prog", self->fix);
		snprintf(root, sizeof(root), "%s/root", self->fix);
		break;
	case STRIPPED_DEBUGLINK:
		snprintf(prog, sizeof(prog), "%s/linked/prog", self->fix);
		snprintf(root, sizeof(root), "%s/empty", self->tmp);
		break;
	case DEBUG_FILE_ONLY:
		/* copies, deleted once the process is gone */
		snprintf(cmd, sizeof(cmd), "mkdir %s/run && cp %s/stripped/prog %s/stripped/libsymfix.so %s/run/",
			 self->tmp, self->fix, self->fix, self->tmp);
		ASSERT_EQ(0, system(cmd));
		snprintf(prog, sizeof(prog), "%s/run/prog", self->tmp);
		snprintf(root, sizeof(root), "%s/root", self->fix);
		break;
	}
	setenv("KPPROF_DEBUG_ROOT", root, 1);
	ASSERT_EQ(0, run_fixture(_metadata, self, prog)) TH_LOG("%s did not run", prog);
	EXPECT_EQ(18, self->nr) TH_LOG("%s: %d records", prog, self->nr);
	if (way == WITH_SYMBOLS)
		check_layout(_metadata, self, variant);
	if (way == DEBUG_FILE_ONLY) {
		stop_fixture(self);
		snprintf(cmd, sizeof(cmd), "rm -r %s/run", self->tmp);
		ASSERT_EQ(0, system(cmd));
	}
}

static void check_way(struct __test_metadata *_metadata, FIXTURE_DATA(symfix) *self,
		      const FIXTURE_VARIANT(symfix) *variant, enum way way)
{
	run_way(_metadata, self, variant, way);
	check_names(_metadata, self, how[way]);
	stop_fixture(self);
}

TEST_F(symfix, with_symbols)
{
	check_way(_metadata, self, variant, WITH_SYMBOLS);
}

TEST_F(symfix, stripped_build_id)
{
	check_way(_metadata, self, variant, STRIPPED_BUILD_ID);
}

TEST_F(symfix, stripped_debuglink)
{
	check_way(_metadata, self, variant, STRIPPED_DEBUGLINK);
}

TEST_F(symfix, debug_file_only)
{
	check_way(_metadata, self, variant, DEBUG_FILE_ONLY);
}

/*
 * Debug file only, and a mapping that is not one whole executable segment:
 * a piece of it (as after an mprotect of part of the text), or for an
 * ET_EXEC a place other than its vaddrs.  The bias cannot be proven from
 * the debug file, so nothing is named (a guess would name some function),
 * and the refusal is counted once per mapping.
 */
TEST_F(symfix, debug_file_only_unprovable_refused)
{
	const struct rec *r = NULL;
	struct kpp_sym_stats st;
	struct kpp_sym out;
	struct kpp_map m;
	uint64_t refused = 0;

	run_way(_metadata, self, variant, DEBUG_FILE_ONLY);
	for (int i = 0; i < self->nr && !r; i++)
		if (self->recs[i].call && !strcmp(self->recs[i].fn, "prog_first"))
			r = &self->recs[i];
	ASSERT_NE(NULL, r);
	/* prog_first is in the mapping's first 64 KiB: still inside a piece */
	ASSERT_LT(r->addr + 0x1000, r->m.end);
	m = r->m;
	m.end -= 0x1000;
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup_pid(self->s, self->pid, &m, r->addr, &out))
		TH_LOG("a piece of the text mapping named %#" PRIx64 " %s", r->addr, out.name);
	EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup_pid(self->s, self->pid, &m, r->addr, &out));
	refused++;
	if (strstr(variant->name, "nopie")) {
		m = r->m;
		m.start += 0x1000;
		m.end += 0x1000;
		EXPECT_EQ(-ENOENT, kpp_symbolizer__lookup_pid(self->s, self->pid, &m,
							      r->addr + 0x1000, &out))
			TH_LOG("an ET_EXEC a page off its vaddr named %s", out.name);
		refused++;
	}
	kpp_symbolizer__stats(self->s, &st);
	EXPECT_EQ(refused, st.debug_bias_refused);
	/* the whole mapping, as the loader made it, still resolves */
	EXPECT_EQ(0, kpp_symbolizer__lookup_pid(self->s, self->pid, &r->m, r->addr, &out));
	EXPECT_STREQ("prog_first", out.name);
	kpp_symbolizer__stats(self->s, &st);
	EXPECT_EQ(refused, st.debug_bias_refused);
}

TEST_HARNESS_MAIN
