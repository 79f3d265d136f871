/*
 * What many blocking threads get from one shared connection, against the
 * same threads each with its own: the physics under the target for
 * 16 blocking threads at N = 1 (at least 1.3x the pairs/s of raw hiredis
 * with 16 threads, each with its own connection). rlock's client sends
 * every thread's command over one connection per master, written and read
 * by its loop thread, so its blocking calls can only beat the floor by as
 * much as multiplexing itself does. This program measures that with raw
 * hiredis and pthreads and no rlock code, so that the ratio it finds is
 * the ceiling of what any such client can reach on this machine.
 *
 * Each pair is rlock's acquire script then its unlock script (EVALSHA, the
 * commands of raw.h), on distinct locks per thread. Shapes:
 *
 *   conns   T threads, each with its own synchronous hiredis connection:
 *           bench_floor threads, the floor the target is judged against.
 *   mux     T caller threads share one connection through an I/O thread:
 *           a caller queues its formatted command under a mutex, wakes the
 *           I/O thread through an eventfd when the queue was empty, and
 *           sleeps on its own condition variable; the I/O thread writes
 *           all that is queued in one write (pipelining), reads replies
 *           with a hiredis reader and wakes each caller in order. rlock's
 *           shape (lib/core/client.c, lib/api/api.c) with nothing of rlock in it.
 *   leader  one connection, no I/O thread: leader/follower. A caller that
 *           finds no leader becomes it, writes every queued command, reads
 *           replies and hands them out until its own is in, then wakes a
 *           waiting caller to lead next.
 *   direct  one connection: each caller writes its own command (under the
 *           mutex, so that the order of writes is the order of replies);
 *           the one that reads hands replies out as the leader does.
 *
 * The shapes run one after another within each round, their order turned
 * by one each round, so that the machine's drift reaches them all alike.
 * Besides pairs/s each window records the process's CPU time and context
 * switches per pair (getrusage) and, when the server runs on this machine,
 * the server's CPU time per pair (its /proc/<pid>/task/<tid>/schedstat):
 * one connection lowers what the server spends per pair, and the price is
 * that every call sleeps and is woken.
 *
 *   floor_mux SECONDS ROUNDS T1,T2,... HOST:PORT
 *
 * Prints one JSON line per shape per round, then a summary line per
 * thread count with the medians and the ratios to "conns".
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "raw.h"
#include "stats.h"

enum { CONNS, MUX, LEADER, DIRECT, NSHAPES };
static const char *shape_names[NSHAPES] = {"conns", "mux", "leader",
                                           "direct"};

#define LOCKS_PER_THREAD 64
#define MAX_THREADS 1024
#define MAX_TCOUNTS 16
#define TARGET 1.3

/* --- the shared connection ------------------------------------------------ */

/* A caller's own place to sleep, like rlock's per-thread waiter. */
typedef struct waiter {
  pthread_mutex_t mu;
  pthread_cond_t cv;
} waiter;

/* One command on the shared connection; it lives on its caller's stack. */
typedef struct req {
  struct req *next;
  const char *cmd;
  int len;
  redisReply *reply; /* NULL once done: the connection broke */
  int done;
  waiter *w;
} req;

typedef struct fifo {
  req *head, *tail;
} fifo;

static void fifo_push(fifo *q, req *r) {
  r->next = NULL;
  if (q->tail)
    q->tail->next = r;
  else
    q->head = r;
  q->tail = r;
}

static req *fifo_pop(fifo *q) {
  req *r = q->head;
  if (r) {
    q->head = r->next;
    if (q->head == NULL) q->tail = NULL;
  }
  return r;
}

typedef struct shared_conn {
  raw_conns rc; /* one connection, the scripts loaded */
  int fd;
  redisReader *reader; /* used only by the thread that reads */
  /* mux: guards the queue; leader and direct: everything below, and the
   * callers sleep on it. */
  pthread_mutex_t mu;
  fifo queue;    /* posted, not yet written */
  fifo inflight; /* written, reply not yet read */
  int ninflight;
  int callers; /* the size of got */
  int leading; /* leader, direct: a caller is reading */
  int broken;
  int efd; /* mux: wakes the I/O thread */
  atomic_int quit;
  char *wbuf; /* the writer's batch */
  size_t wcap;
  redisReply **got; /* the replies of one read */
  atomic_long writes, cmds;
} shared_conn;

