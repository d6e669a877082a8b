/* The agent's relay of worker output: whole lines get the rank prefix; a line redrawn with '\r'
   (the trainer's progress bar) is shown as it changes on a terminal, and elsewhere only its final
   text is kept. */
#include <fcntl.h>
#include <unistd.h>

#include "agent/output.h"
#include "check.h"

/* Feeds the pieces to a relay writing into a pipe; returns what came out. */
static const char *relay(int tty, const char *const *pieces, int n) {
    static char out[4096];
    int p[2];
    if (pipe(p) != 0) return "";
    sr_tail tail = {0};
    sr_relay r = {.rank = 1, .out_fd = p[1], .tail = &tail, .tty = tty};
    for (int i = 0; i < n; i++) sr__relay_feed(&r, pieces[i], strlen(pieces[i]));
    sr__relay_flush(&r);
    close(p[1]);
    ssize_t k = read(p[0], out, sizeof out - 1);
    out[k > 0 ? k : 0] = 0;
    close(p[0]);
    sr__relay_free(&r);
    sr__tail_free(&tail);
    return out;
}

int main(void) {
    const char *plain[] = {"hel", "lo\nwor", "ld\n"};
    CHECK_STR(relay(0, plain, 3), "[rank1]: hello\n[rank1]: world\n");
    CHECK_STR(relay(1, plain, 3), "[rank1]: hello\n[rank1]: world\n");

    /* a progress bar redrawn twice, then a log line replacing it */
    const char *bar[] = {"\r[#..] 1/3", "\r[##.] 2/3", "\rstep 2 loss 1.5\n"};
    CHECK_STR(relay(0, bar, 3), "[rank1]: step 2 loss 1.5\n");
    CHECK_STR(relay(1, bar, 3),
              "\r\033[K[rank1]: [#..] 1/3\r\033[K[rank1]: [##.] 2/3\r\033[K[rank1]: step 2 loss 1.5\n");

    /* a bar left on screen at the end of the output becomes a line of its own */
    const char *left[] = {"\r[###] 3/3"};
    CHECK_STR(relay(0, left, 1), "[rank1]: [###] 3/3\n");
    return CHECK_DONE();
}
