//! The Subnet Administrator: answers one SubnAdm MAD (class 0x03, version
//! 2) from the [`Subnet`] database. Methods: Get, GetTable (RMPP when the
//! table exceeds one MAD), Set (MCMemberRecord join/create, ServiceRecord,
//! InformInfo), Delete (leave, unregister). Attributes: ClassPortInfo,
//! NodeRecord, PortInfoRecord, PathRecord, MCMemberRecord, ServiceRecord,
//! InformInfo. Anything else gets a MAD status, never a panic; MADs that
//! cannot be answered (too short for a header, responses, other classes)
//! are counted and dropped.

use super::db::Subnet;
use super::error::SaError;
use super::mcast::{McGroup, MLID_FIRST};
use super::path::{self, PathPolicy};
use super::port::{PortRecord, DEFAULT_PKEY};
use super::rmpp::{self, RmppSender};
use super::select::MTU_2048;
use super::source::MadSource;
use vrnic_wire::mad::{self, MAD_SIZE};
use vrnic_wire::rmpp::{self as rmpp_hdr, Repr as RmppHeader};
use vrnic_wire::sa::{self, attr_offset_of};
use vrnic_wire::{class_port_info, sa_inform, sa_mcmember, sa_node, sa_path, sa_portinfo, sa_service};

/// Records one GetTable may return at most (more: ERR_NO_RESOURCES).
pub const MAX_TABLE_RECORDS: usize = 4096;

/// The SA's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaConfig {
    pub path: PathPolicy,
    /// ClassPortInfo RespTimeValue (4.096 us * 2^v).
    pub resp_time_value: u8,
    /// Pre-create the IPoIB broadcast group of the default partition with
    /// this (MTU, rate); None: the first join must create it.
    pub ipoib_broadcast: Option<(u8, u8)>,
}

impl Default for SaConfig {
    fn default() -> SaConfig {
        SaConfig {
            path: PathPolicy::default(),
            resp_time_value: 18,
            ipoib_broadcast: Some((MTU_2048, super::select::RATE_40_GBPS)),
        }
    }
}

/// What the SA has seen (`stats`: `firmware.sa` on the SM's port).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SaStats {
    pub requests: u64,
    /// MADs dropped without an answer.
    pub dropped: u64,
    /// Answers with a non-zero status.
    pub errors: u64,
    pub rmpp_segments: u64,
}

/// A record type the SA serves: its length and how it is written.
trait Record {
    const LEN: usize;
    fn write(&self, out: &mut [u8]);
}

macro_rules! record {
    ($m:ident) => {
        impl Record for $m::Repr {
            const LEN: usize = $m::Repr::LEN;
            fn write(&self, out: &mut [u8]) {
                self.emit(&mut $m::Packet::new_unchecked(out));
            }
        }
    };
}
record!(sa_path);
record!(sa_mcmember);
record!(sa_node);
record!(sa_portinfo);
record!(sa_service);
record!(sa_inform);
record!(class_port_info);

/// An answer before it becomes MAD bytes: records laid out at the
/// record's stride, and the response method.
struct Answer {
    method: u8,
    stride: usize,
    data: Vec<u8>,
    count: usize,
}

impl Answer {
    fn new<R: Record>(method: u8, recs: &[R]) -> Answer {
        let stride = attr_offset_of(R::LEN) as usize * 8;
        let mut data = vec![0u8; stride * recs.len()];
        for (i, r) in recs.iter().enumerate() {
            r.write(&mut data[i * stride..i * stride + R::LEN]);
        }
        Answer { method, stride, data, count: recs.len() }
    }
}

/// Parses the request's record from the SA data (a record longer than the
/// data cannot occur: every SA record fits in 200 bytes).
fn parse_rec<R>(data: &[u8], parse: fn(&[u8]) -> vrnic_wire::Result<R>) -> Result<R, SaError> {
    parse(data).map_err(|_| SaError::InvalidField)
}

pub struct Sa {
    pub subnet: Subnet,
    cfg: SaConfig,
    rmpp: RmppSender,
    stats: SaStats,
}

impl Sa {
    pub fn new(mut subnet: Subnet, cfg: SaConfig) -> Sa {
        if let Some((mtu, rate)) = cfg.ipoib_broadcast {
            let mlid = (MLID_FIRST..).find(|&l| subnet.groups.by_mlid(l).is_none()).unwrap_or(MLID_FIRST);
            let g = McGroup::ipoib_broadcast(DEFAULT_PKEY, mlid, mtu, rate, cfg.path.packet_life_time);
            // Fails only if the caller already created it.
            let _ = subnet.groups.create(g);
        }
        Sa { subnet, cfg, rmpp: RmppSender::new(), stats: SaStats::default() }
    }

