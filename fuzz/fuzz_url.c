/*
 * libFuzzer target: the master address parser and option checks. Any
 * input must be accepted or rejected with RLOCK_EINVAL, never crash, and an
 * accepted address must satisfy the parser's own invariants.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s == NULL) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  rl_url u;
  int rc = rl_url_parse(s, &u);
  if (rc == 0) {
    if (u.kind == RL_URL_TCP) {
      if (u.port < 1 || u.port > 65535 || u.host[0] == '\0') abort();
      if (strlen(u.host) >= sizeof u.host) abort();
      if (u.db < 0) abort();
    } else if (u.kind == RL_URL_UNIX) {
      if (u.path[0] != '/') abort();
    } else {
      abort();
    }
    if (u.has_password && u.password[0] == '\0') abort();
  } else if (rc != RLOCK_EINVAL) {
    abort();
  }
  rlock_options o;
  rlock_options_init(&o);
  const char *m[2] = {s, "127.0.0.1:6379"};
  o.masters = m;
  o.nmasters = 2;
  static rl_master_url urls[2], mu;
  int orc = rl_options_check(&o, urls);
  if (orc != 0 && orc != RLOCK_EINVAL) abort();
  /* The masters list takes every form of master the one parser takes. */
  int mrc = rl_master_url_parse(s, &mu, NULL);
  if (mrc == 0 && mu.kind == 0 && rc != 0) abort();
  if (mrc == 0 && mu.kind != 0 && (mu.topo.naddrs < 1 || rc == 0)) abort();
  if (orc == 0 && mrc != 0) abort();
  if (mrc != 0 && rc == 0) abort();
  (void)rl_name_check(s);
  free(s);
  return 0;
}
