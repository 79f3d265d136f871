/*
 * Unit tests of lib/topology_url: the cluster and Sentinel URL forms,
 * what each part becomes, and the mistakes it refuses (a comma, an
 * unknown or repeated option, an address given twice, a missing service
 * name, a path on a cluster URL).
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "rlock.h"
#include "topology_url.h"

static rl_topo_url u; /* large; one is enough */

static int parse(const char *s) {
  const char *why = NULL;
  int rc = rl_topo_url_parse(s, &u, &why);
  if (rc != 0 && why == NULL) return 99; /* a refusal must say why */
  return rc;
}

static void cluster_forms(void) {
  RT_REQUIRE(parse("redis-cluster://10.0.0.1:7000") == 0);
  RT_CHECK_EQ_INT(u.kind, RL_TOPO_CLUSTER);
  RT_CHECK_EQ_INT(u.tls, 0);
  RT_CHECK_EQ_INT(u.naddrs, 1);
  RT_CHECK(strcmp(u.addr[0].host, "10.0.0.1") == 0 && u.addr[0].port == 7000);
  RT_CHECK(!u.has_password && !u.has_user);

  RT_REQUIRE(parse("rediss-cluster://app:s%2Cc%40r%26t@node-1.example"
                   "?seed=node-2.example:7001&seed=[::1]:7002&seed=10.0.0.3") == 0);
  RT_CHECK_EQ_INT(u.tls, 1);
  RT_CHECK(u.has_user && strcmp(u.user, "app") == 0);
  RT_CHECK(u.has_password && strcmp(u.password, "s,c@r&t") == 0);
  RT_CHECK_EQ_INT(u.naddrs, 4);
  RT_CHECK(strcmp(u.addr[0].host, "node-1.example") == 0);
  RT_CHECK_EQ_INT(u.addr[0].port, RL_TOPO_CLUSTER_PORT);
  RT_CHECK(strcmp(u.addr[1].host, "node-2.example") == 0 && u.addr[1].port == 7001);
  RT_CHECK(strcmp(u.addr[2].host, "::1") == 0 && u.addr[2].port == 7002);
  RT_CHECK(strcmp(u.addr[3].host, "10.0.0.3") == 0 && u.addr[3].port == 6379);

  /* A password alone, with ':' and '@' in it. */
  RT_REQUIRE(parse("redis-cluster://:a:b@c@h:1") == 0);
  RT_CHECK(!u.has_user && strcmp(u.password, "a:b@c") == 0);
  RT_CHECK(strcmp(u.addr[0].host, "h") == 0);
}

static void sentinel_forms(void) {
  RT_REQUIRE(parse("redis-sentinel://10.0.0.1/mymaster") == 0);
  RT_CHECK_EQ_INT(u.kind, RL_TOPO_SENTINEL);
  RT_CHECK_EQ_INT(u.addr[0].port, RL_TOPO_SENTINEL_PORT);
  RT_CHECK(strcmp(u.service, "mymaster") == 0);
  RT_CHECK(!u.has_sentinel_password && !u.has_password);
  RT_CHECK_EQ_INT(u.db, 0);

  RT_REQUIRE(parse("rediss-sentinel://app:data%2Fpw@s1:26380/my-svc%2F1"
                   "?sentinel=s2:26381&sentinel=[fe80::2]"
                   "&sentinel_user=mon&sentinel_password=sent%26pw&db=3") == 0);
  RT_CHECK_EQ_INT(u.tls, 1);
  RT_CHECK_EQ_INT(u.naddrs, 3);
  RT_CHECK(strcmp(u.addr[0].host, "s1") == 0 && u.addr[0].port == 26380);
  RT_CHECK(strcmp(u.addr[1].host, "s2") == 0 && u.addr[1].port == 26381);
  RT_CHECK(strcmp(u.addr[2].host, "fe80::2") == 0 && u.addr[2].port == 26379);
  RT_CHECK(strcmp(u.user, "app") == 0 && strcmp(u.password, "data/pw") == 0);
  RT_CHECK(strcmp(u.sentinel_user, "mon") == 0);
  RT_CHECK(strcmp(u.sentinel_password, "sent&pw") == 0);
  RT_CHECK(strcmp(u.service, "my-svc/1") == 0);
  RT_CHECK_EQ_INT(u.db, 3);
}

/* The service name is percent-decoded; a blank in it is refused, since
 * sentinel.conf could not name such a master. */
static void service_names(void) {
  RT_CHECK_EQ_INT(parse("redis-sentinel://s/my%20svc"), RLOCK_EINVAL);
  RT_REQUIRE(parse("redis-sentinel://s/svc%2F1") == 0);
  RT_CHECK(strcmp(u.service, "svc/1") == 0);
  RT_REQUIRE(parse("redis-sentinel://s:1/m?sentinel_password=p") == 0);
  RT_CHECK(u.has_sentinel_password && !u.has_sentinel_user);
}

static void scheme_test(void) {
  RT_CHECK(rl_topo_url_is("redis-cluster://h"));
  RT_CHECK(rl_topo_url_is("rediss-sentinel://h/m"));
  RT_CHECK(!rl_topo_url_is("redis://h"));
  RT_CHECK(!rl_topo_url_is("h:1"));
  RT_CHECK(!rl_topo_url_is(NULL));
}

