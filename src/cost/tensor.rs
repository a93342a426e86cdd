//! Tensors as the dump records them (`meta["val"]`: `{"tensor": {"shape", "dtype", "device"}}`,
//! plus `"stride"` when a dimension is broadcast), read the way torch's estimators read a
//! fake tensor: sizes in elements and bytes, with torch's fallbacks for symbolic sizes.

use crate::dump::Node;
use crate::value::PyValue;

/// Bytes per element of a dtype (`str(dtype)`), as `torch.empty((), dtype=d).element_size()`.
pub fn itemsize(dtype: &str) -> Option<u64> {
    let name = dtype.strip_prefix("torch.")?;
    Some(match name {
        "float64" | "complex64" | "int64" | "uint64" => 8,
        "complex128" => 16,
        "float32" | "complex32" | "int32" | "uint32" | "qint32" => 4,
        "float16" | "bfloat16" | "int16" | "uint16" | "bits16" => 2,
        "uint8" | "int8" | "bool" | "qint8" | "quint8" | "quint4x2" | "quint2x4" | "bits1x8"
        | "bits2x4" | "bits4x2" | "bits8" | "float8_e4m3fn" | "float8_e5m2" | "float8_e4m3fnuz"
        | "float8_e5m2fnuz" | "float8_e8m0fnu" | "float4_e2m1fn_x2" => 1,
        "int1" | "int2" | "int3" | "int4" | "int5" | "int6" | "int7" | "uint1" | "uint2"
        | "uint3" | "uint4" | "uint5" | "uint6" | "uint7" => 1,
        _ => return None,
    })
}

/// `get_fx_node_size_numel`'s fallback: the element count torch assumes for a size it cannot
/// hint (`4096 * 4096`). A dump records no hints, so every symbolic size takes it.
pub const UNHINTED_NUMEL: u128 = 4096 * 4096;

/// One recorded tensor.
#[derive(Clone, Copy, Debug)]
pub struct TensorMeta<'a> {
    pub shape: &'a [PyValue],
    pub dtype: &'a str,
    /// Only written when some dimension has stride 0 (an expanded view).
    pub stride: Option<&'a [PyValue]>,
}

impl<'a> TensorMeta<'a> {
    /// The tensor a dump value records, if it is one with a readable shape and dtype.
    pub fn of(value: &'a PyValue) -> Option<TensorMeta<'a>> {
        let PyValue::Tensor(summary) = value else {
            return None;
        };
        // One pass over the summary's three or four keys.
        let (mut shape, mut dtype, mut stride) = (None, None, None);
        for (key, value) in summary.as_dict()? {
            match key.as_str() {
                "shape" => shape = value.as_list(),
                "dtype" => {
                    dtype = match value {
                        PyValue::Dtype(s) | PyValue::Str(s) => Some(s.as_str()),
                        _ => None,
                    }
                }
                "stride" => stride = value.as_list(),
                _ => {}
            }
        }
        Some(TensorMeta {
            shape: shape?,
            dtype: dtype?,
            stride,
        })
    }

    pub fn itemsize(&self) -> Option<u64> {
        itemsize(self.dtype)
    }

    /// Every dimension as a non-negative `int`, or `None` if one is symbolic (or not a size).
    pub fn static_shape(&self) -> Option<Vec<u128>> {
        self.shape.iter().map(static_dim).collect()
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// `get_fx_node_size_numel(t.size()) * get_dtype_size(t.dtype)` (`estimate_fx_collective_size`):
    /// a symbolic size counts [`UNHINTED_NUMEL`] elements.
    pub fn collective_bytes(&self) -> Option<u128> {
        let size = self.itemsize()? as u128;
        let mut numel = 1u128;
        for dim in self.shape {
            match static_dim(dim) {
                Some(d) => numel = numel.saturating_mul(d),
                None => {
                    numel = UNHINTED_NUMEL;
                    break;
                }
            }
        }
        Some(numel.saturating_mul(size))
    }

    /// `get_num_bytes(t)` of `torch.utils._runtime_estimation`: the bytes a kernel touches,
    /// counting a stride-0 (broadcast) dimension once and a size it cannot hint as 0.
    pub fn transfer_bytes(&self) -> u128 {
        let Some(size) = self.itemsize() else {
            return 0;
        };
        let mut numel = 1u128;
        for (i, dim) in self.shape.iter().enumerate() {
            let broadcast = self
                .stride
                .and_then(|s| s.get(i))
                .is_some_and(|s| s.static_int() == Some(0));
            if broadcast {
                continue;
            }
            numel = numel.saturating_mul(static_dim(dim).unwrap_or(0));
        }
        numel.saturating_mul(size as u128)
    }
}

/// A dimension that is a plain non-negative `int`.
pub fn static_dim(dim: &PyValue) -> Option<u128> {
    dim.static_int().and_then(|d| u128::try_from(d).ok())
}

/// `node.meta.get("val")`, decoded for this use only (the cost model reads it once per node).
pub fn val(node: &Node) -> Option<std::borrow::Cow<'_, PyValue>> {
    node.meta
        .get_once("val")
        .filter(|v| !matches!(**v, PyValue::None))
}

/// The tensors of a value in pytree order (`tree_flatten`): the value itself, or the leaves
/// of nested lists, tuples and dicts.
pub fn for_each_tensor<'a>(value: &'a PyValue, f: &mut impl FnMut(TensorMeta<'a>)) {
    match value {
        PyValue::Tensor(_) => {
            if let Some(t) = TensorMeta::of(value) {
                f(t)
            }
        }
        PyValue::List(items) => items.iter().for_each(|v| for_each_tensor(v, f)),
        PyValue::Dict(map) => map.values().for_each(|v| for_each_tensor(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_torch_dtype_has_a_size() {
        for dtype in crate::value::TORCH_DTYPES {
            assert!(itemsize(dtype).is_some(), "{dtype}");
        }
        assert_eq!(itemsize("torch.bfloat16"), Some(2));
        assert_eq!(itemsize("float32"), None);
    }
}
