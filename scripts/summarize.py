#!/usr/bin/env python3
"""Counts test cases in a meson testlog.json.

Every test program prints one "PASS: name" or "FAIL: name (...)" line per
case. A program that failed (crash, sanitizer report, leak, timeout)
without printing a FAIL line counts as one failed case of its own, so a
crash is never hidden. A program that skipped (exit status 77, after a
"SKIP: name (why)" line: say the network faults of netfault without
root) counts as neither: it is listed on stderr and counted as skipped.
Prints "N passed, N failed" (and ", N skipped" when some were) and exits
1 on any failure.
"""
import json
import sys


def main(path):
    passed = failed = skipped = 0
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            t = json.loads(line)
            out = t.get("stdout") or ""
            p = sum(1 for l in out.splitlines() if l.startswith("PASS: "))
            fl = [l for l in out.splitlines() if l.startswith("FAIL: ")]
            passed += p
            failed += len(fl)
            for l in fl:
                print(f"  {t['name']}: {l}", file=sys.stderr)
            if t.get("result") == "SKIP":
                skipped += 1
                why = [l for l in out.splitlines() if l.startswith("SKIP: ")]
                print(f"  {t['name']}: skipped: "
                      f"{why[0][6:] if why else 'no reason printed'}",
                      file=sys.stderr)
                continue
            if t.get("result") not in ("OK", "EXPECTEDFAIL") and not fl:
                failed += 1
                print(f"  {t['name']}: program failed ({t.get('result')}) "
                      f"after {p} passing cases", file=sys.stderr)
            if p == 0 and not fl and t.get("result") == "OK":
                # A program that ran no case is a defect, not a pass.
                failed += 1
                print(f"  {t['name']}: ran no test case", file=sys.stderr)
    print(f"{passed} passed, {failed} failed"
          + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
