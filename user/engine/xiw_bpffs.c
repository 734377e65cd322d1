// SPDX-License-Identifier: MIT
/*
 * Where xiwarp pins BPF objects so that the host's bpftool sees them:
 * /sys/fs/bpf/xiwarp in the initial mount namespace.
 *
 * Two things stand in the way on these machines. The host's /sys/fs/bpf
 * may be a plain sysfs directory (nobody mounted bpffs): then bpffs is
 * mounted there, as bpftool and other libbpf tools do before pinning
 * (mode 0700: root only). And `ip netns exec` gives a process a private
 * mount view with a fresh /sys, where a pin would be invisible to the
 * host: such a process reaches the host's tree through /proc/PID/root of
 * a process in the host's mount namespace (PID 1 where it may be looked
 * at, else the nearest ancestor outside our namespace: the shell that ran
 * `ip netns exec`) and, to mount bpffs there, a short-lived child that
 * joins that mount namespace (setns needs a single-threaded caller; the
 * engine has threads). Without root the caller gets an error and keeps
 * its map private.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <unistd.h>
#include "xiwarp/xiwarp.h"
#include "xiw_bpffs.h"

#define BPFFS "/sys/fs/bpf"
static bool is_bpffs(const char *path)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == BPF_FS_MAGIC;
}

static bool same_ns(const char *a, const char *b)
{
	struct stat x, y;

	return !stat(a, &x) && !stat(b, &y) && x.st_ino == y.st_ino &&
	       x.st_dev == y.st_dev;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 1, " %*c %d", &ppid);
	fclose(f);
	return ppid;
}

/*
 * The process whose mount namespace is "the host's": PID 1 if we may look
 * at it, else the nearest ancestor in another mount namespace than ours
 * (the shell that ran `ip netns exec`); 0: our own view is the host's.
 */
static pid_t host_ns_pid(void)
{
	char ns[64];
	pid_t pid = getppid();

	if (!access("/proc/1/ns/mnt", R_OK) && !access("/proc/1/root", X_OK))
		return same_ns("/proc/self/ns/mnt", "/proc/1/ns/mnt") ? 0 : 1;
	for (int depth = 0; pid > 1 && depth < 32; depth++, pid = parent_of(pid)) {
		snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)pid);
		if (access(ns, R_OK))
			continue;
		if (!same_ns("/proc/self/ns/mnt", ns))
			return pid;
	}
	return 0;
}

/* Mount bpffs on /sys/fs/bpf from a child in @pid's mount namespace.
 * Return: 0 or -errno. */
static int mount_in_ns_of(pid_t pid)
{
	char ns[64];
	int status, fd;
	pid_t child;

	snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)pid);
	fd = open(ns, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	child = fork();
	if (child == 0) {
		/* only async-signal-safe calls in the child of a threaded parent */
		if (setns(fd, CLONE_NEWNS) ||
		    mount("bpf", BPFFS, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "mode=0700"))
			_exit(1);
		_exit(0);
	}
	close(fd);
	if (child < 0)
		return -errno;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -EPERM;
	return 0;
}

/**
 * xiw_bpffs_pin_dir() - the directory to pin xiwarp's BPF objects in, as
 * this process names it: "/sys/fs/bpf/xiwarp" in the host's mount
 * namespace, "/proc/PID/root/sys/fs/bpf/xiwarp" from a private view (ip
 * netns exec; PID: see host_ns_pid); either way the host sees
 * /sys/fs/bpf/xiwarp. Mounts bpffs
 * on the host's /sys/fs/bpf if it is not one yet (mode 0700) and creates
 * the directory (mode 0700).
 * @out, @cap: the path, NUL-terminated.
 * Return: 0, or -errno (not root, no /proc, mount refused): pin nothing.
 */
int xiw_bpffs_pin_dir(char *out, size_t cap)
{
	pid_t host = host_ns_pid();
	char base[64];
	int ret;

	if (host)
		snprintf(base, sizeof(base), "/proc/%d/root%s", (int)host, BPFFS);
	else
		snprintf(base, sizeof(base), "%s", BPFFS);
	if (!is_bpffs(base)) {
		if (host)
			ret = mount_in_ns_of(host);
		else
			ret = mount("bpf", BPFFS, "bpf",
				    MS_NOSUID | MS_NODEV | MS_NOEXEC,
				    "mode=0700") ? -errno : 0;
		if (ret || !is_bpffs(base)) {
			xiw_log(XIW_LOG_INFO, "bpffs: cannot mount on the host's %s (%s)",
				BPFFS, strerror(ret ? -ret : ENOTSUP));
			return ret ? ret : -ENOTSUP;
		}
		xiw_log(XIW_LOG_INFO, "bpffs: mounted on the host's %s", BPFFS);
	}
	if ((size_t)snprintf(out, cap, "%s/xiwarp", base) >= cap)
		return -ENAMETOOLONG;
	if (mkdir(out, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}
