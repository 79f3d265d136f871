/* Reply objects made with malloc; see reply.h. */
#include "reply.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A zeroed reply of the task's type, linked into its parent array as
 * hiredis links its own. */
static redisReply *reply_new(const redisReadTask *task) {
  redisReply *r = rl_zalloc(sizeof *r);
  if (r == NULL) return NULL;
  r->type = task->type;
  if (task->parent != NULL) {
    redisReply *parent = task->parent->obj;
    parent->element[task->idx] = r;
  }
  return r;
}

static void *create_string(const redisReadTask *task, char *str,
                           size_t len) {
  char *copy = malloc(len + 1);
  if (copy == NULL) return NULL;
  redisReply *r = reply_new(task);
  if (r == NULL) {
    free(copy);
    return NULL;
  }
  memcpy(copy, str, len);
  copy[len] = '\0';
  r->str = copy;
  r->len = len;
  return r;
}

static void *create_array(const redisReadTask *task, int elements) {
  redisReply **element = NULL;
  if (elements > 0) {
    /* Zeroed: a reply cut short is freed with the elements it has. */
    element = rl_zalloc((size_t)elements * sizeof *element);
    if (element == NULL) return NULL;
  }
  redisReply *r = reply_new(task);
  if (r == NULL) {
    free(element);
    return NULL;
  }
  r->element = element;
  r->elements = elements > 0 ? (size_t)elements : 0;
  return r;
}

static void *create_integer(const redisReadTask *task, long long value) {
  redisReply *r = reply_new(task);
  if (r != NULL) r->integer = value;
  return r;
}

/* A nil bulk string's or array's task has the type STRING or ARRAY: the
 * reply is NIL all the same, as hiredis makes it. */
static void *create_nil(const redisReadTask *task) {
  redisReply *r = reply_new(task);
  if (r != NULL) r->type = REDIS_REPLY_NIL;
  return r;
}

static redisReplyObjectFunctions reply_functions = {
    create_string, create_array, create_integer, create_nil, freeReplyObject};

redisReader *rl_reply_reader_new(void) {
  return redisReaderCreateWithFunctions(&reply_functions);
}
