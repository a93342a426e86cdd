// The wasm conformance run (step 4 of `cargo xtask test`; run it through xtask, which builds
// what it needs). Every case folder of $COMMLENS_SHARED/conformance/cases is planned twice:
//   - by the core compiled to wasm32 (commlens-wasm, bound for Node in $COMMLENS_WASM_NODE),
//   - by the native CLI: `$COMMLENS_BIN plan DUMP --args ARGS`,
//   - and, where it plans a plain dump, by the wasm core again with its line breaks taken out.
// The two must print byte-identical output (the plan report on success, the error message on
// failure), and the result must equal the case's plan.json as a JSON value (same keys, same
// array lengths, equal scalars of the same JSON type: 1 is not 1.0, true is not 1), or, for
// {"error": "ValueError", "message": M} cases, fail with exactly M.
// Usage: node tests/wasm/conformance.mjs [SUBSTRING...]   (only cases whose name contains one)
// Prints one line per case and `N passed, M failed`; exits 1 on any failure or on zero cases.

import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const shared = resolve(process.env.COMMLENS_SHARED || join(repo, '..', 'shared'));
const bin = resolve(process.env.COMMLENS_BIN || join(repo, 'target', 'debug', 'commlens'));
const wasmDir = resolve(process.env.COMMLENS_WASM_NODE || join(repo, 'target', 'wasm-node'));
const casesDir = join(shared, 'conformance', 'cases');
const filters = process.argv.slice(2);

function die(message) {
  console.error(`conformance: ${message}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}

if (!existsSync(casesDir)) die(`no corpus at ${casesDir} (set COMMLENS_SHARED)`);
if (!existsSync(bin)) die(`no native CLI at ${bin} (cargo build -p commlens-cli)`);
const wasmJs = join(wasmDir, 'commlens_wasm.js');
if (!existsSync(wasmJs)) die(`no wasm build at ${wasmJs} (run through \`cargo xtask test\`)`);
const { plan_report, plan_report_with_tags } = createRequire(import.meta.url)(wasmJs);

// ---- strict JSON: numbers keep whether they were written as integers or floats ----

class Num {
  constructor(text) {
    this.text = text;
    this.float = /[.eE]/.test(text);
  }
  equals(other) {
    if (this.float !== other.float) return false;
    return this.float ? Number(this.text) === Number(other.text) : BigInt(this.text) === BigInt(other.text);
  }
  toString() {
    return this.text;
  }
}

function parseStrict(text) {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const fail = (what) => {
    throw new SyntaxError(`${what} at offset ${i}`);
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const obj = new Map();
      ws();
      if (text[i] === '}') return i++, obj;
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const k = string();
        ws();
        if (text[i++] !== ':') fail('expected :');
        obj.set(k, value());
        ws();
        const d = text[i++];
        if (d === '}') return obj;
        if (d !== ',') fail('expected , or }');
      }
    }
    if (c === '[') {
      i++;
      const arr = [];
      ws();
      if (text[i] === ']') return i++, arr;
      for (;;) {
        arr.push(value());
        ws();
        const d = text[i++];
        if (d === ']') return arr;
        if (d !== ',') fail('expected , or ]');
      }
    }
    if (c === '"') return string();
    for (const [lit, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(lit, i)) return (i += lit.length), v;
    }
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 64));
    if (!m) fail('unexpected character');
    i += m[0].length;
    return new Num(m[0]);
  };
  const string = () => {
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    if (i >= text.length) fail('unterminated string');
    i++;
    return JSON.parse(text.slice(start, i));
  };
  const v = value();
  ws();
  if (i !== text.length) fail('trailing characters');
  return v;
}

const show = (v) => {
  if (v instanceof Map) return `{${v.size} keys}`;
  if (Array.isArray(v)) return `[${v.length} items]`;
  if (v instanceof Num) return `${v.text} (${v.float ? 'float' : 'int'})`;
  return JSON.stringify(v);
};

