#!/bin/sh
# man.sh: make the man pages from their Markdown (pandoc, with
# docs/man/man.lua): docs/man/kiln.1 from docs/man/kiln.1.md, and
# docs/man/kiln-config.5 from docs/man/kiln-config.5.head.md followed by
# docs/configuration.md (the config's one description; its sections become
# the page's). The pages are committed, so `make install` needs no pandoc;
# `man.sh --check` (run by tests/suites/25-cli.sh) fails when a committed
# page is not what its Markdown makes now; `man.sh --out DIR` writes the
# pages into DIR instead.
set -eu
cd "$(dirname "$0")/../.."

check=0
dest=docs/man
case "${1:-}" in
--check) check=1 ;;
--out) dest=${2:?man.sh --out DIR} ;;
esac
command -v pandoc >/dev/null 2>&1 || {
	echo "man.sh: pandoc is missing (apt-get install pandoc)" >&2
	exit 2
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

pandoc -s -f markdown -t man --lua-filter docs/man/man.lua docs/man/kiln.1.md -o "$out/kiln.1"
# configuration.md's title goes (the head names the page) and its ## sections
# become the page's sections.
{ cat docs/man/kiln-config.5.head.md; sed -e '1{/^# /d}' -e 's/^##/#/' docs/configuration.md; } |
	pandoc -s -f markdown -t man --lua-filter docs/man/man.lua -o "$out/kiln-config.5"

rc=0
for page in kiln.1 kiln-config.5; do
	if [ "$check" = 1 ]; then
		if ! cmp -s "$out/$page" "docs/man/$page"; then
			echo "man.sh: docs/man/$page is not what its Markdown makes; run sh server/tools/man.sh" >&2
			rc=1
		fi
	else
		cp "$out/$page" "$dest/$page"
	fi
done
exit $rc
