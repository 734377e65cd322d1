// SPDX-License-Identifier: MIT
/*
 * xiwctl: the XDP program attached to an interface and its maps, found
 * from the program's id (bpf_xdp_query -> bpf_prog_get_fd_by_id -> the
 * program's map ids -> bpf_map_get_fd_by_id), never from bpffs pins:
 * `ip netns exec` shows no bpffs, and `ip link ... xdp obj` pins nothing.
 * So it works the same whether xiwctl or iproute2 attached the program.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xiwctl.h"

const char *xiwctl_mode_name(enum xiwctl_mode m)
{
	switch (m) {
	case XIWCTL_MODE_NATIVE: return "native";
	case XIWCTL_MODE_GENERIC: return "generic";
	case XIWCTL_MODE_HW: return "offload";
	case XIWCTL_MODE_MULTI: return "multi";
	default: return "none";
	}
}

void xiwctl_att_close(struct xiwctl_att *a)
{
	int *fds[] = { &a->prog_fd, &a->flows_fd, &a->listen_fd, &a->xsks_fd,
		       &a->cnt_fd, &a->cfg_fd, &a->slot_cnt_fd };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

struct want {
	const char *name;
	__u32 type, key, value;
	int *fd;
};

/* Open the map @id if it is one of @w (by name) with the expected layout. */
static void take_map(__u32 id, struct want *w, size_t n, struct xiwctl_att *a)
{
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);
	size_t i;
	int fd;

	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return;
	memset(&mi, 0, sizeof(mi));
	if (bpf_obj_get_info_by_fd(fd, &mi, &len))
		goto close_fd;
	for (i = 0; i < n; i++) {
		if (strcmp(mi.name, w[i].name))
			continue;
		if (mi.type != w[i].type || mi.key_size != w[i].key ||
		    mi.value_size != w[i].value) {
			snprintf(a->why, sizeof(a->why),
				 "map %s has type %u key %u value %u, this xiwctl "
				 "expects %u/%u/%u (another build of xiw_xdp?)",
				 mi.name, mi.type, mi.key_size, mi.value_size,
				 w[i].type, w[i].key, w[i].value);
			goto close_fd;
		}
		if (*w[i].fd < 0) {
			*w[i].fd = fd;
			return;
		}
	}
close_fd:
	close(fd);
}

/*
 * Fill @a for the interface @ifname: which program is attached and, if it
 * is xiw_xdp, fds of its maps. 0 on success (also when nothing or another
 * program is attached: see @a->prog_id and @a->ours), -errno otherwise
 * (-ENODEV: no such interface).
 */
int xiwctl_att_query(const char *ifname, struct xiwctl_att *a)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct want w[] = {
		{ XIW_XDP_MAP_FLOWS, BPF_MAP_TYPE_HASH,
		  sizeof(struct xiw_xdp_flow_key), sizeof(struct xiw_xdp_flow),
		  &a->flows_fd },
		{ XIW_XDP_MAP_LISTEN, BPF_MAP_TYPE_HASH,
		  sizeof(struct xiw_xdp_listen_key),
		  sizeof(struct xiw_xdp_listen), &a->listen_fd },
		{ XIW_XDP_MAP_XSKS, BPF_MAP_TYPE_XSKMAP, 4, 4, &a->xsks_fd },
		{ XIW_XDP_MAP_CNT, BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, &a->cnt_fd },
		{ XIW_XDP_MAP_CFG, BPF_MAP_TYPE_ARRAY, 4,
		  sizeof(struct xiw_xdp_cfg), &a->cfg_fd },
		/* optional (last): older objects have no slot counters */
		{ XIW_XDP_MAP_SLOT_CNT, BPF_MAP_TYPE_ARRAY, 4,
		  sizeof(struct xiw_xdp_slot_cnt), &a->slot_cnt_fd },
	};
	const size_t nreq = sizeof(w) / sizeof(w[0]) - 1;
	struct bpf_prog_info pi;
	__u32 len = sizeof(pi), *ids = NULL, n, i;
	int err;

	memset(a, 0, sizeof(*a));
	a->prog_fd = a->flows_fd = a->listen_fd = a->xsks_fd = -1;
	a->cnt_fd = a->cfg_fd = a->slot_cnt_fd = -1;
	snprintf(a->ifname, sizeof(a->ifname), "%s", ifname);
	a->ifindex = (int)if_nametoindex(ifname);
	if (!a->ifindex)
		return -ENODEV;
	err = bpf_xdp_query(a->ifindex, 0, &q);
	if (err)
		return err;
	switch (q.attach_mode) {
	case XDP_ATTACHED_DRV: a->mode = XIWCTL_MODE_NATIVE; break;
	case XDP_ATTACHED_SKB: a->mode = XIWCTL_MODE_GENERIC; break;
	case XDP_ATTACHED_HW: a->mode = XIWCTL_MODE_HW; break;
	case XDP_ATTACHED_MULTI: a->mode = XIWCTL_MODE_MULTI; break;
	default: a->mode = XIWCTL_MODE_NONE;
	}
	a->prog_id = q.prog_id ? q.prog_id :
		     q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id;
	if (!a->prog_id)
		return 0;
	a->prog_fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (a->prog_fd < 0)
		return -errno;
	memset(&pi, 0, sizeof(pi));
	if (bpf_obj_get_info_by_fd(a->prog_fd, &pi, &len))
		return -errno;
	snprintf(a->prog_name, sizeof(a->prog_name), "%s", pi.name);
	if (strcmp(pi.name, XIW_XDP_PROG_NAME)) {
		snprintf(a->why, sizeof(a->why), "program '%s' is not %s",
			 pi.name, XIW_XDP_PROG_NAME);
		return 0;
	}
	n = pi.nr_map_ids;
	if (n) {
		ids = calloc(n, sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		memset(&pi, 0, sizeof(pi));
		pi.nr_map_ids = n;
		pi.map_ids = (__u64)(unsigned long)ids;
		len = sizeof(pi);
		if (bpf_obj_get_info_by_fd(a->prog_fd, &pi, &len)) {
			err = -errno;
			free(ids);
			return err;
		}
		if (pi.nr_map_ids < n)
			n = pi.nr_map_ids;
		for (i = 0; i < n; i++)
			take_map(ids[i], w, sizeof(w) / sizeof(w[0]), a);
		free(ids);
	}
	for (i = 0; i < nreq; i++) {
		if (*w[i].fd < 0) {
			if (!a->why[0])
				snprintf(a->why, sizeof(a->why),
					 "program %s (id %u) has no map %s",
					 pi.name, a->prog_id, w[i].name);
			return 0;
		}
	}
	a->ours = true;
	return 0;
}
