/* The store server's channels (store/wire.h): clients speaking raw frames over real sockets to a
   real server, served in this thread between the clients' steps (no race on the server's state
   that sr__store_server_waiting and _rejected read).  A pending wait holds only its channel; a
   reply carries its request's channel; CLOSE drops a channel's wait without a reply and frees its
   number; the connection's end drops every channel's wait; the protocol's bounds (channels per
   connection, HELLO on channel 0, no CLOSE of channel 0, one request at a time per channel) close
   the connection and count it as rejected.  Old clients (channel 0 only): unit_store. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "store/store.h"
#include "store/wire.h"

#define TOKEN "secret"
#define NO_REPLY_MS 150 /* how long a reply that must not come is waited for */
#define REPLY_MS 5000   /* how long one that must come is (it ends as soon as it comes) */

static sr__store_server *server;

/* One server turn, waiting up to ms for something to do. */
static void turn(int ms) {
    struct pollfd p[4];
    int n = sr__store_server_pollfds(server, p, 4);
    poll(p, (nfds_t)n, ms);
    sr__store_server_handle(server, p, n);
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct client {
    int fd;
    unsigned char in[1 << 16];
    size_t n;
} client;

typedef struct reply {
    unsigned status;
    uint32_t channel, nitems;
    char item0[64]; /* the first item, NUL-terminated (cut at 63 bytes) */
} reply;

static client *dial(void) {
    client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)sr__store_server_port(server))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) { /* the listen backlog takes it */
        fprintf(stderr, "cannot connect to the store server on port %d: %s\n", sr__store_server_port(server),
                strerror(errno));
        exit(1);
    }
    return c;
}

static void hang_up(client *c) {
    close(c->fd);
    free(c);
}

/* Sends one request: op on channel with n items. */
static void say(client *c, unsigned op, uint32_t channel, uint32_t n, const void *const *items, const uint32_t *lens) {
    unsigned char m[4096];
    size_t off = SR__STORE_HEADER;
    sr__store_put_head(m, op, channel, n);
    for (uint32_t i = 0; i < n; i++) {
        sr__put_u32(m + off, lens[i]);
        memcpy(m + off + 4, items[i], lens[i]);
        off += 4 + lens[i];
    }
    if (send(c->fd, m, off, MSG_NOSIGNAL) != (ssize_t)off) { /* closed: the next read says so */
    }
}

static void say_keys(client *c, unsigned op, uint32_t channel, const char *k, const char *v) {
    const void *items[2] = {k, v};
    uint32_t lens[2] = {(uint32_t)strlen(k), v ? (uint32_t)strlen(v) : 0};
    say(c, op, channel, v ? 2 : 1, items, lens);
}

/* WAIT (or FETCH, whole values) on one key, ms < 0: forever. */
static void say_wait(client *c, unsigned op, uint32_t channel, long long ms, const char *key) {
    unsigned char t[8], piece[8] = {0};
    sr__put_i64(t, ms);
    const void *items[3] = {t, piece, key};
    uint32_t lens[3] = {8, 8, (uint32_t)strlen(key)};
    if (op == SR__OP_WAIT) items[1] = key, lens[1] = lens[2];
    say(c, op, channel, op == SR__OP_WAIT ? 2 : 3, items, lens);
}

