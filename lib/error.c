/* Error names, as uv_strerror does for libuv: static, never NULL. */
#include "rlock.h"

const char *rlock_strerror(int err) {
  switch (err) {
    case RLOCK_OK: return "success";
    case RLOCK_ETIMEDOUT: return "lock held by another owner for the whole wait";
    case RLOCK_ENOTOWNER: return "caller does not hold the lock";
    case RLOCK_ENOQUORUM: return "a majority of masters could not be reached in time";
    case RLOCK_ELOST: return "the lock was lost (expired or taken away)";
    case RLOCK_EINVAL: return "invalid argument";
    case RLOCK_ENOMEM: return "out of memory";
    case RLOCK_ECLOSED: return "client is closed";
    case RLOCK_EREDIS: return "a master answered with an error reply";
    case RLOCK_EDEADLK: return "blocking call on the client's loop thread";
    case RLOCK_ELIMIT: return "no extensions left for this acquisition";
    case RLOCK_ECANCELED: return "the async acquisition was cancelled";
    default: return "unknown error";
  }
}
