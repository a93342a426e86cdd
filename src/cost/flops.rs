//! FLOP counts equal to torch 2.15's `torch/utils/flop_counter.py`: every formula of its
//! `flop_registry` (plus the `torch_attn` varlen formulas `torch.nn.attention.varlen` adds
//! to it), applied to the shapes the dump records, as `FlopCounterMode` applies them to the
//! shapes of the fake tensors an op runs on.
//!
//! Ops without a formula count 0, as in `FlopCounterMode`. `FlopCounterMode` would first
//! decompose an op that has a `CompositeImplicitAutograd` kernel (`aten.linear`,
//! `aten.matmul`, `aten.einsum`, ...) and count its parts; aten graphs traced by `make_fx`,
//! AOTAutograd or Inductor never contain such ops, so they count 0 here.
//!
//! Where torch's formula would raise (shapes that do not fit, a size that is symbolic), the
//! count is unknown (`None`): a dump records no size hints, so symbolic sizes cannot be
//! counted. The nested-tensor (jagged) forms of the attention formulas take torch's path
//! for fake offsets: every sequence counts `max_q`/`max_k` long.

use super::tensor::{static_dim, TensorMeta};
use crate::dump::{lookup, node_index, Node};
use crate::graph::split_op;
use crate::value::PyValue;

/// The formula registered for an op packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Formula {
    Mm,
    Addmm,
    Bmm,
    Baddbmm,
    ScaledMm,
    Conv,
    ConvBackward,
    Sdpa,
    SdpaBackward,
    FlashForward,
    EfficientForward,
    FlashBackward,
    EfficientBackward,
    FlexForward,
    FlexBackward,
    VarlenForward,
    VarlenOut,
    VarlenBackward,
}

impl Formula {
    /// The formula registered for `target`'s packet (`flop_registry[target.overloadpacket]`).
    pub fn of(target: &str) -> Option<Formula> {
        let (namespace, op, _) = split_op(target)?;
        Some(match (namespace, op) {
            ("aten", "mm") => Formula::Mm,
            ("aten", "addmm") => Formula::Addmm,
            ("aten", "bmm") => Formula::Bmm,
            ("aten", "baddbmm") => Formula::Baddbmm,
            ("aten", "_scaled_mm") => Formula::ScaledMm,
            (
                "aten",
                "convolution"
                | "_convolution"
                | "cudnn_convolution"
                | "convolution_overrideable"
                | "_slow_conv2d_forward",
            ) => Formula::Conv,
            ("aten", "convolution_backward") => Formula::ConvBackward,
            (
                "aten",
                "_scaled_dot_product_efficient_attention"
                | "_scaled_dot_product_flash_attention"
                | "_scaled_dot_product_flash_attention_for_cpu"
                | "_scaled_dot_product_cudnn_attention",
            ) => Formula::Sdpa,
            (
                "aten",
                "_scaled_dot_product_efficient_attention_backward"
                | "_scaled_dot_product_flash_attention_backward"
                | "_scaled_dot_product_flash_attention_for_cpu_backward"
                | "_scaled_dot_product_cudnn_attention_backward",
            ) => Formula::SdpaBackward,
            ("aten", "_flash_attention_forward") => Formula::FlashForward,
            ("aten", "_efficient_attention_forward") => Formula::EfficientForward,
            ("aten", "_flash_attention_backward") => Formula::FlashBackward,
            ("aten", "_efficient_attention_backward") => Formula::EfficientBackward,
            ("higher_order", "flex_attention") => Formula::FlexForward,
            ("higher_order", "flex_attention_backward") => Formula::FlexBackward,
            ("torch_attn", "_varlen_attn") => Formula::VarlenForward,
            ("torch_attn", "_varlen_attn_out") => Formula::VarlenOut,
            ("torch_attn", "_varlen_attn_backward") => Formula::VarlenBackward,
            _ => return None,
        })
    }

