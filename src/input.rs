//! The one entry point every shell reads a graph through: bytes in — a graph dump
//! (`graph-dump-v1.md`) or a PyTorch trace log (`TORCH_TRACE`), either plain or gzip, told
//! apart by their content — and a [`Dump`], [`Graph`] or prepared [`Planner`] out. A trace log
//! holds several graphs; `graph` picks one (0-based, in log order), and may be left out when
//! there is only one. Pure and single-threaded, so the browser calls it as the CLI does.

use crate::dump::{self, Dump, DumpError, NodeSink, Source};
use crate::graph::{Graph, GraphBuilder};
use crate::planner::Planner;
use crate::signature::SignatureHasher;
use crate::tracelog::{self, GraphContent, GraphSummary, TraceLog, TraceLogError};
use std::borrow::{Borrow, Cow};
use std::cell::Cell;
use std::fmt;

/// The input-size limit's default, in MiB: enough for a 2M-node dump (about 900 MB of JSON).
/// The CLI's `--max-input-mb` and the app's `limit_mb` setting change it.
pub const DEFAULT_MAX_INPUT_MB: u64 = 1024;

/// How much input the readers take. The limit applies to the bytes as given and, for gzip, to
/// what they decompress to, so neither `/dev/zero` nor a gzip bomb is read until memory runs
/// out: both end in [`TooLarge`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_input_bytes: u64,
}

impl Limits {
    /// A limit of `mb` MiB.
    pub fn from_mb(mb: u64) -> Limits {
        Limits {
            max_input_bytes: mb.saturating_mul(1 << 20),
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::from_mb(DEFAULT_MAX_INPUT_MB)
    }
}

thread_local! {
    static LIMITS: Cell<Limits> = Cell::new(Limits::default());
}

/// The limits the readers on this thread apply (the default until [`set_limits`]).
pub fn limits() -> Limits {
    LIMITS.with(Cell::get)
}

/// Sets the limits for the readers on this thread: the CLI does it once from
/// `--max-input-mb`, the app from its `limit_mb` setting. (Per thread, so tests that try
/// small limits do not change other tests' limits.)
pub fn set_limits(limits: Limits) {
    LIMITS.with(|l| l.set(limits));
}

/// An input over the input-size limit. `Display` says how large, the limit, and how to raise
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The input's size, when known (a stream read up to the limit only knows "more").
    pub size: Option<u64>,
    pub limit: u64,
    /// Whether the limit was passed while decompressing gzip data.
    pub decompressed: bool,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let human = crate::timeline::scene::human_bytes;
        let what = if self.decompressed {
            "the gzip data decompresses to"
        } else {
            "the input is"
        };
        match self.size {
            Some(size) => write!(f, "{what} {} ({size} bytes)", human(size))?,
            None => write!(f, "{what} more than")?,
        }
        write!(
            f,
            "{} the input-size limit of {} ({} MiB); raise the limit to read it (--max-input-mb N \
             on the command line, limit_mb in the app)",
            if self.size.is_some() {
                ", more than"
            } else {
                ""
            },
            human(self.limit),
            self.limit >> 20
        )
    }
}

impl std::error::Error for TooLarge {}

/// Checks an input's size against the limit.
pub fn check_size(size: u64) -> Result<(), TooLarge> {
    let limit = limits().max_input_bytes;
    if size > limit {
        return Err(TooLarge {
            size: Some(size),
            limit,
            decompressed: false,
        });
    }
    Ok(())
}

