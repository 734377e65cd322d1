// SPDX-License-Identifier: MIT
/*
 * xiwctl: attach, detach and inspect xiwarp's XDP program (the kernel half
 * of the xsk transport, bpf/xiw_xdp.bpf.c, embedded as a libbpf skeleton).
 *
 *   xiwctl attach IF [--mode native|generic] [--zc] [--replace]
 *   xiwctl detach IF [--force]
 *   xiwctl stat [IF]
 *
 * One XDP program per interface, attached with bpf_xdp_attach (netlink):
 * libxdp's dispatcher fails on these machines. The attachment outlives
 * xiwctl; the maps live as long as the program. `ip link set dev IF xdp
 * obj build/bpf/xiw_xdp.bpf.o sec xdp.frags` attaches the same program;
 * stat and detach work on it too (maps are found from the program id).
 *
 * Exit status: 0 done, 1 failed (the message says what to do), 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xiwctl.h"
#include "xiw_xdp.skel.h"

static const char usage_main[] =
	"usage: xiwctl VERB [ARGS]   (xiwctl VERB --help for details)\n"
	"\n"
	"  attach IF [--mode native|generic] [--zc] [--replace]\n"
	"                 attach xiwarp's XDP program (xiw_xdp) to IF\n"
	"  detach IF [--force]\n"
	"                 remove it again\n"
	"  stat [IF]      counters, registered connections and listeners of\n"
	"                 xiw_xdp on IF (default: every interface that has it)\n"
	"\n"
	"Needs root (CAP_BPF, CAP_NET_ADMIN). Works per network namespace:\n"
	"ip netns exec NS xiwctl ...\n";

static const char usage_attach[] =
	"usage: xiwctl attach IF [--mode native|generic] [--zc] [--replace]\n"
	"\n"
	"Load xiw_xdp and attach it to interface IF. Frames of connections the\n"
	"xiwarp engine registers (and SYNs to its listening ports) go to its\n"
	"AF_XDP sockets; everything else passes to the kernel unchanged.\n"
	"\n"
	"  --mode native   driver XDP (fails if the driver has none)\n"
	"  --mode generic  skb XDP, works on every interface (slower; keeps\n"
	"                  TSO for kernel TCP on a veth)\n"
	"                  default: native, else generic\n"
	"  --zc            require zero-copy AF_XDP: checked now by binding a\n"
	"                  zero-copy socket to queue 0 (veth and virtio_net\n"
	"                  here are copy-mode only); recorded for the engine\n"
	"  --replace       replace another XDP program on IF (default: refuse)\n"
	"\n"
	"Alternative without xiwctl:\n"
	"  ip link set dev IF xdp obj build/bpf/xiw_xdp.bpf.o sec xdp.frags\n";

static const char usage_detach[] =
	"usage: xiwctl detach IF [--force]\n"
	"\n"
	"Remove xiw_xdp from interface IF (whoever attached it: xiwctl or\n"
	"ip link). An XDP program that is not xiw_xdp is left alone unless\n"
	"--force. Nothing attached: says so, exit 0.\n";

static const char usage_stat[] =
	"usage: xiwctl stat [IF]\n"
	"\n"
	"Show xiw_xdp on IF, or on every interface of this network namespace\n"
	"that has it: attach mode, the counters summed over CPUs (steered,\n"
	"passed, parsed, dropped, malformed and the rest), the connections in\n"
	"the flow map and the listening ports. The retransmitted (segments)\n"
	"and SACKed (octets) columns are utcp's, the user-space TCP of the\n"
	"processes that own the AF_XDP sockets (they add them to the map\n"
	"xiw_slot_cnt); they are cumulative since the program was loaded.\n";

static bool want_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

/* "xiwctl: ..." for a failed libbpf/bpf call, with what to do about it */
static void say_err(const char *what, const char *ifname, int err)
{
	fprintf(stderr, "xiwctl: %s %s: %s\n", what, ifname, strerror(-err));
	if (err == -EPERM || err == -EACCES)
		fprintf(stderr, "xiwctl: BPF and XDP need root (CAP_BPF, "
			"CAP_NET_ADMIN, CAP_SYS_ADMIN): run as root or with sudo\n");
}

