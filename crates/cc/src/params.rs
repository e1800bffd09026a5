//! The congestion-control parameters as a ConnectX holds them, named as in
//! `mlx5_ifc.h` (`cong_control_r_roce_ecn_rp_bits`,
//! `cong_control_r_roce_ecn_np_bits`), with the firmware defaults
//! (`/work/shared/mlx5-ethernet-roce.md` §5.4). Plain structs: the mlx5
//! command layer (QUERY/MODIFY_CONG_PARAMS) maps the 256-byte blocks onto
//! them. Units are the firmware's: µs, bytes, Mb/s, percent, 1/1024.

/// DCQCN reaction point (`cong_protocol` node 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpParams {
    /// On a CNP, set the target rate to the current rate.
    pub clamp_tgt_rate: bool,
    /// On a CNP, set the target rate to the current rate if a timer
    /// increase happened since the last CNP.
    pub clamp_tgt_rate_after_time_inc: bool,
    /// Period of the rate-increase timer (µs).
    pub rpg_time_reset: u32,
    /// Bytes sent per byte-counter expiration (0: byte counter off).
    pub rpg_byte_reset: u32,
    /// F: expirations of a counter before it leaves fast recovery.
    pub rpg_threshold: u32,
    /// Rate cap (Mb/s; 0: line rate).
    pub rpg_max_rate: u32,
    /// Additive increase step (Mb/s).
    pub rpg_ai_rate: u32,
    /// Hyper increase step (Mb/s).
    pub rpg_hai_rate: u32,
    /// The cut is `alpha / 2^rpg_gd` of the rate (alpha in 1/1024 units:
    /// 11 gives the paper's alpha/2).
    pub rpg_gd: u32,
    /// A cut keeps at least this percentage of the current rate.
    pub rpg_min_dec_fac: u32,
    /// Rate floor (Mb/s).
    pub rpg_min_rate: u32,
    /// Rate a flow's limiter starts from on its first CNP (Mb/s; 0: line rate).
    pub rate_to_set_on_first_cnp: u32,
    /// alpha EWMA weight, 1024·(1 − g).
    pub dce_tcp_g: u32,
    /// Period of the alpha update (µs).
    pub dce_tcp_rtt: u32,
    /// At most one cut per this period (µs).
    pub rate_reduce_monitor_period: u32,
    /// alpha on a flow's first CNP (1/1024 units, 1023 ≈ 1).
    pub initial_alpha_value: u32,
}

impl Default for RpParams {
    fn default() -> RpParams {
        RpParams {
            clamp_tgt_rate: false,
            clamp_tgt_rate_after_time_inc: true,
            rpg_time_reset: 300,
            rpg_byte_reset: 32767,
            rpg_threshold: 1,
            rpg_max_rate: 0,
            rpg_ai_rate: 5,
            rpg_hai_rate: 50,
            rpg_gd: 11,
            rpg_min_dec_fac: 50,
            rpg_min_rate: 1,
            rate_to_set_on_first_cnp: 0,
            dce_tcp_g: 1019,
            dce_tcp_rtt: 1,
            rate_reduce_monitor_period: 4,
            initial_alpha_value: 1023,
        }
    }
}

/// ECN notification point (`cong_protocol` node 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NpParams {
    /// At most one CNP per QP per this interval (µs).
    pub min_time_between_cnps: u32,
    /// DSCP of the CNPs (6 bits).
    pub cnp_dscp: u8,
    /// 1: CNPs take the data packet's priority; 0: `cnp_802p_prio`.
    pub cnp_prio_mode: bool,
    /// 802.1p priority of the CNPs (3 bits).
    pub cnp_802p_prio: u8,
}

impl Default for NpParams {
    fn default() -> NpParams {
        NpParams { min_time_between_cnps: 4, cnp_dscp: 48, cnp_prio_mode: false, cnp_802p_prio: 6 }
    }
}

impl NpParams {
    /// The PCP of a CNP answering a data packet of priority `data_prio`.
    pub fn cnp_prio(&self, data_prio: u8) -> u8 {
        if self.cnp_prio_mode {
            data_prio & 7
        } else {
            self.cnp_802p_prio & 7
        }
    }
}

/// Mb/s to bits per second.
pub const fn mbps(m: u32) -> u64 {
    m as u64 * 1_000_000
}

/// µs to ns.
pub const fn us(u: u32) -> u64 {
    u as u64 * 1_000
}
