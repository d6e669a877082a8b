/* One run per output_dir: the lock file (see output_lock.h). */
#define _GNU_SOURCE
#include "trainer/output_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/strbuf.h"

struct sr__output_lock {
    char *path; /* dir/.shardrun.lock */
    int fd;     /* the lock file as this process made it (a takeover replaces the name, not this) */
    pthread_t beat;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    sem_t entered; /* posted by the heartbeat thread once it runs its own code (see start) */
};

unsigned long long sr__pid_start_time(long pid, int *zombie) {
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%ld/stat", pid);
    FILE *f = fopen(p, "re");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *s = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    unsigned long long v = 0;
    if (zombie) *zombie = s && s[1] == ' ' && s[2] == 'Z';
    for (int field = 2; s && *s && field < 22; s++)
        if (*s == ' ') field++;
    return s && sscanf(s, "%llu", &v) == 1 ? v : 0;
}
static unsigned long long pid_start(long pid) { return sr__pid_start_time(pid, NULL); }

void sr__lock_owner_self(sr__lock_owner *me, const char *launch, const char *requeue_key) {
    const char *count = getenv("SLURM_RESTART_COUNT");
    memset(me, 0, sizeof *me);
    snprintf(me->launch, sizeof me->launch, "%s", launch ? launch : "");
    snprintf(me->requeue_key, sizeof me->requeue_key, "%s", requeue_key ? requeue_key : "");
    me->requeue_count = count && *count ? atoi(count) : -1;
    if (gethostname(me->host, sizeof me->host) != 0) snprintf(me->host, sizeof me->host, "?");
    me->host[sizeof me->host - 1] = 0;
    me->pid = (long)getpid();
    me->pid_start = pid_start(me->pid);
    me->since = (long long)time(NULL);
}

/* A value fit for one line of the file. */
static void one_line(char *s) {
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '=') *s = '_';
}

static char *owner_text(const sr__lock_owner *o) {
    sr__lock_owner c = *o;
    one_line(c.launch), one_line(c.requeue_key), one_line(c.host);
    return sr__fmt("shardrun output_dir lock\nlaunch=%s\nrequeue_key=%s\nrequeue_count=%d\nhost=%s\npid=%ld\n"
                   "pid_start=%llu\nsince=%lld\n",
                   c.launch, c.requeue_key, c.requeue_count, c.host, c.pid, c.pid_start, c.since);
}

/* Reads a lock file: 0 with *o (and *text, the file's bytes, when text is not NULL), -1 with errno
   (ENOENT: gone meanwhile; EINVAL: not a lock file shardrun writes). */
static int owner_read(const char *path, sr__lock_owner *o, char **text, struct stat *st) {
    char buf[2048];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int e = errno;
    if (n >= 0 && fstat(fd, st) != 0) n = -1, e = errno;
    close(fd);
    if (n < 0) return errno = e, -1;
    buf[n] = 0;
    memset(o, 0, sizeof *o);
    o->requeue_count = -1;
    int seen = 0;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *v = strchr(line, '=');
        if (!v) continue;
        *v++ = 0;
        if (!strcmp(line, "launch")) snprintf(o->launch, sizeof o->launch, "%s", v);
        else if (!strcmp(line, "requeue_key")) snprintf(o->requeue_key, sizeof o->requeue_key, "%s", v);
        else if (!strcmp(line, "requeue_count")) o->requeue_count = atoi(v);
        else if (!strcmp(line, "host")) snprintf(o->host, sizeof o->host, "%s", v), seen |= 1;
        else if (!strcmp(line, "pid")) o->pid = atol(v), seen |= 2;
        else if (!strcmp(line, "pid_start")) o->pid_start = strtoull(v, NULL, 10);
        else if (!strcmp(line, "since")) o->since = atoll(v);
    }
    if (seen != 3 || o->pid <= 0) return errno = EINVAL, -1;
    if (text && !(*text = owner_text(o))) return errno = ENOMEM, -1;
    return 0;
}

/* Whether pid on this host is gone: no such process, one that ended (a zombie), or another
   process now has its number. */
static int pid_gone(const sr__lock_owner *o) {
    if (kill((pid_t)o->pid, 0) != 0 && errno == ESRCH) return 1;
    int zombie = 0;
    unsigned long long now = sr__pid_start_time(o->pid, &zombie);
    return zombie || (o->pid_start && now && now != o->pid_start);
}

static double age_s(const struct timespec *newer, const struct timespec *older) {
    return (double)(newer->tv_sec - older->tv_sec) + (double)(newer->tv_nsec - older->tv_nsec) * 1e-9;
}

/* Why the lock o (file status st) is stale, proven; NULL when it may be alive.  now: the file
   system's clock (the status of the file just written beside it). */
