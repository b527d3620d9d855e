//! Interval decay: the history's weight changes, the model's state does not.

use locus_mrc::{ModelKind, ModelSettings, MrcError, Op, build};

#[test]
fn decay_keeps_state_and_scales_history() {
    for kind in [
        ModelKind::Exact,
        ModelKind::Shards,
        ModelKind::Aet,
        ModelKind::Eaet,
        ModelKind::Krr,
    ] {
        let s = ModelSettings {
            k: 64,
            ..ModelSettings::default()
        };
        let mut p = build(kind, &s).unwrap();
        for t in 0..30u64 {
            p.access(t % 3, 1, Op::Get);
        }
        let before = p.mrc(&[2.0, 3.0]).unwrap();
        p.decay(0.5).unwrap();
        if !matches!(kind, ModelKind::Aet | ModelKind::Eaet) {
            // (AET/EAET count their pending samples as cold at full weight: not history.)
            let after = p.mrc(&[2.0, 3.0]).unwrap();
            assert_eq!(after, before, "{kind}: halving keeps the ratios");
        }
        p.decay(0.0).unwrap();
        // The stack / tables remember a, b, c: after the reset every access is a reuse at
        // distance 3 (AET/EAET: reuse time 3), never cold.
        for t in 0..30u64 {
            p.access(t % 3, 1, Op::Get);
        }
        let m = p.mrc(&[2.0, 3.0]).unwrap();
        let pts = m.points();
        assert!(pts[0].1 > 0.95, "{kind}: {m:?}");
        // (AET/EAET: the 3 pending samples count as cold, 3/33.)
        assert!(pts[1].1 < 0.1, "{kind}: {m:?}");
        assert!(matches!(p.decay(1.5), Err(MrcError::InvalidDecay { .. })));
    }
    let mut f = build(ModelKind::Footprint, &ModelSettings::default()).unwrap();
    f.access(1, 1, Op::Get);
    assert!(f.decay(0.5).is_err());
    f.decay(0.0).unwrap();
    assert_eq!(f.mrc(&[1.0]).unwrap().points()[0].1, 1.0);
}
