// SPDX-License-Identifier: MIT
/*
 * Making connections over the LLP seam (llp.h): which transport a new
 * connection or listener gets.
 *
 * XIW_TRANSPORT=ksock (default) | xsk, read once per process. ksock: a
 * kernel TCP socket. xsk: AF_XDP + utcp, but only towards/on an interface
 * where the xiwarp XDP program (bpf/xiw_xdp.bpf.c) is attached; elsewhere
 * the connection falls back to ksock with one log line per interface.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "xiwarp/xiwarp.h"
#include "ksock.h"
#include "llp.h"
#include "xsk.h"

enum llp_transport { LLP_KSOCK, LLP_XSK };

/* XIW_TRANSPORT, parsed once (racing first readers agree). */
static enum llp_transport llp_transport(void)
{
	static int t = -1;
	int v = __atomic_load_n(&t, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *e = getenv("XIW_TRANSPORT");

		v = LLP_KSOCK;
		if (e && !strcmp(e, "xsk"))
			v = LLP_XSK;
		else if (e && *e && strcmp(e, "ksock"))
			xiw_log(XIW_LOG_WARN, "XIW_TRANSPORT=%s: use ksock or xsk; using ksock", e);
		__atomic_store_n(&t, v, __ATOMIC_RELAXED);
	}
	return (enum llp_transport)v;
}

static void (*ack_wake_fn)(void);

void xiw_llp_set_ack_wake(void (*fn)(void))
{
	__atomic_store_n(&ack_wake_fn, fn, __ATOMIC_RELEASE);
}

void xiw_llp_ack_wake(void)
{
	void (*fn)(void) = __atomic_load_n(&ack_wake_fn, __ATOMIC_ACQUIRE);

	if (fn)
		fn();
}

socklen_t xiw_llp_sa_len(const struct sockaddr *sa)
{
	return xiw_ksock_sa_len(sa);
}

int xiw_llp_connect(const struct sockaddr *src, const struct sockaddr *dst,
		    const struct xiw_llp_cb *cb, void *arg, struct xiw_llp **out)
{
	if (llp_transport() == LLP_XSK) {
		int err = xiw_xsk_connect(src, dst, cb, arg, out);

		if (err != -EOPNOTSUPP)
			return err;
	}
	return xiw_ksock_connect(src, dst, cb, arg, out);
}

/**
 * struct xiw_llp_listener - a kernel TCP listener (always: it reserves the
 * port and serves every interface without the XDP program) and, with
 * XIW_TRANSPORT=xsk, the same port registered with the XDP program of the
 * interfaces the address covers.
 */
struct xiw_llp_listener {
	struct xiw_ksock_listener *ks;
	struct xsk_listener *xs;
};

struct llp_xsk_pre {
	struct xiw_llp_listener *ls;
	const struct sockaddr *addr;
	xiw_llp_accept_fn fn;
	void *arg;
};

/*
 * Between the kernel listener's bind() and listen(): steer the port's
 * SYNs to xsk first, so no client that saw the port listening (ss -ltn,
 * a refused-connect retry) gets in over kernel TCP before xsk is ready.
 */
static void llp_xsk_pre(const struct sockaddr_storage *b, void *arg)
{
	struct llp_xsk_pre *x = arg;
	uint16_t port = ntohs(b->ss_family == AF_INET6 ?
			      ((const struct sockaddr_in6 *)b)->sin6_port :
			      ((const struct sockaddr_in *)b)->sin_port);

	x->ls->xs = xiw_xsk_listen(x->addr, port, x->fn, x->arg);
}

int xiw_llp_listen(const struct sockaddr *addr, int backlog,
		   xiw_llp_accept_fn fn, void *arg,
		   struct xiw_llp_listener **out, struct sockaddr_storage *bound)
{
	struct xiw_llp_listener *ls = calloc(1, sizeof(*ls));
	struct llp_xsk_pre x = { ls, addr, fn, arg };
	struct sockaddr_storage b;
	int err;

	if (!ls)
		return -ENOMEM;
	err = xiw_ksock_listen_pre(addr, backlog, fn, arg,
				   llp_transport() == LLP_XSK ? llp_xsk_pre : NULL,
				   &x, &ls->ks, &b);
	if (err) {
		xiw_xsk_listener_close(ls->xs);
		free(ls);
		return err;
	}
	if (bound)
		*bound = b;
	*out = ls;
	return 0;
}

void xiw_llp_listener_close(struct xiw_llp_listener *ls)
{
	if (!ls)
		return;
	xiw_xsk_listener_close(ls->xs);
	xiw_ksock_listener_close(ls->ks);
	free(ls);
}
