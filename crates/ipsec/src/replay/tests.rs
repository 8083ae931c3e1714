use super::*;

fn accept(w: &mut ReplayWindow, low: u32) -> Result<u64, ReplayError> {
    let seq = w.check(low)?;
    w.commit(seq)?;
    Ok(seq)
}

#[test]
fn window_size_bounds() {
    assert!(ReplayWindow::new(0, false).is_ok());
    assert!(ReplayWindow::new(31, false).is_err());
    assert!(ReplayWindow::new(32, false).is_ok());
    assert!(ReplayWindow::new(4096, false).is_ok());
    assert_eq!(
        ReplayWindow::new(4097, false).unwrap_err(),
        BadWindowSize(4097)
    );
}

#[test]
fn zero_is_refused() {
    let w = ReplayWindow::new(64, false).unwrap();
    assert_eq!(w.check(0), Err(ReplayError::Zero));
}

#[test]
fn duplicates_refused_in_order_and_reordered() {
    let mut w = ReplayWindow::new(64, false).unwrap();
    for s in 1..=10 {
        accept(&mut w, s).unwrap();
    }
    assert_eq!(w.check(10), Err(ReplayError::Replayed));
    assert_eq!(w.check(3), Err(ReplayError::Replayed));
    // A gap, then the late packets arrive inside the window.
    accept(&mut w, 20).unwrap();
    for s in 11..20 {
        accept(&mut w, s).unwrap();
        assert_eq!(w.check(s), Err(ReplayError::Replayed));
    }
}

#[test]
fn check_does_not_move_the_window() {
    let mut w = ReplayWindow::new(32, false).unwrap();
    accept(&mut w, 5).unwrap();
    assert_eq!(w.check(1000), Ok(1000));
    // Not committed (say, ICV failed): 5..=36 are still acceptable.
    assert_eq!(w.top(), 5);
    assert_eq!(w.check(4), Ok(4));
}

/// Every size boundary: the oldest sequence number inside the window is
/// accepted, the one just left of it is refused.
#[test]
fn every_window_size_boundary() {
    for size in [
        32u32, 33, 63, 64, 65, 127, 128, 1000, 1024, 2048, 4095, 4096,
    ] {
        let mut w = ReplayWindow::new(size, false).unwrap();
        let top = 10_000u32;
        accept(&mut w, top).unwrap();
        let oldest = top - size + 1;
        assert_eq!(
            w.check(oldest),
            Ok(u64::from(oldest)),
            "size {size}: oldest in window"
        );
        assert_eq!(
            w.check(oldest - 1),
            Err(ReplayError::TooOld),
            "size {size}: just outside"
        );
        accept(&mut w, oldest).unwrap();
        assert_eq!(w.check(oldest), Err(ReplayError::Replayed), "size {size}");
        // Advancing by exactly one pushes `oldest` out.
        accept(&mut w, top + 1).unwrap();
        assert_eq!(w.check(oldest), Err(ReplayError::TooOld), "size {size}");
    }
}

/// Against a naive model (a set of received numbers), over random
/// sequences mixing small steps, reordering, duplicates and large jumps, so
/// that bits left over from an earlier lap of the ring are caught.
#[test]
fn matches_a_naive_model() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for size in [32u32, 64, 65, 100, 1024, 4096] {
        let mut w = ReplayWindow::new(size, false).unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut top = 0u64;
        for _ in 0..20_000 {
            let r = next();
            let seq = match r % 8 {
                0 => top + 1 + (r >> 8) % 5000, // jump, sometimes past the ring
                1 | 2 => top.saturating_sub((r >> 8) % (u64::from(size) + 8)), // reorder/old
                _ => top + 1,
            };
            let seq = seq.max(1).min(u64::from(u32::MAX));
            let expect = if seq > top {
                Ok(seq)
            } else if top - seq >= u64::from(size) {
                Err(ReplayError::TooOld)
            } else if seen.contains(&seq) {
                Err(ReplayError::Replayed)
            } else {
                Ok(seq)
            };
            assert_eq!(
                w.check(seq as u32),
                expect,
                "size {size} seq {seq} top {top}"
            );
            if expect.is_ok() {
                w.commit(seq).unwrap();
                seen.insert(seq);
                top = top.max(seq);
            }
        }
    }
}

