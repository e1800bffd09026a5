//! The [`Link`] trait every medium under a port implements.

use super::route::Route;

/// What a link is: it puts a port's datagrams on a medium toward a route
/// (a peer of the port's table, or [`LOCAL`](super::route::LOCAL): this port itself) and takes
/// back what has arrived, naming the sender by its route. A datagram is
/// what the port framed (BTH through ICRC, behind the GRH envelope when the
/// packet has a GRH); the link neither parses nor checks it. Never blocks: a
/// datagram a link cannot send is counted and lost (the engine's
/// reliability recovers it).
///
/// The middleware (fault injection, capture and counters) are links
/// wrapping a link, so they apply to every link alike.
pub trait Link {
    /// Sends one datagram toward `route`.
    fn transmit(&self, route: Route, datagram: &[u8]);
    /// Takes what has arrived, without blocking: up to `burst` datagrams
    /// read into `buf`, each handed to `arrive` with the route of its sender
    /// (datagrams from senders the link does not know are counted and
    /// dropped here). Returns how many datagrams arrived. A link that
    /// delivers by itself (the in-process net, when pumped) takes nothing
    /// here.
    fn receive(&self, _buf: &mut [u8], _burst: usize, _arrive: &mut dyn FnMut(Route, &mut [u8])) -> usize {
        0
    }
}
