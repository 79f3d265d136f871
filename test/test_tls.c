/*
 * TLS to masters (rediss://) against redis-server --tls-port with
 * certificates the harness makes: locks work, verification is on by
 * default, and every way a TLS handshake can fail (unknown CA, wrong host
 * name, expired certificate, a plain-text server, a required client
 * certificate) is a clear error with OpenSSL's reason, in the master's
 * metrics and in rlock_client_last_error, within the connect timeout,
 * never a hang. Bad TLS options fail rlock_client_open with the reason.
 * TLS and plain masters mix.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RT_WARM_TLS 1
#include "common.h"

#define CONNECT_MS 2000

static const rt_tls_files *tf;

typedef struct tls_opts {
  const char *ca, *cert, *key, *server_name;
  int insecure;
} tls_opts;

static int open_with(const char **m, int n, const tls_opts *t,
                     rlock_client **out) {
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  o.master_timeout_ms = 1000;
  o.connect_timeout_ms = CONNECT_MS;
  o.tls_ca_file = t->ca;
  o.tls_cert_file = t->cert;
  o.tls_key_file = t->key;
  o.tls_server_name = t->server_name;
  o.tls_insecure = t->insecure;
  *out = NULL;
  return rlock_client_open(out, &o);
}

/* Takes and releases a lock; 0 or the failing status. */
static int lock_cycle(rlock_client *c, const char *name) {
  rlock *l;
  int rc = rlock_get(c, name, &l);
  if (rc != 0) return rc;
  rc = rlock_trylock(l, 0, 10000);
  if (rc == 0) rc = rlock_unlock(l);
  rlock_free(l);
  return rc;
}

static void start_tls(rt_redis *r, const char *cert, const char *key,
                      int auth_clients) {
  rt_redis_opts o = {.tls = 1, .tls_cert = cert, .tls_key = key,
                     .tls_auth_clients = auth_clients};
  if (rt_redis_start_opts(r, &o) != 0) memset(r, 0, sizeof *r);
}

/* --- it works, verified ----------------------------------------------------- */

static void lock_over_tls(void) {
  rt_redis r;
  start_tls(&r, NULL, NULL, 0);
  RT_REQUIRE(r.pid > 0);
  RT_CHECK(strncmp(r.url, "rediss://", 9) == 0);
  const char *m[] = {r.url};
  rlock_client *c;
  RT_REQUIRE(open_with(m, 1, &(tls_opts){.ca = tf->ca}, &c) == 0);
  RT_CHECK_EQ_INT(lock_cycle(c, "tls:basic"), 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "tls:held", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&r, "EXISTS rlock:{tls:held}"), 1);
  RT_CHECK(rlock_unlock(l) == 0);
  rlock_free(l);
  rlock_client_close(c);

  /* By DNS name too: the certificate has localhost in its names. */
  char url[128];
  snprintf(url, sizeof url, "rediss://localhost:%d", r.port);
  m[0] = url;
  RT_REQUIRE(open_with(m, 1, &(tls_opts){.ca = tf->ca}, &c) == 0);
  RT_CHECK_EQ_INT(lock_cycle(c, "tls:byname"), 0);
  rlock_client_close(c);
  rt_redis_stop(&r);
}

/* --- handshake failures ------------------------------------------------------ */

/* Opens a client on url with t and checks that it does not become ready,
 * within the connect timeout and a margin, and that the master's error,
 * the client's last error and a lock call say why. */
static void expect_failure(const char *url, const tls_opts *t,
                           const char *reason) {
  const char *m[] = {url};
  rlock_client *c;
  RT_REQUIRE(open_with(m, 1, t, &c) == 0);
  uint64_t t0 = rt_now_ms();
  int rc = rlock_client_wait_ready(c, CONNECT_MS + 500);
  uint64_t took = rt_now_ms() - t0;
  rlock_metrics mm;
  RT_CHECK(rlock_metrics_snapshot(c, &mm) == 0);
  char last[256] = "";
  rlock_client_last_error(c, last, sizeof last);
  fprintf(stderr, "  %s: wait_ready %s after %llu ms; error \"%s\"; last "
          "error \"%s\"\n", reason, rlock_strerror(rc),
          (unsigned long long)took, mm.masters[0].error, last);
  RT_CHECK_EQ_INT(rc, RLOCK_ENOQUORUM);
  RT_CHECK_EQ_INT(mm.masters[0].up, 0);
  RT_CHECK(strstr(mm.masters[0].error, reason) != NULL);
  RT_CHECK(strstr(last, reason) != NULL);
  /* A call fails promptly instead of hanging. */
  t0 = rt_now_ms();
  RT_CHECK_EQ_INT(lock_cycle(c, "tls:refused"), RLOCK_ENOQUORUM);
  RT_CHECK(rt_now_ms() - t0 < CONNECT_MS + 3000);
  rlock_client_close(c);
}

