#!/usr/bin/env bash
# The transformer studies' -full tiers on a lent GPU in one command (benchmarks/gpu_full.py does the work;
# its docstring says how the tiers are ordered, stopped and summarised):
#
#   bash benchmarks/gpu_full.sh                       # on the lent machine: $OUT/summary.json, log.txt, runs.tar.gz
#   bash benchmarks/gpu_full.sh --resume runs/gpu_full/runs.tar.gz   # a later call goes on where one stopped
#   bash benchmarks/gpu_full.sh --dry-run             # the order and each tier's GPU estimate; trains nothing
#
# Options: --limit-s N (seconds in all, from this script's start; default 540, inside a lent machine's
# 10-minute command), --out DIR (default $OUT, else runs/gpu_full), --tiers a,b (this order), --resume FILE,
# --venv DIR (default .venv), --python PY (use this interpreter, no venv), --dry-run. Where $OUT is set and
# --out is not given (a lent machine, which returns at most 8 files 2 folders deep), the run folders are
# packed into $OUT/runs.tar.gz.
#
# Environment: a lent machine reaches no package index, and its python3 already holds a CUDA torch and
# bindscale's dependencies (`pip install -c constraints.txt -e '.[test]'` would ask for the CPU torch that
# constraints.txt pins). So where the venv is missing it is made without installing anything: python3 -m venv,
# then a .pth file that puts python3's own site-packages on the venv's path (a plain --system-site-packages
# would miss them where python3 is itself a venv, as on the lent machines), and bindscale is imported from
# src/. Missing dependencies are named before anything runs.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
limit=540
venv=.venv
python=""
out=""
pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    --limit-s) limit="$2"; shift 2 ;;
    --venv) venv="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --tiers|--resume) pass+=("$1" "$2"); shift 2 ;;
    --dry-run) pass+=("$1"); shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu_full.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$limit" in ''|*[!0-9]*) echo "gpu_full.sh: --limit-s takes whole seconds, not '$limit'" >&2; exit 2 ;; esac
if [ -z "$out" ]; then
  if [ -n "${OUT:-}" ]; then out="$OUT"; pass+=(--pack); else out=runs/gpu_full; fi
fi

if [ -z "$python" ]; then
  if [ ! -x "$venv/bin/python" ]; then
    base=$(command -v python3)
    echo "gpu_full.sh: making $venv from $base (nothing downloaded)"
    "$base" -m venv --without-pip "$venv"
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$base" -c 'import site; print("\n".join(site.getsitepackages()))' > "$site/_gpu_full_base.pth"
  fi
  python="$venv/bin/python"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
# bindscale's dependencies (pyproject's), named before any time is spent.
"$python" - <<'EOF'
import importlib.util, re, sys, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
names = {"pyyaml": "yaml", "scikit-learn": "sklearn"}
missing = [d for d in (re.split(r"[<>=!~ \[]", d)[0].lower() for d in deps)
           if importlib.util.find_spec(names.get(d, d).replace("-", "_")) is None]
if missing:
    sys.exit(f"gpu_full.sh: {sys.executable} lacks {', '.join(missing)} (carry them as wheels: see the lent machine's notes)")
EOF
left=$(( limit - ($(date +%s) - start) ))
exec "$python" benchmarks/gpu_full.py --out "$out" --limit-s "$left" ${pass[@]+"${pass[@]}"}
