#!/usr/bin/env bash
# tests/python_test.sh [TEST...]: installs python/ (the `morsel` package)
# with /usr/bin/python3's pip into a temporary directory and runs
# tests/python_test.py against that installed copy.  Run in the VM:
#   vm/run --cpus 1 --mem 3G -- tests/python_test.sh
# The package is built from a copy (the repo is read-only in the VM, and
# setuptools writes build/ and *.egg-info into the source tree), with
# lib/libmorsel.so.1 (or $MORSEL_LIBRARY) copied in, so that it is loaded
# from next to the installed package.  Ends with "N passed, N failed".
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-/usr/bin/python3}
lib=${MORSEL_LIBRARY:-$repo/lib/libmorsel.so.1}
fail() { echo "python_test: $*"; echo "0 passed, 1 failed"; exit 1; }

[ -f "$lib" ] || fail "no $lib (the shared libmorsel; build it first)"
work=$(mktemp -d /tmp/python_test.XXXXXX) || fail "mktemp"
trap 'rm -rf "$work"' EXIT
cp -r "$repo/python" "$work/src" || fail "copying python/"
rm -rf "$work/src/build" "$work/src"/*.egg-info
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
cp "$lib" "$work/src/morsel/libmorsel.so.1" || fail "copying $lib"
"$py" -m pip install --quiet --no-index --no-build-isolation --no-cache-dir \
	--disable-pip-version-check --root-user-action=ignore \
	--target "$work/site" "$work/src" || fail "pip install failed"
# Neither $MORSEL_LIBRARY nor the source tree may decide what is imported.
cd "$work" && env -u MORSEL_LIBRARY PYTHONPATH="$work/site" \
	MORSEL_PY_SITE="$work/site" MORSEL_TEST_LIBRARY="$lib" \
	"$py" "$repo/tests/python_test.py" "$@"
