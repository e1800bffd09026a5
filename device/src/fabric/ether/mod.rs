//! The Ethernet port's links (owner: eth-link): whole Ethernet frames (no
//! FCS) between the device and a medium. The mlx5 Ethernet data path sends
//! through a [`FrameSink`] and a link's worker hands received frames to a
//! [`FrameHandler`].

/// Where the device's transmitted frames go. Never blocks: a frame the link
/// cannot send is counted and lost.
pub trait FrameSink: Send + Sync {
    fn send_frame(&self, frame: &[u8]);
}

/// Who takes received frames (the mlx5 Ethernet RX path).
pub trait FrameHandler: Send + Sync {
    fn receive_frame(&self, frame: &[u8]);
}
