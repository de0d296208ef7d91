// SPDX-License-Identifier: GPL-2.0
/*
 * hostile_producer - writes crafted records through /dev/kpprof, as any
 * user may (hostile_files_test.sh runs it as nobody):
 *
 *   hostile_producer map LIB...   maps each LIB executable, announces it
 *                                 with a MMAP record and samples inside it
 *   hostile_producer claim N PATH N MMAP records of ranges never mapped,
 *                                 naming PATH, each with a sample inside
 *
 * Then prints "ready" and waits for stdin to close, so it is alive while
 * the collector symbolizes.  Prints how many records the device refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kpprof.h"

static int dev, first_errno;
static unsigned long sent, refused;

static void submit(void *rec)
{
	if (ioctl(dev, KPPROF_IOC_SUBMIT, rec)) {
		if (!refused++)
			first_errno = errno;
	} else {
		sent++;
	}
}

static void comm_start(void)
{
	struct kpprof_rec_comm c = { .hdr = { .kind = KPPROF_REC_COMM, .size = sizeof(c) } };

	c.reason = KPPROF_COMM_START;
	submit(&c);
}

static void mmap_rec(uint64_t start, uint64_t end, const char *path)
{
	size_t n = strlen(path) + 1, size = (sizeof(struct kpprof_rec_mmap) + n + 7) & ~7UL;
	struct kpprof_rec_mmap *m = calloc(1, size);

	if (!m)
		exit(1);
	m->hdr.kind = KPPROF_REC_MMAP;
	m->hdr.size = size;
	m->start = start;
	m->end = end;
	m->path_len = n;
	memcpy(m->path, path, n);
	submit(m);
	free(m);
}

static void alloc_rec(uint64_t addr, uint64_t pc)
{
	struct {
		struct kpprof_rec_alloc a;
		uint64_t pcs[1];
	} r = { .a = { .hdr = { .kind = KPPROF_REC_ALLOC, .nr_pcs = 1, .size = sizeof(r) },
		       .addr = addr, .bytes = 1 << 20, .rate = 1 } };

	r.pcs[0] = pc;
	submit(&r);
}

int main(int argc, char **argv)
{
	char c;

	if (argc < 3) {
		fprintf(stderr, "usage: %s map LIB... | claim N PATH\n", argv[0]);
		return 2;
	}
	dev = open("/dev/kpprof", O_WRONLY | O_CLOEXEC);
	if (dev < 0) {
		perror("/dev/kpprof");
		return 1;
	}
	comm_start();
	if (!strcmp(argv[1], "map")) {
		for (int i = 2; i < argc; i++) {
			int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
			struct stat st;
			void *p;

			if (fd < 0 || fstat(fd, &st)) {
				perror(argv[i]);
				return 1;
			}
			p = mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
			if (p == MAP_FAILED) {
				perror("mmap");
				return 1;
			}
			close(fd);
			mmap_rec((uintptr_t)p, ((uintptr_t)p + st.st_size + 4095) & ~4095UL, argv[i]);
			alloc_rec(0x10000 + 64 * i, (uintptr_t)p + 0x1010);
		}
	} else if (!strcmp(argv[1], "claim") && argc == 4) {
		long n = atol(argv[2]);

		for (long i = 0; i < n; i++) {
			uint64_t start = 0x100000000ULL + (uint64_t)i * 0x2000;

			mmap_rec(start, start + 0x1000, argv[3]);
			if (i < 2000)
				alloc_rec(0x1000000 + 64 * i, start + 0x100);
		}
	} else {
		fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[1]);
		return 2;
	}
	printf("ready: %lu records sent, %lu refused%s%s\n", sent, refused,
	       refused ? ", first: " : "", refused ? strerror(first_errno) : "");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
