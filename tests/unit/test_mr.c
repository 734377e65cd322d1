// SPDX-License-Identifier: MIT
/* MR / STag table: lookup, key, PD, access rights, bounds, invalidation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "xiw_obj.h"

static uint8_t buf[8192];

static int setup(void **state)
{
	*state = xiw_pd_alloc(NULL, NULL);
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	return xiw_pd_free(*state);
}

static struct xiw_mr *reg(struct xiw_pd *pd, uint64_t iova, size_t len,
			  int access)
{
	struct xiw_mr *mr = xiw_mr_reg(pd, buf, len, iova, access);

	assert_non_null(mr);
	return mr;
}

static void test_stag_lookup(void **state)
{
	struct xiw_pd *pd = *state;
	struct xiw_mr *mr = reg(pd, 0x10000, 4096, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ);
	void *p = NULL;

	assert_int_equal(mr->ibv.lkey, mr->ibv.rkey);
	assert_true(mr->ibv.lkey >> 8 >= 1);
	assert_ptr_equal(mr->ibv.addr, buf);
	assert_int_equal(xiw_mr_check(mr->ibv.rkey, pd, IBV_ACCESS_REMOTE_READ,
				      0x10000 + 100, 10, true, &p), 0);
	assert_ptr_equal(p, buf + 100);
	assert_int_equal(xiw_mr_check(mr->ibv.lkey, pd, IBV_ACCESS_LOCAL_WRITE,
				      (uintptr_t)buf + 5, 10, false, &p), 0);
	assert_ptr_equal(p, buf + 5);
	/* key mismatch, index out of range, STag 0 */
	assert_int_equal(xiw_mr_check(mr->ibv.rkey ^ 1, pd, 0, 0x10000, 1,
				      true, NULL), -ENOENT);
	assert_int_equal(xiw_mr_check(mr->ibv.rkey ^ 0x80, pd, 0, 0x10000, 1,
				      true, NULL), -ENOENT);
	assert_int_equal(xiw_mr_check(0xffffff00, pd, 0, 0, 1, true, NULL),
			 -ENOENT);
	assert_int_equal(xiw_mr_check(0, pd, 0, 0, 0, true, NULL), -ENOENT);
	assert_int_equal(xiw_mr_dereg(mr), 0);
}

static void test_pd_mismatch(void **state)
{
	struct xiw_pd *pd = *state, *other = xiw_pd_alloc(NULL, NULL);
	struct xiw_mr *mr = reg(pd, 0, 4096, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE);

	assert_int_equal(xiw_mr_check(mr->ibv.rkey, other,
				      IBV_ACCESS_REMOTE_WRITE, 0, 1, true, NULL),
			 -EPERM);
	assert_int_equal(xiw_mr_invalidate(mr->ibv.rkey, other), -EPERM);
	assert_int_equal(xiw_pd_free(pd), -EBUSY);	/* MR holds it */
	assert_int_equal(xiw_mr_dereg(mr), 0);
	assert_int_equal(xiw_pd_free(other), 0);
}

