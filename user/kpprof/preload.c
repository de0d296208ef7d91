// SPDX-License-Identifier: GPL-2.0
/*
 * preload.c - `kpprof enable` / `kpprof disable`: system-wide capture, by
 * adding the shim to /etc/ld.so.preload (or removing it), so every program
 * started afterwards loads it without LD_PRELOAD.
 *
 * ld.so.preload is read by the dynamic loader of every process, setuid ones
 * included, so a bad entry breaks or subverts the whole machine.  Hence:
 *  - enable refuses a shim that is not an absolute path to a regular file
 *    owned by root and writable by no one else along its whole path (else
 *    whoever can write it runs code in every process), and a shim that does
 *    not load: /bin/true is run with LD_PRELOAD=shim under the loader's
 *    trace mode (the shim must be among the loaded objects, every symbol
 *    bound) and for real (it must exit 0 and the loader print nothing);
 *  - the file is rewritten atomically: a temporary file in the same
 *    directory, fsync, rename, fsync of the directory, under an flock of
 *    the directory against a concurrent enable/disable.  A reader sees the
 *    old or the new file, never half of one, even after a crash;
 *  - other entries, comments and blank lines are kept byte for byte; the
 *    file is removed when disable leaves nothing in it but white space.
 * The loader's syntax (glibc elf/rtld.c): names separated by white space or
 * ':', '#' comments to the end of the line.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "verbs.h"

#define DEFAULT_PRELOAD "/etc/ld.so.preload"
#define SHIM_NAME "libkpprof.so"
#define CHECK_PROGRAM "/bin/true"
#define MAX_PRELOAD_SIZE (1 << 20)

#ifndef KPPROF_MULTIARCH
#define KPPROF_MULTIARCH ""
#endif

struct preload_opts {
	const char *file;	/* the preload file */
	const char *shim;	/* NULL: default */
	bool dry_run;
};

static void preload_usage(FILE *f, const char *verb)
{
	fprintf(f,
		"Usage: kpprof %s [--shim PATH] [--preload-file FILE] [--dry-run]\n"
		"%s\n"
		"  --shim PATH          the shim (default: the installed one,\n"
		"                       ../lib/%s/kpprof/%s beside this program)\n"
		"  --preload-file FILE  default " DEFAULT_PRELOAD "\n"
		"  --dry-run            print the new file instead of writing it\n",
		verb,
		strcmp(verb, "enable") ?
		"Removes the shim from the preload file (without --shim: every entry\n"
		"named " SHIM_NAME "); programs started afterwards run without it."
		"  Running\nprograms keep it until they exit." :
		"Adds the shim to the preload file: every program started afterwards\n"
		"loads it (system-wide capture).  The shim is first tried on "
		CHECK_PROGRAM ";\na shim that does not load is refused.",
		KPPROF_MULTIARCH[0] ? KPPROF_MULTIARCH : "<multiarch>", SHIM_NAME);
}

/* The installed shim: BINDIR/../lib/<multiarch>/kpprof/libkpprof.so, or
 * BINDIR/../lib/kpprof/libkpprof.so, found from this program's own path so
 * that any PREFIX works without rebuilding. */
static int default_shim(char *out, size_t len)
{
	static const char *const rel[] = {
		"../lib/" KPPROF_MULTIARCH "/kpprof/" SHIM_NAME,
		"../lib/kpprof/" SHIM_NAME,
	};
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		*(strrchr(self, '/') + 1) = '\0';
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(path, sizeof(path), "%s%s", self, rel[i]);
			if (!access(path, R_OK) && realpath(path, out))
				return 0;
		}
	}
	(void)len;
	fprintf(stderr, "kpprof: no installed %s beside %s (looked in ../lib/%s/kpprof/); "
		"give --shim PATH\n", SHIM_NAME, n > 0 ? self : "this program", KPPROF_MULTIARCH);
	return -1;
}

/*
 * Whoever can write the shim, or rename something over it or over one of
 * its directories, runs code in every process: each component of its real
 * path must belong to root and be writable by no one else, except a sticky
 * directory (/tmp), where only the owner of an entry may replace it.
 * @shim is resolved once, here, into @real, and that is the path the
 * caller checks further and writes: a symlink on the way (in a user's
 * directory) could be repointed afterwards; the resolved path cannot.
 */
