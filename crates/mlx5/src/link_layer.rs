//! Which link layer a port has (a leaf: the firmware and the capability
//! pages name it; [`super::link`] maps it to command domains and registers).

/// The port's link layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinkLayer {
    #[default]
    Ib,
    /// An Ethernet port: the mlx5e netdev, and RoCE on it.
    Eth,
}

impl std::str::FromStr for LinkLayer {
    type Err = String;
    fn from_str(s: &str) -> Result<LinkLayer, String> {
        match s {
            "ib" => Ok(LinkLayer::Ib),
            "eth" => Ok(LinkLayer::Eth),
            _ => Err(format!("unknown link layer {s:?} (ib or eth)")),
        }
    }
}
