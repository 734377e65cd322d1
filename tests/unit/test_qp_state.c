// SPDX-License-Identifier: MIT
/* QP verbs state machine, posting rules, queue limits, flush on ERROR. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "xiw_obj.h"

struct fix {
	struct xiw_pd *pd;
	struct xiw_cq *scq, *rcq;
	struct xiw_qp *qp;
	struct xiw_mr *mr;
	uint8_t buf[4096];
};

static int setup(void **state)
{
	static struct fix f;
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 3, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
	};

	memset(&f, 0, sizeof(f));
	f.pd = xiw_pd_alloc(NULL, NULL);
	f.scq = xiw_cq_create(NULL, 64, NULL, NULL);
	f.rcq = xiw_cq_create(NULL, 64, NULL, NULL);
	a.send_cq = &f.scq->ibv;
	a.recv_cq = &f.rcq->ibv;
	f.qp = xiw_qp_create(f.pd, &a);
	f.mr = xiw_mr_reg(f.pd, f.buf, sizeof(f.buf), (uintptr_t)f.buf,
			  IBV_ACCESS_LOCAL_WRITE);
	if (!f.qp || !f.mr)
		return -1;
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	return xiw_qp_destroy(f->qp) || xiw_mr_dereg(f->mr) ||
	       xiw_cq_destroy(f->scq) || xiw_cq_destroy(f->rcq) ||
	       xiw_pd_free(f->pd);
}

static int modify(struct xiw_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return xiw_qp_modify(qp, &a, IBV_QP_STATE);
}

static enum ibv_qp_state qstate(struct xiw_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	assert_int_equal(xiw_qp_query(qp, &a, IBV_QP_STATE, &i), 0);
	assert_int_equal(qp->ibv.state, a.qp_state);
	return a.qp_state;
}

static int post_send(struct fix *f, uint64_t id, enum ibv_wr_opcode op,
		     int flags)
{
	struct ibv_sge sge = { (uintptr_t)f->buf, 16, f->mr->ibv.lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = flags }, *bad = NULL;
	int ret = xiw_post_send(f->qp, &wr, &bad);

	if (ret)
		assert_ptr_equal(bad, &wr);
	return ret;
}

static int post_recv(struct fix *f, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)f->buf, 64, f->mr->ibv.lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;
	int ret = xiw_post_recv(f->qp, &wr, &bad);

	if (ret)
		assert_ptr_equal(bad, &wr);
	return ret;
}

static void to_rts(struct fix *f)
{
	assert_int_equal(modify(f->qp, IBV_QPS_INIT), 0);
	assert_int_equal(modify(f->qp, IBV_QPS_RTR), 0);
	assert_int_equal(modify(f->qp, IBV_QPS_RTS), 0);
}

static void test_create_caps(void **state)
{
	struct fix *f = *state;
	struct ibv_qp_init_attr a = { .send_cq = &f->scq->ibv,
				      .recv_cq = &f->rcq->ibv,
				      .qp_type = IBV_QPT_RC };
	struct xiw_qp *q2;

	assert_true(f->qp->ibv.qp_num >= 0x100);
	assert_int_equal(qstate(f->qp), IBV_QPS_RESET);
	a.cap.max_send_wr = XIW_MAX_QP_WR + 1;
	assert_null(xiw_qp_create(f->pd, &a));
	a.cap.max_send_wr = 1;
	a.cap.max_send_sge = XIW_MAX_SGE + 1;
	assert_null(xiw_qp_create(f->pd, &a));
	a.cap.max_send_sge = 1;
	a.cap.max_inline_data = XIW_MAX_INLINE + 1;
	assert_null(xiw_qp_create(f->pd, &a));
	a.cap.max_inline_data = 0;
	a.qp_type = IBV_QPT_UD;
	errno = 0;
	assert_null(xiw_qp_create(f->pd, &a));
	assert_int_equal(errno, EINVAL);
	a.qp_type = IBV_QPT_RC;
	q2 = xiw_qp_create(f->pd, &a);
	assert_non_null(q2);
	assert_int_not_equal(q2->ibv.qp_num, f->qp->ibv.qp_num);
	assert_int_equal(a.cap.max_recv_wr, 1);
	assert_int_equal(xiw_qp_destroy(q2), 0);
}

static void test_transitions(void **state)
{
	struct fix *f = *state;
	struct ibv_qp_attr a = { .max_rd_atomic = XIW_MAX_ORD + 1 };

	assert_int_equal(modify(f->qp, IBV_QPS_RTS), -EINVAL);
	assert_int_equal(modify(f->qp, IBV_QPS_RTR), -EINVAL);
	assert_int_equal(modify(f->qp, IBV_QPS_INIT), 0);
	assert_int_equal(modify(f->qp, IBV_QPS_INIT), 0);
	assert_int_equal(modify(f->qp, IBV_QPS_RTS), -EINVAL);
	assert_int_equal(xiw_qp_modify(f->qp, &a, IBV_QP_MAX_QP_RD_ATOMIC),
			 -EINVAL);
	a.max_rd_atomic = 4;
	a.max_dest_rd_atomic = 8;
	assert_int_equal(xiw_qp_modify(f->qp, &a, IBV_QP_MAX_QP_RD_ATOMIC |
				       IBV_QP_MAX_DEST_RD_ATOMIC), 0);
	assert_int_equal(modify(f->qp, IBV_QPS_RTR), 0);
	assert_int_equal(modify(f->qp, IBV_QPS_RTS), 0);
	assert_int_equal(qstate(f->qp), IBV_QPS_RTS);
	{
		struct ibv_qp_attr q;
		struct ibv_qp_init_attr i;

		xiw_qp_query(f->qp, &q, 0, &i);
		assert_int_equal(q.max_rd_atomic, 4);
		assert_int_equal(q.max_dest_rd_atomic, 8);
		assert_int_equal(q.cap.max_send_wr, 4);
		assert_int_equal(i.cap.max_inline_data, 64);
	}
	assert_int_equal(modify(f->qp, IBV_QPS_INIT), -EINVAL);
	assert_int_equal(modify(f->qp, IBV_QPS_ERR), 0);
	assert_int_equal(qstate(f->qp), IBV_QPS_ERR);
	assert_int_equal(modify(f->qp, IBV_QPS_RTS), -EINVAL);
	assert_int_equal(modify(f->qp, IBV_QPS_RESET), 0);
	assert_int_equal(modify(f->qp, IBV_QPS_INIT), 0);
	assert_int_equal(qstate(f->qp), IBV_QPS_INIT);
}

static void test_post_rules(void **state)
{
	struct fix *f = *state;
	struct ibv_sge sge[3] = {
		{ (uintptr_t)f->buf, 100, f->mr->ibv.lkey },
		{ (uintptr_t)f->buf, 100, f->mr->ibv.lkey },
		{ (uintptr_t)f->buf, 100, f->mr->ibv.lkey },
	};
	struct ibv_send_wr wr = { .sg_list = sge, .num_sge = 3,
				  .opcode = IBV_WR_SEND }, *bad;

	/* RESET: nothing; INIT: receives only */
	assert_int_equal(post_recv(f, 1), -EINVAL);
	assert_int_equal(post_send(f, 1, IBV_WR_SEND, 0), -EINVAL);
	assert_int_equal(modify(f->qp, IBV_QPS_INIT), 0);
	assert_int_equal(post_recv(f, 1), 0);
	assert_int_equal(post_send(f, 1, IBV_WR_SEND, 0), -EINVAL);
	assert_int_equal(modify(f->qp, IBV_QPS_RTR), 0);
	assert_int_equal(modify(f->qp, IBV_QPS_RTS), 0);
	/* bad WRs */
	assert_int_equal(xiw_post_send(f->qp, &wr, &bad), -EINVAL);	/* sge */
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	sge[0].length = 65;
	assert_int_equal(xiw_post_send(f->qp, &wr, &bad), -EINVAL);	/* inline */
	sge[0].length = 16;
	wr.send_flags = 0;
	wr.opcode = IBV_WR_TSO;			/* no such iWARP message */
	assert_int_equal(xiw_post_send(f->qp, &wr, &bad), -EINVAL);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;	/* needs an 8-byte SGE */
	assert_int_equal(xiw_post_send(f->qp, &wr, &bad), -EINVAL);
	wr.opcode = IBV_WR_SEND;
	sge[0].lkey ^= 1;
	assert_int_equal(xiw_post_send(f->qp, &wr, &bad), -EINVAL);	/* lkey */
	sge[0].lkey ^= 1;
	/* inline needs no lkey and copies at post time */
	sge[0].lkey = 0;
	wr.send_flags = IBV_SEND_INLINE;
	assert_int_equal(xiw_post_send(f->qp, &wr, &bad), 0);
}

