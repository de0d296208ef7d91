// SPDX-License-Identifier: GPL-2.0
/*
 * Processes that must not be profiled, though the shim is loaded into them
 * (system-wide capture puts it into every process through
 * /etc/ld.so.preload).  In each case the shim stays a pure pass-through.
 *
 *  - KPPROF_DISABLE=1 in the environment: checked before anything else,
 *    so the device is not even opened.
 *  - The collector itself: its executable exports the dynamic symbol
 *    kpprof_collector_process (user/kpprof/main.c); profiling it would feed
 *    its own allocations back into the ring it reads.  One look-up in
 *    the program's own symbol table at start-up (no syscall, no
 *    allocation), before the device is opened.
 *  - /etc/kpprof/exclude (KPPROF_EXCLUDE_FILE overrides the path, a test
 *    knob never opened through a symlink; a FIFO or other non-regular file
 *    is ignored, never waited for): one entry a line, '#' starts a comment, blanks are ignored.
 *    An entry starting with '/' is an executable's path, compared with
 *    /proc/self/exe's target; any other is a comm name, whose first 15
 *    bytes are compared with /proc/self/comm (what the kernel keeps of the
 *    program's name).  Read only once the device has opened, i.e. when
 *    the shim would otherwise profile: on a host without the module no
 *    process pays for it.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "shim.h"

#define EXCLUDE_FILE	"/etc/kpprof/exclude"
#define EXCLUDE_MAX	(64 * 1024)	/* read no more of it than this */
#define COMM_LEN	15		/* TASK_COMM_LEN - 1 */

/*
 * The main program's dynamic symbols, looked up in its own hash table
 * (dynsym.c).  dlsym(RTLD_DEFAULT) did this before issue 11, but a
 * symbol it does not find (every process but the collector) costs an
 * error message it mallocs: the process's first malloc, with the arena's
 * set-up and two brk(2), in processes that never allocate otherwise.
 */
struct exe_lookup {
	const char *name;
	int found;		/* 1 yes, 0 no, -1 cannot tell (no hash table) */
};

static int lookup_in_exe(struct dl_phdr_info *info, size_t size, void *data)
{
	struct exe_lookup *q = data;

	(void)size;
	q->found = kpp_dynsym_defines(info, q->name);
	return 1;	/* the first object is the program: stop */
}

static bool exe_defines(const char *name)
{
	struct exe_lookup q = { name, -1 };
	bool found;

	dl_iterate_phdr(lookup_in_exe, &q);
	if (q.found >= 0)
		return q.found;
	/*
	 * No hash table: ask the loader.  After kpp_resolve(): the
	 * dlerror() state dlsym allocates for a missing symbol comes from
	 * the real malloc.  Clear it, so the program's own dlerror() does
	 * not see our lookup.
	 */
	found = dlsym(RTLD_DEFAULT, name) != NULL;
	dlerror();
	return found;
}

bool kpp_opted_out(void)
{
	const char *s = kpp_getenv("KPPROF_DISABLE");

	if (s && !strcmp(s, "1")) {
		kpp_debug("pass-through: KPPROF_DISABLE=1");
		return true;
	}
	if (exe_defines("kpprof_collector_process")) {
		kpp_debug("pass-through: this is the kpprof collector");
		return true;
	}
	return false;
}

/*
 * read_small - up to @size - 1 bytes of the regular file @path,
 * NUL-terminated; -1 on error.  O_NONBLOCK and the type check: a FIFO named
 * there must not block the program in its constructor.
 */
static ssize_t read_small(const char *path, int flags, char *buf, size_t size)
{
	ssize_t n, got = 0;
	int fd = kpp_open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
	struct stat st;

	if (fd < 0)
		return -1;
	if (kpp_fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		kpp_close(fd);
		return -1;
	}
	while ((size_t)got < size - 1) {
		n = kpp_read(fd, buf + got, size - 1 - (size_t)got);
		if (n <= 0)
			break;
		got += n;
	}
	kpp_close(fd);
	buf[got] = 0;
	return got;
}

/* The process's comm and executable, read at the first entry that needs them. */
struct self_id {
	char comm[COMM_LEN + 2];
	char exe[PATH_MAX];
	int have_comm, have_exe;
};

static bool entry_matches(const char *e, size_t len, struct self_id *id)
{
	ssize_t n;

	if (e[0] == '/') {
		if (!id->have_exe) {
			id->have_exe = 1;
			n = kpp_readlink("/proc/self/exe", id->exe, sizeof(id->exe) - 1);
			id->exe[n > 0 ? n : 0] = 0;
		}
		return id->exe[0] && strlen(id->exe) == len && !memcmp(id->exe, e, len);
	}
	if (!id->have_comm) {
		id->have_comm = 1;
		n = read_small("/proc/self/comm", 0, id->comm, sizeof(id->comm));
		if (n > 0 && id->comm[n - 1] == '\n')
			id->comm[n - 1] = 0;
	}
	if (len > COMM_LEN)
		len = COMM_LEN;
	return id->comm[0] && strlen(id->comm) == len && !memcmp(id->comm, e, len);
}

bool kpp_excluded(void)
{
	static char buf[EXCLUDE_MAX];
	const char *path = kpp_getenv("KPPROF_EXCLUDE_FILE");
	struct self_id id = { .have_comm = 0 };
	char *line, *next, *end;
	int flags = O_NOFOLLOW;

	if (!path || !*path) {
		path = EXCLUDE_FILE;
		flags = 0;	/* the administrator's own file: may be a link */
	}
	if (read_small(path, flags, buf, sizeof(buf)) <= 0)
		return false;
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		end = strchr(line, '#');
		if (!end)
			end = line + strlen(line);
		while (*line == ' ' || *line == '\t')
			line++;
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			end--;
		if (end > line && entry_matches(line, (size_t)(end - line), &id)) {
			kpp_debug("pass-through: excluded by %s", path);
			return true;
		}
	}
	return false;
}