static void test_access_rights(void **state)
{
	struct xiw_pd *pd = *state;
	struct xiw_mr *mr = reg(pd, 0, 4096, IBV_ACCESS_LOCAL_WRITE);

	assert_int_equal(xiw_mr_check(mr->ibv.rkey, pd, IBV_ACCESS_REMOTE_WRITE,
				      0, 1, true, NULL), -EACCES);
	assert_int_equal(xiw_mr_check(mr->ibv.rkey, pd, IBV_ACCESS_REMOTE_READ,
				      0, 1, true, NULL), -EACCES);
	assert_int_equal(xiw_mr_check(mr->ibv.rkey, pd, 0, 0, 1, true, NULL), 0);
	assert_int_equal(xiw_mr_dereg(mr), 0);

	mr = reg(pd, 0, 4096, IBV_ACCESS_REMOTE_READ);	/* read-only MR */
	assert_int_equal(xiw_mr_check(mr->ibv.lkey, pd, IBV_ACCESS_LOCAL_WRITE,
				      (uintptr_t)buf, 1, false, NULL), -EACCES);
	assert_int_equal(xiw_mr_dereg(mr), 0);

	/* remote write without local write, unknown bits, zero length */
	errno = 0;
	assert_null(xiw_mr_reg(pd, buf, 10, 0, IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	assert_null(xiw_mr_reg(pd, buf, 10, 0, 1 << 15));
	assert_null(xiw_mr_reg(pd, buf, 0, 0, IBV_ACCESS_LOCAL_WRITE));
	assert_null(xiw_mr_reg(pd, buf, 10, UINT64_MAX - 5, 0));
}

static void test_bounds(void **state)
{
	struct xiw_pd *pd = *state;
	struct xiw_mr *mr = reg(pd, 0x1000, 4096, IBV_ACCESS_REMOTE_READ);
	uint32_t s = mr->ibv.rkey;
	int rr = IBV_ACCESS_REMOTE_READ;

	assert_int_equal(xiw_mr_check(s, pd, rr, 0x1000, 4096, true, NULL), 0);
	assert_int_equal(xiw_mr_check(s, pd, rr, 0xfff, 1, true, NULL), -ERANGE);
	assert_int_equal(xiw_mr_check(s, pd, rr, 0x1000, 4097, true, NULL),
			 -ERANGE);
	assert_int_equal(xiw_mr_check(s, pd, rr, 0x1fff, 2, true, NULL), -ERANGE);
	assert_int_equal(xiw_mr_check(s, pd, rr, 0x1fff, 1, true, NULL), 0);
	/* len 0: at the end is fine, past it is not */
	assert_int_equal(xiw_mr_check(s, pd, rr, 0x2000, 0, true, NULL), 0);
	assert_int_equal(xiw_mr_check(s, pd, rr, 0x2001, 0, true, NULL), -ERANGE);
	/* wrapping lengths */
	assert_int_equal(xiw_mr_check(s, pd, rr, 0x1000, UINT64_MAX, true, NULL),
			 -EOVERFLOW);
	assert_int_equal(xiw_mr_check(s, pd, rr, 0, UINT64_MAX, true, NULL),
			 -ERANGE);
	assert_int_equal(xiw_mr_check(s, pd, rr, UINT64_MAX, 2, true, NULL),
			 -EOVERFLOW);
	assert_int_equal(xiw_mr_dereg(mr), 0);

	/* a region whose TO range ends exactly at 2^64 */
	mr = reg(pd, UINT64_MAX - 4095, 4096, rr);
	s = mr->ibv.rkey;
	assert_int_equal(xiw_mr_check(s, pd, rr, UINT64_MAX, 1, true, NULL), 0);
	assert_int_equal(xiw_mr_check(s, pd, rr, UINT64_MAX - 4095, 4096, true,
				      NULL), 0);
	assert_int_equal(xiw_mr_check(s, pd, rr, UINT64_MAX - 10, 20, true, NULL),
			 -EOVERFLOW);
	assert_int_equal(xiw_mr_check(s, pd, rr, UINT64_MAX, 0, true, NULL), 0);
	assert_int_equal(xiw_mr_check(s, pd, rr, UINT64_MAX - 4096, 1, true,
				      NULL), -ERANGE);
	assert_int_equal(xiw_mr_dereg(mr), 0);
}

static void test_dereg_invalidates(void **state)
{
	struct xiw_pd *pd = *state;
	struct xiw_mr *mr = reg(pd, 0, 4096, IBV_ACCESS_REMOTE_READ);
	uint32_t old = mr->ibv.rkey, seen[64];

	assert_int_equal(xiw_mr_dereg(mr), 0);
	assert_int_equal(xiw_mr_check(old, pd, 0, 0, 1, true, NULL), -ENOENT);
	/* no new registration reuses the old STag value */
	for (int i = 0; i < 64; i++) {
		struct xiw_mr *m = reg(pd, 0, 16, 0);

		seen[i] = m->ibv.rkey;
		assert_int_not_equal(seen[i], old);
		assert_int_equal(xiw_mr_check(old, pd, 0, 0, 1, true, NULL),
				 -ENOENT);
		assert_int_equal(xiw_mr_dereg(m), 0);
	}
	/* invalidation (SEND with Invalidate) */
	mr = reg(pd, 0, 4096, IBV_ACCESS_REMOTE_READ);
	assert_int_equal(xiw_mr_invalidate(mr->ibv.rkey, pd), 0);
	assert_int_equal(xiw_mr_check(mr->ibv.rkey, pd, 0, 0, 1, true, NULL),
			 -ENOENT);
	assert_int_equal(xiw_mr_invalidate(mr->ibv.rkey, pd), -ENOENT);
	assert_int_equal(xiw_mr_dereg(mr), 0);
}

/* ibv_rereg_mr: new translation / access; the old key stops working. */
static void test_rereg(void **state)
{
	struct xiw_pd *pd = *state, *pd2 = xiw_pd_alloc(NULL, NULL);
	struct xiw_mr *mr = reg(pd, 0x10000, 4096, IBV_ACCESS_LOCAL_WRITE);
	uint32_t old = mr->ibv.rkey;
	void *p = NULL;

	assert_int_equal(xiw_mr_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION |
				      IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      buf + 4096, 2048, IBV_ACCESS_LOCAL_WRITE |
				      IBV_ACCESS_REMOTE_WRITE), 0);
	assert_int_not_equal(mr->ibv.rkey, old);
	assert_int_equal(xiw_mr_check(old, pd, 0, (uintptr_t)buf + 4096, 8,
				      false, NULL), -ENOENT);
	/* remote address = the new virtual address */
	assert_int_equal(xiw_mr_check(mr->ibv.rkey, pd, IBV_ACCESS_REMOTE_WRITE,
				      (uintptr_t)buf + 4096 + 100, 100, true,
				      &p), 0);
	assert_ptr_equal(p, buf + 4096 + 100);
	assert_int_equal(xiw_mr_check(mr->ibv.rkey, pd, 0, (uintptr_t)buf, 8,
				      false, NULL), -ERANGE);
	/* bad input: nothing changes */
	old = mr->ibv.rkey;
	assert_int_equal(xiw_mr_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      NULL, 0, IBV_ACCESS_REMOTE_WRITE), -EINVAL);
	assert_int_equal(xiw_mr_rereg(mr, 0, NULL, NULL, 0, 0), -EINVAL);
	assert_int_equal(mr->ibv.rkey, old);
	/* another PD: the old one is free again */
	assert_int_equal(xiw_mr_rereg(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0,
				      0), 0);
	assert_int_equal(xiw_mr_check(mr->ibv.lkey, pd, 0, (uintptr_t)buf + 4096,
				      8, false, NULL), -EPERM);
	assert_int_equal(xiw_pd_free(pd2), -EBUSY);
	assert_int_equal(xiw_mr_dereg(mr), 0);
	assert_int_equal(xiw_pd_free(pd2), 0);
}

