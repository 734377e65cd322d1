// SPDX-License-Identifier: MIT
/*
 * xsk: the process's umem. One anonymous mapping holds
 *   [0, nframes * XSK_FRAME)       RX and TX frames, handed out to ports in
 *                                  whole runs (xsk_umem_frames_take);
 *   [arena_off, arena_off + len)   the xiw_alloc() arena: application
 *                                  buffers that the xsk transport can put
 *                                  on the wire without copying (seed 002).
 * Every AF_XDP socket of the process shares it (XDP_SHARED_UMEM), so a
 * payload descriptor may point at any application buffer in the arena
 * whatever interface sends it. XDP_UMEM_REG pins the whole mapping: its
 * size is what the process commits (XIW_XSK_FRAMES, XIW_XSK_ARENA_MB).
 *
 * The arena allocator is page-granular first fit over a sorted free list;
 * applications allocate few, large buffers (MRs).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

#define ARENA_PAGE	4096u
#define DEF_FRAMES	8192u	/* 32 MiB: 2 ports of 1 queue, or 1 of 2 */
#define DEF_ARENA_MB	64u

struct range {
	size_t off, len;
	struct range *next;
};

static struct {
	pthread_mutex_t lock;
	struct xsk_umem u;
	bool tried;
	int err;
	uint32_t frames_used;
	struct range *free;		/* sorted by offset, coalesced */
	struct range *used;		/* allocations (offset -> length) */
} um = { .lock = PTHREAD_MUTEX_INITIALIZER, .u = { .reg_fd = -1 } };

static size_t env_size(const char *name, size_t def, size_t max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return def;
	n = strtoul(v, &end, 10);
	if (*end || n > max) {
		xiw_log(XIW_LOG_WARN, "%s=%s: want a number up to %zu; using %zu",
			name, v, max, def);
		return def;
	}
	return n;
}

/* um.lock held */
static int umem_map(void)
{
	size_t frames = env_size("XIW_XSK_FRAMES", DEF_FRAMES, 1u << 20);
	size_t arena = env_size("XIW_XSK_ARENA_MB", DEF_ARENA_MB, 1u << 16) << 20;
	struct range *r = NULL;
	void *p;

	if (frames < XSK_RX_FRAMES + XSK_TX_FRAMES)
		frames = XSK_RX_FRAMES + XSK_TX_FRAMES;
	um.u.nframes = (uint32_t)frames;
	um.u.arena_off = frames * XSK_FRAME;
	um.u.arena_len = arena;
	um.u.len = um.u.arena_off + arena;
	p = mmap(NULL, um.u.len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (arena) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			munmap(p, um.u.len);
			return -ENOMEM;
		}
		r->off = um.u.arena_off;
		r->len = arena;
	}
	um.u.base = p;
	um.free = r;
	return 0;
}

/* um.lock held */
static int umem_ready(void)
{
	if (!um.tried) {
		um.tried = true;
		um.err = umem_map();
		if (um.err)
			xiw_log(XIW_LOG_WARN, "xsk: umem mapping failed: %s",
				strerror(-um.err));
	}
	return um.err;
}

struct xsk_umem *xsk_umem_get(int *err)
{
	int e;

	pthread_mutex_lock(&um.lock);
	e = umem_ready();
	pthread_mutex_unlock(&um.lock);
	if (err)
		*err = e;
	return e ? NULL : &um.u;
}

int64_t xsk_umem_frames_take(uint32_t n)
{
	int64_t addr = -ENOSPC;

	pthread_mutex_lock(&um.lock);
	if (!umem_ready() && um.frames_used + n <= um.u.nframes) {
		addr = (int64_t)um.frames_used * XSK_FRAME;
		um.frames_used += n;
	}
	pthread_mutex_unlock(&um.lock);
	return addr;
}

bool xsk_umem_contains(const void *p, size_t len)
{
	const uint8_t *b = um.u.base, *q = p;

	return b && q >= b && len <= um.u.len && (size_t)(q - b) <= um.u.len - len;
}

bool xiw_alloc_is_umem(const void *p, size_t len)
{
	const uint8_t *b = um.u.base, *q = p;

	return b && q >= b + um.u.arena_off && xsk_umem_contains(p, len);
}

/* um.lock held: first fit. Return: offset or 0 (offset 0 is never arena). */
static size_t arena_take(size_t len)
{
	for (struct range **pp = &um.free; *pp; pp = &(*pp)->next) {
		struct range *r = *pp;
		size_t off = r->off;

		if (r->len < len)
			continue;
		r->off += len;
		r->len -= len;
		if (!r->len) {
			*pp = r->next;
			free(r);
		}
		return off;
	}
	return 0;
}

/* um.lock held: give [off, off+len) back, coalescing neighbours. */
static void arena_give(size_t off, size_t len)
{
	struct range **pp = &um.free, *r;

	while (*pp && (*pp)->off < off)
		pp = &(*pp)->next;
	/* merge with the previous range? find it again (list is short) */
	for (r = um.free; r; r = r->next)
		if (r->off + r->len == off) {
			r->len += len;
			if (r->next && r->off + r->len == r->next->off) {
				struct range *n = r->next;

				r->len += n->len;
				r->next = n->next;
				free(n);
			}
			return;
		}
	if (*pp && off + len == (*pp)->off) {
		(*pp)->off = off;
		(*pp)->len += len;
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		xiw_log(XIW_LOG_WARN, "xsk: out of memory, leaking %zu arena bytes", len);
		return;
	}
	r->off = off;
	r->len = len;
	r->next = *pp;
	*pp = r;
}

/**
 * xiw_alloc() - see xiwarp.h. Arena memory is zeroed here (a freed range
 * keeps its old bytes); heap memory comes from posix_memalign + memset.
 */
void *xiw_alloc(size_t len)
{
	size_t need = (len + ARENA_PAGE - 1) & ~(size_t)(ARENA_PAGE - 1);
	struct range *u;
	size_t off = 0;
	void *p;

	if (!len) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	pthread_mutex_lock(&um.lock);
	if (u && !umem_ready())
		off = arena_take(need);
	if (off) {
		u->off = off;
		u->len = need;
		u->next = um.used;
		um.used = u;
	}
	pthread_mutex_unlock(&um.lock);
	if (off) {
		p = um.u.base + off;
		memset(p, 0, need);
		return p;
	}
	free(u);
	if (posix_memalign(&p, ARENA_PAGE, need)) {
		errno = ENOMEM;
		return NULL;
	}
	memset(p, 0, need);
	return p;
}

void xiw_free(void *p)
{
	struct range **pp, *u = NULL;

	if (!p)
		return;
	if (!xiw_alloc_is_umem(p, 1)) {
		free(p);
		return;
	}
	pthread_mutex_lock(&um.lock);
	for (pp = &um.used; *pp; pp = &(*pp)->next)
		if (um.u.base + (*pp)->off == p) {
			u = *pp;
			*pp = u->next;
			break;
		}
	if (u)
		arena_give(u->off, u->len);
	pthread_mutex_unlock(&um.lock);
	if (!u)
		xiw_log(XIW_LOG_WARN, "xiw_free(%p): not an allocation of xiw_alloc()", p);
	free(u);
}
