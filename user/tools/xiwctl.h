/* SPDX-License-Identifier: MIT */
/*
 * xiwctl internals: the verbs (xiwctl.c), finding the program attached to
 * an interface and its maps (xiwctl_find.c), printing counters and flows
 * (xiwctl_stat.c), the zero-copy probe (xiwctl_zc.c).
 */
#ifndef XIWCTL_H
#define XIWCTL_H

#include <stdbool.h>
#include <linux/types.h>
#include "xiwarp/abi/xdp.h"

/* the XDP program's attach modes as bpf_xdp_query reports them */
enum xiwctl_mode { XIWCTL_MODE_NONE, XIWCTL_MODE_NATIVE, XIWCTL_MODE_GENERIC,
		   XIWCTL_MODE_HW, XIWCTL_MODE_MULTI };

/**
 * struct xiwctl_att - the XDP program attached to an interface.
 * @ifindex:  the interface.
 * @ifname:   its name.
 * @prog_id:  program id (0: none attached).
 * @mode:     how it is attached.
 * @prog_name: the program's name ("xiw_xdp" for ours).
 * @ours:     the program is xiw_xdp and every map xiwctl needs was found
 *            with the key/value sizes of include/xiwarp/abi/xdp.h.
 * @why:      when !@ours and @prog_id: what did not match.
 * @prog_fd, @flows_fd, @listen_fd, @xsks_fd, @cnt_fd, @cfg_fd: open fds
 *            (-1 when absent); xiwctl_att_close() closes them.
 * @slot_cnt_fd: the per-slot counters (optional: -1 in an older build).
 */
struct xiwctl_att {
	int ifindex;
	char ifname[32];
	__u32 prog_id;
	enum xiwctl_mode mode;
	char prog_name[16];
	bool ours;
	char why[128];
	int prog_fd, flows_fd, listen_fd, xsks_fd, cnt_fd, cfg_fd;
	int slot_cnt_fd;
};

int xiwctl_att_query(const char *ifname, struct xiwctl_att *a);
void xiwctl_att_close(struct xiwctl_att *a);
const char *xiwctl_mode_name(enum xiwctl_mode m);

int xiwctl_stat_one(const struct xiwctl_att *a);

int xiwctl_zc_probe(int ifindex, __u32 queue);

#endif /* XIWCTL_H */