    /// The count `FlopCounterMode` adds for this call, or `None` where torch's formula would
    /// raise or the sizes are symbolic.
    pub fn count(self, call: &Call) -> Option<u128> {
        match self {
            Formula::Mm => mm(&call.shape(0, "self")?, &call.shape(1, "mat2")?),
            Formula::Addmm => mm(&call.shape(1, "mat1")?, &call.shape(2, "mat2")?),
            Formula::Bmm => bmm(&call.shape(0, "self")?, &call.shape(1, "mat2")?),
            Formula::Baddbmm => bmm(&call.shape(1, "batch1")?, &call.shape(2, "batch2")?),
            Formula::ScaledMm => mm(&call.shape(0, "self")?, &call.shape(1, "mat2")?),
            Formula::Conv => {
                let x = call.shape(0, "input")?;
                let w = call.shape(1, "weight")?;
                let transposed = call.arg(6, "transposed")?.truthy();
                let out = call.out_shape();
                let out = out.as_ref().and_then(|o| o.first()?.as_deref());
                conv(&x, &w, out, transposed)
            }
            Formula::ConvBackward => conv_backward(call),
            Formula::Sdpa => sdpa(
                &call.shape(0, "query")?,
                &call.shape(1, "key")?,
                &call.shape(2, "value")?,
            ),
            Formula::SdpaBackward => sdpa_backward(
                &call.shape(0, "grad_out")?,
                &call.shape(1, "query")?,
                &call.shape(2, "key")?,
                &call.shape(3, "value")?,
            ),
            Formula::FlashForward => attention(call, Layout::FLASH_FORWARD),
            Formula::EfficientForward => attention(call, Layout::EFFICIENT_FORWARD),
            Formula::FlashBackward => attention(call, Layout::FLASH_BACKWARD),
            Formula::EfficientBackward => attention(call, Layout::EFFICIENT_BACKWARD),
            Formula::FlexForward => sdpa(
                &call.shape(0, "query")?,
                &call.shape(1, "key")?,
                &call.shape(2, "value")?,
            ),
            Formula::FlexBackward => {
                let grad_out = match call.arg(5, "grad_out")? {
                    PyValue::None => call.shape(3, "out")?,
                    value => call.shape_of(value)?,
                };
                sdpa_backward(
                    &grad_out,
                    &call.shape(0, "query")?,
                    &call.shape(1, "key")?,
                    &call.shape(2, "value")?,
                )
            }
            Formula::VarlenForward => attention(call, Layout::VARLEN_FORWARD),
            Formula::VarlenOut => attention(call, Layout::VARLEN_OUT),
            Formula::VarlenBackward => attention(call, Layout::VARLEN_BACKWARD),
        }
    }

    /// Whether the roofline scales this formula's count by the node's
    /// `meta["custom"]["sparsity_hint"]` (flex attention's formulas read it when
    /// `get_compute_time` passes the node's metadata).
    pub fn reads_sparsity_hint(self) -> bool {
        matches!(self, Formula::FlexForward | Formula::FlexBackward)
    }
}

/// The static shapes of the nodes a call reads (their `val` when it is one tensor whose
/// dimensions are all plain ints).
pub trait InputShapes {
    fn shape(&self, node: usize) -> Option<&[u64]>;
}

/// One call as a formula sees it: the node's arguments with tensors replaced by the shapes
/// their nodes record, and the node's own result as `out_val`.
pub struct Call<'a> {
    pub node: &'a Node,
    /// Resolves argument references to shapes.
    pub inputs: &'a dyn InputShapes,
}

impl<'a> Call<'a> {
    /// Argument `pos`, or keyword `name` (the dispatcher passes positional parameters by
    /// position, whichever way the graph wrote them).
    fn arg(&self, pos: usize, name: &str) -> Option<&'a PyValue> {
        self.node
            .args
            .get(pos)
            .or_else(|| lookup(&self.node.kwargs, name))
    }

    fn shape_of(&self, value: &PyValue) -> Option<Vec<u128>> {
        let dims = self.inputs.shape(node_index(value)?)?;
        Some(dims.iter().map(|&d| u128::from(d)).collect())
    }

    fn shape(&self, pos: usize, name: &str) -> Option<Vec<u128>> {
        self.shape_of(self.arg(pos, name)?)
    }

    /// `out_shape`: the shapes of the node's result, one per element of a tuple result
    /// (`None` for an element that is no tensor).
    fn out_shape(&self) -> Option<Vec<Option<Vec<u128>>>> {
        let val = super::tensor::val(self.node)?;
        match &*val {
            PyValue::List(items) => Some(
                items
                    .iter()
                    .map(|v| TensorMeta::of(v).and_then(|t| t.static_shape()))
                    .collect(),
            ),
            value => Some(vec![TensorMeta::of(value)?.static_shape()]),
        }
    }
}

