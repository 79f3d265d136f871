/*
 * Parsing of master addresses. A master is one of:
 *
 *   host:port
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://[[user]:password@]host[:port][/db]        (TLS)
 *   unix://[[user]:password@]/path/to/socket[?db=N]
 *
 * A user and password may be percent-encoded (%40 for '@', %2C for ',',
 * which a comma-separated list of masters needs). Parsing is pure (no
 * resolution, no allocation) so that it can be fuzzed and unit tested;
 * resolution of host names happens once, when a client opens.
 */
#ifndef RL_URL_H
#define RL_URL_H

enum { RL_URL_TCP = 1, RL_URL_UNIX = 2 };

#define RL_URL_HOST_MAX 256
#define RL_URL_PATH_MAX 108 /* sizeof(sun_path) on Linux */
#define RL_URL_PASS_MAX 256
#define RL_URL_USER_MAX 256

typedef struct rl_url {
  int kind;
  int tls;                    /* rediss:// */
  char host[RL_URL_HOST_MAX]; /* without IPv6 brackets; numeric once
                                 resolved */
  char name[RL_URL_HOST_MAX]; /* the host as written: the name a TLS
                                 certificate must carry */
  int port;
  char path[RL_URL_PATH_MAX];
  char user[RL_URL_USER_MAX];     /* "" for none (AUTH password) */
  int has_user;
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