/// Reads all of `reader` (a file, a pipe, `/dev/zero`) up to the input-size limit: more is
/// [`TooLarge`], never an allocation failure. `size_hint` (a file's length) is checked first,
/// and the buffer is sized from it once.
pub fn read_limited(
    mut reader: impl std::io::Read,
    size_hint: Option<u64>,
) -> std::io::Result<Vec<u8>> {
    let limit = limits().max_input_bytes;
    let mut out = Vec::new();
    if let Some(size) = size_hint {
        check_size(size).map_err(std::io::Error::other)?;
        // Grown by doubling, the buffer of a 44 MB file was copied and its fresh pages
        // zeroed over and over: a quarter of a `plan` run at 100k nodes (docs/performance.md).
        // One byte more lets the final read see the end without growing. A reservation that
        // cannot be had is left to the growth, which reports running out.
        let _ = out.try_reserve_exact(
            usize::try_from(size)
                .unwrap_or(usize::MAX)
                .saturating_add(1),
        );
    }
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if out.len() as u64 + n as u64 > limit {
            return Err(std::io::Error::other(TooLarge {
                size: None,
                limit,
                decompressed: false,
            }));
        }
        out.try_reserve(n)
            .map_err(|_| std::io::Error::other(out_of_memory(out.len() + n)))?;
        out.extend_from_slice(&chunk[..n]);
    }
}

fn out_of_memory(bytes: usize) -> String {
    format!(
        "not enough memory to hold {} of input; lower the input-size limit or free memory",
        crate::timeline::scene::human_bytes(bytes as u64)
    )
}

/// Decompresses gzip data (one member or several), up to the input-size limit. Bytes after
/// the last member that are not another member are an error that says so (not "unexpected
/// end of file"), and so is output past the limit: a gzip bomb stops at the limit.
pub fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let limit = limits().max_input_bytes;
    let mut out: Vec<u8> = Vec::new();
    // Sized once from what the trailer says (bounded by deflate's best ratio and the limit):
    // grown by doubling, the buffer of a 449 MB dump peaked at 1 GB and its copies and fresh
    // pages cost more than the decompression (docs/performance.md). A reservation that
    // cannot be had is left to the growth.
    let hint = crate::dump::gzip_size_hint(bytes).min(usize::try_from(limit).unwrap_or(usize::MAX));
    let _ = out.try_reserve_exact(hint);
    let mut rest = bytes;
    let mut chunk = vec![0u8; 1 << 16];
    let mut members = 0usize;
    loop {
        let offset = bytes.len() - rest.len();
        let mut decoder = flate2::bufread::GzDecoder::new(rest);
        loop {
            let n = match decoder.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if members == 0 => return Err(e.to_string()),
                Err(e) => {
                    return Err(format!(
                        "gzip member {} (at byte {offset}) does not decompress: {e}",
                        members + 1
                    ))
                }
            };
            if out.len() as u64 + n as u64 > limit {
                return Err(TooLarge {
                    size: None,
                    limit,
                    decompressed: true,
                }
                .to_string());
            }
            out.try_reserve(n)
                .map_err(|_| out_of_memory(out.len() + n))?;
            out.extend_from_slice(&chunk[..n]);
        }
        members += 1;
        rest = decoder.into_inner();
        if rest.is_empty() {
            return Ok(out);
        }
        if !rest.starts_with(&[0x1f, 0x8b]) {
            let end = bytes.len() - rest.len();
            return Err(format!(
                "the gzip data is complete at byte {end} but {} more byte(s) follow that are \
                 not gzip (a file with something appended?)",
                rest.len()
            ));
        }
    }
}

/// What the bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Dump,
    TraceLog,
}

/// Why an input could not be read. `Display` is the message users see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputError {
    /// A graph dump that breaks a rule (or bytes that are neither a dump nor a log).
    Dump(DumpError),
    /// A trace log without graphs, with a graph that does not read, or a bad choice.
    TraceLog(TraceLogError),
    /// A graph other than 0 chosen in a dump, which holds one graph.
    NotALog { choice: usize },
    /// Over the input-size limit.
    TooLarge(TooLarge),
    /// The input could not be read (a file that failed while it was being read).
    Unreadable(String),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Dump(e) => e.fmt(f),
            InputError::TraceLog(e) => e.fmt(f),
            InputError::TooLarge(e) => e.fmt(f),
            InputError::Unreadable(e) => write!(f, "the input could not be read: {e}"),
            InputError::NotALog { choice } => write!(
                f,
                "--graph {choice} is out of range: the input is a graph dump, which holds one \
                 graph (--graph 0)"
            ),
        }
    }
}

