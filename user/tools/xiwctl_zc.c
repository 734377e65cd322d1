// SPDX-License-Identifier: MIT
/*
 * xiwctl attach --zc: does the interface take a zero-copy AF_XDP socket?
 * Binds a throw-away socket with XDP_ZEROCOPY to one RX queue (raw
 * syscalls: a UMEM, fill/completion/RX ring sizes, no rings mapped). On
 * these machines veth and Firecracker's virtio_net answer EOPNOTSUPP.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/if_xdp.h>
#include "xiwctl.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

#define ZC_FRAMES 64
#define ZC_FRAME 4096

/*
 * 0 when a zero-copy AF_XDP socket binds to @ifindex queue @queue, else
 * -errno of the step that failed (bind: -EOPNOTSUPP for a driver without
 * XSK zero-copy, -EINVAL for a queue that does not exist).
 */
int xiwctl_zc_probe(int ifindex, __u32 queue)
{
	struct xdp_umem_reg reg = { 0 };
	struct sockaddr_xdp sa = { 0 };
	size_t len = ZC_FRAMES * ZC_FRAME;
	int fd, sz = ZC_FRAMES, err = 0;
	void *mem;

	fd = socket(AF_XDP, SOCK_RAW, 0);
	if (fd < 0)
		return -errno;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		err = -errno;
		goto close_fd;
	}
	reg.addr = (uintptr_t)mem;
	reg.len = len;
	reg.chunk_size = ZC_FRAME;
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)) ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &sz, sizeof(sz)) ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &sz, sizeof(sz)) ||
	    setsockopt(fd, SOL_XDP, XDP_RX_RING, &sz, sizeof(sz))) {
		err = -errno;
		goto unmap;
	}
	sa.sxdp_family = AF_XDP;
	sa.sxdp_ifindex = (__u32)ifindex;
	sa.sxdp_queue_id = queue;
	sa.sxdp_flags = XDP_ZEROCOPY;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		err = -errno;
unmap:
	munmap(mem, len);
close_fd:
	close(fd);
	return err;
}