/** The first difference between two strict values as "path: got vs expected", or null. */
function diff(got, want, path = '$') {
  if (want instanceof Map) {
    if (!(got instanceof Map)) return `${path}: ${show(got)} vs ${show(want)}`;
    for (const k of want.keys()) if (!got.has(k)) return `${path}: missing key ${JSON.stringify(k)}`;
    for (const k of got.keys()) if (!want.has(k)) return `${path}: unexpected key ${JSON.stringify(k)}`;
    for (const [k, w] of want) {
      const d = diff(got.get(k), w, `${path}.${k}`);
      if (d) return d;
    }
    return null;
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(got)) return `${path}: ${show(got)} vs ${show(want)}`;
    if (got.length !== want.length) return `${path}: ${got.length} items vs ${want.length}`;
    for (let j = 0; j < want.length; j++) {
      const d = diff(got[j], want[j], `${path}[${j}]`);
      if (d) return d;
    }
    return null;
  }
  if (want instanceof Num) {
    return got instanceof Num && got.equals(want) ? null : `${path}: ${show(got)} vs ${show(want)}`;
  }
  return got === want ? null : `${path}: ${show(got)} vs ${show(want)}`;
}

// ---- the two implementations ----

function runWasm(dump, argsText) {
  const t = performance.now();
  // The wasm crate's panic hook reports through console.error: keep it with the case.
  const logged = [];
  const consoleError = console.error;
  console.error = (...a) => logged.push(a.join(' '));
  try {
    const out = plan_report(dump, argsText);
    return { ok: true, out, ms: performance.now() - t };
  } catch (e) {
    let out = e instanceof Error ? e.message : String(e);
    if (e instanceof WebAssembly.RuntimeError) out = `wasm trap: ${out}${logged.length ? ` (${logged.join('; ')})` : ''}`;
    return { ok: false, out, ms: performance.now() - t };
  } finally {
    console.error = consoleError;
  }
}

function runNative(dumpPath, argsPath) {
  const t = performance.now();
  const r = spawnSync(bin, ['plan', dumpPath, '--args', argsPath], { maxBuffer: 1 << 30 });
  const ms = performance.now() - t;
  if (r.error) throw r.error;
  if (r.status === 0) return { ok: true, out: r.stdout, ms };
  // The CLI ends its stderr message with one newline (eprintln!); the wasm error has none.
  return { ok: false, out: r.stderr.toString('utf8').replace(/\n$/, ''), ms, status: r.status ?? r.signal };
}

const short = (s) => {
  s = String(s);
  return JSON.stringify(s.length > 300 ? `${s.slice(0, 300)}…` : s);
};

