// SPDX-License-Identifier: GPL-2.0
/*
 * doorbell_bench: what a producer's kick costs its thread, the doorbell's
 * fault (a read of the page the last kick took out) against the kick it
 * replaced in the shim (open of /dev/kpprof, KPPROF_IOC_KICK, close), in
 * interleaved rounds, as thread CPU time.  The process maps no ring, so
 * KICK finds nothing to drain; the doorbell's drain runs in the workqueue,
 * not in this thread: both figures are the kicker's cost only.  Under
 * qemu TCG the absolute times mean nothing; the ratio is the figure.
 *
 *   doorbell_bench [KICKS_PER_ROUND [ROUNDS]]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "kpp_dev.h"

static double thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000, rounds = argc > 2 ? atoi(argv[2]) : 5;
	double t, sys_ns = 0, bell_ns = 0;
	struct kpprof_info info;
	const volatile unsigned char *bell;
	unsigned int k = 0;
	int fd = dev__open(), i, r;

	if (fd < 0 || dev__info(fd, &info) || !(info.features & KPPROF_FEAT_DOORBELL)) {
		fprintf(stderr, "doorbell_bench: no doorbell\n");
		return 1;
	}
	bell = mmap(NULL, info.doorbell_map_len, PROT_READ, MAP_SHARED, fd,
		    (off_t)(info.doorbell_pgoff * info.page_size));
	if (bell == MAP_FAILED)
		return 1;
	for (r = 0; r < rounds; r++) {
		t = thread_ns();
		for (i = 0; i < n; i++) {
			int kfd = open(KPPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);

			if (kfd < 0 || ioctl(kfd, KPPROF_IOC_KICK, NULL))
				return 1;
			close(kfd);
		}
		sys_ns += thread_ns() - t;
		t = thread_ns();
		for (i = 0; i < n; i++, k++)
			(void)bell[(k & 1) * info.page_size];
		bell_ns += thread_ns() - t;
		printf("# round %d: open+KICK+close %.0f ns, doorbell %.0f ns per kick\n", r,
		       sys_ns / ((r + 1.0) * n), bell_ns / ((r + 1.0) * n));
	}
	printf("doorbell_bench: %d kicks x %d rounds: open+KICK+close %.0f ns, doorbell fault %.0f ns (thread CPU time); doorbell / syscalls = %.2f\n",
	       n, rounds, sys_ns / ((double)rounds * n), bell_ns / ((double)rounds * n),
	       bell_ns / sys_ns);
	return 0;
}
