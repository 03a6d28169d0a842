# Sourced by the other scripts: make sure .venv exists and holds the package
# with the extras named by VENV_EXTRAS (comma-separated; default, for the
# test command: test,redis,docs; "" for the package alone).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
extras=${VENV_EXTRAS-test,redis,docs}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# The stamp holds the extras installed with the package, so that a venv set
# up for the sample does not pass for one set up for the tests.
stamp=.venv/.installed
installed=$(cat "$stamp" 2>/dev/null || true)
missing=
for extra in ${extras//,/ }; do
    case ",$installed," in *",$extra,"*) ;; *) missing=$extra ;; esac
done
if [ ! -f "$stamp" ] || [ -n "$missing" ] || [ setup.cfg -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
    echo "$extras" >"$stamp"
fi
