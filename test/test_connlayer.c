/*
 * The connection layer (lib/conn/conn.c, lib/conn/stream.c) driven directly on a
 * caller's loop, against real redis-server processes: no death by
 * SIGPIPE when the master is gone, a write larger than the kernel's
 * buffer drains once a stalled master resumes, close-on-exec descriptors,
 * the owner's extra handshake commands, the clock offset from TIME, and
 * the master-clock deadline a clocked command gets as it is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>
#include <uv.h>

#include "common.h"
#include "conn.h"
#include "resp.h"

static rt_redis srv[1];

/* --- a connection on a loop of the test's own ---------------------------- */

typedef struct harness_conn {
  uv_loop_t loop;
  uv_timer_t tick; /* so that one loop iteration never blocks long */
  rl_conn conn;
  rl_conn_config cfg;
  int closed;
} harness_conn;

static void on_tick(uv_timer_t *t) { (void)t; }

static void hc_loop_init(harness_conn *h) {
  memset(h, 0, sizeof *h);
  uv_loop_init(&h->loop);
  uv_timer_init(&h->loop, &h->tick);
  uv_timer_start(&h->tick, on_tick, 10, 10);
}

static void on_conn_closed(rl_conn *conn) {
  harness_conn *h = conn->data;
  h->closed = 1;
}

/* Runs the loop until cond holds or ms pass; 1 if it holds. */
#define RUN_UNTIL(h, cond, ms)                                              \
  ({                                                                       \
    uint64_t end_ = rt_now_ms() + (ms);                                    \
    while (!(cond) && rt_now_ms() < end_) uv_run(&(h)->loop, UV_RUN_ONCE); \
    (cond);                                                                \
  })

static int hc_start(harness_conn *h, const char *url_text, int mode) {
  hc_loop_init(h);
  rl_url url;
  if (rl_url_parse(url_text, &url) != 0) return -1;
  h->cfg.command_timeout_ms = 2000;
  h->cfg.connect_timeout_ms = 5000;
  h->cfg.mode = mode;
  h->cfg.client_name = "rlock-test";
  h->conn.data = h;
  h->conn.on_closed = on_conn_closed;
  return rl_conn_start(&h->conn, &h->loop, &url, &h->cfg);
}

static void hc_close(harness_conn *h) {
  rl_conn_close(&h->conn);
  RUN_UNTIL(h, h->closed, 10000);
  uv_close((uv_handle_t *)&h->tick, NULL);
  uv_run(&h->loop, UV_RUN_DEFAULT);
  RT_CHECK(h->closed);
  RT_CHECK(uv_loop_close(&h->loop) == 0);
}

/* A command and what became of it. */
typedef struct sent {
  char bytes[512];
  uv_buf_t buf;
  int status; /* -1 until final */
  int timeouts;
  char reply[64];
  long long integer;
  int type;
} sent;

static void on_sent(rl_cmd *cmd, redisReply *r, int status) {
  sent *s = cmd->data;
  if (status == RL_CMD_TIMEOUT) {
    s->timeouts++;
    return;
  }
  s->status = status;
  if (r != NULL) {
    s->type = r->type;
    s->integer = r->integer;
    if (r->str) snprintf(s->reply, sizeof s->reply, "%s", r->str);
  }
}

static int send_argv(rl_conn *conn, sent *s, int argc, const char **argv) {
  size_t len[8];
  for (int i = 0; i < argc; i++) len[i] = strlen(argv[i]);
  s->status = -1;
  s->buf = uv_buf_init(s->bytes, (unsigned)rl_resp_write(s->bytes, argc,
                                                         argv, len));
  return rl_conn_send(conn, &s->buf, 1, -1, 0, on_sent, s, 0);
}

/* --- SIGPIPE ---------------------------------------------------------------- */

/* In a child whose SIGPIPE is at its default (fatal) disposition: connect,
 * kill the master, write twice (the first write draws a reset, the second
 * fails with EPIPE). libuv's own writes (write(2)) would kill the child
 * here; the connection must see EPIPE and drop. */