/// `a * b * ...` as Python ints would give it, `None` beyond `u128`.
fn product(factors: &[u128]) -> Option<u128> {
    factors.iter().try_fold(1u128, |acc, f| acc.checked_mul(*f))
}

/// `mm_flop`.
fn mm(a: &[u128], b: &[u128]) -> Option<u128> {
    let [m, k] = *a else { return None };
    let [k2, n] = *b else { return None };
    if k != k2 {
        return None;
    }
    product(&[m, n, 2, k])
}

/// `bmm_flop`.
fn bmm(a: &[u128], b: &[u128]) -> Option<u128> {
    let [batch, m, k] = *a else { return None };
    let [batch2, k2, n] = *b else { return None };
    if batch != batch2 || k != k2 {
        return None;
    }
    product(&[batch, m, n, 2, k])
}

/// `conv_flop_count(x_shape, w_shape, out_shape, transposed)`.
fn conv(x: &[u128], w: &[u128], out: Option<&[u128]>, transposed: bool) -> Option<u128> {
    let batch = *x.first()?;
    let conv_shape = if transposed { x } else { out? };
    let spatial = conv_shape.get(2..).unwrap_or_default();
    let [c_out, c_in, filter @ ..] = w else {
        return None;
    };
    product(&[product(spatial)?, product(filter)?, batch, *c_out, *c_in, 2])
}

/// `t(shape)` of `conv_backward_flop`: the first two dimensions swapped.
fn swap01(shape: &[u128]) -> Option<Vec<u128>> {
    let [a, b, rest @ ..] = shape else {
        return None;
    };
    let mut out = vec![*b, *a];
    out.extend_from_slice(rest);
    Some(out)
}

/// `conv_backward_flop`.
fn conv_backward(call: &Call) -> Option<u128> {
    let grad_out = call.shape(0, "grad_output")?;
    let x = call.shape(1, "input")?;
    let w = call.shape(2, "weight")?;
    let transposed = call.arg(7, "transposed")?.truthy();
    let mask = call.arg(10, "output_mask")?.as_list()?;
    let out = call.out_shape()?;
    let wants = |i: usize| mask.get(i).map(PyValue::truthy);
    let mut count = 0u128;
    if wants(0)? {
        let grad_input = out.first()?.as_deref()?;
        count = count.checked_add(conv(&grad_out, &w, Some(grad_input), !transposed)?)?;
    }
    if wants(1)? {
        let grad_weight = swap01(out.get(1)?.as_deref()?)?;
        let flops = if transposed {
            conv(&swap01(&grad_out)?, &swap01(&x)?, Some(&grad_weight), false)?
        } else {
            conv(&swap01(&x)?, &swap01(&grad_out)?, Some(&grad_weight), false)?
        };
        count = count.checked_add(flops)?;
    }
    Some(count)
}

/// `h_q < h_kv or h_q % h_kv != 0` is an error (GQA needs whole groups).
fn heads_fit(h_q: u128, h_kv: u128) -> bool {
    h_q >= h_kv && h_kv != 0 && h_q.is_multiple_of(h_kv)
}

/// `sdpa_flop_count(query_shape, key_shape, value_shape)`.
fn sdpa(q: &[u128], k: &[u128], v: &[u128]) -> Option<u128> {
    let [b, h_q, s_q, d_q] = *q else { return None };
    let [b2, h_kv, s_k, d2] = *k else { return None };
    let [b3, h3, s3, d_v] = *v else { return None };
    if !(b == b2 && b2 == b3 && h_kv == h3 && d_q == d2 && s_k == s3 && heads_fit(h_q, h_kv)) {
        return None;
    }
    let bh = b.checked_mul(h_q)?;
    bmm(&[bh, s_q, d_q], &[bh, d_q, s_k])?.checked_add(bmm(&[bh, s_q, s_k], &[bh, s_k, d_v])?)
}

