/*
 * Unit tests of rlock's pure logic: master URL parsing, option checks,
 * lock name checks, SHA-1 (script names), the held-lock table and error
 * names. No Redis here.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "harness.h"
#include "holds.h"
#include "keys.h"
#include "kind.h"
#include "lock.h"
#include "options.h"
#include "reply.h"
#include "resp.h"
#include "rlock.h"
#include "scripts.h"
#include "sha1.h"
#include "url.h"
#include "util.h"

static void url_forms(void) {
  rl_url u;
  RT_REQUIRE(rl_url_parse("127.0.0.1:6380", &u) == 0);
  RT_CHECK(u.kind == RL_URL_TCP);
  RT_CHECK(strcmp(u.host, "127.0.0.1") == 0);
  RT_CHECK_EQ_INT(u.port, 6380);
  RT_CHECK(!u.has_password);
  RT_CHECK_EQ_INT(u.db, 0);

  RT_REQUIRE(rl_url_parse("redis://:s3cret@localhost:7000/3", &u) == 0);
  RT_CHECK(strcmp(u.host, "localhost") == 0);
  RT_CHECK_EQ_INT(u.port, 7000);
  RT_CHECK(u.has_password);
  RT_CHECK(strcmp(u.password, "s3cret") == 0);
  RT_CHECK_EQ_INT(u.db, 3);

  RT_REQUIRE(rl_url_parse("redis://10.0.0.1", &u) == 0);
  RT_CHECK_EQ_INT(u.port, 6379);

  RT_REQUIRE(rl_url_parse("redis://[::1]:6390", &u) == 0);
  RT_CHECK(strcmp(u.host, "::1") == 0);
  RT_CHECK_EQ_INT(u.port, 6390);

  RT_REQUIRE(rl_url_parse("unix:///tmp/redis.sock", &u) == 0);
  RT_CHECK(u.kind == RL_URL_UNIX);
  RT_CHECK(strcmp(u.path, "/tmp/redis.sock") == 0);

  /* A password may itself contain '@' and ':'. */
  RT_REQUIRE(rl_url_parse("redis://:a@b:c@h:1", &u) == 0);
  RT_CHECK(strcmp(u.password, "a@b:c") == 0);
  RT_CHECK(strcmp(u.host, "h") == 0);
}

static void url_rejects(void) {
  const char *bad[] = {"",
                       "localhost",         /* bare form needs a port */
                       "host:0",            /* port out of range */
                       "host:65536",
                       "host:12ab",
                       ":6379",             /* no host */
                       "http://host:1",     /* unknown scheme */
                       "redis://user@h:1",  /* a user needs a password */
                       "redis://:@h:1",     /* empty password */
                       "redis://h:1/x",     /* bad db */
                       "redis://h:1/-1",
                       "unix://relative",
                       "unix://",
                       "::1:6379",          /* IPv6 needs brackets */
                       "redis://[::1:6379",
                       "ho st:1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rl_url u;
    int rc = rl_url_parse(bad[i], &u);
    if (rc != RLOCK_EINVAL) fprintf(stderr, "  accepted: '%s'\n", bad[i]);
    RT_CHECK(rc == RLOCK_EINVAL);
  }
  char longpath[300];
  memset(longpath, 'a', sizeof longpath);
  memcpy(longpath, "unix:///", 8);
  longpath[sizeof longpath - 1] = '\0';
  rl_url u;
  RT_CHECK(rl_url_parse(longpath, &u) == RLOCK_EINVAL);
  RT_CHECK(rl_url_parse(NULL, &u) == RLOCK_EINVAL);
}

static void options_checks(void) {
  rlock_options o;
  rlock_options_init(&o);
  RT_CHECK_EQ_INT(o.watchdog_timeout_ms, 30000);
  RT_CHECK(o.drift_factor == 0.01);
  RT_CHECK(o.loop == NULL);
  RT_CHECK(strcmp(o.key_prefix, "rlock:") == 0);
  rl_master_url urls[4];
  RT_CHECK(rl_options_check(&o, urls) == RLOCK_EINVAL); /* no masters */
  const char *m[] = {"127.0.0.1:1", "127.0.0.1:2"};
  o.masters = m;
  o.nmasters = 2;
  RT_CHECK(rl_options_check(&o, urls) == 0);
  RT_CHECK_EQ_INT(urls[1].url.port, 2);

  rlock_options b = o;
  b.key_prefix = "bad{prefix";
  RT_CHECK(rl_options_check(&b, urls) == RLOCK_EINVAL);
  b = o;
  b.key_prefix = NULL;
  RT_CHECK(rl_options_check(&b, urls) == RLOCK_EINVAL);
  b = o;
  b.wait_strategy = 2;
  RT_CHECK(rl_options_check(&b, urls) == RLOCK_EINVAL);
  b = o;
  b.wait_strategy = RLOCK_WAIT_POLL;
  RT_CHECK(rl_options_check(&b, urls) == 0);
  b = o;
  b.drift_factor = -0.1;
  RT_CHECK(rl_options_check(&b, urls) == RLOCK_EINVAL);
  b = o;
  b.master_timeout_ms = 0;
  RT_CHECK(rl_options_check(&b, urls) == RLOCK_EINVAL);
  b = o;
  b.watchdog_timeout_ms = 0;
  RT_CHECK(rl_options_check(&b, urls) == RLOCK_EINVAL);
  b = o;
  b.retry_delay_ms = -1;
  RT_CHECK(rl_options_check(&b, urls) == RLOCK_EINVAL);
  b = o;
  const char *badm[] = {"127.0.0.1:1", "nonsense"};
  b.masters = badm;
  RT_CHECK(rl_options_check(&b, urls) == RLOCK_EINVAL);
}

