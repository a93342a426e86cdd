// Runs a wasm32-wasip1 test binary in Node: cargo's runner for that target, which
// `cargo xtask test`'s wasm-unit step uses to run the core's tests on wasm.
//
// Why not Node's own `node:wasi`: Node 20's crashes (SIGSEGV or a V8 fatal error, in most
// runs) after the module returns once its memory has grown past about 200 MB, whatever the
// module did; the reader's tests grow it further than that. This file is the part of WASI
// preview 1 the test binaries import (`WebAssembly.Module.imports` lists it; an import
// missing here fails the instantiation and names it), on node:fs's synchronous calls. The
// whole file system is the one preopened directory, `/`, so tests find the shared corpus and
// their fixtures by the same paths as natively.
import * as fs from "node:fs";
import * as path from "node:path";
import { randomFillSync } from "node:crypto";

const [wasmPath, ...args] = process.argv.slice(2);
if (!wasmPath) {
  console.error("usage: node wasi-run.mjs TEST.wasm [ARGS...]");
  process.exit(2);
}

// WASI's error numbers (preview 1's `errno`), from Node's error codes.
const ERRNO = {
  E2BIG: 1, EACCES: 2, EAGAIN: 6, EBADF: 8, EEXIST: 20, EINVAL: 28, EIO: 29, EISDIR: 31,
  ELOOP: 32, EMFILE: 33, ENAMETOOLONG: 37, ENOENT: 44, ENOSPC: 51, ENOSYS: 52, ENOTDIR: 54,
  ENOTEMPTY: 55, EPERM: 63, ESPIPE: 70, EXDEV: 75,
};
const errno = (e) => ERRNO[e.code] ?? ERRNO.EIO;
const FILETYPE = { charDevice: 2, directory: 3, regularFile: 4, symlink: 7, unknown: 0 };
const filetype = (st) =>
  st.isFile() ? FILETYPE.regularFile
  : st.isDirectory() ? FILETYPE.directory
  : st.isSymbolicLink() ? FILETYPE.symlink
  : st.isCharacterDevice() ? FILETYPE.charDevice
  : FILETYPE.unknown;

class Exit {
  constructor(code) { this.code = code; }
}

// Open descriptors: 0-2 are the process's own, 3 is the preopened `/`.
const PREOPEN = 3;
const fds = new Map([
  [0, { stdio: 0 }], [1, { stdio: 1 }], [2, { stdio: 2 }],
  [PREOPEN, { dir: "/", node: null }],
]);
let nextFd = PREOPEN + 1;

let memory;
const bytes = (ptr, len) => new Uint8Array(memory.buffer, ptr, len);
const view = () => new DataView(memory.buffer);
const text = (ptr, len) => Buffer.from(memory.buffer, ptr, len).toString("utf8");
const strings = (list) => list.map((s) => Buffer.from(s + "\0"));
const argv = strings([wasmPath, ...args]);
const environ = strings(Object.entries(process.env).map(([k, v]) => `${k}=${v}`));