static int sigpipe_child(const char *url, pid_t master) {
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  harness_conn h;
  if (hc_start(&h, url, RL_CONN_COMMAND) != 0) return 10;
  if (!RUN_UNTIL(&h, h.conn.state == RL_CONN_READY, 10000)) return 11;
  kill(master, SIGKILL);
  rt_sleep_ms(200); /* the master's socket is closed by its death */
  sent a, b;
  const char *ping[] = {"PING"};
  if (send_argv(&h.conn, &a, 1, ping) != 0) return 12;
  rl_conn_flush(&h.conn); /* accepted by the kernel; a reset comes back */
  rt_sleep_ms(100);
  if (send_argv(&h.conn, &b, 1, ping) == 0)
    rl_conn_flush(&h.conn); /* EPIPE, or the reset read first */
  RUN_UNTIL(&h, h.conn.state != RL_CONN_READY, 5000);
  if (h.conn.state == RL_CONN_READY) return 13;
  if (a.status != RL_CMD_DROPPED) return 14;
  hc_close(&h);
  return 0;
}

static void no_sigpipe_on_callers_loop(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  RT_REQUIRE(pid >= 0);
  if (pid == 0) _exit(sigpipe_child(r.url, r.pid));
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) continue;
  if (WIFSIGNALED(st))
    fprintf(stderr, "  the child died of signal %d\n", WTERMSIG(st));
  else if (WEXITSTATUS(st) != 0)
    fprintf(stderr, "  the child exited %d\n", WEXITSTATUS(st));
  RT_CHECK(WIFEXITED(st));
  RT_CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
  rt_redis_stop(&r);
}

/* --- a write larger than the kernel's buffer -------------------------------- */

/* 1 if every socket this process has open is close-on-exec. */
static int sockets_cloexec(int *count) {
  DIR *d = opendir("/proc/self/fd");
  int ok = 1;
  *count = 0;
  if (d == NULL) return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int fd = atoi(e->d_name);
    struct stat st;
    if (e->d_name[0] == '.' || fd == dirfd(d) || fstat(fd, &st) != 0)
      continue;
    if (!S_ISSOCK(st.st_mode)) continue;
    (*count)++;
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || !(flags & FD_CLOEXEC)) {
      fprintf(stderr, "  socket %d is not close-on-exec\n", fd);
      ok = 0;
    }
  }
  closedir(d);
  return ok;
}

static void large_write_drains(void) {
  harness_conn h;
  RT_REQUIRE(hc_start(&h, srv[0].url, RL_CONN_COMMAND) == 0);
  RT_REQUIRE(RUN_UNTIL(&h, h.conn.state == RL_CONN_READY, 10000));
  int before = 0;
  RT_CHECK(sockets_cloexec(&before));
  /* 16 MB: more than the socket buffers of both ends hold. */
  size_t big = 16u << 20;
  char *payload = malloc(big);
  RT_REQUIRE(payload != NULL);
  memset(payload, 'x', big);
  const char *argv[] = {"SET", "large:key", payload};
  size_t len[] = {3, 9, big};
  size_t size = rl_resp_size(3, argv, len);
  char *bytes = malloc(size);
  RT_REQUIRE(bytes != NULL);
  uv_buf_t buf = uv_buf_init(bytes, (unsigned)rl_resp_write(bytes, 3, argv,
                                                             len));
  sent s = {.status = -1};
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  h.cfg.command_timeout_ms = 60000; /* no timeout while it is stopped */
  RT_REQUIRE(rl_conn_send(&h.conn, &buf, 1, -1, 0, on_sent, &s, 0) == 0);
  rl_conn_flush(&h.conn);
  RUN_UNTIL(&h, 0, 300); /* the kernel's buffers fill; the rest waits */
  int during = 0;
  RT_CHECK(sockets_cloexec(&during));
  RT_CHECK(during > before); /* the write watcher's duplicate is open */
  RT_CHECK_EQ_INT(s.status, -1);
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_CHECK(RUN_UNTIL(&h, s.status != -1, 60000));
  RT_CHECK_EQ_INT(s.status, RL_CMD_REPLY);
  RT_CHECK(strcmp(s.reply, "OK") == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "STRLEN large:key"), (long long)big);
  rt_redis_int(&srv[0], "DEL large:key");
  hc_close(&h);
  free(payload);
  free(bytes);
}

