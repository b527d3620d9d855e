//! Geohash arithmetic as Redis 7.0 does it (`geohash.c`, `geohash_helper.c`), so that scores,
//! positions, distances and the cells a search visits are Redis's bit for bit.
//!
//! A position is encoded at 26 steps per axis: latitude in [-85.05112878, 85.05112878] and
//! longitude in [-180, 180] are scaled to 26-bit integers and interleaved (latitude in the even
//! bits, longitude in the odd bits) into a 52-bit integer, stored as the sorted set's score (a
//! double holds 52 bits exactly). A search around a point picks the cell size (step) from the
//! radius, takes the cell of the center and its eight neighbours, drops the neighbours the
//! bounding box does not reach, and scans each cell as one score range.

/// Steps per axis of a stored position.
pub const STEP_MAX: u8 = 26;
/// Latitude bounds of the Web Mercator projection (no poles).
pub const LAT_MIN: f64 = -85.051_128_78;
/// See [`LAT_MIN`].
pub const LAT_MAX: f64 = 85.051_128_78;
/// Longitude bounds.
pub const LONG_MIN: f64 = -180.0;
/// See [`LONG_MIN`].
pub const LONG_MAX: f64 = 180.0;

const D_R: f64 = std::f64::consts::PI / 180.0;
/// Earth's quadratic mean radius for WGS-84, as Redis uses it.
const EARTH_RADIUS_IN_METERS: f64 = 6_372_797.560_856;
const MERCATOR_MAX: f64 = 20_037_726.37;

/// A geohash: `step` bits per axis, interleaved in the low `2 * step` bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bits {
    /// Interleaved bits.
    pub bits: u64,
    /// Bits per axis (0: none, a dropped neighbour).
    pub step: u8,
}

/// A range of one axis.
#[derive(Debug, Clone, Copy, Default)]
pub struct Range {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
}

/// A cell: its hash and its extent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Area {
    /// Longitude extent.
    pub longitude: Range,
    /// Latitude extent.
    pub latitude: Range,
}

fn interleave(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = u64::from(xlo);
    let mut y = u64::from(ylo);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

fn deinterleave(v: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
        0x0000_0000_FFFF_FFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = v;
    let mut y = v >> 1;
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// The Mercator ranges positions are stored in.
pub fn coord_ranges() -> (Range, Range) {
    (
        Range {
            min: LONG_MIN,
            max: LONG_MAX,
        },
        Range {
            min: LAT_MIN,
            max: LAT_MAX,
        },
    )
}

/// Encodes (`lon`, `lat`) within the ranges at `step` bits per axis; `None` outside them.
pub fn encode(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u8) -> Option<Bits> {
    if step == 0 || step > 32 {
        return None;
    }
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min) * scale;
    let lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min) * scale;
    // C converts to uint32_t by truncation (the top value, 2^step, wraps as C's cast of a
    // double to a 32-bit integer through 64 bits does).
    Some(Bits {
        bits: interleave(lat_off as u64 as u32, lon_off as u64 as u32),
        step,
    })
}

/// The cell of `hash` within the ranges; `None` for the zero hash.
pub fn decode(lon_r: Range, lat_r: Range, hash: Bits) -> Option<Area> {
    if hash.bits == 0 && hash.step == 0 {
        return None;
    }
    let sep = deinterleave(hash.bits);
    let lat_scale = lat_r.max - lat_r.min;
    let lon_scale = lon_r.max - lon_r.min;
    let ilat = sep as u32;
    let ilon = (sep >> 32) as u32;
    let div = (1u64 << hash.step) as f64;
    Some(Area {
        latitude: Range {
            min: lat_r.min + (f64::from(ilat) / div) * lat_scale,
            max: lat_r.min + ((f64::from(ilat) + 1.0) / div) * lat_scale,
        },
        longitude: Range {
            min: lon_r.min + (f64::from(ilon) / div) * lon_scale,
            max: lon_r.min + ((f64::from(ilon) + 1.0) / div) * lon_scale,
        },
    })
}

/// The 52-bit score of a position (Redis's `geohashEncodeWGS84` + `geohashAlign52Bits`).
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    let (lo, la) = coord_ranges();
    encode(lo, la, lon, lat, STEP_MAX).map(align52)
}

