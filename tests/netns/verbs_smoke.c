// SPDX-License-Identifier: MIT
/*
 * verbs_smoke — the object life cycle through the public verbs API only,
 * against xiwarp's drop-in libibverbs: device, PD, MR, completion channel,
 * CQ, RC QP, RESET -> INIT -> ERR (a posted receive is flushed and raises
 * a CQ event), and destruction in fio's order (CQ before QP must fail with
 * EBUSY, not crash). No peer, no connection.
 *
 * usage: verbs_smoke [DEVICE]   (default xiw_lo)
 * Exit: 0 all checks passed, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

static int failures;

#define CHECK(cond, ...)                                                 \
	do {                                                             \
		if (cond) {                                              \
			printf("ok   - ");                               \
		} else {                                                 \
			printf("FAIL - ");                               \
			failures++;                                      \
		}                                                        \
		printf(__VA_ARGS__);                                     \
		printf("\n");                                            \
	} while (0)

#define REQUIRE(cond, ...)                                               \
	do {                                                             \
		CHECK(cond, __VA_ARGS__);                                \
		if (!(cond))                                             \
			exit(1);                                         \
	} while (0)

struct res {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char buf[4096];
};

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n, i;

	list = ibv_get_device_list(&n);
	REQUIRE(list != NULL, "ibv_get_device_list: %d device(s)", list ? n : -1);
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		CHECK(list[i]->transport_type == IBV_TRANSPORT_IWARP &&
		      list[i]->node_type == IBV_NODE_RNIC,
		      "%s is an iWARP RNIC (transport %d, node %d)", name,
		      list[i]->transport_type, list[i]->node_type);
		ctx = ibv_open_device(list[i]);
	}
	ibv_free_device_list(list);
	REQUIRE(ctx != NULL, "ibv_open_device(%s)", name);
	return ctx;
}

static void query_dev(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr port;
	union ibv_gid gid;
	__be16 pkey;
	int ret;

	ret = ibv_query_device_ex(ctx, NULL, &dx);
	CHECK(ret == 0 && dx.orig_attr.phys_port_cnt == 1 &&
	      dx.orig_attr.max_qp_wr > 0,
	      "ibv_query_device_ex: ret %d ports %d max_qp_wr %d", ret,
	      dx.orig_attr.phys_port_cnt, dx.orig_attr.max_qp_wr);
	ret = ibv_query_port(ctx, 1, &port);
	CHECK(ret == 0 && port.state == IBV_PORT_ACTIVE &&
	      port.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "ibv_query_port(1): ret %d state %d link_layer %d", ret,
	      port.state, port.link_layer);
	ret = ibv_query_gid(ctx, 1, 0, &gid);
	CHECK(ret == 0, "ibv_query_gid(1, 0): ret %d", ret);
	ret = ibv_query_pkey(ctx, 1, 0, &pkey);
	CHECK(ret == 0 && pkey == 0xffff, "ibv_query_pkey: ret %d pkey %#x",
	      ret, pkey);
}

static void unsupported(struct res *r)
{
	struct ibv_cq_init_attr_ex cqx = { .cqe = 8 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_qp_init_attr ud = {
		.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_async_event ev;
	void *p;

	errno = 0;
	p = ibv_create_qp(r->pd, &ud);
	CHECK(!p && errno == EOPNOTSUPP, "UD QP refused with EOPNOTSUPP (errno %d)", errno);
	p = ibv_create_srq(r->pd, &sa);
	CHECK(p && !ibv_query_srq(p, &sa.attr) && sa.attr.max_wr >= 8 &&
	      !ibv_destroy_srq(p), "SRQ created, queried, destroyed");
	errno = 0;
	p = ibv_create_cq_ex(r->ctx, &cqx);
	CHECK(!p && errno == EOPNOTSUPP, "create_cq_ex refused with EOPNOTSUPP (errno %d)", errno);
	fcntl(r->ctx->async_fd, F_SETFL, O_NONBLOCK);
	CHECK(!ibv_get_async_event(r->ctx, &ev) &&
	      ev.event_type == IBV_EVENT_PORT_ACTIVE,
	      "async_fd: the port-active event of the open");
	ibv_ack_async_event(&ev);
	errno = 0;
	CHECK(ibv_get_async_event(r->ctx, &ev) == -1 && errno == EAGAIN,
	      "then none pending: EAGAIN on non-blocking async_fd (errno %d)", errno);
}

static void create(struct res *r)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = NULL, .recv_cq = NULL, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	r->pd = ibv_alloc_pd(r->ctx);
	REQUIRE(r->pd && r->pd->context == r->ctx, "ibv_alloc_pd");
	r->mr = ibv_reg_mr(r->pd, r->buf, sizeof(r->buf), IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	REQUIRE(r->mr != NULL, "ibv_reg_mr 4 KiB (errno %d)", errno);
	CHECK(r->mr->addr == r->buf && r->mr->length == sizeof(r->buf) &&
	      r->mr->lkey == r->mr->rkey,
	      "MR addr/length right, lkey == rkey (STag %#x)", r->mr->lkey);
	r->ch = ibv_create_comp_channel(r->ctx);
	REQUIRE(r->ch && r->ch->fd >= 0, "ibv_create_comp_channel (fd %d)",
		r->ch ? r->ch->fd : -1);
	r->cq = ibv_create_cq(r->ctx, 16, r, r->ch, 0);
	REQUIRE(r->cq != NULL, "ibv_create_cq(16) (errno %d)", errno);
	CHECK(r->cq->cqe >= 16 && r->cq->cq_context == r && r->cq->channel == r->ch,
	      "CQ cqe %d >= 16, cq_context and channel set", r->cq->cqe);
	ia.send_cq = ia.recv_cq = r->cq;
	r->qp = ibv_create_qp(r->pd, &ia);
	REQUIRE(r->qp != NULL, "ibv_create_qp(RC) (errno %d)", errno);
	CHECK(r->qp->state == IBV_QPS_RESET && r->qp->qp_type == IBV_QPT_RC &&
	      r->qp->pd == r->pd && r->qp->send_cq == r->cq,
	      "QP %u: RESET, RC, pd and cq set", r->qp->qp_num);
}

static void to_init(struct res *r)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_qp_init_attr ia;
	int ret;

	ret = ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	CHECK(ret == 0, "ibv_modify_qp RESET -> INIT: ret %d", ret);
	memset(&a, 0, sizeof(a));
	ret = ibv_query_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_CAP, &ia);
	CHECK(ret == 0 && a.qp_state == IBV_QPS_INIT,
	      "ibv_query_qp: ret %d state %d (INIT = %d)", ret, a.qp_state,
	      IBV_QPS_INIT);
}

/* A receive posted in INIT is flushed by the move to ERR; the armed CQ
 * signals the channel. */
