// SPDX-License-Identifier: MIT
/* Loader and user-space side of the sockops ACK tracer; see xiw_sockops.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xiwarp/xiwarp.h"
#include "xiw_bpffs.h"
#include "xiw_sockops.h"
#include "xiw_sockops.skel.h"

static struct {
	pthread_once_t once;
	int err;			/* result of the one load attempt */
	struct xiw_sockops *skel;
	struct bpf_link *link;
	struct bpf_link *switch_link;	/* xiw_sockopt: NULL, callbacks stay on */
	struct ring_buffer *rb;
	xiw_ack_fn fn;			/* consumer of the current consume() */
	void *fn_ctx;
} so = { .once = PTHREAD_ONCE_INIT, .err = -EAGAIN };

static pthread_mutex_t consume_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool load_done;	/* so.err is final (release/acquire) */

/* cgroup2 mount point from /proc/self/mountinfo (field 5; fstype after " - ") */
static int cgroup2_mount(char *out, size_t cap)
{
	char line[1024], mnt[PATH_MAX];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - cgroup2 ");

		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 &&
		    strlen(mnt) < cap) {
			strcpy(out, mnt);
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

/* this process's cgroup v2 path ("0::/a/b" line of /proc/self/cgroup) */
static int cgroup2_self(char *out, size_t cap)
{
	char line[1024];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = 0;
		if (strlen(line + 3) < cap) {
			strcpy(out, line + 3);
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

/*
 * No cgroup2 in our mount view (`ip netns exec` remounts /sys, hiding it):
 * mount a cgroup2 view on a temporary directory, open the group, and
 * detach the mount at once. The fd keeps the group open; no mount stays
 * behind in any namespace. Needs CAP_SYS_ADMIN, like the attach itself.
 */
static int open_cgroup_via_temp_mount(const char *rel)
{
	char dir[] = "/tmp/xiw-cgroup2.XXXXXX", path[PATH_MAX + 32];
	int fd = -1, err;

	if (!mkdtemp(dir))
		return -errno;
	if (mount("cgroup2", dir, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) == 0) {
		snprintf(path, sizeof(path), "%s%s", dir, rel);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)	/* our group unknown in this view: the root */
			fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		err = fd < 0 ? -errno : 0;
		umount2(dir, MNT_DETACH);
	} else {
		err = -errno;
	}
	rmdir(dir);
	return fd >= 0 ? fd : err;
}

static int open_own_cgroup(void)
{
	char mnt[PATH_MAX], rel[PATH_MAX], path[2 * PATH_MAX + 1];
	int ret = cgroup2_mount(mnt, sizeof(mnt));
	int fd;

	if (ret == -ENOENT) {
		if (cgroup2_self(rel, sizeof(rel)))
			strcpy(rel, "/");
		return open_cgroup_via_temp_mount(rel);
	}
	if (ret)
		return ret;
	if (cgroup2_self(rel, sizeof(rel)))
		strcpy(rel, "/");	/* hybrid hierarchy: v2 root */
	snprintf(path, sizeof(path), "%s%s", mnt, rel);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && rel[1]) {
		/* our v2 group may not exist under this mount: use the root */
		fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

static int ring_cb(void *ctx, void *data, size_t len)
{
	(void)ctx;
	if (len >= sizeof(struct xiw_ack_event) && so.fn)
		so.fn(so.fn_ctx, data);
	return 0;
}

/*
 * The socket map is pinned once at XIW_BPF_PIN_SK_ACK (the host's
 * /sys/fs/bpf/xiwarp/xiw_sk_ack2, also from inside `ip netns exec`:
 * xiw_bpffs.c) and shared by every xiwarp process (entries carry their
 * owner), so nothing needs unpinning when a process dies, however it
 * dies. The pin name carries the value layout version: builds with
 * another layout pin their own map beside it (libbpf refuses to reuse a
 * pin whose value size differs). Where no bpffs can be had (not root) the
 * map stays private and unpinned.
 */
static void want_pin(void)
{
	static char path[PATH_MAX], view[PATH_MAX];
	char dir[PATH_MAX - 32];

	if (xiw_bpffs_pin_dir(dir, sizeof(dir)))
		return;
	snprintf(path, sizeof(path), "%s/%s", dir,
		 strrchr(XIW_BPF_PIN_SK_ACK, '/') + 1);
	snprintf(view, sizeof(view), "%s/%s", dir,
		 strrchr(XIW_BPF_PIN_SK_VIEW, '/') + 1);
	bpf_map__set_pin_path(so.skel->maps.xiw_sk_ack2, path);
	bpf_map__set_pin_path(so.skel->maps.xiw_sk_view2, view);
}

/*
 * The load attempts: with the shared (pinned) map, then a private one;
 * both first with the callbacks switch (xiw_sockopt), then without: a
 * kernel whose cgroup/setsockopt programs may not call bpf_setsockopt()
 * (before 5.15) refuses it, and the tracer is worth having without it
 * (its callbacks then stay on). XIW_ACK_CB_SWITCH=0 never loads it.
 */
#define LOAD_TRIES 4
static bool pin_wanted(int tries)
{
	return !(tries & 1);
}

/* XIW_ACK_CB_SWITCH: 1 (default) or 0; read once, in the loader */
static bool switch_knob(void)
{
	static int on = -1;
	const char *v;

	if (on >= 0)
		return on;
	v = getenv("XIW_ACK_CB_SWITCH");
	on = !v || !*v || strcmp(v, "0");
	if (v && *v && strcmp(v, "0") && strcmp(v, "1"))
		xiw_log(XIW_LOG_WARN, "XIW_ACK_CB_SWITCH=%s: not 0 or 1; using 1",
			v);
	return on;
}

static bool switch_wanted(int tries)
{
	return tries < 2 && switch_knob();
}

static int open_and_load(void)
{
	int ret;

	for (int tries = 0; tries < LOAD_TRIES; tries++) {
		so.skel = xiw_sockops__open();
		if (!so.skel)
			return errno ? -errno : -EINVAL;
		so.skel->rodata->owner_tgid = (__u32)getpid();
		if (!switch_wanted(tries))
			bpf_program__set_autoload(so.skel->progs.xiw_sockopt,
						  false);
		if (pin_wanted(tries))
			want_pin();
		ret = xiw_sockops__load(so.skel);
		if (!ret)
			return 0;
		/* another process pinned it between our check and our pin,
		 * or an incompatible map is pinned: retry unpinned; the
		 * kernel refused the switch: retry without it */
		xiw_log(XIW_LOG_INFO, "sockops: load with %s map%s failed (%s)%s%s%s",
			pin_wanted(tries) ? "the shared " XIW_BPF_PIN_SK_ACK : "a private",
			switch_wanted(tries) ? " and the callbacks switch" : "",
			strerror(-ret),
			tries + 1 == LOAD_TRIES ? "" :
			pin_wanted(tries + 1) ? "; trying the shared map" :
						"; trying a private map",
			tries + 1 == LOAD_TRIES || switch_wanted(tries + 1) ? "" :
			" without the switch",
			tries + 1 == LOAD_TRIES ? "" : " next");
		xiw_sockops__destroy(so.skel);
		so.skel = NULL;
	}
	return ret;
}

static int load(void)
{
	int cg, ret;

	ret = open_and_load();
	if (ret)
		return ret;
	cg = open_own_cgroup();
	if (cg < 0)
		return cg;
	so.link = bpf_program__attach_cgroup(so.skel->progs.xiw_sockops, cg);
	ret = so.link ? 0 : -errno;
	if (!ret && bpf_program__fd(so.skel->progs.xiw_sockopt) >= 0) {
		so.switch_link = bpf_program__attach_cgroup(
					so.skel->progs.xiw_sockopt, cg);
		if (!so.switch_link)	/* the callbacks just stay on */
			xiw_log(XIW_LOG_INFO, "sockops: callbacks switch not attached (%s); ACK callbacks stay on",
				strerror(errno));
	}
	close(cg);
	if (ret)
		return ret;
	so.rb = ring_buffer__new(bpf_map__fd(so.skel->maps.xiw_ack_events),
				 ring_cb, NULL, NULL);
	if (!so.rb)
		return -errno;
	return 0;
}

static int quiet_libbpf(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	if (lvl == LIBBPF_WARN && getenv("XIW_LOG") && !strcmp(getenv("XIW_LOG"), "debug"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static void load_once(void)
{
	libbpf_set_print(quiet_libbpf);
	so.err = load();
	atomic_store_explicit(&load_done, true, memory_order_release);
	if (so.err) {
		xiw_log(XIW_LOG_INFO, "sockops ACK tracing unavailable (%s); "
			"ACK completions poll TCP_INFO instead", strerror(-so.err));
		xiw_sockops_unload();
	}
	/* Nothing to undo at exit: the kernel detaches the link and frees
	 * private maps when the fds close; the shared pin is meant to stay. */
}

int xiw_sockops_load(void)
{
	pthread_once(&so.once, load_once);
	return so.err;
}

void xiw_sockops_before_connect(void)
{
	const char *m = getenv("XIW_TX_COMPLETION");

	if (m && !strcmp(m, "ack"))
		xiw_sockops_load();
}

int xiw_sockops_peek(void)
{
	if (!atomic_load_explicit(&load_done, memory_order_acquire))
		return -EINPROGRESS;
	return so.err;
}

void xiw_sockops_unload(void)
{
	ring_buffer__free(so.rb);
	so.rb = NULL;
	bpf_link__destroy(so.switch_link);
	so.switch_link = NULL;
	bpf_link__destroy(so.link);
	so.link = NULL;
	xiw_sockops__destroy(so.skel);
	so.skel = NULL;
}

int xiw_sockops_ring_fd(void)
{
	return so.rb ? ring_buffer__epoll_fd(so.rb) : -ENOENT;
}

static int sk_map_fd(void)
{
	return so.skel ? bpf_map__fd(so.skel->maps.xiw_sk_ack2) : -ENOENT;
}

static int view_map_fd(void)
{
	return so.skel ? bpf_map__fd(so.skel->maps.xiw_sk_view2) : -ENOENT;
}

/*
 * The program created the entry (owner 0) when the connection was
 * established and asked for its callbacks then; registering claims it.
 * No entry: established before any xiwarp program was attached to the
 * cgroup, so the socket never gets a callback (-ENOENT: poll instead).
 */
int xiw_sockops_register(int sockfd, uint64_t cookie)
{
	__u32 self = (__u32)getpid();
	struct xiw_sk_ack st;
	int map = sk_map_fd();

	if (map < 0)
		return map;
	if (bpf_map_lookup_elem(map, &sockfd, &st))
		return -errno;
	if (st.owner == self && st.cookie == cookie)
		return 0;
	if (st.owner && st.owner != self)
		return -EBUSY;	/* an inherited fd another process traces */
	st.cookie = cookie;
	st.owner = self;
	st.armed = 0;
	if (bpf_map_update_elem(map, &sockfd, &st, BPF_EXIST))
		return -errno;
	xiw_sk_view_add(view_map_fd(), sockfd, &st);
	return 0;
}

void xiw_sockops_unregister(int sockfd)
{
	struct xiw_sk_ack st;
	int map = sk_map_fd();

	/* keep the entry (it says the socket has callbacks), drop the claim */
	if (map < 0 || bpf_map_lookup_elem(map, &sockfd, &st) ||
	    st.owner != (__u32)getpid())
		return;
	st.owner = 0;
	st.armed = 0;
	bpf_map_update_elem(map, &sockfd, &st, BPF_EXIST);
	/* and leave the listing now: the program's TCP_CLOSE callback may
	 * never run for it (the FIN exchange ends after this process and
	 * its program are gone) */
	xiw_sk_view_del(view_map_fd(), sockfd);
}

int xiw_sockops_state(int sockfd, struct xiw_sk_ack *out)
{
	int map = sk_map_fd();

	if (map < 0)
		return map;
	return bpf_map_lookup_elem(map, &sockfd, out) ? -errno : 0;
}

int xiw_sockops_arm(int sockfd, uint32_t watermark)
{
	struct xiw_sk_ack st;
	int ret = xiw_sockops_state(sockfd, &st);

	if (ret)
		return ret;
	if (st.owner != (__u32)getpid())
		return -ENOENT;	/* not registered by us */
	/* Whole-value update: an ACK landing between lookup and update only
	 * loses its bytes_acked/acks bookkeeping, never an event: the caller
	 * re-checks the send state after arming. */
	st.watermark = watermark;
	st.armed = 1;
	return bpf_map_update_elem(sk_map_fd(), &sockfd, &st, BPF_EXIST) ? -errno : 0;
}

int xiw_sockops_callbacks(int sockfd, bool on)
{
	int v = on;

	if (!so.switch_link)
		return -EOPNOTSUPP;
	if (setsockopt(sockfd, XIW_SOL_ACK, XIW_SO_ACK_CALLBACKS, &v,
		       sizeof(v)))
		return -errno;
	return 0;
}

uint64_t *xiw_sockops_mark_slot(uint64_t cookie)
{
	if (!so.skel || !so.skel->bss)
		return NULL;
	return (uint64_t *)&so.skel->bss->xiw_mark_want[cookie & (XIW_MARK_SLOTS - 1)];
}

uint32_t xiw_sockops_mark_done(uint64_t cookie)
{
	if (!so.skel || !so.skel->bss)
		return 0;
	return __atomic_load_n(&so.skel->bss->xiw_mark_done[cookie & (XIW_MARK_SLOTS - 1)],
			       __ATOMIC_RELAXED);
}

int xiw_sockops_consume(xiw_ack_fn fn, void *ctx)
{
	int n;

	if (!so.rb)
		return -ENOENT;
	pthread_mutex_lock(&consume_lock);
	so.fn = fn;
	so.fn_ctx = ctx;
	n = ring_buffer__consume(so.rb);
	so.fn = NULL;
	pthread_mutex_unlock(&consume_lock);
	return n;
}
