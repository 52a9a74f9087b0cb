#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against a running memhub server.
#
#   usage: scripts/run_conformance.sh BASE_URL TOKEN
#   e.g.   scripts/run_conformance.sh http://127.0.0.1:8000 "$MEMHUB_TOKEN"
#
# Every scenario is run against "$BASE_URL/mcp?token=$TOKEN" with the Node 22
# binary that the npm package `node` installs into scripts/conformance/node_modules
# (the suite needs Node >= 22). Versions are pinned in scripts/conformance/package.json.
# Exit status: 0 if every applicable scenario passed, 1 if any failed, 2 on usage/setup errors.
#
# Optional environment:
#   CONFORMANCE_TIMEOUT     per-scenario timeout in seconds (default 120)
#   CONFORMANCE_OUTPUT_DIR  keep per-scenario logs and checks.json here (default: temp dir, removed)
#   CONFORMANCE_SKIP        space-separated applicable scenarios to skip (e.g. while debugging)
#
# ---------------------------------------------------------------------------
# Scenario selection (suite version 0.1.16; `conformance list --server`).
# See scripts/conformance/SCENARIOS.md for the same table.
#
# APPLICABLE - generic protocol behaviour, no fixture of the suite's reference server:
#   server-initialize            initialize handshake
#   ping                         ping -> {}
#   tools-list                   every tool has name, description, inputSchema
#   logging-set-level            logging/setLevel -> {} (fastmcp always declares `logging`)
#   resources-list               only if the server declares the `resources` capability
#                                (fastmcp always does; an empty list passes)
#   prompts-list                 only if the server declares the `prompts` capability
#                                (fastmcp always does; an empty list passes)
#   server-sse-multiple-streams  3 concurrent POSTs of tools/list in one session; a stateless
#                                server issues no session id, so the suite only reports a
#                                WARNING and no check; shown as INCONCLUSIVE, not a failure
#   dns-rebinding-protection     POSTs initialize with Host/Origin = evil.example.com (must get
#                                4xx) and with Host/Origin = the URL's own host:port (must get
#                                2xx). Only when BASE_URL's host is localhost/127.0.0.1/[::1]:
#                                the scenario fails any other host by design, so it is skipped.
#
# NOT APPLICABLE - each calls a fixture (tool/resource/prompt name) that only the suite's
# reference server ("everything"-style test server) implements. Against memhub they fail,
# or worse pass vacuously (tools-call-simple-text and tools-call-error accept the
# isError "Unknown tool" result), so they prove nothing:
#   completion-complete            completion/complete on prompt `test_prompt_with_arguments`
#   tools-call-simple-text         tool `test_simple_text`
#   tools-call-image               tool `test_image_content`
#   tools-call-audio               tool `test_audio_content`
#   tools-call-embedded-resource   tool `test_embedded_resource`
#   tools-call-mixed-content       tool `test_multiple_content_types`
#   tools-call-with-logging        tool `test_tool_with_logging` (must emit log notifications)
#   tools-call-error               tool `test_error_handling`
#   tools-call-with-progress       tool `test_tool_with_progress` (must emit progress)
#   tools-call-sampling            tool `test_sampling` (server->client sampling request)
#   tools-call-elicitation         tool `test_elicitation` (server->client elicitation)
#   elicitation-sep1034-defaults   tool `test_elicitation_sep1034_defaults`
#   elicitation-sep1330-enums      tool `test_elicitation_sep1330_enums`
#   json-schema-2020-12            tool `json_schema_2020_12_tool` ($schema/$defs); "pending" suite
#   server-sse-polling             tool `test_reconnection` + session + event store; "pending" suite
#   resources-read-text            resource `test://static-text`
#   resources-read-binary          resource `test://static-binary`
#   resources-templates-read       template `test://template/{id}/data`
#   resources-subscribe            resource `test://watched-resource` + resources.subscribe
#   resources-unsubscribe          resource `test://watched-resource` + resources.subscribe
#   prompts-get-simple             prompt `test_simple_prompt`
#   prompts-get-with-args          prompt `test_prompt_with_arguments`
#   prompts-get-embedded-resource  prompt `test_prompt_with_embedded_resource`
#   prompts-get-with-image         prompt `test_prompt_with_image`
# ---------------------------------------------------------------------------
set -euo pipefail

