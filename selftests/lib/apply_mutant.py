#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plant one mutant: the mutation scripts' exact text replacement.

usage: MUT_LINE=LINE apply_mutant.py FILE FIELD

LINE is one line of a mutation table (selftests/kmod/mutants.sh,
selftests/shim/torture_mutants.sh): fields separated by '|', in which a
literal '|' is written '\\|', '&' may be written '\\&', and '\\n' and '\\t'
stand for a newline and a tab.  Field FIELD (counted from 0) is the text
to replace, the next field its replacement.  FILE is rewritten only if the
text occurs in it exactly once; otherwise the exit status is 1.
"""
import os
import re
import sys


def unescape(text):
    return (text.replace('\\|', '|').replace('\\&', '&')
            .replace('\\n', '\n').replace('\\t', '\t'))


def main():
    path, field = sys.argv[1], int(sys.argv[2])
    fields = re.split(r'(?<!\\)\|', os.environ['MUT_LINE'])
    old, new = unescape(fields[field]), unescape(fields[field + 1])
    with open(path) as f:
        src = f.read()
    if src.count(old) != 1:
        sys.exit(1)
    with open(path, 'w') as f:
        f.write(src.replace(old, new))


main()
