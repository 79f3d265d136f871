/*
 * Formatting commands in the Redis protocol (RESP). The loop thread formats
 * one command per round; hiredis's formatter grows an sds string and calls
 * snprintf for every argument's length, which a profile showed to be most
 * of the loop's work per operation. The arguments are known and short, so
 * one pass with precomputed lengths does it.
 */
#ifndef RL_RESP_H
#define RL_RESP_H

#include <stddef.h>
#include <stdint.h>

/* The size of argv formatted as a RESP array of bulk strings. */
size_t rl_resp_size(int argc, const char **argv, const size_t *argvlen);

/* Writes it to buf (rl_resp_size bytes) and returns that size. */
size_t rl_resp_write(char *buf, int argc, const char **argv,
                     const size_t *argvlen);

/* The same with an array header that counts extra more elements, written
 * after these by someone else (the connection appends an acquire's
 * deadline as it writes it: rl_conn_send_clocked). At most rl_resp_size
 * + 1 bytes, for extra < 10 * argc. */
size_t rl_resp_write_head(char *buf, int extra, int argc, const char **argv,
                          const size_t *argvlen);

/* Writes s (len bytes) to buf as one bulk string ("$<len>\r\n", s,
 * "\r\n"), with no NUL, and returns its size: len plus at most 25. */
size_t rl_resp_put_bulk(char *buf, const char *s, size_t len);

/* Writes v in decimal to buf, then a NUL, and returns the digits' count
 * (at most 20, 21 with a sign). The numbers in a command (a lease, a
 * token, a deadline) used to be formatted by snprintf, at about a
 * thousand instructions each: a fifth of the client's instructions per
 * lock+unlock pair with five masters (callgrind, bench_latency). */
size_t rl_resp_put_u64(char *buf, uint64_t v);
size_t rl_resp_put_i64(char *buf, int64_t v);

#endif
