// SPDX-License-Identifier: MIT
/* CQ ring order, overflow, arming and the completion channel pipe. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "xiw_obj.h"

static void push(struct xiw_cq *cq, uint64_t id, enum ibv_wc_status st,
		 bool sol)
{
	struct ibv_wc wc = { .wr_id = id, .status = st };

	assert_int_equal(xiw_cq_push(cq, &wc, sol), 0);
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_create_sizes(void **state)
{
	struct xiw_cq *cq;

	(void)state;
	cq = xiw_cq_create(NULL, 5, NULL, NULL);
	assert_non_null(cq);
	assert_int_equal(cq->ibv.cqe, 8);
	assert_int_equal(xiw_cq_destroy(cq), 0);
	errno = 0;
	assert_null(xiw_cq_create(NULL, 0, NULL, NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(xiw_cq_create(NULL, XIW_MAX_CQE + 1, NULL, NULL));
	cq = xiw_cq_create(NULL, XIW_MAX_CQE, NULL, NULL);
	assert_non_null(cq);
	assert_int_equal(cq->ibv.cqe, XIW_MAX_CQE);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

static void test_poll_order(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 4, (void *)0x1234, NULL);
	struct ibv_wc wc[8];

	(void)state;
	assert_ptr_equal(cq->ibv.cq_context, (void *)0x1234);
	assert_int_equal(xiw_cq_poll(cq, 8, wc), 0);
	for (int round = 0; round < 3; round++) {	/* wraps the ring */
		push(cq, 1, IBV_WC_SUCCESS, false);
		push(cq, 2, IBV_WC_SUCCESS, false);
		push(cq, 3, IBV_WC_WR_FLUSH_ERR, false);
		assert_int_equal(xiw_cq_poll(cq, 2, wc), 2);
		assert_int_equal(wc[0].wr_id, 1);
		assert_int_equal(wc[1].wr_id, 2);
		assert_int_equal(xiw_cq_poll(cq, 8, wc), 1);
		assert_int_equal(wc[0].wr_id, 3);
		assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	}
	/* full: the fifth is refused and counted */
	for (int i = 0; i < 4; i++)
		push(cq, 10 + i, IBV_WC_SUCCESS, false);
	assert_int_equal(xiw_cq_push(cq, &(struct ibv_wc){ .wr_id = 99 }, false),
			 -ENOSPC);
	assert_int_equal(cq->overflow, 1);
	assert_int_equal(xiw_cq_poll(cq, 8, wc), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(wc[i].wr_id, 10 + i);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

/* A WC dropped for want of room (a CQE credit bug) is reported as
 * IBV_EVENT_CQ_ERR on the CQ's context through the async handler, once
 * per dropped WC; without a context nothing is posted. */
static struct ibv_context *async_ctx;
static struct ibv_async_event async_ev;
static int async_n;

static void async_record(struct ibv_context *ctx,
			 const struct ibv_async_event *ev)
{
	async_ctx = ctx;
	async_ev = *ev;
	async_n++;
}

static void test_overflow_cq_err(void **state)
{
	struct ibv_context ctx = { 0 };
	struct xiw_cq *cq = xiw_cq_create(&ctx, 2, NULL, NULL);
	struct ibv_wc wc[4];

	(void)state;
	xiw_async_set_handler(async_record);
	async_n = 0;
	push(cq, 1, IBV_WC_SUCCESS, false);
	push(cq, 2, IBV_WC_SUCCESS, false);
	assert_int_equal(async_n, 0);
	assert_int_equal(xiw_cq_push(cq, &(struct ibv_wc){ .wr_id = 3 }, false),
			 -ENOSPC);
	assert_int_equal(async_n, 1);
	assert_ptr_equal(async_ctx, &ctx);
	assert_int_equal(async_ev.event_type, IBV_EVENT_CQ_ERR);
	assert_ptr_equal(async_ev.element.cq, &cq->ibv);
	assert_int_equal(xiw_cq_poll(cq, 4, wc), 2);	/* the queued ones stay */
	assert_int_equal(xiw_cq_destroy(cq), 0);

	cq = xiw_cq_create(NULL, 1, NULL, NULL);	/* no context: logged only */
	push(cq, 1, IBV_WC_SUCCESS, false);
	assert_int_equal(xiw_cq_push(cq, &(struct ibv_wc){ .wr_id = 2 }, false),
			 -ENOSPC);
	assert_int_equal(async_n, 1);
	assert_int_equal(xiw_cq_destroy(cq), 0);
	xiw_async_set_handler(NULL);
}

/* ibv_resize_cq: grow with WCs queued across the wrap (order kept),
 * refuse to shrink below what is queued, shrink when it fits. */
static void test_resize(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 4, NULL, NULL);
	struct ibv_wc wc[16];

	(void)state;
	push(cq, 1, IBV_WC_SUCCESS, false);
	push(cq, 2, IBV_WC_SUCCESS, false);
	push(cq, 3, IBV_WC_SUCCESS, false);
	assert_int_equal(xiw_cq_poll(cq, 2, wc), 2);
	for (int i = 4; i <= 6; i++)	/* wraps: 3..6 queued */
		push(cq, i, IBV_WC_SUCCESS, false);
	assert_int_equal(xiw_cq_resize(cq, 9), 0);
	assert_int_equal(cq->ibv.cqe, 16);
	for (int i = 7; i <= 18; i++)	/* room for 12 more now */
		push(cq, i, IBV_WC_SUCCESS, false);
	assert_int_equal(xiw_cq_resize(cq, 8), -EINVAL);	/* 16 queued */
	assert_int_equal(xiw_cq_resize(cq, 0), -EINVAL);
	assert_int_equal(xiw_cq_poll(cq, 16, wc), 16);
	for (int i = 0; i < 16; i++)
		assert_int_equal(wc[i].wr_id, 3 + i);
	assert_int_equal(xiw_cq_resize(cq, 2), 0);
	assert_int_equal(cq->ibv.cqe, 2);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

static void test_channel_events(void **state)
{
	struct xiw_cchan *ch = xiw_cchan_create(NULL);
	struct xiw_cq *cq, *ev = NULL;
	struct ibv_wc wc[4];

	(void)state;
	assert_non_null(ch);
	cq = xiw_cq_create(NULL, 16, NULL, ch);
	assert_non_null(cq);
	assert_ptr_equal(cq->ibv.channel, &ch->ibv);
	assert_int_equal(xiw_cchan_destroy(ch), -EBUSY);

	/* not armed: no event */
	push(cq, 1, IBV_WC_SUCCESS, false);
	assert_false(readable(ch->ibv.fd));
	/* armed: exactly one event for the next CQE */
	assert_int_equal(xiw_cq_req_notify(cq, 0), 0);
	assert_false(readable(ch->ibv.fd));
	push(cq, 2, IBV_WC_SUCCESS, false);
	push(cq, 3, IBV_WC_SUCCESS, false);
	assert_true(readable(ch->ibv.fd));
	assert_int_equal(xiw_cchan_get_event(ch, &ev), 0);
	assert_ptr_equal(ev, cq);
	xiw_cq_ack_events(cq, 1);
	assert_int_equal(cq->ibv.comp_events_completed, 1);
	assert_false(readable(ch->ibv.fd));
	assert_int_equal(xiw_cq_poll(cq, 4, wc), 3);

	/* solicited-only: plain CQEs do not fire, solicited and errors do */
	assert_int_equal(xiw_cq_req_notify(cq, 1), 0);
	push(cq, 4, IBV_WC_SUCCESS, false);
	assert_false(readable(ch->ibv.fd));
	push(cq, 5, IBV_WC_SUCCESS, true);
	assert_true(readable(ch->ibv.fd));
	assert_int_equal(xiw_cchan_get_event(ch, &ev), 0);
	assert_int_equal(xiw_cq_req_notify(cq, 1), 0);
	push(cq, 6, IBV_WC_WR_FLUSH_ERR, false);
	assert_true(readable(ch->ibv.fd));
	assert_int_equal(xiw_cchan_get_event(ch, &ev), 0);
	xiw_cq_ack_events(cq, 2);

	/* O_NONBLOCK on the read end: EAGAIN, not a hang */
	assert_int_equal(fcntl(ch->ibv.fd, F_SETFL,
			       fcntl(ch->ibv.fd, F_GETFL) | O_NONBLOCK), 0);
	assert_int_equal(xiw_cchan_get_event(ch, &ev), -EAGAIN);

	/* no channel: arming fails */
	assert_int_equal(xiw_cq_destroy(cq), 0);
	cq = xiw_cq_create(NULL, 1, NULL, NULL);
	assert_int_equal(xiw_cq_req_notify(cq, 0), -EINVAL);
	assert_int_equal(xiw_cq_destroy(cq), 0);
	assert_int_equal(xiw_cchan_destroy(ch), 0);
}

static void test_busy_with_qp(void **state)
{
	struct xiw_pd *pd = xiw_pd_alloc(NULL, NULL);
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct ibv_qp_init_attr a = {
		.send_cq = &cq->ibv, .recv_cq = &cq->ibv, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct xiw_qp *qp = xiw_qp_create(pd, &a);

	(void)state;
	assert_non_null(qp);
	assert_int_equal(xiw_cq_destroy(cq), -EBUSY);	/* fio's order */
	assert_int_equal(xiw_pd_free(pd), -EBUSY);
	assert_int_equal(xiw_qp_destroy(qp), 0);
	assert_int_equal(xiw_cq_destroy(cq), 0);
	assert_int_equal(xiw_pd_free(pd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_sizes),
		cmocka_unit_test(test_poll_order),
		cmocka_unit_test(test_overflow_cq_err),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_channel_events),
		cmocka_unit_test(test_busy_with_qp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