/* --- the owner's extra handshake commands --------------------------------- */

typedef struct extra_state {
  int calls;
  int order_ok;     /* each reply came before the connection was ready */
  int refuse_at;    /* refuse at this reply index, or -1 */
  char first[32];
  long long second;
} extra_state;

static int on_extra(rl_conn *conn, int i, const redisReply *r, void *data) {
  extra_state *e = data;
  if (conn->state == RL_CONN_HANDSHAKE && i == e->calls) e->order_ok++;
  e->calls++;
  if (i == 0 && r->str) snprintf(e->first, sizeof e->first, "%s", r->str);
  if (i == 1) e->second = r->type == REDIS_REPLY_INTEGER ? r->integer : -99;
  return i == e->refuse_at;
}

static int info_seen, info_before_ready;
static char info_run_id[48];
static void on_info(rl_conn *conn, const char *run_id, uint64_t uptime_ms) {
  (void)uptime_ms;
  info_seen++;
  if (conn->state == RL_CONN_HANDSHAKE) info_before_ready++;
  snprintf(info_run_id, sizeof info_run_id, "%s", run_id);
}

static void handshake_extra(void) {
  const char *a1[] = {"ECHO", "hello"}, *a2[] = {"EXISTS", "no:such:key"};
  size_t l1[] = {4, 5}, l2[] = {6, 11};
  char resp[128];
  size_t n = rl_resp_write(resp, 2, a1, l1);
  n += rl_resp_write(resp + n, 2, a2, l2);
  extra_state e = {.refuse_at = -1};
  harness_conn h;
  info_seen = info_before_ready = 0;
  rl_url url;
  RT_REQUIRE(rl_url_parse(srv[0].url, &url) == 0);
  hc_loop_init(&h);
  h.cfg = (rl_conn_config){.command_timeout_ms = 2000,
                           .connect_timeout_ms = 5000,
                           .mode = RL_CONN_COMMAND};
  h.conn.data = &h;
  h.conn.on_closed = on_conn_closed;
  h.conn.on_info = on_info;
  RT_REQUIRE(rl_conn_set_handshake_extra(&h.conn, resp, n, 2, on_extra,
                                         &e) == 0);
  RT_REQUIRE(rl_conn_start(&h.conn, &h.loop, &url, &h.cfg) == 0);
  /* A command sent during the first attempt waits for the handshake. */
  sent s;
  const char *ping[] = {"PING"};
  RT_REQUIRE(send_argv(&h.conn, &s, 1, ping) == 0);
  RT_CHECK(RUN_UNTIL(&h, s.status != -1, 10000));
  RT_CHECK_EQ_INT(s.status, RL_CMD_REPLY);
  RT_CHECK(strcmp(s.reply, "PONG") == 0);
  RT_CHECK_EQ_INT(e.calls, 2);
  RT_CHECK_EQ_INT(e.order_ok, 2);
  RT_CHECK(strcmp(e.first, "hello") == 0);
  RT_CHECK_EQ_INT(e.second, 0);
  RT_CHECK_EQ_INT(info_seen, 1);
  RT_CHECK_EQ_INT(info_before_ready, 1);
  RT_CHECK_EQ_INT(strlen(info_run_id), 40);
  hc_close(&h);

  /* An extra callback that says no refuses the connection; a command
   * that waited gets REFUSED, and later sends fail at once with it. */
  e = (extra_state){.refuse_at = 1};
  rl_conn_config cfg = h.cfg;
  hc_loop_init(&h);
  h.cfg = cfg;
  h.conn.data = &h;
  h.conn.on_closed = on_conn_closed;
  RT_REQUIRE(rl_conn_set_handshake_extra(&h.conn, resp, n, 2, on_extra,
                                         &e) == 0);
  RT_REQUIRE(rl_conn_start(&h.conn, &h.loop, &url, &h.cfg) == 0);
  RT_REQUIRE(send_argv(&h.conn, &s, 1, ping) == 0);
  RT_CHECK(RUN_UNTIL(&h, s.status != -1, 10000));
  RT_CHECK_EQ_INT(s.status, RL_CMD_REFUSED);
  RT_CHECK(h.conn.refused);
  RT_CHECK(strlen(h.conn.err) > 0);
  RT_CHECK_EQ_INT(send_argv(&h.conn, &s, 1, ping), RL_CONN_EREFUSED);
  hc_close(&h);
}