static int check_owner(const char *shim, char real[PATH_MAX])
{
	char path[PATH_MAX];
	struct stat st;
	size_t len;

	if (!realpath(shim, real)) {
		fprintf(stderr, "kpprof enable: %s: %s\n", shim, strerror(errno));
		return -1;
	}
	len = strlen(real);
	for (size_t i = 1; i <= len; i++) {
		if (i < len && real[i] != '/')
			continue;
		memcpy(path, real, i);
		path[i] = '\0';
		/* lstat: a component that became a symlink since realpath is refused. */
		if (lstat(path, &st)) {
			fprintf(stderr, "kpprof enable: %s: %s\n", path, strerror(errno));
			return -1;
		}
		if (S_ISLNK(st.st_mode)) {
			fprintf(stderr, "kpprof enable: %s changed while it was checked\n", path);
			return -1;
		}
		if (i == len && !S_ISREG(st.st_mode)) {
			fprintf(stderr, "kpprof enable: %s is not a regular file\n", real);
			return -1;
		}
		if (st.st_uid != 0) {
			fprintf(stderr, "kpprof enable: %s belongs to uid %u, not root: whoever "
				"owns it could run code in every process\n", path, st.st_uid);
			return -1;
		}
		if ((st.st_mode & 022) && !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX))) {
			fprintf(stderr, "kpprof enable: %s is writable by group or others "
				"(mode %04o): they could run code in every process\n",
				path, st.st_mode & 07777);
			return -1;
		}
	}
	return 0;
}

/* Run CHECK_PROGRAM with the shim preloaded; capture its stderr and stdout. */
static int run_with_shim(const char *shim, bool trace, char *out, size_t outlen, int *status)
{
	int pipefd[2];
	size_t got = 0;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (!pid) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		setenv("LD_PRELOAD", shim, 1);
		unsetenv("KPPROF_DISABLE");
		unsetenv("KPPROF_DEBUG");
		if (trace) {
			setenv("LD_TRACE_LOADED_OBJECTS", "1", 1);
			setenv("LD_WARN", "1", 1);
			setenv("LD_BIND_NOW", "1", 1);
		}
		execl(CHECK_PROGRAM, CHECK_PROGRAM, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	for (;;) {
		ssize_t n = read(pipefd[0], out + got, outlen - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
		if (got == outlen - 1)
			break;
	}
	out[got] = '\0';
	close(pipefd[0]);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

static int check_loads(const char *shim)
{
	char out[16384];
	int status;

	if (run_with_shim(shim, true, out, sizeof(out), &status)) {
		fprintf(stderr, "kpprof enable: cannot run %s: %s\n", CHECK_PROGRAM, strerror(errno));
		return -1;
	}
	/* trace mode lists "\t/path/libkpprof.so (0x...)" for a loaded preload */
	if (!WIFEXITED(status) || WEXITSTATUS(status) || !strstr(out, shim) ||
	    strstr(out, "ERROR") || strstr(out, "undefined symbol") || strstr(out, "not found")) {
		fprintf(stderr, "kpprof enable: %s does not load into %s; refusing:\n%s",
			shim, CHECK_PROGRAM, out);
		return -1;
	}
	if (run_with_shim(shim, false, out, sizeof(out), &status)) {
		fprintf(stderr, "kpprof enable: cannot run %s: %s\n", CHECK_PROGRAM, strerror(errno));
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) || out[0]) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "kpprof enable: %s with %s preloaded died of signal %d; refusing\n",
				CHECK_PROGRAM, shim, WTERMSIG(status));
		else
			fprintf(stderr, "kpprof enable: %s with %s preloaded exited %d%s; refusing\n%s",
				CHECK_PROGRAM, shim, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
				out[0] ? " and printed" : "", out);
		return -1;
	}
	return 0;
}

/* The whole preload file, or an empty string if it does not exist. */
static char *read_preload(const char *file, struct stat *st, bool *exists)
{
	char *buf;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	*exists = fd >= 0;
	if (fd < 0) {
		if (errno != ENOENT) {
			fprintf(stderr, "kpprof: %s: %s\n", file, strerror(errno));
			return NULL;
		}
		return calloc(1, 1);
	}
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_size > MAX_PRELOAD_SIZE) {
		fprintf(stderr, "kpprof: %s: not a regular file of at most 1 MiB\n", file);
		close(fd);
		return NULL;
	}
	buf = malloc(st->st_size + 1);
	while (buf && got < (size_t)st->st_size) {
		ssize_t n = read(fd, buf + got, st->st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	if (buf)
		buf[got] = '\0';
	return buf;
}

static bool is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == ':' || c == '\r';
}

