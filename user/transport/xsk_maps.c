// SPDX-License-Identifier: MIT
/*
 * xsk: the xiw_xdp program attached to an interface and its maps, found
 * from the program id (bpf_xdp_query -> program fd -> map ids -> map fds),
 * never from bpffs pins: `ip netns exec` shows no bpffs, and `ip link ...
 * xdp obj` pins nothing (the same walk as user/tools/xiwctl_find.c).
 *
 * XSKMAP slots: a slot holds one AF_XDP socket, and XSKMAP entries cannot
 * be read from user space, so processes sharing an interface claim slots
 * with an abstract unix socket "xiwarp-xsk/<prog id>/<slot>" each: bound
 * while the process lives, gone with it, no files to clean up. Program
 * ids are unique system-wide, abstract names per network namespace.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

struct want {
	const char *name;
	__u32 type, key, value;
	int *fd;
};

static void take_map(__u32 id, struct want *w, size_t n)
{
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);
	int fd = bpf_map_get_fd_by_id(id);

	if (fd < 0)
		return;
	memset(&mi, 0, sizeof(mi));
	if (!bpf_obj_get_info_by_fd(fd, &mi, &len))
		for (size_t i = 0; i < n; i++)
			if (!strcmp(mi.name, w[i].name) && mi.type == w[i].type &&
			    mi.key_size == w[i].key && mi.value_size == w[i].value &&
			    *w[i].fd < 0) {
				*w[i].fd = fd;
				return;
			}
	close(fd);
}

static int prog_maps(struct xsk_maps *m, struct want *w, size_t nw)
{
	struct bpf_prog_info pi;
	__u32 len = sizeof(pi), n, *ids;

	memset(&pi, 0, sizeof(pi));
	if (bpf_obj_get_info_by_fd(m->prog_fd, &pi, &len))
		return -errno;
	if (strcmp(pi.name, XIW_XDP_PROG_NAME))
		return -ENOENT;
	n = pi.nr_map_ids;
	if (!n)
		return -ENOENT;
	ids = calloc(n, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = n;
	pi.map_ids = (__u64)(uintptr_t)ids;
	len = sizeof(pi);
	if (bpf_obj_get_info_by_fd(m->prog_fd, &pi, &len)) {
		free(ids);
		return -errno;
	}
	for (__u32 i = 0; i < n && i < pi.nr_map_ids; i++)
		take_map(ids[i], w, nw);
	free(ids);
	return 0;
}

/* Map the per-slot counters (BPF_F_MMAPABLE array) if the object has
 * them; the engine adds its utcp counters there (xsk_maps_count). */
static void slot_cnt_map(struct xsk_maps *m)
{
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);
	long pg = sysconf(_SC_PAGESIZE);
	void *p;

	if (m->slot_cnt_fd < 0)
		return;
	memset(&mi, 0, sizeof(mi));
	if (bpf_obj_get_info_by_fd(m->slot_cnt_fd, &mi, &len) ||
	    !(mi.map_flags & BPF_F_MMAPABLE) || !mi.max_entries)
		return;
	m->slot_cnt_len = ((size_t)mi.max_entries * mi.value_size + (size_t)pg - 1) &
			  ~((size_t)pg - 1);
	p = mmap(NULL, m->slot_cnt_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 m->slot_cnt_fd, 0);
	if (p == MAP_FAILED) {
		xiw_log(XIW_LOG_DEBUG, "xsk: mmap of %s: %s", XIW_XDP_MAP_SLOT_CNT,
			strerror(errno));
		return;
	}
	m->slot_cnt = p;
	m->slot_cnt_n = mi.max_entries;
}

/* The counters of XSKMAP slot @slot, or NULL without them. */
static struct xiw_xdp_slot_cnt *slot_cnt(const struct xsk_maps *m,
					 uint32_t slot)
{
	return m->slot_cnt && slot < m->slot_cnt_n ? &m->slot_cnt[slot] : NULL;
}

