// SPDX-License-Identifier: GPL-2.0
/*
 * procmaps.c - a process that started before the collector attached has
 * had its MMAP records consumed by nobody; while it is alive its mappings
 * can still be read from /proc/PID/maps (executable file mappings only),
 * with build-ids read from the files as the process maps them
 * (/proc/PID/map_files, else its root: see objopen.c), never from
 * whatever the path names in the collector's own mount namespace.
 */
#include <unistd.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "profile_write.h"

int kpp_proc__read_maps(struct kpp_agg *a, uint32_t pid)
{
	char path[64], line[KPPROF_PATH_MAX + 256];
	int added = 0;
	FILE *f;

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
		struct kpp_map m = { .start = start, .end = end, .path = file };
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