/* --- the master's clock ------------------------------------------------------ */

static int64_t master_wall_us(rt_redis *r) {
  redisReply *rep = rt_redis_cmd(r, "TIME");
  int64_t v = -1;
  if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
    v = atoll(rep->element[0]->str) * 1000000 + atoll(rep->element[1]->str);
  if (rep) freeReplyObject(rep);
  return v;
}

static void clock_offset(void) {
  harness_conn h;
  int64_t off = 0;
  RT_REQUIRE(hc_start(&h, srv[0].url, RL_CONN_COMMAND) == 0);
  RT_CHECK(rl_conn_clock_offset(&h.conn, &off) == 0); /* not yet */
  RT_REQUIRE(RUN_UNTIL(&h, h.conn.state == RL_CONN_READY, 10000));
  RT_REQUIRE(rl_conn_clock_offset(&h.conn, &off) == 1);
  /* A lower bound of the master's clock, every time it is asked... */
  for (int i = 0; i < 20; i++) {
    int64_t bound = rl_conn_now_us();
    RT_CHECK(rl_conn_clock_offset(&h.conn, &off) == 1);
    bound += off;
    int64_t wall = master_wall_us(&srv[0]);
    RT_CHECK(wall >= bound);
    /* ...and not a loose one: the two clocks are one machine's. */
    RT_CHECK(wall - bound < 1000000);
    rt_sleep_ms(5);
  }
  hc_close(&h);
  RT_CHECK(h.conn.clock_valid == 0 || h.conn.state == RL_CONN_CLOSED);
}

/* A clocked command ends with its deadline in the master's clock, which
 * the connection appends as it writes it: ECHO shows what was written.
 * Sent during the first connection attempt (before the handshake measured
 * the clock) and once ready, it is the command timeout (2 s) ahead of the
 * master's clock, give or take the estimate's slack, followed by ":" and
 * the client's clock's lead; with no command timeout it is 0 (none). */
static int send_clocked_echo(rl_conn *conn, sent *s) {
  const char *argv[] = {"ECHO"};
  size_t len[] = {4};
  s->status = -1;
  s->buf = uv_buf_init(s->bytes,
                       (unsigned)rl_resp_write_head(s->bytes, 1, 1, argv,
                                                    len));
  return rl_conn_send_clocked(conn, &s->buf, 1, -1, 0, on_sent, s, 0);
}