/* Every refused open says which option or master and what is wrong. */
static void open_errors(void) {
  char why[320];
  rlock_client *c = (rlock_client *)1;
  rlock_options_init(NULL); /* harmless */
  RT_CHECK_EQ_INT(rlock_client_open(&c, NULL), RLOCK_EINVAL);
  RT_CHECK(c == NULL);
  RT_CHECK(rlock_open_error(why, sizeof why) > 0);
  RT_CHECK(strstr(why, "options") != NULL);
  rlock_options o;
  rlock_options_init(&o);
  const char *m[] = {"127.0.0.1:7001", "redis://127.0.0.1:99999"};
  o.masters = m;
  o.nmasters = 2;
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_EINVAL);
  rlock_open_error(why, sizeof why);
  RT_CHECK(strstr(why, "masters[1]") != NULL);
  RT_CHECK(strstr(why, "99999") != NULL);
  RT_CHECK(strstr(why, "port") != NULL);
  m[1] = "127.0.0.1:7002";
  o.master_timeout_ms = 0;
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_EINVAL);
  rlock_open_error(why, sizeof why);
  RT_CHECK(strstr(why, "master_timeout_ms") != NULL);
  o.master_timeout_ms = 200;
  /* A cluster seed's name must resolve at open (a single server's that
   * does not is a master that is down: test_edges). */
  m[1] = "redis-cluster://no-such-host.invalid:7002";
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_ENOTFOUND);
  rlock_open_error(why, sizeof why);
  RT_CHECK(strstr(why, "no-such-host.invalid") != NULL);
  /* A short buffer is cut and still terminated; the length is the whole. */
  char small[8];
  size_t len = rlock_open_error(small, sizeof small);
  RT_CHECK(len > sizeof small - 1);
  RT_CHECK_EQ_INT(strlen(small), sizeof small - 1);
}

static void name_checks(void) {
  RT_CHECK(rl_name_check("orders:42") == 0);
  RT_CHECK(rl_name_check("") == RLOCK_EINVAL);
  RT_CHECK(rl_name_check(NULL) == RLOCK_EINVAL);
  RT_CHECK(rl_name_check("a{b") == RLOCK_EINVAL);
  RT_CHECK(rl_name_check("a}b") == RLOCK_EINVAL);
  char big[600];
  memset(big, 'x', sizeof big);
  big[512] = '\0';
  RT_CHECK(rl_name_check(big) == 0);
  big[512] = 'x';
  big[513] = '\0';
  RT_CHECK(rl_name_check(big) == RLOCK_EINVAL);
}

/* The key prefix rule, and the keys of a name: PREFIX{NAME}SUFFIX, found
 * again by suffix and type, with the suffixes the lock kinds use. */
