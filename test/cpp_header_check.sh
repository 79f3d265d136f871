#!/bin/sh
# Compiles include/rlock.hpp (through cpp_header.cpp, which instantiates
# every template member) with one C++ compiler at its strictest, and says
# so as a test case, as the other checks do:
#   cpp_header_check.sh CXX ARGS...
cxx=$1
shift
if "$cxx" "$@"; then
  echo "PASS: rlock_hpp_compiles_with_$(basename "$cxx")"
  echo "1 passed, 0 failed"
else
  echo "FAIL: rlock_hpp_compiles_with_$(basename "$cxx")"
  echo "0 passed, 1 failed"
  exit 1
fi
