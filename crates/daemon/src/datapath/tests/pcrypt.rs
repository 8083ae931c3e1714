//! Pcrypt (`--parallel pcrypt`): the owner numbers, any worker's copy
//! does the crypto, the owner finishes in order; a job numbered on an SA
//! that has since been replaced is dropped (`crate::pcrypt`).

use super::*;
use crate::apply::WorkerChange;

/// Worker `index` of 2 in pcrypt mode, with `dp`'s databases.
fn pcrypt(dp: Datapath, index: usize) -> Datapath {
    Datapath::new(index, 2, dp.db).with_parallel(Parallel::Pcrypt)
}

/// Gateway A's two workers in pcrypt mode: the owner of its outbound SA
/// (by endpoints) and the other.
fn sending_pair() -> (Datapath, Datapath) {
    let owner = owner_of_endpoints(ip(GW_A), ip(GW_B), 2);
    let (a, _) = gateways(true, false);
    let (a2, _) = gateways(true, false);
    (pcrypt(a, owner), pcrypt(a2, 1 - owner))
}

/// Pcrypt: the owner numbers the packet and another worker's copy seals
/// it; at the far end the SA's owner checks the number, another worker
/// opens it, and the owner commits and delivers. A replay passes the
/// owner's check while the first copy is still being opened, and is
/// refused when the owner commits it.
#[test]
fn pcrypt_numbers_on_the_owner_and_seals_and_opens_anywhere() {
    let (mut a, mut a_other) = sending_pair();
    let (_, b) = gateways(true, false);
    let (_, b2) = gateways(true, false);
    // B's inbound SA 0x1001 is worker 1's (SPI mod 2); its copy on worker 0.
    let (mut b_owner, mut b_other) = (pcrypt(b, 1), pcrypt(b2, 0));
    let mut stats = Stats::default();
    let inner = udp("10.1.0.1", "10.2.0.1", 9, b"parallel");
    let mut buf = PacketBuf::from_packet(&inner);
    let Outbound::Crypto { numbered, whole } =
        a.outbound(&mut buf, Source::TUN, NOW, 0, &mut stats)
    else {
        panic!("the owner numbers it for another worker")
    };
    assert_eq!((numbered.assigned.seq, whole), (1, false));
    assert_eq!(buf.as_slice(), &inner[..], "untouched until sealed");
    let egress = a_other.seal_assigned(&mut buf, numbered, NOW, &mut stats);
    assert_eq!(egress, Some(Egress::Ip));
    assert_eq!(esp_spi(&buf), 0x1001);
    let wire = buf.as_slice().to_vec();
    let Inbound::Crypto(checked) = b_owner.inbound(&mut buf, None, NOW, &mut stats) else {
        panic!("the SA's owner checks the number for another worker")
    };
    assert_eq!(checked.assigned.seq, 1);
    let opened = b_other.open_assigned(&mut buf, None, checked, NOW, &mut stats);
    let replay_opened = {
        let mut again = PacketBuf::from_packet(&wire);
        let Inbound::Crypto(c) = b_owner.inbound(&mut again, None, NOW, &mut stats) else {
            panic!("not committed yet: passes the check")
        };
        (
            again,
            c,
            b_other.open_assigned(&mut PacketBuf::from_packet(&wire), None, c, NOW, &mut stats),
        )
    };
    let verdict = b_owner.finish_inbound(&mut buf, checked, opened.unwrap(), NOW, &mut stats);
    let replies = owner_of_endpoints(ip(GW_B), ip(GW_A), 2);
    assert_eq!(
        verdict,
        Inbound::Deliver(replies),
        "the queue of the replies' owner"
    );
    assert_eq!(buf.as_slice(), &inner[..]);
    let (_, c, opened) = replay_opened;
    let mut again = PacketBuf::from_packet(&inner);
    assert_eq!(
        b_owner.finish_inbound(&mut again, c, opened.unwrap(), NOW, &mut stats),
        Inbound::Done
    );
    assert_eq!(stats.drops.get(DropReason::Replayed), 1);
    // The copies' own counters never moved: only the owners'.
    let seq = |dp: &Datapath, spi| {
        dp.db
            .sad
            .iter()
            .find(|s| s.id().spi == spi)
            .map(|s| (s.seq(), s.usage().packets))
    };
    assert_eq!(seq(&a, 0x1001), Some((1, 1)));
    assert_eq!(seq(&a_other, 0x1001), Some((0, 0)));
    assert_eq!(seq(&b_other, 0x1001).map(|s| s.1), Some(0));
    assert_eq!(seq(&b_owner, 0x1001).map(|s| s.1), Some(1));
}

