//! SM roles (IBTA 14.4): which server of the fabric is the master SM and
//! which are standbys, decided by each server alone from what it hears.
//! A pure state machine: the caller gives it the time (`poll(now_ns)`) and
//! the SMInfo answers it receives (`answer`); it says whom to poll and when
//! the master changes. No sockets, no clock, no MAD bytes.
//!
//! Every server polls every other server's SM with an SMInfo Get once a
//! period. An answer marks the peer alive and gives its priority; a poll
//! unanswered when the next one is due is a miss, and `max_misses` misses in
//! a row mark the peer dead (it is still polled, so a restarted one is seen).
//! The master is the best live SM by the election key: the highest SMInfo
//! Priority, then the lowest LID (OpenSM breaks ties by the lower port GUID;
//! vrnic's derived GUIDs order as the LIDs do). Every server applies the same
//! key to the same answers, so all reach the same master. A peer not heard
//! from yet counts as alive with priority 0, so at start the master is the
//! lowest LID (`config.sm_lid()`) on every server before any answer arrives.

use std::collections::BTreeMap;

use vrnic_wire::smp_sminfo::{self, SmState};

/// How often peers are polled and how many misses make one dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmTiming {
    pub period_ns: u64,
    pub max_misses: u32,
}

impl Default for SmTiming {
    fn default() -> Self {
        SmTiming { period_ns: 1_000_000_000, max_misses: 3 }
    }
}

/// What one server knows of another's SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PeerSm {
    pub lid: u16,
    /// Priority from its last answer (0 until one arrives).
    pub priority: u8,
    pub guid: u64,
    /// The SMState it last reported.
    pub state: Option<SmState>,
    pub alive: bool,
    /// Polls in a row without an answer.
    pub missed: u32,
    #[serde(skip)]
    outstanding: Option<u64>,
}

/// Counters (`stats` → `firmware.sm`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmStats {
    /// SMInfo Gets sent to peers.
    pub polls: u64,
    /// Answers that matched a poll.
    pub answers: u64,
    /// Polls unanswered when the next was due.
    pub misses: u64,
    /// Peers declared dead after `max_misses` misses.
    pub peers_lost: u64,
    /// Times this server became master after another was.
    pub takeovers: u64,
    /// Times the master this port follows changed (here and elsewhere).
    pub master_changes: u64,
    /// Answers matching no outstanding poll (late, duplicated or unsolicited).
    pub stale_answers: u64,
}

/// What a `poll` or an `answer` changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SmChange {
    /// The master moved from `.0` to `.1`.
    pub master: Option<(u16, u16)>,
    /// Peers declared dead, and peers heard again after that.
    pub lost: Vec<u16>,
    pub back: Vec<u16>,
}

/// One server's view of the fabric's SMs.
#[derive(Debug, Clone)]
pub struct SmRoles {
    lid: u16,
    guid: u64,
    priority: u8,
    timing: SmTiming,
    peers: BTreeMap<u16, PeerSm>,
    /// The best live SM by the key.
    elected: u16,
    /// The master this port follows (PortInfo.MasterSMLID): the elected one
    /// once it is master itself (its SMInfo said MASTER), or this server.
    master: u16,
    next_poll_ns: u64,
    next_tid: u64,
    act_count: u32,
    stats: SmStats,
}

impl SmRoles {
    /// This server's SM (`lid`, port `guid`, `priority` 0..=15) among the
    /// SMs of the `peers` LIDs (this LID and 0 are skipped).
    pub fn new(lid: u16, guid: u64, priority: u8, peers: &[u16], timing: SmTiming) -> SmRoles {
        let peers = peers
            .iter()
            .filter(|&&l| l != lid && l != 0)
            .map(|&l| {
                (l, PeerSm { lid: l, priority: 0, guid: 0, state: None, alive: true, missed: 0, outstanding: None })
            })
            .collect();
        let timing = SmTiming { period_ns: timing.period_ns.max(1), max_misses: timing.max_misses.max(1) };
        let mut r = SmRoles {
            lid,
            guid,
            priority: priority.min(15),
            timing,
            peers,
            elected: lid,
            master: lid,
            next_poll_ns: 0,
            next_tid: 1,
            act_count: 0,
            stats: SmStats::default(),
        };
        r.elected = r.elect();
        r.master = r.elected;
        r
    }

