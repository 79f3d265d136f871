#!/bin/sh
# Layering check (docs/architecture.md, "Layers"): the mechanism folders,
# watchdog/ and pubsub/, sit below the lock layer and call it only through
# callbacks they are given. So:
#
# - no file in them reaches a lock-layer header, directly or through
#   another header of the tree (the connection layer's headers, conn.h,
#   list.h, url.h and the like, are below them and allowed);
# - watchdog/ knows nothing of Redis either: its files include only
#   headers of their own folder, the public rlock.h (for its result codes,
#   the one code space of the library) and libuv's; its library is built
#   without lib/ on the include path, and test_watchdog_unit links it with
#   a bare loop.
#
#   check_layers.sh SOURCE_ROOT FOLDER
#
# Prints one "PASS:" or "FAIL:" line per rule (the runner's format) and
# each offending include chain, and exits 1 on any failure.
set -u
root=$1
folder=$2
forbidden="lock.h client.h holds.h ops.h round.h quarantine.h options.h wait.h pubsub.h"
dirs="$root/$folder $(echo "$root"/lib/*/) $root/watchdog $root/pubsub $root/include"

# Finds a quoted include's file in the tree, as the build's include path
# would (the includer's folder first).
find_header() {
  [ -f "$1/$2" ] && { echo "$1/$2"; return; }
  for d in $dirs; do
    [ -f "$d/$2" ] && { echo "$d/$2"; return; }
  done
}

includes() {
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
}

status=0
seen=""
# Walks the quoted includes of $1; $2 is the chain so far.
walk() {
  case " $seen " in *" $1 "*) return ;; esac
  seen="$seen $1"
  for inc in $(includes "$1"); do
    name=${inc##*/}
    for f in $forbidden; do
      if [ "$name" = "$f" ]; then
        echo "$2 -> $inc" >&2
        status=1
      fi
    done
    h=$(find_header "$(dirname "$1")" "$inc")
    [ -n "$h" ] && walk "$h" "$2 -> $inc"
  done
}

for file in "$root/$folder"/*.c "$root/$folder"/*.h; do
  [ -f "$file" ] || continue
  seen=""
  walk "$file" "$folder/${file##*/}"
done
if [ $status -eq 0 ]; then
  echo "PASS: ${folder}_reaches_no_lock_layer_header"
else
  echo "FAIL: ${folder}_reaches_no_lock_layer_header (the chains above)"
fi

if [ "$folder" = watchdog ]; then
  own=0
  for file in "$root/$folder"/*.c "$root/$folder"/*.h; do
    for inc in $(includes "$file"); do
      if [ ! -f "$root/$folder/$inc" ] && [ "$inc" != rlock.h ]; then
        echo "$folder/${file##*/} includes \"$inc\", not in $folder/ nor" \
          "the public rlock.h" >&2
        own=1
      fi
    done
  done
  if [ $own -eq 0 ]; then
    echo "PASS: watchdog_includes_only_its_own_headers_and_rlock_h"
  else
    echo "FAIL: watchdog_includes_only_its_own_headers_and_rlock_h (see stderr)"
    status=1
  fi
fi
exit $status
