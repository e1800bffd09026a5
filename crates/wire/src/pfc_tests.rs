use super::*;

#[test]
fn pfc_round_trip_and_layout() {
    let mut quanta = [0u16; PRIORITIES];
    quanta[3] = 0xffff;
    quanta[5] = 7;
    let r = Repr::Pfc { enable: 0b0010_1000, quanta };
    let f = r.to_frame([2, 0, 0, 0, 0, 1]);
    assert_eq!(f.len(), 60);
    assert_eq!(&f[0..6], &MAC_CONTROL_DMAC);
    assert_eq!(&f[12..20], &[0x88, 0x08, 0x01, 0x01, 0x00, 0x28, 0x00, 0x00]);
    // time[3] at PDU bytes 10..12, time[5] at 14..16
    assert_eq!(&f[14 + 10..14 + 12], &[0xff, 0xff]);
    assert_eq!(&f[14 + 14..14 + 16], &[0x00, 0x07]);
    let pdu = mac_control_pdu(&f).unwrap();
    assert_eq!(Repr::parse(&Packet::new_checked(pdu).unwrap()).unwrap(), r);
    assert_eq!(r.buffer_len(), 20);
}

#[test]
fn pause_round_trip() {
    let r = Repr::Pause { quanta: 0x1234 };
    let f = r.to_frame([2; 6]);
    assert_eq!(&f[12..18], &[0x88, 0x08, 0x00, 0x01, 0x12, 0x34]);
    assert_eq!(Repr::parse(&Packet::new_unchecked(mac_control_pdu(&f).unwrap())).unwrap(), r);
}

#[test]
fn malformed_pdus_are_errors() {
    // too short for the opcode, for a PFC PDU, for a PAUSE PDU
    assert!(Packet::new_checked(&[0x01][..]).is_err());
    assert!(Repr::parse(&Packet::new_unchecked(&[0x01, 0x01, 0x00, 0x08, 0, 0][..])).is_err());
    assert!(Repr::parse(&Packet::new_unchecked(&[0x00, 0x01, 0x00][..])).is_err());
    // unknown opcode (GATE, 0x0002)
    assert_eq!(
        Repr::parse(&Packet::new_unchecked(&[0x00, 0x02, 0, 0][..])),
        Err(Error::Malformed("MAC control opcode"))
    );
    // class-enable vector bits above 7
    let mut pdu = [0u8; 20];
    pdu[..4].copy_from_slice(&[0x01, 0x01, 0x01, 0x00]);
    assert_eq!(Repr::parse(&Packet::new_unchecked(&pdu[..])), Err(Error::Malformed("PFC class-enable vector")));
}

#[test]
fn priority_and_quanta() {
    let mut f = vec![0u8; 64];
    assert_eq!(frame_priority(&f), 0);
    f[12..16].copy_from_slice(&[0x81, 0x00, 0x60, 0x0a]); // PCP 3, VID 10
    assert_eq!(frame_priority(&f), 3);
    f[12..14].copy_from_slice(&[0x88, 0xa8]);
    assert_eq!(frame_priority(&f), 3);
    assert_eq!(frame_priority(&f[..15]), 0);
    assert!(mac_control_pdu(&f).is_none());
    // 100 Gb/s: 5.12 ns a quantum
    assert_eq!(quanta_ns(100, 100_000_000_000), 512);
    assert_eq!(quanta_ns(0xffff, 100_000_000_000), 335_539);
    assert_eq!(quanta_ns(1, 0), 512_000_000_000);
}

#[test]
fn frame_dscp_reads_ipv4_and_ipv6_behind_tags() {
    let mut f = vec![0u8; 60];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[15] = 26 << 2 | 1; // DSCP 26, ECT(1)
    assert_eq!(frame_dscp(&f), Some(26));
    assert!(!is_tagged(&f));
    let mut t = f[..12].to_vec();
    t.extend_from_slice(&[0x81, 0x00, 0x60, 0x03]);
    t.extend_from_slice(&f[12..]);
    assert_eq!(frame_dscp(&t), Some(26), "behind a C-tag");
    assert!(is_tagged(&t));
    let mut v6 = vec![0u8; 80];
    v6[12..14].copy_from_slice(&[0x86, 0xdd]);
    // version 6, traffic class 0x68 (DSCP 26) split over the first two bytes
    v6[14] = 0x66;
    v6[15] = 0x80;
    assert_eq!(frame_dscp(&v6), Some(26));
    let mut arp = f.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(frame_dscp(&arp), None, "not IP");
    assert_eq!(frame_dscp(&f[..15]), None, "too short");
    let mut bad = f.clone();
    bad[14] = 0x65;
    assert_eq!(frame_dscp(&bad), None, "EtherType IPv4 with version 6");
}
