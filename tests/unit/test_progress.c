/* Worker -> agent progress records (base/progress.h): the agent strips whole records from the front
   of what it read, however the pipe cut them, and keeps what follows (the result object); a record
   cut short waits for the rest; a kind it does not know is skipped; a checkpoint record without a
   step is ignored.  And the writer: one record per write, into a real pipe. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/progress.h"
#include "base/strbuf.h"
#include "check.h"

/* Feeds `stream` to the parser in pieces of `piece` bytes, as the agent's reads would; returns what
   remains (the result text), and fills *p. */
static char *feed(const char *stream, size_t piece, sr__progress *p) {
    sr__buf b = {0};
    sr__progress_init(p);
    for (size_t at = 0, n = strlen(stream); at < n; at += piece) {
        sr__buf_add(&b, stream + at, at + piece < n ? piece : n - at);
        sr__progress_take(p, b.s, &b.n);
    }
    sr__buf_add(&b, "", 1); /* NUL */
    return b.s;
}

int main(void) {
    const char *stream = "\x1eStraining\n\x1eP1\n\x1eP2\n\x1e"
                         "C2 /out/checkpoint-2\n\x1eZfuture kind\n\x1eP3\n"
                         "{\"rank\": 0, \"exit_code\": 0}";
    for (size_t piece = 1; piece <= strlen(stream); piece++) {
        sr__progress p;
        char *rest = feed(stream, piece, &p);
        CHECK_STR(rest, "{\"rank\": 0, \"exit_code\": 0}");
        CHECK(p.started == 1);
        CHECK(p.step == 3);
        CHECK(p.ckpt_step == 2);
        CHECK_STR(p.ckpt_path, "/out/checkpoint-2");
        CHECK(p.preempted == 0);
        free(rest);
    }

    /* nothing reported: a worker that died before its work began */
    sr__progress p;
    char *rest = feed("", 1, &p);
    CHECK(p.started == 0 && p.step == -1 && p.ckpt_step == -1);
    free(rest);

    /* a record cut short stays until the rest arrives; a bad checkpoint record changes nothing */
    sr__progress_init(&p);
    char buf[64] = "\x1eP4\n\x1eP5";
    size_t n = strlen(buf);
    sr__progress_take(&p, buf, &n);
    CHECK(p.step == 4 && n == 3 && !memcmp(buf, "\x1eP5", 3));
    rest = feed("\x1e"
                "Cno-step\n\x1e"
                "E9 /o/checkpoint-9\n",
                5, &p);
    CHECK(p.preempted == 1 && p.ckpt_step == 9);
    CHECK_STR(p.ckpt_path, "/o/checkpoint-9");
    CHECK_STR(rest, "");
    free(rest);

    /* the writer: records arrive whole through a pipe, in order */
    int fds[2];
    CHECK(pipe(fds) == 0);
    sr__progress_set_fd(fds[1]);
    sr__progress_send(SR__PROGRESS_STARTED, "training");
    sr__progress_send(SR__PROGRESS_STEP, "12");
    sr__progress_send(SR__PROGRESS_PREEMPTED, "12 /tmp/out/checkpoint-12");
    sr__progress_set_fd(-1);
    sr__progress_send(SR__PROGRESS_STEP, "13"); /* nowhere: dropped */
    close(fds[1]);
    char got[256];
    ssize_t k = read(fds[0], got, sizeof got - 1);
    close(fds[0]);
    got[k > 0 ? k : 0] = 0;
    CHECK_STR(got, "\x1eStraining\n\x1eP12\n\x1e"
                   "E12 /tmp/out/checkpoint-12\n");
    return CHECK_DONE();
}
