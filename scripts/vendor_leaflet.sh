#!/usr/bin/env bash
# Vendors Leaflet (the map library of the geo link page, /links/{hash}) into
# api/assets/leaflet/ from the npm registry: the pinned version, checked
# against the pinned integrity (sha512 of the tarball, as the registry's
# `dist.integrity` gives it), then dist/leaflet.js, dist/leaflet.css,
# dist/images/*.png and the LICENSE copied out.
#
# The files are committed; the build embeds them and nothing is fetched at
# build or run time. Run this only to refresh or upgrade them (change
# VERSION and INTEGRITY together: `npm view leaflet@<version> dist.integrity`).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=1.9.4
INTEGRITY='sha512-nxS1ynzJOmOlHp+iL3FyWqK89GtNL8U8rvlMOsQdTTssxZwCXh8N2NB3GDQOL+YR3XnWyZAxwQixURb+FA74PA=='
TARBALL_URL="https://registry.npmjs.org/leaflet/-/leaflet-$VERSION.tgz"
DEST=api/assets/leaflet

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if command -v npm >/dev/null; then
  (cd "$work" && npm pack --silent "leaflet@$VERSION" >/dev/null)
  tarball="$work/leaflet-$VERSION.tgz"
else
  tarball="$work/leaflet-$VERSION.tgz"
  curl -fsSL --retry 3 -o "$tarball" "$TARBALL_URL"
fi
[ -s "$tarball" ] || { echo "vendor_leaflet: no tarball for leaflet@$VERSION" >&2; exit 1; }

actual="sha512-$(python3 -c 'import base64, hashlib, sys
print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tarball")"
if [ "$actual" != "$INTEGRITY" ]; then
  echo "vendor_leaflet: leaflet-$VERSION.tgz has integrity $actual, expected $INTEGRITY" >&2
  exit 1
fi

tar -xzf "$tarball" -C "$work"
pkg="$work/package"
version=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$pkg/package.json")
[ "$version" = "$VERSION" ] || { echo "vendor_leaflet: package.json says $version" >&2; exit 1; }

mkdir -p "$DEST/images"
rm -f "$DEST"/images/*.png
cp "$pkg/dist/leaflet.js" "$pkg/dist/leaflet.css" "$DEST/"
cp "$pkg"/dist/images/*.png "$DEST/images/"
cp "$pkg/LICENSE" "$DEST/LICENSE"
echo "vendor_leaflet: leaflet $VERSION ($INTEGRITY) in $DEST:"
(cd "$DEST" && ls -1 leaflet.js leaflet.css LICENSE images/*.png)