/* query IF; on -ENODEV and other errors print the reason */
static int query(const char *ifname, struct xiwctl_att *a)
{
	int err = xiwctl_att_query(ifname, a);

	if (err == -ENODEV)
		fprintf(stderr, "xiwctl: no interface '%s' in this network "
			"namespace (see 'ip link'; for a namespace: ip netns "
			"exec NS xiwctl ...)\n", ifname);
	else if (err)
		say_err("querying XDP on", ifname, err);
	return err;
}

static __u32 mode_flags(enum xiwctl_mode m)
{
	switch (m) {
	case XIWCTL_MODE_NATIVE: return XDP_FLAGS_DRV_MODE;
	case XIWCTL_MODE_GENERIC: return XDP_FLAGS_SKB_MODE;
	case XIWCTL_MODE_HW: return XDP_FLAGS_HW_MODE;
	default: return 0;
	}
}

/* Remove whatever @a found attached (in its mode; both for "multi"). */
static int detach_att(const struct xiwctl_att *a)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = a->prog_fd);
	int err;

	if (a->mode == XIWCTL_MODE_MULTI) {
		err = bpf_xdp_detach(a->ifindex, XDP_FLAGS_DRV_MODE, NULL);
		if (!err)
			err = bpf_xdp_detach(a->ifindex, XDP_FLAGS_SKB_MODE, NULL);
		return err;
	}
	return bpf_xdp_detach(a->ifindex, mode_flags(a->mode), &o);
}

static int write_cfg(struct xiw_xdp *skel, __u32 flags)
{
	struct xiw_xdp_cfg cfg = { .flags = flags, .abi = XIW_XDP_ABI_VERSION };
	__u32 zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xiw_xdp_cfg), &zero,
				&cfg, BPF_ANY))
		return -errno;
	return 0;
}

