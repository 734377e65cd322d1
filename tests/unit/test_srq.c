// SPDX-License-Identifier: MIT
/* Shared receive queues in the engine: ring order across a resize
 * (ibv_modify_srq IBV_SRQ_MAX_WR), its refusals, the limit event. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "xiw_obj.h"

static int limit_events;

static void async_record(struct ibv_context *ctx,
			 const struct ibv_async_event *ev)
{
	(void)ctx;
	if (ev->event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
		limit_events++;
}

static void post(struct xiw_srq *srq, uint64_t id, int want)
{
	struct ibv_recv_wr wr = { .wr_id = id }, *bad = NULL;

	assert_int_equal(xiw_post_srq_recv(srq, &wr, &bad), want);
}

static uint64_t take(struct xiw_srq *srq, struct xiw_qp *qp)
{
	struct xiw_rqe e;

	assert_int_equal(xiw_srq_take(srq, qp, &e), 0);
	return e.wr_id;
}

static void test_resize(void **state)
{
	struct ibv_context ctx = { 0 };
	struct xiw_pd *pd = xiw_pd_alloc(&ctx, NULL);
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct xiw_srq *srq;
	struct ibv_srq_attr a;
	struct xiw_qp qp = { 0 };
	struct xiw_rqe e;
	uint64_t next = 1;

	(void)state;
	assert_non_null(pd);
	srq = xiw_srq_create(pd, &ia);
	assert_non_null(srq);
	/* 1..4 queued, 1..2 taken, 5..6 wrap the ring of 4 */
	for (int i = 1; i <= 4; i++)
		post(srq, (uint64_t)i, 0);
	post(srq, 99, -ENOMEM);			/* full at max_wr */
	assert_int_equal(take(srq, &qp), next++);
	assert_int_equal(take(srq, &qp), next++);
	post(srq, 5, 0);
	post(srq, 6, 0);
	/* below the 4 queued: refused, nothing changed */
	a = (struct ibv_srq_attr){ .max_wr = 3 };
	assert_int_equal(xiw_srq_modify(srq, &a, IBV_SRQ_MAX_WR), -EINVAL);
	a.max_wr = XIW_MAX_QP_WR + 1;
	assert_int_equal(xiw_srq_modify(srq, &a, IBV_SRQ_MAX_WR), -EINVAL);
	/* a limit above the new size: refused as a whole */
	a = (struct ibv_srq_attr){ .max_wr = 10, .srq_limit = 11 };
	assert_int_equal(xiw_srq_modify(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT),
			 -EINVAL);
	assert_int_equal(xiw_srq_query(srq, &a), 0);
	assert_int_equal(a.max_wr, 4);
	assert_int_equal(a.srq_limit, 0);
	/* grow to 10 and arm the limit at 5 in one call */
	a = (struct ibv_srq_attr){ .max_wr = 10, .srq_limit = 5 };
	assert_int_equal(xiw_srq_modify(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), 0);
	assert_int_equal(xiw_srq_query(srq, &a), 0);
	assert_int_equal(a.max_wr, 10);
	assert_int_equal(a.srq_limit, 5);
	for (int i = 7; i <= 12; i++)		/* 3..12: ten queued */
		post(srq, (uint64_t)i, 0);
	post(srq, 99, -ENOMEM);
	/* the queued WRs come out in posting order across the resize;
	 * the limit event once the count drops below 5 (after the 6th) */
	xiw_async_set_handler(async_record);
	limit_events = 0;
	for (int i = 0; i < 5; i++)
		assert_int_equal(take(srq, &qp), next++);
	assert_int_equal(limit_events, 0);	/* 5 left */
	assert_int_equal(take(srq, &qp), next++);
	assert_int_equal(limit_events, 1);	/* 4 left: reported, disarmed */
	assert_int_equal(xiw_srq_query(srq, &a), 0);
	assert_int_equal(a.srq_limit, 0);
	/* shrink to what is queued (4) */
	a = (struct ibv_srq_attr){ .max_wr = 4 };
	assert_int_equal(xiw_srq_modify(srq, &a, IBV_SRQ_MAX_WR), 0);
	post(srq, 99, -ENOMEM);
	while (next <= 12)
		assert_int_equal(take(srq, &qp), next++);
	assert_int_equal(xiw_srq_take(srq, &qp, &e), -EAGAIN);
	assert_int_equal(limit_events, 1);
	/* unknown or no mask bits */
	assert_int_equal(xiw_srq_modify(srq, &a, 0), -EINVAL);
	assert_int_equal(xiw_srq_modify(srq, &a, 1 << 5), -EINVAL);
	xiw_async_set_handler(NULL);
	assert_int_equal(xiw_srq_destroy(srq), 0);
	assert_int_equal(xiw_pd_free(pd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