static void test_many(void **state)
{
	struct xiw_pd *pd = *state;
	enum { N = 3000 };
	struct xiw_mr **m = calloc(N, sizeof(*m));

	for (int i = 0; i < N; i++)
		m[i] = reg(pd, (uint64_t)i << 20, 64, IBV_ACCESS_REMOTE_READ);
	for (int i = 0; i < N; i++)
		assert_int_equal(xiw_mr_check(m[i]->ibv.rkey, pd,
					      IBV_ACCESS_REMOTE_READ,
					      ((uint64_t)i << 20) + 63, 1, true,
					      NULL), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(xiw_mr_dereg(m[i]), 0);
	free(m);
}

/* Memory windows: type 2 binds once (until invalidated), type 1 rebinds
 * in place, unbinds with a zero-length bind and refuses invalidation. */
static void test_mw_types(void **state)
{
	struct xiw_pd *pd = *state;
	struct xiw_mr *mr = reg(pd, 0x40000, 8192, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	struct xiw_mw *w1 = xiw_mw_alloc(pd, IBV_MW_TYPE_1);
	struct xiw_mw *w2 = xiw_mw_alloc(pd, IBV_MW_TYPE_2);
	uint32_t k1, k2;
	void *p = NULL;

	assert_non_null(w1);
	assert_non_null(w2);
	assert_null(xiw_mw_alloc(pd, (enum ibv_mw_type)3));
	assert_int_equal(errno, EINVAL);
	/* type 2: bound once; a second bind is refused until invalidated */
	k2 = ibv_inc_rkey(w2->ibv.rkey);
	assert_int_equal(xiw_mw_bind(w2, pd, k2, mr, 0x40000, 4096,
				     IBV_ACCESS_REMOTE_WRITE), 0);
	assert_int_equal(xiw_mw_bind(w2, pd, ibv_inc_rkey(k2), mr, 0x40000,
				     4096, IBV_ACCESS_REMOTE_WRITE), -EINVAL);
	assert_int_equal(xiw_mr_invalidate(k2, pd), 0);
	assert_int_equal(xiw_mr_check(k2, pd, IBV_ACCESS_REMOTE_WRITE, 0x40000,
				      8, true, NULL), -ENOENT);
	/* type 1: bound, then rebound elsewhere under a new key */
	k1 = ibv_inc_rkey(w1->ibv.rkey);
	assert_int_equal(xiw_mw_bind(w1, pd, k1, mr, 0x40000, 4096,
				     IBV_ACCESS_REMOTE_WRITE), 0);
	assert_int_equal(xiw_mr_check(k1, pd, IBV_ACCESS_REMOTE_WRITE,
				      0x40000 + 8, 8, true, &p), 0);
	assert_ptr_equal(p, buf + 8);
	assert_int_equal(mr->mw_bound, 1);
	assert_int_equal(xiw_mw_bind(w1, pd, ibv_inc_rkey(k1), mr, 0x41000,
				     4096, IBV_ACCESS_REMOTE_WRITE), 0);
	assert_int_equal(mr->mw_bound, 1);	/* the old binding let go */
	assert_int_equal(xiw_mr_check(k1, pd, IBV_ACCESS_REMOTE_WRITE,
				      0x40000 + 8, 8, true, NULL), -ENOENT);
	k1 = ibv_inc_rkey(k1);
	assert_int_equal(xiw_mr_check(k1, pd, IBV_ACCESS_REMOTE_WRITE,
				      0x41000, 8, true, &p), 0);
	assert_ptr_equal(p, buf + 4096);
	assert_int_equal(xiw_mr_check(k1, pd, IBV_ACCESS_REMOTE_WRITE,
				      0x40ff8, 8, true, NULL), -ERANGE);
	/* no invalidation of a type 1 window; the MR stays busy */
	assert_int_equal(xiw_mr_invalidate(k1, pd), -EPERM);
	assert_int_equal(xiw_mr_check(k1, pd, IBV_ACCESS_REMOTE_WRITE,
				      0x41000, 8, true, NULL), 0);
	assert_int_equal(xiw_mr_dereg(mr), -EBUSY);
	/* a zero-length bind unbinds (no MR needed) */
	assert_int_equal(xiw_mw_bind(w1, pd, ibv_inc_rkey(k1), NULL, 0, 0, 0), 0);
	assert_int_equal(mr->mw_bound, 0);
	assert_int_equal(xiw_mr_check(k1, pd, IBV_ACCESS_REMOTE_WRITE,
				      0x41000, 8, true, NULL), -ENOENT);
	assert_int_equal(xiw_mw_dealloc(w1), 0);
	assert_int_equal(xiw_mw_dealloc(w2), 0);
	assert_int_equal(xiw_mr_dereg(mr), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stag_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pd_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_access_rights, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_invalidates, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rereg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mw_types, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
