#!/usr/bin/env python3
"""Prints fstests' results of several configurations side by side and
decides (tests/fstests/run): the first configuration is the reference
if it is tmpfs or tmpfs-huge; a test it passes must pass on every other
one, unless the expected file lists that test and configuration with a
reason (what it lists for morselfs holds for morselfs-huge too).  Without
tmpfs (make test's subset, chosen among tests tmpfs passes) every test
must pass on every configuration, with the same exception.  Ends with
"N passed, N failed", counting each test once per compared configuration.
Several --out directories (the parts of a group run in parts) are read as
one run; --only restricts the table to named tests (a group's part of a
larger one's results)."""
import argparse
import os
import sys
import re

# A test's line in check's output: its name, then what check prints of it.
TEST_LINE = re.compile(r'^((?:generic|shared|tmpfs|morselfs)/[0-9]+)(\s.*)?$')
# What check prints when a test fails (and nothing else prints).
FAILURE = re.compile(r'\[failed, exit status|- output mismatch|_check_[a-z_]+:|'
                     r'\[dumped core\]|no qualified output')
SUMMARY = ('Ran:', 'Not run:', 'Failures:')


def results(out, cfg):
    """{test: (status, message)} of one configuration: its check's output
    (OUT/CFG.log) and, after a parallel run, that of the tests it ran
    alone afterwards (OUT/CFG.alone.log; tests/fstests/alone)."""
    res = {}
    for log in (cfg + '.log', cfg + '.alone.log'):
        res.update(results_of(out, cfg, log))
    return res


def results_of(out, cfg, log):
    """{test: (status, message)}, status one of pass, fail, notrun, from
    check's output (tests/fstests/run keeps it as OUT/LOG; fstests'
    xunit report is not asked for: check writes it again before every
    test, 13 s each under the normal kernel).  The lines check ends with
    ("Ran:", "Not run:", "Failures:") decide; a run cut short has none,
    and then a test check started and did not finish has failed.  A
    failure's message is its first line saying why, a test not run's the
    reason fstests wrote (OUT/CFG/generic/N.notrun).  A test
    tests/fstests/run cut at its --limit (OUT/LOG.cut) is "cut"."""
    try:
        with open(os.path.join(out, log), errors='replace') as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    out_ = {}
    summary = {}
    cur = None
    for line in lines:
        m = TEST_LINE.match(line)
        if m:
            cur = m.group(1)
            rest = (m.group(2) or '').strip()
            if '[expunged]' in rest:
                # Left out (check -E, tests/fstests/too-slow): shown as "-".
                cur = None
                continue
            if '[not run]' in rest:
                out_[cur] = ('notrun', rest.split('[not run]', 1)[1].strip())
            elif FAILURE.search(rest):
                out_[cur] = ('fail', rest)
            elif re.search(r'[0-9]+s$', rest):
                out_[cur] = ('pass', '')
            else:
                out_[cur] = ('fail', 'did not finish')
            continue
        key = next((k for k in SUMMARY if line.startswith(k)), None)
        if key:
            summary[key] = set(line[len(key):].split())
            cur = None
        elif cur and out_[cur][0] != 'notrun' and FAILURE.search(line):
            if out_[cur][0] != 'fail' or out_[cur][1] == 'did not finish':
                out_[cur] = ('fail', line.strip())
    if 'Ran:' in summary:
        for t in summary['Ran:']:
            st, msg = out_.get(t, ('pass', ''))
            if t in summary.get('Not run:', ()):
                if st != 'notrun':
                    st, msg = 'notrun', ''
                path = os.path.join(out, cfg, t + '.notrun')
                if os.path.exists(path):
                    with open(path, errors='replace') as f:
                        msg = f.read().strip()
            elif t in summary.get('Failures:', ()):
                if st != 'fail':
                    st, msg = 'fail', msg or 'failed'
            else:
                st, msg = 'pass', ''
            out_[t] = (st, msg)
    # Tests tests/fstests/run cut at its --limit: "TEST SECONDS" a line.
    try:
        with open(os.path.join(out, log + '.cut')) as f:
            for line in f:
                w = line.split()
                if len(w) == 2:
                    out_[w[0]] = ('cut', 'cut after %s s (--limit)' % w[1])
    except OSError:
        pass
    return out_


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


def base(cfg):
    """A huge=always configuration's base (tests/fstests/run): the same
    design, so the same expected differences."""
    return cfg.removesuffix('-huge')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--expected', required=True)
    ap.add_argument('--out', required=True, action='append',
                    help='a results directory; several: their tests together '
                    '(the parts of a group)')
    ap.add_argument('--only', help='a file naming the tests to show, one a line')
    ap.add_argument('configs', nargs='+')
    a = ap.parse_args()
    res = {c: {} for c in a.configs}
    for out in a.out:
        for c in a.configs:
            res[c].update(results(out, c))
    if a.only:
        with open(a.only) as f:
            only = set(f.read().split())
        res = {c: {t: r for t, r in res[c].items() if t in only} for c in res}
    exp = expected(a.expected)
    tests = sorted(set().union(*[set(r) for r in res.values()]))
    ref = a.configs[0] if base(a.configs[0]) == 'tmpfs' else None
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
            why = exp.get((t, c), exp.get((t, base(c))))
            if why is not None:
                passed += 1
                notes.append('documented %s on %s: %s (%s)' % (t, c, st, why))
            else:
                failed += 1
                notes.append('FAILED %s on %s: %s where %s%s'
                             % (t, c, st, ref + ' passes' if ref else 'it must pass',
                                ': ' + msg if msg else ''))
    print()
    for c in a.configs:
        sts = [s for s, _ in res[c].values()]
        print('%-12s passed %4d  failed %4d  not run %4d' % (
            c, sts.count('pass'), sts.count('fail'), sts.count('notrun'))
            + ('  cut %4d' % sts.count('cut') if 'cut' in sts else ''))
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
