// SPDX-License-Identifier: GPL-2.0
/*
 * lifecycle_test: loading and unloading kpprof.ko ($KPPROF_KO, default
 * <repo>/build/module/<release>/kpprof.ko) with finit_module(2)/delete_module(2), for exact
 * errnos.  VM only: it loads modules into the kernel it runs on.
 * An open descriptor or a live mapping pins the module (EWOULDBLOCK) and
 * keeps working; 50 load/unload rounds; bad module parameters fail the
 * load cleanly with EINVAL; producer_gid restricts writers to a group,
 * judged when a file is opened.
 * Every test leaves the module loaded with default parameters, as vm-run
 * expects to rmmod it at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kpp_dev.h"
#include "rec_build.h"

static int mod_loaded(void)
{
	return access("/sys/module/kpprof", F_OK) == 0;
}

/* ensure_default - the module loaded with default parameters */
static int ensure_default(void)
{
	struct kpprof_info info;
	int fd, err;

	if (mod_loaded()) {
		fd = dev__open();
		if (fd < 0)
			return fd;
		err = dev__info(fd, &info);
		close(fd);
		if (err)
			return err;
		if (info.producer_gid == -1 && info.ring_size == 4 << 20)
			return 0;
		err = dev__module_unload();
		if (err)
			return err;
	}
	return dev__module_load("");
}

FIXTURE(mod) {
	int unused;
};

FIXTURE_SETUP(mod)
{
	ASSERT_EQ(0, access(dev__module_path(), R_OK))
		TH_LOG("%s: %s (set KPPROF_KO)", dev__module_path(), strerror(errno));
	ASSERT_EQ(0, ensure_default());
}

FIXTURE_TEARDOWN(mod)
{
	EXPECT_EQ(0, ensure_default());
	EXPECT_TRUE(mod_loaded());
}

TEST_F(mod, open_fd_pins_module)
{
	unsigned char buf[KPP_REC_BUF_MAX];
	struct kpprof_config cfg;
	struct kpprof_info info;
	int fd = dev__open();

	ASSERT_LE(0, fd);
	/* whatever an earlier program left: every profile on */
	dev__test_config(&cfg);
	ASSERT_EQ(0, dev__set_config(fd, &cfg));
	EXPECT_EQ(-EWOULDBLOCK, dev__module_unload());
	EXPECT_TRUE(mod_loaded());
	/* the descriptor keeps working */
	EXPECT_EQ(0, dev__info(fd, &info));
	EXPECT_EQ(0, dev__write(fd, buf, rec_build__alloc(buf, 4, 1)));
	close(fd);
	EXPECT_EQ(0, dev__module_unload());
	EXPECT_FALSE(mod_loaded());
	EXPECT_NE(0, access(KPPROF_DEVICE_PATH, F_OK));
	EXPECT_EQ(0, dev__module_load(""));
}

TEST_F(mod, mapping_pins_module)
{
	long page = sysconf(_SC_PAGESIZE);
	const struct kpprof_config_page *pg;
	int fd = dev__open();

	ASSERT_LE(0, fd);
	pg = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, pg);
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, dev__module_unload());
	/* the page stays readable */
	EXPECT_EQ(KPPROF_ABI_VERSION, pg->abi_version);
	munmap((void *)pg, page);
	EXPECT_EQ(0, dev__module_unload());
	EXPECT_EQ(0, dev__module_load(""));
}