static void key_layout(void) {
  RT_CHECK(rl_prefix_check("rlock:") == 0);
  RT_CHECK(rl_prefix_check("") == 0);
  RT_CHECK(rl_prefix_check(NULL) == RLOCK_EINVAL);
  RT_CHECK(rl_prefix_check("a{") == RLOCK_EINVAL);
  RT_CHECK(rl_prefix_check("a}") == RLOCK_EINVAL);
  char p[RL_PREFIX_MAX + 2];
  memset(p, 'p', sizeof p);
  p[RL_PREFIX_MAX] = '\0';
  RT_CHECK(rl_prefix_check(p) == 0);
  p[RL_PREFIX_MAX] = 'p';
  p[RL_PREFIX_MAX + 1] = '\0';
  RT_CHECK(rl_prefix_check(p) == RLOCK_EINVAL);

  char k[RL_KEY_MAX];
  RT_CHECK_EQ_INT(rl_key_of(k, sizeof k, "rl:", "a b", RL_KEY_LOCK), 8);
  RT_CHECK(strcmp(k, "rl:{a b}") == 0);
  RT_CHECK_EQ_INT(rl_key_of(k, sizeof k, "rl:", "n", RL_KEY_SEM_LEASES), 10);
  RT_CHECK(strcmp(k, "rl:{n}:s:t") == 0);
  RT_CHECK(rl_key_of(k, sizeof k, "r{", "n", RL_KEY_LOCK) == RLOCK_EINVAL);
  RT_CHECK(rl_key_of(k, sizeof k, "rl:", "", RL_KEY_LOCK) == RLOCK_EINVAL);
  RT_CHECK(rl_key_of(k, 7, "rl:", "ab", RL_KEY_LOCK) == RLOCK_EINVAL);
  RT_CHECK(rl_key_of(k, sizeof k, "rl:", "n", RL_KEY_COUNT) == RLOCK_EINVAL);
  for (int id = 0; id < RL_KEY_COUNT; id++) {
    int n = rl_key_of(k, sizeof k, "rl:", "n", id);
    RT_REQUIRE(n > 0);
    const rl_key_shape *sh = rl_key_shape_of(k, (size_t)n, NULL);
    RT_CHECK(sh == &rl_key_shapes[id]);
    if (sh->type != NULL)
      RT_CHECK(rl_key_shape_of(k, (size_t)n, "list") == NULL);
  }
  RT_CHECK(rl_key_shape_of("rl:run_ids", 10, NULL) == NULL);
  RT_CHECK(rl_key_shape_of("rl:{}", 5, NULL) == NULL);
  RT_CHECK(rl_key_shape_of("rl:{n}:x", 8, NULL) == NULL);
  /* Every key a lock kind's handle has is in the table, as its kind. */
  const rl_kind *kinds[] = {&rl_kind_lock, &rl_kind_fair, &rl_kind_read,
                            &rl_kind_write};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    for (int j = 0; j < kinds[i]->nkeys; j++) {
      int n = snprintf(k, sizeof k, "rl:{n}%s", kinds[i]->suffixes[j]);
      const rl_key_shape *sh = rl_key_shape_of(k, (size_t)n, NULL);
      RT_CHECK(sh != NULL);
      int rw = i >= 2;
      if (sh != NULL)
        RT_CHECK(strcmp(sh->kind, rw ? "read-write" : i == 1 && j >= 2
                                                          ? "fair"
                                                          : "lock") == 0);
    }
  }
}

