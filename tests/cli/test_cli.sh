#!/usr/bin/env bash
# End-to-end tests of experiment-cli against the Python binding (the same library through the C ABI).
#
#   bash tests/cli/test_cli.sh [path/to/experiment-cli]
#
# The binary defaults to .build/release/experiment-cli. The Python binding loads $EXPERIMENT_LIBRARY,
# by default the libexperiment.so next to the binary (the two come out of the same build).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${1:-.build/release/experiment-cli}
case $BIN in /*) ;; *) BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN") ;; esac
cd "$ROOT"
if [ ! -x "$BIN" ]; then echo "experiment-cli not found at $BIN (build it: make cli)" >&2; exit 1; fi
if [ -z "${EXPERIMENT_LIBRARY:-}" ]; then
  EXPERIMENT_LIBRARY=$(dirname "$BIN")/libexperiment.so
  [ -f "$EXPERIMENT_LIBRARY" ] || EXPERIMENT_LIBRARY=$ROOT/.build/release/libexperiment.so
fi
export EXPERIMENT_LIBRARY
export PYTHONPATH=$ROOT/bindings/python${PYTHONPATH:+:$PYTHONPATH}
PYTHON=${PYTHON:-python3}

DEMO=examples/datafiles/demo.json
BASIC=bindings/python/tests/data/basic_datafile.json
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# run NAME EXPECTED_STATUS CMD... : runs CMD with stdout in $TMP/out and stderr in $TMP/err, checks the status.
run() {
  local name=$1 want=$2 got=0
  shift 2
  "$@" >"$TMP/out" 2>"$TMP/err" || got=$?
  if [ "$got" -eq "$want" ]; then pass; else
    fail "$name: exit status $got, expected $want"
    sed 's/^/    stdout: /' "$TMP/out" | head -5 >&2
    sed 's/^/    stderr: /' "$TMP/err" | head -5 >&2
  fi
}

# expect NAME FILE PATTERN : FILE contains a line matching the extended regex PATTERN.
expect() {
  if grep -Eq -- "$3" "$2"; then pass; else fail "$1: no line matching /$3/ in:"; head -5 "$2" | sed 's/^/    /' >&2; fi
}

# Python helpers, shared by several checks.
cat >"$TMP/compare_decide.py" <<'EOF'
"""compare_decide.py DATAFILE USER ATTRIBUTES_JSON CLI_JSON_FILE [FLAG...]
Checks experiment-cli's `decide --json` output against the binding's decide for the same user."""
import json, sys
import experiment

datafile, user, attributes, output = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
flags = sys.argv[5:]
cli = json.load(open(output))
with experiment.Client(datafile=open(datafile).read(), profile_store="none") as client:
    keys = flags or list(client.decide_all(user, attributes).keys())
    assert list(cli.keys()) == keys, ("flags", list(cli.keys()), keys)
    # Known keys one by one through decide; with --flag also the batch call (unknown keys: disabled).
    wants = {key: client.decide(user, key, attributes).to_dict() for key in keys if not flags}
    if flags:
        wants = {key: d.to_dict() for key, d in client.decide_for_keys(user, flags, attributes).items()}
    for key in keys:
        want = wants[key]
        got = cli[key]
        for field in ("flag_key", "enabled", "variation_key", "rule_key", "variables", "reasons"):
            assert got[field] == want[field], (key, field, got[field], want[field])
EOF

cat >"$TMP/compare_batch.py" <<'EOF'
"""compare_batch.py DATAFILE REQUESTS OUTPUT [FLAG...]
Every output line of `batch` against the binding (same decide options: none); error lines must be where
the requests are invalid. Prints how many decisions were compared and how many distinct variations."""
import json, sys
import experiment

datafile, requests, output = sys.argv[1:4]
default_flags = sys.argv[4:]
outs = [json.loads(line) for line in open(output)]
lines = [line for line in open(requests)]
assert len(outs) == len(lines), (len(outs), len(lines))
compared, variations, errors = 0, set(), 0
with experiment.Client(datafile=open(datafile).read(), profile_store="none") as client:
    for number, (line, out) in enumerate(zip(lines, outs), start=1):
        try:
            request = json.loads(line)
            valid = isinstance(request, dict) and isinstance(request.get("user_id"), str)
        except ValueError:
            valid = False
        if not valid:
            assert out == {"line": number, "error": out.get("error")} and out["error"], (number, out)
            errors += 1
            continue
        assert out["user_id"] == request["user_id"], (number, out["user_id"])
        attributes = request.get("attributes") or {}
        flags = request.get("flags", default_flags or None)
        want = (client.decide_for_keys(request["user_id"], flags, attributes) if flags is not None
                else client.decide_all(request["user_id"], attributes))
        want = {key: decision.to_dict() for key, decision in want.items()}
        assert out["decisions"] == want, (number, out["decisions"], want)
        compared += len(want)
        variations.update((k, d["variation_key"]) for k, d in want.items())
print(compared, len(variations), errors)
EOF

# Requests: varied users and attributes, every 10th with its own flag list (one unknown key).
cat >"$TMP/generate.py" <<'EOF'
"""generate.py COUNT SEED [BAD_LINE]: JSONL requests on stdout; BAD_LINE (1-based) is not JSON."""
import json, random, sys
count, seed = int(sys.argv[1]), int(sys.argv[2])
bad = int(sys.argv[3]) if len(sys.argv) > 3 else 0
rng = random.Random(seed)
for number in range(1, count + 1):
    if number == bad:
        print('{"user_id": "broken", "attributes": ')
        continue
    attributes = {
        "country": rng.choice(["NL", "DE", "BE", "US", "FR"]),
        "age": rng.randint(12, 80),
        "cart_value": round(rng.uniform(0, 120), 2),
        "beta_tester": rng.random() < 0.3,
        "beta": rng.random() < 0.3,
        "app_version": rng.choice(["2.3.0", "2.4.1", "3.0.0", "3.2.5", "4.0.0"]),
        "platform": rng.choice(["ios", "android", "web"]),
        "plan": rng.choice(["free", "premium"]),
        "score": round(rng.random(), 3),
        "email": rng.choice(["a@demo-shop.example", "b@example.com"]),
    }
    request = {"user_id": "user-%d" % number, "attributes": attributes}
    if number % 10 == 0:
        request["flags"] = ["free_shipping", "checkout_flow", "no_such_flag"]
    print(json.dumps(request))
EOF

# ---------------------------------------------------------------------------------------------- version
run "--version" 0 "$BIN" --version
want_version=$("$PYTHON" -c "import experiment; print(experiment.library_version())")
if [ "$(cat "$TMP/out")" = "$want_version" ]; then pass; else fail "--version: '$(cat "$TMP/out")' != '$want_version'"; fi

# --------------------------------------------------------------------------------------------- validate
run "validate ok" 0 "$BIN" validate "$DEMO" "$BASIC"
expect "validate ok demo" "$TMP/out" "^ok $DEMO: revision 42, 4 flags, 3 experiments$"
expect "validate ok basic" "$TMP/out" "^ok $BASIC: revision 42, 2 flags, 4 experiments$"
run "validate stdin" 0 "$BIN" validate - <"$DEMO"
expect "validate stdin names it" "$TMP/out" "^ok <stdin>: revision 42"

"$PYTHON" - "$DEMO" "$TMP/broken.json" <<'EOF'
import json, sys
datafile = json.load(open(sys.argv[1]))
datafile["experiments"][0]["trafficAllocation"][0]["endOfRange"] = "5000"
json.dump(datafile, open(sys.argv[2], "w"), indent=2)
EOF
run "validate broken" 1 "$BIN" validate "$DEMO" "$TMP/broken.json"
expect "validate broken still reports the good one" "$TMP/out" "^ok $DEMO:"
expect "validate broken names file and place" "$TMP/out" \
  "^error $TMP/broken.json: invalid datafile: experiments\[0\]\.trafficAllocation\[0\]\.endOfRange: expected an integer, got a string$"
printf '{\n  "version": "4",\n  "revision": "1",,\n}\n' >"$TMP/malformed.json"
run "validate malformed JSON" 1 "$BIN" validate "$TMP/malformed.json"
expect "validate malformed JSON gives line and column" "$TMP/out" "^error $TMP/malformed.json: invalid JSON: .*\(line 3, column 19\)"
run "validate missing file" 1 "$BIN" validate "$TMP/does-not-exist.json"
expect "validate missing file" "$TMP/out" "^error $TMP/does-not-exist.json: No such file or directory"

# What the reference SDK accepts (a stale audience id, a range past 10000) is a warning, not an error.
"$PYTHON" - "$DEMO" "$TMP/warned.json" <<'EOF'
import json, sys
datafile = json.load(open(sys.argv[1]))
datafile["experiments"][0]["audienceIds"] = ["404404"]
datafile["experiments"][0].pop("audienceConditions", None)
datafile["experiments"][0]["trafficAllocation"][-1]["endOfRange"] = 12000
json.dump(datafile, open(sys.argv[2], "w"), indent=2)
EOF
run "validate warnings only" 0 "$BIN" validate "$TMP/warned.json"
expect "validate warning names place" "$TMP/out" \
  "^warning $TMP/warned.json: experiments\[0\]\.audienceIds\[0\]: unknown audience \"404404\""
expect "validate warning for the range" "$TMP/out" \
  "^warning $TMP/warned.json: experiments\[0\]\.trafficAllocation\[[0-9]+\]\.endOfRange: outside 0\.\.\.10000, got 12000"
expect "validate ok counts warnings" "$TMP/out" "^ok $TMP/warned.json: revision 42, .*, 2 warnings$"
run "validate --strict fails on warnings" 1 "$BIN" validate --strict "$TMP/warned.json"
run "validate --strict passes a clean datafile" 0 "$BIN" validate --strict "$DEMO"
run "validate --json" 1 "$BIN" validate --json "$TMP/warned.json" "$TMP/broken.json"
if "$PYTHON" - "$TMP/out" "$TMP/warned.json" "$TMP/broken.json" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
warned, broken = report["datafiles"]
assert (warned["file"], warned["valid"], warned["revision"]) == (sys.argv[2], True, "42"), warned
assert [p["severity"] for p in warned["problems"]] == ["warning", "warning"], warned
assert "experiments[0].audienceIds[0]" in [p["place"] for p in warned["problems"]], warned
assert (broken["file"], broken["valid"], broken["revision"]) == (sys.argv[3], False, None), broken
# (the experiment left out makes the flag that names it an error too)
assert broken["problems"][0] == {"severity": "error", "kind": "invalid datafile",
                                 "place": "experiments[0].trafficAllocation[0].endOfRange",
                                 "message": "experiments[0].trafficAllocation[0].endOfRange: expected an integer, got a string"}, broken
assert (report["errors"], report["warnings"]) == (len(broken["problems"]), 2), report
EOF
then pass; else fail "validate --json report"; fi

# Outside the reference's schema (rollout rules, flags, holdouts) it keeps odd values and decides with them:
# accepted, each reported as a warning with its place (issue 15 item 1).
"$PYTHON" - "$DEMO" "$TMP/lenient.json" <<'EOF'
import json, sys
datafile = json.load(open(sys.argv[1]))
rule = datafile["rollouts"][0]["experiments"][0]
rule["status"] = 1
rule["layerId"] = 827982857.0
datafile["rollouts"][0]["experiments"].insert(0, dict(rule, id="909090", key=None, trafficAllocation={}))
datafile["holdouts"] = {}
json.dump(datafile, open(sys.argv[2], "w"), indent=2)
EOF
run "validate lenient --json" 0 "$BIN" validate --json "$TMP/lenient.json"
if "$PYTHON" - "$TMP/out" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
(lenient,) = report["datafiles"]
assert lenient["valid"] is True, lenient
places = {p["place"]: p["severity"] for p in lenient["problems"]}
for place in ["rollouts[0].experiments[1].status", "rollouts[0].experiments[1].layerId", "holdouts",
              "rollouts[0].experiments[0].key", "rollouts[0].experiments[0].trafficAllocation"]:
    assert places.get(place) == "warning", (place, lenient["problems"])
assert report["errors"] == 0, report
EOF
then pass; else fail "validate --json lists the lenient warnings"; fi

# ----------------------------------------------------------------------------------------------- decide
# The same users through the CLI and through the binding, attributes typed by --attr / --attr-string.
i=0
for user in alice bob carol dave erin frank grace heidi ivan judy; do
  i=$((i + 1))
  age=$((10 + i * 7)); country=$([ $((i % 2)) -eq 0 ] && echo NL || echo US)
  beta=$([ $((i % 3)) -eq 0 ] && echo true || echo false)
  plan=$([ $((i % 4)) -lt 2 ] && echo premium || echo free)
  score="0.$((i * 9 % 10))5"
  attrs_json="{\"country\": \"$country\", \"age\": $age, \"beta\": $beta, \"beta_tester\": $beta, \"plan\": \"$plan\", \"score\": $score, \"cart_value\": 60, \"app_version\": \"2.5.0\"}"
  for datafile in "$DEMO" "$BASIC"; do
    run "decide --json $user $datafile" 0 "$BIN" decide --datafile "$datafile" --user "$user" --json \
      --attr country=$country --attr age=$age --attr beta=$beta --attr beta_tester=$beta --attr-string plan=$plan \
      --attr score=$score --attr cart_value=60 --attr app_version=2.5.0
    cp "$TMP/out" "$TMP/decide.json"
    if "$PYTHON" "$TMP/compare_decide.py" "$datafile" "$user" "$attrs_json" "$TMP/decide.json" 2>"$TMP/py"; then pass
    else fail "decide --json $user $datafile differs from the binding:"; tail -3 "$TMP/py" >&2; fi
  done
done

# --attributes JSON, --flag selection with an unknown key, and a string that --attr would type as an int.
# A --flag that does not exist: every flag is still decided and printed, then the exit status is 1.
run "decide --attributes --flag" 1 "$BIN" decide --datafile "$BASIC" --user u7 --json \
  --attributes '{"country": "NL", "age": 40, "plan": "premium", "score": 0.9}' --flag search_ranking --flag nope
cp "$TMP/out" "$TMP/decide.json"
if "$PYTHON" "$TMP/compare_decide.py" "$BASIC" u7 '{"country": "NL", "age": 40, "plan": "premium", "score": 0.9}' \
     "$TMP/decide.json" search_ranking nope 2>"$TMP/py"; then pass
else fail "decide --attributes --flag differs from the binding:"; tail -3 "$TMP/py" >&2; fi
expect "decide warns about an unknown flag" "$TMP/err" 'warning: the datafile has no flag "nope"'
run "decide --attr-string keeps a string" 0 "$BIN" decide --datafile "$BASIC" --user u8 --json \
  --attr country=BE --attr-string age=40 --flag checkout_flow --flag search_ranking
cp "$TMP/out" "$TMP/decide.json"
if "$PYTHON" "$TMP/compare_decide.py" "$BASIC" u8 '{"country": "BE", "age": "40"}' "$TMP/decide.json" \
     checkout_flow search_ranking 2>"$TMP/py"; then pass
else fail "decide --attr-string differs from the binding:"; tail -3 "$TMP/py" >&2; fi

# Byte for byte the text of the C API's exp_decide_for_keys_json (called here through ctypes).
cat >"$TMP/abi_json.py" <<'EOF'
"""abi_json.py DATAFILE USER ATTRIBUTES_JSON OPTION_BITS [FLAG...]: prints exp_decide_for_keys_json's text."""
import ctypes, json, os, sys
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint, c_void_p
lib = ctypes.CDLL(os.environ["EXPERIMENT_LIBRARY"])
lib.exp_client_create.argtypes = [c_char_p, ctypes.POINTER(c_void_p)]
lib.exp_client_start.argtypes = [c_void_p, c_char_p, c_size_t]
lib.exp_decide_for_keys_json.argtypes = [c_void_p, c_char_p, c_char_p, c_char_p, c_uint, ctypes.POINTER(c_void_p)]
lib.exp_free.argtypes = [c_void_p]
lib.exp_client_free.argtypes = [c_void_p]
for name in ("exp_client_create", "exp_client_start", "exp_decide_for_keys_json"):
    getattr(lib, name).restype = c_int
datafile, user, attributes, bits = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
flags = sys.argv[5:]
client = c_void_p()
assert lib.exp_client_create(b'{"default_decide_options": ["DISABLE_DECISION_EVENT"]}', byref(client)) == 0
data = open(datafile, "rb").read()
assert lib.exp_client_start(client, data, len(data)) == 0
out = c_void_p()
keys = json.dumps(flags).encode() if flags else None
assert lib.exp_decide_for_keys_json(client, user.encode(), keys, attributes.encode(), bits, byref(out)) == 0
sys.stdout.write(ctypes.string_at(out).decode() + "\n")
lib.exp_free(out)
lib.exp_client_free(client)
EOF
attrs='{"country": "NL", "age": 31, "beta": true, "beta_tester": true, "plan": "premium", "score": 0.75, "app_version": "3.1.0", "platform": "ios", "cart_value": 80.5}'
for datafile in "$DEMO" "$BASIC"; do
  # label:option bits (8 INCLUDE_REASONS, 2 ENABLED_FLAGS_ONLY):flags (a repeated key is decided once)
  for variant in "all:0:" "keys:0:free_shipping checkout_flow nope free_shipping" "reasons:8:" "enabled-only:2:"; do
    IFS=: read -r label bits keys <<<"$variant"
    read -r -a key_list <<<"$keys"
    args=(decide --datafile "$datafile" --user "user-$label" --attributes "$attrs" --json)
    unique_keys=()
    for key in ${key_list[@]+"${key_list[@]}"}; do
      args+=(--flag "$key")
      [[ " ${unique_keys[*]-} " == *" $key "* ]] || unique_keys+=("$key")
    done
    if [ $((bits & 8)) -ne 0 ]; then args+=(--option INCLUDE_REASONS); fi
    if [ $((bits & 2)) -ne 0 ]; then args+=(--option enabled-flags-only); fi
    # Each datafile lacks a flag of the "keys" list (and "nope"): printed all the same, then exit status 1.
    want=0; [ "$label" = keys ] && want=1
    run "decide --json ($label) $datafile" "$want" "$BIN" "${args[@]}"
    "$PYTHON" "$TMP/abi_json.py" "$datafile" "user-$label" "$attrs" "$bits" ${unique_keys[@]+"${unique_keys[@]}"} >"$TMP/abi.json"
    if cmp -s "$TMP/out" "$TMP/abi.json"; then pass
    else fail "decide --json ($label) $datafile is not exp_decide_for_keys_json's text:"; diff "$TMP/out" "$TMP/abi.json" | head -4 >&2; fi
  done
done

# The human table carries the same decision as the JSON.
run "decide table" 0 "$BIN" decide --datafile "$DEMO" --user alice --attr country=NL --attr age=31
expect "decide table header" "$TMP/out" "^flag +enabled +variation +rule +variables$"
run "decide json for the table" 0 "$BIN" decide --datafile "$DEMO" --user alice --attr country=NL --attr age=31 --json
row=$("$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))["free_shipping"]
print("^free_shipping +%s +%s +%s +" % (str(d["enabled"]).lower(), d["variation_key"] or "-", d["rule_key"] or "-"))' "$TMP/out")
"$BIN" decide --datafile "$DEMO" --user alice --attr country=NL --attr age=31 >"$TMP/table"
expect "decide table row equals the JSON" "$TMP/table" "$row"

# ---------------------------------------------------------------------------------------------- explain
run "explain" 0 "$BIN" explain --datafile "$DEMO" --user alice --attr country=NL --flag free_shipping
expect "explain names the flag" "$TMP/out" '^flag "free_shipping" for user "alice"$'
expect "explain shows reasons" "$TMP/out" "^  reasons:$"
expect "explain numbers reasons" "$TMP/out" "^ +1\. .+"
want_reasons=$("$PYTHON" -c '
import experiment, sys
with experiment.Client(datafile=open(sys.argv[1]).read(), profile_store="none") as c:
    print(len(c.decide("alice", "free_shipping", {"country": "NL"}, options=["INCLUDE_REASONS"]).reasons))' "$DEMO")
got_reasons=$(grep -cE '^ +[0-9]+\. ' "$TMP/out" || true)
if [ "$want_reasons" -gt 0 ] && [ "$got_reasons" = "$want_reasons" ]; then pass
else fail "explain: $got_reasons numbered reasons, the binding gives $want_reasons"; fi
run "explain unknown flag" 1 "$BIN" explain --datafile "$DEMO" --user alice --flag nope
expect "explain unknown flag lists the flags" "$TMP/err" 'unknown flag "nope" .*free_shipping'

# ------------------------------------------------------------------------------------------------ batch
"$PYTHON" "$TMP/generate.py" 10000 11 >"$TMP/requests.jsonl"
run "batch 10,000 lines" 0 "$BIN" batch --datafile "$DEMO" --input "$TMP/requests.jsonl" --output "$TMP/decisions.jsonl"
lines=$(wc -l <"$TMP/decisions.jsonl")
if [ "$lines" -eq 10000 ]; then pass; else fail "batch wrote $lines lines, expected 10000"; fi
if result=$("$PYTHON" "$TMP/compare_batch.py" "$DEMO" "$TMP/requests.jsonl" "$TMP/decisions.jsonl" 2>"$TMP/py"); then
  read -r compared distinct errors <<<"$result"
  if [ "$compared" -ge 30000 ] && [ "$distinct" -ge 6 ] && [ "$errors" -eq 0 ]; then pass
  else fail "batch comparison too weak: $compared decisions, $distinct variations, $errors errors"; fi
else fail "batch decisions differ from the binding:"; tail -3 "$TMP/py" >&2; fi

# An invalid line in the middle: an error object in its place, the rest decided, exit status 1.
"$PYTHON" "$TMP/generate.py" 10000 12 5000 >"$TMP/requests-bad.jsonl"
run "batch with an invalid line" 1 "$BIN" batch --datafile "$BASIC" --input "$TMP/requests-bad.jsonl" \
  --output "$TMP/decisions-bad.jsonl"
lines=$(wc -l <"$TMP/decisions-bad.jsonl")
if [ "$lines" -eq 10000 ]; then pass; else fail "batch with an invalid line wrote $lines lines, expected 10000"; fi
expect "batch error object" "$TMP/decisions-bad.jsonl" '^\{"line":5000,"error":"request: .+"\}$'
expect "batch reports the failure" "$TMP/err" "1 of 10,000 requests failed \(first: line 5000: "
if result=$("$PYTHON" "$TMP/compare_batch.py" "$BASIC" "$TMP/requests-bad.jsonl" "$TMP/decisions-bad.jsonl" 2>"$TMP/py"); then
  read -r compared distinct errors <<<"$result"
  if [ "$errors" -eq 1 ] && [ "$compared" -ge 19000 ]; then pass; else fail "batch with an invalid line: $result"; fi
else fail "batch (with an invalid line) decisions differ from the binding:"; tail -3 "$TMP/py" >&2; fi

# Streams: stdin to stdout, --flag for requests without flags, no progress output when not a terminal.
head -n 200 "$TMP/requests.jsonl" >"$TMP/requests-200.jsonl"
run "batch stdin/stdout --flag" 0 "$BIN" batch --datafile "$DEMO" --flag dark_mode --flag free_shipping <"$TMP/requests-200.jsonl"
cp "$TMP/out" "$TMP/decisions-200.jsonl"
if [ ! -s "$TMP/err" ]; then pass; else fail "batch wrote to stderr when it is not a terminal: $(head -c 200 "$TMP/err")"; fi
if "$PYTHON" "$TMP/compare_batch.py" "$DEMO" "$TMP/requests-200.jsonl" "$TMP/decisions-200.jsonl" dark_mode free_shipping \
     >/dev/null 2>"$TMP/py"; then pass
else fail "batch --flag decisions differ from the binding:"; tail -3 "$TMP/py" >&2; fi

# Bad requests of several kinds, each its own error object; INCLUDE_REASONS fills reasons.
printf '%s\n' '{"user_id": "a", "attributes": {"country": "NL"}}' '[1]' '{"user_id": 5}' \
  '{"user_id": "b", "extra": 1}' '{"user_id": "c", "attributes": {"x": [1]}}' '{"user_id": "d", "flags": [1]}' '' \
  '{"user_id": "e"} trailing' >"$TMP/mixed.jsonl"
run "batch mixed requests" 1 "$BIN" batch --datafile "$DEMO" --input "$TMP/mixed.jsonl" --option INCLUDE_REASONS --flag free_shipping
if [ "$(wc -l <"$TMP/out")" -eq 7 ] && [ "$(grep -c '"error"' "$TMP/out")" -eq 6 ]; then pass
else fail "batch mixed requests: expected 7 lines with 6 errors, got:"; cat "$TMP/out" >&2; fi
expect "batch error names the problem" "$TMP/out" '^\{"line":6,"error":"flags\[0\]: expected a string, got an integer"\}$'
expect "batch unknown request key" "$TMP/out" '^\{"line":4,"error":"request: unknown key \\"extra\\"'
if "$PYTHON" -c '
import json, sys
first = json.loads(open(sys.argv[1]).readline())
assert first["decisions"]["free_shipping"]["reasons"], first' "$TMP/out"; then pass
else fail "batch --option INCLUDE_REASONS gave no reasons"; fi

# ----------------------------------------------------------------------------------------- usage errors
run "usage: no subcommand argument" 2 "$BIN" frobnicate
run "usage: decide without --user" 2 "$BIN" decide --datafile "$DEMO"
run "usage: decide without --datafile" 2 "$BIN" decide --user alice
run "usage: --attr without =" 2 "$BIN" decide --datafile "$DEMO" --user alice --attr country
expect "usage: --attr message" "$TMP/err" '--attr "country": expected key=value'
run "usage: unknown --option" 2 "$BIN" decide --datafile "$DEMO" --user alice --option SEND_EVERYTHING
run "usage: --attributes not JSON" 2 "$BIN" decide --datafile "$DEMO" --user alice --attributes '{"age": 31'
run "usage: --attributes not an object" 2 "$BIN" decide --datafile "$DEMO" --user alice --attributes '[1]'
run "usage: unknown option" 2 "$BIN" decide --datafile "$DEMO" --user alice --colour
run "usage: validate without files" 2 "$BIN" validate
run "usage: explain without --flag" 2 "$BIN" explain --datafile "$DEMO" --user alice
run "usage: batch reading stdin twice" 2 "$BIN" batch --datafile - --input -
run "decide on a broken datafile" 1 "$BIN" decide --datafile "$TMP/broken.json" --user alice
expect "decide on a broken datafile names the place" "$TMP/err" "broken.json: experiments\[0\]\.trafficAllocation\[0\]\.endOfRange"

echo "cli tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
