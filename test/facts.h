/*
 * Helpers for the programs that check test/TOPOLOGY-FACTS.md against real
 * servers (test_cluster_facts.c, test_sentinel_facts.c): each fact there
 * is a check here, and each command a check depends on is printed with
 * the server's reply, so the test log is the evidence the facts file
 * quotes, and a server that behaves otherwise fails the test.
 */
#ifndef RT_FACTS_H
#define RT_FACTS_H

#include "harness.h"

/* A reply as redis-cli would show it on one line: "text", 12, nil,
 * (error) text, +status, [a, b]; at most cap bytes with the NUL. Returns
 * buf. */
char *rt_show(const redisReply *rep, char *buf, size_t cap);

/* Prints "  | PORT> command => reply" to stderr and returns rep; the
 * command is shown by formatting fmt with printf, so use %s and %d only. */
redisReply *rt_obs(int port, redisReply *rep, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A command through the harness's cached connection to a server, shown. */
#define RT_OBS(r, ...) rt_obs((r)->port, rt_redis_cmd((r), __VA_ARGS__), __VA_ARGS__)
/* A command on a connection of the test's own, shown. */
#define RT_OBSC(ctx, ...) rt_obs(rt_ctx_port(ctx), redisCommand((ctx), __VA_ARGS__), __VA_ARGS__)

/* Prints "  | " and a line of commentary to stderr. */
void rt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A connection of the test's own to a server (authenticated if it has a
 * password), with 2 s timeouts, or NULL. */
redisContext *rt_connect(const rt_redis *r);
/* The port a connection is to (from its TCP peer), for rt_obs. */
int rt_ctx_port(redisContext *c);
/* The next reply or push on a connection within ms, or NULL on timeout
 * (the connection stays usable) or on EOF or error (c->err is then set).
 * For subscribers, whose messages come unasked. */
redisReply *rt_next_reply(redisContext *c, int ms);

/* Whether a reply is an array of n elements; an error/status/string with
 * this text. The _free forms free the reply. */
int rt_is_array(const redisReply *rep, size_t n);
int rt_is_text(const redisReply *rep, int type, const char *text);
int rt_is_text_free(redisReply *rep, int type, const char *text);
/* Whether an error reply starts with prefix; frees the reply. */
int rt_err_starts_free(redisReply *rep, const char *prefix);

#endif /* RT_FACTS_H */