static void sha1_vectors(void) {
  char hex[41];
  rl_sha1_hex("", 0, hex);
  RT_CHECK(strcmp(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709") == 0);
  rl_sha1_hex("abc", 3, hex);
  RT_CHECK(strcmp(hex, "a9993e364706816aba3e25717850c26c9cd0d89d") == 0);
  const char *s = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  rl_sha1_hex(s, strlen(s), hex);
  RT_CHECK(strcmp(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1") == 0);
  for (int i = 0; i < RL_SCRIPT_COUNT; i++)
    RT_CHECK(strlen(rl_script_sha((rl_script_id)i)) == 40);
  RT_CHECK(strcmp(rl_script_sha(RL_SCRIPT_ACQUIRE),
                  rl_script_sha(RL_SCRIPT_UNLOCK)) != 0);
}

static void holds_table(void) {
  static const char id[] = "0123456789abcdef0123456789abcdef";
  rl_holds t;
  RT_REQUIRE(rl_holds_init(&t, id) == 0);
  /* Records borrow their keys: these outlive the table. */
  static char keys[100][8];
  size_t klen[100];
  for (int i = 0; i < 100; i++)
    klen[i] = (size_t)snprintf(keys[i], sizeof keys[i], "k%d", i);
  char owner[RL_HOLDS_OWNER_MAX];
  for (int i = 0; i < 5000; i++) {
    /* Even i: thread owners; odd: async owners with the same numbers. */
    size_t ol = rl_owner_format(id, (uint64_t)(i / 2), i % 2 == 0, owner);
    rl_hold *h = rl_holds_add(&t, keys[i % 100], klen[i % 100], owner, ol);
    RT_REQUIRE(h != NULL);
    RT_CHECK_EQ_INT(h->owner_id, i / 2);
    RT_CHECK_EQ_INT(h->owner_is_thread, i % 2 == 0);
    h->count = i;
  }
  RT_CHECK_EQ_INT(t.count, 5000);
  /* 4242: thread 2121 on k42; 4243: async 2121 on k43. */
  char o[RL_HOLDS_OWNER_MAX];
  size_t ol = rl_owner_format(id, 2121, 1, o);
  RT_CHECK(strcmp(o, "0123456789abcdef0123456789abcdef:2121") == 0);
  rl_hold *h = rl_holds_find(&t, "k42", 3, o, ol);
  RT_REQUIRE(h != NULL);
  RT_CHECK_EQ_INT(h->count, 4242);
  RT_CHECK(rl_holds_find_id(&t, "k42", 3, 2121, 1) == h);
  /* The record writes back the field it was made from. */
  char back[RL_HOLDS_OWNER_MAX];
  RT_CHECK_EQ_INT(rl_holds_owner(&t, h, back), ol);
  RT_CHECK(strcmp(back, o) == 0);
  RT_CHECK(rl_holds_find(&t, "k43", 3, o, ol) == NULL);
  size_t al = rl_owner_format(id, 2121, 0, o);
  RT_CHECK(strcmp(o, "0123456789abcdef0123456789abcdef:a2121") == 0);
  RT_CHECK(rl_holds_find(&t, "k42", 3, o, al) == NULL); /* thread, not async */
  rl_hold *ha = rl_holds_find(&t, "k43", 3, o, al);
  RT_REQUIRE(ha != NULL);
  RT_CHECK_EQ_INT(ha->count, 4243);
  /* Fields of another form are nobody's here: another client's id, a
   * leading zero, a sign, no number, a number past 2^64. */
  static const char *bad[] = {
      "fedcba9876543210fedcba9876543210:2121",
      "0123456789abcdef0123456789abcdef:02121",
      "0123456789abcdef0123456789abcdef:+2121",
      "0123456789abcdef0123456789abcdef:a",
      "0123456789abcdef0123456789abcdef:",
      "0123456789abcdef0123456789abcdef:18446744073709551616",
      "0123456789abcdef0123456789abcdef2121",
      "o4242"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    RT_CHECK(rl_holds_find(&t, "k42", 3, bad[i], strlen(bad[i])) == NULL);
    RT_CHECK(rl_holds_add(&t, "k42", 3, bad[i], strlen(bad[i])) == NULL);
  }
  /* The largest number round-trips. */
  ol = rl_owner_format(id, UINT64_MAX, 0, o);
  rl_hold *hm = rl_holds_add(&t, "km", 2, o, ol);
  RT_REQUIRE(hm != NULL);
  RT_CHECK(hm->owner_id == UINT64_MAX && hm->owner_is_thread == 0);
  RT_CHECK(rl_holds_find(&t, "km", 2, o, ol) == hm);
  rl_holds_remove(&t, hm);
  /* A pinned record leaves the table at once and is freed by its last
   * unpin (a leak or a double free shows under ASan and valgrind). */
  rl_holds_pin(h);
  rl_holds_pin(h);
  rl_holds_remove(&t, h);
  RT_CHECK(h->removed == 1);
  RT_CHECK(rl_holds_find_id(&t, "k42", 3, 2121, 1) == NULL);
  RT_CHECK_EQ_INT(t.count, 4999);
  rl_holds_unpin(h);
  RT_CHECK(h->removed == 1 && h->pins == 1);
  rl_holds_unpin(h);
  /* Freeing the table leaves pinned records to their last unpin too. */
  rl_hold *hp = rl_holds_find_id(&t, "k43", 3, 2121, 0);
  RT_REQUIRE(hp != NULL);
  rl_holds_pin(hp);
  rl_holds_free(&t);
  RT_CHECK(hp->removed == 1);
  rl_holds_unpin(hp);
}

/* The record keeps no hash and packs its key length with its flags
 * (holds.h): a table of locks told apart only by their keys' bytes (one
 * owner, one key length, as in the watchdog benchmark) grows, loses half
 * its records in an order unlike their insertion, grows again and is
 * emptied, and every lookup on the way still finds exactly what is
 * there; the longest key a record takes keeps its length whole. */
static void holds_compact(void) {
  static const char id[] = "0123456789abcdef0123456789abcdef";
  enum { N = 20000 };
  rl_holds t;
  RT_REQUIRE(rl_holds_init(&t, id) == 0);
  static char keys[N][16];
  static rl_hold *hs[N];
  char owner[RL_HOLDS_OWNER_MAX];
  size_t ol = rl_owner_format(id, 1, 0, owner);
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "wdb-%06d", i);
    if (i == N / 2) RT_CHECK_EQ_INT(t.count, N / 2);
    hs[i] = rl_holds_add(&t, keys[i], 10, owner, ol);
    RT_REQUIRE(hs[i] != NULL);
    hs[i]->count = i;
    hs[i]->watchdog = 1;
    hs[i]->lost = i % 3 == 0;
  }
  RT_CHECK_EQ_INT(t.count, N);
  RT_CHECK(t.nbuckets >= N);
  /* Remove the odd ones, from the last down. */
  for (int i = N - 1; i >= 0; i--)
    if (i % 2 == 1) rl_holds_remove(&t, hs[i]);
  RT_CHECK_EQ_INT(t.count, N / 2);
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    rl_hold *h = rl_holds_find(&t, keys[i], 10, owner, ol);
    if (i % 2 == 1 ? h != NULL
                   : h != hs[i] || h->count != i || h->keylen != 10 ||
                         h->lost != (i % 3 == 0) || !h->watchdog ||
                         h->owner_is_thread)
      wrong++;
  }
  RT_CHECK_EQ_INT(wrong, 0);
  /* The odd ones again: the table takes them back where it looks. */
  for (int i = 1; i < N; i += 2) {
    hs[i] = rl_holds_add(&t, keys[i], 10, owner, ol);
    RT_REQUIRE(hs[i] != NULL);
    hs[i]->count = -i;
  }
  for (int i = 0; i < N; i++) {
    rl_hold *h = rl_holds_find_id(&t, keys[i], 10, 1, 0);
    if (h != hs[i] || h->count != (i % 2 ? -i : i)) wrong++;
  }
  RT_CHECK_EQ_INT(wrong, 0);
  /* Emptied from the middle outwards. */
  for (int d = 0; d < N / 2; d++) {
    rl_holds_remove(&t, hs[N / 2 + d]);
    rl_holds_remove(&t, hs[N / 2 - 1 - d]);
  }
  RT_CHECK_EQ_INT(t.count, 0);
  for (int i = 0; i < N; i++)
    if (rl_holds_find_id(&t, keys[i], 10, 1, 0) != NULL) wrong++;
  RT_CHECK_EQ_INT(wrong, 0);
  /* The longest key: its whole length, next to flags that are set. */
  static char longkey[RL_HOLDS_KEY_MAX + 1];
  memset(longkey, 'k', sizeof longkey);
  rl_hold *h = rl_holds_add(&t, longkey, RL_HOLDS_KEY_MAX, owner, ol);
  RT_REQUIRE(h != NULL);
  h->lost = h->watchdog = 1;
  RT_CHECK_EQ_INT(h->keylen, RL_HOLDS_KEY_MAX);
  RT_CHECK(rl_holds_find(&t, longkey, RL_HOLDS_KEY_MAX, owner, ol) == h);
  RT_CHECK(rl_holds_find(&t, longkey, RL_HOLDS_KEY_MAX - 1, owner, ol) ==
           NULL);
  RT_CHECK(rl_holds_add(&t, longkey, RL_HOLDS_KEY_MAX + 1, owner, ol) ==
           NULL);
  RT_CHECK_EQ_INT(t.count, 1);
  rl_holds_remove(&t, h);
  RT_CHECK_EQ_INT(t.count, 0);
  rl_holds_free(&t);
}

/* A handle is one allocation whose keys share their storage where one
 * key's name begins another's (lock.c), kept as 16-bit offsets: every
 * key, its length, the channel and the name still read as before, at the
 * longest name and prefix too, and a lock named like the watchdog
 * benchmark's fits in 104 bytes (one 112-byte malloc chunk). */
static int key_is(const rlock *l, int k, const char *want) {
  return rl_lock_keylenk(l, k) == strlen(want) &&
         memcmp(rl_lock_keyk(l, k), want, rl_lock_keylenk(l, k)) == 0;
}

static int chan_is(const rlock *l, const char *want) {
  return l->channellen == strlen(want) &&
         memcmp(rl_lock_channel(l), want, l->channellen) == 0 &&
         rl_lock_channel(l)[l->channellen] == '\0';
}

static void lost_noop(rlock *lock, uint64_t owner, int is_thread, void *arg) {
  (void)lock;
  (void)owner;
  (void)is_thread;
  (void)arg;
}

static void handle_layout(void) {
  rl_client c;
  memset(&c, 0, sizeof c);
  RT_REQUIRE(uv_mutex_init(&c.qmu) == 0); /* the lost-lock pair's */
  c.prefix = "p:";
  atomic_init(&c.refs, 2); /* never freed by the handles' unref */
  static const char *const lock_keys[] = {"", ":fence"};
  rlock *l = rl_lock_alloc(&c, "n", 2, lock_keys, 0, 1, 0);
  RT_REQUIRE(l != NULL);
  RT_CHECK(key_is(l, 0, "p:{n}") && key_is(l, 1, "p:{n}:fence"));
  RT_CHECK(rl_lock_keyk(l, 0) == rl_lock_keyk(l, 1)); /* one copy */
  RT_CHECK(rl_lock_key(l) == rl_lock_keyk(l, 0) && l->keylen == 5);
  RT_CHECK(rl_lock_fence(l) == rl_lock_keyk(l, 1) && rl_lock_fencelen(l) == 11);
  RT_CHECK(chan_is(l, "p:{n}:ch"));
  RT_CHECK(strcmp(rl_lock_text(l), "n") == 0);
  RT_CHECK_EQ_INT(atomic_load(&c.refs), 3);
  rl_lock_unref(l);
  RT_CHECK_EQ_INT(atomic_load(&c.refs), 2);
  /* The read-write lock's keys: ":w" inside ":w:fence" (the longest that
   * begins with it, not ":wq"), ":r" inside ":rc". */
  static const char *const rw_keys[] = {":w", ":r", ":rc", ":wq", ":w:fence"};
  l = rl_lock_alloc(&c, "name", 5, rw_keys, 1, 4, 1);
  RT_REQUIRE(l != NULL);
  RT_CHECK(key_is(l, 0, "p:{name}:w") && key_is(l, 1, "p:{name}:r") &&
           key_is(l, 2, "p:{name}:rc") && key_is(l, 3, "p:{name}:wq") &&
           key_is(l, 4, "p:{name}:w:fence"));
  RT_CHECK(rl_lock_keyk(l, 0) == rl_lock_keyk(l, 4) &&
           rl_lock_keyk(l, 1) == rl_lock_keyk(l, 2));
  RT_CHECK(rl_lock_keyk(l, 3) != rl_lock_keyk(l, 0));
  RT_CHECK(rl_lock_key(l) == rl_lock_keyk(l, 1) && l->keylen == 10 &&
           rl_lock_fence(l) == rl_lock_keyk(l, 4));
  RT_CHECK(chan_is(l, "p:{name}:r:ch"));
  RT_CHECK(strcmp(rl_lock_text(l), "name") == 0);
  rl_lock_unref(l);
  /* The longest prefix and name, with the read-write lock's keys: the
   * offsets and lengths, 16 bits each, still hold them. */
  char prefix[RL_PREFIX_MAX + 1], name[RL_NAME_MAX + 1], want[1024];
  memset(prefix, 'p', RL_PREFIX_MAX);
  prefix[RL_PREFIX_MAX] = '\0';
  memset(name, 'n', RL_NAME_MAX);
  name[RL_NAME_MAX] = '\0';
  RT_REQUIRE(rl_name_check(name) == 0);
  c.prefix = prefix;
  l = rl_lock_alloc(&c, name, 5, rw_keys, 1, 4, 1);
  RT_REQUIRE(l != NULL);
  for (int k = 0; k < 5; k++) {
    snprintf(want, sizeof want, "%s{%s}%s", prefix, name, rw_keys[k]);
    RT_CHECK(key_is(l, k, want));
  }
  snprintf(want, sizeof want, "%s{%s}:r:ch", prefix, name);
  RT_CHECK(chan_is(l, want));
  RT_CHECK(strcmp(rl_lock_text(l), name) == 0);
  rl_lock_unref(l);
  /* The benchmark's shape: prefix "rlock:", a ten-character name. */
  c.prefix = "rlock:";
  l = rl_lock_alloc(&c, "wdb-999999", 2, lock_keys, 0, 1, 0);
  RT_REQUIRE(l != NULL);
  RT_CHECK(key_is(l, 1, "rlock:{wdb-999999}:fence"));
  RT_CHECK(chan_is(l, "rlock:{wdb-999999}:ch"));
  RT_CHECK(strcmp(rl_lock_text(l), "wdb-999999") == 0);
  RT_CHECK(malloc_usable_size(l) <= 104);
  /* The lost-lock callback lives outside the handle, as one pair: the
   * last one set is the one read, and the one it replaced is freed at
   * once (set it a thousand times: a leak or a double free shows under
   * ASan and valgrind). */
  static int arg1, arg2;
  void *got = &arg1;
  RT_CHECK(rl_lock_lost(l, &got) == NULL && got == NULL);
  for (int i = 0; i < 1000; i++)
    RT_REQUIRE(rl_lock_set_lost(l, lost_noop, i % 2 ? &arg2 : &arg1) == 0);
  RT_CHECK(rl_lock_lost(l, &got) == lost_noop && got == &arg2);
  RT_REQUIRE(rl_lock_set_lost(l, NULL, NULL) == 0);
  RT_CHECK(rl_lock_lost(l, &got) == NULL && got == NULL && l->lost == NULL);
  RT_REQUIRE(rl_lock_set_lost(l, lost_noop, &arg1) == 0);
  rl_lock_unref(l); /* frees the pair set last */
  RT_CHECK_EQ_INT(atomic_load(&c.refs), 2);
  uv_mutex_destroy(&c.qmu);
}

/* rlock's RESP formatter writes exactly what hiredis's would. */
static void resp_matches_hiredis(void) {
  const char *argv[] = {"EVALSHA", "0123456789012345678901234567890123456789",
                        "2", "rlock:{x}", "", "1000000000", "a\r\nb"};
  size_t len[7];
  for (int i = 0; i < 7; i++) len[i] = strlen(argv[i]);
  for (int argc = 1; argc <= 7; argc++) {
    char *want = NULL;
    int wl = redisFormatCommandArgv(&want, argc, argv, len);
    RT_REQUIRE(wl > 0);
    char buf[512];
    size_t size = rl_resp_size(argc, argv, len);
    RT_CHECK_EQ_INT(size, wl);
    RT_CHECK_EQ_INT(rl_resp_write(buf, argc, argv, len), wl);
    RT_CHECK(memcmp(buf, want, (size_t)wl) == 0);
    redisFreeCommand(want);
  }
  char big[20000];
  memset(big, 'z', sizeof big);
  const char *bv[] = {big};
  size_t bl[] = {sizeof big};
  char *want = NULL;
  int wl = redisFormatCommandArgv(&want, 1, bv, bl);
  char *buf = malloc(rl_resp_size(1, bv, bl));
  RT_CHECK_EQ_INT(rl_resp_write(buf, 1, bv, bl), wl);
  RT_CHECK(memcmp(buf, want, (size_t)wl) == 0);
  free(buf);
  redisFreeCommand(want);
}

/* The decimal writer gives what printf would, at both ends of the
 * range. */
static void resp_decimals(void) {
  const int64_t si[] = {0, 1, -1, 9, 10, -10, 1700000000000000, INT64_MAX,
                        INT64_MIN};
  for (size_t i = 0; i < sizeof si / sizeof si[0]; i++) {
    char got[24], want[32];
    int wl = snprintf(want, sizeof want, "%" PRId64, si[i]);
    RT_CHECK_EQ_INT(rl_resp_put_i64(got, si[i]), wl);
    RT_CHECK(strcmp(got, want) == 0);
  }
  const uint64_t ui[] = {0, 7, 100, UINT64_MAX};
  for (size_t i = 0; i < sizeof ui / sizeof ui[0]; i++) {
    char got[24], want[32];
    int wl = snprintf(want, sizeof want, "%" PRIu64, ui[i]);
    RT_CHECK_EQ_INT(rl_resp_put_u64(got, ui[i]), wl);
    RT_CHECK(strcmp(got, want) == 0);
  }
}

/* Two replies are the same tree of types, values and strings. */
static int same_reply(const redisReply *a, const redisReply *b) {
  if (a->type != b->type || a->integer != b->integer || a->len != b->len ||
      a->elements != b->elements)
    return 0;
  if ((a->str == NULL) != (b->str == NULL)) return 0;
  if (a->str != NULL && memcmp(a->str, b->str, a->len + 1) != 0) return 0;
  for (size_t i = 0; i < a->elements; i++)
    if (!same_reply(a->element[i], b->element[i])) return 0;
  return 1;
}

/* rlock's reader (reply.c) builds what hiredis's default reader builds,
 * fed byte by byte, and frees a reply cut short (ASan and valgrind
 * runs of this test see any leak or bad free). */
static void reply_reader_matches_hiredis(void) {
  const char wire[] =
      "*5\r\n:1\r\n:-42\r\n$3\r\nabc\r\n$-1\r\n*3\r\n+OK\r\n"
      "-ERR no\r\n*0\r\n"
      "*-1\r\n"
      "$0\r\n\r\n";
  redisReader *mine = rl_reply_reader_new(), *theirs = redisReaderCreate();
  RT_REQUIRE(mine != NULL && theirs != NULL);
  RT_CHECK(redisReaderFeed(theirs, wire, sizeof wire - 1) == REDIS_OK);
  int replies = 0;
  for (size_t i = 0; i < sizeof wire - 1; i++) {
    RT_CHECK(redisReaderFeed(mine, wire + i, 1) == REDIS_OK);
    void *a = NULL, *b = NULL;
    RT_CHECK(redisReaderGetReply(mine, &a) == REDIS_OK);
    if (a == NULL) continue;
    RT_CHECK(redisReaderGetReply(theirs, &b) == REDIS_OK);
    RT_REQUIRE(b != NULL);
    RT_CHECK(same_reply(a, b));
    freeReplyObject(a);
    freeReplyObject(b);
    replies++;
  }
  RT_CHECK_EQ_INT(replies, 3);
  /* Half an array, then the reader is freed with it. */
  const char cut[] = "*3\r\n:1\r\n$5\r\nhel";
  RT_CHECK(redisReaderFeed(mine, cut, sizeof cut - 1) == REDIS_OK);
  void *none = NULL;
  RT_CHECK(redisReaderGetReply(mine, &none) == REDIS_OK);
  RT_CHECK(none == NULL);
  redisReaderFree(mine);
  redisReaderFree(theirs);
}

/* Every code the library returns has a name: the public table's codes,
 * 0, and the internal names, which are public codes by another name
 * (test/check_codes.py keeps any other negative constant out). */
#define RT_XX_CODE(name, code, text) RLOCK_##name,
static void error_names(void) {
  int codes[] = {RLOCK_OK, RLOCK_ERRNO_MAP(RT_XX_CODE)};
  size_t n = sizeof codes / sizeof codes[0];
  for (size_t i = 0; i < n; i++) {
    RT_CHECK(codes[i] <= 0);
    RT_CHECK(strcmp(rlock_strerror(codes[i]), "unknown error") != 0);
    for (size_t j = 0; j < i; j++) RT_CHECK(codes[i] != codes[j]);
  }
  RT_CHECK_EQ_INT(codes[n - 1], RLOCK_EPROTO); /* the last one appended */
  RT_CHECK_EQ_INT((int)n - 1, -RLOCK_EPROTO);  /* -1 .. -N, no gap */
  int internal[] = {RL_EBUSY, RL_CONN_EDOWN, RL_CONN_EREFUSED};
  for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++)
    RT_CHECK(strcmp(rlock_strerror(internal[i]), "unknown error") != 0);
  RT_CHECK(strcmp(rlock_strerror(12345), "unknown error") == 0);
  RT_CHECK(strcmp(rlock_strerror(RLOCK_EPROTO - 1), "unknown error") == 0);
}

