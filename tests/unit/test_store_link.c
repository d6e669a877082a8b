/* Channels of one store connection (store.h: sr__store_link), against the real server: a wait
   pending on one channel holds none of the others, two threads use their channels at once, an
   asynchronous wait's eventfd turns readable when its key is set, a reply that times out fails its
   channel only, so does a request node 0 stops taking in part-way (the rest goes out before the
   next request), closing a channel drops its wait at the server, and the server's end fails every
   channel and wakes its asynchronous waits.  Node 0 sees one connection for all of it. */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "store_fixture.h"
#include "store/store.h"

static int waiting(const char *key) {
    fixture_lock();
    int w = sr__store_server_waiting(server, key);
    fixture_unlock();
    return w;
}

/* Polls until waiting(key) == want, for up to 2 s. */
static int settles(const char *key, int want) {
    for (int i = 0; i < 200; i++) {
        if (waiting(key) == want) return 1;
        usleep(10000);
    }
    return 0;
}

static int readable(int fd, int ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* A thread that sets and reads back its own keys on its own channel. */
static void *busy(void *arg) {
    sr__store *c = arg;
    char key[32], val[32];
    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof key, "busy/%d", i);
        snprintf(val, sizeof val, "v%d", i);
        void *got = NULL;
        size_t len = 0;
        if (sr__store_set(c, key, val, strlen(val)) != 0 || sr__store_get(c, key, &got, &len) != 0 ||
            strcmp(got, val)) {
            free(got);
            return (void *)1;
        }
        free(got);
    }
    return NULL;
}

