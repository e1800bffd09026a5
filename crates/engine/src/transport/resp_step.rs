//! The steps of the responder, as a QP's trace records them.

use super::super::verbs::WcStatus;
use vrnic_wire::aeth::NakCode;

/// One step of the responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RespStep {
    /// Compares the PSN with the expected one (UC: resynchronises on a gap).
    CheckPsn,
    /// RC, a PSN already seen: a READ runs again, an atomic replays its
    /// result, anything else is acknowledged again.
    Duplicate,
    /// RC, a PSN beyond the expected one: one sequence NAK per gap.
    OutOfSequence,
    /// The opcode: a request this QP executes, in order with the message in
    /// progress, with the headers it needs (an XRC target: an XRC SRQ of its domain).
    CheckOp,
    /// A receive WQE for what consumes one; a READ's length.
    CheckResources,
    /// The remote access: QP access flags, R_Key, PD, rights, range (and
    /// an atomic's alignment).
    CheckRkey,
    /// Moves the data, completes the receive, sends read responses or the
    /// atomic ACK.
    Execute,
    /// Done: the expected PSN advances by `psns`; an ACK when asked for.
    Acknowledge { psns: u32 },
    /// No receive WQE: RNR NAK (RC) or a dropped message (UC).
    Rnr,
    /// The message cannot be handled: counted, UC skips the rest of it.
    Drop,
    /// UC: the rest of the message is dropped.
    UcDrop,
    /// NAK with `code` (RC); then [`RespStep::Error`], except for a UC
    /// error that completes nothing (the message is dropped).
    Nak(NakCode, Option<WcStatus>),
    /// The QP enters ERR, with a receive completion of this status for the
    /// WQE the failed message used.
    Error(Option<WcStatus>),
    /// The packet is handled.
    Done,
}
