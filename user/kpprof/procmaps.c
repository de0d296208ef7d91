// SPDX-License-Identifier: GPL-2.0
/*
 * procmaps.c - a process that started before the collector attached has
 * had its MMAP records consumed by nobody; while it is alive its mappings
 * can still be read from /proc/PID/maps (executable file mappings only),
 * with build-ids read from the files as the process maps them
 * (/proc/PID/map_files, else its root: see objopen.c), never from
 * whatever the path names in the collector's own mount namespace.
 *
 * Also read for a process that has mappings but whose samples hit an
 * address none of them holds (a daemon started before the collector that
 * later dlopens one library sends one MMAP record): the profile writer
 * notes the pid, the next kpp_session__learn_maps reads its maps again, at
 * most once per KPP_REREAD_S seconds per process, counted.
 */
#include <unistd.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "objopen.h"
#include "profile_write.h"

int kpp_proc__read_maps(struct kpp_agg *a, uint32_t pid)
{
	char path[64], line[KPPROF_PATH_MAX + 256];
	int added = 0;
	FILE *f;

	const struct kpp_proc *p = kpp_agg__proc(a, pid);
	/* Whose the process is: its records' uid (a new one: charged to root). */
	uint32_t uid = p ? p->uid : 0;

	/* Another process's mappings (a reused pid, a setuid exec) are not its. */
	if (!kpp_pid_is_producers(pid, uid))
		return -EPERM;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, offset;
		char perms[8], file[KPPROF_PATH_MAX];
		uint8_t id[KPPROF_BUILD_ID_MAX], id_len = 0;
		int n = 0;

		file[0] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
			   &start, &end, perms, &offset, &n) < 4 || !n)
			continue;
		if (perms[2] != 'x' || line[n] != '/')
			continue;
		snprintf(file, sizeof(file), "%s", line + n);
		file[strcspn(file, "\n")] = '\0';
		struct kpp_map m = { .start = start, .end = end, .uid = uid, .path = file };
		int fd = kpp_open_mapped(pid, &m);

		if (fd < 0 || kpp_elf__build_id_fd(fd, id, &id_len))
			id_len = 0;
		if (fd >= 0)
			close(fd);
		if (kpp_agg__add_map(a, pid, start, end, offset, id, id_len, file, true) == 0)
			added++;
	}
	fclose(f);
	return added;
}

#define KPP_REREAD_SLOTS	1024
#define KPP_REREAD_S		10

/* Written by the profile writer, read by learn_maps: maybe two threads. */
static pthread_mutex_t reread_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint32_t pid;
	bool want;
	time_t read_at;
} reread[KPP_REREAD_SLOTS];
static uint64_t rereads;

void kpp_proc__note_unmapped(uint32_t pid)
{
	size_t h = pid % KPP_REREAD_SLOTS;

	pthread_mutex_lock(&reread_lock);
	if (reread[h].pid != pid) {
		reread[h].pid = pid;
		reread[h].read_at = 0;
	}
	reread[h].want = true;
	pthread_mutex_unlock(&reread_lock);
}

bool kpp_proc__want_reread(uint32_t pid)
{
	size_t h = pid % KPP_REREAD_SLOTS;
	struct timespec ts;
	bool yes = false;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_lock(&reread_lock);
	if (reread[h].pid == pid && reread[h].want &&
	    (!reread[h].read_at || ts.tv_sec - reread[h].read_at >= KPP_REREAD_S)) {
		reread[h].want = false;
		reread[h].read_at = ts.tv_sec ? ts.tv_sec : 1;
		rereads++;
		yes = true;
	}
	pthread_mutex_unlock(&reread_lock);
	return yes;
}

uint64_t kpp_proc__rereads(void)
{
	uint64_t n;

	pthread_mutex_lock(&reread_lock);
	n = rereads;
	pthread_mutex_unlock(&reread_lock);
	return n;
}
