"""The committed editor bundle (runner/web/static/editor/) is built from the sources in
web/editor/ as they are: its first line names their hash, computed here the way
web/editor/build.mjs computes it. Run scripts/build-web after changing them."""

from __future__ import annotations

import hashlib
import re

from tests.conftest import ROOT

SOURCES = ROOT / "web" / "editor"
BUNDLE = ROOT / "runner" / "web" / "static" / "editor"


def sources_hash() -> str:
    names = ["package.json", "package-lock.json", "build.mjs"] + [
        path.relative_to(SOURCES).as_posix()
        for path in (SOURCES / "src").rglob("*")
        if path.is_file()
    ]
    digest = hashlib.sha256()
    for name in sorted(names):
        digest.update(name.encode() + b"\0")
        digest.update((SOURCES / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def test_the_bundle_is_built_from_the_current_sources() -> None:
    expected = sources_hash()
    for name in ("editor.js", "editor.css"):
        first = (BUNDLE / name).read_text(encoding="utf-8").split("\n", 1)[0]
        found = re.search(r"sources sha256 ([0-9a-f]{64})", first)
        assert found, f"{name}: no sources hash on its first line; run scripts/build-web"
        assert found.group(1) == expected, (
            f"{name} is older than web/editor/: run scripts/build-web"
        )


def test_the_page_loads_nothing_from_elsewhere() -> None:
    page = (BUNDLE / "index.html").read_text(encoding="utf-8")
    bundle = (BUNDLE / "editor.js").read_text(encoding="utf-8")
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    imports = re.findall(r"""(?:import|from)\s*["']([^"']+)["']""", bundle)
    # only the chat page's own modules, served beside it: its key prompt, its argument checks
    assert sorted(imports) == ["/web/static/js/key.js", "/web/static/js/schema.js"]
    for module in imports:
        assert (BUNDLE.parent / module.removeprefix("/web/static/")).is_file(), module