TEST_F(mod, attached_consumer_pins_module)
{
	int fd = dev__open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dev__ioctl(fd, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	EXPECT_EQ(-EWOULDBLOCK, dev__module_unload());
	close(fd);
}

TEST_F_TIMEOUT(mod, load_unload_50_times, 120)
{
	unsigned int i;
	__u64 t0 = now_ns();

	for (i = 0; i < 50; i++) {
		struct kpprof_info info;
		int fd;

		ASSERT_EQ(0, dev__module_unload()) TH_LOG("round %u", i);
		ASSERT_FALSE(mod_loaded());
		ASSERT_EQ(0, dev__module_load("")) TH_LOG("round %u", i);
		fd = dev__open();
		ASSERT_LE(0, fd) TH_LOG("round %u: open: %s", i, strerror(-fd));
		EXPECT_EQ(0, dev__info(fd, &info));
		close(fd);
	}
	TH_LOG("50 rounds in %llu ms", (unsigned long long)(now_ns() - t0) / 1000000);
}

/* A second load of a loaded module is EEXIST, and changes nothing. */
TEST_F(mod, double_load_eexist)
{
	EXPECT_EQ(-EEXIST, dev__module_load(""));
	EXPECT_TRUE(mod_loaded());
}

FIXTURE(badparam) {
	int unused;
};

FIXTURE_VARIANT(badparam) {
	const char *params;
};

FIXTURE_VARIANT_ADD(badparam, ring_not_power_of_two) { .params = "ring_size=100000" };
FIXTURE_VARIANT_ADD(badparam, ring_power_of_two_plus_page) { .params = "ring_size=69632" };
FIXTURE_VARIANT_ADD(badparam, ring_zero) { .params = "ring_size=0" };
FIXTURE_VARIANT_ADD(badparam, ring_too_small) { .params = "ring_size=32768" };
FIXTURE_VARIANT_ADD(badparam, ring_one_page) { .params = "ring_size=4096" };
FIXTURE_VARIANT_ADD(badparam, ring_too_large) { .params = "ring_size=2147483648" };
FIXTURE_VARIANT_ADD(badparam, ring_huge) { .params = "ring_size=9223372036854775808" };
FIXTURE_VARIANT_ADD(badparam, producer_gid_minus_2) { .params = "producer_gid=-2" };
FIXTURE_VARIANT_ADD(badparam, producer_share_0) { .params = "producer_share=0" };
FIXTURE_VARIANT_ADD(badparam, producer_share_101) { .params = "producer_share=101" };

FIXTURE_SETUP(badparam)
{
	ASSERT_EQ(0, ensure_default());
}

FIXTURE_TEARDOWN(badparam)
{
	EXPECT_EQ(0, ensure_default());
}

TEST_F(badparam, load_fails_einval)
{
	ASSERT_EQ(0, dev__module_unload());
	EXPECT_EQ(-EINVAL, dev__module_load(variant->params)) TH_LOG("%s", variant->params);
	EXPECT_FALSE(mod_loaded());
	EXPECT_NE(0, access(KPPROF_DEVICE_PATH, F_OK));
}

/* The smallest ring the module takes, and ring_size reported back. */
TEST_F(mod, ring_size_param_applies)
{
	struct kpprof_info info;
	int fd;

	ASSERT_EQ(0, dev__module_unload());
	ASSERT_EQ(0, dev__module_load("ring_size=65536"));
	fd = dev__open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dev__info(fd, &info));
	EXPECT_EQ(65536, info.ring_size);
	close(fd);
}

/* producer_gid: only that group (or CAP_PERFMON) may write records. */
TEST_F(mod, producer_gid_restricts_writers)
{
	struct kpprof_stats st0, st1;
	struct kpprof_info info;
	int fd, g, status[2];

	ASSERT_EQ(0, dev__module_unload());
	ASSERT_EQ(0, dev__module_load("producer_gid=4321"));
	fd = dev__open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dev__info(fd, &info));
	EXPECT_EQ(4321, info.producer_gid);
	ASSERT_EQ(0, dev__stats(fd, &st0));
	/* child 0: uid/gid 65534, not in 4321; child 1: gid 4321 */
	for (g = 0; g < 2; g++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			unsigned char buf[KPP_REC_BUF_MAX];
			gid_t gid = g ? 4321 : 65534;
			int wfd, err;

			if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
			    setresuid(65534, 65534, 65534))
				_exit(100);
			wfd = dev__open();
			if (wfd < 0)
				_exit(101);
			err = dev__write(wfd, buf, rec_build__alloc(buf, 2, 1));
			_exit(err == 0 ? 0 : err == -EPERM ? 1 : 102);
		}
		ASSERT_EQ(pid, waitpid(pid, &status[g], 0));
		ASSERT_TRUE(WIFEXITED(status[g]));
	}
	EXPECT_EQ(1, WEXITSTATUS(status[0])) TH_LOG("outsider: want EPERM (1)");
	EXPECT_EQ(0, WEXITSTATUS(status[1])) TH_LOG("member: want accepted (0)");
	ASSERT_EQ(0, dev__stats(fd, &st1));
	EXPECT_EQ(st0.rejected + 1, st1.rejected);
	EXPECT_EQ(st0.accepted + 1, st1.accepted);
	close(fd);
}