static void cnt_add(__u64 *c, uint64_t n)
{
	if (n)
		__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

/**
 * xsk_maps_count() - add @retrans segments and @sacked octets to the
 * counters of XSKMAP slot @slot (xiwctl stat shows them). Any thread.
 */
void xsk_maps_count(const struct xsk_maps *m, uint32_t slot, uint64_t retrans,
		    uint64_t sacked)
{
	struct xiw_xdp_slot_cnt *sc = slot_cnt(m, slot);

	if (!sc)
		return;
	cnt_add(&sc->retrans, retrans);
	cnt_add(&sc->sacked, sacked);
}

void xsk_maps_count_meta(const struct xsk_maps *m, uint32_t slot, uint64_t used,
			 uint64_t mismatch, uint64_t resync)
{
	struct xiw_xdp_slot_cnt *sc = slot_cnt(m, slot);

	if (!sc)
		return;
	cnt_add(&sc->meta_used, used);
	cnt_add(&sc->meta_mismatch, mismatch);
	cnt_add(&sc->resync, resync);
}

static void cfg_read(struct xsk_maps *m)
{
	struct xiw_xdp_cfg cfg = { 0 };
	__u32 zero = 0;

	if (!bpf_map_lookup_elem(m->cfg_fd, &zero, &cfg))
		m->cfg_flags = cfg.flags;
}

int xsk_maps_open(int ifindex, struct xsk_maps *m, char *why, size_t whylen)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct want w[] = {
		{ XIW_XDP_MAP_FLOWS, BPF_MAP_TYPE_HASH,
		  sizeof(struct xiw_xdp_flow_key), sizeof(struct xiw_xdp_flow),
		  &m->flows_fd },
		{ XIW_XDP_MAP_LISTEN, BPF_MAP_TYPE_HASH,
		  sizeof(struct xiw_xdp_listen_key),
		  sizeof(struct xiw_xdp_listen), &m->listen_fd },
		{ XIW_XDP_MAP_XSKS, BPF_MAP_TYPE_XSKMAP, 4, 4, &m->xsks_fd },
		{ XIW_XDP_MAP_CNT, BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, &m->cnt_fd },
		{ XIW_XDP_MAP_CFG, BPF_MAP_TYPE_ARRAY, 4,
		  sizeof(struct xiw_xdp_cfg), &m->cfg_fd },
		/* optional (last): an older object has no slot counters */
		{ XIW_XDP_MAP_SLOT_CNT, BPF_MAP_TYPE_ARRAY, 4,
		  sizeof(struct xiw_xdp_slot_cnt), &m->slot_cnt_fd },
	};
	const size_t nreq = sizeof(w) / sizeof(w[0]) - 1;
	int err;

	memset(m, 0, sizeof(*m));
	m->prog_fd = m->flows_fd = m->listen_fd = m->xsks_fd = -1;
	m->cnt_fd = m->cfg_fd = m->slot_cnt_fd = -1;
	err = bpf_xdp_query(ifindex, 0, &q);
	if (err) {
		snprintf(why, whylen, "bpf_xdp_query: %s", strerror(-err));
		return err;
	}
	m->prog_id = q.prog_id ? q.prog_id : q.drv_prog_id ? q.drv_prog_id :
		     q.skb_prog_id;
	m->generic = q.attach_mode == XDP_ATTACHED_SKB;
	if (!m->prog_id) {
		snprintf(why, whylen, "no XDP program attached (xiwctl attach IF)");
		return -ENOENT;
	}
	m->prog_fd = bpf_prog_get_fd_by_id(m->prog_id);
	if (m->prog_fd < 0) {
		err = -errno;
		snprintf(why, whylen, "program id %u: %s", m->prog_id, strerror(-err));
		return err;
	}
	err = prog_maps(m, w, sizeof(w) / sizeof(w[0]));
	for (size_t i = 0; !err && i < nreq; i++)
		if (*w[i].fd < 0)
			err = -ENOENT;
	if (err) {
		snprintf(why, whylen, "program id %u is not %s (or another build of it)",
			 m->prog_id, XIW_XDP_PROG_NAME);
		xsk_maps_close(m);
		return err;
	}
	cfg_read(m);
	slot_cnt_map(m);
	return 0;
}

void xsk_maps_close(struct xsk_maps *m)
{
	int *fds[] = { &m->prog_fd, &m->flows_fd, &m->listen_fd, &m->xsks_fd,
		       &m->cnt_fd, &m->cfg_fd, &m->slot_cnt_fd };

	if (m->slot_cnt)
		munmap(m->slot_cnt, m->slot_cnt_len);
	m->slot_cnt = NULL;

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int xsk_slot_claim(uint32_t prog_id, uint32_t slot)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), n;

	if (fd < 0)
		return -errno;
	/* abstract: sun_path[0] == 0 */
	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
		     "xiwarp-xsk/%u/%u", prog_id, slot);
	if (bind(fd, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))) {
		int err = errno == EADDRINUSE ? -EBUSY : -errno;

		close(fd);
		return err;
	}
	return fd;
}