static const char *stale_because(const sr__lock_owner *o, const struct stat *st, const struct stat *now,
                                 const sr__lock_owner *me, char *why, size_t len) {
    double age = age_s(&now->st_mtim, &st->st_mtim);
    if (!strcmp(o->host, me->host)) {
        if (!pid_gone(o)) return NULL;
        snprintf(why, len, "pid %ld on this host is gone", o->pid);
    } else if (o->requeue_key[0] && !strcmp(o->requeue_key, me->requeue_key) && me->requeue_count > o->requeue_count) {
        snprintf(why, len, "it is this Slurm job's earlier run (SLURM_RESTART_COUNT %d, now %d), which ended",
                 o->requeue_count < 0 ? 0 : o->requeue_count, me->requeue_count);
    } else if (age > SR__OUTPUT_LOCK_STALE_S) {
        snprintf(why, len, "its heartbeat stopped %.0f s ago, more than %d s", age, SR__OUTPUT_LOCK_STALE_S);
    } else {
        return NULL;
    }
    return why;
}

static void describe(const sr__lock_owner *o, char *out, size_t len) {
    char when[64] = "?";
    time_t t = (time_t)o->since;
    struct tm tm;
    if (o->since > 0 && localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm);
    snprintf(out, len, "shardrun pid %ld on host %s (launch %s, since %s)", o->pid, o->host,
             o->launch[0] ? o->launch : "?", when);
}

static void *beat(void *arg) {
    sr__output_lock *l = arg;
    sem_post(&l->entered);
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += SR__OUTPUT_LOCK_BEAT_S;
        while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &until) != ETIMEDOUT) {}
        if (!l->stop) futimens(l->fd, NULL); /* now, by the file system's clock */
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* Writes this process's candidate lock file.  0 or -1 with errno. */
static int write_candidate(const char *path, const char *text) {
    unlink(path); /* a leftover of an earlier process with this pid */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
    int e = errno;
    close(fd);
    if (!ok) unlink(path), errno = e ? e : EIO;
    return ok ? 0 : -1;
}

/* link(cand, lock): 0 when this process now holds the lock.  After an error, NFS's answer may be
   lost: the link count of cand tells the truth. */
static int try_link(const char *cand, const char *lock) {
    if (link(cand, lock) == 0) return 0;
    int e = errno;
    struct stat st;
    if (stat(cand, &st) == 0 && st.st_nlink == 2) return 0;
    errno = e;
    return -1;
}

static int start(const char *lockp, sr__output_lock **out, char *err, size_t errlen) {
    sr__output_lock *l = sr__calloc(1, sizeof *l);
    if (l) l->path = sr__strdup(lockp);
    if (!l || !l->path) {
        if (l) free(l);
        unlink(lockp);
        snprintf(err, errlen, "out of memory locking %s", lockp);
        return -1;
    }
    l->fd = open(lockp, O_RDONLY | O_CLOEXEC);
    int e = errno;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    sem_init(&l->entered, 0, 0);
    if (l->fd < 0 || (e = pthread_create(&l->beat, NULL, beat, l)) != 0) {
        snprintf(err, errlen, "cannot keep the lock %s: %s", lockp, strerror(e));
        if (l->fd >= 0) close(l->fd);
        unlink(lockp);
        pthread_mutex_destroy(&l->mu), pthread_cond_destroy(&l->cv), sem_destroy(&l->entered);
        free(l->path), free(l);
        return -1;
    }
    /* A new thread allocates before it runs beat() (the sanitizers' thread set-up does): a worker
       the agent forks meanwhile inherits the allocator locked and hangs in its first malloc.  So
       the agent forks nothing until the thread is in its own code, which never allocates. */
    while (sem_wait(&l->entered) != 0 && errno == EINTR) {}
    *out = l;
    return 0;
}