impl std::error::Error for InputError {}

impl From<DumpError> for InputError {
    fn from(e: DumpError) -> InputError {
        InputError::Dump(e)
    }
}

impl From<TraceLogError> for InputError {
    fn from(e: TraceLogError) -> InputError {
        InputError::TraceLog(e)
    }
}

/// What the readers read: bytes (a dump or a trace log, plain or gzip), or a regular file
/// ([`Input::file`]), from which a plain dump is read a piece at a time as it is parsed and
/// never held whole. Bytes convert into it (`&[u8]`, `&Vec<u8>`, `Vec<u8>`, `Cow<[u8]>`).
pub enum Input<'a> {
    Bytes(Cow<'a, [u8]>),
    File(FileInput),
}

/// A regular file to read (see [`Input`]).
pub struct FileInput {
    file: std::fs::File,
    len: u64,
}

impl Input<'_> {
    /// `file`, read as it is parsed when it is a regular file holding a plain dump. Anything
    /// else (a pipe, a device, gzip, a trace log) is read whole here, up to the input-size
    /// limit, which a regular file's length is checked against first.
    pub fn file(file: std::fs::File) -> std::io::Result<Input<'static>> {
        let metadata = file.metadata()?;
        match metadata.is_file().then_some(metadata.len()) {
            Some(len) => {
                check_size(len).map_err(std::io::Error::other)?;
                Ok(Input::File(FileInput { file, len }))
            }
            None => Ok(Input::Bytes(Cow::Owned(read_limited(file, None)?))),
        }
    }
}

impl<'a> From<&'a [u8]> for Input<'a> {
    fn from(bytes: &'a [u8]) -> Input<'a> {
        Input::Bytes(Cow::Borrowed(bytes))
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for Input<'a> {
    fn from(bytes: &'a [u8; N]) -> Input<'a> {
        Input::Bytes(Cow::Borrowed(bytes))
    }
}

impl<'a> From<&'a Vec<u8>> for Input<'a> {
    fn from(bytes: &'a Vec<u8>) -> Input<'a> {
        Input::Bytes(Cow::Borrowed(bytes))
    }
}

impl From<Vec<u8>> for Input<'_> {
    fn from(bytes: Vec<u8>) -> Input<'static> {
        Input::Bytes(Cow::Owned(bytes))
    }
}

impl<'a> From<Cow<'a, [u8]>> for Input<'a> {
    fn from(bytes: Cow<'a, [u8]>) -> Input<'a> {
        Input::Bytes(bytes)
    }
}

impl FileInput {
    /// The file's bytes, whole.
    fn read_whole(mut self) -> Result<Vec<u8>, InputError> {
        use std::io::Seek;
        self.file
            .rewind()
            .and_then(|()| read_limited(&mut self.file, Some(self.len)))
            .map_err(|e| unreadable(&e))
    }

    /// Whether the file starts (after whitespace) with `{`: a plain dump, which is read as it
    /// is parsed; gzip and trace logs are read whole.
    fn holds_a_plain_object(&mut self) -> Result<bool, InputError> {
        use std::io::Seek;
        self.file.rewind().map_err(|e| unreadable(&e))?;
        let object = starts_with_an_object(&mut self.file).map_err(|e| unreadable(&e))?;
        self.file.rewind().map_err(|e| unreadable(&e))?;
        Ok(object)
    }

    /// The dump in the file, read a piece at a time; one the streamed reader declines is read
    /// whole (`dump::read_streamed_into`).
    fn read_dump_into(mut self, sink: &mut dyn NodeSink) -> Result<Dump, InputError> {
        let text_len = usize::try_from(self.len).unwrap_or(usize::MAX);
        if let Some(dump) = dump::read_streamed_into(Source::Reader(&mut self.file), text_len, sink)
        {
            return Ok(dump);
        }
        Ok(dump::read_owned_into(self.read_whole()?, sink)?)
    }
}