ALWAYS_SCENARIOS=(server-initialize ping tools-list logging-set-level server-sse-multiple-streams)
NOT_APPLICABLE=(
  completion-complete tools-call-simple-text tools-call-image tools-call-audio
  tools-call-embedded-resource tools-call-mixed-content tools-call-with-logging
  tools-call-error tools-call-with-progress tools-call-sampling tools-call-elicitation
  elicitation-sep1034-defaults elicitation-sep1330-enums json-schema-2020-12
  server-sse-polling resources-read-text resources-read-binary resources-templates-read
  resources-subscribe resources-unsubscribe prompts-get-simple prompts-get-with-args
  prompts-get-embedded-resource prompts-get-with-image
)

if [ "$#" -ne 2 ]; then
  echo "usage: $0 BASE_URL TOKEN" >&2
  exit 2
fi
BASE_URL="${1%/}"
TOKEN="$2"
TIMEOUT="${CONFORMANCE_TIMEOUT:-120}"
SKIP=" ${CONFORMANCE_SKIP:-} "

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONF_DIR="$SCRIPT_DIR/conformance"
NODE="$CONF_DIR/node_modules/node/bin/node"
SUITE="$CONF_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"

t_start=$(date +%s)

# --- install (npm install; tolerate no network when node_modules already works) ----------
installed_ok() {
  [ -x "$NODE" ] && [ -f "$SUITE" ] || return 1
  # Node major must be >= 22 and installed versions must match package.json pins.
  (cd "$CONF_DIR" && "$NODE" -e '
    const fs = require("fs");
    const want = JSON.parse(fs.readFileSync("package.json", "utf8")).dependencies;
    const have = (n) => JSON.parse(fs.readFileSync(`node_modules/${n}/package.json`, "utf8")).version;
    if (parseInt(process.versions.node, 10) < 22) process.exit(1);
    for (const [n, v] of Object.entries(want)) if (have(n) !== v) process.exit(1);
  ') >/dev/null 2>&1
}

if ! installed_ok; then
  echo "== installing conformance suite (npm install in $CONF_DIR)"
  if ! command -v npm >/dev/null 2>&1; then
    echo "error: npm not found and $CONF_DIR/node_modules is missing or stale" >&2
    exit 2
  fi
  if ! (cd "$CONF_DIR" && npm install --no-audit --no-fund --loglevel=error); then
    if [ -x "$NODE" ] && [ -f "$SUITE" ]; then
      echo "warning: npm install failed (offline?); using existing node_modules" >&2
    else
      echo "error: npm install failed and no usable node_modules" >&2
      exit 2
    fi
  fi
  if ! [ -x "$NODE" ] || ! [ -f "$SUITE" ]; then
    echo "error: node 22 binary or suite missing after npm install" >&2
    echo "       (the 'node' package needs its preinstall script; see allowScripts in package.json)" >&2
    exit 2
  fi
fi
echo "== node $("$NODE" --version), conformance $("$NODE" "$SUITE" --version)"

# --- target URL ---------------------------------------------------------------------------
ENC_TOKEN=$("$NODE" -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$TOKEN")
case "$BASE_URL" in *\?*) sep='&' ;; *) sep='?' ;; esac
MCP_URL="$BASE_URL/mcp${sep}token=$ENC_TOKEN"
SHOWN_URL="$BASE_URL/mcp${sep}token=***"

# --- probe: reachability + declared capabilities -----------------------------------------
# Prints "loopback=<0|1> caps=<comma list>" or exits non-zero with a message.
probe=$("$NODE" -e '
  const url = process.argv[1];
  const host = new URL(url).hostname.toLowerCase();
  const loopback = ["localhost", "127.0.0.1", "[::1]", "::1"].includes(host) ? 1 : 0;
  (async () => {
    const r = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {
        protocolVersion: "2025-11-25", capabilities: {},
        clientInfo: { name: "memhub-conformance-probe", version: "0" } } }),
      signal: AbortSignal.timeout(15000),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`initialize returned HTTP ${r.status}: ${text.slice(0, 200)}`);
    let msg = null;
    for (const line of text.split(/\r?\n/)) {
      if (line.startsWith("data:")) { try { const m = JSON.parse(line.slice(5)); if (m.id === 1) msg = m; } catch {} }
    }
    if (!msg) msg = JSON.parse(text);
    if (!msg.result) throw new Error(`initialize failed: ${JSON.stringify(msg).slice(0, 200)}`);
    console.log(`loopback=${loopback} caps=${Object.keys(msg.result.capabilities || {}).join(",")}`);
  })().catch((e) => { console.error(`probe: ${e.message}${e.cause ? " (" + e.cause.message + ")" : ""}`); process.exit(1); });