/* The next reply within ms (the server served meanwhile): 1, 0 when none came, -1 when the server closed the connection. */
static int hear(client *c, reply *r, int ms) {
    static sr__store_msg m;
    long long end = now_ms() + ms;
    while (1) {
        long used = sr__store_parse(c->in, c->n, &m);
        if (used < 0) return -1;
        if (used > 0) {
            r->status = m.op_or_status, r->channel = m.channel, r->nitems = m.nitems;
            size_t len = m.nitems ? m.len[0] : 0;
            if (len > sizeof r->item0 - 1) len = sizeof r->item0 - 1;
            if (len) memcpy(r->item0, m.item[0], len);
            r->item0[len] = 0;
            memmove(c->in, c->in + used, c->n - (size_t)used);
            c->n -= (size_t)used;
            return 1;
        }
        ssize_t got = recv(c->fd, c->in + c->n, sizeof c->in - c->n, MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return -1;
        if (got > 0) {
            c->n += (size_t)got;
            continue;
        }
        if (now_ms() >= end) return 0;
        turn(5);
    }
}

/* The server closed c within REPLY_MS (replies before the end, an error's, are read over). */
static int closed(client *c) {
    reply r;
    long long end = now_ms() + REPLY_MS;
    int rc;
    while ((rc = hear(c, &r, (int)(end - now_ms()))) == 1) {}
    return rc == -1;
}

static int hello(client *c) {
    say_keys(c, SR__OP_HELLO, 0, TOKEN, NULL);
    reply r;
    return hear(c, &r, REPLY_MS) == 1 && r.status == SR__ST_OK && r.channel == 0;
}

/* A request answered with OK on its own channel (item 0 as want, when want is not NULL). */
static int ok(client *c, unsigned op, uint32_t channel, const char *k, const char *v, const char *want) {
    say_keys(c, op, channel, k, v);
    reply r;
    return hear(c, &r, REPLY_MS) == 1 && r.status == SR__ST_OK && r.channel == channel &&
           (!want || !strcmp(r.item0, want));
}

/* Serves until key's waiting state is want (REPLY_MS at most). */
static int waiting_becomes(const char *key, int want) {
    for (long long end = now_ms() + REPLY_MS; now_ms() < end; turn(5))
        if (sr__store_server_waiting(server, key) == want) return 1;
    return sr__store_server_waiting(server, key) == want;
}

/* (1) a wait holds only its channel: SET and GET on other channels are answered meanwhile, and the
   SET of the awaited key answers the waits with their own channels in the header */
static void wait_holds_its_channel_only(void) {
    client *c = dial();
    CHECK(hello(c));
    say_wait(c, SR__OP_WAIT, 1, -1, "k1");
    say_wait(c, SR__OP_FETCH, 7, -1, "k1");
    CHECK(waiting_becomes("k1", 1));
    CHECK(ok(c, SR__OP_SET, SR__STORE_MAX_CHANNEL, "x", "10", NULL)); /* every bit of the u24 */
    CHECK(ok(c, SR__OP_GET, SR__STORE_MAX_CHANNEL, "x", NULL, "10"));
    CHECK(ok(c, SR__OP_GET, 2, "x", NULL, "10"));
    CHECK(sr__store_server_waiting(server, "k1") == 1);
    say_keys(c, SR__OP_SET, 2, "k1", "v1");
    int got1 = 0, got7 = 0, got2 = 0;
    reply r;
    for (int i = 0; i < 3; i++) {
        CHECK(hear(c, &r, REPLY_MS) == 1 && r.status == SR__ST_OK);
        got1 += r.channel == 1 && r.nitems == 0;
        got7 += r.channel == 7 && r.nitems == 1 && !strcmp(r.item0, "v1");
        got2 += r.channel == 2;
    }
    CHECK(got1 == 1 && got7 == 1 && got2 == 1);
    CHECK(hear(c, &r, NO_REPLY_MS) == 0);
    /* the channels are free again */
    CHECK(ok(c, SR__OP_GET, 1, "k1", NULL, "v1"));
    CHECK(ok(c, SR__OP_GET, 7, "x", NULL, "10"));
    hang_up(c);
}

/* (2) CLOSE drops the channel's pending wait, says nothing, and frees the number */
static void close_drops_the_wait(void) {
    client *c = dial();
    CHECK(hello(c));
    say_wait(c, SR__OP_WAIT, 3, -1, "k3");
    CHECK(waiting_becomes("k3", 1));
    say(c, SR__OP_CLOSE, 3, 0, NULL, NULL);
    CHECK(waiting_becomes("k3", 0));
    reply r;
    CHECK(hear(c, &r, NO_REPLY_MS) == 0);
    CHECK(ok(c, SR__OP_GET, 3, "x", NULL, "10")); /* a fresh channel 3 */
    CHECK(ok(c, SR__OP_SET, 0, "k3", "v3", NULL));
    CHECK(hear(c, &r, NO_REPLY_MS) == 0); /* nothing for the dropped wait */

    /* a wait with a deadline: the heap forgets it too (no TIMEOUT once it passes) */
    say_wait(c, SR__OP_FETCH, 4, 100, "k4");
    CHECK(waiting_becomes("k4", 1));
    CHECK(sr__store_server_timeout_ms(server) >= 0);
    say(c, SR__OP_CLOSE, 4, 0, NULL, NULL);
    CHECK(waiting_becomes("k4", 0));
    CHECK(sr__store_server_timeout_ms(server) == -1);
    CHECK(hear(c, &r, 100 + NO_REPLY_MS) == 0);
    /* CLOSE of a channel that is not open changes nothing */
    say(c, SR__OP_CLOSE, 99, 0, NULL, NULL);
    CHECK(ok(c, SR__OP_GET, 4, "k3", NULL, "v3"));
    CHECK(ok(c, SR__OP_GET, 99, "k3", NULL, "v3"));
    hang_up(c);
}

/* (3) the connection's end drops the wait of every channel */
static void end_drops_every_wait(void) {
    client *c = dial();
    CHECK(hello(c));
    say_wait(c, SR__OP_WAIT, 0, -1, "e0");
    say_wait(c, SR__OP_WAIT, 1, 60000, "e1");
    say_wait(c, SR__OP_FETCH, 2, -1, "e2");
    CHECK(waiting_becomes("e0", 1) && waiting_becomes("e1", 1) && waiting_becomes("e2", 1));
    hang_up(c);
    CHECK(waiting_becomes("e0", 0) && waiting_becomes("e1", 0) && waiting_becomes("e2", 0));
    CHECK(sr__store_server_timeout_ms(server) == -1);
}

/* (4) at most SR__STORE_MAX_CHANNELS open channels, channel 0 among them; closed ones do not count */
static void channels_are_bounded(void) {
    client *c = dial();
    CHECK(hello(c));
    int all = 1;
    for (uint32_t ch = 1; ch < SR__STORE_MAX_CHANNELS; ch++) all &= ok(c, SR__OP_GET, ch, "x", NULL, "10");
    CHECK(all);
    say(c, SR__OP_CLOSE, 5, 0, NULL, NULL);
    CHECK(ok(c, SR__OP_GET, 1000, "x", NULL, "10")); /* in place of 5 */
    unsigned long rejected = sr__store_server_rejected(server);
    say_keys(c, SR__OP_GET, 2000, "x", NULL); /* one more */
    CHECK(closed(c));
    CHECK(sr__store_server_rejected(server) == rejected + 1);
    hang_up(c);
}

/* (5), (6) what breaks the protocol closes the connection, counted as rejected */
static void violation(const char *what, int authed, unsigned op, uint32_t channel, int wait_first) {
    client *c = dial();
    if (authed) CHECK(hello(c));
    if (wait_first) say_wait(c, SR__OP_WAIT, channel, -1, "never");
    unsigned long rejected = sr__store_server_rejected(server);
    if (op == SR__OP_HELLO) say_keys(c, op, channel, TOKEN, NULL);
    else if (op == SR__OP_CLOSE) say(c, op, channel, 0, NULL, NULL);
    else say_keys(c, op, channel, "x", NULL);
    int shut = closed(c), counted = sr__store_server_rejected(server) == rejected + 1;
    if (!shut || !counted) fprintf(stderr, "%s: closed %d, counted as rejected %d\n", what, shut, counted);
    CHECK(shut && counted);
    hang_up(c);
}

int main(void) {
    char err[512];
    server = sr__store_server_start("127.0.0.1", 0, TOKEN, err, sizeof err);
    if (!server) {
        fprintf(stderr, "cannot start the store server: %s\n", err);
        return 1;
    }
    wait_holds_its_channel_only();
    close_drops_the_wait();
    end_drops_every_wait();
    channels_are_bounded();
    violation("HELLO on channel 5", 0, SR__OP_HELLO, 5, 0);
    violation("CLOSE on channel 0", 1, SR__OP_CLOSE, 0, 0);
    violation("a request on channel 0 while its wait is pending", 1, SR__OP_GET, 0, 1);
    violation("a request on channel 6 while its wait is pending", 1, SR__OP_GET, 6, 1);
    CHECK(sr__store_server_waiting(server, "never") == 0);

    /* an old client's channel 0 still works beside all that */
    client *c = dial();
    CHECK(hello(c));
    CHECK(ok(c, SR__OP_GET, 0, "x", NULL, "10"));
    hang_up(c);
    sr__store_server_free(server);
    return CHECK_DONE();
}
