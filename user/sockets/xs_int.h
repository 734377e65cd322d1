/* SPDX-License-Identifier: MIT */
/*
 * libxiwsock.so - xiwarp's LD_PRELOAD sockets layer (`xiwrun --sockets`):
 * unmodified TCP programs get stream sockets over RDMA (our rsockets,
 * user/sockets/xrs_*.c, with the seed-004 zero-copy extension), and plain
 * kernel TCP whenever the peer does not speak it.
 *
 * How a socket is decided (struct xs_sock.kind):
 *  - socket(AF_INET/AF_INET6, SOCK_STREAM) gives the application a real
 *    kernel socket (XS_CAND): nothing is decided yet.
 *  - connect(): if the policy allows (XIW_SOCK_MODE, XIW_SOCK_PORTS), an
 *    rsocket connects first; on success its fd replaces the application's
 *    fd number (dup2) and the socket is XS_RS. Otherwise the kernel
 *    socket connects as if we were not there (XS_CAND entry dropped).
 *  - listen(): the kernel socket listens (XS_LISTEN, natively pollable).
 *    accept()/accept4() accept a kernel connection and look at its first
 *    bytes: an MPA request (RFC 5044 §7.1, what our connect() sends)
 *    makes it XS_PENDING, anything else (or nothing within
 *    XIW_SOCK_ACCEPT_WAIT_MS) is returned untouched as plain TCP.
 *  - XS_PENDING: the application holds one end of a socketpair that
 *    becomes the socket's fd; the engine takes the TCP connection at the
 *    first use, in whichever process that happens (fork after accept).
 * Every XS_RS socket is a real pollable fd (xrs_int.h); poll/select/epoll
 * are interposed only to turn its readability into exact events.
 */
#ifndef XS_INT_H
#define XS_INT_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#define XS_PFX "xiwsock: "

enum xs_kind {
	XS_CAND,	/* kernel TCP socket, not connected or listening yet */
	XS_LISTEN,	/* kernel listener: accept() classifies */
	XS_PENDING,	/* accepted MPA connection, engine not attached yet */
	XS_RS,		/* rsocket */
	XS_DEAD,	/* rsocket of a parent process (after fork) */
};

#define XS_MAX_OPTS	16
#define XS_MAX_ALIAS	16

struct xs_opt {
	int level, name;
	socklen_t len;
	uint8_t val[sizeof(struct timeval)];
};

/**
 * struct xs_sock - what the preload knows of one application socket.
 * @refs:   fd numbers naming it (dup); @fds the first XS_MAX_ALIAS.
 * @canon:  the fd number the rsocket layer knows (XS_RS, XS_PENDING).
 * @tfd, @bfd: XS_PENDING: the accepted TCP fd, the socketpair's other end.
 * @flags:  O_NONBLOCK as the application set it.
 * @opts:   options set before connect, replayed on the rsocket.
 */
struct xs_sock {
	enum xs_kind kind;
	int refs;
	int fds[XS_MAX_ALIAS];
	int canon;
	int tfd, bfd;
	int family;
	int flags;
	pthread_mutex_t lock;
	int nopts;
	struct xs_opt opts[XS_MAX_OPTS];
};

/* ------------------------------------------------ real functions --- */

struct xs_real {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*sendfile64)(int, int, off_t *, size_t);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*shutdown)(int, int);
	int (*close)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
};

extern struct xs_real xs_real;
void xs_init(void);
extern bool xs_ready;

static inline void xs_need(void)
{
	if (__builtin_expect(!xs_ready, 0))
		xs_init();
}

/* ---------------------------------------------------------- knobs --- */

enum xs_mode { XS_MODE_AUTO, XS_MODE_TCP, XS_MODE_RDMA };

struct xs_knobs {
	enum xs_mode mode;		/* XIW_SOCK_MODE */
	int accept_wait_ms;		/* XIW_SOCK_ACCEPT_WAIT_MS */
	int connect_ms;			/* XIW_SOCK_CONNECT_MS */
	bool all_ports;			/* XIW_SOCK_PORTS unset or "all" */
	int nranges;
	uint16_t lo[32], hi[32];
	int verbose;			/* XIW_SOCK_LOG */
};
extern struct xs_knobs xs_kn;
bool xs_port_ok(uint16_t port);
void xs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* thread-local: inside our own calls, sockets are not the application's */
extern __thread int xs_inside;
/* the engine has run in this process (fork: a child cannot use it) */
extern bool xs_engine_used, xs_engine_gone;

/* ------------------------------------------------------- fd table --- */
struct xs_sock *xs_get(int fd);
int xs_set(int fd, struct xs_sock *s);
void xs_clear(int fd);
struct xs_sock *xs_new(enum xs_kind kind, int fd, int family, int flags);
void xs_alias_add(struct xs_sock *s, int fd);
void xs_alias_del(struct xs_sock *s, int fd);
void xs_put(struct xs_sock *s);
void xs_table_fork_child(void);

/* -------------------------------------------- sockets (xs_socket.c) --- */
int xs_attach(struct xs_sock *s);	/* rsocket fd, or -1 */
bool xs_is_rdma(const struct xs_sock *s);

/* ------------------------------------------------ epoll (xs_epoll.c) --- */
void xs_epoll_forget_fd(int fd);
void xs_epoll_forget_epfd(int epfd);

/* ------------------------------------------------ close (xs_misc.c) --- */
int xs_close_sock(int fd, struct xs_sock *s);

#endif /* XS_INT_H */