int main(void) {
    char err[512];
    int port = fixture_server_start();
    CHECK(port > 0);
    if (port <= 0) return CHECK_DONE();

    sr__store_link *bad = sr__store_link_connect("127.0.0.1", port, "wrong", 2, err, sizeof err);
    CHECK(bad == NULL && strstr(err, "wrong or missing token"));

    sr__store_link *l = sr__store_link_connect("127.0.0.1", port, "secret", 5, err, sizeof err);
    CHECK(l != NULL);
    if (!l) return CHECK_DONE();
    sr__store *alive = sr__store_link_open(l, err, sizeof err);
    sr__store *watch = sr__store_link_open(l, err, sizeof err);
    sr__store *ctl = sr__store_link_open(l, err, sizeof err);
    sr__store *wd = sr__store_link_open(l, err, sizeof err);
    CHECK(alive && watch && ctl && wd);
    if (!alive || !watch || !ctl || !wd) return CHECK_DONE();

    /* two waits pending forever on two channels; the others are served meanwhile */
    CHECK(sr__store_wait_send(alive, "alive/1") == 0);
    CHECK(sr__store_wait_send(watch, "outcome/1") == 0);
    CHECK(settles("alive/1", 1) && settles("outcome/1", 1));
    CHECK(!readable(sr__store_fd(watch), 50));
    CHECK(sr__store_set(ctl, "a", "1", 1) == 0);
    void *v = NULL;
    size_t len = 0;
    CHECK(sr__store_get(ctl, "a", &v, &len) == 0 && len == 1 && !memcmp(v, "1", 1));
    free(v), v = NULL;
    CHECK(sr__store_add(wd, "n", 5) == 5);

    /* two threads at once, each on its channel of the one connection */
    pthread_t b1, b2;
    void *r1 = (void *)1, *r2 = (void *)1;
    pthread_create(&b1, NULL, busy, ctl);
    pthread_create(&b2, NULL, busy, wd);
    pthread_join(b1, &r1);
    pthread_join(b2, &r2);
    CHECK(r1 == NULL && r2 == NULL);

    /* the awaited key set on another channel: the asynchronous wait's eventfd turns readable */
    CHECK(sr__store_set(ctl, "outcome/1", "ok", 2) == 0);
    CHECK(readable(sr__store_fd(watch), 2000));
    CHECK(!readable(sr__store_fd(alive), 0));

    /* a reply that does not come within the io timeout fails that channel, and only it */
    CHECK(sr__store_set_io_timeout(wd, 0.3) == 0);
    const char *never[1] = {"never"};
    char missing[64];
    CHECK(sr__store_wait(wd, never, 1, -1, missing, sizeof missing) == -1);
    CHECK(strstr(sr__store_error(wd), "no reply from the store within 0.3s") != NULL);
    CHECK(sr__store_get(wd, "a", &v, &len) == -1); /* a lost channel stays lost */
    CHECK(sr__store_get(ctl, "a", &v, &len) == 0);
    free(v), v = NULL;
    sr__store_close(wd); /* its wait is dropped at the server */
    CHECK(settles("never", 0));
    wd = sr__store_link_open(l, err, sizeof err);
    CHECK(wd && sr__store_add(wd, "n", 1) == 6);

    /* a timed wait on a channel still answers as on a connection */
    const char *later[1] = {"later"};
    CHECK(sr__store_wait(ctl, later, 1, 0.1, missing, sizeof missing) == 1 && !strcmp(missing, "later"));

    /* a request that node 0 does not take in within the io timeout, cut off part-way (node 0 stops
       reading: here its serving thread is held): that channel fails, and only it; the rest of its
       frame goes out before the next request, so the "alive" wait and the other channels last */
    {
        enum { NKEYS = 3800, KLEN = 1000 };
        char *names = malloc((size_t)NKEYS * (KLEN + 1));
        const char **keys = malloc(NKEYS * sizeof *keys);
        CHECK(names && keys);
        for (int i = 0; names && keys && i < NKEYS; i++) {
            char *k = names + (size_t)i * (KLEN + 1);
            memset(k, 'k', KLEN);
            snprintf(k, 16, "big/%d/", i);
            k[strlen(k)] = 'k';
            k[KLEN] = 0;
            keys[i] = k;
        }
        /* requests of a few MiB on channels of their own until one is cut off part-way (the
           first ones fill the kernel's buffers) */
        sr__store *bigs[6] = {0};
        int partial = 0;
        fixture_lock(); /* node 0 reads nothing more for now */
        for (int b = 0; b < 6 && !partial && names && keys; b++) {
            bigs[b] = sr__store_link_open(l, err, sizeof err);
            CHECK(bigs[b] && sr__store_set_io_timeout(bigs[b], 0.3) == 0);
            if (!bigs[b]) break;
            CHECK(sr__store_wait(bigs[b], keys, NKEYS, 0, missing, sizeof missing) == -1);
            partial = strstr(sr__store_error(bigs[b]), "while sending") != NULL;
        }
        fixture_unlock();
        CHECK(partial);
        CHECK(!readable(sr__store_fd(alive), 200)); /* the connection did not end */
        CHECK(waiting("alive/1"));
        sr__store *after = sr__store_link_open(l, err, sizeof err);
        CHECK(after && sr__store_set(after, "after", "2", 1) == 0);
        CHECK(after && sr__store_get(after, "after", &v, &len) == 0 && len == 1 && !memcmp(v, "2", 1));
        free(v), v = NULL;
        CHECK(sr__store_get(ctl, "a", &v, &len) == 0);
        free(v), v = NULL;
        CHECK(settles("alive/1", 1));
        if (after) sr__store_close(after);
        for (int b = 0; b < 6; b++)
            if (bigs[b]) sr__store_close(bigs[b]), bigs[b] = NULL;

        /* the same with waits for good, their channels closed while node 0 still reads nothing:
           each CLOSE reaches the server after the rest of the frames, and drops its wait there */
        partial = 0;
        fixture_lock();
        for (int b = 0; b < 6 && !partial && names && keys; b++) {
            bigs[b] = sr__store_link_open(l, err, sizeof err);
            CHECK(bigs[b] && sr__store_set_io_timeout(bigs[b], 0.3) == 0);
            if (!bigs[b]) break;
            CHECK(sr__store_wait(bigs[b], keys, NKEYS, -1, missing, sizeof missing) == -1);
            partial = strstr(sr__store_error(bigs[b]), "while sending") != NULL;
        }
        for (int b = 0; b < 6; b++)
            if (bigs[b]) sr__store_close(bigs[b]);
        fixture_unlock();
        CHECK(partial);
        after = sr__store_link_open(l, err, sizeof err); /* its request takes what waited along */
        CHECK(after && sr__store_set(after, "after", "3", 1) == 0);
        CHECK(names && settles(keys[0], 0));
        CHECK(settles("alive/1", 1));
        if (after) sr__store_close(after);
        free(names), free(keys);
    }

    /* closing the channel that holds the "alive" wait: the server no longer sees it */
    sr__store_close(alive);
    CHECK(settles("alive/1", 0));

    /* the server's end: every channel fails, and an asynchronous wait turns readable */
    sr__store *w2 = sr__store_link_open(l, err, sizeof err);
    CHECK(w2 && sr__store_wait_send(w2, "outcome/2") == 0);
    CHECK(settles("outcome/2", 1));
    fixture_server_stop();
    CHECK(w2 && readable(sr__store_fd(w2), 2000));
    CHECK(sr__store_get(ctl, "a", &v, &len) == -1 && strstr(sr__store_error(ctl), "store connection closed"));
    sr__store *late = sr__store_link_open(l, err, sizeof err);
    CHECK(late == NULL && strstr(err, "store connection closed"));

    sr__store_close(watch), sr__store_close(ctl), sr__store_close(wd), sr__store_close(w2);
    sr__store_link_release(l);
    return CHECK_DONE();
}
