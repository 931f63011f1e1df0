#!/usr/bin/env python3
"""Fails a test run that skipped a test not on the allowlist (tests/skip-allowlist.txt).

Usage: check-skips.py JUNIT_XML [ALLOWLIST]. Reads ctest's --output-junit file, prints every skipped test with its
reason (gtest's `Skipped` message or the test's last output line), and exits 1 if any of them matches no
allowlist entry. A skipped test is not a passed test: a machine without what a test needs must install it
(scripts/install-test-extras.sh) or the run says it did not test that.
"""
import re
import sys
import xml.etree.ElementTree as ET


def load_allowlist(path):
    entries = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            entries.append((re.compile(name), reason.strip()))
    return entries


def skip_reason(output):
    lines = (output or "").splitlines()
    for i, line in enumerate(lines):
        if line.endswith(": Skipped") and i + 1 < len(lines):
            return lines[i + 1].strip()
    meaningful = [l.strip() for l in lines if l.strip()]
    return meaningful[-1] if meaningful else "(no output)"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    allow = load_allowlist(sys.argv[2]) if len(sys.argv) > 2 else []
    root = ET.parse(sys.argv[1]).getroot()
    skipped, bad = 0, 0
    for case in root.iter("testcase"):
        if case.find("skipped") is None:
            continue
        skipped += 1
        name = case.get("name")
        reason = skip_reason(case.findtext("system-out"))
        allowed = next((why for rx, why in allow if rx.fullmatch(name)), None)
        if allowed is None:
            bad += 1
            print(f"SKIPPED, NOT ALLOWED: {name}: {reason}")
        else:
            print(f"skipped (allowed: {allowed}): {name}: {reason}")
    total = sum(1 for _ in root.iter("testcase"))
    print(f"{total} tests, {skipped} skipped, {bad} skipped without an allowlist entry")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
