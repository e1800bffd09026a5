//! What an IB stage is built from, and its counters.

use crate::port::PortRecord;
use crate::sm_role::SmTiming;

/// Which SM the fabric has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmMode {
    /// None built in: an SM elsewhere (OpenSM in a guest) configures the
    /// fabric. The CA port starts unconfigured, the switch powered up.
    Off,
    /// A static SM at `sm_lid`: that server runs the SA and answers SMInfo;
    /// no polls, no failover.
    Static { sm_lid: u16 },
    /// SM roles (IBTA 14.4): every server an SM, the master elected by
    /// priority then LID, polls between servers, takeover. Without peers
    /// (or LID 0) it is the static SM of the lowest LID.
    Roles { priority: u8, timing: SmTiming },
}

/// What a stage is built from.
#[derive(Debug, Clone)]
pub struct StageConfig {
    /// This port as the SA records it: its fabric LID, GUIDs, description.
    pub own: PortRecord,
    /// The other CA LIDs of the fabric (whose identity is the derived one:
    /// [`PortRecord::derived`]).
    pub peers: Vec<u16>,
    /// The modeled switch's LID (`None`: the highest CA LID + 1).
    pub switch_lid: Option<u16>,
    pub sm: SmMode,
}

/// The stage's counters (`stats` → `subnet`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct StageCounters {
    /// Directed-route SMPs the switch forwarded or answered, and those it
    /// refused (`switch::DrDrop`).
    pub dr_smp_routed: u64,
    pub dr_smp_drops: u64,
    /// LID-routed SMPs the switch's SMA answered.
    pub switch_smp_answered: u64,
    /// SMInfo SMPs this server's SM answered (the roles' or the static SM's).
    pub sm_info_answered: u64,
    /// SMInfo answers to a poll that failed or did not parse, traps and
    /// other methods sent to the SM: counted, not acted on.
    pub sm_info_drops: u64,
    /// Updates of this CA's PortInfo (MasterSMLID) the CA took, and tries it refused.
    pub port_updates: u64,
    pub port_update_errors: u64,
    /// MADs the stage sent (answers, forwarded SMPs, polls).
    pub mads_sent: u64,
}