' "$MCP_URL") || { echo "error: MCP endpoint $SHOWN_URL is not answering initialize" >&2; exit 2; }
loopback=${probe#loopback=}; loopback=${loopback%% *}
caps=${probe#*caps=}
echo "== target $SHOWN_URL (declared capabilities: ${caps:-none})"

# --- choose scenarios ---------------------------------------------------------------------
RUN=()
SKIPPED=()   # "scenario|reason"
add() { case "$SKIP" in *" $1 "*) SKIPPED+=("$1|CONFORMANCE_SKIP") ;; *) RUN+=("$1") ;; esac; }
for s in "${ALWAYS_SCENARIOS[@]}"; do add "$s"; done
case ",$caps," in *,resources,*) add resources-list ;; *) SKIPPED+=("resources-list|server does not declare resources") ;; esac
case ",$caps," in *,prompts,*) add prompts-list ;; *) SKIPPED+=("prompts-list|server does not declare prompts") ;; esac
if [ "$loopback" = 1 ]; then add dns-rebinding-protection
else SKIPPED+=("dns-rebinding-protection|BASE_URL host is not localhost/127.0.0.1/[::1]"); fi

# --- run ----------------------------------------------------------------------------------
if [ -n "${CONFORMANCE_OUTPUT_DIR:-}" ]; then
  OUT="$CONFORMANCE_OUTPUT_DIR"; mkdir -p "$OUT"
else
  OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
fi

declare -A RESULT DETAIL
n_pass=0; n_fail=0; n_inc=0
for s in "${RUN[@]}"; do
  log="$OUT/$s.log"
  t0=$(date +%s)
  set +e
  timeout "$TIMEOUT" "$NODE" "$SUITE" server --url "$MCP_URL" --scenario "$s" -o "$OUT/results" >"$log" 2>&1
  rc=$?
  set -e
  dt=$(( $(date +%s) - t0 ))
  counts=$(sed -n 's/^Passed: \(.*\)$/\1/p' "$log" | tail -n1)
  [ "$rc" = 124 ] && counts="timed out after ${TIMEOUT}s"
  if [ "$rc" = 0 ] && [ "${counts#0/0,}" != "$counts" ]; then
    # exit 0 but no check passed or failed (only warnings): e.g. server-sse-multiple-streams
    # on a stateless server. Not a failure, but not a pass either.
    RESULT[$s]=INCONCLUSIVE; n_inc=$((n_inc + 1))
  elif [ "$rc" = 0 ]; then
    RESULT[$s]=PASS; n_pass=$((n_pass + 1))
  else
    RESULT[$s]=FAIL; n_fail=$((n_fail + 1))
  fi
  DETAIL[$s]="${counts:-no result line (rc=$rc)}, ${dt}s"
  printf '%-30s %-12s (%s)\n' "$s" "${RESULT[$s]}" "${DETAIL[$s]}"
  if [ "${RESULT[$s]}" = FAIL ]; then
    # Show what failed (failed-check names and errors; no ANSI colours, token masked).
    sed -e 's/\x1b\[[0-9;]*m//g' -e "s/token=[^ &\"']*/token=***/g" "$log" \
      | awk '/=== Failed Checks ===/{p=1; next} p && (/^  - / || /^    Error:/)' \
      | sed 's/^/    | /' | head -n 40
    grep -q "Failed Checks" "$log" || sed -e "s/token=[^ &\"']*/token=***/g" "$log" | tail -n 20 | sed 's/^/    | /'
  fi
done

# --- summary ------------------------------------------------------------------------------
echo
echo "=== MCP conformance summary ($SHOWN_URL) ==="
for s in "${RUN[@]}"; do printf '  %-12s %-30s %s\n' "${RESULT[$s]}" "$s" "${DETAIL[$s]}"; done
for x in ${SKIPPED[@]+"${SKIPPED[@]}"}; do printf '  %-12s %-30s %s\n' SKIP "${x%%|*}" "${x#*|}"; done
echo "  (${#NOT_APPLICABLE[@]} scenarios not applicable to memhub - they need the suite's fixture server; see header of $0)"
echo "  total time: $(( $(date +%s) - t_start ))s"
# inconclusive scenarios are reported with the skipped ones
echo "conformance: $n_pass passed, $n_fail failed, $(( ${#SKIPPED[@]} + n_inc )) skipped"
[ "$n_fail" = 0 ]
