#!/usr/bin/env bash
# Installs the built library into a temporary prefix, builds
# test/contract.c outside the tree with `pkg-config --cflags --libs rlock`
# and runs it against a server of its own.
#   install_check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
# The server program as the harness takes it (rt_server_program), and its
# client: $RLOCK_TEST_SERVER (valkey-server: valkey-cli), else Redis.
server=${RLOCK_TEST_SERVER:-redis-server}
case "$server" in *-server) cli=${server%-server}-cli ;; *) cli=redis-cli ;; esac
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
DESTDIR="$tmp/root" meson install -C "$build" --no-rebuild --quiet >/dev/null
prefix=$(meson introspect "$build" --buildoptions | python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"][0])')
libdir=$(meson introspect "$build" --buildoptions | python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"][0])')
root="$tmp/root$prefix"
pcdir="$root/$libdir/pkgconfig"
[ -f "$pcdir/rlock.pc" ] || { echo "FAIL: installed_contract (no rlock.pc)"; exit 1; }
export PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/contract" "$src/test/contract.c" \
  $(pkg-config --cflags --libs rlock) -Wl,-rpath,"$root/$libdir"
# Only the public API is exported.
if nm -D --defined-only "$root/$libdir/librlock.so" | awk '{print $3}' | grep -v '^rlock_' | grep -q .; then
  echo "FAIL: installed_contract (non-rlock_ symbols exported)"; exit 1
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" --logfile "$tmp/redis.log" &
pid=$!
for _ in $(seq 100); do "$cli" -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
"$tmp/contract" "127.0.0.1:$port"
# The C++ wrappers, installed beside rlock.h: the C++ example built the
# same way, against the installed header and library only.
if command -v c++ >/dev/null; then
  [ -f "$root/include/rlock.hpp" ] || { echo "FAIL: installed_cpp (no rlock.hpp)"; exit 1; }
  c++ -std=c++17 -Wall -Wextra -Werror -o "$tmp/cpp_mutex" "$src/examples/cpp_mutex.cpp" \
    $(pkg-config --cflags --libs rlock) -Wl,-rpath,"$root/$libdir"
  "$tmp/cpp_mutex" "127.0.0.1:$port" >/dev/null
  echo "PASS: installed_cpp"
fi