/// `hash` shifted to 52 bits.
pub fn align52(hash: Bits) -> u64 {
    hash.bits << (52 - u32::from(hash.step) * 2)
}

/// The position a score stands for (the center of its cell, clamped to the ranges).
pub fn position_of(score: f64) -> Option<(f64, f64)> {
    let (lo, la) = coord_ranges();
    let area = decode(
        lo,
        la,
        Bits {
            bits: score as u64,
            step: STEP_MAX,
        },
    )?;
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    Some((lon, lat))
}

/// Moves `h` one cell along the axis whose bits `own` masks (the other axis, `other`, stays):
/// Redis's `geohash_move_x` (odd bits, longitude) and `geohash_move_y` (even bits, latitude).
fn move_axis(h: &mut Bits, d: i8, own: u64, other: u64) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(h.step) * 2;
    let mut v = h.bits & own;
    let keep = h.bits & other;
    let zz = other >> shift;
    if d > 0 {
        v = v.wrapping_add(zz + 1);
    } else {
        v |= zz;
        v = v.wrapping_sub(zz + 1);
    }
    v &= own >> shift;
    h.bits = v | keep;
}

const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
const EVEN: u64 = 0x5555_5555_5555_5555;

fn neighbour(h: Bits, dx: i8, dy: i8) -> Bits {
    let mut n = h;
    move_axis(&mut n, dx, ODD, EVEN);
    move_axis(&mut n, dy, EVEN, ODD);
    n
}

fn deg_rad(a: f64) -> f64 {
    a * D_R
}

fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// The step whose cells cover `range_m` meters around latitude `lat`.
fn steps_by_radius(mut range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_m < MERCATOR_MAX {
        range_m *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// What a search covers.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// Within `radius` (in the unit) of the center.
    Circle {
        /// Radius in the unit.
        radius: f64,
    },
    /// Within a `width` x `height` box (in the unit) centered on the center.
    Box {
        /// Width in the unit.
        width: f64,
        /// Height in the unit.
        height: f64,
    },
}

/// A search: its center, its shape, and meters per unit.
#[derive(Debug, Clone, Copy)]
pub struct Search {
    /// Center longitude.
    pub lon: f64,
    /// Center latitude.
    pub lat: f64,
    /// The shape.
    pub shape: Shape,
    /// Meters per unit.
    pub conversion: f64,
}

impl Search {
    /// (min lon, min lat, max lon, max lat) of the shape's bounding box.
    fn bounds(&self) -> [f64; 4] {
        let (h, w) = match self.shape {
            Shape::Circle { radius } => (radius, radius),
            Shape::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.conversion * h;
        let width = self.conversion * w;
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let lon_top = rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat + lat_delta).cos());
        let lon_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat - lat_delta).cos());
        let south = self.lat < 0.0;
        [
            if south {
                self.lon - lon_bottom
            } else {
                self.lon - lon_top
            },
            self.lat - lat_delta,
            if south {
                self.lon + lon_bottom
            } else {
                self.lon + lon_top
            },
            self.lat + lat_delta,
        ]
    }

    /// The cells to scan, in Redis's order (center, N, S, E, W, NE, NW, SE, SW), dropped ones
    /// as zero hashes.
    pub fn cells(&self) -> [Bits; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let radius_m = match self.shape {
            Shape::Circle { radius } => radius,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut steps = steps_by_radius(radius_m, self.lat);
        let (lo, la) = coord_ranges();
        let at = |steps| encode(lo, la, self.lon, self.lat, steps).unwrap_or_default();
        let mut hash = at(steps);
        let n = |h: Bits| {
            [
                neighbour(h, 0, 1),   // north
                neighbour(h, 0, -1),  // south
                neighbour(h, 1, 0),   // east
                neighbour(h, -1, 0),  // west
                neighbour(h, 1, 1),   // north east
                neighbour(h, -1, 1),  // north west
                neighbour(h, 1, -1),  // south east
                neighbour(h, -1, -1), // south west
            ]
        };
        let mut nb = n(hash);
        let area_of = |h: Bits| decode(lo, la, h).unwrap_or_default();
        let decrease = area_of(nb[0]).latitude.max < max_lat
            || area_of(nb[1]).latitude.min > min_lat
            || area_of(nb[2]).longitude.max < max_lon
            || area_of(nb[3]).longitude.min > min_lon;
        if steps > 1 && decrease {
            steps -= 1;
            hash = at(steps);
            nb = n(hash);
        }
        let area = area_of(hash);
        if steps >= 2 {
            let zero = Bits::default();
            if area.latitude.min < min_lat {
                nb[1] = zero;
                nb[7] = zero;
                nb[6] = zero;
            }
            if area.latitude.max > max_lat {
                nb[0] = zero;
                nb[4] = zero;
                nb[5] = zero;
            }
            if area.longitude.min < min_lon {
                nb[3] = zero;
                nb[7] = zero;
                nb[5] = zero;
            }
            if area.longitude.max > max_lon {
                nb[2] = zero;
                nb[6] = zero;
                nb[4] = zero;
            }
        }
        [hash, nb[0], nb[1], nb[2], nb[3], nb[4], nb[5], nb[6], nb[7]]
    }

    /// Whether the position (`lon`, `lat`) is inside; its distance from the center in meters.
    pub fn contains(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.shape {
            Shape::Circle { radius } => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= radius * self.conversion).then_some(d)
            }
            Shape::Box { width, height } => {
                let (w, h) = (width * self.conversion, height * self.conversion);
                if lat_distance(lat, self.lat) > h / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > w / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }
}

