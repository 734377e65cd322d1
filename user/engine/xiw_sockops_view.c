// SPDX-License-Identifier: MIT
/*
 * The bpftool listing of traced sockets (xiw_sk_view2, pinned in the
 * host's /sys/fs/bpf/xiwarp): who puts a socket in, who takes it out.
 *
 * The engine adds a socket when it registers it and deletes it when it
 * unregisters it (stream closed). The program only refreshes entries that
 * exist (BPF_EXIST), so an ACK callback that raced the unregister cannot
 * put a closed socket back. A process that exits with streams still open
 * (exit() without destroying its QPs, or a close still waiting for the
 * peer) deletes its remaining entries from a library destructor: the
 * program's own TCP_CLOSE callback would come after the process and its
 * program are gone. A killed process leaves its entries (README).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include "xiw_sockops.h"

static pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;
static int view_fd = -1;	/* the listing map, once a socket was added */
static unsigned int view_ours;	/* sockets registered and not unregistered */
static bool view_closed;	/* exiting: no more additions */

static int sock_cookie(int sockfd, uint64_t *ck)
{
	socklen_t len = sizeof(*ck);

	return getsockopt(sockfd, SOL_SOCKET, SO_COOKIE, ck, &len) ? -errno : 0;
}

void xiw_sk_view_add(int map_fd, int sockfd, const struct xiw_sk_ack *st)
{
	uint64_t ck;

	if (map_fd < 0 || sock_cookie(sockfd, &ck))
		return;	/* the listing is for people; tracing works without */
	pthread_mutex_lock(&view_lock);
	if (!view_closed) {
		bpf_map_update_elem(map_fd, &ck, st, BPF_ANY);
		view_fd = map_fd;
		view_ours++;	/* registered: swept at exit if still open */
	}
	pthread_mutex_unlock(&view_lock);
}

void xiw_sk_view_del(int map_fd, int sockfd)
{
	uint64_t ck;

	if (map_fd < 0 || sock_cookie(sockfd, &ck))
		return;
	pthread_mutex_lock(&view_lock);
	/* ENOENT: the program's TCP_CLOSE callback was first */
	bpf_map_delete_elem(map_fd, &ck);
	if (view_ours)
		view_ours--;
	pthread_mutex_unlock(&view_lock);
}

/*
 * Delete every entry this process owns. Keys are collected first: deleting
 * while walking with bpf_map_get_next_key() restarts the walk from the
 * first key on a hash map.
 */
static void view_sweep(int map_fd, uint32_t self)
{
	uint64_t key, next, mine[256];
	struct xiw_sk_ack st;
	unsigned int n, pass = 0;

	do {
		void *prev = NULL;

		n = 0;
		while (n < 256 && !bpf_map_get_next_key(map_fd, prev, &next)) {
			key = next;
			prev = &key;
			if (!bpf_map_lookup_elem(map_fd, &key, &st) &&
			    st.owner == self)
				mine[n++] = key;
		}
		for (unsigned int i = 0; i < n; i++)
			bpf_map_delete_elem(map_fd, &mine[i]);
	} while (n == 256 && ++pass < 32);	/* 32 × 256 > max_entries */
}

__attribute__((destructor)) static void sk_view_exit(void)
{
	pthread_mutex_lock(&view_lock);
	view_closed = true;
	if (view_ours && view_fd >= 0)
		view_sweep(view_fd, (uint32_t)getpid());
	pthread_mutex_unlock(&view_lock);
}
