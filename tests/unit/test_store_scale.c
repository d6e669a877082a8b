/* The store's new guarantees: FETCH (a wait and its gets in one round trip, whole values or one
   piece of each, a timeout naming the missing keys), a set that answers the waits on its key only,
   thousands of connections with pending waits (more than the 4,096 the server used to hold), and
   expiry through the deadline heap while other waits stay pending. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "store_fixture.h"
#include "store/store.h"
#include "store/wire.h"

static int readable(sr__store *c, int ms) {
    struct pollfd p = {.fd = sr__store_fd(c), .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

int main(void) {
    char err[512], missing[256];
    int port = fixture_server_start();
    CHECK(port > 0);
    if (port <= 0) return CHECK_DONE();
    sr__store *c = sr__store_connect("127.0.0.1", port, "secret", 5, err, sizeof err);
    CHECK(c != NULL);
    if (!c) return CHECK_DONE();

    /* FETCH: every value in one round trip; a timeout names what is missing and returns nothing */
    CHECK(sr__store_set(c, "a", "alpha", 5) == 0 && sr__store_set(c, "b", "", 0) == 0);
    const char *ab[2] = {"a", "b"}, *abz[3] = {"a", "z", "b"};
    void *v[3] = {0};
    size_t len[3] = {0};
    CHECK(sr__store_fetch(c, ab, 2, 0, v, len, missing, sizeof missing) == 0);
    CHECK(len[0] == 5 && v[0] && !strcmp(v[0], "alpha") && len[1] == 0 && v[1] && !*(char *)v[1]);
    free(v[0]), free(v[1]);
    v[0] = v[1] = NULL;
    CHECK(sr__store_fetch(c, abz, 3, 0.1, v, len, missing, sizeof missing) == 1);
    CHECK_STR(missing, "z");
    CHECK(!v[0] && !v[1] && !v[2]);
    CHECK(sr__store_fetch(c, abz, 3, 0, v, len, missing, sizeof missing) == 1); /* no wait at all */

    /* one piece of each value: part 1 of 3 of "000111222" and of "abcdef" */
    CHECK(sr__store_set(c, "p", "000111222", 9) == 0 && sr__store_set(c, "q", "abcdef", 6) == 0);
    const char *pq[2] = {"p", "q"};
    CHECK(sr__store_fetch_pieces(c, pq, 2, 1, 3, 1, v, len, missing, sizeof missing) == 0);
    CHECK(len[0] == 3 && !memcmp(v[0], "111", 3) && len[1] == 2 && !memcmp(v[1], "cd", 2));
    free(v[0]), free(v[1]);
    CHECK(sr__store_fetch_pieces(c, pq, 2, 3, 3, 1, v, len, missing, sizeof missing) == -1); /* no part 3 of 3 */

    /* a FETCH that waits is answered, with the value, when its key is set */
    sr__store *w = sr__store_connect("127.0.0.1", port, "secret", 5, err, sizeof err);
    sr__store *other = sr__store_connect("127.0.0.1", port, "secret", 5, err, sizeof err);
    CHECK(w && other);
    CHECK(sr__store_wait_send(other, "never") == 0);
    pid_t kid = fork();
    if (kid == 0) {
        usleep(100000);
        sr__store *s = sr__store_connect("127.0.0.1", port, "secret", 5, err, sizeof err);
        _exit(s && sr__store_set(s, "later", "v", 1) == 0 ? 0 : 1);
    }
    const char *later[1] = {"later"};
    CHECK(sr__store_fetch(w, later, 1, 5, v, len, missing, sizeof missing) == 0 && len[0] == 1 && !strcmp(v[0], "v"));
    free(v[0]);
    /* the set woke that wait only */
    CHECK(!readable(other, 100));
    fixture_lock();
    CHECK(sr__store_server_waiting(server, "never"));
    fixture_unlock();

    /* more connections than the old server held (4,096), each with a wait pending on a key of its
       own; setting one key answers its wait only */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int many = rl.rlim_cur >= 2 * 4200 + 100 ? 4200 : 0;
    CHECK(many > 0); /* the test needs 8,500 descriptors: ulimit -Hn */
    sr__store **cs = calloc((size_t)many, sizeof *cs);
    int connected = 0;
    for (int i = 0; i < many; i++) {
        char key[32];
        snprintf(key, sizeof key, "k/%d", i);
        cs[i] = sr__store_connect("127.0.0.1", port, "secret", 5, err, sizeof err);
        if (cs[i] && sr__store_wait_send(cs[i], key) == 0) connected++;
    }
    CHECK(connected == many);
    usleep(200000);
    fixture_lock();
    CHECK(many == 0 || (sr__store_server_waiting(server, "k/0") && sr__store_server_waiting(server, "k/4199")));
    fixture_unlock();
    CHECK(sr__store_set(c, "k/4199", "1", 1) == 0);
    CHECK(many == 0 || readable(cs[many - 1], 2000));
    CHECK(many == 0 || !readable(cs[0], 50));
    /* a timed wait expires while thousands stay pending */
    const char *t[1] = {"k/none"};
    CHECK(sr__store_wait(c, t, 1, 0.05, missing, sizeof missing) == 1 && !strcmp(missing, "k/none"));
    for (int i = 0; i < many; i++) sr__store_close(cs[i]);
    free(cs);
    usleep(200000);
    fixture_lock();
    CHECK(!sr__store_server_waiting(server, "k/0")); /* a closed connection's wait is gone */
    fixture_unlock();

    int st = 0;
    waitpid(kid, &st, 0);
    sr__store_close(w), sr__store_close(other), sr__store_close(c);
    fixture_server_stop();
    return CHECK_DONE();
}