/* A warning that may come once per lock at once is logged at most once a
 * second, and the line that is logged says how many were left out. */
static void log_rate(void) {
  rl_log_rate r = {0, 0};
  uint64_t skipped = 99;
  RT_CHECK_EQ_INT(rl_log_rate_pass(&r, 5000, &skipped), 1);
  RT_CHECK_EQ_INT(skipped, 0);
  RT_CHECK_EQ_INT(rl_log_rate_pass(&r, 5001, &skipped), 0);
  RT_CHECK_EQ_INT(rl_log_rate_pass(&r, 5999, &skipped), 0);
  RT_CHECK_EQ_INT(rl_log_rate_pass(&r, 6000, &skipped), 1);
  RT_CHECK_EQ_INT(skipped, 2);
  RT_CHECK_EQ_INT(rl_log_rate_pass(&r, 6001, &skipped), 0);
  RT_CHECK_EQ_INT(rl_log_rate_pass(&r, 9000, &skipped), 1);
  RT_CHECK_EQ_INT(skipped, 1);
}

/* The SCRIPT LOAD refusals that mean a master has no scripting at all,
 * told from those that refuse only this script or this user. */
static void no_scripting_texts(void) {
  static const char *none[] = {
      "ERR Could not find scripting engine 'lua'", /* Valkey 9, no Lua */
      "ERR unknown command 'SCRIPT', with args beginning with: 'LOAD' ",
      "ERR unknown command `SCRIPT`, with args beginning with: `LOAD`, ",
      "ERR unknown subcommand 'LOAD'. Try SCRIPT HELP.",
      "ERR Could not find Scripting Engine 'LUA'",
  };
  static const char *other[] = {
      "NOPERM User u has no permissions to run the 'script|load' command",
      "OOM command not allowed when used memory > 'maxmemory'.",
      "ERR Error compiling script (new function): user_script:1: ...",
      "ERR unknown command 'FOO', with args beginning with: ",
      "LOADING Redis is loading the dataset in memory",
      "",
  };
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
    RT_CHECK(rl_conn_no_scripting(none[i], strlen(none[i])) == 1);
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
    RT_CHECK(rl_conn_no_scripting(other[i], strlen(other[i])) == 0);
  RT_CHECK(rl_conn_no_scripting(NULL, 0) == 0);
  /* Only len bytes are read: the text need not be terminated. */
  RT_CHECK(rl_conn_no_scripting("ERR Could not find scripting", 20) == 0);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"no_scripting_texts", no_scripting_texts},
      {"url_forms", url_forms},         {"url_rejects", url_rejects},
      {"options_checks", options_checks}, {"name_checks", name_checks},
      {"key_layout", key_layout},       {"sha1_vectors", sha1_vectors},   {"holds_table", holds_table},
      {"holds_compact", holds_compact}, {"handle_layout", handle_layout},
      {"error_names", error_names},     {"open_errors", open_errors},
      {"resp_matches_hiredis", resp_matches_hiredis},
      {"resp_decimals", resp_decimals},
      {"reply_reader_matches_hiredis", reply_reader_matches_hiredis},
      {"log_rate", log_rate},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
