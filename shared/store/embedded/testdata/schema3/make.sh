#!/usr/bin/env bash
# make.sh rebuilds the schema-3 fixture of TestSchema3Fixture: a data
# directory written through the API by sshdeck at commit f1c5383, the last
# one whose embedded store wrote schema 3 (JSON values). Run it from the
# repository root:
#
#	git worktree add /tmp/base f1c5383
#	(cd /tmp/base && go build -o /tmp/sshdeck-base ./cmd/sshdeck)
#	git worktree remove /tmp/base
#	shared/store/embedded/testdata/schema3/make.sh /tmp/sshdeck-base
#
# It needs curl, ssh-keygen and python3 (a static stand-in for GitHub's
# releases API), and leaves sshdeck.db and secret.key next to itself. The
# test checks what this script creates: change both together. Every run
# makes new ids, times and keys; dump a new file (with bbolt's CLI, or a
# few lines of Go over bolt.Tx.ForEach) for the constants of
# fixture_test.go.
set -euo pipefail

BIN=${1:?usage: make.sh PATH-TO-SSHDECK-AT-f1c5383}
OUT=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'kill $SERVE $UPSTREAM 2>/dev/null || true; rm -rf "$WORK"' EXIT
DATA=$WORK/data
API=http://127.0.0.1:18080
TUNNEL=http://127.0.0.1:18081

# The releases API: one page of one release, whatever the query.
mkdir -p "$WORK/gh/repos/acme/tool"
echo '[{"id":1,"name":"v1.0.0","tag_name":"v1.0.0","body":"First.","html_url":"http://127.0.0.1:18082/acme/tool/releases/v1.0.0","published_at":"2025-01-02T03:04:05Z","assets":[]}]' \
	>"$WORK/gh/repos/acme/tool/releases"
python3 -m http.server 18082 --bind 127.0.0.1 --directory "$WORK/gh" >/dev/null 2>&1 &
UPSTREAM=$!

SSHDECK_RELEASES_REPO=acme/tool SSHDECK_RELEASES_API_URL=http://127.0.0.1:18082 \
	"$BIN" serve --data "$DATA" --addr 127.0.0.1:18080 --tunnel-addr 127.0.0.1:18081 >"$WORK/serve.log" 2>&1 &
SERVE=$!
until curl -fsS "$API/healthz" >/dev/null 2>&1; do sleep 0.2; done

# Users and tokens: alice, with a token that never expires and a revoked one.
"$BIN" user add alice --data "$DATA"
TOKEN=$("$BIN" token create --user alice --name fixture --ttl 0 --data "$DATA")
"$BIN" token create --user alice --name old --data "$DATA" 2>"$WORK/old" >/dev/null
"$BIN" token revoke "$(sed -n 's/^token \([^ ]*\) .*/\1/p' "$WORK/old")" --data "$DATA"
AUTH="Authorization: Bearer $TOKEN"
JSON='Content-Type: application/json'

# Host 1: a password, tags, every option, two tunnel connections.
curl -fsS -H "$AUTH" -H "$JSON" -d '{"name":"db-1","ip":"10.0.0.10","port":2222,"username":"postgres",
  "folder":"prod/eu","tags":["prod","db"],"pin":true,"authType":"password","password":"fixture-password-1",
  "enableTerminal":true,"enableTunnel":true,"enableFileManager":true,"defaultPath":"/var/lib/postgresql",
  "tunnelConnections":[{"sourcePort":15432,"endpointPort":5432,"endpointHost":"127.0.0.1","maxRetries":3,"retryInterval":10,"autoStart":true},
  {"sourcePort":16379,"endpointPort":6379,"endpointHost":"cache.internal"}]}' "$API/ssh/db/host"
echo

# Host 2: an ed25519 key (multipart), then updated once (version 2).
ssh-keygen -q -t ed25519 -N '' -C fixture -f "$WORK/key"
curl -fsS -H "$AUTH" \
	-F 'data={"name":"web-1","ip":"10.0.0.5","username":"deploy","authType":"key","keyType":"ssh-ed25519","tags":["prod"],"enableFileManager":true}' \
	-F "key=@$WORK/key" "$API/ssh/db/host"
echo
ETAG=$(curl -fsS -o /dev/null -D - -H "$AUTH" "$API/ssh/db/host/2" | tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')
curl -fsS -X PUT -H "$AUTH" -H "If-Match: $ETAG" -H "$JSON" \
	-d '{"name":"web-1","ip":"10.0.0.6","username":"deploy","authType":"key","keyType":"ssh-ed25519","tags":["prod","eu"],"enableFileManager":true}' \
	"$API/ssh/db/host/2"
echo

# Host 3: no credentials, no tags.
curl -fsS -H "$AUTH" -H "$JSON" -d '{"name":"bastion","ip":"bastion.example.com","username":"ops","authType":"none"}' "$API/ssh/db/host"
echo

# The file manager's lists of host 2.
curl -fsS -H "$AUTH" -H "$JSON" -d '{"path":"/etc/nginx/nginx.conf","isSSH":true,"sshSessionId":"sess-1","hostId":2}' "$API/ssh/file_manager/recent"
curl -fsS -H "$AUTH" -H "$JSON" -d '{"path":"/var/log/nginx/access.log","hostId":2}' "$API/ssh/file_manager/recent"
curl -fsS -H "$AUTH" -H "$JSON" -d '{"path":"/var/log/nginx/","hostId":2}' "$API/ssh/file_manager/shortcuts"
echo

# An alert in force until 2099, dismissed by alice.
ALERT=$("$BIN" alert publish --title 'Fixture maintenance' --message 'Schema 3 fixture' --priority high \
	--type warning --expires-at 2099-01-01T00:00:00Z --action-url https://example.com/status --action-text Status --data "$DATA")
curl -fsS -H "$AUTH" -H "$JSON" -d "{\"alertId\":\"$ALERT\"}" "$API/alerts/dismiss"
echo

# A page of releases, cached.
curl -fsS -H "$AUTH" "$API/releases/rss?per_page=2" >/dev/null

# An autoStart tunnel whose source has no SSH server: it fails at once.
curl -fsS -H "$AUTH" -H "$JSON" -d '{"name":"fixture-tunnel","hostName":"db-1","sourceIP":"127.0.0.1","sourceSSHPort":1,
  "sourceUsername":"deploy","sourcePassword":"fixture-source","endpointIP":"127.0.0.1","endpointUsername":"deploy",
  "endpointPassword":"fixture-endpoint","sourcePort":18090,"endpointPort":9000,"maxRetries":0,"autoStart":true}' \
	"$TUNNEL/ssh/tunnel/connect"
echo
until curl -fsS -H "$AUTH" "$TUNNEL/ssh/tunnel/status/fixture-tunnel" | grep -q '"status":"failed"'; do sleep 0.2; done

kill -INT $SERVE
wait $SERVE || true
cp "$DATA/sshdeck.db" "$DATA/secret.key" "$OUT/"
chmod 0600 "$OUT/sshdeck.db" "$OUT/secret.key"
ls -l "$OUT"
