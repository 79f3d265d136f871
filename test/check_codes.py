#!/usr/bin/env python3
"""One result-code space: the public table's.

Every function of the library that returns an error code returns 0 or a
code of RLOCK_ERRNO_MAP (include/rlock.h); a number has one meaning. So:

  - the table's codes are negative, distinct, and numbered -1, -2, ...
    without a gap, each with a name and a text (rlock_strerror's);
  - no source of the library, the watchdog, pubsub or the tool defines a
    negative constant (a #define of a negative number, or an enum member
    set to one) of its own, except the values of a wire protocol and the
    sentinels listed in ALLOWED below, each with the reason;
  - an internal error name (RL_..._E...) is defined as a public code.

    check_codes.py SOURCE_ROOT

Prints "PASS: rule" or "FAIL: rule" per rule, the offenders on stderr,
and exits 1 on any failure.
"""
import os
import re
import sys

# Negative constants that are not result codes.
ALLOWED = {
    # What the Lua scripts answer, on the wire (lib/lua): a protocol, which
    # the engines decode into public codes.
    "RL_FAM_REPLY_LATE", "RL_FAM_REPLY_DEADLK", "RL_FAM_REPLY_MISMATCH",
    "RL_FAM_REPLY_BADARG", "RL_ACQUIRE_REPLY_LATE",
    # A refusal's holder_pttl in a round slot (lib/lock/kind.h): a reply
    # value, which the engine turns into RLOCK_EDEADLK.
    "RL_GRANT_DEADLK",
    # A command routed to no slot in particular (lib/topology/master.h).
    "RL_MCMD_ANY_SLOT",
}
FOLDERS = ["lib", "watchdog", "pubsub", "tools"]

TABLE = re.compile(r'XX\((\w+),\s*(-?\d+),\s*"')
NEG_DEFINE = re.compile(r'^\s*#\s*define\s+(\w+)\s+\(?\s*-\s*\d+\s*\)?\s*(?:/[*/].*)?$',
                        re.M)
ENUM = re.compile(r'\benum\b[^{;()]*\{([^}]*)\}', re.S)
NEG_MEMBER = re.compile(r'(\w+)\s*=\s*\(?\s*-\s*\d+')
ERR_NAME = re.compile(r'^\s*#\s*define\s+(RL_\w*_E[A-Z]+)\s+(.*?)\s*(?:/\*.*)?$',
                      re.M)
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def sources(root):
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(dirpath, f)


def main():
    root = sys.argv[1]
    status = 0

    def report(rule, bad):
        nonlocal status
        for b in bad:
            print(b, file=sys.stderr)
        print(("FAIL: " if bad else "PASS: ") + rule)
        status |= bool(bad)

    header = open(os.path.join(root, "include", "rlock.h")).read()
    table = TABLE.findall(header)
    bad = []
    names = [n for n, _ in table]
    codes = [int(c) for _, c in table]
    if not table:
        bad.append("include/rlock.h: no RLOCK_ERRNO_MAP entries found")
    if len(set(names)) != len(names):
        bad.append("include/rlock.h: a name appears twice in the table")
    if sorted(codes, reverse=True) != list(range(-1, -len(codes) - 1, -1)):
        bad.append("include/rlock.h: codes are not -1, -2, ... without a "
                   "gap or a repeat: %s" % codes)
    for n in names:
        if not re.search(r"\* RLOCK_%s\s" % n, header):
            bad.append("include/rlock.h: RLOCK_%s is not described" % n)
    report("public_table_distinct_dense_and_described", bad)

    bad = []
    aliases = []
    for path in sources(root):
        rel = os.path.relpath(path, root)
        text = open(path, errors="replace").read()
        code = COMMENT.sub(" ", text)
        found = [m.group(1) for m in NEG_DEFINE.finditer(code)]
        for body in ENUM.findall(code):
            found += NEG_MEMBER.findall(body)
        for name in found:
            if name not in ALLOWED:
                bad.append("%s: %s is a negative constant outside the "
                           "public table" % (rel, name))
        aliases += [(rel, m.group(1), m.group(2))
                    for m in ERR_NAME.finditer(text)]
    report("no_negative_constant_outside_the_public_table", bad)

    bad = []
    public = set("RLOCK_" + n for n in names)
    for rel, name, value in aliases:
        if value.strip("() ") not in public:
            bad.append("%s: %s is %s, not a public code" % (rel, name, value))
    report("internal_error_names_are_public_codes", bad)
    return status


if __name__ == "__main__":
    sys.exit(main())