// Each call returns an errno; a thrown Node error becomes one, an `Exit` ends the run.
const guarded = (f) => (...a) => {
  try {
    return f(...a) ?? 0;
  } catch (e) {
    if (e instanceof Exit) throw e;
    if (e && typeof e.code === "string") return errno(e);
    throw e;
  }
};
const open = (fd) => {
  const entry = fds.get(fd);
  if (!entry) throw Object.assign(new Error("bad fd"), { code: "EBADF" });
  return entry;
};
const under = (fd, ptr, len) => {
  const entry = open(fd);
  if (entry.dir === undefined) throw Object.assign(new Error("not a dir"), { code: "ENOTDIR" });
  return path.resolve(entry.dir, text(ptr, len));
};
const iovecs = (ptr, n) => {
  const v = view();
  return Array.from({ length: n }, (_, i) =>
    bytes(v.getUint32(ptr + 8 * i, true), v.getUint32(ptr + 8 * i + 4, true)));
};
const writeFilestat = (ptr, st) => {
  const v = view();
  v.setBigUint64(ptr, BigInt(st.dev), true);
  v.setBigUint64(ptr + 8, BigInt(st.ino), true);
  v.setUint8(ptr + 16, filetype(st));
  v.setBigUint64(ptr + 24, BigInt(st.nlink), true);
  v.setBigUint64(ptr + 32, BigInt(st.size), true);
  v.setBigUint64(ptr + 40, st.atimeNs, true);
  v.setBigUint64(ptr + 48, st.mtimeNs, true);
  v.setBigUint64(ptr + 56, st.ctimeNs, true);
};
const writeList = (list, ptrs, buf) => {
  const v = view();
  for (const s of list) {
    v.setUint32(ptrs, buf, true);
    bytes(buf, s.length).set(s);
    ptrs += 4;
    buf += s.length;
  }
};
const writeAll = (nodeFd, chunk, position) => {
  let done = 0;
  while (done < chunk.length) {
    try {
      done += fs.writeSync(nodeFd, chunk, done, chunk.length - done, position === null ? null : position + done);
    } catch (e) {
      if (e.code !== "EAGAIN") throw e; // a non-blocking pipe that is full: try again
    }
  }
  return done;
};