static int drop_to(gid_t gid)
{
	return setgroups(0, NULL) || setresgid(gid, gid, gid) ||
	       setresuid(65534, 65534, 65534);
}

static int send_fd(int sock, int fd)
{
	char c = 0, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char c, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -errno;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * producer_gid is judged when the file is opened, with the opener's
 * credentials: a file opened by root (CAP_PERFMON) or by a member of the
 * group still writes after its process gave those up; a file opened by an
 * outsider does not write even in root's hands (handed over SCM_RIGHTS,
 * as to a setuid program).
 */
TEST_F(mod, producer_permission_decided_at_open)
{
	struct kpprof_stats st0, st1;
	int fd, sv[2], status, i, got;

	ASSERT_EQ(0, dev__module_unload());
	ASSERT_EQ(0, dev__module_load("producer_gid=4321"));
	fd = dev__open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dev__stats(fd, &st0));
	/* 0: opened as root, 1: opened as a member of 4321; then both drop */
	for (i = 0; i < 2; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			unsigned char buf[KPP_REC_BUF_MAX];
			int kept, fresh, a, b;

			/* the member keeps 65534 as saved gid, to leave 4321 later */
			if (i == 1 && (setgroups(0, NULL) || setresgid(4321, 4321, 65534) ||
				       setresuid(4321, 4321, 4321)))
				_exit(100);
			kept = dev__open();
			if (kept < 0)
				_exit(101);
			if (i == 0 ? drop_to(65534) : setresgid(65534, 65534, 65534))
				_exit(103);
			fresh = dev__open();
			if (fresh < 0)
				_exit(102);
			a = dev__write(kept, buf, rec_build__alloc(buf, 2, 1));
			b = dev__write(fresh, buf, rec_build__alloc(buf, 2, 1));
			/* bit 0: the kept file was refused; bit 1: the fresh one wrote */
			_exit((a != 0) | (b != -EPERM) << 1);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status) & 1)
			TH_LOG("%s: a file opened with the right refused after the drop",
			       i ? "member" : "root");
		EXPECT_EQ(0, WEXITSTATUS(status) & ~1)
			TH_LOG("%s: status %d", i ? "member" : "root", WEXITSTATUS(status));
	}
	/* an outsider's file in root's hands */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	if (fork() == 0) {
		int ofd;

		close(sv[0]);
		if (drop_to(65534))
			_exit(100);
		ofd = dev__open();
		_exit(ofd < 0 || send_fd(sv[1], ofd) ? 101 : 0);
	}
	close(sv[1]);
	got = recv_fd(sv[0]);
	ASSERT_LE(0, got) TH_LOG("SCM_RIGHTS: %s", strerror(-got));
	ASSERT_LT(0, wait(&status));
	{
		unsigned char buf[KPP_REC_BUF_MAX];

		EXPECT_EQ(-EPERM, dev__write(got, buf, rec_build__alloc(buf, 2, 1)))
			TH_LOG("root wrote through a file an outsider opened");
		EXPECT_EQ(0, dev__write(fd, buf, rec_build__alloc(buf, 2, 1)));
	}
	close(got);
	close(sv[0]);
	ASSERT_EQ(0, dev__stats(fd, &st1));
	/* accepted: root's kept file, the member's kept file, root's own */
	EXPECT_EQ(st0.accepted + 3, st1.accepted);
	EXPECT_EQ(st0.rejected + 3, st1.rejected);
	close(fd);
}

TEST_HARNESS_MAIN