    pub fn stats(&self) -> SaStats {
        self.stats
    }

    /// The counters, writable (control's tests set every counter).
    #[doc(hidden)]
    pub fn stats_mut(&mut self) -> &mut SaStats {
        &mut self.stats
    }

    /// RMPP transfers in flight.
    pub fn transfers_in_flight(&self) -> usize {
        self.rmpp.in_flight()
    }

    /// Resends stalled RMPP windows; call about once a second.
    pub fn tick(&mut self) -> Vec<(MadSource, Vec<u8>)> {
        let out = self.rmpp.tick();
        self.stats.rmpp_segments += out.len() as u64;
        out
    }

    /// Answers one MAD from `src`: zero or more 256-byte MADs to send back
    /// to it.
    pub fn handle(&mut self, req: &[u8], src: MadSource) -> Vec<Vec<u8>> {
        self.stats.requests += 1;
        let Ok(hdr) = mad::Packet::new_checked(req).and_then(|p| mad::Repr::parse(&p)) else {
            self.stats.dropped += 1;
            return Vec::new();
        };
        if hdr.base_version != mad::BASE_VERSION || hdr.mgmt_class != mad::MGMT_CLASS_SUBN_ADM {
            self.stats.dropped += 1;
            return Vec::new();
        }
        let mut full = [0u8; MAD_SIZE];
        let n = req.len().min(MAD_SIZE);
        full[..n].copy_from_slice(&req[..n]);
        if req.len() < MAD_SIZE {
            if hdr.is_response() {
                self.stats.dropped += 1;
                return Vec::new();
            }
            return vec![self.error(&full, &hdr, SaError::InvalidField)];
        }
        let rh =
            RmppHeader::parse(&rmpp_hdr::Packet::new_unchecked(&full[mad::field::HEADER_LEN..])).unwrap_or_default();
        if rh.is_active() {
            if rh.version != rmpp_hdr::VERSION {
                return vec![rmpp::abort_reply(&full, rmpp_hdr::STATUS_UNV)];
            }
            match rh.rmpp_type {
                rmpp_hdr::TYPE_ACK => {
                    let out = self.rmpp.on_ack(src, &full, &rh);
                    self.stats.rmpp_segments += out.len() as u64;
                    return out;
                }
                rmpp_hdr::TYPE_STOP | rmpp_hdr::TYPE_ABORT => {
                    self.rmpp.cancel(src, hdr.tid);
                    return Vec::new();
                }
                rmpp_hdr::TYPE_DATA => {}
                _ => return vec![rmpp::abort_reply(&full, rmpp_hdr::STATUS_BADT)],
            }
        }
        if hdr.is_response() {
            self.stats.dropped += 1;
            return Vec::new();
        }
        if rh.is_active()
            && rh.flags & (rmpp_hdr::FLAG_FIRST | rmpp_hdr::FLAG_LAST) != rmpp_hdr::FLAG_FIRST | rmpp_hdr::FLAG_LAST
        {
            // Every SA request fits one MAD; a multi-segment one is refused.
            return vec![rmpp::abort_reply(&full, rmpp_hdr::STATUS_UNSPEC)];
        }
        if hdr.class_version != sa::CLASS_VERSION {
            return vec![self.error(&full, &hdr, SaError::BadVersion)];
        }
        let sah =
            sa::Repr::parse(&sa::Packet::new_unchecked(&full[mad::field::HEADER_LEN + rmpp_hdr::field::HEADER_LEN..]))
                .unwrap_or_default();
        let data = &full[sa::DATA_OFFSET..];
        match self.dispatch(&hdr, sah.comp_mask, data, src) {
            Ok(a) => self.answer(&full, &hdr, &sah, a, src),
            Err(e) => vec![self.error(&full, &hdr, e)],
        }
    }