    /// The best live SM by the election key.
    fn elect(&self) -> u16 {
        let key = |prio: u8, lid: u16| (prio, std::cmp::Reverse(lid));
        self.peers
            .values()
            .filter(|p| p.alive)
            .map(|p| (key(p.priority, p.lid), p.lid))
            .chain([(key(self.priority, self.lid), self.lid)])
            .max()
            .map(|(_, l)| l)
            .unwrap_or(self.lid)
    }

    /// Re-elects, and follows the elected SM once it is master: at once if
    /// it is this server, else when its SMInfo says MASTER (IBTA: ports learn
    /// a new SM from its sweep, so none is sent to an SA not built yet).
    fn reelect(&mut self, ch: &mut SmChange) {
        self.elected = self.elect();
        if self.elected == self.master {
            return;
        }
        let e = self.elected;
        let ready = e == self.lid || self.peers.get(&e).is_some_and(|p| p.state == Some(SmState::Master));
        if ready {
            let old = std::mem::replace(&mut self.master, e);
            self.stats.master_changes += 1;
            if e == self.lid {
                self.stats.takeovers += 1;
            }
            ch.master = Some((old, e));
        }
    }

    /// When due at `now_ns`: counts the unanswered polls as misses, declares
    /// peers dead, re-elects, and returns the polls to send now (peer LID,
    /// TID). Not due: nothing.
    pub fn poll(&mut self, now_ns: u64) -> (Vec<(u16, u64)>, SmChange) {
        let mut ch = SmChange::default();
        if now_ns < self.next_poll_ns {
            return (Vec::new(), ch);
        }
        self.next_poll_ns = now_ns.saturating_add(self.timing.period_ns);
        if self.is_master() {
            self.act_count = self.act_count.wrapping_add(1);
        }
        let mut out = Vec::with_capacity(self.peers.len());
        for p in self.peers.values_mut() {
            if p.outstanding.is_some() {
                p.missed = p.missed.saturating_add(1);
                self.stats.misses += 1;
                if p.alive && p.missed >= self.timing.max_misses {
                    p.alive = false;
                    p.state = None;
                    self.stats.peers_lost += 1;
                    ch.lost.push(p.lid);
                }
            }
            let tid = self.next_tid;
            self.next_tid = self.next_tid.wrapping_add(1);
            p.outstanding = Some(tid);
            self.stats.polls += 1;
            out.push((p.lid, tid));
        }
        self.reelect(&mut ch);
        (out, ch)
    }

    /// Whether `tid` is this SM's outstanding poll of `lid` (an SMInfo
    /// GetResp that is not goes to the guest: its `sminfo` asked).
    pub fn awaits(&self, lid: u16, tid: u64) -> bool {
        self.peers.get(&lid).is_some_and(|p| p.outstanding == Some(tid))
    }

    /// An SMInfo answer from `lid` to the poll `tid`.
    pub fn answer(&mut self, lid: u16, tid: u64, info: &smp_sminfo::Repr) -> SmChange {
        let mut ch = SmChange::default();
        let Some(p) = self.peers.get_mut(&lid).filter(|p| p.outstanding == Some(tid)) else {
            self.stats.stale_answers += 1;
            return ch;
        };
        p.outstanding = None;
        p.missed = 0;
        p.priority = info.priority.min(15);
        p.guid = info.guid;
        p.state = Some(info.sm_state);
        if !p.alive {
            p.alive = true;
            ch.back.push(lid);
        }
        self.stats.answers += 1;
        self.reelect(&mut ch);
        ch
    }

    /// What this server answers an SMInfo Get with.
    pub fn info(&self) -> smp_sminfo::Repr {
        smp_sminfo::Repr {
            guid: self.guid,
            sm_key: 0,
            act_count: self.act_count,
            priority: self.priority,
            sm_state: if self.elected == self.lid { SmState::Master } else { SmState::Standby },
        }
    }

