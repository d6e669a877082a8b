/*
 * One connection to the store shared by several handles, each on a channel of its own
 * (store/store.h, sr__store_link_*; the protocol is in store/wire.h).
 *
 * One thread per process, the reactor, reads the replies of every link of the process (an epoll
 * set) and hands each to its channel's handle (its `reply` slot, then its condition variable, and
 * its eventfd when it waits asynchronously).  One thread, not one per link: an agent has one link,
 * but bench/store_sim plays thousands of agents in a process, and threads are pids (32,768 by
 * default).  Requests are written whole under the link's send lock, so frames of different
 * channels never interleave (a request that its io timeout cuts off part-way fails its channel,
 * and the rest of its frame goes out first with the next request).  Each channel has at most one
 * request outstanding (store.h: one call at a time per handle), so one reply slot suffices.  A reply for a channel that is gone (closed,
 * or timed out) is dropped: channel numbers are never reused on a link, so it cannot be taken for
 * another request's answer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "store/client_internal.h"

/* The reactor's stack: it only receives and copies (its buffer is on the heap); what it reads from
   one link in a turn, at most, so that one busy link does not hold the others'. */
enum { REACTOR_STACK = 128 << 10, READ_CHUNK = 16 << 10, READS_PER_TURN = 4 };

struct sr__store_link {
    int fd;
    pthread_mutex_t mu;      /* what follows, and every channel's fields below its `link` */
    pthread_mutex_t send_mu; /* one frame at a time on the socket, and `pending` */
    sr__buf pending;         /* the rest of a frame whose sender's io timeout cut it off part-way:
                                it goes out before any other frame (send_mu) */
    int refs;                /* sr__store_link_ref's, and one per open channel */
    uint32_t next_channel;
    int dead;
    char why[256];
    sr__store **chans;
    size_t nchans, capchans;
    /* the reactor's own (under its gate) */
    sr__buf in;
    sr__store_msg msg;
    int closing;                 /* released: out of the epoll set, freed at the end of the turn */
    struct sr__store_link *next; /* in the reactor's graveyard */
};

/* The process's reactor.  `gate` is held while it handles what epoll reported (never while it
   waits), by a link's release, and around fork(). */
static struct {
    pthread_mutex_t gate;
    pid_t pid; /* the process it runs in (a forked child has none: it starts its own) */
    int epfd, wake_fd;
    char *chunk;
    sr__store_link *graveyard;
} reactor = {.gate = PTHREAD_MUTEX_INITIALIZER, .epfd = -1, .wake_fd = -1};

static void signal_event(sr__store *c) {
    if (c->event_fd < 0) return;
    uint64_t one = 1;
    if (write(c->event_fd, &one, sizeof one) < 0) { /* already readable: its counter is not 0 */
    }
}

/* A reply frame for `channel` (l->mu held). */
static void deliver(sr__store_link *l, uint32_t channel, const char *frame, size_t len) {
    for (size_t i = 0; i < l->nchans; i++) {
        sr__store *c = l->chans[i];
        if (c->channel != channel) continue;
        if (!c->awaiting || c->has_reply) return; /* nobody asked (a reply after a timeout): dropped */
        c->reply.n = 0;
        sr__buf_add(&c->reply, frame, len);
        if (c->reply.oom) c->reply.n = 0; /* read back as a malformed reply: that call fails */
        c->reply.oom = 0;
        c->awaiting = 0;
        c->has_reply = 1;
        pthread_cond_signal(&c->replied);
        signal_event(c);
        return;
    }
}

/* The connection ended: every channel's call fails, every asynchronous wait wakes (gate held). */
static void end_link(sr__store_link *l, const char *why) {
    epoll_ctl(reactor.epfd, EPOLL_CTL_DEL, l->fd, NULL);
    pthread_mutex_lock(&l->mu);
    l->dead = 1;
    snprintf(l->why, sizeof l->why, "%s", why);
    for (size_t i = 0; i < l->nchans; i++) {
        pthread_cond_broadcast(&l->chans[i]->replied);
        signal_event(l->chans[i]);
    }
    pthread_mutex_unlock(&l->mu);
}

