#!/usr/bin/env bash
# Regenerates the scenario regression goldens (test/regression/golden/*.json) from the current build.
# Usage: bash scripts/update-golden.sh [path/to/tpusim]
set -euo pipefail
cd "$(dirname "$0")/.."
tpusim="$(realpath "${1:-build/tools/tpusim}")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
while read -r name; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  "$tpusim" run "$name" -q -o "$tmp/$name"
  python3 - "$tmp/$name/summary.json" "test/regression/golden/$name.json" "$name" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
def flat(prefix, node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            flat(f"{prefix}.{k}" if prefix else k, v, out)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        out[prefix] = node
pinned = {}
for section in ("metrics", "breakdown", "units", "bytes", "program", "links", "collectives", "memory", "op_classes", "job"):
    if section in summary:
        flat(section, summary[section], pinned)
json.dump({"scenario": sys.argv[3], "relative_tolerance": 1e-9, "expect": pinned},
          open(sys.argv[2], "w"), indent=2, sort_keys=True)
open(sys.argv[2], "a").write("\n")
PY
  echo "golden: $name"
done < test/regression/scenarios.txt