static void refusals(void) {
  static const char *bad[] = {
      "redis://h:1",                                /* not ours */
      "redis-cluster://",                           /* no host */
      "redis-cluster://h:1,h:2",                    /* a comma */
      "redis-cluster://:a,b@h:1",                   /* even in a password */
      "redis-cluster://h:1/0",                      /* a path */
      "redis-cluster://h:1?sentinel=h:2",           /* not a cluster option */
      "redis-cluster://h:1?seed=h:1",               /* given twice */
      "redis-cluster://h:1?seed=",                  /* empty */
      "redis-cluster://h:1?seed",                   /* not name=value */
      "redis-cluster://h:1?",                       /* empty query */
      "redis-cluster://h:1?seed=a:2&",              /* trailing & */
      "redis-cluster://h:1?seed=a:2&&seed=b:3",     /* empty option */
      "redis-cluster://h:0",                        /* port */
      "redis-cluster://h:65536",
      "redis-cluster://h:x",
      "redis-cluster://::1:7000",                   /* v6 needs brackets */
      "redis-cluster://[::1:7000",
      "redis-cluster://[h]:1",                      /* brackets for v6 only */
      "redis-cluster://h h:1",
      "redis-cluster://user@h:1",                   /* userinfo needs ':' */
      "redis-cluster://:@h:1",                      /* empty password */
      "redis-cluster://:%zz@h:1",                   /* bad encoding */
      "redis-cluster://:%00@h:1",                   /* a NUL */
      "redis-cluster://:a/b@h:1",                   /* '/' in userinfo */
      "redis-sentinel://h:1",                       /* no service */
      "redis-sentinel://h:1/",
      "redis-sentinel://h:1/a/b",
      "redis-sentinel://h:1/m?db=x",
      "redis-sentinel://h:1/m?db=1000001",
      "redis-sentinel://h:1/m?db=1&db=2",
      "redis-sentinel://h:1/m?sentinel_password=a&sentinel_password=b",
      "redis-sentinel://h:1/m?sentinel_user=u",     /* user without password */
      "redis-sentinel://h:1/m?seed=h:2",            /* not a sentinel option */
      "redis-sentinel://h:1/m?Sentinel=h:2",
      "redis-sentinel://h:1/m?sentinel=h:1",        /* given twice */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = parse(bad[i]);
    if (rc != RLOCK_EINVAL) fprintf(stderr, "  accepted: %s\n", bad[i]);
    RT_CHECK_EQ_INT(rc, RLOCK_EINVAL);
  }
  RT_CHECK_EQ_INT(parse(NULL), RLOCK_EINVAL);
}

static void limits(void) {
  char s[2048];
  int n = snprintf(s, sizeof s, "redis-cluster://h:1");
  for (int i = 2; i <= RL_TOPO_MAX_ADDRS; i++)
    n += snprintf(s + n, sizeof s - (size_t)n, "%cseed=h:%d", i == 2 ? '?' : '&', i);
  RT_REQUIRE(parse(s) == 0);
  RT_CHECK_EQ_INT(u.naddrs, RL_TOPO_MAX_ADDRS);
  snprintf(s + n, sizeof s - (size_t)n, "&seed=h:99");
  RT_CHECK_EQ_INT(parse(s), RLOCK_EINVAL);
  /* A 255-byte password fits, 256 does not. */
  char pw[300];
  memset(pw, 'p', 256);
  pw[256] = '\0';
  snprintf(s, sizeof s, "redis-cluster://:%s@h", pw);
  RT_CHECK_EQ_INT(parse(s), RLOCK_EINVAL);
  pw[255] = '\0';
  snprintf(s, sizeof s, "redis-cluster://:%s@h", pw);
  RT_CHECK_EQ_INT(parse(s), 0);
}

/* Random bytes after each scheme: a result or a refusal, never more. */
static void random_input(void) {
  static const char *prefix[] = {"redis-cluster://", "redis-sentinel://"};
  static const char alphabet[] = "ab:/?&=@[]%2C,.0179 \x01\xff";
  char s[64];
  uint32_t x = 5;
  int bad = 0;
  for (int n = 0; n < 100000; n++) {
    size_t p = strlen(prefix[n % 2]);
    memcpy(s, prefix[n % 2], p);
    size_t len = p + (size_t)(n % 40);
    for (size_t i = p; i < len; i++) {
      x = x * 1103515245u + 12345u;
      s[i] = alphabet[(x >> 16) % (sizeof alphabet - 1)];
    }
    s[len] = '\0';
    int rc = parse(s);
    if (rc != 0 && rc != RLOCK_EINVAL) bad++;
    if (rc == 0 && (u.naddrs < 1 || u.addr[0].port < 1 || !u.addr[0].host[0]))
      bad++;
  }
  RT_CHECK_EQ_INT(bad, 0);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"cluster_forms", cluster_forms}, {"sentinel_forms", sentinel_forms},
      {"service_names", service_names}, {"scheme_test", scheme_test},
      {"refusals", refusals},           {"limits", limits},
      {"random_input", random_input},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
