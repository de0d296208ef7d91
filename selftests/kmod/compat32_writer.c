// SPDX-License-Identifier: GPL-2.0
/*
 * compat32_writer: a 32-bit (compat) producer, freestanding (no 32-bit libc
 * is needed to build it): int $0x80 system calls only.  The end of user
 * space is 4 GiB for such a task, not the 64-bit TASK_SIZE_MAX, so the
 * module must refuse an address beyond it.  Writes:
 *   1. an alloc record whose pc is below 4 GiB: accepted;
 *   2. the same with a pc of 4 GiB + 4 KiB: EINVAL;
 *   3. a munmap record ending above 4 GiB: EINVAL.
 * Exit status: bit 0, 1, 2 set when write 1, 2, 3 did not do that; 64 if
 * the device could not be opened.
 */
#include <kpprof.h>

#define NR_EXIT		1
#define NR_WRITE	4
#define NR_OPEN		5
#define O_RDWR		2
#define EINVAL		22

static long sys3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory");
	return ret;
}

static void zero(void *p, unsigned long n)
{
	volatile unsigned char *b = p;

	while (n--)
		*b++ = 0;
}

static long write_alloc(long fd, __u64 pc)
{
	struct {
		struct kpprof_rec_alloc r;
		__u64 pc;
	} rec;

	zero(&rec, sizeof(rec));
	rec.r.hdr.kind = KPPROF_REC_ALLOC;
	rec.r.hdr.nr_pcs = 1;
	rec.r.hdr.size = sizeof(rec);
	rec.r.addr = 0x10000;
	rec.r.bytes = 16;
	rec.r.rate = 1;
	rec.pc = pc;
	return sys3(NR_WRITE, fd, (long)&rec, sizeof(rec));
}

static long write_munmap(long fd, __u64 start, __u64 end)
{
	struct kpprof_rec_munmap rec;

	zero(&rec, sizeof(rec));
	rec.hdr.kind = KPPROF_REC_MUNMAP;
	rec.hdr.size = sizeof(rec);
	rec.start = start;
	rec.end = end;
	return sys3(NR_WRITE, fd, (long)&rec, sizeof(rec));
}

void _start(void)
{
	long fd = sys3(NR_OPEN, (long)KPPROF_DEVICE_PATH, O_RDWR, 0);
	int status = 0;

	if (fd < 0)
		sys3(NR_EXIT, 64, 0, 0);
	if (write_alloc(fd, 0x08048000ULL) != (long)sizeof(struct kpprof_rec_alloc) + 8)
		status |= 1;
	if (write_alloc(fd, 0x100001000ULL) != -EINVAL)
		status |= 2;
	if (write_munmap(fd, 0x10000, 0x100002000ULL) != -EINVAL)
		status |= 4;
	sys3(NR_EXIT, status, 0, 0);
	for (;;)
		;
}