#[test]
fn large_jump_then_inside_window() {
    let mut w = ReplayWindow::new(128, false).unwrap();
    accept(&mut w, 1).unwrap();
    accept(&mut w, 1_000_000).unwrap();
    assert_eq!(w.check(1_000_000 - 127), Ok(1_000_000 - 127));
    assert_eq!(w.check(1_000_000 - 128), Err(ReplayError::TooOld));
    assert_eq!(w.check(1), Err(ReplayError::TooOld));
}

#[test]
fn disabled_window_accepts_replays_but_tracks_top() {
    let mut w = ReplayWindow::new(0, false).unwrap();
    accept(&mut w, 7).unwrap();
    assert_eq!(w.check(7), Ok(7));
    assert_eq!(w.check(1), Ok(1));
    assert_eq!(w.top(), 7);
}

/// RFC 4303 Appendix A.2: case A (window within one sub-space) and the
/// wrap at 2^32.
#[test]
fn esn_wrap_at_2_pow_32() {
    let mut w = ReplayWindow::new(64, true).unwrap();
    let near = u32::MAX - 10;
    accept(&mut w, 1000).unwrap();
    accept(&mut w, near).unwrap();
    assert_eq!(w.top(), u64::from(near));
    // Low bits 5 after the wrap: must be reconstructed to 2^32 + 5.
    assert_eq!(w.check(5), Ok((1u64 << 32) + 5));
    accept(&mut w, 5).unwrap();
    assert_eq!(w.top(), (1 << 32) + 5);
    // Case B: top low bits (5) < W - 1; a late packet from before the wrap
    // belongs to the previous sub-space.
    assert_eq!(w.check(u32::MAX - 3), Ok(u64::from(u32::MAX - 3)));
    accept(&mut w, u32::MAX - 3).unwrap();
    assert_eq!(w.check(u32::MAX - 3), Err(ReplayError::Replayed));
    assert_eq!(w.check(near), Err(ReplayError::Replayed));
    // Still in the new sub-space for small values.
    assert_eq!(w.check(6), Ok((1u64 << 32) + 6));
    // Low bits 0 are valid with ESN once the high half is non-zero.
    assert_eq!(w.check(0), Ok(1u64 << 32));
}

#[test]
fn esn_case_b_at_start_has_no_previous_subspace() {
    let mut w = ReplayWindow::new(64, true).unwrap();
    accept(&mut w, 3).unwrap();
    // Would be in sub-space -1: refused, never panics.
    assert_eq!(w.check(u32::MAX), Err(ReplayError::TooOld));
}

#[test]
fn without_esn_high_bits_stay_zero() {
    let mut w = ReplayWindow::new(64, false).unwrap();
    accept(&mut w, u32::MAX).unwrap();
    assert_eq!(w.check(1), Err(ReplayError::TooOld));
}

#[test]
fn esn_commit_far_then_check() {
    let mut w = ReplayWindow::new(64, true).unwrap();
    let start = u64::from(u32::MAX) - 3;
    w.commit(start).unwrap();
    assert_eq!(w.check((start + 1) as u32), Ok(start + 1));
}

/// Two copies of one packet both pass `check` (say, verified in parallel);
/// only the first commit may succeed, and a commit that comes after the
/// window moved past it is refused instead of marking a future number.
#[test]
fn commit_rechecks_the_window() {
    let mut w = ReplayWindow::new(4096, false).unwrap();
    let a = w.check(10).unwrap();
    let b = w.check(10).unwrap();
    assert_eq!(w.commit(a), Ok(()));
    assert_eq!(w.commit(b), Err(ReplayError::Replayed));
    let late = w.check(20).unwrap();
    w.commit(20 + 5000).unwrap();
    assert_eq!(w.commit(late), Err(ReplayError::TooOld));
    // 8340 shares 20's bit in the ring (two laps of 4160 later).
    assert_eq!(
        w.check(8340),
        Ok(8340),
        "no stray bit set for a future number"
    );
    assert_eq!(w.commit(0), Err(ReplayError::Zero));
}
