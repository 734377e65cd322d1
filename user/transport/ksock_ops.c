// SPDX-License-Identifier: MIT
/*
 * ksock's ops table (llp.h): the generic handle is the first member of
 * struct xiw_ksock, so each entry only converts the pointer.
 */
#include "ksock.h"
#include "llp.h"

#define KS(l) xiw_ksock_of(l)

static void op_set_owner(struct xiw_llp *l, const struct xiw_llp_cb *cb, void *arg)
{
	xiw_ksock_set_owner(KS(l), cb, arg);
}

static ssize_t op_send(struct xiw_llp *l, const struct iovec *iov, int n, bool more)
{
	return xiw_ksock_send(KS(l), iov, n, more);
}

static ssize_t op_recv(struct xiw_llp *l, struct iovec *iov, int n)
{
	return xiw_ksock_recv(KS(l), iov, n);
}

static void op_want_write(struct xiw_llp *l, bool on)
{
	xiw_ksock_want_write(KS(l), on);
}

static void op_pause_read(struct xiw_llp *l, bool paused)
{
	xiw_ksock_pause_read(KS(l), paused);
}

static void op_app_read(struct xiw_llp *l, bool on)
{
	xiw_ksock_app_read(KS(l), on);
}

static int op_shutdown(struct xiw_llp *l)
{
	return xiw_ksock_shutdown(KS(l));
}

static void op_abort(struct xiw_llp *l)
{
	xiw_ksock_abort(KS(l));
}

static void op_close(struct xiw_llp *l)
{
	xiw_ksock_close(KS(l));
}

static int op_poll_fd(struct xiw_llp *l)
{
	return xiw_ksock_poll_fd(KS(l));
}

static uint32_t op_mss(struct xiw_llp *l)
{
	return xiw_ksock_mss(KS(l));
}

static void op_addrs(struct xiw_llp *l, struct sockaddr_storage *local,
		     struct sockaddr_storage *peer)
{
	xiw_ksock_addrs(KS(l), local, peer);
}

static int op_ack_state(struct xiw_llp *l, uint32_t *una, uint32_t *outq)
{
	return xiw_ksock_ack_state(KS(l), una, outq);
}

static int op_ack_trace(struct xiw_llp *l, uint64_t cookie)
{
	return xiw_ksock_ack_trace(KS(l), cookie);
}

static int op_ack_outq(struct xiw_llp *l, uint32_t *outq)
{
	return xiw_ksock_ack_outq(KS(l), outq);
}

static int op_ack_arm(struct xiw_llp *l, uint32_t target)
{
	return xiw_ksock_ack_arm(KS(l), target);
}

static int op_ack_armed(struct xiw_llp *l)
{
	return xiw_ksock_ack_armed(KS(l));
}

static void op_ack_mark(struct xiw_llp *l, uint32_t pos)
{
	xiw_ksock_ack_mark(KS(l), pos);
}

static int op_ack_callbacks(struct xiw_llp *l, bool on)
{
	return xiw_ksock_ack_callbacks(KS(l), on);
}

static bool op_zc_usable(struct xiw_llp *l)
{
	return xiw_ksock_zc_usable(KS(l));
}

static ssize_t op_send_zc(struct xiw_llp *l, const struct iovec *iov, int n,
			  uint32_t *id, bool *zc)
{
	return xiw_ksock_send_zc(KS(l), iov, n, id, zc);
}

static bool op_zc_released(struct xiw_llp *l, uint32_t id)
{
	return xiw_ksock_zc_released(KS(l), id);
}

static bool op_zc_outstanding(struct xiw_llp *l)
{
	return xiw_ksock_zc_outstanding(KS(l));
}

static int op_zc_quiesce(struct xiw_llp *l, unsigned int max_ms)
{
	return xiw_ksock_zc_quiesce(KS(l), max_ms);
}

const struct xiw_llp_ops xiw_ksock_ops = {
	.name = "ksock",
	.readable_level = true,
	.set_owner = op_set_owner,
	.send = op_send,
	.recv = op_recv,
	.want_write = op_want_write,
	.pause_read = op_pause_read,
	.app_read = op_app_read,
	.shutdown = op_shutdown,
	.abort = op_abort,
	.close = op_close,
	.poll_fd = op_poll_fd,
	.mss = op_mss,
	.addrs = op_addrs,
	.ack_state = op_ack_state,
	.ack_trace = op_ack_trace,
	.ack_outq = op_ack_outq,
	.ack_arm = op_ack_arm,
	.ack_armed = op_ack_armed,
	.ack_mark = op_ack_mark,
	.ack_callbacks = op_ack_callbacks,
	.zc_usable = op_zc_usable,
	.send_zc = op_send_zc,
	.zc_released = op_zc_released,
	.zc_outstanding = op_zc_outstanding,
	.zc_quiesce = op_zc_quiesce,
};
