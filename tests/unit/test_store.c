/* The rendezvous store on its own: set/get/add/wait/check, timeouts naming the missing keys, and
   a server that survives garbage (random bytes, truncated and oversized messages, a wrong token,
   requests before the handshake) while a proper client keeps working. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "store_fixture.h"
#include "store/store.h"
#include "store/wire.h"

static void raw(const void *data, size_t len, int read_reply) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)sr__store_server_port(server))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        if (write(fd, data, len) < 0) { /* the server may already have closed it */
        }
        if (read_reply) {
            char buf[256];
            struct timeval tv = {1, 0};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            if (read(fd, buf, sizeof buf) < 0) { /* closed */
            }
        }
    }
    close(fd);
}

static size_t header(unsigned char *b, unsigned op, uint32_t nitems) {
    sr__store_put_head(b, op, 0, nitems);
    return SR__STORE_HEADER;
}

int main(void) {
    char err[512];
    int port = fixture_server_start();
    CHECK(port > 0);
    if (port <= 0) return CHECK_DONE();

    sr__store *c = sr__store_connect("127.0.0.1", port, "secret", 5, err, sizeof err);
    CHECK(c != NULL);
    CHECK(sr__store_set(c, "a", "hello", 5) == 0);
    void *v = NULL;
    size_t len = 0;
    CHECK(sr__store_get(c, "a", &v, &len) == 0 && len == 5 && !memcmp(v, "hello", 5));
    free(v);
    CHECK(sr__store_get(c, "nope", &v, &len) == 1);
    CHECK(sr__store_add(c, "n", 5) == 5);
    CHECK(sr__store_add(c, "n", -2) == 3);
    const char *both[] = {"a", "n"}, *some[] = {"a", "x", "y"};
    CHECK(sr__store_check(c, both, 2) == 1);
    CHECK(sr__store_check(c, some, 3) == 0);
    char missing[64];
    CHECK(sr__store_wait(c, both, 2, 1, missing, sizeof missing) == 0);
    CHECK(sr__store_wait(c, some, 3, 0.2, missing, sizeof missing) == 1);
    CHECK_STR(missing, "x,y");

    /* a wait completed by another client's set */
    sr__store *c2 = sr__store_connect("127.0.0.1", port, "secret", 5, err, sizeof err);
    CHECK(sr__store_wait_send(c2, "later") == 0);
    CHECK(sr__store_set(c, "later", "1", 1) == 0);
    struct pollfd pw = {.fd = sr__store_fd(c2), .events = POLLIN};
    CHECK(poll(&pw, 1, 2000) == 1); /* the pending wait was answered */

    /* garbage, each on its own connection */
    unsigned char buf[64];
    unsigned char rnd[4096];
    for (size_t i = 0; i < sizeof rnd; i++) rnd[i] = (unsigned char)(rand() & 0xff);
    raw(rnd, sizeof rnd, 0);
    size_t h = header(buf, SR__OP_HELLO, 1);
    sr__put_u32(buf + h, 10);
    memcpy(buf + h + 4, "abc", 3);
    raw(buf, h + 7, 0); /* truncated, then closed */
    sr__put_u32(buf + h, 0xfffffff0u);
    raw(buf, h + 4, 1); /* oversized length */
    header(buf, SR__OP_HELLO, 100000);
    raw(buf, SR__STORE_HEADER, 1); /* too many items */
    h = header(buf, SR__OP_HELLO, 1);
    sr__put_u32(buf + h, 5);
    memcpy(buf + h + 4, "wrong", 5);
    raw(buf, h + 9, 1); /* wrong token */
    h = header(buf, SR__OP_SET, 2);
    sr__put_u32(buf + h, 1), buf[h + 4] = 'z', sr__put_u32(buf + h + 5, 1), buf[h + 9] = '1';
    raw(buf, h + 10, 1); /* a SET before the handshake */
    usleep(200000);
    fixture_lock();
    CHECK(sr__store_server_rejected(server) >= 5);
    fixture_unlock();
    CHECK(sr__store_get(c, "z", &v, &len) == 1); /* the unauthenticated SET did not land */

    sr__store *bad = sr__store_connect("127.0.0.1", port, "wrong", 2, err, sizeof err);
    CHECK(bad == NULL && strstr(err, "wrong or missing token"));

    /* still serving */
    CHECK(sr__store_set(c, "after", "ok", 2) == 0);
    CHECK(sr__store_get(c, "after", &v, &len) == 0 && len == 2);
    free(v);
    sr__store_close(c2);
    sr__store_close(c);

    /* nobody listening: connect gives up after its timeout, with a reason */
    fixture_server_stop();
    sr__store *none = sr__store_connect("127.0.0.1", port, "secret", 0.3, err, sizeof err);
    CHECK(none == NULL && strstr(err, "gave up after 0.3s"));
    return CHECK_DONE();
}