static void test_full_queues(void **state)
{
	struct fix *f = *state;
	struct ibv_sge sge = { (uintptr_t)f->buf, 8, f->mr->ibv.lkey };
	struct ibv_send_wr w[6], *bad = NULL;

	to_rts(f);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_recv(f, 100 + i), 0);
	assert_int_equal(post_recv(f, 103), -ENOMEM);
	/* a chain that overflows: the 5th WR is returned in *bad */
	for (int i = 0; i < 6; i++)
		w[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_SEND,
			.next = i < 5 ? &w[i + 1] : NULL };
	assert_int_equal(xiw_post_send(f->qp, w, &bad), -ENOMEM);
	assert_ptr_equal(bad, &w[4]);
}

static void test_flush_on_error(void **state)
{
	struct fix *f = *state;
	static const struct { enum ibv_wr_opcode op; enum ibv_wc_opcode wc; }
	ops[] = {
		{ IBV_WR_SEND, IBV_WC_SEND },
		{ IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE },
		{ IBV_WR_RDMA_READ, IBV_WC_RDMA_READ },
		{ IBV_WR_SEND_WITH_INV, IBV_WC_SEND },
	};
	struct ibv_wc wc[16];

	to_rts(f);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_recv(f, 200 + i), 0);
	for (int i = 0; i < 4; i++)	/* unsignalled too: all are flushed */
		assert_int_equal(post_send(f, 300 + i, ops[i].op,
					   i % 2 ? IBV_SEND_SIGNALED : 0), 0);
	assert_int_equal(xiw_cq_poll(f->scq, 16, wc), 0);	/* no stream */
	assert_int_equal(modify(f->qp, IBV_QPS_ERR), 0);
	assert_int_equal(xiw_cq_poll(f->scq, 16, wc), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, 300 + i);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, ops[i].wc);
		assert_int_equal(wc[i].qp_num, f->qp->ibv.qp_num);
	}
	assert_int_equal(xiw_cq_poll(f->rcq, 16, wc), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 200 + i);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, IBV_WC_RECV);
	}
	/* flushing again does nothing; in ERROR both sends and receives are
	 * accepted and complete at once as flushed (the drain pattern) */
	assert_int_equal(modify(f->qp, IBV_QPS_ERR), 0);
	assert_int_equal(xiw_cq_poll(f->scq, 16, wc), 0);
	assert_int_equal(post_send(f, 400, IBV_WR_SEND, 0), 0);
	assert_int_equal(xiw_cq_poll(f->scq, 16, wc), 1);
	assert_int_equal(wc[0].wr_id, 400);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[0].opcode, IBV_WC_SEND);
	assert_int_equal(post_recv(f, 401), 0);
	assert_int_equal(xiw_cq_poll(f->rcq, 16, wc), 1);
	assert_int_equal(wc[0].wr_id, 401);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	/* RESET drops queues without completions; the QP is reusable */
	assert_int_equal(modify(f->qp, IBV_QPS_RESET), 0);
	to_rts(f);
	for (int i = 0; i < 4; i++)
		assert_int_equal(post_send(f, 500 + i, IBV_WR_SEND, 0), 0);
	assert_int_equal(modify(f->qp, IBV_QPS_RESET), 0);
	assert_int_equal(xiw_cq_poll(f->scq, 16, wc), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_transitions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_queues, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_on_error, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