static int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "zc", no_argument, NULL, 'z' },
		{ "replace", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	enum xiwctl_mode mode = XIWCTL_MODE_NONE;	/* NONE: auto */
	bool zc = false, replace = false;
	struct xiw_xdp *skel = NULL;
	struct xiwctl_att a;
	const char *ifname;
	__u32 flags;
	int c, err;

	if (want_help(argc, argv)) {
		fputs(usage_attach, stdout);
		return 0;
	}
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "native") || !strcmp(optarg, "drv"))
				mode = XIWCTL_MODE_NATIVE;
			else if (!strcmp(optarg, "generic") || !strcmp(optarg, "skb"))
				mode = XIWCTL_MODE_GENERIC;
			else {
				fprintf(stderr, "xiwctl attach: --mode is native "
					"or generic, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'z': zc = true; break;
		case 'r': replace = true; break;
		default:
			fputs(usage_attach, stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "xiwctl attach: give exactly one interface\n");
		fputs(usage_attach, stderr);
		return 2;
	}
	ifname = argv[optind];
	if (query(ifname, &a))
		return 1;
	if (a.prog_id && a.ours && !replace) {
		printf("xiwctl: %s already has xiw_xdp (prog id %u, %s mode); "
		       "to change mode or --zc: xiwctl detach %s first\n",
		       ifname, a.prog_id, xiwctl_mode_name(a.mode), ifname);
		xiwctl_att_close(&a);
		return mode == XIWCTL_MODE_NONE || mode == a.mode ? 0 : 1;
	}
	if (a.prog_id && !replace) {
		fprintf(stderr, "xiwctl: %s already has XDP program '%s' (id %u, "
			"%s mode). xiwarp must be the interface's only XDP "
			"program (libxdp's dispatcher does not work here): "
			"remove it (ip link set dev %s xdp off) or pass "
			"--replace\n", ifname, a.prog_name, a.prog_id,
			xiwctl_mode_name(a.mode), ifname);
		xiwctl_att_close(&a);
		return 1;
	}
	if (zc) {
		err = xiwctl_zc_probe(a.ifindex, 0);
		if (err) {
			fprintf(stderr, "xiwctl: %s: no zero-copy AF_XDP (binding "
				"a zero-copy socket to queue 0: %s)%s; attach "
				"without --zc for copy mode\n", ifname,
				strerror(-err), err == -EOPNOTSUPP ?
				": the driver has no XSK zero-copy (veth and "
				"virtio_net here have none)" : "");
			xiwctl_att_close(&a);
			return 1;
		}
	}
	skel = xiw_xdp__open_and_load();
	if (!skel) {
		err = -errno;
		say_err("loading xiw_xdp for", ifname, err);
		xiwctl_att_close(&a);
		return 1;
	}
	if (a.prog_id && replace) {
		err = detach_att(&a);
		if (err) {
			say_err("removing the old program from", ifname, err);
			goto destroy;
		}
	}
	flags = XDP_FLAGS_UPDATE_IF_NOEXIST |
		mode_flags(mode == XIWCTL_MODE_NONE ? XIWCTL_MODE_NATIVE : mode);
	err = bpf_xdp_attach(a.ifindex, bpf_program__fd(skel->progs.xiw_xdp),
			     flags, NULL);
	if (err && mode == XIWCTL_MODE_NONE &&
	    (err == -EOPNOTSUPP || err == -EINVAL)) {
		printf("xiwctl: %s: no native XDP (%s), using generic mode\n",
		       ifname, strerror(-err));
		mode = XIWCTL_MODE_GENERIC;
		flags = XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_SKB_MODE;
		err = bpf_xdp_attach(a.ifindex,
				     bpf_program__fd(skel->progs.xiw_xdp),
				     flags, NULL);
	} else if (mode == XIWCTL_MODE_NONE) {
		mode = XIWCTL_MODE_NATIVE;
	}
	if (err) {
		say_err("attaching xiw_xdp to", ifname, err);
		if (err == -EBUSY || err == -EEXIST)
			fprintf(stderr, "xiwctl: %s got another XDP program "
				"meanwhile: see 'ip link show dev %s'\n",
				ifname, ifname);
		if (err == -EOPNOTSUPP && mode == XIWCTL_MODE_NATIVE)
			fprintf(stderr, "xiwctl: the driver of %s has no "
				"native XDP: use --mode generic\n", ifname);
		goto destroy;
	}
	err = write_cfg(skel, (zc ? XIW_XDP_CFG_ZEROCOPY : 0) |
			(mode == XIWCTL_MODE_GENERIC ? XIW_XDP_CFG_MODE_GENERIC : 0));
	if (err)
		fprintf(stderr, "xiwctl: warning: writing %s: %s (attached "
			"anyway)\n", XIW_XDP_MAP_CFG, strerror(-err));
	{
		struct bpf_prog_info pi;
		__u32 len = sizeof(pi);

		memset(&pi, 0, sizeof(pi));
		bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.xiw_xdp),
				       &pi, &len);
		printf("xiwctl: attached xiw_xdp (prog id %u) to %s, %s mode, "
		       "%s\n", pi.id, ifname, xiwctl_mode_name(mode),
		       zc ? "zero-copy AF_XDP" : "copy-mode AF_XDP");
	}
	err = 0;
destroy:
	xiw_xdp__destroy(skel);	/* the attachment keeps the program */
	xiwctl_att_close(&a);
	return err ? 1 : 0;
}