    /// The master this port follows (its MasterSMLID).
    pub fn master(&self) -> u16 {
        self.master
    }

    /// The best live SM by the key (the master once it says so).
    pub fn elected(&self) -> u16 {
        self.elected
    }

    pub fn is_master(&self) -> bool {
        self.master == self.lid
    }

    /// Whether `lid` is this server or a peer it counts as alive.
    pub fn alive(&self, lid: u16) -> bool {
        lid == self.lid || self.peers.get(&lid).is_some_and(|p| p.alive)
    }

    /// When the next poll is due.
    pub fn next_due(&self) -> u64 {
        self.next_poll_ns
    }

    pub fn stats(&self) -> SmStats {
        self.stats
    }

    pub fn stats_mut(&mut self) -> &mut SmStats {
        &mut self.stats
    }

    pub fn peers(&self) -> impl Iterator<Item = &PeerSm> {
        self.peers.values()
    }

    pub fn timing(&self) -> SmTiming {
        self.timing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn standby(guid: u64, priority: u8) -> smp_sminfo::Repr {
        smp_sminfo::Repr { guid, sm_key: 0, act_count: 0, priority, sm_state: SmState::Standby }
    }

    fn master(guid: u64, priority: u8) -> smp_sminfo::Repr {
        smp_sminfo::Repr { sm_state: SmState::Master, ..standby(guid, priority) }
    }

    /// Answers every poll in `polls` except those to `dead`, as each peer
    /// would: priority `prio(lid)`, MASTER where `is_master(lid)`.
    fn answer_as(
        r: &mut SmRoles,
        polls: &[(u16, u64)],
        dead: &[u16],
        prio: impl Fn(u16) -> u8,
        is_master: impl Fn(u16) -> bool,
    ) -> SmChange {
        let mut all = SmChange::default();
        for &(l, tid) in polls.iter().filter(|(l, _)| !dead.contains(l)) {
            let i = if is_master(l) { master(l as u64, prio(l)) } else { standby(l as u64, prio(l)) };
            let ch = r.answer(l, tid, &i);
            all.master = ch.master.or(all.master);
            all.back.extend(ch.back);
        }
        all
    }

    /// [`answer_as`] with LID 1 the master.
    fn answer_all(r: &mut SmRoles, polls: &[(u16, u64)], dead: &[u16], prio: impl Fn(u16) -> u8) -> SmChange {
        answer_as(r, polls, dead, prio, |l| l == 1)
    }

    #[test]
    fn lowest_lid_is_master_from_the_start() {
        let r = SmRoles::new(2, 0x20, 0, &[1, 2, 3], SmTiming::default());
        assert_eq!(r.master(), 1);
        assert!(!r.is_master());
        assert_eq!(r.info().sm_state, SmState::Standby);
        let r1 = SmRoles::new(1, 0x10, 0, &[2, 3], SmTiming::default());
        assert!(r1.is_master());
        assert_eq!(r1.info().sm_state, SmState::Master);
    }

    #[test]
    fn standby_takes_over_after_three_missed_polls() {
        // Server 2 of 1, 2, 3; the master (1) stops answering after t = 1 s.
        let mut r = SmRoles::new(2, 0x20, 0, &[1, 3], SmTiming::default());
        let (p, ch) = r.poll(0);
        assert_eq!(p.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(ch, SmChange::default());
        answer_all(&mut r, &p, &[], |_| 0);
        assert!(r.poll(S / 2).0.is_empty(), "not due");
        let mut takeover_at = None;
        for k in 1..=6u64 {
            let (p, ch) = r.poll(k * S);
            assert_eq!(p.len(), 2, "the dead master is still polled");
            if let Some((old, new)) = ch.master {
                assert_eq!((old, new), (1, 2));
                assert_eq!(ch.lost, vec![1]);
                takeover_at = Some(k);
            }
            answer_all(&mut r, &p, &[1], |_| 0);
        }
        // polls at 1, 2, 3 s go unanswered; the third is counted missed at 4 s.
        assert_eq!(takeover_at, Some(4));
        assert!(r.is_master());
        assert_eq!(r.info().sm_state, SmState::Master);
        let st = r.stats();
        assert_eq!((st.takeovers, st.master_changes, st.peers_lost), (1, 1, 1));
        assert_eq!(st.misses, 5, "misses at 2..6 s");
        assert!(!r.alive(1) && r.alive(3) && r.alive(2));
    }

    #[test]
    fn the_third_server_follows_the_new_master_once_it_says_master() {
        // Server 3 declares 1 dead at 4 s, as server 2 does; 2's answers say MASTER from 5 s on.
        let mut r = SmRoles::new(3, 0x30, 0, &[1, 2], SmTiming::default());
        let mut changes = Vec::new();
        for k in 0..7u64 {
            let (p, ch) = r.poll(k * S);
            changes.extend(ch.master.map(|m| (k, m)));
            let ch = answer_as(&mut r, &p, if k == 0 { &[] } else { &[1] }, |_| 0, |l| l == 1 || (l == 2 && k >= 5));
            changes.extend(ch.master.map(|m| (k, m)));
            if k == 4 {
                assert_eq!((r.elected(), r.master()), (2, 1), "elected, not yet followed");
                assert_eq!(r.info().sm_state, SmState::Standby);
            }
        }
        assert_eq!(changes, vec![(5, (1, 2))]);
        assert_eq!(r.stats().takeovers, 0);
    }

    #[test]
    fn a_higher_priority_wins_and_a_recovered_master_takes_back_its_role() {
        // Server 1 (priority 0) hears server 3 with priority 5, master in its own view: 3 is master.
        let mut r = SmRoles::new(1, 0x10, 0, &[2, 3], SmTiming::default());
        assert!(r.is_master());
        let prio = |l: u16| if l == 3 { 5 } else { 0 };
        let (p, _) = r.poll(0);
        let ch = answer_as(&mut r, &p, &[], prio, |l| l == 3);
        assert_eq!(ch.master, Some((1, 3)));
        // 3 dies: 1 (lowest LID of priority 0) takes over, 3 restarts and takes it back.
        let mut seen = Vec::new();
        for k in 1..=8u64 {
            let (p, ch) = r.poll(k * S);
            seen.extend(ch.master);
            let ch = answer_as(&mut r, &p, if k < 6 { &[3] } else { &[] }, prio, |l| l == 3);
            seen.extend(ch.master);
        }
        assert_eq!(seen, vec![(3, 1), (1, 3)]);
        assert_eq!(r.stats().takeovers, 1);
    }

    #[test]
    fn stale_and_unsolicited_answers_change_nothing() {
        let mut r = SmRoles::new(2, 0x20, 0, &[1], SmTiming::default());
        let (p, _) = r.poll(0);
        let bogus = smp_sminfo::Repr { priority: 15, ..standby(9, 15) };
        assert_eq!(r.answer(1, p[0].1 + 7, &bogus), SmChange::default());
        assert_eq!(r.answer(9, p[0].1, &bogus), SmChange::default());
        assert_eq!(r.master(), 1);
        r.answer(1, p[0].1, &standby(1, 0));
        assert_eq!(r.answer(1, p[0].1, &bogus), SmChange::default(), "a duplicate");
        assert_eq!(r.stats().stale_answers, 3);
        assert_eq!(r.stats().answers, 1);
    }

    #[test]
    fn configured_period_and_misses() {
        let t = SmTiming { period_ns: 200_000_000, max_misses: 2 };
        let mut r = SmRoles::new(2, 0x20, 0, &[1], t);
        let mut at = None;
        for k in 0..10u64 {
            let now = k * t.period_ns;
            let (_, ch) = r.poll(now);
            if ch.master.is_some() && at.is_none() {
                at = Some(now);
            }
        }
        // polls at 0 and 0.2 s unanswered: dead when the one at 0.4 s is due.
        assert_eq!(at, Some(400_000_000));
        assert_eq!(r.next_due(), 10 * t.period_ns);
    }
}
