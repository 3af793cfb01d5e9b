#!/usr/bin/env bash
# The Swift package as another package uses it (`make test-swiftpm`): a temporary git clone of this
# repository's HEAD, tagged with a test version, is the dependency of a consumer package made from the
# README's "Swift package" section (its Package.swift and main.swift blocks, the URL and version pointed at
# the clone). SwiftPM resolves it by version -- which it refuses for a package whose manifest has
# unsafeFlags -- builds the consumer, and runs it on examples/datafiles/demo.json; its output must be the
# reference SDK's decisions. Committed sources only: uncommitted changes are not in the clone.
#
#   bash tests/swiftpm/test_consumer.sh [debug|release]     (default: debug, the faster build here)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
configuration=${1:-debug}
version=9.9.9
work=$(mktemp -d "${TMPDIR:-/tmp}/experiment-swiftpm.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- the dependency: a clone of HEAD, tagged ---------------------------------------------------------
head=$(git -C "$repo" rev-parse HEAD)
if [ -n "$(git -C "$repo" status --porcelain -- Package.swift Sources README.md)" ]; then
    echo "test-swiftpm: note: uncommitted changes in Package.swift, Sources/ or README.md are not tested" >&2
fi
# The directory's name is the package's identity in the consumer's manifest (package: "libexperiment").
git clone --quiet --no-checkout "$repo" "$work/libexperiment"
git -C "$work/libexperiment" checkout --quiet --detach "$head"
git -C "$work/libexperiment" tag "$version"
echo "dependency: $head tagged $version in a temporary clone"

# --- the consumer: the README's blocks ---------------------------------------------------------------
# A block is the ```swift fence after the README line holding its marker ("test-swiftpm: <file>").
block() {
    awk -v marker="test-swiftpm: $1" '
        index($0, marker) { found = 1; next }
        found == 1 && /^```swift[ \t]*$/ { found = 2; next }
        found == 2 && /^```[ \t]*$/ { exit }
        found == 2 { print }
    ' "$repo/README.md"
}
consumer="$work/my-app"
mkdir -p "$consumer/Sources/my-app"
block Package.swift > "$consumer/Package.swift"
block main.swift > "$consumer/Sources/my-app/main.swift"
for file in "$consumer/Package.swift" "$consumer/Sources/my-app/main.swift"; do
    [ -s "$file" ] || { echo "test-swiftpm: README.md has no block for $(basename "$file")" >&2; exit 1; }
done
grep -q '\.unsafeFlags(' "$work/libexperiment/Package.swift" && { echo "test-swiftpm: Package.swift has unsafeFlags" >&2; exit 1; }
# The dependency by version, from the clone (the README names the published repository).
sed -i -E "s|\.package\(url: \"[^\"]*\", from: \"[^\"]*\"\)|.package(url: \"file://$work/libexperiment\", from: \"$version\")|" \
    "$consumer/Package.swift"
grep -q "from: \"$version\"" "$consumer/Package.swift" || { echo "test-swiftpm: no .package(url:from:) line to point at the clone" >&2; exit 1; }

# --- build and run -----------------------------------------------------------------------------------
start=$(date +%s)
if ! (cd "$consumer" && swift build -c "$configuration") > "$work/build.log" 2>&1; then
    echo "test-swiftpm: the consumer did not build (swift build -c $configuration):" >&2
    grep -E 'error|unsafe' "$work/build.log" | head -20 >&2
    exit 1
fi
binary="$consumer/.build/$configuration/my-app"
resolved=$(grep -A6 '"identity" : "libexperiment"' "$consumer/Package.resolved" | grep '"version"' | tr -d ' ",' || true)
echo "consumer built ($configuration) in $(( $(date +%s) - start )) s against libexperiment $resolved"
[ "$resolved" = "version:$version" ] || { echo "test-swiftpm: resolved '$resolved', expected version:$version" >&2; exit 1; }

state="$work/state"
mkdir -p "$state"
output=$(EXPERIMENT_EVENT_ENDPOINT=none "$binary" "$state" < "$repo/examples/datafiles/demo.json")
echo "$output"
# optimizely-sdk 5.7.0's decisions for these users (python: create_user_context(id, attributes).decide(key)).
expected='user-1 checkout_redesign off enabled=false {"button_color":"blue","show_trust_badges":false,"steps":3}
user-1 free_shipping - enabled=false {"banner_text":"Free shipping on orders over 50 EUR","threshold_cents":5000}
user-1 search_ranking semantic enabled=true {"ranking_config":{"algorithm":"semantic","boost_in_stock":true,"max_results":48}}
alice checkout_redesign control enabled=true {"button_color":"blue","show_trust_badges":false,"steps":3}
alice free_shipping on enabled=true {"banner_text":"Free shipping on every order","threshold_cents":0}
alice search_ranking classic enabled=true {"ranking_config":{"algorithm":"bm25","boost_in_stock":false,"max_results":24}}
enabled for alice: checkout_redesign, free_shipping, search_ranking
tracked purchase for alice'
if [ "$output" != "$expected" ]; then
    echo "test-swiftpm: the consumer's output differs from the reference's decisions:" >&2
    diff <(echo "$expected") <(echo "$output") >&2 || true
    exit 1
fi
# Its state stayed in the directory it was given.
[ -n "$(ls -A "$state")" ] || { echo "test-swiftpm: nothing in the state directory the consumer was given" >&2; exit 1; }
echo "test-swiftpm: a package depending on libexperiment $version by version builds and decides as the reference"