int sr__output_lock_take(const char *dir, const sr__lock_owner *me, sr__output_lock **out, char *note, size_t notelen,
                         char *err, size_t errlen) {
    char *lockp = sr__fmt("%s/%s", dir, SR__OUTPUT_LOCK_NAME);
    char *cand = sr__fmt("%s/%s.%s.%ld", dir, SR__OUTPUT_LOCK_NAME, me->host, me->pid);
    char *gone = sr__fmt("%s/%s.stale.%s.%ld", dir, SR__OUTPUT_LOCK_NAME, me->host, me->pid);
    char *mine = owner_text(me);
    int rc = -1;
    *out = NULL, note[0] = err[0] = 0;
    if (!lockp || !cand || !gone || !mine) {
        snprintf(err, errlen, "out of memory locking %s", dir);
        goto done;
    }
    if (write_candidate(cand, mine) != 0) {
        snprintf(err, errlen, "[task] output_dir = %s: cannot write its lock file %s: %s; nothing was started", dir,
                 cand, strerror(errno));
        goto done;
    }
    /* a few rounds: a lock that vanished or was taken over meanwhile is looked at again */
    for (int round = 0; round < 4; round++) {
        if (try_link(cand, lockp) == 0) {
            unlink(cand);
            rc = start(lockp, out, err, errlen);
            goto done;
        }
        if (errno != EEXIST) {
            snprintf(err, errlen, "[task] output_dir = %s: cannot create its lock file %s: %s; nothing was started",
                     dir, lockp, strerror(errno));
            break;
        }
        sr__lock_owner o;
        struct stat st, now;
        char *held = NULL, why[300], who[600];
        int r = owner_read(lockp, &o, &held, &st);
        if (r != 0 && errno == ENOENT) continue; /* released meanwhile */
        if (stat(cand, &now) != 0) now.st_mtim.tv_sec = 0;
        if (r != 0) { /* not ours to read: only its age can prove it stale */
            memset(&o, 0, sizeof o);
            snprintf(o.host, sizeof o.host, "(unreadable lock file: %s)", strerror(errno));
            if (stat(lockp, &st) != 0) continue;
        }
        const char *stale = NULL;
        if (r == 0) stale = stale_because(&o, &st, &now, me, why, sizeof why);
        else if (age_s(&now.st_mtim, &st.st_mtim) > SR__OUTPUT_LOCK_STALE_S)
            snprintf(why, sizeof why, "it is unreadable and older than %d s", SR__OUTPUT_LOCK_STALE_S), stale = why;
        describe(&o, who, sizeof who);
        if (!stale) {
            double beat_age = age_s(&now.st_mtim, &st.st_mtim);
            snprintf(err, errlen,
                     "[task] output_dir = %s is in use by another run: %s holds its lock %s (heartbeat %.0f s ago); "
                     "two runs in one folder would mix their checkpoints, so nothing was started.  Wait for that "
                     "run to end, or choose another output_dir.  A lock whose holder is gone is taken over by "
                     "itself (on this host at once; from another host once its heartbeat is %d s old); remove "
                     "the file only if you are sure that no run uses the folder",
                     dir, who, lockp, beat_age < 0 ? 0 : beat_age, SR__OUTPUT_LOCK_STALE_S);
            free(held);
            break;
        }
        /* rename, then check that what was renamed is the stale lock judged: another process may
           have taken it over in between, and its fresh lock goes back */
        sr__lock_owner moved;
        struct stat mst;
        char *moved_text = NULL;
        if (rename(lockp, gone) != 0) {
            free(held);
            if (errno == ENOENT) continue;
            snprintf(err, errlen, "[task] output_dir = %s: cannot take over the stale lock %s: %s; nothing was started",
                     dir, lockp, strerror(errno));
            break;
        }
        int same = r == 0 ? owner_read(gone, &moved, &moved_text, &mst) == 0 && !strcmp(moved_text, held)
                          : owner_read(gone, &moved, NULL, &mst) != 0;
        if (!same) {
            if (link(gone, lockp) != 0) {} /* back; a third process holding it by now keeps it */
        } else {
            snprintf(note, notelen, "[task] output_dir = %s: took over the lock %s left by %s: %s", dir, lockp, who,
                     why);
        }
        unlink(gone);
        free(held), free(moved_text);
    }
    if (!err[0])
        snprintf(err, errlen, "[task] output_dir = %s: its lock %s changed hands too often; try again", dir, lockp);
    unlink(cand);
done:
    free(lockp), free(cand), free(gone), free(mine);
    return rc;
}

int sr__output_lock_release(sr__output_lock *l, char *err, size_t errlen) {
    if (!l) return 0;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->beat, NULL);
    struct stat held, named;
    int rc = 0;
    if (fstat(l->fd, &held) == 0 && stat(l->path, &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
        unlink(l->path);
    } else {
        sr__lock_owner o;
        char who[600] = "another run";
        if (owner_read(l->path, &o, NULL, &named) == 0) describe(&o, who, sizeof who);
        snprintf(err, errlen,
                 "the lock %s was taken over while this run held it (now held by %s): its heartbeat was not "
                 "refreshed for %d s (this run stopped or cut off from the file system); the folder's "
                 "checkpoints may mix two runs",
                 l->path, who, SR__OUTPUT_LOCK_STALE_S);
        rc = -1;
    }
    close(l->fd);
    pthread_mutex_destroy(&l->mu), pthread_cond_destroy(&l->cv);
    free(l->path), free(l);
    return rc;
}