const wasi = {
  args_sizes_get(count, size) {
    view().setUint32(count, argv.length, true);
    view().setUint32(size, argv.reduce((n, s) => n + s.length, 0), true);
  },
  args_get(ptrs, buf) { writeList(argv, ptrs, buf); },
  environ_sizes_get(count, size) {
    view().setUint32(count, environ.length, true);
    view().setUint32(size, environ.reduce((n, s) => n + s.length, 0), true);
  },
  environ_get(ptrs, buf) { writeList(environ, ptrs, buf); },
  clock_time_get(id, _precision, out) {
    const ns = id === 0 ? BigInt(Date.now()) * 1_000_000n : process.hrtime.bigint();
    view().setBigUint64(out, ns, true);
  },
  random_get(ptr, len) { randomFillSync(bytes(ptr, len)); },
  sched_yield() {},
  proc_exit(code) { throw new Exit(code); },

  fd_prestat_get(fd, out) {
    if (fd !== PREOPEN) return ERRNO.EBADF;
    view().setUint8(out, 0); // a directory
    view().setUint32(out + 4, 1, true);
  },
  fd_prestat_dir_name(fd, ptr, len) {
    if (fd !== PREOPEN) return ERRNO.EBADF;
    bytes(ptr, len).set(Buffer.from("/").subarray(0, len));
  },
  fd_fdstat_get(fd, out) {
    const entry = open(fd);
    const type = entry.stdio !== undefined ? FILETYPE.charDevice
      : entry.dir !== undefined ? FILETYPE.directory : FILETYPE.regularFile;
    const v = view();
    v.setUint8(out, type);
    v.setUint16(out + 2, entry.append ? 1 : 0, true);
    v.setBigUint64(out + 8, 0xffff_ffff_ffff_ffffn, true);
    v.setBigUint64(out + 16, 0xffff_ffff_ffff_ffffn, true);
  },
  fd_filestat_get(fd, out) {
    const entry = open(fd);
    const nodeFd = entry.stdio ?? entry.node;
    writeFilestat(out, nodeFd === null ? fs.statSync(entry.dir, { bigint: true }) : fs.fstatSync(nodeFd, { bigint: true }));
  },
  path_filestat_get(fd, flags, ptr, len, out) {
    const p = under(fd, ptr, len);
    writeFilestat(out, flags & 1 ? fs.statSync(p, { bigint: true }) : fs.lstatSync(p, { bigint: true }));
  },
  path_open(fd, _dirflags, ptr, len, oflags, rights, _inheriting, fdflags, out) {
    const p = under(fd, ptr, len);
    const c = fs.constants;
    const reads = (rights & 2n) !== 0n; // fd_read
    const writes = (rights & 64n) !== 0n; // fd_write
    let flags = writes ? (reads ? c.O_RDWR : c.O_WRONLY) : c.O_RDONLY;
    if (oflags & 1) flags |= c.O_CREAT;
    if (oflags & 2) flags |= c.O_DIRECTORY;
    if (oflags & 4) flags |= c.O_EXCL;
    if (oflags & 8) flags |= c.O_TRUNC;
    if (fdflags & 1) flags |= c.O_APPEND;
    const node = fs.openSync(p, flags, 0o666);
    const isDir = fs.fstatSync(node).isDirectory();
    const id = nextFd++;
    fds.set(id, isDir ? { dir: p, node } : { node, pos: 0, append: (fdflags & 1) !== 0 });
    view().setUint32(out, id, true);
  },
  path_create_directory(fd, ptr, len) { fs.mkdirSync(under(fd, ptr, len)); },
  fd_close(fd) {
    const entry = open(fd);
    if (entry.node != null) fs.closeSync(entry.node);
    fds.delete(fd);
  },
  fd_read(fd, iovs, n, out) {
    const entry = open(fd);
    let total = 0;
    if (entry.stdio === undefined) {
      if (entry.dir !== undefined) return ERRNO.EISDIR;
      for (const iov of iovecs(iovs, n)) {
        const got = fs.readSync(entry.node, iov, 0, iov.length, entry.pos);
        entry.pos += got;
        total += got;
        if (got < iov.length) break;
      }
    } // stdin reads as empty
    view().setUint32(out, total, true);
  },
  fd_write(fd, iovs, n, out) {
    const entry = open(fd);
    if (entry.dir !== undefined) return ERRNO.EISDIR;
    let total = 0;
    for (const chunk of iovecs(iovs, n)) {
      if (entry.stdio !== undefined) {
        total += writeAll(entry.stdio, chunk, null);
      } else {
        const at = entry.append ? fs.fstatSync(entry.node).size : entry.pos;
        total += writeAll(entry.node, chunk, at);
        entry.pos = at + chunk.length;
      }
    }
    view().setUint32(out, total, true);
  },
  fd_seek(fd, offset, whence, out) {
    const entry = open(fd);
    if (entry.pos === undefined) return ERRNO.ESPIPE;
    const base = whence === 0 ? 0n
      : whence === 1 ? BigInt(entry.pos)
      : whence === 2 ? fs.fstatSync(entry.node, { bigint: true }).size
      : null;
    if (base === null || base + offset < 0n) return ERRNO.EINVAL;
    entry.pos = Number(base + offset);
    view().setBigUint64(out, base + offset, true);
  },
  fd_readdir(fd, buf, len, cookie, out) {
    const entry = open(fd);
    if (entry.dir === undefined) return ERRNO.ENOTDIR;
    entry.listing ??= fs.readdirSync(entry.dir, { withFileTypes: true });
    let used = 0;
    for (let i = Number(cookie); i < entry.listing.length && used < len; i++) {
      const d = entry.listing[i];
      const name = Buffer.from(d.name);
      // A dirent (24 bytes) then its name; cut short at the buffer's end, which tells the
      // caller to ask again from this cookie with a bigger buffer.
      const head = new Uint8Array(24); // d_ino stays 0
      const hv = new DataView(head.buffer);
      hv.setBigUint64(0, BigInt(i + 1), true);
      hv.setUint32(16, name.length, true);
      hv.setUint8(20, filetype(d));
      const record = Buffer.concat([head, name]);
      const take = Math.min(record.length, len - used);
      bytes(buf + used, take).set(record.subarray(0, take));
      used += take;
    }
    view().setUint32(out, used, true);
  },
};

const imports = { wasi_snapshot_preview1: Object.fromEntries(
  Object.entries(wasi).map(([name, f]) => [name, guarded(f)])) };
const module = new WebAssembly.Module(fs.readFileSync(wasmPath));
const instance = new WebAssembly.Instance(module, imports);
memory = instance.exports.memory;
let code = 0;
try {
  instance.exports._start();
} catch (e) {
  if (!(e instanceof Exit)) throw e;
  code = e.code;
}
process.exit(code);