fn unreadable(e: &std::io::Error) -> InputError {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<TooLarge>())
    {
        Some(too_large) => InputError::TooLarge(*too_large),
        None => InputError::Unreadable(e.to_string()),
    }
}

/// The input as bytes, or a file that holds a plain dump.
enum Opened<'a> {
    Bytes(Cow<'a, [u8]>),
    PlainDump(FileInput),
}

fn open(input: Input<'_>) -> Result<Opened<'_>, InputError> {
    match input {
        Input::Bytes(bytes) => Ok(Opened::Bytes(bytes)),
        Input::File(mut file) => match file.holds_a_plain_object()? {
            true => Ok(Opened::PlainDump(file)),
            false => Ok(Opened::Bytes(Cow::Owned(file.read_whole()?))),
        },
    }
}

/// What the bytes are, and the bytes to read them from: a trace log decompressed; a dump as
/// given, since the dump reader decompresses gzip itself as it reads, without holding the
/// whole text (gzip is recognised by its magic bytes). Bytes may be given borrowed or owned
/// (`&[u8]`, `&Vec<u8>`, `Vec<u8>`); owned bytes of a plain dump are read in place, borrowed
/// ones are copied (the reader keeps the dump's text).
pub fn detect<'a>(bytes: impl Into<Cow<'a, [u8]>>) -> Result<(Format, Cow<'a, [u8]>), InputError> {
    let bytes = bytes.into();
    check_size(bytes.len() as u64).map_err(InputError::TooLarge)?;
    if bytes.starts_with(&[0x1f, 0x8b]) && gzip_holds_an_object(&bytes) {
        return Ok((Format::Dump, bytes));
    }
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        Cow::Owned(dump::gunzip(&bytes)?)
    } else {
        bytes
    };
    let format = if tracelog::looks_like_trace_log(&bytes) {
        Format::TraceLog
    } else {
        Format::Dump
    };
    Ok((format, bytes))
}

/// Whether `bytes` hold a graph dump rather than a trace log, as [`detect`] tells them
/// apart, without decompressing more than gzip's first kilobyte: gzip whose text does not
/// start with a JSON object (which `detect` decompresses to look at) counts as not a dump.
pub fn holds_a_dump(bytes: &[u8]) -> bool {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return gzip_holds_an_object(bytes);
    }
    !tracelog::looks_like_trace_log(bytes)
}

/// Whether gzip data decompresses to text that starts (after whitespace) with `{`: a JSON
/// object, never a trace log, told from the first kilobyte.
fn gzip_holds_an_object(bytes: &[u8]) -> bool {
    starts_with_an_object(flate2::bufread::GzDecoder::new(bytes)).unwrap_or(false)
}