    fn dispatch(&mut self, h: &mad::Repr, m: u64, data: &[u8], src: MadSource) -> Result<Answer, SaError> {
        use mad::{METHOD_DELETE, METHOD_GET, METHOD_GET_TABLE, METHOD_SET};
        let method = h.method;
        let resp = match method {
            METHOD_GET | METHOD_SET => mad::METHOD_GET_RESP,
            METHOD_GET_TABLE => mad::METHOD_GET_TABLE_RESP,
            METHOD_DELETE => mad::METHOD_DELETE_RESP,
            mad::METHOD_GET_MULTI | mad::METHOD_GET_TRACE_TABLE | mad::METHOD_REPORT => {
                return Err(SaError::UnsupportedMethodAttr)
            }
            _ => return Err(SaError::UnsupportedMethod),
        };
        let query = method == METHOD_GET || method == METHOD_GET_TABLE;
        match (h.attr_id, method) {
            (sa::ATTR_CLASS_PORT_INFO, METHOD_GET) => Ok(Answer::new(resp, &[self.class_port_info()])),
            (sa::ATTR_NODE_RECORD, _) if query => {
                let r = parse_rec(data, |b| sa_node::Repr::parse(&sa_node::Packet::new_checked(b)?))?;
                Ok(Answer::new(resp, &self.node_records(&r, m)))
            }
            (sa::ATTR_PORT_INFO_RECORD, _) if query => {
                let r = parse_rec(data, |b| sa_portinfo::Repr::parse(&sa_portinfo::Packet::new_checked(b)?))?;
                Ok(Answer::new(resp, &self.port_info_records(&r, m)))
            }
            (sa::ATTR_PATH_RECORD, _) if query => {
                let r = parse_rec(data, |b| sa_path::Repr::parse(&sa_path::Packet::new_checked(b)?))?;
                Ok(Answer::new(resp, &path::query(&self.subnet, &r, m, &self.cfg.path, MAX_TABLE_RECORDS)?))
            }
            (sa::ATTR_MCMEMBER_RECORD, _) => {
                let r = parse_rec(data, |b| sa_mcmember::Repr::parse(&sa_mcmember::Packet::new_checked(b)?))?;
                self.mcmember(method, resp, &r, m, src)
            }
            (sa::ATTR_SERVICE_RECORD, _) => {
                let r = parse_rec(data, |b| sa_service::Repr::parse(&sa_service::Packet::new_checked(b)?))?;
                self.service(method, resp, &r, m, src)
            }
            (sa::ATTR_INFORM_INFO, METHOD_SET) => {
                let r = parse_rec(data, |b| sa_inform::Repr::parse(&sa_inform::Packet::new_checked(b)?))?;
                self.inform(&r, src)?;
                Ok(Answer::new(resp, &[r]))
            }
            _ => Err(SaError::UnsupportedMethodAttr),
        }
    }

    /// The requester's port: the source LID must be on the subnet.
    fn requester(&self, src: MadSource) -> Result<&PortRecord, SaError> {
        self.subnet.port(src.lid).ok_or(SaError::Denied)
    }

    /// The port a record's GID names, which must be the requester's own
    /// (a guest cannot join, leave or register for another port).
    fn own_port(&self, gid: &[u8; 16], src: MadSource) -> Result<PortRecord, SaError> {
        let me = self.requester(src)?;
        if me.gid() == *gid {
            return Ok(me.clone());
        }
        match self.subnet.port_by_gid(gid) {
            None => Err(SaError::InvalidGid),
            Some(_) => Err(SaError::Denied),
        }
    }

    fn mcmember(
        &mut self,
        method: u8,
        resp: u8,
        r: &sa_mcmember::Repr,
        m: u64,
        src: MadSource,
    ) -> Result<Answer, SaError> {
        match method {
            mad::METHOD_GET | mad::METHOD_GET_TABLE => {
                Ok(Answer::new(resp, &self.subnet.groups.query(r, m, MAX_TABLE_RECORDS)?))
            }
            mad::METHOD_SET => {
                if m & sa_mcmember::mask::PORT_GID == 0 {
                    return Err(SaError::InsufficientComponents);
                }
                let port = self.own_port(&r.port_gid, src)?;
                let life = self.cfg.path.packet_life_time;
                Ok(Answer::new(resp, &[self.subnet.groups.join(r, m, &port, life)?]))
            }
            mad::METHOD_DELETE => {
                if m & sa_mcmember::mask::PORT_GID == 0 {
                    return Err(SaError::InsufficientComponents);
                }
                let port = self.own_port(&r.port_gid, src)?;
                Ok(Answer::new(resp, &[self.subnet.groups.leave(r, m, &port)?]))
            }
            _ => Err(SaError::UnsupportedMethodAttr),
        }
    }

