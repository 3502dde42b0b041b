#!/usr/bin/env bash
# The three operations with curl. PETSTORE_URL is the base URL (ending in /v1), PETSTORE_API_KEY a key:
#
#   PETSTORE_URL=http://localhost:8080/v1 PETSTORE_API_KEY=psk_… bash examples/curl.sh
set -euo pipefail
: "${PETSTORE_URL:?set PETSTORE_URL to the base URL, e.g. http://localhost:8080/v1}"
: "${PETSTORE_API_KEY:?set PETSTORE_API_KEY to an API key (psk_…)}"

auth="Authorization: Bearer $PETSTORE_API_KEY"
# --fail-with-body: an HTTP error stops the script (set -e) and still shows the Error body.
api=(curl --silent --show-error --fail-with-body -H "$auth")

echo '# createPet, with an Idempotency-Key: retrying with the same key returns this pet, never a second one'
key="example-$(date +%s)-$$-$RANDOM"
if ! pet=$("${api[@]}" -H 'Content-Type: application/json' -H "Idempotency-Key: $key" \
  -d '{"name":"Rex","categoryId":9007199254740993,"status":"available"}' "$PETSTORE_URL/pets"); then
  echo "$pet" >&2 # the Error body, e.g. {"code":"unauthorized",…}
  exit 1
fi
echo "$pet"
# ids are int64: keep them as text (a tool that parses JSON numbers as doubles would round them)
id=$(sed -E 's/.*"id":(-?[0-9]+).*/\1/' <<<"$pet")

echo '# listPets: the first 5 available pets; a Link: <…>; rel="next" header points to the next page'
"${api[@]}" "$PETSTORE_URL/pets?limit=5&status=available"
echo

echo "# getPet $id (deprecated: scheduled for removal on 5 December 2030, use listPets with a status filter)"
"${api[@]}" "$PETSTORE_URL/pets/$id"
echo

echo '# getPet of an id no pet has: 404 and the Error body {code, message, status}'
curl --silent --show-error -H "$auth" -w '\nHTTP %{http_code}\n' "$PETSTORE_URL/pets/9223372036854775807"