static int cmd_detach(int argc, char **argv)
{
	struct xiwctl_att a;
	bool force = false;
	const char *ifname = NULL;
	int i, err;

	if (want_help(argc, argv)) {
		fputs(usage_detach, stdout);
		return 0;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force"))
			force = true;
		else if (argv[i][0] == '-' || ifname) {
			fprintf(stderr, "xiwctl detach: unexpected '%s'\n", argv[i]);
			fputs(usage_detach, stderr);
			return 2;
		} else
			ifname = argv[i];
	}
	if (!ifname) {
		fprintf(stderr, "xiwctl detach: which interface?\n");
		fputs(usage_detach, stderr);
		return 2;
	}
	if (query(ifname, &a))
		return 1;
	if (!a.prog_id) {
		printf("xiwctl: %s has no XDP program: nothing to detach\n", ifname);
		return 0;
	}
	if (strcmp(a.prog_name, XIW_XDP_PROG_NAME) && !force) {
		fprintf(stderr, "xiwctl: %s has XDP program '%s' (id %u), not "
			"xiw_xdp: left alone (--force removes it anyway)\n",
			ifname, a.prog_name, a.prog_id);
		xiwctl_att_close(&a);
		return 1;
	}
	err = detach_att(&a);
	if (err)
		say_err("detaching from", ifname, err);
	else
		printf("xiwctl: detached %s (prog id %u, %s mode) from %s\n",
		       a.prog_name, a.prog_id, xiwctl_mode_name(a.mode), ifname);
	xiwctl_att_close(&a);
	return err ? 1 : 0;
}

static int cmd_stat(int argc, char **argv)
{
	struct if_nameindex *ifs, *it;
	struct xiwctl_att a;
	int found = 0, rc = 0;

	if (want_help(argc, argv)) {
		fputs(usage_stat, stdout);
		return 0;
	}
	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fputs(usage_stat, stderr);
		return 2;
	}
	if (argc == 2) {
		if (query(argv[1], &a))
			return 1;
		if (!a.prog_id) {
			fprintf(stderr, "xiwctl: %s has no XDP program (attach "
				"one: xiwctl attach %s)\n", argv[1], argv[1]);
			return 1;
		}
		if (!a.ours) {
			fprintf(stderr, "xiwctl: %s: XDP program '%s' (id %u) is "
				"not a usable xiw_xdp: %s\n", argv[1],
				a.prog_name, a.prog_id, a.why);
			xiwctl_att_close(&a);
			return 1;
		}
		rc = xiwctl_stat_one(&a) ? 1 : 0;
		xiwctl_att_close(&a);
		return rc;
	}
	ifs = if_nameindex();
	if (!ifs) {
		perror("xiwctl: if_nameindex");
		return 1;
	}
	for (it = ifs; it->if_index; it++) {
		if (xiwctl_att_query(it->if_name, &a))
			continue;
		if (a.ours) {
			if (found++)
				printf("\n");
			if (xiwctl_stat_one(&a))
				rc = 1;
		} else if (a.prog_id && !strcmp(a.prog_name, XIW_XDP_PROG_NAME)) {
			fprintf(stderr, "xiwctl: %s: %s\n", it->if_name, a.why);
			rc = 1;
		}
		xiwctl_att_close(&a);
	}
	if_freenameindex(ifs);
	if (!found) {
		fprintf(stderr, "xiwctl: no interface in this network namespace "
			"has xiw_xdp (xiwctl attach IF; or look inside a "
			"namespace: ip netns exec NS xiwctl stat)\n");
		return 1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	const char *verb = argc > 1 ? argv[1] : NULL;

	if (!verb || !strcmp(verb, "--help") || !strcmp(verb, "-h") ||
	    !strcmp(verb, "help")) {
		fputs(usage_main, verb ? stdout : stderr);
		return verb ? 0 : 2;
	}
	/* libbpf's own messages (verifier log...) only with XIWCTL_DEBUG=1 */
	if (!getenv("XIWCTL_DEBUG"))
		libbpf_set_print(NULL);
	if (!strcmp(verb, "attach"))
		return cmd_attach(argc - 1, argv + 1);
	if (!strcmp(verb, "detach"))
		return cmd_detach(argc - 1, argv + 1);
	if (!strcmp(verb, "stat") || !strcmp(verb, "stats") ||
	    !strcmp(verb, "status"))
		return cmd_stat(argc - 1, argv + 1);
	fprintf(stderr, "xiwctl: unknown verb '%s'\n\n%s", verb, usage_main);
	return 2;
}