    fn service(
        &mut self,
        method: u8,
        resp: u8,
        r: &sa_service::Repr,
        m: u64,
        src: MadSource,
    ) -> Result<Answer, SaError> {
        match method {
            mad::METHOD_GET | mad::METHOD_GET_TABLE => Ok(Answer::new(resp, &self.subnet.services.query(r, m))),
            mad::METHOD_SET => {
                if m & sa_service::mask::SERVICE_GID != 0 {
                    self.own_port(&r.service_gid, src)?;
                }
                Ok(Answer::new(resp, &[self.subnet.services.register(r, m)?]))
            }
            mad::METHOD_DELETE => {
                let owner = self.requester(src)?.gid();
                Ok(Answer::new(resp, &[self.subnet.services.delete(r, m, &owner)?]))
            }
            _ => Err(SaError::UnsupportedMethodAttr),
        }
    }

    fn inform(&mut self, r: &sa_inform::Repr, src: MadSource) -> Result<(), SaError> {
        let gid = self.requester(src)?.gid();
        let subs = &mut self.subnet.subscriptions;
        let same = |s: &sa_inform::Repr| s.gid == gid && s.trap_number == r.trap_number && s.trap_type == r.trap_type;
        subs.retain(|s| !same(s));
        if r.subscribe {
            if subs.len() >= super::db::MAX_SUBSCRIPTIONS {
                return Err(SaError::NoResources);
            }
            subs.push(sa_inform::Repr { gid, ..*r });
        }
        Ok(())
    }

    fn class_port_info(&self) -> class_port_info::Repr {
        class_port_info::Repr {
            base_version: mad::BASE_VERSION,
            class_version: sa::CLASS_VERSION,
            cap_mask: class_port_info::SA_CAP_MULTICAST,
            cap_mask2: class_port_info::SA_CAP_MASK2_SENDONLY_FULL_MEM,
            resp_time_value: self.cfg.resp_time_value,
        }
    }

    fn node_records(&self, r: &sa_node::Repr, m: u64) -> Vec<sa_node::Repr> {
        use sa_node::mask;
        let n = &r.node_info;
        self.subnet
            .ports()
            .map(|p| sa_node::Repr {
                lid: p.lid,
                node_info: sa_node::NodeInfo {
                    base_version: 1,
                    class_version: 1,
                    node_type: p.node_type,
                    num_ports: 1,
                    sys_image_guid: p.sys_image_guid,
                    node_guid: p.node_guid,
                    port_guid: p.port_guid,
                    partition_cap: p.pkeys.len().max(1) as u16,
                    device_id: p.device_id,
                    revision: 0,
                    local_port_num: p.port_num,
                    vendor_id: p.vendor_id,
                },
                node_desc: sa_node::node_desc_bytes(&p.node_desc),
            })
            .filter(|x| {
                let i = &x.node_info;
                (m & mask::LID == 0 || x.lid == r.lid)
                    && (m & mask::NODE_TYPE == 0 || i.node_type == n.node_type)
                    && (m & mask::SYS_IMAGE_GUID == 0 || i.sys_image_guid == n.sys_image_guid)
                    && (m & mask::NODE_GUID == 0 || i.node_guid == n.node_guid)
                    && (m & mask::PORT_GUID == 0 || i.port_guid == n.port_guid)
                    && (m & mask::DEVICE_ID == 0 || i.device_id == n.device_id)
                    && (m & mask::VENDOR_ID == 0 || i.vendor_id == n.vendor_id)
                    && (m & mask::NODE_DESC == 0 || x.node_desc == r.node_desc)
            })
            .collect()
    }

