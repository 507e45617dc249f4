#!/usr/bin/env bash
# Vendors the browser bundle of the Scalar API Reference that /docs runs:
#
#   api/docs/scalar/vendor.sh 1.72.1
#
# It fetches the npm package with `npm pack`, checks the tarball against the
# registry's integrity and the licence against MIT, and writes
# standalone.js.gz (gzip -9n: the binary embeds it compressed and sends it
# as is to browsers), standalone.js.sha256 (of the file as npm ships it;
# api.TestVendoredScalarIsTheNpmBundle holds the two together) and VERSION.
# Then look at /docs in a browser and run the tests (docs/ARCHITECTURE.md).
set -euo pipefail
version=${1:?usage: vendor.sh VERSION}
pkg=@scalar/api-reference
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

licence=$(npm view "$pkg@$version" license 2>/dev/null)
if [ "$licence" != MIT ]; then
  echo "$pkg@$version is licensed \"$licence\", not MIT: review it before vendoring" >&2
  exit 1
fi
want=$(npm view "$pkg@$version" dist.integrity 2>/dev/null)
tgz=$(npm pack --silent "$pkg@$version" 2>/dev/null | tail -n 1)
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$want" != "$got" ]; then
  echo "$tgz: integrity $got, the registry says $want" >&2
  exit 1
fi

tar -xzf "$tgz" package/dist/browser/standalone.js
gzip -9n <package/dist/browser/standalone.js >"$here/standalone.js.gz"
(cd package/dist/browser && sha256sum standalone.js) >"$here/standalone.js.sha256"
echo "$version" >"$here/VERSION"
echo "vendored $pkg@$version ($want):"
wc -c package/dist/browser/standalone.js "$here/standalone.js.gz"
