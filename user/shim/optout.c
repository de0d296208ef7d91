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
 *    its own allocations back into the ring it reads.  One dlsym() at
 *    start-up, before the device is opened.
 *  - /etc/kpprof/exclude (KPPROF_EXCLUDE_FILE overrides the path, a test
 *    knob): one entry a line, '#' starts a comment, blanks are ignored.
 *    An entry starting with '/' is an executable's path, compared with
 *    /proc/self/exe's target; any other is a comm name, whose first 15
 *    bytes are compared with /proc/self/comm (what the kernel keeps of the
 *    program's name).  Read only once the device has opened, i.e. when
 *    the shim would otherwise profile: on a host without the module no
 *    process pays for it.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "shim.h"

#define EXCLUDE_FILE	"/etc/kpprof/exclude"
#define EXCLUDE_MAX	(64 * 1024)	/* read no more of it than this */
#define COMM_LEN	15		/* TASK_COMM_LEN - 1 */

bool kpp_opted_out(void)
{
	const char *s = getenv("KPPROF_DISABLE");

	if (s && !strcmp(s, "1")) {
		kpp_debug("pass-through: KPPROF_DISABLE=1");
		return true;
	}
	/*
	 * After kpp_resolve(): the dlerror() state dlsym allocates for a
	 * missing symbol comes from the real malloc.  Clear it, so the
	 * program's own dlerror() does not see our lookup.
	 */
	if (dlsym(RTLD_DEFAULT, "kpprof_collector_process")) {
		kpp_debug("pass-through: this is the kpprof collector");
		return true;
	}
	dlerror();
	return false;
}

/* read_small - up to @size - 1 bytes of @path, NUL-terminated; -1 on error. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)got < size - 1) {
		n = read(fd, buf + got, size - 1 - (size_t)got);
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
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
			n = readlink("/proc/self/exe", id->exe, sizeof(id->exe) - 1);
			id->exe[n > 0 ? n : 0] = 0;
		}
		return id->exe[0] && strlen(id->exe) == len && !memcmp(id->exe, e, len);
	}
	if (!id->have_comm) {
		id->have_comm = 1;
		n = read_small("/proc/self/comm", id->comm, sizeof(id->comm));
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
	const char *path = getenv("KPPROF_EXCLUDE_FILE");
	struct self_id id = { .have_comm = 0 };
	char *line, *next, *end;

	if (!path || !*path)
		path = EXCLUDE_FILE;
	if (read_small(path, buf, sizeof(buf)) <= 0)
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
