/*
 * Parsing of master addresses. A master is "host:port",
 * "redis://[:password@]host[:port][/db]" or "unix:///path". Parsing is
 * pure (no resolution, no allocation) so that it can be fuzzed and unit
 * tested; resolution of host names happens once, when a client opens.
 */
#ifndef RL_URL_H
#define RL_URL_H

enum { RL_URL_TCP = 1, RL_URL_UNIX = 2 };

#define RL_URL_HOST_MAX 256
#define RL_URL_PATH_MAX 108 /* sizeof(sun_path) on Linux */
#define RL_URL_PASS_MAX 256

typedef struct rl_url {
  int kind;
  char host[RL_URL_HOST_MAX]; /* without IPv6 brackets */
  int port;
  char path[RL_URL_PATH_MAX];
  char password[RL_URL_PASS_MAX]; /* "" for none */
  int has_password;
  int db; /* 0 when not given */
} rl_url;

/* Parses s into *out. Returns 0, or RLOCK_EINVAL with *out undefined. */
int rl_url_parse(const char *s, rl_url *out);
/* The same; on failure *why (when why is not NULL) is a static phrase
 * saying what is wrong with s. */
int rl_url_parse_why(const char *s, rl_url *out, const char **why);

#endif
