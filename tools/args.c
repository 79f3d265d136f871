/*
 * The command line every subcommand shares: the loop that reads its
 * options (rt_parse_options), the options all of them take (masters, key
 * prefix, TLS from the command line or the environment) and those of the
 * read-only ones (--json, --timeout), and the number and seconds values.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

int rt_parse_ll(const char *s, long long lo, long long hi, long long *out) {
  char *end;
  if (s == NULL || *s == '\0') return -1;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int rt_parse_seconds(const char *s, long long *ms) {
  char *end;
  if (s == NULL || *s == '\0' || *s == '-' || *s == '+') return -1;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0 || v > 1e9)
    return -1;
  *ms = llround(v * 1000.0);
  return 0;
}

int rt_set_masters(rt_global *g, const char *list) {
  char *buf = strdup(list);
  if (buf == NULL) return -1;
  size_t n = 1;
  for (const char *p = list; *p; p++) n += *p == ',';
  const char **m = calloc(n, sizeof *m);
  if (m == NULL) {
    free(buf);
    return -1;
  }
  size_t i = 0;
  char *save = buf;
  for (;;) {
    char *comma = strchr(save, ',');
    if (comma) *comma = '\0';
    if (*save == '\0') {
      free(m);
      free(buf);
      return -1;
    }
    m[i++] = save;
    if (!comma) break;
    save = comma + 1;
  }
  rt_global_free(g);
  g->masters = m;
  g->nmasters = i;
  g->masters_buf = buf;
  return 0;
}

void rt_global_free(rt_global *g) {
  free(g->masters);
  free(g->masters_buf);
  g->masters = NULL;
  g->masters_buf = NULL;
  g->nmasters = 0;
}

int rt_tls_option(rt_global *g, int opt, const char *arg) {
  switch (opt) {
    case RT_OPT_CACERT: g->cacert = arg; return 1;
    case RT_OPT_CACERTDIR: g->cacertdir = arg; return 1;
    case RT_OPT_CERT: g->cert = arg; return 1;
    case RT_OPT_KEY: g->key = arg; return 1;
    case RT_OPT_SNI: g->sni = arg; return 1;
    case RT_OPT_INSECURE: g->insecure = 1; return 1;
    default: return 0;
  }
}

int rt_global_option(rt_global *g, int opt, const char *arg) {
  switch (opt) {
    case RT_OPT_MASTERS:
      return rt_set_masters(g, arg) == 0 ? RT_TAKE_OK : RT_TAKE_BAD;
    case RT_OPT_PREFIX: g->prefix = arg; return RT_TAKE_OK;
    default: return rt_tls_option(g, opt, arg) ? RT_TAKE_OK : RT_TAKE_NOT_MINE;
  }
}

int rt_read_option(rt_global *g, const char *who, int opt, rt_read_args *ra) {
  switch (opt) {
    case RT_OPT_JSON: ra->json = 1; return RT_TAKE_OK;
    case RT_OPT_TIMEOUT:
      if (rt_parse_ll(optarg, 1, 600000, &ra->timeout_ms) == 0)
        return RT_TAKE_OK;
      fprintf(stderr, "%s: bad --timeout '%s'\n", who, optarg);
      return RT_TAKE_BAD;
    case RT_OPT_MASTERS:
      if (rt_set_masters(g, optarg) == 0) return RT_TAKE_OK;
      fprintf(stderr, "%s: bad --masters '%s'\n", who, optarg);
      return RT_TAKE_BAD;
    default: return rt_global_option(g, opt, optarg);
  }
}

int rt_parse_options(rt_global *g, int argc, char **argv,
                     const rt_cmdline *cl) {
  int c, li;
  optind = 0; /* 0: glibc reinitializes, dropping an earlier "+" mode */
  while ((li = -1, c = getopt_long(argc, argv, cl->shortopts, cl->longopts,
                                   &li)) != -1) {
    if (c == 'h') {
      fputs(cl->usage, stdout);
      return RT_EXIT_OK;
    }
    switch (cl->take(g, c, li >= 0 ? cl->longopts[li].name : NULL, cl->arg)) {
    case RT_TAKE_OK: break;
    case RT_TAKE_DONE: return RT_EXIT_OK;
    case RT_TAKE_BAD: return RT_EXIT_USAGE;
    default: fputs(cl->usage, stderr); return RT_EXIT_USAGE;
    }
  }
  if (argc - optind < cl->min_operands || argc - optind > cl->max_operands) {
    fputs(cl->usage, stderr);
    return RT_EXIT_USAGE;
  }
  return -1;
}

void rt_tls_from_env(rt_global *g) {
  const char *e;
  if ((e = getenv("RLOCK_CACERT")) && *e) g->cacert = e;
  if ((e = getenv("RLOCK_CACERTDIR")) && *e) g->cacertdir = e;
  if ((e = getenv("RLOCK_CERT")) && *e) g->cert = e;
  if ((e = getenv("RLOCK_KEY")) && *e) g->key = e;
  if ((e = getenv("RLOCK_SNI")) && *e) g->sni = e;
  if ((e = getenv("RLOCK_INSECURE")) && strcmp(e, "1") == 0) g->insecure = 1;
}