    fn port_info_records(&self, r: &sa_portinfo::Repr, m: u64) -> Vec<sa_portinfo::Repr> {
        use sa_portinfo::mask;
        let want = &r.port_info;
        self.subnet
            .ports()
            .map(|p| sa_portinfo::Repr {
                lid: p.lid,
                port_num: p.port_num,
                options: 0,
                port_info: sa_portinfo::PortInfo {
                    gid_prefix: p.gid_prefix,
                    lid: p.lid,
                    master_sm_lid: self.subnet.sm_lid,
                    cap_mask: p.cap_mask,
                    local_port_num: p.port_num,
                    link_width_enabled: 3,
                    link_width_supported: 3,
                    link_width_active: 2,
                    link_speed_supported: 7,
                    port_state: p.state,
                    phys_state: if p.is_active() { 5 } else { 3 },
                    link_speed_active: 4,
                    link_speed_enabled: 7,
                    neighbor_mtu: p.mtu,
                    vl_cap: 1,
                    mtu_cap: p.mtu,
                    operational_vls: 1,
                    guid_cap: 8,
                    subnet_timeout: 18,
                    resp_time_value: 16,
                    ..sa_portinfo::PortInfo::default()
                },
            })
            .filter(|x| {
                (m & mask::LID == 0 || x.lid == r.lid)
                    && (m & mask::PORT_NUM == 0 || x.port_num == r.port_num)
                    && (m & mask::GID_PREFIX == 0 || x.port_info.gid_prefix == want.gid_prefix)
                    && (m & mask::BASE_LID == 0 || x.port_info.lid == want.lid)
                    && (m & mask::SM_LID == 0 || x.port_info.master_sm_lid == want.master_sm_lid)
                    && (m & mask::CAP_MASK == 0 || x.port_info.cap_mask & want.cap_mask == want.cap_mask)
            })
            .collect()
    }

    /// The response header: the request's, method and status replaced,
    /// RMPP inactive, SM_Key cleared, AttributeOffset set.
    fn header(
        &self,
        req: &[u8; MAD_SIZE],
        h: &mad::Repr,
        method: u8,
        status: u16,
        attr_offset: u16,
        comp_mask: u64,
    ) -> [u8; sa::DATA_OFFSET] {
        let mut out = [0u8; sa::DATA_OFFSET];
        out.copy_from_slice(&req[..sa::DATA_OFFSET]);
        let rh = mad::Repr { method, status, ..*h };
        rh.emit(&mut mad::Packet::new_unchecked(&mut out[..]));
        let rm = RmppHeader { version: rmpp_hdr::VERSION, ..RmppHeader::default() };
        rm.emit(&mut rmpp_hdr::Packet::new_unchecked(&mut out[mad::field::HEADER_LEN..]));
        let sah = sa::Repr { sm_key: 0, attr_offset, comp_mask };
        sah.emit(&mut sa::Packet::new_unchecked(&mut out[mad::field::HEADER_LEN + rmpp_hdr::field::HEADER_LEN..]));
        out
    }

    fn answer(
        &mut self,
        req: &[u8; MAD_SIZE],
        h: &mad::Repr,
        sah: &sa::Repr,
        a: Answer,
        src: MadSource,
    ) -> Vec<Vec<u8>> {
        let attr_offset = (a.stride / 8) as u16;
        if a.method == mad::METHOD_GET_TABLE_RESP {
            let hdr = self.header(req, h, a.method, 0, attr_offset, sah.comp_mask);
            let segs = rmpp::segment(&hdr, &a.data);
            let out = self.rmpp.start(src, h.tid, segs);
            self.stats.rmpp_segments += out.len() as u64;
            return out;
        }
        match a.count {
            0 => return vec![self.error(req, h, SaError::NoRecords)],
            1 => {}
            _ => return vec![self.error(req, h, SaError::TooManyRecords)],
        }
        let hdr = self.header(req, h, a.method, 0, attr_offset, sah.comp_mask);
        let mut m = vec![0u8; MAD_SIZE];
        m[..sa::DATA_OFFSET].copy_from_slice(&hdr);
        let n = a.data.len().min(sa::DATA_LEN);
        m[sa::DATA_OFFSET..sa::DATA_OFFSET + n].copy_from_slice(&a.data[..n]);
        vec![m]
    }

    /// An error response: the request echoed (its record included) with
    /// the response method and the status.
    fn error(&mut self, req: &[u8; MAD_SIZE], h: &mad::Repr, e: SaError) -> Vec<u8> {
        self.stats.errors += 1;
        let method = match h.method {
            mad::METHOD_SET => mad::METHOD_GET_RESP,
            m => m | mad::METHOD_RESP,
        };
        let sah =
            sa::Repr::parse(&sa::Packet::new_unchecked(&req[mad::field::HEADER_LEN + rmpp_hdr::field::HEADER_LEN..]))
                .unwrap_or_default();
        let hdr = self.header(req, h, method, e.status(), 0, sah.comp_mask);
        let mut m = req.to_vec();
        m[..sa::DATA_OFFSET].copy_from_slice(&hdr);
        m
    }
}