/// The [min, max) scores of a cell.
pub fn score_range(hash: Bits) -> (u64, u64) {
    let min = align52(hash);
    let max = align52(Bits {
        bits: hash.bits + 1,
        step: hash.step,
    });
    (min, max)
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine distance in meters, as Redis computes it.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// The standard 11-character geohash of a stored score (re-encoded over [-180, 180] x
/// [-90, 90]; the 11th character is always `0`, as Redis has only 52 bits).
pub fn geohash_string(score: f64) -> Option<[u8; 11]> {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = position_of(score)?;
    let h = encode(
        Range {
            min: -180.0,
            max: 180.0,
        },
        Range {
            min: -90.0,
            max: 90.0,
        },
        lon,
        lat,
        26,
    )
    .unwrap_or_default();
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (h.bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_round_trips() {
        for (a, b) in [
            (0u32, 0u32),
            (1, 0),
            (0, 1),
            (0x3ff_ffff, 0x155_5555),
            (12345, 67890),
        ] {
            let v = interleave(a, b);
            let d = deinterleave(v);
            assert_eq!((d as u32, (d >> 32) as u32), (a, b));
        }
    }

    #[test]
    fn neighbours_are_the_adjacent_cells() {
        // At step 5, cell (lat 9, lon 20): each neighbour is one cell away on its axes.
        let h = Bits {
            bits: interleave(9, 20) & ((1 << 10) - 1),
            step: 5,
        };
        let cell = |b: Bits| {
            let d = deinterleave(b.bits);
            (d as u32, (d >> 32) as u32)
        };
        assert_eq!(cell(h), (9, 20));
        assert_eq!(cell(neighbour(h, 1, 0)), (9, 21));
        assert_eq!(cell(neighbour(h, -1, 0)), (9, 19));
        assert_eq!(cell(neighbour(h, 0, 1)), (10, 20));
        assert_eq!(cell(neighbour(h, 0, -1)), (8, 20));
        assert_eq!(cell(neighbour(h, -1, -1)), (8, 19));
        // The edge wraps around (the 32 cells of step 5).
        let e = Bits {
            bits: interleave(0, 31),
            step: 5,
        };
        assert_eq!(cell(neighbour(e, 1, -1)), (31, 0));
    }

    #[test]
    fn palermo_as_redis_stores_it() {
        // redis-server 7.0: GEOADD Sicily 13.361389 38.115556 "Palermo"; ZSCORE -> 3479099956230698
        assert_eq!(score_of(13.361389, 38.115556), Some(3_479_099_956_230_698));
        let (lon, lat) = position_of(3_479_099_956_230_698.0).unwrap();
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
        assert_eq!(
            &geohash_string(3_479_099_956_230_698.0).unwrap(),
            b"sqc8b49rny0"
        );
    }
}