/* Reads what l's socket holds (a few reads at most) and hands out the whole replies (gate held). */
static void pump(sr__store_link *l) {
    char why[200] = "";
    for (int reads = 0; reads < READS_PER_TURN && !why[0]; reads++) {
        ssize_t r = recv(l->fd, reactor.chunk, READ_CHUNK, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (r <= 0) {
            snprintf(why, sizeof why, "store connection closed (%s)", r ? strerror(errno) : "by the server");
            break;
        }
        sr__buf_add(&l->in, reactor.chunk, (size_t)r);
        size_t off = 0;
        if (l->in.oom) snprintf(why, sizeof why, "out of memory for a reply from the store");
        while (!why[0] && off < l->in.n) {
            long used = sr__store_parse((const unsigned char *)l->in.s + off, l->in.n - off, &l->msg);
            if (used < 0) {
                snprintf(why, sizeof why, "%s",
                         used == -2 ? "out of memory for the items of a reply from the store"
                                    : "malformed reply from the store");
                break;
            }
            if (used == 0) break;
            pthread_mutex_lock(&l->mu);
            deliver(l, l->msg.channel, l->in.s + off, (size_t)used);
            pthread_mutex_unlock(&l->mu);
            off += (size_t)used;
        }
        memmove(l->in.s, l->in.s + off, l->in.n - off);
        l->in.n -= off;
    }
    if (why[0]) end_link(l, why);
}

static void free_link(sr__store_link *l) {
    close(l->fd);
    sr__buf_free(&l->in);
    sr__buf_free(&l->pending);
    sr__store_msg_free(&l->msg);
    free(l->chans);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->send_mu);
    free(l);
}

static void *reactor_main(void *arg) {
    (void)arg;
    struct epoll_event ev[64];
    while (1) {
        int n = epoll_wait(reactor.epfd, ev, 64, -1);
        if (n < 0 && errno != EINTR) return NULL; /* its set is gone: nothing will be read again */
        pthread_mutex_lock(&reactor.gate);
        for (int i = 0; i < n; i++) {
            sr__store_link *l = ev[i].data.ptr;
            if (!l) { /* woken to free the graveyard */
                uint64_t count;
                if (read(reactor.wake_fd, &count, sizeof count) < 0) { /* nothing to take */
                }
            } else if (!l->closing && !l->dead) {
                pump(l);
            }
        }
        while (reactor.graveyard) {
            sr__store_link *l = reactor.graveyard;
            reactor.graveyard = l->next;
            free_link(l);
        }
        pthread_mutex_unlock(&reactor.gate);
    }
}

/* Starts this process's reactor once (gate held); 0, or -1 with err. */
static int reactor_start(char *err, size_t errlen) {
    if (reactor.pid == getpid()) return 0;
    /* in a forked child the parent's thread is gone: its set, if any, stays the parent's */
    reactor.epfd = epoll_create1(EPOLL_CLOEXEC);
    reactor.wake_fd = reactor.epfd < 0 ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    const char *why = reactor.wake_fd < 0 || epoll_ctl(reactor.epfd, EPOLL_CTL_ADD, reactor.wake_fd, &ev) != 0
                          ? strerror(errno)
                      : !(reactor.chunk = sr__malloc(READ_CHUNK)) ? "out of memory"
                                                                  : NULL;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, REACTOR_STACK);
    int rc = why ? 0 : pthread_create(&t, &attr, reactor_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) why = strerror(rc);
    if (why) {
        snprintf(err, errlen, "cannot start the store connections' reader thread: %s", why);
        if (reactor.wake_fd >= 0) close(reactor.wake_fd);
        if (reactor.epfd >= 0) close(reactor.epfd);
        free(reactor.chunk);
        reactor.epfd = reactor.wake_fd = -1, reactor.chunk = NULL;
        return -1;
    }
    pthread_detach(t);
    reactor.pid = getpid();
    reactor.graveyard = NULL;
    return 0;
}

sr__store_link *sr__link_start(int fd, char *err, size_t errlen) {
    sr__store_link *l = sr__calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory for a store connection");
        errno = ENOMEM;
        return NULL;
    }
    l->fd = fd;
    l->refs = 1;
    l->next_channel = 1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->send_mu, NULL);
    pthread_mutex_lock(&reactor.gate);
    int rc = reactor_start(err, errlen);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
    if (rc == 0 && epoll_ctl(reactor.epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        snprintf(err, errlen, "cannot watch the store connection: %s", strerror(errno));
        rc = -1;
    }
    pthread_mutex_unlock(&reactor.gate);
    if (rc != 0) {
        pthread_mutex_destroy(&l->mu), pthread_mutex_destroy(&l->send_mu);
        free(l);
        errno = EAGAIN;
        return NULL;
    }
    return l;
}