static shared_conn *shared_open(char *master, int nthreads) {
  shared_conn *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  if (raw_open(&s->rc, &master, 1) != 0) {
    free(s);
    return NULL;
  }
  s->fd = s->rc.c[0]->fd;
  s->reader = s->rc.c[0]->reader;
  pthread_mutex_init(&s->mu, NULL);
  s->efd = eventfd(0, EFD_CLOEXEC);
  s->callers = nthreads;
  s->got = calloc((size_t)nthreads, sizeof *s->got);
  return s;
}

static void shared_close(shared_conn *s) {
  raw_close(&s->rc);
  close(s->efd);
  pthread_mutex_destroy(&s->mu);
  free(s->wbuf);
  free(s->got);
  free(s);
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* Writes the commands of the list from first on in one write. Only the
 * thread that writes calls it. */
static int write_batch(shared_conn *s, req *first) {
  size_t n = 0;
  long cmds = 0;
  for (req *r = first; r; r = r->next) {
    if (n + (size_t)r->len > s->wcap) {
      size_t cap = s->wcap ? s->wcap : 4096;
      while (n + (size_t)r->len > cap) cap *= 2;
      char *p = realloc(s->wbuf, cap);
      if (p == NULL) return -1;
      s->wbuf = p;
      s->wcap = cap;
    }
    memcpy(s->wbuf + n, r->cmd, (size_t)r->len);
    n += (size_t)r->len;
    cmds++;
  }
  if (n == 0) return 0;
  atomic_fetch_add_explicit(&s->writes, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->cmds, cmds, memory_order_relaxed);
  return write_all(s->fd, s->wbuf, n);
}

/* One read of what the socket has, parsed into s->got; returns how many
 * complete replies it held, or -1 when the connection broke. Each caller
 * has one command at most in flight, so there are at most max (the
 * callers). Only the thread that reads calls it. */
static int read_replies(shared_conn *s, int max) {
  char buf[16384];
  ssize_t k;
  do {
    k = read(s->fd, buf, sizeof buf);
  } while (k < 0 && errno == EINTR);
  if (k <= 0 || redisReaderFeed(s->reader, buf, (size_t)k) != REDIS_OK)
    return -1;
  int n = 0;
  for (;;) {
    void *r = NULL;
    if (redisReaderGetReply(s->reader, &r) != REDIS_OK) return -1;
    if (r == NULL) return n;
    if (n == max) { /* a reply nobody asked for */
      freeReplyObject(r);
      return -1;
    }
    s->got[n++] = r;
  }
}

/* --- mux: an I/O thread writes and reads for every caller ----------------- */

static void mux_finish(req *r, redisReply *reply) {
  waiter *w = r->w;
  pthread_mutex_lock(&w->mu);
  r->reply = reply;
  r->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static redisReply *mux_call(shared_conn *s, waiter *w, const char *cmd,
                            int len) {
  req r = {.cmd = cmd, .len = len, .w = w};
  pthread_mutex_lock(&s->mu);
  if (s->broken) {
    pthread_mutex_unlock(&s->mu);
    return NULL;
  }
  int was_empty = s->queue.head == NULL;
  fifo_push(&s->queue, &r);
  pthread_mutex_unlock(&s->mu);
  /* Whoever makes the queue non-empty wakes the I/O thread, which takes
   * the whole queue at once: one eventfd write per batch, as libuv's
   * uv_async_send coalesces. */
  if (was_empty) {
    uint64_t one = 1;
    if (write(s->efd, &one, sizeof one) < 0) abort();
  }
  pthread_mutex_lock(&w->mu);
  while (!r.done) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
  return r.reply;
}

/* Fails everything queued and in flight; the I/O thread's own lists. */
static void mux_break(shared_conn *s) {
  pthread_mutex_lock(&s->mu);
  s->broken = 1;
  fifo q = s->queue;
  s->queue.head = s->queue.tail = NULL;
  pthread_mutex_unlock(&s->mu);
  req *r;
  while ((r = fifo_pop(&s->inflight)) != NULL) mux_finish(r, NULL);
  while ((r = fifo_pop(&q)) != NULL) mux_finish(r, NULL);
  s->ninflight = 0;
}

static void *mux_io(void *arg) {
  shared_conn *s = arg;
  struct pollfd pf[2] = {{.fd = s->efd, .events = POLLIN},
                         {.fd = s->fd, .events = POLLIN}};
  for (;;) {
    if (s->ninflight == 0 && atomic_load(&s->quit)) break;
    if (poll(pf, s->broken ? 1 : 2, -1) < 0) {
      if (errno == EINTR) continue;
      abort();
    }
    if (pf[0].revents & POLLIN) {
      uint64_t v;
      if (read(s->efd, &v, sizeof v) < 0) abort();
      pthread_mutex_lock(&s->mu);
      req *batch = s->queue.head;
      s->queue.head = s->queue.tail = NULL;
      pthread_mutex_unlock(&s->mu);
      req *first = NULL;
      while (batch) {
        req *next = batch->next;
        fifo_push(&s->inflight, batch);
        s->ninflight++;
        if (first == NULL) first = batch;
        batch = next;
      }
      if (first && (s->broken || write_batch(s, first) != 0)) mux_break(s);
    }
    if (!s->broken && (pf[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      int n = read_replies(s, s->ninflight);
      if (n < 0) { /* broken, or a reply that nobody asked for */
        mux_break(s);
        continue;
      }
      for (int i = 0; i < n; i++) {
        s->ninflight--;
        mux_finish(fifo_pop(&s->inflight), s->got[i]);
      }
    }
  }
  return NULL;
}

/* --- leader and direct: the callers take turns at reading ----------------- */

/* Under s->mu. */
static void lead_finish(req *r, redisReply *reply, const req *me) {
  r->reply = reply;
  r->done = 1;
  if (r != me) pthread_cond_signal(&r->w->cv);
}

/* Under s->mu. */
static void lead_break(shared_conn *s, const req *me) {
  s->broken = 1;
  req *r;
  while ((r = fifo_pop(&s->inflight)) != NULL) lead_finish(r, NULL, me);
  while ((r = fifo_pop(&s->queue)) != NULL) lead_finish(r, NULL, me);
  s->ninflight = 0;
}

/* Called and returns with s->mu held: reads (leader: and writes) until
 * me's reply is in, then wakes a caller still waiting to lead next. */
static void lead(shared_conn *s, req *me) {
  s->leading = 1;
  while (!me->done) {
    /* Only the leader touches the lists' links outside the mutex: the
     * batch moved to inflight here is written after unlocking. */
    req *first = s->queue.head;
    req *batch = first;
    s->queue.head = s->queue.tail = NULL;
    while (batch) {
      req *next = batch->next;
      fifo_push(&s->inflight, batch);
      s->ninflight++;
      batch = next;
    }
    pthread_mutex_unlock(&s->mu);
    /* With direct, callers write and add to inflight meanwhile: the read
     * may hold their replies too, and they are in inflight by the time
     * the mutex is taken again. */
    int n = first && write_batch(s, first) != 0 ? -1
                                                : read_replies(s, s->callers);
    pthread_mutex_lock(&s->mu);
    if (n > s->ninflight || s->broken) {
      for (int i = 0; i < n; i++) freeReplyObject(s->got[i]);
      n = -1;
    }
    if (n < 0) {
      lead_break(s, me);
      break;
    }
    for (int i = 0; i < n; i++) {
      s->ninflight--;
      lead_finish(fifo_pop(&s->inflight), s->got[i], me);
    }
  }
  s->leading = 0;
  req *next = s->inflight.head ? s->inflight.head : s->queue.head;
  if (next) pthread_cond_signal(&next->w->cv);
}

static redisReply *lead_call(shared_conn *s, waiter *w, const char *cmd,
                             int len, int direct) {
  req r = {.cmd = cmd, .len = len, .w = w};
  pthread_mutex_lock(&s->mu);
  if (s->broken) {
    pthread_mutex_unlock(&s->mu);
    return NULL;
  }
  if (direct) {
    /* Written under the mutex, so that writes and inflight agree. */
    atomic_fetch_add_explicit(&s->writes, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->cmds, 1, memory_order_relaxed);
    if (write_all(s->fd, cmd, (size_t)len) != 0) {
      lead_break(s, NULL);
      pthread_mutex_unlock(&s->mu);
      return NULL;
    }
    fifo_push(&s->inflight, &r);
    s->ninflight++;
  } else {
    fifo_push(&s->queue, &r);
  }
  while (!r.done) {
    if (!s->leading)
      lead(s, &r);
    else
      pthread_cond_wait(&w->cv, &s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  return r.reply;
}

/* --- one window ----------------------------------------------------------- */

typedef struct worker {
  pthread_t th;
  unsigned id;
  waiter w;
  /* Written by the worker alone, read by main at the window's edges. */
  _Alignas(64) atomic_long pairs;
  atomic_long errors;
} worker;

static char *m_master;
static int m_shape;
static shared_conn *m_shared;
static atomic_int m_ready, m_failed, m_go, m_stop;
static char m_tag[64];

static redisReply *shared_call(worker *wk, const char *cmd, int len) {
  if (m_shape == MUX) return mux_call(m_shared, &wk->w, cmd, len);
  return lead_call(m_shared, &wk->w, cmd, len, m_shape == DIRECT);
}

/* One pair on the shared connection; 1 if granted and released. */
static int shared_pair(worker *wk, const raw_lock *l, const char *owner) {
  char *cmd;
  int len = raw_format_acquire(&m_shared->rc, l, owner, &cmd);
  if (len < 0) return 0;
  redisReply *r = shared_call(wk, cmd, len);
  redisFreeCommand(cmd);
  int good = r != NULL && raw_granted(r);
  if (r) freeReplyObject(r);
  if (!good) return 0;
  len = raw_format_unlock(&m_shared->rc, l, owner, &cmd);
  if (len < 0) return 0;
  r = shared_call(wk, cmd, len);
  redisFreeCommand(cmd);
  good = r != NULL && raw_released(r);
  if (r) freeReplyObject(r);
  return good;
}

static void *worker_main(void *arg) {
  worker *wk = arg;
  raw_conns own;
  int ok = m_shape != CONNS || raw_open(&own, &m_master, 1) == 0;
  char owner[64];
  raw_owner(owner, sizeof owner, (unsigned)getpid(), wk->id);
  raw_lock locks[LOCKS_PER_THREAD];
  for (int k = 0; k < LOCKS_PER_THREAD; k++) {
    char name[96];
    snprintf(name, sizeof name, "floor-mux-%s-%u-%d", m_tag, wk->id, k);
    raw_lock_init(&locks[k], name);
  }
  if (!ok) atomic_store(&m_failed, 1);
  atomic_fetch_add(&m_ready, 1);
  if (!ok) return NULL;
  while (!atomic_load(&m_go)) usleep(100);
  long pairs = 0, errors = 0;
  for (long k = 0; !atomic_load_explicit(&m_stop, memory_order_relaxed);
       k++) {
    const raw_lock *l = &locks[k % LOCKS_PER_THREAD];
    int good = m_shape == CONNS
                   ? raw_acquire(&own, l, owner, NULL) == 1 &&
                         raw_unlock(&own, l, owner, NULL) == 1
                   : shared_pair(wk, l, owner);
    if (good)
      atomic_store_explicit(&wk->pairs, ++pairs, memory_order_relaxed);
    else
      atomic_store_explicit(&wk->errors, ++errors, memory_order_relaxed);
  }
  if (m_shape == CONNS) raw_close(&own);
  return NULL;
}

/* The server's CPU time in ns, summed over its threads; 0 if unknown. */
static uint64_t server_cpu_ns(long pid) {
  if (pid <= 0) return 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", pid);
  DIR *d = opendir(path);
  if (d == NULL) return 0;
  uint64_t sum = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char p[300];
    snprintf(p, sizeof p, "/proc/%ld/task/%s/schedstat", pid, e->d_name);
    FILE *f = fopen(p, "r");
    unsigned long long ns = 0;
    if (f == NULL) continue;
    if (fscanf(f, "%llu", &ns) != 1) ns = 0;
    fclose(f);
    sum += ns;
  }
  closedir(d);
  return sum;
}

typedef struct sample {
  double pairs_per_s, cpu_us, csw, server_us, cmds_per_write;
  long errors;
} sample;

typedef struct snap {
  long pairs, errors, writes, cmds;
  uint64_t t, server;
  struct rusage ru;
} snap;

static void take_snap(snap *sn, worker *wk, int n, long pid) {
  sn->pairs = sn->errors = 0;
  for (int i = 0; i < n; i++) {
    sn->pairs += atomic_load_explicit(&wk[i].pairs, memory_order_relaxed);
    sn->errors += atomic_load_explicit(&wk[i].errors, memory_order_relaxed);
  }
  sn->writes = m_shared ? atomic_load(&m_shared->writes) : 0;
  sn->cmds = m_shared ? atomic_load(&m_shared->cmds) : 0;
  getrusage(RUSAGE_SELF, &sn->ru);
  sn->server = server_cpu_ns(pid);
  sn->t = bench_now_ns();
}

static double tv_us(struct timeval tv) {
  return (double)tv.tv_sec * 1e6 + (double)tv.tv_usec;
}

/* One window of shape with nthreads callers; 0 and *out, or -1. */
static int measure(int shape, int nthreads, int round, double seconds,
                   long pid, sample *out) {
  m_shape = shape;
  m_shared = NULL;
  atomic_store(&m_ready, 0);
  atomic_store(&m_failed, 0);
  atomic_store(&m_go, 0);
  atomic_store(&m_stop, 0);
  snprintf(m_tag, sizeof m_tag, "%d-%s-%d", (int)getpid(), shape_names[shape],
           nthreads);
  pthread_t io;
  if (shape != CONNS) {
    m_shared = shared_open(m_master, nthreads);
    if (m_shared == NULL) return -1;
    if (shape == MUX) pthread_create(&io, NULL, mux_io, m_shared);
  }
  worker *wk = aligned_alloc(64, sizeof *wk * (size_t)nthreads);
  memset(wk, 0, sizeof *wk * (size_t)nthreads);
  for (int i = 0; i < nthreads; i++) {
    wk[i].id = (unsigned)i;
    pthread_mutex_init(&wk[i].w.mu, NULL);
    pthread_cond_init(&wk[i].w.cv, NULL);
    pthread_create(&wk[i].th, NULL, worker_main, &wk[i]);
  }
  while (atomic_load(&m_ready) < nthreads) usleep(1000);
  atomic_store(&m_go, 1);
  /* A warm-up outside the window: connections, caches, the scheduler. */
  double warm = seconds / 4 < 0.2 ? seconds / 4 : 0.2;
  bench_sleep_ns((uint64_t)(warm * 1e9));
  snap a, b;
  take_snap(&a, wk, nthreads, pid);
  bench_sleep_ns((uint64_t)(seconds * 1e9));
  take_snap(&b, wk, nthreads, pid);
  atomic_store(&m_stop, 1);
  for (int i = 0; i < nthreads; i++) pthread_join(wk[i].th, NULL);
  if (shape == MUX) {
    uint64_t one = 1;
    atomic_store(&m_shared->quit, 1);
    if (write(m_shared->efd, &one, sizeof one) < 0) abort();
    pthread_join(io, NULL);
  }
  for (int i = 0; i < nthreads; i++) {
    pthread_mutex_destroy(&wk[i].w.mu);
    pthread_cond_destroy(&wk[i].w.cv);
  }
  free(wk);
  if (m_shared) shared_close(m_shared);
  m_shared = NULL;
  if (atomic_load(&m_failed)) return -1;

  double t = (double)(b.t - a.t) / 1e9;
  long pairs = b.pairs - a.pairs;
  double per = pairs > 0 ? (double)pairs : 1;
  out->pairs_per_s = (double)pairs / t;
  out->errors = b.errors - a.errors;
  out->cpu_us = (tv_us(b.ru.ru_utime) - tv_us(a.ru.ru_utime) +
                 tv_us(b.ru.ru_stime) - tv_us(a.ru.ru_stime)) /
                per;
  out->csw = (double)(b.ru.ru_nvcsw - a.ru.ru_nvcsw + b.ru.ru_nivcsw -
                      a.ru.ru_nivcsw) /
             per;
  out->server_us = pid > 0 ? (double)(b.server - a.server) / 1e3 / per : -1;
  out->cmds_per_write = shape == CONNS || b.writes == a.writes
                            ? 1
                            : (double)(b.cmds - a.cmds) /
                                  (double)(b.writes - a.writes);
  printf("{\"bench\":\"floor_mux\",\"impl\":\"floor\",\"shape\":\"%s\","
         "\"masters\":1,\"threads\":%d,\"round\":%d,\"seconds\":%.2f,"
         "\"pairs_per_s\":%.0f,\"errors\":%ld,\"cpu_us_per_pair\":%.2f,"
         "\"csw_per_pair\":%.2f,",
         shape_names[shape], nthreads, round, t, out->pairs_per_s,
         out->errors, out->cpu_us, out->csw);
  if (pid > 0)
    printf("\"server_cpu_us_per_pair\":%.2f,", out->server_us);
  else
    printf("\"server_cpu_us_per_pair\":null,");
  printf("\"cmds_per_write\":%.2f}\n", out->cmds_per_write);
  fflush(stdout);
  return 0;
}

/* --- main ----------------------------------------------------------------- */

static double median(const double *v, int n) {
  if (n <= 0) return 0;
  double *c = malloc(sizeof *c * (size_t)n);
  memcpy(c, v, sizeof *c * (size_t)n);
  qsort(c, (size_t)n, sizeof *c, bench_cmp_double);
  double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  free(c);
  return m;
}

/* The server's pid from INFO, if it runs on this machine (its /proc entry
 * is a redis-server or valkey-server); else 0, and no server CPU is
 * reported. */
static long server_pid(char *master) {
  raw_conns rc;
  if (raw_open(&rc, &master, 1) != 0) return -1;
  long pid = 0;
  redisReply *r = redisCommand(rc.c[0], "INFO server");
  if (r && r->type == REDIS_REPLY_STRING) {
    const char *p = strstr(r->str, "process_id:");
    if (p) pid = atol(p + strlen("process_id:"));
  }
  if (r) freeReplyObject(r);
  raw_close(&rc);
  char path[64], comm[64] = "";
  snprintf(path, sizeof path, "/proc/%ld/comm", pid);
  FILE *f = pid > 0 ? fopen(path, "r") : NULL;
  if (f) {
    if (fgets(comm, sizeof comm, f) == NULL) comm[0] = '\0';
    fclose(f);
  }
  return strncmp(comm, "redis-server", 12) == 0 ||
                 strncmp(comm, "valkey-server", 13) == 0
             ? pid
             : 0;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: floor_mux SECONDS ROUNDS T1,T2,... HOST:PORT\n");
    return 2;
  }
  double seconds = atof(argv[1]);
  int rounds = atoi(argv[2]);
  int tc[MAX_TCOUNTS], ntc = 0;
  for (char *p = strtok(argv[3], ","); p && ntc < MAX_TCOUNTS;
       p = strtok(NULL, ","))
    tc[ntc++] = atoi(p);
  m_master = argv[4];
  for (int i = 0; i < ntc; i++)
    if (tc[i] < 1 || tc[i] > MAX_THREADS) {
      fprintf(stderr, "floor_mux: bad thread count %d\n", tc[i]);
      return 2;
    }
  if (seconds <= 0 || rounds < 1 || ntc == 0) {
    fprintf(stderr, "floor_mux: bad arguments\n");
    return 2;
  }
  long pid = server_pid(m_master);
  if (pid < 0) return 1;

  sample *s = calloc((size_t)(rounds * ntc * NSHAPES), sizeof *s);
#define AT(r, t, sh) s[((r)*ntc + (t)) * NSHAPES + (sh)]
  for (int r = 0; r < rounds; r++)
    for (int t = 0; t < ntc; t++)
      for (int k = 0; k < NSHAPES; k++) {
        int sh = (r + k) % NSHAPES;
        if (measure(sh, tc[t], r + 1, seconds, pid, &AT(r, t, sh)) != 0) {
          fprintf(stderr, "floor_mux: %s with %d threads failed\n",
                  shape_names[sh], tc[t]);
          return 1;
        }
      }

  /* Per thread count: medians per shape, the ratio of each shape's median
   * to conns', the median and range of the rounds' own ratios (each shape
   * against conns of the same round), and how many rounds reached the
   * target; then the medians of the costs per pair. */
  double *v = malloc(sizeof *v * (size_t)rounds);
  for (int t = 0; t < ntc; t++) {
    printf("{\"bench\":\"floor_mux\",\"impl\":\"floor\",\"shape\":\"summary\","
           "\"masters\":1,\"threads\":%d,\"rounds\":%d,\"seconds\":%.2f,"
           "\"target\":%.1f",
           tc[t], rounds, seconds, TARGET);
    double conns = 0;
    for (int sh = 0; sh < NSHAPES; sh++) {
      const char *nm = shape_names[sh];
      for (int r = 0; r < rounds; r++) v[r] = AT(r, t, sh).pairs_per_s;
      double m = median(v, rounds);
      printf(",\"%s_pairs_per_s\":%.0f", nm, m);
      if (sh == CONNS) {
        conns = m;
        continue;
      }
      int hit = 0;
      double lo = 0, hi = 0;
      for (int r = 0; r < rounds; r++) {
        double c = AT(r, t, CONNS).pairs_per_s;
        v[r] = c > 0 ? AT(r, t, sh).pairs_per_s / c : 0;
        hit += v[r] >= TARGET;
        if (r == 0 || v[r] < lo) lo = v[r];
        if (r == 0 || v[r] > hi) hi = v[r];
      }
      printf(",\"%s_ratio\":%.3f,\"%s_ratio_median\":%.3f,"
             "\"%s_ratio_min\":%.3f,\"%s_ratio_max\":%.3f,"
             "\"%s_rounds_at_target\":%d",
             nm, conns > 0 ? m / conns : 0, nm, median(v, rounds), nm, lo, nm,
             hi, nm, hit);
    }
    for (int sh = 0; sh < NSHAPES; sh++) {
      const char *nm = shape_names[sh];
      long errors = 0;
      for (int r = 0; r < rounds; r++) errors += AT(r, t, sh).errors;
      for (int r = 0; r < rounds; r++) v[r] = AT(r, t, sh).cpu_us;
      printf(",\"%s_cpu_us_per_pair\":%.2f", nm, median(v, rounds));
      for (int r = 0; r < rounds; r++) v[r] = AT(r, t, sh).csw;
      printf(",\"%s_csw_per_pair\":%.2f", nm, median(v, rounds));
      for (int r = 0; r < rounds; r++) v[r] = AT(r, t, sh).server_us;
      if (pid > 0)
        printf(",\"%s_server_cpu_us_per_pair\":%.2f", nm, median(v, rounds));
      for (int r = 0; r < rounds; r++) v[r] = AT(r, t, sh).cmds_per_write;
      printf(",\"%s_cmds_per_write\":%.2f,\"%s_errors\":%ld", nm,
             median(v, rounds), nm, errors);
    }
    printf("}\n");
  }
  free(v);
  free(s);
  return 0;
}