static void flush_to_err(struct res *r)
{
	struct ibv_sge sge = { (uintptr_t)r->buf, 64, r->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 0x5eed, .sg_list = &sge, .num_sge = 1 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct pollfd pfd = { .fd = r->ch->fd, .events = POLLIN };
	struct ibv_recv_wr *bad = NULL;
	struct ibv_wc wc;
	struct ibv_cq *ecq = NULL;
	void *ectx = NULL;
	int ret, n;

	CHECK(ibv_poll_cq(r->cq, 1, &wc) == 0, "CQ starts empty");
	CHECK(ibv_req_notify_cq(r->cq, 0) == 0, "ibv_req_notify_cq");
	fcntl(r->ch->fd, F_SETFL, O_NONBLOCK);
	errno = 0;
	CHECK(ibv_get_cq_event(r->ch, &ecq, &ectx) == -1 && errno == EAGAIN,
	      "no CQ event yet: EAGAIN on non-blocking channel (errno %d)", errno);
	ret = ibv_post_recv(r->qp, &wr, &bad);
	CHECK(ret == 0, "ibv_post_recv in INIT: ret %d", ret);
	ret = ibv_modify_qp(r->qp, &a, IBV_QP_STATE);
	CHECK(ret == 0, "ibv_modify_qp -> ERR: ret %d", ret);
	n = ibv_poll_cq(r->cq, 1, &wc);
	CHECK(n == 1 && wc.wr_id == 0x5eed && wc.status == IBV_WC_WR_FLUSH_ERR,
	      "receive flushed: n %d wr_id %#llx status %s", n,
	      n == 1 ? (unsigned long long)wc.wr_id : 0ULL,
	      n == 1 ? ibv_wc_status_str(wc.status) : "-");
	ret = poll(&pfd, 1, 2000);
	CHECK(ret == 1, "completion channel fd readable (poll %d)", ret);
	ret = ibv_get_cq_event(r->ch, &ecq, &ectx);
	CHECK(ret == 0 && ecq == r->cq && ectx == r,
	      "ibv_get_cq_event: ret %d, our CQ and cq_context", ret);
	if (ret == 0)
		ibv_ack_cq_events(ecq, 1);
}

/* fio's order: CQ before QP must be refused, then everything goes. */
static void destroy(struct res *r)
{
	int ret;

	ret = ibv_destroy_cq(r->cq);
	CHECK(ret == EBUSY, "ibv_destroy_cq with a live QP: %d (EBUSY = %d)", ret, EBUSY);
	ret = ibv_destroy_comp_channel(r->ch);
	CHECK(ret == EBUSY, "ibv_destroy_comp_channel with a live CQ: %d", ret);
	ret = ibv_dealloc_pd(r->pd);
	CHECK(ret == EBUSY, "ibv_dealloc_pd with a live QP/MR: %d", ret);
	CHECK(ibv_destroy_qp(r->qp) == 0, "ibv_destroy_qp");
	CHECK(ibv_destroy_cq(r->cq) == 0, "ibv_destroy_cq");
	CHECK(ibv_destroy_comp_channel(r->ch) == 0, "ibv_destroy_comp_channel");
	CHECK(ibv_dereg_mr(r->mr) == 0, "ibv_dereg_mr");
	CHECK(ibv_dealloc_pd(r->pd) == 0, "ibv_dealloc_pd");
	CHECK(ibv_close_device(r->ctx) == 0, "ibv_close_device");
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "xiw_lo";
	static struct res r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	r.ctx = open_dev(name);
	query_dev(r.ctx);
	create(&r);
	unsupported(&r);
	to_init(&r);
	flush_to_err(&r);
	destroy(&r);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