sr__store_link *sr__store_link_ref(sr__store_link *l) {
    if (!l) return NULL;
    pthread_mutex_lock(&l->mu);
    l->refs++;
    pthread_mutex_unlock(&l->mu);
    return l;
}

void sr__store_link_release(sr__store_link *l) {
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    int last = --l->refs == 0;
    pthread_mutex_unlock(&l->mu);
    if (!last) return;
    /* the reactor may hold l in the events of its current turn: it is freed at that turn's end */
    pthread_mutex_lock(&reactor.gate);
    epoll_ctl(reactor.epfd, EPOLL_CTL_DEL, l->fd, NULL);
    l->closing = 1;
    l->next = reactor.graveyard;
    reactor.graveyard = l;
    uint64_t one = 1;
    if (write(reactor.wake_fd, &one, sizeof one) < 0) { /* already woken */
    }
    pthread_mutex_unlock(&reactor.gate);
}

void sr__store_link_fork_begin(sr__store_link *l) {
    if (l) pthread_mutex_lock(&reactor.gate);
}

void sr__store_link_fork_end(sr__store_link *l) {
    if (l) pthread_mutex_unlock(&reactor.gate);
}

sr__store *sr__store_link_open(sr__store_link *l, char *err, size_t errlen) {
    sr__store *c = sr__calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory for a store channel");
        return NULL;
    }
    c->fd = -1;
    c->event_fd = -1;
    c->msg = &c->msg_;
    c->link = l;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->replied, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_lock(&l->mu);
    const char *refused = l->dead                                   ? l->why
                          : l->next_channel > SR__STORE_MAX_CHANNEL ? "no channel numbers left on this connection"
                          : sr__grow((void **)&l->chans, &l->capchans, l->nchans + 1, sizeof *l->chans) != 0
                              ? "out of memory for a store channel"
                              : NULL;
    if (!refused) {
        c->channel = l->next_channel++;
        l->chans[l->nchans++] = c;
        l->refs++;
    } else {
        snprintf(err, errlen, "%s", refused);
    }
    pthread_mutex_unlock(&l->mu);
    if (refused) {
        pthread_cond_destroy(&c->replied);
        free(c);
        return NULL;
    }
    return c;
}