/// Whether the first kilobyte `reader` gives starts (after whitespace) with `{`.
fn starts_with_an_object(mut reader: impl std::io::Read) -> std::io::Result<bool> {
    let mut start = [0u8; 1024];
    let mut got = 0;
    while got < start.len() {
        match reader.read(&mut start[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(start[..got]
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        == Some(&b'{'))
}

/// A dump given as bytes. Plain text is read by the reader that reads files, node by node
/// where the bytes lie (`dump::read_streamed_into`: its nodes parsed by hand, the text not
/// copied), and a dump that reader declines is read whole, which says what is wrong; gzip is
/// read as it decompresses (`dump::read_cow_into`).
fn read_dump_bytes(bytes: Cow<'_, [u8]>, sink: &mut dyn NodeSink) -> Result<Dump, InputError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(dump::read_cow_into(bytes, sink)?);
    }
    let bytes = match bytes {
        // In the browser the nodes keep their undecoded metadata as positions in the text
        // handed over, which the graph then keeps: copying what each node keeps was 100 ms of
        // malloc in a 100k-node dump with stack traces (every node's different).
        Cow::Owned(text) if cfg!(target_arch = "wasm32") && text.len() <= KEPT_TEXT_MAX => {
            let text: crate::meta::DumpText = std::sync::Arc::new(text);
            if let Some(dump) = dump::read_streamed_into(Source::document(&text), text.len(), sink)
            {
                return Ok(dump);
            }
            Cow::Owned(std::sync::Arc::unwrap_or_clone(text))
        }
        bytes => {
            if let Some(dump) = dump::read_streamed_into(Source::whole(&bytes), bytes.len(), sink) {
                return Ok(dump);
            }
            bytes
        }
    };
    Ok(dump::read_cow_into(bytes, sink)?)
}

/// Plain text up to this size is kept by the graph read from it in the browser (its nodes'
/// metadata kept as positions in it, `read_dump_bytes`); larger text is let go after the
/// read, the nodes keeping copies of what they need, so a graph read from a very large file
/// does not hold the whole file.
const KEPT_TEXT_MAX: usize = 256 << 20;

/// Reads the chosen graph as a dump. For a trace log, `warnings` holds what the log could
/// not say (group ranks, cut annotations).
pub fn read<'a>(input: impl Into<Input<'a>>, graph: Option<usize>) -> Result<Dump, InputError> {
    read_into(input, graph, &mut ())
}

/// [`read`], handing each node of a dump to `sink` as it is read.
fn read_into<'a>(
    input: impl Into<Input<'a>>,
    graph: Option<usize>,
    sink: &mut dyn NodeSink,
) -> Result<Dump, InputError> {
    let bytes = match open(input.into())? {
        Opened::PlainDump(file) => {
            check_dump_choice(graph)?;
            return file.read_dump_into(sink);
        }
        Opened::Bytes(bytes) => bytes,
    };
    let (format, bytes) = detect(bytes)?;
    match format {
        Format::Dump => {
            check_dump_choice(graph)?;
            read_dump_bytes(bytes, sink)
        }
        Format::TraceLog => {
            let log = TraceLog::scan(&bytes);
            let index = log.choose(graph)?;
            Ok(log.graph(index)?)
        }
    }
}

/// [`read`], then the graph's structure.
pub fn read_graph<'a>(
    input: impl Into<Input<'a>>,
    graph: Option<usize>,
) -> Result<Graph, InputError> {
    read_graph_keeping(input, graph, true)
}

/// [`read_graph`] for a caller that will neither hash the graph again nor write it out
/// (`commlens render` and `roles`): each node's `repr` (`str(target)`, `str(args)`,
/// `str(kwargs)` as Python printed them) is hashed into the signature as the node is read, and
/// then not kept. The graph's [`Dump::signature`] is the signature of the dump as read; a
/// graph derived from this one (`crate::derive_tags`) could not be hashed as the reference
/// hashes it. The reprs were a tenth of the memory of a 500k-node run (45 MB of 435 MB).
/// A trace log's graph keeps them.
pub fn read_graph_without_repr<'a>(
    input: impl Into<Input<'a>>,
    graph: Option<usize>,
) -> Result<Graph, InputError> {
    read_graph_keeping(input, graph, false)
}

/// [`read_graph`], the nodes keeping their reprs or not. Each node's inputs and facts are
/// found as it is read, while it is in cache: a pass over the nodes after the read took
/// 0.09 s at 1M nodes, against 0.05 s more reading.
fn read_graph_keeping<'a>(
    input: impl Into<Input<'a>>,
    graph: Option<usize>,
    keeps_repr: bool,
) -> Result<Graph, InputError> {
    /// The graph builder, and whether the nodes keep their reprs.
    struct Building(GraphBuilder, bool);
    impl NodeSink for Building {
        fn begin(&mut self) {
            self.0.begin();
        }

        fn expect_nodes(&mut self, nodes: usize) {
            self.0.expect_nodes(nodes);
        }

        fn node(&mut self, index: usize, node: &crate::dump::Node) {
            self.0.node(index, node);
        }

        fn keeps_repr(&self) -> bool {
            self.1
        }
    }
    let mut building = Building(GraphBuilder::default(), keeps_repr);
    let dump = read_into(input, graph, &mut building)?;
    Ok(building.0.finish(dump))
}