static bool entry_matches(const char *entry, size_t len, const char *shim)
{
	size_t n = strlen(SHIM_NAME);

	if (shim)
		return strlen(shim) == len && !memcmp(entry, shim, len);
	return len >= n && !memcmp(entry + len - n, SHIM_NAME, n) &&
	       (len == n || entry[len - n - 1] == '/');
}

/*
 * Copy @in to @out without the entries that match; a line that held only
 * removed entries (and separators) goes away with its newline, or, as the
 * last line without one, with the newline before it (enable adds one there
 * to a file that does not end in a newline).  Returns the number of entries
 * removed.
 */
static int remove_entries(const char *in, char *out, const char *shim)
{
	char *start = out;
	int removed = 0;

	while (*in) {
		const char *eol = strchr(in, '\n');
		const char *end = eol ? eol : in + strlen(in);
		const char *comment = memchr(in, '#', end - in);
		const char *stop = comment ? comment : end;
		char *line = out;
		bool kept = false, dropped = false;

		for (const char *p = in; p < stop;) {
			const char *q = p;

			while (q < stop && !is_sep(*q))
				q++;
			if (q > p && entry_matches(p, q - p, shim)) {
				removed++;
				dropped = true;
				p = q;
				while (p < stop && is_sep(*p))	/* its separator goes too */
					p++;
				continue;
			}
			if (q > p)
				kept = true;
			while (q < stop && is_sep(*q))
				q++;
			memcpy(out, p, q - p);
			out += q - p;
			p = q;
		}
		memcpy(out, stop, end - stop);
		out += end - stop;
		if (dropped && !kept && !comment) {
			out = line;		/* nothing left on this line */
			if (!eol && out > start && out[-1] == '\n')
				out--;
		} else if (eol) {
			*out++ = '\n';
		}
		in = eol ? eol + 1 : end;
	}
	*out = '\0';
	return removed;
}

static bool only_space(const char *s)
{
	for (; *s; s++)
		if (!is_sep(*s))
			return false;
	return true;
}

/* Replace @file by @text atomically; remove it when @text is NULL. */
static int write_preload(const char *file, const char *text, const struct stat *old, bool existed)
{
	char *dirbuf = strdup(file), tmp[PATH_MAX];
	const char *dir = dirname(dirbuf);
	int dfd = -1, fd = -1, ret = -1;
	size_t len, done = 0;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "kpprof: %s: %s\n", dir, strerror(errno));
		goto out;
	}
	if (!text) {
		if (unlink(file) && errno != ENOENT) {
			fprintf(stderr, "kpprof: cannot remove %s: %s\n", file, strerror(errno));
			goto out;
		}
		ret = fsync(dfd);
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "%s.kpprof-XXXXXX", file);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "kpprof: cannot create a temporary file beside %s: %s\n",
			file, strerror(errno));
		goto out;
	}
	if (fchmod(fd, existed ? old->st_mode & 07777 : 0644) ||
	    (existed && fchown(fd, old->st_uid, old->st_gid)))
		goto fail;
	len = strlen(text);
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		done += n;
	}
	if (fsync(fd) || close(fd))
		goto fail_closed;
	fd = -1;
	if (rename(tmp, file))
		goto fail_closed;
	ret = fsync(dfd);
	goto out;
fail:
	close(fd);
	fd = -1;
fail_closed:
	fprintf(stderr, "kpprof: cannot write %s: %s\n", file, strerror(errno));
	unlink(tmp);
out:
	if (dfd >= 0)
		close(dfd);
	free(dirbuf);
	return ret;
}