static void unknown_ca(void) {
  rt_redis r;
  start_tls(&r, tf->other_cert, tf->other_key, 0);
  RT_REQUIRE(r.pid > 0);
  expect_failure(r.url, &(tls_opts){.ca = tf->ca},
                 "unable to get local issuer certificate");
  /* Turning verification off, explicitly, connects. */
  const char *m[] = {r.url};
  rlock_client *c;
  RT_REQUIRE(open_with(m, 1, &(tls_opts){.ca = tf->ca, .insecure = 1}, &c) ==
             0);
  RT_CHECK_EQ_INT(lock_cycle(c, "tls:insecure"), 0);
  rlock_client_close(c);
  /* And so does trusting the other CA. */
  RT_REQUIRE(open_with(m, 1, &(tls_opts){.ca = tf->other_ca}, &c) == 0);
  RT_CHECK_EQ_INT(lock_cycle(c, "tls:otherca"), 0);
  rlock_client_close(c);
  rt_redis_stop(&r);
}

static void wrong_host_name(void) {
  rt_redis r;
  start_tls(&r, tf->wrongname_cert, tf->wrongname_key, 0);
  RT_REQUIRE(r.pid > 0);
  /* By IP address, and by a name: neither is in the certificate. */
  expect_failure(r.url, &(tls_opts){.ca = tf->ca}, "IP address mismatch");
  char url[128];
  snprintf(url, sizeof url, "rediss://localhost:%d", r.port);
  expect_failure(url, &(tls_opts){.ca = tf->ca}, "hostname mismatch");
  /* The name the certificate carries, given as the server name. */
  const char *m[] = {r.url};
  rlock_client *c;
  RT_REQUIRE(open_with(m, 1,
                       &(tls_opts){.ca = tf->ca,
                                   .server_name = "other.example"},
                       &c) == 0);
  RT_CHECK_EQ_INT(lock_cycle(c, "tls:sni"), 0);
  rlock_client_close(c);
  rt_redis_stop(&r);
}

static void expired_certificate(void) {
  rt_redis r;
  start_tls(&r, tf->expired_cert, tf->expired_key, 0);
  RT_REQUIRE(r.pid > 0);
  expect_failure(r.url, &(tls_opts){.ca = tf->ca},
                 "certificate has expired");
  rt_redis_stop(&r);
}

/* rediss:// to a server that speaks plain RESP on that port. */
static void plain_text_server(void) {
  rt_redis r;
  rt_redis_opts o = {0};
  RT_REQUIRE(rt_redis_start_opts(&r, &o) == 0);
  char url[128];
  snprintf(url, sizeof url, "rediss://127.0.0.1:%d", r.port);
  expect_failure(url, &(tls_opts){.ca = tf->ca}, "TLS");
  rt_redis_stop(&r);
}

/* A port that accepts each connection and closes it at once, counting
 * them: a TLS proxy with no backend, a server at its client limit. */
typedef struct closer {
  int lfd, port;
  atomic_int accepted, stop;
  pthread_t th;
} closer;