void xsk_maps_purge(const struct xsk_maps *m, uint32_t slot)
{
	struct xiw_xdp_flow_key k, next;
	struct xiw_xdp_listen_key lk, lnext;
	struct xiw_xdp_flow f;
	struct xiw_xdp_listen l;
	void *prev = NULL;
	int n = 0;

	while (!bpf_map_get_next_key(m->flows_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (!bpf_map_lookup_elem(m->flows_fd, &k, &f) && f.xsk == slot &&
		    !bpf_map_delete_elem(m->flows_fd, &k)) {
			prev = NULL;	/* restart: iteration after a delete */
			n++;
		}
	}
	prev = NULL;
	while (!bpf_map_get_next_key(m->listen_fd, prev, &lnext)) {
		lk = lnext;
		prev = &lk;
		if (!bpf_map_lookup_elem(m->listen_fd, &lk, &l) && l.xsk == slot &&
		    !bpf_map_delete_elem(m->listen_fd, &lk)) {
			prev = NULL;
			n++;
		}
	}
	if (n)
		xiw_log(XIW_LOG_INFO, "xsk: removed %d stale flows/listeners of XSKMAP slot %u",
			n, slot);
}

void xsk_flow_key4(struct xiw_xdp_flow_key *k, uint32_t raddr, uint16_t rport,
		   uint32_t laddr, uint16_t lport)
{
	memset(k, 0, sizeof(*k));
	k->saddr[0] = raddr;
	k->daddr[0] = laddr;
	k->sport = htons(rport);
	k->dport = htons(lport);
	k->family = XIW_XDP_FAMILY_IPV4;
}

int xsk_flow_add(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k,
		 uint32_t conn_id, uint32_t slot)
{
	struct xiw_xdp_flow f = { .conn_id = conn_id, .xsk = slot };

	return bpf_map_update_elem(m->flows_fd, k, &f, BPF_ANY) ? -errno : 0;
}

void xsk_flow_del(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k)
{
	bpf_map_delete_elem(m->flows_fd, k);
}

int xsk_flow_set_flags(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k,
		       uint32_t flags, uint32_t mpa_seq0)
{
	struct xiw_xdp_flow f;

	if (bpf_map_lookup_elem(m->flows_fd, k, &f))
		return -errno;
	f.flags = flags;
	f.mpa_seq0 = mpa_seq0;
	/* packets/bytes may lose the few increments made meanwhile */
	return bpf_map_update_elem(m->flows_fd, k, &f, BPF_EXIST) ? -errno : 0;
}

int xsk_flow_get(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k,
		 struct xiw_xdp_flow *f)
{
	return bpf_map_lookup_elem(m->flows_fd, k, f) ? -errno : 0;
}

int xsk_flow_set_track(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k,
		       uint32_t seq, uint32_t state)
{
	struct xiw_xdp_flow f;

	if (bpf_map_lookup_elem(m->flows_fd, k, &f))
		return -errno;
	f.flags |= XIW_XDP_FLOW_TRACK;
	f.fpdu_seq = seq;
	f.fpdu_state = state;
	/* BPF_EXIST: a flow deleted meanwhile stays deleted */
	return bpf_map_update_elem(m->flows_fd, k, &f, BPF_EXIST) ? -errno : 0;
}

int xsk_listen_add(const struct xsk_maps *m, uint16_t port, uint32_t id,
		   uint32_t slot)
{
	struct xiw_xdp_listen_key k = { .port = htons(port),
					.family = XIW_XDP_FAMILY_IPV4 };
	struct xiw_xdp_listen v = { .listen_id = id, .xsk = slot };

	return bpf_map_update_elem(m->listen_fd, &k, &v, BPF_ANY) ? -errno : 0;
}

void xsk_listen_del(const struct xsk_maps *m, uint16_t port)
{
	struct xiw_xdp_listen_key k = { .port = htons(port),
					.family = XIW_XDP_FAMILY_IPV4 };

	bpf_map_delete_elem(m->listen_fd, &k);
}
