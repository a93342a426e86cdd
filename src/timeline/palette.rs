//! One palette for roles, defined once so the CLI's SVG and the app agree.

/// An sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

pub const PARAM_UNSHARD: &str = "fsdp.param_unshard";
pub const GRAD_REDUCE_SHARD: &str = "fsdp.grad_reduce_shard";
pub const GRAD_REPLICATE_REDUCE: &str = "fsdp.grad_replicate_reduce";

/// Colour of unclassified collectives.
pub const UNCLASSIFIED: Rgb = Rgb(0x9c, 0xa3, 0xaf);
/// Colour of skip marks.
pub const SKIP: Rgb = Rgb(0xdc, 0x26, 0x26);
/// Colour of split marks.
pub const SPLIT: Rgb = Rgb(0x11, 0x18, 0x27);
/// Axis, grid and text.
pub const INK: Rgb = Rgb(0x37, 0x41, 0x51);
pub const GRID: Rgb = Rgb(0xe5, 0xe7, 0xeb);
pub const LANE_BG: Rgb = Rgb(0xf9, 0xfa, 0xfb);

/// The colour of a role (`None`: unclassified). FSDP roles have fixed colours; other
/// namespaced roles share one colour per namespace.
pub fn role_colour(role: Option<&str>) -> Rgb {
    match role {
        Some(PARAM_UNSHARD) => Rgb(0x25, 0x63, 0xeb),
        Some(GRAD_REDUCE_SHARD) => Rgb(0xea, 0x58, 0x0c),
        Some(GRAD_REPLICATE_REDUCE) => Rgb(0x93, 0x33, 0xea),
        Some(r) if r.starts_with("tp.") => Rgb(0x05, 0x96, 0x69),
        Some(r) if r.starts_with("cp.") => Rgb(0x0d, 0x94, 0x88),
        Some(r) if r.starts_with("ep.") => Rgb(0xca, 0x8a, 0x04),
        Some(r) if r.starts_with("pp.") => Rgb(0xdb, 0x27, 0x77),
        Some(r) if r.starts_with("dtensor.") => Rgb(0x4f, 0x46, 0xe5),
        Some(_) => Rgb(0x65, 0x73, 0x8b),
        None => UNCLASSIFIED,
    }
}

/// The legacy FSDP pass tag (`meta["comm_type"]`) → (role, backward), per the semantic-identity
/// spec's mapping table. Frees and unknown tags map to `None`.
pub fn role_of_comm_type(comm_type: &str) -> Option<(&'static str, bool)> {
    match comm_type {
        "fsdp_all_gather" => Some((PARAM_UNSHARD, false)),
        "fsdp_all_gather_backward" => Some((PARAM_UNSHARD, true)),
        "fsdp_reduce_scatter" => Some((GRAD_REDUCE_SHARD, true)),
        "dp_all_reduce" => Some((GRAD_REPLICATE_REDUCE, true)),
        _ => None,
    }
}
