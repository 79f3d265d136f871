/*
 * Unit tests of the master address forms the connection layer added
 * (lib/conn/url.c): rediss://, ACL users, percent-encoded credentials, unix
 * sockets with credentials and a db, the host name kept for TLS, and the
 * reason given for each refusal. No Redis.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "rlock.h"
#include "url.h"

static void tls_and_users(void) {
  rl_url u;
  RT_REQUIRE(rl_url_parse("rediss://locker:s3cret@redis.example:6380/2", &u) ==
             0);
  RT_CHECK(u.kind == RL_URL_TCP);
  RT_CHECK_EQ_INT(u.tls, 1);
  RT_CHECK(strcmp(u.host, "redis.example") == 0);
  RT_CHECK(strcmp(u.name, "redis.example") == 0);
  RT_CHECK_EQ_INT(u.port, 6380);
  RT_CHECK_EQ_INT(u.db, 2);
  RT_CHECK(u.has_user && strcmp(u.user, "locker") == 0);
  RT_CHECK(u.has_password && strcmp(u.password, "s3cret") == 0);

  RT_REQUIRE(rl_url_parse("redis://:only@10.0.0.1", &u) == 0);
  RT_CHECK_EQ_INT(u.tls, 0);
  RT_CHECK(!u.has_user && u.user[0] == '\0');
  RT_CHECK(strcmp(u.password, "only") == 0);

  RT_REQUIRE(rl_url_parse("rediss://[::1]:7000", &u) == 0);
  RT_CHECK(strcmp(u.host, "::1") == 0 && strcmp(u.name, "::1") == 0);
  RT_CHECK(!u.has_password);

  /* Percent-encoding: '@', ':', ',' and '%' itself. */
  RT_REQUIRE(rl_url_parse("redis://us%3Aer:p%40ss%2Cw%25rd@h:1", &u) == 0);
  RT_CHECK(strcmp(u.user, "us:er") == 0);
  RT_CHECK(strcmp(u.password, "p@ss,w%rd") == 0);
  RT_CHECK(strcmp(u.host, "h") == 0);
}

static void unix_forms(void) {
  rl_url u;
  RT_REQUIRE(rl_url_parse("unix:///run/redis.sock", &u) == 0);
  RT_CHECK(u.kind == RL_URL_UNIX && strcmp(u.path, "/run/redis.sock") == 0);
  RT_CHECK(!u.has_password && u.db == 0);
  RT_REQUIRE(rl_url_parse("unix://:secret@/run/redis.sock?db=3", &u) == 0);
  RT_CHECK(strcmp(u.path, "/run/redis.sock") == 0);
  RT_CHECK(u.has_password && strcmp(u.password, "secret") == 0);
  RT_CHECK(!u.has_user);
  RT_CHECK_EQ_INT(u.db, 3);
  RT_REQUIRE(rl_url_parse("unix://app:pw@/tmp/r.sock", &u) == 0);
  RT_CHECK(strcmp(u.user, "app") == 0 && strcmp(u.path, "/tmp/r.sock") == 0);
  RT_REQUIRE(rl_url_parse("unix:///tmp/r.sock?db=0", &u) == 0);
  RT_CHECK_EQ_INT(u.db, 0);
}

/* Each bad form is refused with a reason that names what is wrong. */
static void refusals_say_why(void) {
  const struct {
    const char *url, *why;
  } bad[] = {
      {"redis://user@h:1", "userinfo must be :password or user:password"},
      {"redis://user:@h:1", "password empty"},
      {"redis://u:p%4@h:1", "badly percent-encoded"},
      {"redis://u:p%00@h:1", "badly percent-encoded"},
      {"rediss://h:1/x", "database"},
      {"unix://relative.sock", "must be absolute"},
      {"unix://:pw/run/r.sock", "must be absolute"},
      {"unix:///run/r.sock?timeout=1", "?db=N"},
      {"unix:///run/r.sock?db=x", "database"},
      {"redisss://h:1", "unknown scheme"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rl_url u;
    const char *why = "";
    int rc = rl_url_parse_why(bad[i].url, &u, &why);
    if (rc != RLOCK_EINVAL || strstr(why, bad[i].why) == NULL)
      fprintf(stderr, "  '%s': %d, \"%s\"\n", bad[i].url, rc, why);
    RT_CHECK_EQ_INT(rc, RLOCK_EINVAL);
    RT_CHECK(strstr(why, bad[i].why) != NULL);
  }
}

/* rlock_open_error names the TLS option that is wrong, before anything is
 * read or connected. */
static void tls_option_checks(void) {
  const char *m[] = {"rediss://127.0.0.1:1"};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  rlock_client *c = NULL;
  char why[320];
  o.tls_key_file = "/k.pem";
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_EINVAL);
  rlock_open_error(why, sizeof why);
  RT_CHECK(strstr(why, "tls_key_file: given without tls_cert_file") != NULL);
  o.tls_key_file = NULL;
  o.tls_ca_file = "";
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_EINVAL);
  rlock_open_error(why, sizeof why);
  RT_CHECK(strstr(why, "tls_ca_file: empty") != NULL);
  o.tls_ca_file = NULL;
  o.tls_insecure = 2;
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_EINVAL);
  rlock_open_error(why, sizeof why);
  RT_CHECK(strstr(why, "tls_insecure") != NULL);
  o.tls_insecure = 0;
  o.tls_server_name = "two words";
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_EINVAL);
  rlock_open_error(why, sizeof why);
  RT_CHECK(strstr(why, "tls_server_name") != NULL);
  RT_CHECK(c == NULL);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"tls_and_users", tls_and_users},
      {"unix_forms", unix_forms},
      {"refusals_say_why", refusals_say_why},
      {"tls_option_checks", tls_option_checks},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
