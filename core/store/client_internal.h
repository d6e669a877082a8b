/*
 * A client handle, shared by client.c (the calls of store/store.h) and link.c (handles that are
 * channels of one shared connection, store/wire.h).  Not for use outside core/store/.
 */
#ifndef SR__CORE_STORE_CLIENT_INTERNAL_H
#define SR__CORE_STORE_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "store/store.h"
#include "store/wire.h"

struct sr__store {
    int fd; /* a connection of its own; -1 for a channel of a link */
    char error[512];
    sr__buf in;
    size_t consumed;    /* bytes of `in` belonging to the last reply */
    sr__store_msg msg_; /* the last reply */
    sr__store_msg *msg;
    int lost; /* the connection broke (closed by the server, a send failed), or a reply timed out */
    /* a channel of a link (link.c): the fields below the link are guarded by its mutex */
    sr__store_link *link;
    uint32_t channel;
    double io_timeout_s; /* 0: none */
    pthread_cond_t replied;
    int awaiting;  /* a request was sent and its reply has not come */
    int has_reply; /* `reply` holds it, whole */
    sr__buf reply;
    int event_fd; /* an eventfd made by the first asynchronous wait: readable once a reply came */
};

/* A link around fd, a connection authenticated on channel 0, with its reader thread running; NULL
   with err and errno (fd is then still the caller's). */
sr__store_link *sr__link_start(int fd, char *err, size_t errlen);
/* Sends one whole request frame on c's channel. 0, or -1 with c->error.  expect_reply 0: a CLOSE,
   which a stalled connection keeps to send before the next request. */
int sr__link_send(sr__store *c, const char *frame, size_t len, int expect_reply);
/* Waits for the reply to c's request and leaves it, whole, in c->in. 0, or -1 with c->error. */
int sr__link_await(sr__store *c);
/* Ends c's channel (CLOSE) and drops c's reference to its link; frees nothing of c else. */
void sr__link_close_channel(sr__store *c);
/* An asynchronous wait is about to be sent on c: the descriptor it will make readable. */
int sr__link_event_fd(sr__store *c);

#endif