/// `sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)`.
fn sdpa_backward(go: &[u128], q: &[u128], k: &[u128], v: &[u128]) -> Option<u128> {
    let [b, h_q, s_q, d_q] = *q else { return None };
    let [b2, h_kv, s_k, d2] = *k else { return None };
    let [b3, h3, s3, d_v] = *v else { return None };
    let [b4, h4, s4, d4] = *go else { return None };
    if !(b == b2 && b2 == b3 && b3 == b4 && h_kv == h3 && h_q == h4 && heads_fit(h_q, h_kv)) {
        return None;
    }
    if !(d_q == d2 && d_v == d4 && s_k == s3 && s_q == s4) {
        return None;
    }
    let bh = b.checked_mul(h_q)?;
    [
        bmm(&[bh, s_q, d_q], &[bh, d_q, s_k])?,
        bmm(&[bh, s_q, d_v], &[bh, d_v, s_k])?,
        bmm(&[bh, s_k, s_q], &[bh, s_q, d_v])?,
        bmm(&[bh, s_q, s_k], &[bh, s_k, d_q])?,
        bmm(&[bh, d_q, s_q], &[bh, s_q, s_k])?,
    ]
    .iter()
    .try_fold(0u128, |acc, f| acc.checked_add(*f))
}

/// Where the arguments of a raw attention formula sit (positions; keyword names are the
/// schema's, which are also the formula's parameter names).
#[derive(Clone, Copy)]
struct Layout {
    grad_out: Option<(usize, &'static str)>,
    query: usize,
    cum_q: (usize, &'static str),
    cum_k: (usize, &'static str),
    max_q: (usize, &'static str),
    max_k: (usize, &'static str),
    /// Flash attention takes `(batch, seq, heads, dim)` and its formula transposes a 4-d
    /// query to `(batch, heads, seq, dim)`; the efficient-attention formula does not.
    transpose_dense: bool,
    /// The jagged (nested) layout's query is 3-d `(total, heads, dim)` (flash, varlen) or
    /// 4-d `(batch, total, heads, dim)` (efficient attention).
    nested_ndim: usize,
    /// `varlen_attn` forward reuses `cu_seq_q` when `cu_seq_k` is `None`.
    cum_k_defaults_to_q: bool,
}

impl Layout {
    const FLASH_FORWARD: Layout = Layout {
        grad_out: None,
        query: 0,
        cum_q: (3, "cum_seq_q"),
        cum_k: (4, "cum_seq_k"),
        max_q: (5, "max_q"),
        max_k: (6, "max_k"),
        transpose_dense: true,
        nested_ndim: 3,
        cum_k_defaults_to_q: false,
    };
    const EFFICIENT_FORWARD: Layout = Layout {
        grad_out: None,
        query: 0,
        cum_q: (4, "cu_seqlens_q"),
        cum_k: (5, "cu_seqlens_k"),
        max_q: (6, "max_seqlen_q"),
        max_k: (7, "max_seqlen_k"),
        transpose_dense: false,
        nested_ndim: 4,
        cum_k_defaults_to_q: false,
    };
    const FLASH_BACKWARD: Layout = Layout {
        grad_out: Some((0, "grad_out")),
        query: 1,
        cum_q: (6, "cum_seq_q"),
        cum_k: (7, "cum_seq_k"),
        max_q: (8, "max_q"),
        max_k: (9, "max_k"),
        transpose_dense: true,
        nested_ndim: 3,
        cum_k_defaults_to_q: false,
    };
    const EFFICIENT_BACKWARD: Layout = Layout {
        grad_out: Some((0, "grad_out")),
        query: 1,
        cum_q: (6, "cu_seqlens_q"),
        cum_k: (7, "cu_seqlens_k"),
        max_q: (8, "max_seqlen_q"),
        max_k: (9, "max_seqlen_k"),
        transpose_dense: false,
        nested_ndim: 4,
        cum_k_defaults_to_q: false,
    };
    const VARLEN_FORWARD: Layout = Layout {
        grad_out: None,
        query: 0,
        cum_q: (3, "cu_seq_q"),
        cum_k: (4, "cu_seq_k"),
        max_q: (5, "max_q"),
        max_k: (6, "max_k"),
        transpose_dense: false,
        nested_ndim: 3,
        cum_k_defaults_to_q: true,
    };
    const VARLEN_OUT: Layout = Layout {
        grad_out: None,
        query: 1,
        cum_q: (4, "cu_seq_q"),
        cum_k: (5, "cu_seq_k"),
        max_q: (6, "max_q"),
        max_k: (7, "max_k"),
        transpose_dense: false,
        nested_ndim: 3,
        cum_k_defaults_to_q: true,
    };
    const VARLEN_BACKWARD: Layout = Layout {
        grad_out: Some((0, "grad_out")),
        query: 1,
        cum_q: (6, "cu_seq_q"),
        cum_k: (7, "cu_seq_k"),
        max_q: (8, "max_q"),
        max_k: (9, "max_k"),
        transpose_dense: false,
        nested_ndim: 3,
        cum_k_defaults_to_q: false,
    };
}

/// `x.transpose(-2, -3)` of a shape.
fn transpose_23(shape: &[u128]) -> Option<Vec<u128>> {
    let n = shape.len();
    if n < 3 {
        return None;
    }
    let mut out = shape.to_vec();
    out.swap(n - 2, n - 3);
    Some(out)
}

/// The raw attention formulas (`_flash_attention_forward_flop`, ...,
/// `_varlen_attn_backward_flop`) with `_unpack_*_nested_shapes`.
fn attention(call: &Call, layout: Layout) -> Option<u128> {
    let names = ["query", "key", "value"];
    let mut q = call.shape(layout.query, names[0])?;
    let mut k = call.shape(layout.query + 1, names[1])?;
    let mut v = call.shape(layout.query + 2, names[2])?;
    let mut go = match layout.grad_out {
        Some((pos, name)) => Some(call.shape(pos, name)?),
        None => None,
    };
    let cum_q = call.arg(layout.cum_q.0, layout.cum_q.1)?;
    let mut cum_k = call.arg(layout.cum_k.0, layout.cum_k.1)?;
    if layout.cum_k_defaults_to_q && matches!(cum_k, PyValue::None) {
        cum_k = cum_q;
    }
    let max_q = call.arg(layout.max_q.0, layout.max_q.1)?;
    let max_k = call.arg(layout.max_k.0, layout.max_k.1)?;

    if matches!(cum_q, PyValue::None) {
        if layout.transpose_dense && q.len() == 4 {
            q = transpose_23(&q)?;
            k = transpose_23(&k)?;
            v = transpose_23(&v)?;
            if let Some(g) = &go {
                go = Some(transpose_23(g)?);
            }
        }
        return match &go {
            None => sdpa(&q, &k, &v),
            Some(g) => sdpa_backward(g, &q, &k, &v),
        };
    }

    // Jagged: every sequence counted at its maximum length (torch's path for fake offsets).
    if k.len() != layout.nested_ndim || v.len() != layout.nested_ndim {
        return None;
    }
    let heads_dim = |shape: &[u128]| -> Option<(u128, u128)> {
        if shape.len() != layout.nested_ndim {
            return None;
        }
        Some((shape[shape.len() - 2], shape[shape.len() - 1]))
    };
    let (h_q, d_q) = heads_dim(&q)?;
    let (h_k, d_k) = heads_dim(&k)?;
    let (h_v, d_v) = heads_dim(&v)?;
    if let Some(g) = &go {
        let mut expected = q[..q.len() - 2].to_vec();
        expected.extend([h_q, d_v]);
        if *g != expected {
            return None;
        }
    }
    let offsets = call.shape_of(cum_q)?;
    if offsets != call.shape_of(cum_k)? {
        return None;
    }
    let sequences = offsets.first()?.saturating_sub(1);
    if sequences == 0 {
        return Some(0);
    }
    let len_q = static_dim(max_q)?;
    let len_k = static_dim(max_k)?;
    let (qs, ks, vs) = (
        [1, h_q, len_q, d_q],
        [1, h_k, len_k, d_k],
        [1, h_v, len_k, d_v],
    );
    let one = match go {
        None => sdpa(&qs, &ks, &vs)?,
        Some(_) => sdpa_backward(&[1, h_q, len_q, d_v], &qs, &ks, &vs)?,
    };
    one.checked_mul(sequences)
}

/// `int(flops * (1.0 - sparsity))` with the node's clamped `custom["sparsity_hint"]`
/// (`_get_sparsity_hint` of the flex-attention formulas), as the roofline counts them.
pub fn apply_sparsity_hint(flops: u128, node: &Node) -> u128 {
    let hint = node
        .meta("custom")
        .and_then(PyValue::as_dict)
        .and_then(|custom| lookup(custom, "sparsity_hint"))
        .and_then(|h| match h {
            PyValue::Int(i) => Some(i.get() as f64),
            PyValue::Float(f) => Some(*f),
            PyValue::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        })
        .unwrap_or(0.0);
    let sparsity = hint.clamp(0.0, 1.0);
    if sparsity > 0.0 {
        (flops as f64 * (1.0 - sparsity)) as u128
    } else {
        flops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_formulas() {
        assert_eq!(mm(&[3, 4], &[4, 5]), Some(3 * 5 * 2 * 4));
        assert_eq!(mm(&[3, 4], &[5, 5]), None);
        assert_eq!(mm(&[3, 4, 1], &[4, 5]), None);
        assert_eq!(bmm(&[2, 3, 4], &[2, 4, 5]), Some(2 * 3 * 5 * 2 * 4));
        assert_eq!(bmm(&[2, 3, 4], &[3, 4, 5]), None);
        assert_eq!(mm(&[u128::MAX, 2], &[2, 2]), None);
    }

    #[test]
    fn conv_counts_output_points_or_input_points() {
        // 1x3x8x8 input, 4x3x3x3 filter, 1x4x6x6 output.
        let regular = conv(&[1, 3, 8, 8], &[4, 3, 3, 3], Some(&[1, 4, 6, 6]), false);
        assert_eq!(regular, Some(36 * 9 * 4 * 3 * 2));
        let transposed = conv(&[1, 3, 8, 8], &[4, 3, 3, 3], None, true);
        assert_eq!(transposed, Some(64 * 9 * 4 * 3 * 2));
        assert_eq!(conv(&[], &[4, 3], Some(&[1]), false), None);
    }

    #[test]
    fn attention_with_grouped_heads() {
        // 8 query heads over 2 key/value heads.
        let q = [2, 8, 16, 64];
        let kv = [2, 2, 32, 64];
        assert_eq!(sdpa(&q, &kv, &kv), Some(2 * (16 * 16 * 64 * 32 * 2)));
        assert_eq!(sdpa(&q, &[2, 3, 32, 64], &[2, 3, 32, 64]), None);
        assert_eq!(sdpa(&q, &[2, 0, 32, 64], &[2, 0, 32, 64]), None);
        assert!(sdpa_backward(&q, &q, &kv, &kv).is_some());
        assert_eq!(sdpa_backward(&kv, &q, &kv, &kv), None);
    }

    #[test]
    fn registry_by_packet() {
        assert_eq!(Formula::of("aten.mm.default"), Some(Formula::Mm));
        assert_eq!(Formula::of("aten.mm"), Some(Formula::Mm));
        assert_eq!(Formula::of("aten.mm.dtype"), Some(Formula::Mm));
        assert_eq!(
            Formula::of("higher_order.flex_attention"),
            Some(Formula::FlexForward)
        );
        assert_eq!(Formula::of("aten.matmul.default"), None);
        assert_eq!(Formula::of("prims.mm.default"), None);
    }
}