static void *closer_run(void *arg) {
  closer *k = arg;
  while (!atomic_load(&k->stop)) {
    struct pollfd p = {k->lfd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    int fd = accept4(k->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    atomic_fetch_add(&k->accepted, 1);
    close(fd);
  }
  return NULL;
}

static int closer_start(closer *k) {
  memset(k, 0, sizeof *k);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  k->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (k->lfd < 0 || bind(k->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(k->lfd, 64) != 0 ||
      getsockname(k->lfd, (struct sockaddr *)&a, &len) != 0)
    return -1;
  k->port = ntohs(a.sin_port);
  return pthread_create(&k->th, NULL, closer_run, k);
}

static void closer_stop(closer *k) {
  atomic_store(&k->stop, 1);
  pthread_join(k->th, NULL);
  close(k->lfd);
}

/* A TLS master whose port accepts and then closes the connection during
 * the handshake is retried with the backoff that doubles to 2 s, as a
 * refused handshake is: only a connect that nothing listens for is
 * retried every 250 ms. Over 4 s that is about 7 attempts, against about
 * 20 at 250 ms. */
static void closing_port_backs_off(void) {
  closer k;
  RT_REQUIRE(closer_start(&k) == 0);
  char url[64];
  snprintf(url, sizeof url, "rediss://127.0.0.1:%d", k.port);
  const char *m[] = {url};
  rlock_client *c;
  RT_REQUIRE(open_with(m, 1, &(tls_opts){.ca = tf->ca}, &c) == 0);
  rt_sleep_ms(4000);
  int n = atomic_load(&k.accepted);
  rlock_client_close(c);
  closer_stop(&k);
  fprintf(stderr, "  %d connections in 4 s\n", n);
  RT_CHECK(n >= 3);
  RT_CHECK(n <= 12);
}

/* A server that requires a client certificate (tls-auth-clients yes). */
static void client_certificate(void) {
  rt_redis r;
  start_tls(&r, NULL, NULL, 1);
  RT_REQUIRE(r.pid > 0);
  expect_failure(r.url, &(tls_opts){.ca = tf->ca}, "certificate required");
  const char *m[] = {r.url};
  rlock_client *c;
  RT_REQUIRE(open_with(m, 1,
                       &(tls_opts){.ca = tf->ca, .cert = tf->client_cert,
                                   .key = tf->client_key},
                       &c) == 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  RT_CHECK_EQ_INT(lock_cycle(c, "tls:clientcert"), 0);
  rlock_client_close(c);
  rt_redis_stop(&r);
}

/* --- bad options --------------------------------------------------------------- */

static void expect_open_error(const tls_opts *t, const char *what) {
  const char *m[] = {"rediss://127.0.0.1:1"};
  rlock_client *c = (rlock_client *)1;
  RT_CHECK_EQ_INT(open_with(m, 1, t, &c), RLOCK_EINVAL);
  RT_CHECK(c == NULL);
  char why[320];
  rlock_open_error(why, sizeof why);
  fprintf(stderr, "  open: %s\n", why);
  RT_CHECK(strstr(why, what) != NULL);
}

static void bad_options(void) {
  expect_open_error(&(tls_opts){.ca = "/nonexistent/ca.crt"},
                    "tls_ca_file \"/nonexistent/ca.crt\": No such file");
  /* A key that is not the certificate's. */
  expect_open_error(&(tls_opts){.ca = tf->ca, .cert = tf->client_cert,
                                .key = tf->server_key},
                    "does not match");
  expect_open_error(&(tls_opts){.ca = tf->ca, .cert = tf->client_cert},
                    "tls_cert_file: given without tls_key_file");
  /* Not a certificate at all. */
  expect_open_error(&(tls_opts){.ca = tf->client_key}, "tls_ca_file");
  expect_open_error(&(tls_opts){.ca = tf->ca, .server_name = ""},
                    "tls_server_name");
}

/* --- TLS and plain masters, mixed ----------------------------------------------- */

static void mixed_masters(void) {
  rt_redis r[3];
  start_tls(&r[0], NULL, NULL, 0);
  RT_REQUIRE(r[0].pid > 0);
  RT_REQUIRE(rt_redis_start_opts(&r[1], &(rt_redis_opts){0}) == 0);
  start_tls(&r[2], NULL, NULL, 0);
  RT_REQUIRE(r[2].pid > 0);
  const char *m[] = {r[0].url, r[1].url, r[2].url};
  RT_CHECK(strncmp(m[1], "127.0.0.1:", 10) == 0);
  rlock_client *c;
  RT_REQUIRE(open_with(m, 3, &(tls_opts){.ca = tf->ca}, &c) == 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "tls:mixed", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  /* The call returns once a majority granted; the third grant may still
   * be on its way, so each master gets up to 2 s to show the key. */
  for (int i = 0; i < 3; i++) {
    long long on = 0;
    for (int k = 0; k < 200 && on != 1; k++) {
      on = rt_redis_int(&r[i], "EXISTS rlock:{tls:mixed}");
      if (on != 1) rt_sleep_ms(10);
    }
    RT_CHECK_EQ_INT(on, 1);
  }
  /* One TLS master stops: the other two still make a majority. */
  RT_REQUIRE(rt_redis_pause(&r[0]) == 0);
  RT_CHECK(rlock_unlock(l) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  RT_CHECK(rlock_unlock(l) == 0);
  RT_CHECK(rt_redis_resume(&r[0]) == 0);
  rlock_metrics mm;
  RT_CHECK(rlock_metrics_snapshot(c, &mm) == 0);
  RT_CHECK_EQ_INT(mm.masters[1].up, 1);
  RT_CHECK_EQ_INT(mm.masters[2].up, 1);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop_many(r, 3);
}

int main(int argc, char **argv) {
  tf = rt_tls();
  if (tf == NULL) return 1;
  static const rt_test tests[] = {
      {"lock_over_tls", lock_over_tls},
      {"unknown_ca", unknown_ca},
      {"wrong_host_name", wrong_host_name},
      {"expired_certificate", expired_certificate},
      {"plain_text_server", plain_text_server},
      {"closing_port_backs_off", closing_port_backs_off},
      {"client_certificate", client_certificate},
      {"bad_options", bad_options},
      {"mixed_masters", mixed_masters},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