/// Reads the chosen graph prepared for planning. A dump is read in one pass
/// (`planner::read_prepared`); a trace log's graph is read, then prepared.
pub fn read_prepared<'a, G: Borrow<Graph> + From<Graph>>(
    input: impl Into<Input<'a>>,
    graph: Option<usize>,
) -> Result<Planner<G>, InputError> {
    read_prepared_into(input, graph, &mut ())
}

/// [`read_prepared`] for a caller that will neither hash the graph again nor write it out
/// (`read_and_plan`, for reports): each node's `repr` is let go once hashed, as
/// [`read_graph_without_repr`] does. A trace log's graph keeps them.
pub fn read_prepared_without_repr<'a, G: Borrow<Graph> + From<Graph>>(
    input: impl Into<Input<'a>>,
    graph: Option<usize>,
) -> Result<Planner<G>, InputError> {
    /// No extra pass; the reprs let go.
    struct WithoutRepr;
    impl crate::graph::FactsSink for WithoutRepr {
        fn begin(&mut self) {}

        fn node(&mut self, _: usize, _: &crate::dump::Node, _: crate::graph::NodeFacts) {}

        fn keeps_repr(&self) -> bool {
            false
        }
    }
    read_prepared_into(input, graph, &mut WithoutRepr)
}

/// [`read_prepared`], a dump's nodes also handed to `extra`.
fn read_prepared_into<'a, G: Borrow<Graph> + From<Graph>>(
    input: impl Into<Input<'a>>,
    graph: Option<usize>,
    extra: &mut dyn crate::graph::FactsSink,
) -> Result<Planner<G>, InputError> {
    let bytes = match open(input.into())? {
        Opened::PlainDump(file) => {
            check_dump_choice(graph)?;
            return crate::planner::prepare_while_reading(|sink| file.read_dump_into(sink), extra);
        }
        Opened::Bytes(bytes) => bytes,
    };
    let (format, bytes) = detect(bytes)?;
    match format {
        Format::Dump => {
            check_dump_choice(graph)?;
            Ok(crate::planner::prepare_while_reading(
                |sink| read_dump_bytes(bytes, sink),
                extra,
            )?)
        }
        Format::TraceLog => {
            let log = TraceLog::scan(&bytes);
            let index = log.choose(graph)?;
            // One pass, as for a dump: each node is handed to the graph builder and the
            // planner's checks, and hashed for the graph signature, as it is read.
            struct Hashing<'a> {
                inner: &'a mut dyn NodeSink,
                hasher: SignatureHasher,
            }
            impl NodeSink for Hashing<'_> {
                fn begin(&mut self) {
                    self.inner.begin();
                    self.hasher = SignatureHasher::default();
                }

                fn node(&mut self, index: usize, node: &crate::dump::Node) {
                    self.inner.node(index, node);
                    self.hasher.add(node);
                }

                fn expect_nodes(&mut self, nodes: usize) {
                    self.inner.expect_nodes(nodes);
                }
            }
            Ok(crate::planner::prepare_while_reading(
                |inner| {
                    let mut sink = Hashing {
                        inner,
                        hasher: SignatureHasher::default(),
                    };
                    let mut dump = log.graph_into(index, &mut sink)?;
                    dump.signature = sink.hasher.finish();
                    Ok::<_, InputError>(dump)
                },
                &mut (),
            )?)
        }
    }
}

/// The graphs the input holds: every post-grad graph of a trace log (an unreadable one with
/// its error), or the one graph of a dump.
pub fn graphs<'a>(input: impl Into<Input<'a>>) -> Result<Vec<GraphSummary>, InputError> {
    let bytes = match open(input.into())? {
        Opened::PlainDump(file) => return Ok(vec![dump_summary(file.read_dump_into(&mut ())?)]),
        Opened::Bytes(bytes) => bytes,
    };
    let (format, bytes) = detect(bytes)?;
    match format {
        Format::Dump => Ok(vec![dump_summary(read_dump_bytes(bytes, &mut ())?)]),
        Format::TraceLog => {
            let log = TraceLog::scan(&bytes);
            if log.is_empty() {
                // Says what the log holds instead.
                log.choose(None)?;
            }
            Ok(log.summaries())
        }
    }
}

