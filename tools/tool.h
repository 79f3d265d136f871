/*
 * Shared declarations of the rlock command-line tool (tools/rlock.c and
 * tools/inspect.c): the exit codes every subcommand documents, the global
 * options (masters, key prefix), and the read-only inspection commands.
 * The tool uses only the public API in rlock.h to take and release locks,
 * and hiredis directly, read-only, to look at what is in Redis.
 */
#ifndef RLOCK_TOOL_H
#define RLOCK_TOOL_H

#include <stddef.h>
#include <stdio.h>

/* Exit codes; tools/rlock.1 documents them. */
#define RT_EXIT_OK 0
#define RT_EXIT_CONFLICT 1 /* default of -E: the lock could not be had */
#define RT_EXIT_FOUND 1    /* scan: a leak or a long lease was found */
#define RT_EXIT_NOMASTER 2 /* status, scan: a master could not be read */
#define RT_EXIT_USAGE 64   /* EX_USAGE: bad command line */
#define RT_EXIT_OSERR 71   /* EX_OSERR: fork, pipe or memory failure */
#define RT_EXIT_LOST 75    /* EX_TEMPFAIL: the lock was lost under the child */

#define RT_DEFAULT_MASTERS "redis://127.0.0.1:6379"
#define RT_DEFAULT_PREFIX "rlock:"

/* Options every subcommand accepts. */
typedef struct rt_global {
  const char **masters; /* split from the comma-separated list */
  size_t nmasters;
  char *masters_buf;    /* owns the strings masters points into */
  const char *prefix;
} rt_global;

/*
 * Splits a comma-separated master list into g (replacing any earlier
 * one). Returns 0, or -1 if the list is empty or has an empty element.
 */
int rt_set_masters(rt_global *g, const char *list);
void rt_global_free(rt_global *g);

/* The subcommands that only read Redis, in tools/inspect.c. argv[0] is
 * the subcommand's name. */
int rt_cmd_status(rt_global *g, int argc, char **argv);
int rt_cmd_scan(rt_global *g, int argc, char **argv);

/* Parses a non-negative decimal number of seconds (fractions allowed)
 * into milliseconds. Returns 0, or -1 if s is not such a number. */
int rt_parse_seconds(const char *s, long long *ms);
/* Parses a decimal integer in [lo, hi]. Returns 0 or -1. */
int rt_parse_ll(const char *s, long long lo, long long hi, long long *out);

#endif
