#!/usr/bin/env python3
"""Prints fstests' results of several configurations side by side and
decides (tests/fstests/run): the first configuration is the reference
if it is tmpfs; a test it passes must pass on every other one, unless the
expected file lists that test and configuration with a reason.  Without
tmpfs (make test's subset, chosen among tests tmpfs passes) every test
must pass on every configuration, with the same exception.  Ends with
"N passed, N failed", counting each test once per compared configuration."""
import argparse
import os
import sys
import xml.etree.ElementTree as ET


def results(path):
    """{test: (status, message)} from fstests' xunit report, status one of
    pass, fail, notrun; {} if there is no report."""
    out = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return out
    for case in root.iter('testcase'):
        name = case.get('name')
        status, msg = 'pass', ''
        for child in case:
            if child.tag == 'failure':
                status, msg = 'fail', child.get('message', '')
            elif child.tag == 'skipped':
                status, msg = 'notrun', child.get('message', '')
        out[name] = (status, msg)
    return out


def expected(path):
    """{(test, config): reason} from lines "TEST CONFIG[,CONFIG] REASON"."""
    exp = {}
    if not os.path.exists(path):
        return exp
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            test, cfgs, reason = (line.split(None, 2) + ['', ''])[:3]
            for cfg in cfgs.split(','):
                exp[(test, cfg)] = reason
    return exp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--expected', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('configs', nargs='+')
    a = ap.parse_args()
    res = {c: results(os.path.join(a.out, c, 'result.xml')) for c in a.configs}
    exp = expected(a.expected)
    tests = sorted(set().union(*[set(r) for r in res.values()]))
    ref = a.configs[0] if a.configs[0] == 'tmpfs' else None
    compared = a.configs[1:] if ref else a.configs
    width = max([len(c) for c in a.configs] + [7])
    print('%-16s' % 'test' + ''.join('%-*s' % (width + 2, c) for c in a.configs))
    passed = failed = 0
    notes = []
    for t in tests:
        cells = []
        for c in a.configs:
            st = res[c].get(t, ('-', ''))[0]
            cells.append('%-*s' % (width + 2, st))
        print('%-16s' % t + ''.join(cells))
        ref_st = res[ref].get(t, ('-', ''))[0] if ref else 'pass'
        for c in compared:
            st, msg = res[c].get(t, ('-', ''))
            if ref_st != 'pass' or st == 'pass':
                passed += 1
                continue
            if (t, c) in exp:
                passed += 1
                notes.append('documented %s on %s: %s (%s)' % (t, c, st, exp[(t, c)]))
            else:
                failed += 1
                notes.append('FAILED %s on %s: %s where %s passes%s'
                             % (t, c, st, ref or 'it must', ': ' + msg if msg else ''))
    print()
    for c in a.configs:
        sts = [s for s, _ in res[c].values()]
        print('%-12s passed %4d  failed %4d  not run %4d' % (
            c, sts.count('pass'), sts.count('fail'), sts.count('notrun')))
    for n in notes:
        print(n)
    for c in a.configs:
        if not res[c]:
            print('FAILED no results for %s' % c)
            failed += 1
    print('%d passed, %d failed' % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
