#!/bin/sh
# Mechanisms below the lock layer call upward only through callbacks they
# are given: no file under watchdog/ includes a header of lib/ (lock.h,
# client.h or any other), only its own and libuv's. Run by meson as the
# 'layering' test; $1 is the source root.
set -eu
root="$1"
bad=0
for f in "$root"/watchdog/*.c "$root"/watchdog/*.h; do
  for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
    if [ ! -f "$root/watchdog/$inc" ]; then
      echo "layering: $f includes \"$inc\", which is not in watchdog/" >&2
      bad=1
    fi
  done
done
[ "$bad" -eq 0 ] && echo "layering: watchdog/ includes only its own headers"
exit "$bad"
