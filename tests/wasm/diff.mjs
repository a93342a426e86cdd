// Plan diffs through the wasm build (step 4 of `cargo xtask test`, after conformance.mjs; run
// it through xtask, which builds what it needs):
//   1. pairs of conformance cases (one graph under other arguments, other graphs, dumps and
//      reports mixed): the wasm `plan_diff` prints byte for byte what `commlens diff` prints,
//      as text and as JSON;
//   2. scale: a synthetic 100k-node dump planned two ways, the diff of the two plans timed in
//      wasm as the app computes it (sides from the plans, then the comparison; best of 15). It must
//      stay under the browser budget of 200 ms.
// Usage: node tests/wasm/diff.mjs   (COMMLENS_SHARED, COMMLENS_BIN, COMMLENS_WASM_NODE as for
// conformance.mjs; COMMLENS_DIFF_NODES sets the scale size, 0 skips it)
// Prints one line per check and `N passed, M failed`; exits 1 on any failure.

import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const shared = resolve(process.env.COMMLENS_SHARED || join(repo, '..', 'shared'));
const bin = resolve(process.env.COMMLENS_BIN || join(repo, 'target', 'debug', 'commlens'));
const wasmDir = resolve(process.env.COMMLENS_WASM_NODE || join(repo, 'target', 'wasm-node'));
const casesDir = join(shared, 'conformance', 'cases');
const nodes = Number(process.env.COMMLENS_DIFF_NODES ?? 100000);
const BUDGET_MS = 200;

const wasmJs = join(wasmDir, 'commlens_wasm.js');
for (const [what, path] of [['corpus', casesDir], ['native CLI', bin], ['wasm build', wasmJs]]) {
  if (!existsSync(path)) {
    console.error(`diff: no ${what} at ${path}`);
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
}
const { plan_diff, PlanPair, synthetic_dump } = createRequire(import.meta.url)(wasmJs);

let passed = 0;
let failed = 0;
function report(ok, line) {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'pass' : 'FAIL'} ${line}`);
}

// [before case, before file, after case, after file]; a dump is planned with its case's args.
const pairs = [
  ['mlp_default', 'dump.json', 'mlp_capacity', 'dump.json'],
  ['mlp_explicit_all', 'dump.json', 'mlp_block_types_unknown', 'plan.json'],
  ['mlp_default', 'plan.json', 'mlp_identity_mutations', 'dump.json'],
  ['llama2_blocks', 'dump.json', 'llama2_default', 'dump.json'],
  ['llama2_blocks', 'plan.json', 'llama2_repeated_parameter', 'plan.json'],
  ['llama1_dropout_blocks', 'dump.json', 'llama1_gzip_dump', 'dump.json'],
];

function wasmDiff(file, argsFile, file2, argsFile2, json) {
  const read = (f) => (f ? readFileSync(f, 'utf8') : undefined);
  try {
    return plan_diff(readFileSync(file), read(argsFile), readFileSync(file2), read(argsFile2), json);
  } catch (e) {
    return `error: ${e.message}`;
  }
}

for (const [b, bf, a, af] of pairs) {
  const side = (name, file) => {
    const path = join(casesDir, name, file);
    return [path, file === 'dump.json' ? join(casesDir, name, 'args.json') : undefined];
  };
  const [bp, ba] = side(b, bf);
  const [ap, aa] = side(a, af);
  for (const json of [false, true]) {
    const args = ['diff', bp, ap];
    if (ba) args.push('--args-before', ba);
    if (aa) args.push('--args-after', aa);
    if (json) args.push('--json');
    const native = spawnSync(bin, args, { maxBuffer: 1 << 30 });
    const wasm = wasmDiff(bp, ba, ap, aa, json);
    const ok = native.status === 0 && native.stdout.toString() === wasm;
    const label = `${b}/${bf} -> ${a}/${af}${json ? ' --json' : ''}`;
    report(ok, ok ? `${label}: ${wasm.length} bytes, identical` : `${label}: native exit ${native.status} ${native.stderr}, wasm ${wasm.slice(0, 200)}`);
  }
}

if (nodes > 0) {
  const bytes = new TextEncoder().encode(synthetic_dump(nodes));
  for (const [label, args] of [
    ['capacity cap', '{"policy": {"cap_bytes": 1000000}}'],
    ['no module plans', '{"block_module_types": null, "module_bucket_plans": null}'],
  ]) {
    let t = performance.now();
    const pair = new PlanPair(bytes, undefined, args);
    const planned = performance.now() - t;
    // Best of 15 of the whole diff (sides, then comparison), with its two steps.
    let best = Infinity;
    let steps = '';
    let counts = '';
    for (let i = 0; i < 15; i++) {
      const t0 = performance.now();
      pair.take_sides();
      const t1 = performance.now();
      counts = pair.diff_sides();
      const t2 = performance.now();
      if (t2 - t0 < best) {
        best = t2 - t0;
        steps = `sides ${(t1 - t0).toFixed(1)} ms + compare ${(t2 - t1).toFixed(1)} ms`;
      }
    }
    t = performance.now();
    const json = pair.diff_json();
    const jsonMs = performance.now() - t;
    const [regrouped, onlyBefore, onlyAfter, same, removed, added] = counts.split(' ').map(Number);
    const ok = best < BUDGET_MS && regrouped > 0 && same + regrouped + onlyBefore > 0;
    report(
      ok,
      `scale ${nodes} nodes, own args -> ${label}: diff ${best.toFixed(1)} ms = ${steps} (budget ${BUDGET_MS} ms; ` +
        `${regrouped} regrouped, ${onlyBefore} only before, ${onlyAfter} only after, ${same} same, ` +
        `${removed} decisions removed, ${added} added); JSON ${jsonMs.toFixed(0)} ms (${(json.length / 1e6).toFixed(1)} MB); read + 2 plans ${planned.toFixed(0)} ms`,
    );
    pair.free();
  }
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
