// SPDX-License-Identifier: MIT
/*
 * libxiwsock.so: fd number -> struct xs_sock. Every interposed call looks
 * its fd up here first, so lookups take no lock (the array only grows;
 * replaced arrays are kept for readers that still hold them).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "xs_int.h"

#define XS_TABLE_MAX (1 << 20)

struct xs_tab {
	int cap;
	struct xs_sock *slot[];
};

static struct xs_tab *_Atomic xs_tab;
static pthread_mutex_t xs_tab_lock = PTHREAD_MUTEX_INITIALIZER;

struct xs_sock *xs_get(int fd)
{
	struct xs_tab *t = atomic_load_explicit(&xs_tab, memory_order_acquire);

	if (!t || fd < 0 || fd >= t->cap)
		return NULL;
	return __atomic_load_n(&t->slot[fd], __ATOMIC_ACQUIRE);
}

int xs_set(int fd, struct xs_sock *s)
{
	struct xs_tab *t, *n;
	int cap;

	if (fd < 0 || fd >= XS_TABLE_MAX)
		return -EMFILE;
	pthread_mutex_lock(&xs_tab_lock);
	t = atomic_load(&xs_tab);
	if (!t || fd >= t->cap) {
		cap = t ? t->cap : 0;
		while (cap <= fd)
			cap = cap ? cap * 2 : 1024;
		n = calloc(1, sizeof(*n) + (size_t)cap * sizeof(n->slot[0]));
		if (!n) {
			pthread_mutex_unlock(&xs_tab_lock);
			return -ENOMEM;
		}
		n->cap = cap;
		if (t)
			memcpy(n->slot, t->slot, (size_t)t->cap * sizeof(t->slot[0]));
		atomic_store_explicit(&xs_tab, n, memory_order_release);
		t = n;
	}
	__atomic_store_n(&t->slot[fd], s, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&xs_tab_lock);
	return 0;
}

void xs_clear(int fd)
{
	struct xs_tab *t;

	pthread_mutex_lock(&xs_tab_lock);
	t = atomic_load(&xs_tab);
	if (t && fd >= 0 && fd < t->cap)
		__atomic_store_n(&t->slot[fd], NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&xs_tab_lock);
}

/** xs_new() - an entry for @fd (NULL if out of memory: @fd stays plain). */
struct xs_sock *xs_new(enum xs_kind kind, int fd, int family, int flags)
{
	struct xs_sock *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->kind = kind;
	s->family = family;
	s->flags = flags;
	s->canon = fd;
	s->tfd = s->bfd = -1;
	pthread_mutex_init(&s->lock, NULL);
	s->refs = 1;
	s->fds[0] = fd;
	if (xs_set(fd, s)) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		return NULL;
	}
	return s;
}

/** xs_alias_add() - @fd names @s too (dup). */
void xs_alias_add(struct xs_sock *s, int fd)
{
	if (xs_set(fd, s))
		return;
	pthread_mutex_lock(&s->lock);
	if (s->refs < XS_MAX_ALIAS)
		s->fds[s->refs] = fd;
	s->refs++;
	pthread_mutex_unlock(&s->lock);
}

/** xs_alias_del() - @fd no longer names @s (the caller closes it). */
void xs_alias_del(struct xs_sock *s, int fd)
{
	int n;

	xs_clear(fd);
	pthread_mutex_lock(&s->lock);
	n = s->refs < XS_MAX_ALIAS ? s->refs : XS_MAX_ALIAS;
	for (int i = 0; i < n; i++) {
		if (s->fds[i] == fd) {
			s->fds[i] = s->fds[n - 1];
			break;
		}
	}
	s->refs--;
	pthread_mutex_unlock(&s->lock);
}

/** xs_put() - free an entry no fd names any more. */
void xs_put(struct xs_sock *s)
{
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/*
 * fork() child: rsockets of the parent cannot be used here (the engine's
 * threads did not come along); accepted connections not yet attached can.
 */
void xs_table_fork_child(void)
{
	struct xs_tab *t = atomic_load(&xs_tab);

	pthread_mutex_init(&xs_tab_lock, NULL);
	if (!t)
		return;
	for (int fd = 0; fd < t->cap; fd++) {
		struct xs_sock *s = t->slot[fd];

		if (!s)
			continue;
		pthread_mutex_init(&s->lock, NULL);
		if (s->kind == XS_RS)
			s->kind = XS_DEAD;
	}
}