/* An flock on the directory serializes concurrent enable/disable runs. */
static int lock_dir(const char *file)
{
	char *dirbuf = strdup(file);
	int fd = dirbuf ? open(dirname(dirbuf), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

	free(dirbuf);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		fprintf(stderr, "kpprof: cannot lock the directory of %s: %s\n", file, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int parse_opts(int argc, char *argv[], const char *verb, struct preload_opts *o)
{
	static const struct option opts[] = {
		{ "shim", required_argument, NULL, 's' },
		{ "preload-file", required_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	o->file = DEFAULT_PRELOAD;
	o->shim = NULL;
	o->dry_run = false;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			o->shim = optarg;
			break;
		case 'f':
			o->file = optarg;
			break;
		case 'n':
			o->dry_run = true;
			break;
		case 'h':
			preload_usage(stdout, verb);
			exit(0);
		default:
			preload_usage(stderr, verb);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "kpprof %s: unexpected argument '%s'\n", verb, argv[optind]);
		return -1;
	}
	if (o->shim && o->shim[0] != '/') {
		fprintf(stderr, "kpprof %s: --shim wants an absolute path (the loader reads it "
			"from every directory)\n", verb);
		return -1;
	}
	return 0;
}

int enable_main(int argc, char *argv[])
{
	struct preload_opts o;
	char given[PATH_MAX], shim[PATH_MAX], *old, *text;
	struct stat st = { 0 };
	bool exists;
	int lock, ret = 1;

	if (parse_opts(argc, argv, "enable", &o))
		return 2;
	if (o.shim)
		snprintf(given, sizeof(given), "%s", o.shim);
	else if (default_shim(given, sizeof(given)))
		return 1;
	/* From here on only the resolved path: the one checked is the one written. */
	if (check_owner(given, shim))
		return 1;
	if (strpbrk(shim, " \t\n:#")) {
		fprintf(stderr, "kpprof enable: %s: the loader splits names at white space, ':' "
			"and '#'\n", shim);
		return 1;
	}
	if (check_loads(shim))
		return 1;
	if (access("/dev/kpprof", F_OK))
		fprintf(stderr, "kpprof enable: warning: /dev/kpprof is missing (modprobe kpprof): "
			"until it exists the shim passes every call through\n");
	lock = lock_dir(o.file);
	if (lock < 0)
		return 1;
	old = read_preload(o.file, &st, &exists);
	if (!old)
		goto out;
	text = malloc(strlen(old) * 2 + 1);
	if (!text)
		goto out_old;
	if (remove_entries(old, text, shim)) {
		printf("kpprof enable: %s is already in %s\n", shim, o.file);
		ret = 0;
		goto out_text;
	}
	free(text);
	text = malloc(strlen(old) + strlen(shim) + 3);
	if (!text)
		goto out_old;
	/* After a last line without a newline: "\nSHIM", which disable undoes. */
	strcpy(text, old);
	if (*text && text[strlen(text) - 1] != '\n') {
		strcat(text, "\n");
		strcat(text, shim);
	} else {
		strcat(text, shim);
		strcat(text, "\n");
	}
	if (o.dry_run) {
		fputs(text, stdout);
		ret = 0;
	} else if (!write_preload(o.file, text, &st, exists)) {
		printf("kpprof enable: added %s to %s: programs started from now on load it\n",
		       shim, o.file);
		ret = 0;
	}
out_text:
	free(text);
out_old:
	free(old);
out:
	close(lock);
	return ret;
}

int disable_main(int argc, char *argv[])
{
	struct preload_opts o;
	struct stat st = { 0 };
	char *old, *text;
	bool exists;
	int lock, removed, ret = 1;

	if (parse_opts(argc, argv, "disable", &o))
		return 2;
	lock = lock_dir(o.file);
	if (lock < 0)
		return 1;
	old = read_preload(o.file, &st, &exists);
	if (!old)
		goto out;
	text = malloc(strlen(old) + 1);
	if (!text)
		goto out_old;
	removed = remove_entries(old, text, o.shim);
	if (!removed && o.shim) {
		/* enable writes the resolved path: --shim may name it another way */
		char real[PATH_MAX];

		if (realpath(o.shim, real) && strcmp(real, o.shim))
			removed = remove_entries(old, text, real);
	}
	if (!removed) {
		printf("kpprof disable: %s has no %s entry\n", o.file, o.shim ? o.shim : SHIM_NAME);
		ret = 0;
	} else if (o.dry_run) {
		fputs(text, stdout);
		ret = 0;
	} else if (!write_preload(o.file, only_space(text) ? NULL : text, &st, exists)) {
		printf("kpprof disable: removed %d entr%s from %s%s\n", removed,
		       removed == 1 ? "y" : "ies", o.file,
		       only_space(text) ? " (now empty: removed the file)" : "");
		ret = 0;
	}
	free(text);
out_old:
	free(old);
out:
	close(lock);
	return ret;
}