/// A dump's one graph, as [`graphs`] lists it.
fn dump_summary(dump: Dump) -> GraphSummary {
    GraphSummary {
        index: 0,
        compile_id: "-".to_string(),
        rank: dump
            .source
            .as_ref()
            .and_then(|s| s.get("rank"))
            .and_then(serde_json::Value::as_i64),
        line: 1,
        content: Ok(GraphContent::of(&dump.nodes)),
    }
}

/// Whether the bytes hold a graph (a trace log, or a JSON document with `"format":
/// "commlens.graph"`) rather than some other JSON, such as a plan report.
pub fn holds_graph(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Tagged {
        format: Option<String>,
    }
    match detect(bytes) {
        Ok((Format::TraceLog, _)) => true,
        Ok((Format::Dump, bytes)) => {
            let text = if bytes.starts_with(&[0x1f, 0x8b]) {
                match dump::gunzip(&bytes) {
                    Ok(text) => Cow::Owned(text),
                    Err(_) => return false,
                }
            } else {
                bytes
            };
            serde_json::from_slice::<Tagged>(&text)
                .is_ok_and(|t| t.format.as_deref() == Some(dump::FORMAT))
        }
        Err(_) => false,
    }
}

fn check_dump_choice(graph: Option<usize>) -> Result<(), InputError> {
    match graph {
        Some(choice) if choice != 0 => Err(InputError::NotALog { choice }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "V1201 04:26:36.236000 20096 torch/_inductor/compile_fx.py:1725] {\"artifact\": {\"name\": \"inductor_post_grad_graph\", \"encoding\": \"string\"}, \"rank\": 0, \"frame_id\": 0, \"frame_compile_id\": 0, \"attempt\": 0, \"has_payload\": \"x\"}\n\tclass GraphModule(torch.nn.Module):\n\t    def forward(self, p: \"f32[4][1]cpu\"):\n\t        return (p,)\n\t\n";

    #[test]
    fn content_decides_plain_or_gzip() {
        assert_eq!(detect(LOG.as_bytes()).unwrap().0, Format::TraceLog);
        assert_eq!(detect(b"{}").unwrap().0, Format::Dump);
        let mut gz = Vec::new();
        {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
            e.write_all(LOG.as_bytes()).unwrap();
            e.finish().unwrap();
        }
        let dump = read(&gz, None).unwrap();
        assert_eq!(dump.nodes.len(), 2);
        assert_eq!(read(&gz, Some(0)).unwrap().nodes.len(), 2);
        assert!(matches!(
            read(LOG.as_bytes(), Some(1)),
            Err(InputError::TraceLog(TraceLogError::OutOfRange {
                choice: 1,
                ..
            }))
        ));
    }

    #[test]
    fn a_dump_holds_graph_zero_only() {
        let dump = br#"{"format": "commlens.graph", "version": 1, "nodes": []}"#;
        assert!(read(dump, Some(0)).is_ok());
        assert_eq!(
            read(dump, Some(2)).unwrap_err().to_string(),
            "--graph 2 is out of range: the input is a graph dump, which holds one graph (--graph 0)"
        );
        assert_eq!(graphs(dump).unwrap().len(), 1);
        assert!(holds_graph(dump) && holds_graph(LOG.as_bytes()));
        assert!(!holds_graph(br#"{"format": "other", "buckets": []}"#) && !holds_graph(b"[1]"));
        // Neither a dump nor a log: the dump reader's message.
        assert!(matches!(
            read(b"hello", None),
            Err(InputError::Dump(DumpError::Json { .. }))
        ));
    }
}