/// SA 0x1001 (A to B) removed and added again under another key, as a
/// reload of a manual SA does, as installation `generation`.
fn replaced(key: u8, generation: u64) -> Vec<WorkerChange> {
    let c = sa(0x1001, Mode::Tunnel, GW_A, GW_B, false).with_encr(EncrId::AES_GCM_16, &[key; 20]);
    let new = SecurityAssociation::new(&c, &Provider::fastest(), NOW).unwrap();
    vec![
        WorkerChange::RemoveSa(c.id()),
        WorkerChange::AddSa(Box::new(new), generation),
    ]
}

/// A key change under the same SPI while jobs are on their way: a worker
/// whose copy is already the new SA drops a job the old SA numbered
/// (sealing it would put the old counter's number under the new key,
/// whose own counter gives that number again: one GCM nonce twice, RFC
/// 4106 §8.1), and one whose copy is still the old SA drops a job the new
/// one numbered; inbound, the owner does not commit a packet checked on
/// the old SA to the new one's window. Each is counted.
#[test]
fn a_job_numbered_on_a_replaced_sa_is_dropped() {
    let (mut a, mut a_other) = sending_pair();
    let mut stats = Stats::default();
    let inner = udp("10.1.0.1", "10.2.0.1", 9, b"rekeyed");
    let number = |dp: &mut Datapath, stats: &mut Stats| {
        let mut buf = PacketBuf::from_packet(&inner);
        match dp.outbound(&mut buf, Source::TUN, NOW, 0, stats) {
            Outbound::Crypto { numbered, .. } => (buf, numbered),
            other => panic!("{other:?}"),
        }
    };
    // Numbered on the first SA; the other worker has the new one already.
    let (mut buf, old) = number(&mut a, &mut stats);
    a_other.db.apply(replaced(8, 1));
    assert_eq!(a_other.seal_assigned(&mut buf, old, NOW, &mut stats), None);
    assert_eq!(stats.crypto_stale_sa, 1);
    // Both have it: sealed, numbered from 1 by the new counter.
    a.db.apply(replaced(8, 1));
    let (mut buf, new) = number(&mut a, &mut stats);
    assert_eq!((new.assigned.seq, new.generation), (1, 1));
    assert_eq!(
        a_other.seal_assigned(&mut buf, new, NOW, &mut stats),
        Some(Egress::Ip)
    );
    // The owner is ahead now: a lagging copy drops the new number.
    a.db.apply(replaced(9, 2));
    let (mut buf, newer) = number(&mut a, &mut stats);
    assert_eq!(
        a_other.seal_assigned(&mut buf, newer, NOW, &mut stats),
        None
    );
    assert_eq!(stats.crypto_stale_sa, 2);

    // Inbound at B: checked and opened on the first SA, finished after
    // the owner replaced it.
    let (mut serial, _) = gateways(true, false);
    let mut buf = PacketBuf::from_packet(&inner);
    let sent = serial.outbound(&mut buf, Source::TUN, NOW, 0, &mut stats);
    assert!(matches!(sent, Outbound::Send { .. }), "{sent:?}");
    let (_, b) = gateways(true, false);
    let (_, b2) = gateways(true, false);
    let (mut b_owner, mut b_other) = (pcrypt(b, 1), pcrypt(b2, 0));
    let Inbound::Crypto(checked) = b_owner.inbound(&mut buf, None, NOW, &mut stats) else {
        panic!("the owner checks it")
    };
    let opened = b_other.open_assigned(&mut buf, None, checked, NOW, &mut stats);
    b_owner.db.apply(replaced(7, 1));
    assert_eq!(
        b_owner.finish_inbound(&mut buf, checked, opened.unwrap(), NOW, &mut stats),
        Inbound::Done
    );
    assert_eq!(stats.crypto_stale_sa, 3);
}
