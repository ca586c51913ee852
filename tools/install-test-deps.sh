#!/usr/bin/env bash
# Installs what the test suite talks to besides our own Python packages:
#   - the Debian packages listed in tools/test-deps/apt.txt (browser, proxies), and
#   - one virtual environment per upstream OpenEnv release, .peers/NAME/ from
#     tools/test-deps/peers/NAME.txt (rebuilt only when that file or pyproject.toml changes:
#     each peer venv also holds our package, editable, for the adapter tests), and
#   - Autobahn|Testsuite for tests/ws/test_autobahn.py: Python 2.7.18 through pyenv (unless
#     $AUTOBAHN_PYTHON2 names a Python 2.7), the suite into .autobahn/suite from
#     tools/autobahn/requirements.txt (tools/autobahn/run --install-only).
# Idempotent: a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' tools/test-deps/apt.txt | grep -v '^$')
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null; then
    echo "install-test-deps: no apt-get here; install these by hand: ${missing[*]}" >&2
    exit 1
  fi
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "install-test-deps: root (or sudo) is needed to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "install-test-deps: apt-get install ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for req in tools/test-deps/peers/*.txt; do
  [ -e "$req" ] || continue
  name=$(basename "$req" .txt)
  venv=".peers/$name"
  stamp=$(cat "$req" pyproject.toml)
  if [ -x "$venv/bin/python" ] && [ "$stamp" = "$(cat "$venv/installed-from.txt" 2>/dev/null)" ]; then
    continue
  fi
  if [ -x "$venv/bin/python" ] && cmp -s "$req" "$venv/requirements.txt"; then
    # only pyproject.toml changed: bring our package's dependencies up to date in place
    echo "install-test-deps: updating $venv"
  else
    echo "install-test-deps: building $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
  fi
  "$venv/bin/python" -m pip install --quiet -r "$req"
  cp "$req" "$venv/requirements.txt"
  printf '%s' "$stamp" > "$venv/installed-from.txt"
done

if [ -z "${AUTOBAHN_PYTHON2:-}" ] && command -v pyenv >/dev/null && [ ! -x "$(pyenv root)/versions/2.7.18/bin/python" ]; then
  echo "install-test-deps: pyenv install 2.7.18 (Autobahn|Testsuite runs on Python 2.7)"
  pyenv install --skip-existing 2.7.18
fi
python3 tools/autobahn/run --install-only