function checkCase(dir) {
  const dumpPath = join(dir, 'dump.json');
  const argsPath = join(dir, 'args.json');
  const expectedText = readFileSync(join(dir, 'plan.json'), 'utf8');
  const dump = readFileSync(dumpPath);
  const argsText = existsSync(argsPath) ? readFileSync(argsPath, 'utf8') : undefined;
  const wasm = runWasm(new Uint8Array(dump.buffer, dump.byteOffset, dump.byteLength), argsText);
  const native = runNative(dumpPath, argsPath);
  const timing = `wasm ${wasm.ms.toFixed(0)} ms, native ${native.ms.toFixed(0)} ms`;

  // 1. wasm and native print the same bytes.
  if (wasm.ok !== native.ok) {
    return [false, `wasm ${wasm.ok ? 'succeeded' : `failed with ${short(wasm.out)}`}, native ${native.ok ? 'succeeded' : `failed (exit ${native.status}) with ${short(native.out)}`}`];
  }
  if (wasm.ok) {
    const w = Buffer.from(wasm.out, 'utf8');
    if (!w.equals(native.out)) {
      let at = 0;
      while (at < w.length && w[at] === native.out[at]) at++;
      return [false, `wasm and native output differ at byte ${at} (${w.length} vs ${native.out.length} bytes): wasm ${short(w.subarray(at, at + 60))} native ${short(native.out.subarray(at, at + 60))}`];
    }
  } else if (wasm.out !== native.out) {
    return [false, `error messages differ: wasm ${short(wasm.out)} native ${short(native.out)}`];
  }
  // The same dump on one line (a line break is only ever whitespace between JSON tokens): its
  // nodes are then found by scanning their brackets 64 bytes at a time (wasm's vectors), not
  // by their lines, and the report is the same bytes.
  const gzipped = dump[0] === 0x1f && dump[1] === 0x8b;
  if (wasm.ok && !gzipped) {
    const oneLine = runWasm(dump.filter((b) => b !== 0x0a), argsText);
    if (!oneLine.ok) return [false, `the dump on one line failed with ${short(oneLine.out)}`];
    if (oneLine.out !== wasm.out) return [false, 'the dump on one line planned to a different report'];
  }

  // 2. the result is the expected one.
  const expected = parseStrict(expectedText);
  if (expected instanceof Map && expected.has('error')) {
    const message = expected.get('message');
    if (wasm.ok) return [false, `expected ${expected.get('error')} ${short(message)}, got a report`];
    if (wasm.out !== message) return [false, `error message ${short(wasm.out)}, expected ${short(message)}`];
    return [true, `error as expected; ${timing}`];
  }
  if (!wasm.ok) return [false, `failed with ${short(wasm.out)}, expected a report`];
  let got;
  try {
    got = parseStrict(wasm.out);
  } catch (e) {
    return [false, `output is not JSON: ${e.message}`];
  }
  const d = diff(got, expected);
  if (d) return [false, `report differs from plan.json: ${d}`];
  return [true, timing];
}

const cases = readdirSync(casesDir)
  .filter((name) => statSync(join(casesDir, name)).isDirectory())
  .filter((name) => filters.length === 0 || filters.some((f) => name.includes(f)))
  .sort();
console.log(`conformance: ${cases.length} case(s) from ${casesDir}`);
console.log(`  wasm: ${wasmJs}\n  native: ${bin}`);
let passed = 0;
let failed = 0;
const t0 = performance.now();
for (const name of cases) {
  let ok;
  let detail;
  try {
    [ok, detail] = checkCase(join(casesDir, name));
  } catch (e) {
    [ok, detail] = [false, `crashed: ${e && e.stack ? e.stack : e}`];
  }
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'pass' : 'FAIL'} ${name}: ${detail}`);
}
console.log(`conformance: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
if (cases.length === 0) console.log('conformance: no cases ran');
console.log(`${passed} passed, ${failed} failed`);

// `--tags roles` (tags derived from semantic roles) on the untagged traced fixtures: the wasm
// build prints what the native CLI prints, and finds something to plan.
const fixtures = join(repo, 'tests', 'fixtures', 'identity');
const untagged = ['fsdp_tp_untagged.json', 'cases/phase_gradient_seed.json', 'cases/rs_wait_unused_unary.json'];
let tagsFailed = 0;
for (const file of untagged) {
  const path = join(fixtures, file);
  const native = spawnSync(bin, ['plan', path, '--tags', 'roles'], { encoding: 'utf8' });
  let out;
  try {
    out = plan_report_with_tags(readFileSync(path), undefined, 'roles');
  } catch (e) {
    out = `error: ${e.message}`;
  }
  const ok = native.status === 0 && out === native.stdout && JSON.parse(out).summary.tagged_collectives > 0;
  if (!ok) tagsFailed++;
  console.log(`${ok ? 'pass' : 'FAIL'} tags roles ${file}`);
}
console.log(`tags roles: ${untagged.length - tagsFailed} passed, ${tagsFailed} failed`);
process.exit(failed === 0 && passed > 0 && tagsFailed === 0 ? 0 : 1);
