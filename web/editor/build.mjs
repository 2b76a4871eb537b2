// Bundles src/editor.js (CodeMirror 6 and the editor's code) and src/editor.css into
// runner/web/static/editor/, one file each, minified. The first line of each names the SHA-256
// of the sources it was built from (sourcesHash below); tests/edit/test_editor_bundle.py
// recomputes it, so a bundle older than its sources fails the tests.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "..", "runner", "web", "static", "editor");

function files(folder) {
  return readdirSync(folder)
    .flatMap((name) => {
      const path = join(folder, name);
      return statSync(path).isDirectory() ? files(path) : [path];
    });
}

/** sha256 over each source's path (relative, POSIX) and bytes, in sorted path order. */
export function sourcesHash() {
  const sources = ["package.json", "package-lock.json", "build.mjs", ...files(join(here, "src")).map((p) => relative(here, p).split("\\").join("/"))].sort();
  const hash = createHash("sha256");
  for (const source of sources) {
    hash.update(source + "\0");
    hash.update(readFileSync(join(here, source)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

const stamp = `/* agentctl editor, built by scripts/build-web from web/editor (sources sha256 ${sourcesHash()}) */`;
await esbuild.build({
  entryPoints: { editor: join(here, "src", "editor.js") },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2020"],
  outdir: out,
  external: ["/web/static/js/*"],
  banner: { js: stamp, css: stamp },
  legalComments: "none",
  logLevel: "info",
});