static void clocked_command(void) {
  harness_conn h;
  sent s[2];
  RT_REQUIRE(hc_start(&h, srv[0].url, RL_CONN_COMMAND) == 0);
  for (int k = 0; k < 2; k++) {
    int64_t before = master_wall_us(&srv[0]);
    RT_REQUIRE(send_clocked_echo(&h.conn, &s[k]) == 0);
    RT_REQUIRE(RUN_UNTIL(&h, s[k].status != -1, 10000));
    int64_t after = master_wall_us(&srv[0]);
    RT_CHECK_EQ_INT(s[k].status, RL_CMD_REPLY);
    long long at = atoll(s[k].reply);
    if (!(at >= before + 1000000 && at <= after + 2000000))
      fprintf(stderr, "  deadline %lld, master's clock %lld..%lld\n", at,
              (long long)before, (long long)after);
    RT_CHECK(at >= before + 1000000 && at <= after + 2000000);
    /* Then how far this client's wall clock is ahead of the master's:
     * one machine's clock, so at most 0 (it comes from an upper bound of
     * the master's clock) and not much less. */
    const char *colon = strchr(s[k].reply, ':');
    RT_CHECK(colon != NULL);
    long long ahead = colon ? atoll(colon + 1) : 1;
    if (!(ahead <= 0 && ahead > -1000000))
      fprintf(stderr, "  client ahead of the master by %lld us\n", ahead);
    RT_CHECK(ahead <= 0 && ahead > -1000000);
  }
  hc_close(&h);
  /* No command timeout: no deadline. */
  hc_loop_init(&h);
  rl_url url;
  RT_REQUIRE(rl_url_parse(srv[0].url, &url) == 0);
  h.cfg.connect_timeout_ms = 5000;
  h.cfg.mode = RL_CONN_COMMAND;
  h.conn.data = &h;
  h.conn.on_closed = on_conn_closed;
  RT_REQUIRE(rl_conn_start(&h.conn, &h.loop, &url, &h.cfg) == 0);
  RT_REQUIRE(send_clocked_echo(&h.conn, &s[0]) == 0);
  RT_REQUIRE(RUN_UNTIL(&h, s[0].status != -1, 10000));
  RT_CHECK(strcmp(s[0].reply, "0") == 0);
  hc_close(&h);
}

/* A command's deadline counts from when it is sent, even late in a long
 * loop iteration (the loop's cached time is then stale): sent 300 ms into
 * a callback to a stopped master, with a 500 ms command timeout, it must
 * not time out before 500 ms have passed. */
typedef struct late_send {
  harness_conn *h;
  sent s;
  uint64_t sent_at, timeout_at;
} late_send;

static void on_late_sent(rl_cmd *cmd, redisReply *r, int status) {
  late_send *ls = cmd->data;
  (void)r;
  if (status == RL_CMD_TIMEOUT) {
    if (ls->timeout_at == 0) ls->timeout_at = rt_now_ms();
    return;
  }
  ls->s.status = status;
}

static void send_late(uv_timer_t *t) {
  late_send *ls = t->data;
  rt_sleep_ms(300); /* a long callback: the loop's time is now stale */
  const char *argv[] = {"PING"};
  size_t len[] = {4};
  ls->s.status = -1;
  ls->s.buf = uv_buf_init(ls->s.bytes,
                          (unsigned)rl_resp_write(ls->s.bytes, 1, argv, len));
  ls->sent_at = rt_now_ms();
  RT_CHECK(rl_conn_send(&ls->h->conn, &ls->s.buf, 1, -1, 0, on_late_sent, ls,
                        0) == 0);
}

static void deadline_from_send(void) {
  harness_conn h;
  RT_REQUIRE(hc_start(&h, srv[0].url, RL_CONN_COMMAND) == 0);
  h.cfg.command_timeout_ms = 500;
  RT_REQUIRE(RUN_UNTIL(&h, h.conn.state == RL_CONN_READY, 10000));
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  late_send ls = {.h = &h};
  uv_timer_t t;
  uv_timer_init(&h.loop, &t);
  t.data = &ls;
  uv_timer_start(&t, send_late, 1, 0);
  RUN_UNTIL(&h, ls.timeout_at != 0, 5000);
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  RT_CHECK(ls.timeout_at != 0);
  long long waited = (long long)(ls.timeout_at - ls.sent_at);
  if (waited < 490)
    fprintf(stderr, "  timed out %lld ms after it was sent\n", waited);
  RT_CHECK(waited >= 490);
  RUN_UNTIL(&h, ls.s.status != -1, 5000);
  RT_CHECK_EQ_INT(ls.s.status, RL_CMD_LATE);
  uv_close((uv_handle_t *)&t, NULL);
  hc_close(&h);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"no_sigpipe_on_callers_loop", no_sigpipe_on_callers_loop},
      {"large_write_drains", large_write_drains},
      {"handshake_extra", handshake_extra},
      {"clock_offset", clock_offset},
      {"clocked_command", clocked_command},
      {"deadline_from_send", deadline_from_send},
  };
  return rt_main_servers(argc, argv, srv, 1, tests,
                         sizeof tests / sizeof tests[0]);
}