/* Milliseconds left before `deadline` (sr__now_s; < 0: none), -1 for none. */
static int ms_left(double deadline) {
    if (deadline < 0) return -1;
    double left = deadline - sr__now_s();
    return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* The socket took no more before the sender's deadline (send_until). */
#define STALLED (-1)

/* Sends p[*off .. len) on fd until it is all out or `deadline` passes (*off moves on); 0, STALLED,
   or the errno that broke the connection. */
static int send_until(int fd, const char *p, size_t len, double deadline, size_t *off) {
    while (*off < len) {
        ssize_t w = send(fd, p + *off, len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            *off += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd q = {.fd = fd, .events = POLLOUT};
            int ready = poll(&q, 1, ms_left(deadline));
            if (ready == 0) return STALLED;
            if (ready < 0 && errno != EINTR) return errno;
        } else if (!(w < 0 && errno == EINTR)) {
            return w < 0 ? errno : EPIPE;
        }
    }
    return 0;
}

int sr__link_send(sr__store *c, const char *frame, size_t len, int expect_reply) {
    sr__store_link *l = c->link;
    pthread_mutex_lock(&l->mu);
    int refused = l->dead || c->lost;
    if (refused) snprintf(c->error, sizeof c->error, "%s", l->dead ? l->why : "store connection lost");
    else c->awaiting = expect_reply, c->has_reply = 0;
    pthread_mutex_unlock(&l->mu);
    if (refused) return c->lost = 1, -1;
    double deadline = c->io_timeout_s > 0 ? sr__now_s() + c->io_timeout_s : -1;
    size_t off = 0, flushed = 0;
    pthread_mutex_lock(&l->send_mu);
    /* first what an earlier request left unsent: the server reads whole frames, one after another */
    int failed = l->pending.n ? send_until(l->fd, l->pending.s, l->pending.n, deadline, &flushed) : 0;
    if (flushed) {
        memmove(l->pending.s, l->pending.s + flushed, l->pending.n - flushed);
        l->pending.n -= flushed;
    }
    if (!failed) failed = send_until(l->fd, frame, len, deadline, &off);
    if (failed == STALLED && (off > 0 || !expect_reply)) {
        /* part of this frame went out and node 0 takes no more for now (busy, stopped, a slow
           link): the rest follows before the next frame, so that this channel alone fails, as a
           connection of its own did, and not the "alive" wait beside it.  A CLOSE (the one frame
           without a reply) waits there whole if need be: the server must see it, or the channel's
           wait stays filed and the connection's open channels pile up to the server's limit. */
        sr__buf_add(&l->pending, frame + off, len - off);
        if (l->pending.oom) shutdown(l->fd, SHUT_RDWR), sr__buf_free(&l->pending);
    } else if (failed > 0 && (off > 0 || l->pending.n)) {
        /* the connection broke with a frame part-way: the stream cannot be read any more, so the
           connection ends (the reader sees it and fails every channel) */
        shutdown(l->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&l->send_mu);
    if (!failed) return 0;
    pthread_mutex_lock(&l->mu);
    c->awaiting = 0;
    c->lost = 1;
    pthread_mutex_unlock(&l->mu);
    if (failed == STALLED)
        snprintf(c->error, sizeof c->error, "store connection stalled while sending: the store took no more within %gs",
                 c->io_timeout_s);
    else snprintf(c->error, sizeof c->error, "store connection lost while sending: %s", strerror(failed));
    return -1;
}

int sr__link_await(sr__store *c) {
    sr__store_link *l = c->link;
    struct timespec until;
    if (c->io_timeout_s > 0) {
        clock_gettime(CLOCK_MONOTONIC, &until);
        double t = (double)until.tv_sec + until.tv_nsec * 1e-9 + c->io_timeout_s;
        until.tv_sec = (time_t)t;
        until.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
    }
    pthread_mutex_lock(&l->mu);
    int timed_out = 0;
    while (!c->has_reply && !l->dead && !timed_out) {
        if (c->io_timeout_s > 0) timed_out = pthread_cond_timedwait(&c->replied, &l->mu, &until) == ETIMEDOUT;
        else pthread_cond_wait(&c->replied, &l->mu);
    }
    int rc = 0;
    if (c->has_reply) {
        sr__buf t = c->in; /* the reply becomes c->in; the old buffer is the next reply's slot */
        c->in = c->reply;
        c->reply = t;
        c->consumed = 0;
        c->has_reply = 0;
    } else {
        c->awaiting = 0;
        c->lost = 1;
        if (timed_out) snprintf(c->error, sizeof c->error, "no reply from the store within %gs", c->io_timeout_s);
        else snprintf(c->error, sizeof c->error, "%s", l->why);
        rc = -1;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int sr__link_event_fd(sr__store *c) {
    if (c->event_fd >= 0) return c->event_fd;
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) {
        snprintf(c->error, sizeof c->error, "cannot make an eventfd for a store wait: %s", strerror(errno));
        return -1;
    }
    sr__store_link *l = c->link;
    pthread_mutex_lock(&l->mu);
    c->event_fd = fd;
    if (l->dead) signal_event(c); /* the connection ended already: the wait ends at once */
    pthread_mutex_unlock(&l->mu);
    return fd;
}

void sr__link_close_channel(sr__store *c) {
    sr__store_link *l = c->link;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->nchans; i++)
        if (l->chans[i] == c) {
            l->chans[i] = l->chans[--l->nchans];
            break;
        }
    int dead = l->dead;
    pthread_mutex_unlock(&l->mu);
    if (!dead) { /* the server drops the channel's pending wait, as it would a closed connection's */
        unsigned char h[SR__STORE_HEADER];
        sr__store_put_head(h, SR__OP_CLOSE, c->channel, 0);
        c->lost = 0; /* c is off the list: the reactor no longer touches it */
        c->io_timeout_s = c->io_timeout_s > 0 && c->io_timeout_s < 1 ? c->io_timeout_s : 1;
        (void)sr__link_send(c, (const char *)h, sizeof h, 0);
    }
    if (c->event_fd >= 0) close(c->event_fd);
    pthread_cond_destroy(&c->replied);
    sr__buf_free(&c->reply);
    sr__store_link_release(l);
}
